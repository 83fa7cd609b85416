#!/usr/bin/env python3
"""N observers in one `bzhead observe --count N` process against N `bzadmin` processes, on the same bzfs, for the
same stretch of play: summed resident memory and CPU, and the ratios.

Usage: bench/observers.py [--counts 1,10,100] [--seconds 60] [--rounds 1] [--load 4] [--stagger-ms 50]
                          [--bzhead $CARGO_TARGET_DIR/release/bzhead] [--bzadmin /usr/games/bzadmin]
                          [--compare OTHER_BZHEAD]

For each N: one /usr/games/bzfs on a free loopback port (CTF on the generated world, jumping, 6 super flags, room
for N + 10 observers), with LOAD `bzhead bot hunter` bots playing on it (red against green) for the whole run, so
that the observers have a game to relay. Then the two sides take turns on that server (the order alternates from
round to round):

  bzhead   one `bzhead observe --count N --no-cache --json` process (stdout drained; it prints the first observer's
           events and a line per observer that joins);
  bzadmin  N `bzadmin -ui stdboth NAME@SERVER` processes (each one's stdout drained), spawned STAGGER ms apart,
           as bzhead staggers its connects.

Once every observer of the side has joined (its "joined" line) and 2 s more have passed, the side is sampled: the
CPU time of its processes (every thread's on-CPU time, /proc/PID/task/*/schedstat, nanoseconds), again SECONDS
later; at the end of the window VmRSS and VmHWM (/proc/PID/status) and PSS (/proc/PID/smaps_rollup, which shares
the pages that N bzadmin processes have in common among them; RSS counts them N times) summed over the side's
processes. The CPU of bzfs over the same window is reported too. Then the side leaves (SIGINT for bzhead, /quit
for bzadmin) and the server gets 2 s to drop it before the other side joins.

With --compare, a third side takes its turn too: the same `observe` command run by another bzhead binary (say, a
build from before a change), so that before and after are measured in one run, against the same bzadmins and the
same game; its figures and ratios come in a second table.

Prints a Markdown table (medians over the rounds) and whether the issue's targets hold at the largest N (bzhead
under a tenth of bzadmin's memory and a fifth of its CPU). Progress goes to stderr.
"""
import argparse, json, os, statistics, subprocess, sys, threading, time

sys.dont_write_bytecode = True  # no bench/__pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bots import start_bzfs  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def cpu_ns(pid):
    """On-CPU time of every thread of `pid`, in nanoseconds (0 when it is gone)."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    if total == 0:  # no schedstat (kernel without CONFIG_SCHED_INFO): clock ticks
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total = (int(fields[11]) + int(fields[12])) * 1_000_000_000 // CLK_TCK
        except OSError:
            pass
    return total


def mem_kib(pid):
    out = {"VmRSS": 0, "VmHWM": 0, "Pss": 0}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmHWM", "VmRSS"):
                    out[k] = int(v.split()[0])
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k == "Pss":
                    out["Pss"] = int(v.split()[0])
    except OSError:
        pass
    return out


class Drain:
    """Reads a process's stdout to the end on a thread; `joined` is set once `pred(line)` held for `need` lines."""

    def __init__(self, stream, pred, need=1):
        self.joined = threading.Event()
        self.seen = 0
        self.lines = 0

        def run():
            for line in stream:
                self.lines += 1
                if not self.joined.is_set() and pred(line):
                    self.seen += 1
                    if self.seen >= need:
                        self.joined.set()

        threading.Thread(target=run, daemon=True).start()


def run_bzhead(a, n, server, tag, binary=None):
    cmd = [binary or a.bzhead, "observe", "--count", str(n), "--stagger-ms", str(a.stagger_ms), "--no-cache", "--json",
           "--callsign", tag, server]
    t0 = time.time()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    marker = '"type":"accept"' if n == 1 else '"type":"all_joined"'
    d = Drain(p.stdout, lambda l: marker in l)
    if not d.joined.wait(30 + n * a.stagger_ms / 1000 * 2):
        p.kill(); p.wait()
        raise SystemExit(f"bzhead: not all of {n} observers joined")
    joined = time.time() - t0

    def leave():
        p.send_signal(2)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill(); p.wait()
    return [p.pid], joined, leave


