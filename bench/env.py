#!/usr/bin/env python3
"""bzhead.env with a random policy: agent-steps per second (wall and per core), CPU per agent-step split three
ways, and memory per agent, for 1, 8 and 64 learning tanks at warp 1 and 8 (issue #23).

Usage:
  bench/env.py [--agents 1,8,64] [--warps 1,8] [--seconds 20] [--decision-hz 10] [--policy batch|sample]
               [--compare DIR]

Each configuration (N agents, warp k) runs in a fresh Python process (so its memory figures are its own):
`bzhead.env.parallel_env` on one private bzfs (the generated CTF world, `-mp` with room for N), N learning tanks
(red and green alternating), no other players, 10 decisions per game-second, a random policy, stepped for SECONDS
of wall time after the first reset (the joins 0.2 wall-seconds apart at any warp, and a second or third try on a
fresh server if one did not get in). The policy: `--policy batch` (the default) draws every agent's action in one
`numpy` call, uniform within the `Box` action space's bounds; `--policy sample` calls Gymnasium's
`action_space(agent).sample()` per agent per step (about 50-100 µs each, which at 64 agents and warp 8 is more than
the game's decision period by itself).

Figures, over that window:
  agent-steps/s      agent-steps (one agent's observation handed out) per wall-second.
  per core           agent-steps per CPU-second of the environment: agent-steps / (bzfs's CPU + this process's CPU
                     - the policy's CPU), every thread of both processes (/proc/PID/task/*/schedstat). The policy's
                     cost is the user's and is reported apart ("policy").
  missed             decision times of the game clock that passed with no tick to take them (the event loop turns
                     only inside `step`, so a policy plus wrapper slower than the decision period, or a loop behind
                     the game, skips them; the env's `info["missed_decisions"]`), summed over the agents.
  CPU per agent-step bzfs (its process); loop (the native event loop: thread CPU time inside `EnvCore.step`/
                     `reset` while the GIL is released, the core's `loop_cpu_seconds`); python (the rest of this
                     process: the wrapper, the native result building, numpy; worker threads too); policy (thread
                     CPU time of drawing the actions).
  waited for a CPU   time this process's threads were ready to run but waited for a core (schedstat), as a share
                     of the wall time: the machine's other work; where it is high, the wall rate and the missed
                     decisions say more about the machine than about the env.
  memory per agent   (resident anonymous memory after the window - the same once the server runs and before
                     anyone joined) / N, for this process and for bzfs (RssAnon, /proc/PID/status).

`--compare DIR`: every configuration also runs with the `bzhead` package found in DIR (an older build copied aside:
`cp -r target/py-venv/lib/python3*/site-packages/bzhead DIR/`), right after the current one, so that both sit in
the same run. A build without `loop_cpu_seconds` shows its loop and python parts together under python.

Run it with the package installed (python/run-tests makes target/py-venv):
  nice target/py-venv/bin/python bench/env.py
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bots import cpu_seconds  # noqa: E402  (bench/bots.py)


def anon_kib(pid):
    """Resident anonymous memory of `pid` in KiB (RssAnon: the heap, buffers, state; not the program's text and
    libraries, whose share in PSS moves whenever another process maps them, e.g. another bzfs on the machine)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0


def runqueue_seconds(pid):
    """Time the threads of `pid` were ready to run but waited for a CPU (schedstat's second field): how much of
    the wall time the shared machine's other work took from us."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return total / 1e9


def server_pid(proc):
    """The bzfs process itself: under a warp, `faketime` forks it as its only child."""
    pid = proc.pid
    for _ in range(50):
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            return pid
        if comm != "faketime":
            return pid
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = f.read().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        time.sleep(0.1)
    return pid


def end_server(proc, bzfs):
    """Under a warp the private server's process is faketime, whose stop() leaves its bzfs child running: end it."""
    if bzfs != proc.pid:
        try:
            os.kill(bzfs, signal.SIGTERM)
        except OSError:
            pass


