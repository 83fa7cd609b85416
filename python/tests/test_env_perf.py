"""The native core's own CPU counter (`EnvCore.loop_cpu_seconds`), which bench/env.py splits CPU per agent-step
with: it counts the event loop's thread CPU time, so it grows with steps and never exceeds the process's CPU."""

from __future__ import annotations

import time

import bzhead.env


def test_the_loop_cpu_counter_grows_with_steps_within_the_process_cpu():
    env = bzhead.env.parallel_env(teams={"red": 2}, opponents={}, episode_seconds=1e6)
    try:
        env.reset(seed=0)
        core = env._s.core
        loop0, cpu0 = core.loop_cpu_seconds, time.process_time()
        for _ in range(20):
            env.step({a: env.action_space(a).sample() for a in env.agents})
        loop = core.loop_cpu_seconds - loop0
        cpu = time.process_time() - cpu0
        # 20 decisions are 2 game-seconds of 60 ticks: the loop did work, all of it on this process's CPU.
        assert loop > 0.0, loop
        assert loop <= cpu + 1e-3, (loop, cpu)
    finally:
        env.close()
