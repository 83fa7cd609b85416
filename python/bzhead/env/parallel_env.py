"""``bzhead.env.parallel_env``: learning tanks on real BZFlag as a PettingZoo ``ParallelEnv``."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from ._core import ACTION_HIGH, ACTION_LOW, ACTION_NVEC, Arena, Session


def action_space(action_type: str) -> spaces.Space:
    if action_type == "box":
        return spaces.Box(ACTION_LOW, ACTION_HIGH, dtype=np.float32)
    if action_type == "discrete":
        return spaces.MultiDiscrete(ACTION_NVEC)
    raise ValueError(f"action_type must be 'box' or 'discrete', not {action_type!r}")


def coerce_action(name: str, a: Any, action_type: str) -> np.ndarray:
    """One agent's action as 5 numbers of the right type; a clear ValueError otherwise (range and NaN are checked
    by the native core, which refuses the whole step before applying anything)."""
    try:
        arr = np.asarray(a)
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"agent {name}: the action is not an array of numbers: {e}") from None
    if arr.shape != (5,):
        raise ValueError(f"agent {name}: an action has shape (5,) (speed, turn, fire, jump, drop_flag), not {arr.shape}")
    if action_type == "discrete":
        if not np.issubdtype(arr.dtype, np.integer):
            if not (np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
                raise ValueError(f"agent {name}: a discrete action has 5 integers, got {arr!r}")
        return arr.astype("<i8")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool):
        raise ValueError(f"agent {name}: an action has 5 numbers, got dtype {arr.dtype}")
    return arr.astype("<f4")


class BzParallelEnv(ParallelEnv):
    """See ``parallel_env``."""

    metadata = {"name": "bzhead_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, session: Session, action_type: str, reset_mode: str):
        if reset_mode not in ("soft", "restart"):
            raise ValueError(f"reset_mode must be 'soft' or 'restart', not {reset_mode!r}")
        self._s = session
        self._action_type = action_type
        self._reset_mode = reset_mode
        self.possible_agents = list(session.agents)
        self.agents: list = []
        self.render_mode = None
        n = session.obs_len
        self._obs_space = spaces.Box(-1.0, 1.0, shape=(n,), dtype=np.float32)
        self._act_space = action_space(action_type)
        self.observation_spaces = {a: self._obs_space for a in self.possible_agents}
        self.action_spaces = {a: self._act_space for a in self.possible_agents}
        self.state_space = spaces.Box(-1.0, 1.0, shape=(n * len(self.possible_agents),), dtype=np.float32)
        self._last = np.zeros((len(self.possible_agents), n), dtype=np.float32)
        self._last_action = np.zeros((len(self.possible_agents), 5), dtype="<i8" if action_type == "discrete" else "<f4")

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None):
        restart = self._reset_mode == "restart" or bool((options or {}).get("restart"))
        if seed is not None:
            for k, a in enumerate(self.possible_agents):
                self.action_spaces[a].seed(seed + k)
        result = self._s.reset(seed, restart)
        self._last = self._s.obs_array(result)
        self._last_action[:] = 0
        self.agents = list(self.possible_agents)
        obs = {a: self._last[k].copy() for k, a in enumerate(self.possible_agents)}
        infos = {a: {"episode": self._s.episode, "alive": result["alive"][k]} for k, a in enumerate(self.possible_agents)}
        return obs, infos

    def step(self, actions: Mapping[str, Any]):
        if not self.agents:
            raise RuntimeError("the episode is over: call reset()")
        unknown = [a for a in actions if a not in self.agents]
        if unknown:
            raise ValueError(f"actions for agents not in the game: {unknown}; agents: {self.agents}")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"no action for {missing}: every live agent acts at every step")
        for k, a in enumerate(self.possible_agents):
            if a in actions:
                self._last_action[k] = coerce_action(a, actions[a], self._action_type)
        result = self._s.step(self._last_action, self._action_type == "discrete")
        return self._finish(result)

    def _finish(self, result):
        s = self._s
        arena = s.arenas[0]
        self._last = s.obs_array(result)
        events = result["events"]
        terminated, truncated, error = s.judge(arena, result)
        obs, rewards, terms, truncs, infos = {}, {}, {}, {}, {}
        for k, a in enumerate(self.possible_agents):
            if a not in self.agents:
                continue
            s.missed_total[a] += result["missed"][k]
            obs[a] = self._last[k].copy()
            rewards[a] = float(result["rewards"][k])
            terms[a] = bool(terminated)
            truncs[a] = bool(truncated and not terminated)
            info = {
                "events": [{"kind": kind, "other": other, "reward": w} for kind, other, w in result["outcomes"][k]],
                "game_events": events,
                "missed_decisions": result["missed"][k],
                "missed_decisions_total": s.missed_total[a],
                "alive": result["alive"][k],
                "game_time": result["game_time"][k],
                "decision": arena.decisions,
            }
            if error is not None:
                info["error"] = error
            infos[a] = info
        if terminated or truncated:
            self.agents = []
        return obs, rewards, terms, truncs, infos

    def state(self) -> np.ndarray:
        """The global view: every agent's observation, in ``possible_agents`` order, one after another."""
        return self._last.reshape(-1).copy()

    def status(self) -> Dict[str, Any]:
        """Every tank's state and counts as the bot host has them: ``{callsign: (state, kills, deaths, captures)}``."""
        return dict(self._s.core.status()) if self._s.core is not None else {}

    @property
    def servers(self):
        """The address of each game ("HOST:PORT")."""
        return [arena.addr for arena in self._s.arenas]

    def server_log(self) -> str:
        """The private bzfs's log ("" for an external server)."""
        p = self._s.arenas[0].private
        return p.log() if p is not None else ""

    def render(self):
        return None

    def close(self):
        self._s.stop()
        self.agents = []


