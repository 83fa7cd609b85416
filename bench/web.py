#!/usr/bin/env python3
"""The live web view's cost: `bzhead observe --web` watching 20 bots play, with 0, 1 and 20 viewers.

Usage: bench/web.py [--bots 20] [--viewers 0,1,20] [--seconds 20] [--reps 3] [--variant NAME=ENV,...]...
                    [--bzhead $CARGO_TARGET_DIR/release/bzhead]

One /usr/games/bzfs on a free loopback port (CTF on the generated world, jumping, ricochet, 3 shots, room for 10 per
team and 30 observers), `bzhead bot hunter,capper --count BOTS --team red,green --quiet` playing on it the whole
time, and one `bzhead observe --web 127.0.0.1:0 --netstats 0` process per variant (the shipped defaults, `default`,
unless --variant is given; a variant is a name and environment settings, e.g. `--variant
p50=BZHEAD_WEB_PUSH_MS=50,BZHEAD_WEB_EVENT_MS=50`), all watching the same game at once. Once /api/state lists every
bot (and 5 s more), REPS rounds; in each, for each viewer count N and each variant in turn (interleaved, so that a busy machine
weighs on every variant alike): N stream clients open /events?server=0 of that variant's observer (plain sockets
reading the Server-Sent Events as a browser's EventSource does), 3 s pass, and then over SECONDS: the observer's CPU
time (every thread, /proc/PID/task/*/schedstat), its VmRSS at the end, the bytes each viewer received per second,
and for every `state` a viewer received, the delay from the server message that made it to its arrival at the
viewer: the state's `since_ms` (from the reactor's receipt of the oldest message in it to its push) plus the
wall-clock time from its `wall_ms` to its arrival; and the same from the oldest *event* in it (`event_ms`: a shot
fired or ended, a kill, a spawn, a join, a flag taken, a score, a chat line) for the states that carry one. Then the
viewers close and the next measurement starts.

Prints a Markdown table per variant (medians over the rounds; the delays pooled over them) and whether the issue's
target holds (20 viewers cost at most twice the CPU of none). Progress goes to stderr.
"""
import argparse, json, os, signal, socket, statistics, subprocess, sys, threading, time, urllib.request

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bots import start_bzfs  # noqa: E402
from observers import cpu_ns, mem_kib  # noqa: E402


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Viewer:
    """A stream client: reads /events, counts bytes, and the delay of each state."""

    def __init__(self, addr):
        self.bytes = 0
        self.delays = []
        self.event_delays = []
        self.counting = False
        self.stop = False
        self.sock = socket.create_connection(addr)
        self.sock.sendall(b"GET /events?server=0 HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n")
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        buf = b""
        event = None
        self.sock.settimeout(0.5)
        while not self.stop:
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            if not chunk:
                return
            now_ms = time.time() * 1000.0
            if self.counting:
                self.bytes += len(chunk)
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.startswith(b"event: "):
                    event = line[7:].strip()
                elif line.startswith(b"data: ") and event == b"state" and self.counting:
                    try:
                        s = json.loads(line[6:])
                    except ValueError:
                        continue
                    if s.get("full") or s.get("since_ms") is None:
                        continue
                    transit = max(0.0, now_ms - s["wall_ms"])
                    self.delays.append(s["since_ms"] + transit)
                    if s.get("event_ms") is not None:
                        self.event_delays.append(s["event_ms"] + transit)
                elif line == b"":
                    event = None

    def close(self):
        self.stop = True
        try:
            self.sock.close()
        except OSError:
            pass


def api_players(addr):
    with urllib.request.urlopen(f"http://{addr[0]}:{addr[1]}/api/state?server=0", timeout=10) as r:
        s = json.load(r)
    return [p for p in s["players"] if p["team"] != "observer"]


