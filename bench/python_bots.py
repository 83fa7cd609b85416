#!/usr/bin/env python3
"""Python bots against the same bots in Rust: CPU per bot-second and the tick rate they hold.

Usage:
  bench/python_bots.py [--bots 1,10,50] [--seconds 30] [--python target/py-venv/bin/python]
                       [--bzhead target/release/bzhead]

For each N and each kind, a bzfs on the generated team world (-j, 3 shots, room for N bots), then one process
running `bzhead.BotHost` (30 Hz) with N bots:
  python  N Python bots with a trivial tick, the Python twin of the crate's sitter (`control.stop()`);
  rust    N of the crate's own sitters (`host.add_bot(server, "sitter")`), in the same kind of process
          (the same interpreter and host loop; only the bots' tick is Rust);
  cli     for reference, `bzhead bot sitter --count N` (target/release/bzhead): the same sitters in a process
          with no Python at all.
Once every bot has joined and spawned, the process's CPU time (all threads, /proc/PID/task/*/schedstat) is sampled,
again SECONDS later: CPU per bot-second = delta / (N * SECONDS). The ratio python / rust is the figure the target
(at most 1.5) is about. The tick rate is ticks per second per bot counted by the Python bots over the window
(30 is the host's rate), with the host's tick-time percentiles (every bot's tick and pilot).

The package must be installed in --python's environment (python/run-tests makes target/py-venv).
"""
import argparse, json, os, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bots import cpu_seconds, start_bzfs  # noqa: E402  (bench/bots.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
import bzhead

server, n, kind, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])

class Trivial(bzhead.Bot):
    ticks = 0
    def tick(self, view, control):
        Trivial.ticks += 1
        control.stop()

host = bzhead.BotHost(join_stagger=0.05, game_events=False)
ids = [host.add_bot(server, Trivial() if kind == "python" else "sitter", callsign=f"{kind[:2]}{i}") for i in range(n)]
spawned = set()
deadline = time.time() + 60 + n * 0.1
while len(spawned) < n and time.time() < deadline:
    host.run(0.2)
    for e in host.events():
        if e.get("bot_event") == "spawned":
            spawned.add(e["bot_id"])
if len(spawned) < n:
    print(json.dumps({"error": f"only {len(spawned)} of {n} bots spawned"}), flush=True)
    sys.exit(1)
host.run(2.0)  # settle
ticks0 = Trivial.ticks
print(json.dumps({"ready": True}), flush=True)
sys.stdin.readline()  # the parent samples our CPU now ...
t0 = time.time()
host.run(seconds)
wall = time.time() - t0
print(json.dumps({"ticks": Trivial.ticks - ticks0, "wall": wall}), flush=True)
sys.stdin.readline()  # ... and now
t = sorted(host.tick_times_us()[-int(30 * seconds):])
pct = lambda q: t[round((len(t) - 1) * q)] if t else 0
print(json.dumps({"tick_us": [round(sum(t) / max(len(t), 1)), pct(0.5), pct(0.9), pct(0.99), t[-1] if t else 0]}), flush=True)
host.close()
"""


def measure(python, n, kind, seconds):
    per_team = n // 4 + 2
    bzfs, server = start_bzfs(["-j", "-ms", "3", "-mp", f"0,{per_team},{per_team},{per_team},{per_team},4"])
    try:
        child = subprocess.Popen([python, "-c", CHILD, server, str(n), kind, str(seconds)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        first = json.loads(child.stdout.readline() or '{"error": "the bot process ended"}')
        if "error" in first:
            raise SystemExit(f"{kind} x {n}: {first['error']}")
        c0, t0 = cpu_seconds(child.pid), time.time()
        child.stdin.write("\n"); child.stdin.flush()
        ran = json.loads(child.stdout.readline())
        c1, t1 = cpu_seconds(child.pid), time.time()
        child.stdin.write("\n"); child.stdin.flush()
        ticks = json.loads(child.stdout.readline())["tick_us"]
        child.wait(timeout=30)
        wall = t1 - t0
        rate = ran["ticks"] / (n * ran["wall"]) if kind == "python" else None
        return {"cpu": (c1 - c0) / wall, "per_bot_us": (c1 - c0) / (n * wall) * 1e6, "rate": rate, "tick_us": ticks}
    finally:
        bzfs.terminate(); bzfs.wait()


def measure_cli(bzhead, n, seconds):
    per_team = n // 4 + 2
    bzfs, server = start_bzfs(["-j", "-ms", "3", "-mp", f"0,{per_team},{per_team},{per_team},{per_team},4"])
    try:
        bot = subprocess.Popen([bzhead, "bot", "sitter", "--count", str(n), "--stagger-ms", "50", "--quiet",
                                "--for", str(seconds + n * 0.05 + 30), server],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        spawned, deadline = 0, time.time() + 60 + n * 0.1
        while spawned < n and time.time() < deadline:
            line = bot.stdout.readline()
            if not line:
                break
            spawned += ": spawned at" in line
        if spawned < n:
            raise SystemExit(f"cli x {n}: only {spawned} of {n} bots spawned")
        time.sleep(2)
        c0, t0 = cpu_seconds(bot.pid), time.time()
        time.sleep(seconds)
        c1, t1 = cpu_seconds(bot.pid), time.time()
        bot.send_signal(2)
        bot.communicate(timeout=30)
        return {"per_bot_us": (c1 - c0) / (n * (t1 - t0)) * 1e6}
    finally:
        bzfs.terminate(); bzfs.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bots", default="1,10,50")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--python", default=os.path.join(ROOT, "target", "py-venv", "bin", "python"))
    ap.add_argument("--bzhead", default=os.path.join(ROOT, "target", "release", "bzhead"))
    a = ap.parse_args()
    rows = []
    for n in [int(x) for x in a.bots.split(",")]:
        r = measure(a.python, n, "rust", a.seconds)
        p = measure(a.python, n, "python", a.seconds)
        c = measure_cli(a.bzhead, n, a.seconds) if os.access(a.bzhead, os.X_OK) else None
        rows.append((n, r, p, c))
    print("| bots | Python bots: CPU per bot-second (µs) | Rust sitters, same host (µs) | Python / Rust "
          "| `bzhead bot sitter` (µs) | Python / CLI | Python bots' tick rate (Hz, host 30) "
          "| tick µs mean / p50 / p90 / p99 / max (Python) |")
    print("|---|---|---|---|---|---|---|---|")
    for n, r, p, c in rows:
        t = p["tick_us"]
        cli = f"{c['per_bot_us']:.0f} | {p['per_bot_us'] / c['per_bot_us']:.2f}" if c else "- | -"
        print(f"| {n} | {p['per_bot_us']:.0f} | {r['per_bot_us']:.0f} | {p['per_bot_us'] / r['per_bot_us']:.2f} "
              f"| {cli} | {p['rate']:.1f} | {t[0]} / {t[1]} / {t[2]} / {t[3]} / {t[4]} |")


if __name__ == "__main__":
    main()
