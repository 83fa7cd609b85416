"""``bzhead.env.gym_env``: one learning tank against bzhead's bots, as a Gymnasium ``Env``."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import gymnasium as gym
import numpy as np

from .parallel_env import BzParallelEnv, parallel_env


class BzGymEnv(gym.Env):
    """See ``gym_env``."""

    metadata = {"render_modes": []}

    def __init__(self, penv: BzParallelEnv):
        self._p = penv
        (self._agent,) = penv.possible_agents
        self.observation_space = penv.observation_space(self._agent)
        self.action_space = penv.action_space(self._agent)
        self.render_mode = None

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        super().reset(seed=seed)
        obs, infos = self._p.reset(seed=seed, options=options)
        return obs[self._agent], infos[self._agent]

    def step(self, action: Any):
        obs, rewards, terms, truncs, infos = self._p.step({self._agent: action})
        a = self._agent
        return obs[a], rewards[a], terms[a], truncs[a], infos[a]

    def status(self):
        return self._p.status()

    def server_log(self) -> str:
        return self._p.server_log()

    def close(self):
        self._p.close()


def gym_env(
    server: Optional[str] = None,
    *,
    team: str = "red",
    opponents: Optional[Mapping[str, Sequence[str]]] = None,
    **kwargs: Any,
) -> BzGymEnv:
    """One learning tank (``{team}0``) against bzhead's bots (default: a hunter on green) as a Gymnasium ``Env``.
    Every other keyword is ``parallel_env``'s."""
    if opponents is None:
        opponents = {"green": ["hunter"]}
    return BzGymEnv(parallel_env(server, teams={team: 1}, opponents=opponents, **kwargs))
