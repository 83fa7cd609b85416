"""A scripted policy through bzhead.env: turn to the nearest enemy the observation shows, close in, fire when
lined up. It reads only the observation vector (docs/env.md has the layout), as a learned policy would.

    python examples/env_scripted.py            # a private bzfs, one learning tank against a sitter, 60 game-s
"""

from __future__ import annotations

import math

import numpy as np

OWN = 11  # own-tank entries
TANK = 11  # entries per other tank


def policy(obs: np.ndarray, nearest: int = 4) -> np.ndarray:
    """The Box action (speed, turn, fire, jump, drop_flag) for one observation."""
    reload = obs[8]
    for k in range(nearest):
        t = obs[OWN + k * TANK: OWN + (k + 1) * TANK]
        present, fwd, left, hostile, alive = t[0], t[1], t[2], t[8], t[9]
        if present > 0.5 and hostile > 0.5 and alive > 0.5:
            bearing = math.atan2(left, fwd)
            turn = float(np.clip(bearing * 4.0, -1.0, 1.0))
            distance = math.hypot(fwd, left)  # in world widths
            speed = 0.6 if distance > 0.15 else 0.0
            fire = 1.0 if abs(bearing) < 0.06 and reload <= 0.0 else 0.0
            return np.array([speed, turn, fire, 0.0, 0.0], dtype=np.float32)
    return np.array([0.0, 0.5, 0.0, 0.0, 0.0], dtype=np.float32)  # look around


def main() -> None:
    import bzhead.env

    env = bzhead.env.gym_env(opponents={"green": ["sitter"]}, mode="ffa", episode_seconds=60.0)
    obs, info = env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        total += reward
        for e in info["events"]:
            print(e)
        done = terminated or truncated
    print("return", total, env.status())
    env.close()


if __name__ == "__main__":
    main()
