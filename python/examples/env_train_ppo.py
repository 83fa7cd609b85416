"""Training one learning tank against a sitter with Stable-Baselines3's PPO (a standard library), on a vector of
games that share one bzhead event loop.

    pip install './python[env]' stable-baselines3      # stable-baselines3 brings PyTorch
    python examples/env_train_ppo.py --envs 4 --steps 200000 --warp 8

At warp 1 a game gives 10 decisions per game-second, so 4 games give about 40 steps a second: 200,000 steps are
about 1.4 hours; at warp 8 about 10 minutes of play (plus PPO's own updates). The CI does not train (docs/env.md, "Training").
"""

from __future__ import annotations

import argparse

import numpy as np


def main() -> None:
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecEnv

    import bzhead.env

    p = argparse.ArgumentParser()
    p.add_argument("--envs", type=int, default=4)
    p.add_argument("--steps", type=int, default=200_000)
    p.add_argument("--warp", type=float, default=1.0, help="game time per wall time (a private bzfs under faketime)")
    p.add_argument("--save", default="bzhead-ppo")
    a = p.parse_args()

    venv = bzhead.env.vector_env(
        a.envs, opponents={"green": ["sitter"]}, mode="ffa", episode_seconds=60.0, warp=a.warp
    )

    class SB3(VecEnv):
        """bzhead's Gymnasium vector env in Stable-Baselines3's VecEnv shape (SB3 has its own vector API)."""

        def __init__(self, v):
            super().__init__(v.num_envs, v.single_observation_space, v.single_action_space)
            self.v, self.actions = v, None

        def reset(self):
            obs, _ = self.v.reset()
            return obs

        def step_async(self, actions):
            self.actions = actions

        def step_wait(self):
            obs, rew, term, trunc, info = self.v.step(np.asarray(self.actions, dtype=np.float32))
            done = term | trunc
            infos = [{"TimeLimit.truncated": bool(trunc[k] and not term[k])} for k in range(self.num_envs)]
            for k in np.flatnonzero(done):
                infos[k]["terminal_observation"] = info["final_obs"][k]
            return obs, rew.astype(np.float32), done, infos

        def close(self):
            self.v.close()

        def get_attr(self, name, indices=None):
            return [getattr(self, name, None)] * self.num_envs

        def set_attr(self, name, value, indices=None):
            setattr(self, name, value)

        def env_method(self, name, *args, indices=None, **kwargs):
            return [None] * self.num_envs

        def env_is_wrapped(self, wrapper_class, indices=None):
            return [False] * self.num_envs

    env = SB3(venv)
    model = PPO("MlpPolicy", env, n_steps=256, batch_size=256, verbose=1)
    model.learn(total_timesteps=a.steps)
    model.save(a.save)
    env.close()


if __name__ == "__main__":
    main()