def parallel_env(
    server: Optional[str] = None,
    *,
    world: Optional[str] = None,
    mode: str = "ctf",
    server_options: Sequence[str] = (),
    teams: Optional[Mapping[str, int]] = None,
    opponents: Optional[Mapping[str, Sequence[str]]] = None,
    decision_hz: float = 10.0,
    episode_seconds: float = 60.0,
    warp: float = 1.0,
    seed: Optional[int] = None,
    record: Optional[str] = None,
    record_max_mib: float = 256.0,
    action_type: str = "box",
    rewards: Optional[Mapping[str, float]] = None,
    end_on_capture: bool = True,
    reset_mode: str = "soft",
    nearest: int = 4,
    flags: int = 4,
    shots: int = 4,
    rays: int = 16,
    ray_range: float = 200.0,
    join_stagger: float = 0.2,
    ready_timeout: float = 30.0,
) -> BzParallelEnv:
    """Learning tanks on real BZFlag as a PettingZoo ``ParallelEnv``. See ``docs/env.md`` for every option, the
    observation and action layouts, the rewards and what ``reset`` does."""
    session = _session(
        [(server, teams or {"red": 1}, opponents or {})], world=world, mode=mode, server_options=server_options,
        decision_hz=decision_hz, episode_seconds=episode_seconds, warp=warp, seed=seed, record=record,
        record_max_mib=record_max_mib, rewards=rewards, end_on_capture=end_on_capture, nearest=nearest, flags=flags,
        shots=shots, rays=rays, ray_range=ray_range, join_stagger=join_stagger, ready_timeout=ready_timeout,
    )
    return BzParallelEnv(session, action_type, reset_mode)


def _session(games, *, world, mode, server_options, decision_hz, episode_seconds, warp, seed, record, record_max_mib,
             rewards, end_on_capture, nearest, flags, shots, rays, ray_range, join_stagger, ready_timeout, prefix=False):
    server_kw = {"world": world, "mode": mode, "options": tuple(server_options), "warp": float(warp)}
    arenas = [
        Arena(k, server, teams, opponents, server_kw, name_prefix=f"e{k}-" if prefix else "")
        for k, (server, teams, opponents) in enumerate(games)
    ]
    obs_kw = {"nearest": nearest, "flags": flags, "shots": shots, "rays": rays, "ray_range": ray_range,
              "join_stagger": join_stagger}
    return Session(arenas, decision_hz=decision_hz, episode_seconds=episode_seconds, warp=warp, obs_kw=obs_kw,
                   rewards=rewards, end_on_capture=end_on_capture, record=record, seed=seed,
                   ready_timeout=ready_timeout, record_max_mib=record_max_mib)
