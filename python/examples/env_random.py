"""A random policy on every learning tank of a PettingZoo parallel environment (two teams of two, a hunter on
each side), for one episode; prints the rewarded events as they come and the missed decisions at the end.

    python examples/env_random.py
"""

from __future__ import annotations

import bzhead.env


def main() -> None:
    env = bzhead.env.parallel_env(
        teams={"red": 2, "green": 2}, opponents={"red": ["hunter"], "green": ["hunter"]}, episode_seconds=30.0
    )
    obs, infos = env.reset(seed=42)
    returns = {a: 0.0 for a in env.agents}
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rewards, terms, truncs, infos = env.step(actions)
        for a, r in rewards.items():
            returns[a] += r
            for e in infos[a]["events"]:
                print(a, e)
    print("returns", returns)
    print("missed decisions", {a: i["missed_decisions_total"] for a, i in infos.items()})
    env.close()


if __name__ == "__main__":
    main()
