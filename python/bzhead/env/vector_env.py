"""``bzhead.env.vector_env``: many one-tank games in one process, on one event loop, as a Gymnasium ``VectorEnv``."""

from __future__ import annotations

import inspect
from typing import Any, Mapping, Optional, Sequence

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .parallel_env import _session, action_space, coerce_action, parallel_env


class BzVectorEnv(VectorEnv):
    """See ``vector_env``. Autoreset is SAME_STEP: when a game's episode ends, its next episode starts at once (a
    soft reset: the game goes on, the episode's counters start again); the last observation is in
    ``infos["final_obs"]`` and the ending step's info in ``infos["final_info"]``."""

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, session, action_type: str):
        self._s = session
        self._action_type = action_type
        self.num_envs = len(session.arenas)
        self.single_observation_space = spaces.Box(-1.0, 1.0, shape=(session.obs_len,), dtype=np.float32)
        self.single_action_space = action_space(action_type)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = None

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        if seed is not None:
            self.action_space.seed(seed)
        result = self._s.reset(seed, bool((options or {}).get("restart")))
        return self._s.obs_array(result), {"alive": np.array(result["alive"])}

    def step(self, actions: Any):
        arr = np.asarray(actions)
        if arr.shape != (self.num_envs, 5):
            raise ValueError(f"actions have shape ({self.num_envs}, 5), not {arr.shape}")
        batch = np.stack([coerce_action(n, a, self._action_type) for n, a in zip(self._s.agents, arr)])
        result = self._s.step(batch, self._action_type == "discrete")
        obs = self._s.obs_array(result)
        n = self.num_envs
        rewards = np.array(result["rewards"], dtype=np.float64)
        terms = np.zeros(n, dtype=bool)
        truncs = np.zeros(n, dtype=bool)
        errors = [""] * n
        for k, arena in enumerate(self._s.arenas):
            terms[k], truncs[k], err = self._s.judge(arena, result)
            errors[k] = err or ""
            if terms[k] or truncs[k]:
                self._s.reset_arena(arena)
        infos = {
            "missed_decisions": np.array(result["missed"]),
            "alive": np.array(result["alive"]),
            "events": [[{"kind": c, "other": o, "reward": w} for c, o, w in out] for out in result["outcomes"]],
            "error": np.array(errors, dtype=object),
        }
        done = terms | truncs
        if done.any():
            infos["final_obs"] = np.where(done[:, None], obs, 0.0)
            infos["_final_obs"] = done
        return obs, rewards, terms, truncs, infos

    def close_extras(self, **kwargs):
        self._s.stop()


def vector_env(
    num_envs: int,
    *,
    team: str = "red",
    opponents: Optional[Mapping[str, Sequence[str]]] = None,
    servers: Optional[Sequence[str]] = None,
    action_type: str = "box",
    ready_timeout: float = 60.0,
    **options: Any,
) -> BzVectorEnv:
    """``num_envs`` games, each a private bzfs (or ``servers[k]``) with one learning tank against bots (default: a
    hunter on green), all on one native event loop. Every other keyword is ``parallel_env``'s (``world``, ``mode``,
    ``decision_hz``, ``episode_seconds``, ``warp``, ``rewards``, the observation's counts, ...)."""
    if not (isinstance(num_envs, int) and 1 <= num_envs <= 256):
        raise ValueError("num_envs must be between 1 and 256")
    if servers is not None and len(servers) != num_envs:
        raise ValueError("servers must give one address per environment")
    if opponents is None:
        opponents = {"green": ["hunter"]}
    defaults = {
        k: p.default
        for k, p in inspect.signature(parallel_env).parameters.items()
        if p.kind == p.KEYWORD_ONLY and k not in ("teams", "opponents", "action_type", "reset_mode", "ready_timeout")
    }
    unknown = set(options) - set(defaults)
    if unknown:
        raise TypeError(f"vector_env() got unexpected keyword arguments {sorted(unknown)}")
    games = [((servers[k] if servers else None), {team: 1}, opponents) for k in range(num_envs)]
    session = _session(games, **{**defaults, **options, "ready_timeout": ready_timeout}, prefix=True)
    action_space(action_type)
    return BzVectorEnv(session, action_type)