def one(n, warp, seconds, decision_hz, policy_kind):
    """One configuration in this process: a dict of figures."""
    import numpy as np

    import bzhead.env

    teams = {"red": (n + 1) // 2, "green": n // 2} if n > 1 else {"red": 1}
    env = bzhead.env.parallel_env(
        teams=teams, opponents={}, episode_seconds=1e6, warp=warp, decision_hz=decision_hz,
        server_options=["-mp", str(max(n, 8) + 2)], ready_timeout=60.0,
        # Joins 0.2 s of wall time apart at any warp: at warp 8 the default 0.2 game-s (25 ms) and the connect
        # timeout of 5 game-s (0.6 s) lost some of 64 joins on the loaded machine.
        join_stagger=min(0.2 * warp, 10.0),
    )
    s = env._s
    for attempt in range(3):
        s.start(0)  # the server runs, the learners are added; nobody joins before the loop turns (reset)
        proc = s.arenas[0].private.proc
        bzfs = server_pid(proc)
        time.sleep(0.5)
        mem0 = anon_kib(os.getpid()), anon_kib(bzfs)
        try:
            env.reset(seed=0)
            break
        except RuntimeError as e:  # a join timed out (a loaded machine, at a warp): again, on a new server
            text = str(e)
            print(f"attempt {attempt + 1}: {text[:120]} ... {text[-300:]}", file=sys.stderr)
            end_server(proc, bzfs)
    else:
        raise SystemExit(f"{n} agents at warp {warp:g}: the agents did not all join in three attempts")
    core = s.core
    has_loop = hasattr(core, "loop_cpu_seconds")
    loop = (lambda: core.loop_cpu_seconds) if has_loop else (lambda: 0.0)
    spaces = [env.action_space(a) for a in env.possible_agents]
    low, high = spaces[0].low, spaces[0].high
    rng = np.random.default_rng(0)
    steps = missed = 0
    policy = 0.0
    rq0 = runqueue_seconds(os.getpid())
    me0, bz0, lp0, t0 = cpu_seconds(os.getpid()), cpu_seconds(bzfs), loop(), time.monotonic()
    wall = t0
    while wall - t0 < seconds:
        p0 = time.thread_time()
        if policy_kind == "sample":
            actions = {a: sp.sample() for a, sp in zip(env.agents, spaces)}
        else:
            rows = rng.uniform(low, high, size=(len(env.agents), 5)).astype(np.float32)
            actions = dict(zip(env.agents, rows))
        policy += time.thread_time() - p0
        _, _, _, _, infos = env.step(actions)
        steps += len(infos)
        missed += sum(i["missed_decisions"] for i in infos.values())
        wall = time.monotonic()
        if not env.agents:
            env.reset()
    me1, bz1, lp1 = cpu_seconds(os.getpid()), cpu_seconds(bzfs), loop()
    rq1 = runqueue_seconds(os.getpid())
    mem1 = anon_kib(os.getpid()), anon_kib(bzfs)
    joined = sum(1 for v in env.status().values() if v[0] == "joined")
    env.close()
    end_server(proc, bzfs)
    return {
        "agents": n, "warp": warp, "seconds": wall - t0, "steps": steps, "missed": missed, "joined": joined,
        "process_cpu": me1 - me0, "bzfs_cpu": bz1 - bz0, "loop_cpu": (lp1 - lp0) if has_loop else None,
        "policy_cpu": policy, "runqueue": rq1 - rq0, "mem_process_kib": mem1[0] - mem0[0], "mem_bzfs_kib": mem1[1] - mem0[1],
    }


def row(label, r):
    n, st = r["agents"], max(r["steps"], 1)
    us = lambda c: f"{1e6 * c / st:.0f}"  # noqa: E731
    env_cpu = r["process_cpu"] + r["bzfs_cpu"] - r["policy_cpu"]
    loop = r["loop_cpu"]
    python = r["process_cpu"] - r["policy_cpu"] - (loop or 0.0)
    return (
        f"| {label} | {n} | {r['warp']:g} | {r['steps'] / r['seconds']:,.0f} | {r['steps'] / max(env_cpu, 1e-9):,.0f} "
        f"| {r['missed']} | {us(r['bzfs_cpu'])} | {us(loop) if loop is not None else '–'} | {us(python)} "
        f"| {us(r['policy_cpu'])} | {100 * env_cpu / r['seconds']:.0f} % "
        f"| {100 * r.get('runqueue', 0.0) / r['seconds']:.0f} % "
        f"| {r['mem_process_kib'] / n:,.0f} / {r['mem_bzfs_kib'] / n:,.0f} |"
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--agents", default="1,8,64")
    p.add_argument("--warps", default="1,8")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--decision-hz", type=float, default=10.0)
    p.add_argument("--policy", choices=("batch", "sample"), default="batch")
    p.add_argument("--compare", metavar="DIR", help="also run the bzhead package in DIR (an older build)")
    p.add_argument("--one", nargs=2, type=float, metavar=("N", "K"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        print(json.dumps(one(int(a.one[0]), a.one[1], a.seconds, a.decision_hz, a.policy)))
        return
    builds = [("current", None)] + ([("compare", os.path.abspath(a.compare))] if a.compare else [])
    print(f"# bench/env.py {' '.join(sys.argv[1:])}  ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{os.cpu_count()} cores)")
    print("| build | agents | warp | agent-steps/s | per core (env CPU) | missed | CPU per agent-step: bzfs µs "
          "| loop µs | python µs | policy µs | env CPU (% of a core) | waited for a CPU (% of wall) "
          "| memory per agent: process / bzfs KiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for warp in [float(x) for x in a.warps.split(",")]:
        for n in [int(x) for x in a.agents.split(",")]:
            for label, path in builds:
                env = dict(os.environ)
                if path:
                    env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
                cmd = [sys.executable, os.path.abspath(__file__), "--one", str(n), str(warp), "--seconds",
                       str(a.seconds), "--decision-hz", str(a.decision_hz), "--policy", a.policy]
                out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
                if out.returncode != 0:
                    print(f"| {label} | {n} | {warp:g} | failed (exit {out.returncode}) |", flush=True)
                    continue
                print(row(label, json.loads(out.stdout.strip().splitlines()[-1])), flush=True)


if __name__ == "__main__":
    main()
