"""The machinery the environments share: private servers, the native core, episodes and their bookkeeping."""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from .. import _native
from ._server import PrivateServer

#: The action's entries, in order.
ACTION_NAMES = ("speed", "turn", "fire", "jump", "drop_flag")
#: Continuous action bounds (fire, jump and drop_flag are on above 0.5).
ACTION_LOW = np.array([-0.5, -1.0, 0.0, 0.0, 0.0], dtype=np.float32)
ACTION_HIGH = np.array([1.0, 1.0, 1.0, 1.0, 1.0], dtype=np.float32)
#: Discrete action choices: speed -0.5/0/0.5/1, turn -1/-0.5/0/0.5/1, fire, jump, drop_flag off/on.
ACTION_NVEC = np.array([4, 5, 2, 2, 2], dtype=np.int64)
TEAMS = ("rogue", "red", "green", "blue", "purple")


#: The time scales the event loop's clock takes (``bzhead.env`` runs a private bzfs under ``faketime`` at the same).
MIN_WARP, MAX_WARP = 1.0 / 64.0, 64.0


def check_warp(warp: float) -> float:
    warp = float(warp)
    if not (np.isfinite(warp) and MIN_WARP <= warp <= MAX_WARP):
        raise ValueError(f"warp must be a finite number from 1/64 to 64 (got {warp!r})")
    return warp


class Arena:
    """One game: a server (private or not) and the learning tanks and bots on it."""

    def __init__(self, index: int, server: Optional[str], teams: Mapping[str, int], opponents: Mapping[str, Sequence[str]],
                 server_kw: Dict[str, Any], name_prefix: str = ""):
        self.index = index
        self.private: Optional[PrivateServer] = None
        self.external = server
        self.teams = dict(teams)
        self.opponents = {t: list(v) for t, v in opponents.items()}
        self.server_kw = server_kw
        self.agents: List[str] = []
        self.agent_teams: List[str] = []
        self.addr = ""
        for team, n in self.teams.items():
            if team not in TEAMS:
                raise ValueError(f"unknown team {team!r}; teams: {', '.join(TEAMS)}")
            if not (isinstance(n, int) and 0 <= n <= 32):
                raise ValueError(f"teams[{team!r}] must be a number of tanks 0..32")
            self.agents += [f"{name_prefix}{team}{k}" for k in range(n)]
            self.agent_teams += [team] * n
        for team, kinds in self.opponents.items():
            if team not in TEAMS:
                raise ValueError(f"unknown team {team!r}; teams: {', '.join(TEAMS)}")
        if not self.agents:
            raise ValueError("no learning tanks: give teams, e.g. teams={'red': 1}")
        # Episode state.
        self.episode = 0
        self.decisions = 0
        self.done = False
        self.server_error: Optional[str] = None

    def start(self) -> str:
        if self.external is not None:
            return self.external
        self.private = PrivateServer(**self.server_kw)
        return self.private.addr

    def died(self) -> Optional[str]:
        if self.private is None:
            return None
        code = self.private.exit_code()
        if code is None:
            return None
        tail = "\n".join(self.private.log().splitlines()[-5:])
        return f"the private bzfs exited with code {code}: {tail}"

    def stop(self) -> None:
        if self.private is not None:
            self.private.stop()
            self.private = None


