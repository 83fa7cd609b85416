"""Learning environments on real BZFlag: ``parallel_env`` (PettingZoo), ``gym_env`` (Gymnasium) and
``vector_env`` (Gymnasium, many games on one event loop). The game logic (observations, actions, rewards, the
decision clock) is Rust (``bzhead::env``); see ``docs/env.md``.

Needs the ``env`` extra: ``pip install './python[env]'`` (numpy, gymnasium, pettingzoo).
"""

from __future__ import annotations

from ._core import ACTION_HIGH, ACTION_LOW, ACTION_NAMES, ACTION_NVEC
from ._server import PrivateServer
from .gym_env import BzGymEnv, gym_env
from .parallel_env import BzParallelEnv, parallel_env
from .vector_env import BzVectorEnv, vector_env

__all__ = [
    "ACTION_HIGH",
    "ACTION_LOW",
    "ACTION_NAMES",
    "ACTION_NVEC",
    "BzGymEnv",
    "BzParallelEnv",
    "BzVectorEnv",
    "PrivateServer",
    "gym_env",
    "parallel_env",
    "vector_env",
]
