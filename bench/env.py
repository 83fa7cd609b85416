#!/usr/bin/env python3
"""bzhead.env with a random policy: agent-steps per second and CPU per agent-step, for 1 and 8 learning tanks.

Usage:
  bench/env.py [--agents 1,8] [--seconds 20] [--warp 1]

For each N: `bzhead.env.parallel_env` on a private bzfs (the generated CTF world), N learning tanks (red and
green alternating), 10 decisions per game-second, a random policy (`action_space.sample()`), steps for SECONDS of
wall time after the first reset. Reports agent-steps per wall-second, missed decisions, and CPU per agent-step
split between bzfs (its process), the native step (the event loop, timed inside `EnvCore.step`, GIL released) and
the rest of this process (Python: the env wrapper and the policy). Run it with the package installed
(python/run-tests makes target/py-venv): target/py-venv/bin/python bench/env.py
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bots import cpu_seconds  # noqa: E402  (bench/bots.py)

import bzhead.env  # noqa: E402


def run(n, seconds, warp):
    teams = {"red": (n + 1) // 2, "green": n // 2} if n > 1 else {"red": 1}
    env = bzhead.env.parallel_env(teams=teams, opponents={}, episode_seconds=1e6, warp=warp)
    env.reset(seed=0)
    bzfs_pid = env._s.arenas[0].private.proc.pid
    steps = missed = 0
    me0, bz0, t0 = cpu_seconds(os.getpid()), cpu_seconds(bzfs_pid), time.monotonic()
    wall = t0
    while wall - t0 < seconds:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        _, _, _, _, infos = env.step(actions)
        steps += len(infos)
        missed += sum(i["missed_decisions"] for i in infos.values())
        wall = time.monotonic()
    me1, bz1 = cpu_seconds(os.getpid()), cpu_seconds(bzfs_pid)
    env.close()
    el = wall - t0
    per = lambda c: 1e6 * c / max(steps, 1)  # noqa: E731
    print(
        f"agents={n} warp={warp:g}: {steps / el:.1f} agent-steps/s over {el:.1f} s, missed {missed}; "
        f"CPU per agent-step: this process {per(me1 - me0):.0f} us, bzfs {per(bz1 - bz0):.0f} us; "
        f"process CPU {100 * (me1 - me0) / el:.1f}% of a core, bzfs {100 * (bz1 - bz0) / el:.1f}%"
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--agents", default="1,8")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--warp", type=float, default=1.0)
    a = p.parse_args()
    for n in [int(x) for x in a.agents.split(",")]:
        run(n, a.seconds, a.warp)


if __name__ == "__main__":
    main()