def run_bzadmin(a, n, server, tag):
    procs, drains = [], []
    t0 = time.time()
    for i in range(1, n + 1):
        cs = f"{tag}{i}"
        p = subprocess.Popen([a.bzadmin, "-ui", "stdboth", f"{cs}@{server}"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace")
        procs.append(p)
        drains.append(Drain(p.stdout, lambda l, cs=cs: f"'{cs}' joined the game" in l))
        time.sleep(a.stagger_ms / 1000)
    end = time.time() + 30 + n * a.stagger_ms / 1000 * 2
    for d in drains:
        d.joined.wait(max(0.0, end - time.time()))
    missing = sum(not d.joined.is_set() for d in drains)
    joined = time.time() - t0

    def leave():
        for p in procs:
            try:
                p.stdin.write("/quit\n"); p.stdin.flush()
            except (BrokenPipeError, OSError):
                pass
        end = time.time() + 15
        for p in procs:
            try:
                p.wait(timeout=max(0.1, end - time.time()))
            except subprocess.TimeoutExpired:
                p.kill(); p.wait()
    if missing:
        leave()
        raise SystemExit(f"bzadmin: {missing} of {n} did not join")
    return [p.pid for p in procs], joined, leave


def measure(a, side, n, server, bzfs_pid, tag):
    if side == "compare":
        pids, joined, leave = run_bzhead(a, n, server, tag, a.compare)
    else:
        start = run_bzhead if side == "bzhead" else run_bzadmin
        pids, joined, leave = start(a, n, server, tag)
    try:
        time.sleep(2)
        c0, s0, t0 = sum(cpu_ns(p) for p in pids), cpu_ns(bzfs_pid), time.time()
        time.sleep(a.seconds)
        c1, s1, t1 = sum(cpu_ns(p) for p in pids), cpu_ns(bzfs_pid), time.time()
        mems = [mem_kib(p) for p in pids]
    finally:
        leave()
    time.sleep(2)
    return {
        "join_s": joined,
        "cpu_s": (c1 - c0) / 1e9,
        "wall_s": t1 - t0,
        "bzfs_cpu_s": (s1 - s0) / 1e9,
        "rss_kib": sum(m["VmRSS"] for m in mems),
        "hwm_kib": sum(m["VmHWM"] for m in mems),
        "pss_kib": sum(m["Pss"] for m in mems),
    }


def ratio(x, y):
    return x / y if y else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    target_dir = os.environ.get("CARGO_TARGET_DIR") or "target"
    ap.add_argument("--bzhead", default=os.path.join(target_dir, "release", "bzhead"))
    ap.add_argument("--bzadmin", default="/usr/games/bzadmin")
    ap.add_argument("--counts", default="1,10,100", help="observer counts, comma-separated")
    ap.add_argument("--seconds", type=float, default=60, help="measuring window per side")
    ap.add_argument("--rounds", type=int, default=1, help="rounds per count (sides alternate which goes first)")
    ap.add_argument("--load", type=int, default=4, help="bzhead hunter bots playing on the server meanwhile")
    ap.add_argument("--stagger-ms", type=int, default=50, help="time between two observers' connects")
    ap.add_argument("--json", metavar="FILE", help="also write the raw figures as JSON here")
    ap.add_argument("--compare", metavar="BZHEAD", help="another bzhead binary measured as a third side, in turn")
    a = ap.parse_args()
    counts = [int(x) for x in a.counts.split(",") if x]
    results = {}
    for n in counts:
        obs_slots = n + 10
        bzfs, server = start_bzfs(["-c", "-j", "+s", "6", "-ms", "3", "-mp", f"0,8,8,0,0,{obs_slots}"])
        load = None
        try:
            if a.load:
                load = subprocess.Popen([a.bzhead, "bot", "hunter", "--count", str(a.load), "--team", "red,green",
                                         "--quiet", "--stagger-ms", "100", server],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(2 + a.load * 0.1)
            sides = ["bzhead", "bzadmin"] + (["compare"] if a.compare else [])
            rs = {s: [] for s in sides}
            for r in range(a.rounds):
                k = (r + counts.index(n)) % len(sides)
                order = sides[k:] + sides[:k]
                for side in order:
                    tag = {"bzhead": "bh", "bzadmin": "ba", "compare": "bc"}[side] + f"{r}x"
                    log(f"observers: N={n} round {r + 1}/{a.rounds}: {side} ...")
                    m = measure(a, side, n, server, bzfs.pid, tag)
                    log(f"  {side}: {json.dumps(m)}")
                    rs[side].append(m)
            results[n] = rs
        finally:
            if load:
                load.send_signal(2)
                try:
                    load.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    load.kill(); load.wait()
            bzfs.terminate(); bzfs.wait()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seconds": a.seconds, "rounds": a.rounds, "load": a.load, "compare": a.compare,
                       "results": {str(n): v for n, v in results.items()}}, f, indent=1)

    def med(n, side, key):
        return statistics.median(m[key] for m in results[n][side])

    mib = lambda k: k / 1024
    print(f"| observers | summed VmRSS, MiB: bzhead / bzadmin (ratio) | summed PSS, MiB (ratio) | summed VmHWM, MiB "
          f"(ratio) | CPU over {a.seconds:g} s, ms: bzhead / bzadmin (ratio) | bzfs CPU meanwhile, ms: with bzhead / "
          f"with bzadmin | all joined after, s: bzhead / bzadmin |")
    print("|---|---|---|---|---|---|---|")
    for n in counts:
        cells = [str(n)]
        for key in ("rss_kib", "pss_kib", "hwm_kib"):
            h, b = med(n, "bzhead", key), med(n, "bzadmin", key)
            cells.append(f"{mib(h):.1f} / {mib(b):.1f} ({ratio(h, b):.3f})")
        h, b = med(n, "bzhead", "cpu_s"), med(n, "bzadmin", "cpu_s")
        cells.append(f"{h * 1000:.0f} / {b * 1000:.0f} ({ratio(h, b):.3f})")
        cells.append(f"{med(n, 'bzhead', 'bzfs_cpu_s') * 1000:.0f} / {med(n, 'bzadmin', 'bzfs_cpu_s') * 1000:.0f}")
        cells.append(f"{med(n, 'bzhead', 'join_s'):.1f} / {med(n, 'bzadmin', 'join_s'):.1f}")
        print("| " + " | ".join(cells) + " |")
    if a.compare:
        print()
        print(f"Compared: `{a.compare}` (the same command, measured in turn in the same run):")
        print()
        print("| observers | summed PSS, MiB: compared / bzadmin (ratio); this bzhead's ratio | CPU, ms: compared / "
              "bzadmin (ratio); this bzhead's ratio |")
        print("|---|---|---|")
        for n in counts:
            cells = [str(n)]
            for key, scale in (("pss_kib", 1 / 1024), ("cpu_s", 1000)):
                c, b, h = med(n, "compare", key), med(n, "bzadmin", key), med(n, "bzhead", key)
                cells.append(f"{c * scale:.1f} / {b * scale:.1f} ({ratio(c, b):.3f}); {ratio(h, b):.3f}")
            print("| " + " | ".join(cells) + " |")
    top = max(counts)
    rss = ratio(med(top, "bzhead", "rss_kib"), med(top, "bzadmin", "rss_kib"))
    pss = ratio(med(top, "bzhead", "pss_kib"), med(top, "bzadmin", "pss_kib"))
    cpu = ratio(med(top, "bzhead", "cpu_s"), med(top, "bzadmin", "cpu_s"))
    yes = lambda ok: "met" if ok else "not met"
    print()
    print(f"At {top} observers ({a.rounds} round(s), {a.seconds:g} s window, {a.load} hunter bots playing): memory "
          f"{rss:.3f} of bzadmin's by summed RSS, {pss:.3f} by PSS (target under 0.1: {yes(rss < 0.1)} by RSS, "
          f"{yes(pss < 0.1)} by PSS); CPU {cpu:.3f} of bzadmin's (target under 0.2: {yes(cpu < 0.2)}).")


if __name__ == "__main__":
    main()