def pct(xs, q):
    return xs[int(q * (len(xs) - 1))] if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bots", type=int, default=20)
    ap.add_argument("--viewers", default="0,1,20")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=VAR=VALUE,VAR=VALUE: an observer with these environment settings")
    ap.add_argument("--bzhead", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release/bzhead"))
    a = ap.parse_args()
    counts = [int(x) for x in a.viewers.split(",")]
    variants = []
    for v in a.variant or ["default="]:
        name, _, settings = v.partition("=")
        env = dict(os.environ)
        for kv in filter(None, settings.split(",")):
            k, _, val = kv.partition("=")
            env[k] = val
        variants.append((name, settings, env))
    bzfs, server = start_bzfs(["-c", "-j", "+r", "-ms", "3", "-mp", "0,10,10,0,0,30"])
    procs = [bzfs]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # the finally below ends bzfs, the bots and observers
    try:
        bots = subprocess.Popen([a.bzhead, "bot", "hunter,capper", "--count", str(a.bots), "--team", "red,green",
                                 "--quiet", server], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(bots)
        observers = []
        for name, settings, env in variants:
            obs = subprocess.Popen([a.bzhead, "observe", "--web", "127.0.0.1:0", "--netstats", "0", "--no-cache",
                                    "--callsign", f"web-{name}"[:30], server], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
            procs.append(obs)
            url = None
            for line in obs.stderr:
                if "web view on http://" in line:
                    url = line.split("http://", 1)[1].split("/", 1)[0]
                    break
            if not url:
                raise SystemExit("the observer printed no URL")
            threading.Thread(target=lambda o=obs: [None for _ in o.stderr], daemon=True).start()
            host, port = url.rsplit(":", 1)
            observers.append((obs, (host, int(port))))
        end = time.time() + 240
        waiting = list(observers)
        seen = []
        while waiting and time.time() < end:
            try:
                seen = [len(api_players(addr)) for _, addr in waiting]
                waiting = [w for w, n in zip(waiting, seen) if n < a.bots]
            except OSError:
                pass
            time.sleep(0.5)
        if waiting:
            raise SystemExit(f"the {a.bots} bots never all played (the observers saw {seen})")
        time.sleep(5)  # every bot spawned
        log(f"{a.bots} bots playing on {server}; observers " +
            ", ".join(f"{v[0]}: pid {o.pid}" for v, (o, _) in zip(variants, observers)))
        samples = {(vi, n): [] for vi in range(len(variants)) for n in counts}
        for rep in range(a.reps):
            for n in counts:
                for vi, (obs, addr) in enumerate(observers):
                    viewers = [Viewer(addr) for _ in range(n)]
                    time.sleep(3)
                    for v in viewers:
                        v.counting = True
                    c0, t0 = cpu_ns(obs.pid), time.time()
                    time.sleep(a.seconds)
                    c1, t1 = cpu_ns(obs.pid), time.time()
                    for v in viewers:
                        v.counting = False
                    wall = t1 - t0
                    row = {
                        "variant": variants[vi][0], "rep": rep, "viewers": n,
                        "cpu_pct": 100.0 * (c1 - c0) / 1e9 / wall,
                        "rss_mib": mem_kib(obs.pid)["VmRSS"] / 1024.0,
                        "bytes_per_s_per_viewer": (sum(v.bytes for v in viewers) / n / wall) if n else None,
                        "states_per_s_per_viewer": (sum(len(v.delays) for v in viewers) / n / wall) if n else None,
                        "delays": [d for v in viewers for d in v.delays],
                        "event_delays": [d for v in viewers for d in v.event_delays],
                    }
                    samples[(vi, n)].append(row)
                    log(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()
                                    if k not in ("delays", "event_delays")}))
                    for v in viewers:
                        v.close()
                    time.sleep(1)
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()

    def f(x, fmt):
        return "–" if x is None else format(x, fmt)

    def med(rows, k):
        xs = [r[k] for r in rows if r[k] is not None]
        return statistics.median(xs) if xs else None

    print(f"{a.bots} bots playing; one `bzhead observe --web` per variant; {a.seconds:.0f} s per sample, "
          f"{a.reps} rounds, medians.\n")
    for vi, (name, settings, _) in enumerate(variants):
        print(f"**{name}**" + (f" (`{settings}`)" if settings else " (shipped defaults)") + "\n")
        print("| viewers | observer CPU | RSS | bytes/s per viewer | states/s per viewer "
              "| delay p50 | p95 | max | event delay p50 | p95 | max |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        cpu = {}
        for n in counts:
            rows = samples[(vi, n)]
            d = sorted(x for r in rows for x in r["delays"])
            e = sorted(x for r in rows for x in r["event_delays"])
            cpu[n] = med(rows, "cpu_pct")
            print(f"| {n} | {cpu[n]:.2f} % | {med(rows, 'rss_mib'):.1f} MiB | "
                  f"{f(med(rows, 'bytes_per_s_per_viewer'), ',.0f')} | {f(med(rows, 'states_per_s_per_viewer'), '.1f')} | "
                  f"{f(pct(d, 0.5), '.1f')} ms | {f(pct(d, 0.95), '.1f')} ms | {f(d[-1] if d else None, '.1f')} ms | "
                  f"{f(pct(e, 0.5), '.1f')} ms | {f(pct(e, 0.95), '.1f')} ms | {f(e[-1] if e else None, '.1f')} ms |")
        top = max(counts)
        if 0 in counts and top > 0 and cpu[0] > 0:
            ratio = cpu[top] / cpu[0]
            per_round = [r20["cpu_pct"] / r0["cpu_pct"] for r0, r20 in zip(samples[(vi, 0)], samples[(vi, top)])
                         if r0["cpu_pct"] > 0]
            ok = "holds" if ratio <= 2.0 else "misses"
            print(f"\n{top} viewers cost {ratio:.2f}x the CPU of none (per round: "
                  f"{', '.join(f'{x:.2f}x' for x in per_round)}; target: at most 2x): {ok}.\n")


if __name__ == "__main__":
    main()