class Session:
    """Several arenas on one native core (one event loop)."""

    def __init__(self, arenas: List[Arena], *, decision_hz: float, episode_seconds: float, warp: float,
                 obs_kw: Dict[str, Any], rewards: Optional[Mapping[str, float]], end_on_capture: bool,
                 record: Optional[str], seed: Optional[int], ready_timeout: float, record_max_mib: float = 256.0):
        if not (np.isfinite(episode_seconds) and episode_seconds > 0):
            raise ValueError("episode_seconds must be a number of game seconds > 0")
        self.arenas = arenas
        self.decision_hz = float(decision_hz)
        self.episode_decisions = max(1, int(round(episode_seconds * decision_hz)))
        self.warp = check_warp(warp)
        self.obs_kw = dict(obs_kw)
        self.rewards = dict(rewards or {})
        self.end_on_capture = end_on_capture
        self.record = None if record is None else os.fspath(record)
        if not (isinstance(record_max_mib, (int, float)) and np.isfinite(record_max_mib) and record_max_mib > 0):
            raise ValueError("record_max_mib must be a number of MiB > 0")
        self.record_max_bytes = max(1, int(record_max_mib * (1 << 20)))
        self.ready_timeout = ready_timeout
        self.seed = seed
        self.core: Optional[Any] = None
        self.agents = [a for arena in arenas for a in arena.agents]
        self.episode = 0
        self.missed_total = {a: 0 for a in self.agents}
        self.obs_len = self._make_core().obs_len  # checks every option before a server starts
        self.core = None
        self._record_file = None
        if self.record is not None:
            os.makedirs(self.record, exist_ok=True)

    def _make_core(self):
        return _native.EnvCore(decision_hz=self.decision_hz, warp=self.warp, weights=self.rewards, **self.obs_kw)

    # --- lifetime -------------------------------------------------------------------------------------------

    def start(self, seed: Optional[int]) -> None:
        """A new core and fresh private servers, everyone joining."""
        self.stop()
        self.core = self._make_core()
        base = 0 if seed is None else int(seed) * 1000
        k = 0
        for arena in self.arenas:
            addr = arena.start()
            arena.addr = addr
            for name, team in zip(arena.agents, arena.agent_teams):
                self.core.add_learner(addr, name, team, seed=base + k)
                k += 1
            for team, kinds in arena.opponents.items():
                for j, kind in enumerate(kinds):
                    callsign = f"{kind}-{team}{j}"[:31]
                    self.core.add_bot(addr, kind, callsign, team, seed=base + k)
                    k += 1

    def stop(self) -> None:
        if self.core is not None:
            try:
                self.core.close()
            except Exception:  # noqa: BLE001 - closing what may be broken already
                pass
            self.core = None
        for arena in self.arenas:
            arena.stop()
        self._close_record()

    # --- episodes -------------------------------------------------------------------------------------------

    def reset(self, seed: Optional[int], restart: bool):
        dead = any(arena.died() for arena in self.arenas)
        if self.core is None or restart or dead:
            self.start(seed)
        # Each arena's recorder joins before the episode starts (core.reset waits for it).
        for arena in self.arenas:
            self._record_arena(arena)
        result = self.core.reset(timeout=self.ready_timeout)
        if result["lost"]:
            status = self.core.status()
            for arena in self.arenas:
                arena.episode -= 1  # the next reset records this episode number again
            self.stop()
            raise RuntimeError(f"these learning tanks did not get into the game: {result['lost']}; {status}")
        for arena in self.arenas:
            arena.decisions = 0
            arena.done = False
            arena.server_error = None
        self.episode += 1
        self._open_record()
        self._warn_record(result)
        return result

    def reset_arena(self, arena: Arena) -> None:
        """A soft reset of one arena: a new episode of the game that goes on (its recording starts as its new
        observer joins, within the first steps: the other arenas' games are not held up for it)."""
        arena.decisions = 0
        arena.done = False
        self._record_arena(arena)

    def judge(self, arena: Arena, result):
        """After a step: `(terminated, truncated, error)` of the arena's episode (counts the decision)."""
        arena.decisions += 1
        events = [e for e in result["events"] if e.get("server") == arena.addr]
        error = arena.died()
        lost = [a for a in result["lost"] if a in arena.agents]
        if lost:
            error = error or f"learning tanks left the game: {lost}"
        terminated = any(e.get("type") == "game_over" for e in events) or (
            self.end_on_capture and any(e.get("type") == "capture" for e in events)
        )
        truncated = error is not None or arena.decisions >= self.episode_decisions
        if (terminated or truncated) and self.record is not None and self.core is not None:
            # The episode's recording ends with it: its files are complete when this returns.
            self.core.stop_recording(arena.addr)
            if self._record_file is not None:
                self._record_file.flush()
        return terminated, truncated and not terminated, error

    def step(self, actions: np.ndarray, discrete: bool):
        if self.core is None:
            raise RuntimeError("call reset() first")
        result = self.core.step(actions.tobytes(), discrete)
        self._write_record(result)
        self._warn_record(result)
        return result

    def obs_array(self, result) -> np.ndarray:
        return np.frombuffer(result["obs"], dtype="<f4").reshape(len(self.agents), self.obs_len).astype(np.float32)

    # --- recording ------------------------------------------------------------------------------------------

    def record_paths(self, arena: Arena, episode: int) -> Dict[str, str]:
        """The files of an arena's episode: bzhead's recording (``.bzrec``) and BZFlag's ``.rec``, named
        ``episode-NNNNN`` (``-arenaK`` added when there are several arenas)."""
        assert self.record is not None
        stem = f"episode-{episode:05d}" + (f"-arena{arena.index}" if len(self.arenas) > 1 else "")
        base = os.path.join(self.record, stem)
        return {"bzrec": base + ".bzrec", "rec": base + ".rec"}

    def _record_arena(self, arena: Arena) -> None:
        """Starts the recording of the arena's next episode (ending the one before)."""
        arena.episode += 1
        if self.record is None or self.core is None:
            return
        paths = self.record_paths(arena, arena.episode)
        callsign = f"bzhead-rec{arena.index}-{arena.episode}" if len(self.arenas) > 1 else f"bzhead-rec{arena.episode}"
        self.core.record(arena.addr, callsign[:31], paths["bzrec"], paths["rec"], self.record_max_bytes)

    def _warn_record(self, result) -> None:
        for message in result.get("record_warnings", ()):
            warnings.warn(f"bzhead.env: {message}", RuntimeWarning, stacklevel=4)

    def _open_record(self):
        self._close_record()
        if self.record is not None:
            self._record_file = open(os.path.join(self.record, f"episode-{self.episode:05d}.jsonl"), "w")
            for arena in self.arenas:
                paths = self.record_paths(arena, arena.episode)
                line = {"episode": arena.episode, "arena": arena.index, "server": arena.addr,
                        "bzrec": os.path.basename(paths["bzrec"]), "rec": os.path.basename(paths["rec"])}
                self._record_file.write(json.dumps({"recording": line}) + "\n")

    def _close_record(self):
        if self._record_file is not None:
            self._record_file.close()
            self._record_file = None

    def _write_record(self, result):
        f = self._record_file
        if f is None:
            return
        for e in result["events"]:
            f.write(json.dumps({"game_event": e}) + "\n")
        for name, outcomes in zip(self.agents, result["outcomes"]):
            for kind, other, weight in outcomes:
                f.write(json.dumps({"agent": name, "reward_event": kind, "other": other, "reward": weight}) + "\n")
