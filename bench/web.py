#!/usr/bin/env python3
"""The live web view's cost: `bzhead observe --web` watching 20 bots play, with 0, 1 and 20 viewers.

Usage: bench/web.py [--bots 20] [--viewers 0,1,20] [--seconds 30] [--bzhead $CARGO_TARGET_DIR/release/bzhead]

One /usr/games/bzfs on a free loopback port (CTF on the generated world, jumping, ricochet, 3 shots, room for 10 per
team and 30 observers), `bzhead bot hunter,capper --count BOTS --team red,green --quiet` playing on it the whole
time, and one `bzhead observe --web 127.0.0.1:0 --netstats 0` process (its stdout drained). Once /api/state lists
every bot, for each viewer count N in turn: N stream clients open /events?server=0 (plain sockets reading the
Server-Sent Events as a browser's EventSource does), 3 s pass, and then over SECONDS: the observer's CPU time
(every thread, /proc/PID/task/*/schedstat), its VmRSS at the end, the bytes each viewer received per second, and
for every `state` a viewer received, the delay from the server message that made it to its arrival at the viewer:
the state's `since_ms` (from the reactor's receipt of the oldest message in it to its push) plus the wall-clock
time from its `wall_ms` to its arrival. Then the viewers close and the next N starts.

Prints a Markdown table and whether the issue's target holds (20 viewers cost at most twice the CPU of none).
Progress goes to stderr.
"""
import argparse, json, os, socket, statistics, subprocess, sys, threading, time, urllib.request

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
                    self.delays.append(s["since_ms"] + max(0.0, now_ms - s["wall_ms"]))
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bots", type=int, default=20)
    ap.add_argument("--viewers", default="0,1,20")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--bzhead", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release/bzhead"))
    a = ap.parse_args()
    counts = [int(x) for x in a.viewers.split(",")]
    bzfs, server = start_bzfs(["-c", "-j", "+r", "-ms", "3", "-mp", "0,10,10,0,0,30"])
    procs = [bzfs]
    try:
        bots = subprocess.Popen([a.bzhead, "bot", "hunter,capper", "--count", str(a.bots), "--team", "red,green",
                                 "--quiet", server], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(bots)
        obs = subprocess.Popen([a.bzhead, "observe", "--web", "127.0.0.1:0", "--netstats", "0", "--no-cache", server],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        procs.append(obs)
        url = None
        for line in obs.stderr:
            if "web view on http://" in line:
                url = line.split("http://", 1)[1].split("/", 1)[0]
                break
        if not url:
            raise SystemExit("the observer printed no URL")
        threading.Thread(target=lambda: [None for _ in obs.stderr], daemon=True).start()
        host, port = url.rsplit(":", 1)
        addr = (host, int(port))
        end = time.time() + 120
        while time.time() < end:
            try:
                if len([p for p in api_players(addr) if p["alive"]]) >= a.bots:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            raise SystemExit(f"the {a.bots} bots never all played")
        log(f"{a.bots} bots playing on {server}; observer pid {obs.pid}, web view {url}")
        rows = []
        for n in counts:
            viewers = [Viewer(addr) for _ in range(n)]
            time.sleep(3)
            for v in viewers:
                v.counting = True
            c0, t0 = cpu_ns(obs.pid), time.time()
            time.sleep(a.seconds)
            c1, t1 = cpu_ns(obs.pid), time.time()
            for v in viewers:
                v.counting = False
            mem = mem_kib(obs.pid)
            wall = t1 - t0
            delays = sorted(d for v in viewers for d in v.delays)
            row = {
                "viewers": n,
                "cpu_pct": 100.0 * (c1 - c0) / 1e9 / wall,
                "rss_mib": mem["VmRSS"] / 1024.0,
                "bytes_per_s_per_viewer": (sum(v.bytes for v in viewers) / n / wall) if n else None,
                "states_per_s_per_viewer": (len(delays) / n / wall) if n else None,
                "delay_p50_ms": statistics.median(delays) if delays else None,
                "delay_p95_ms": delays[int(0.95 * (len(delays) - 1))] if delays else None,
                "delay_max_ms": delays[-1] if delays else None,
            }
            rows.append(row)
            log(json.dumps(row))
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

    print(f"{a.bots} bots playing; observer `bzhead observe --web`; {a.seconds:.0f} s per row.\n")
    print("| viewers | observer CPU | RSS | bytes/s per viewer | states/s per viewer | delay p50 | p95 | max |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['viewers']} | {r['cpu_pct']:.1f} % | {r['rss_mib']:.1f} MiB | "
              f"{f(r['bytes_per_s_per_viewer'], ',.0f')} | {f(r['states_per_s_per_viewer'], '.1f')} | "
              f"{f(r['delay_p50_ms'], '.1f')} ms | {f(r['delay_p95_ms'], '.1f')} ms | {f(r['delay_max_ms'], '.1f')} ms |")
    base = next((r for r in rows if r["viewers"] == 0), None)
    top = max(rows, key=lambda r: r["viewers"])
    if base and top["viewers"] > 0 and base["cpu_pct"] > 0:
        ratio = top["cpu_pct"] / base["cpu_pct"]
        ok = "holds" if ratio <= 2.0 else "misses"
        print(f"\n{top['viewers']} viewers cost {ratio:.2f}x the CPU of none (target: at most 2x): {ok}.")


if __name__ == "__main__":
    main()
