#!/usr/bin/env python3
"""Bots on a local bzfs: CPU per bot, tick times, kills per minute of two hunters, time for a capper to capture.

Usage:
  bench/bots.py cpu [--bots 1,10,100] [--seconds 60] [--bzhead target/release/bzhead]
  bench/bots.py hunters [--seconds 180] [--runs 3]
  bench/bots.py capture [--runs 5]

cpu      For each N: a bzfs on the generated team world (-j, 3 shots, room for N bots), then one
         `bzhead bot hunter --count N` process. Once every bot has joined (its "joined" line), the process's
         CPU time (utime + stime from /proc/PID/stat) is sampled, again SECONDS later: CPU per bot-second =
         delta / (N * SECONDS). bzfs's own CPU over the same window is reported beside it (it relays every
         update to every player, N^2). The tick-time percentiles come from `--stats`.
hunters  Two hunters on the generated FFA world (800 x 800, boxes and pyramids): kills per minute, from the
         bots' summary lines.
capture  One capper (red) against one sitter (green) on the standard CTF map (`bzfs -c`, generated world, bases
         740 units apart): seconds from the capper's first spawn to its capture.
"""
import argparse, os, queue, re, socket, statistics, subprocess, threading, time

CLK_TCK = os.sysconf("SC_CLK_TCK")

def free_port():
    """A port free for both TCP and UDP (bzfs needs both), whose low byte bzfs accepts."""
    while True:
        s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close(); u.close()
        if p & 0xff >= 4:
            return p

def wait_listen(proc, port, timeout=15):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(0.2)
            u.sendto(b"\x00\x02\x04\x04\x00\x00", ("127.0.0.1", port))
            u.recvfrom(100); u.close(); return True
        except OSError:
            time.sleep(0.05)
    return False

def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK

def start_bzfs(args):
    """A bzfs on a fresh port; tries another port when the first is taken meanwhile (a busy machine)."""
    for _ in range(5):
        port = free_port()
        p = subprocess.Popen(["/usr/games/bzfs", "-i", "127.0.0.1", "-p", str(port)] + args,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if wait_listen(p, port):
            return p, f"127.0.0.1:{port}"
        p.kill(); p.wait()
    raise SystemExit(f"bzfs {' '.join(args)} did not come up")

class Lines:
    """Collects a process's stdout lines on a thread."""
    def __init__(self, stream):
        self.q = queue.Queue()
        threading.Thread(target=lambda: [self.q.put(l) for l in stream] + [self.q.put(None)], daemon=True).start()

    def wait_for(self, pred, timeout):
        end = time.time() + timeout
        while time.time() < end:
            try:
                line = self.q.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                return None
            if pred(line):
                return line
        return None

def cpu(a):
    rows = []
    for n in [int(x) for x in a.bots.split(",")]:
        per_team = n // 4 + 2
        bzfs, server = start_bzfs(["-j", "-ms", "3", "-mp", f"0,{per_team},{per_team},{per_team},{per_team},4"])
        try:
            bot = subprocess.Popen([a.bzhead, "bot", "hunter", "--count", str(n), "--stagger-ms", "50", "--quiet",
                                    "--stats", "--for", str(a.seconds + n * 0.05 + 20), server],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out = Lines(bot.stdout)
            joined = 0
            end = time.time() + n * 0.05 + 30
            while joined < n and time.time() < end:
                if out.wait_for(lambda l: ": joined as player" in l, 1.0):
                    joined += 1
            if joined < n:
                raise SystemExit(f"only {joined} of {n} bots joined")
            time.sleep(3)  # the last bots spawn
            c0, s0, t0 = cpu_seconds(bot.pid), cpu_seconds(bzfs.pid), time.time()
            time.sleep(a.seconds)
            c1, s1, t1 = cpu_seconds(bot.pid), cpu_seconds(bzfs.pid), time.time()
            bot.send_signal(2)
            _, err = bot.communicate(timeout=30)
            m = re.search(r"tick time µs: mean (\d+), p50 (\d+), p90 (\d+), p99 (\d+), max (\d+)", err)
            ticks = m.groups() if m else ("?",) * 5
            kills = sum(int(k) for k in re.findall(r": (\d+) kills", err))
            wall = t1 - t0
            rows.append((n, (c1 - c0) / wall, (c1 - c0) / (n * wall) * 1e6, (s1 - s0) / wall, ticks, kills))
        finally:
            bzfs.terminate(); bzfs.wait()
    print(f"| bots | bzhead CPU (cores) | CPU per bot-second (µs) | bzfs CPU (cores) | tick µs mean / p50 / p90 / p99 / max | kills |")
    print("|---|---|---|---|---|---|")
    for n, cores, per, bz, t, kills in rows:
        print(f"| {n} | {cores:.3f} | {per:.0f} | {bz:.3f} | {t[0]} / {t[1]} / {t[2]} / {t[3]} / {t[4]} | {kills} |")

def hunters(a):
    rates = []
    for _ in range(a.runs):
        bzfs, server = start_bzfs(["-j", "-ms", "3"])
        try:
            r = subprocess.run([a.bzhead, "bot", "hunter", "--count", "2", "--quiet", "--for", str(a.seconds), server],
                               capture_output=True, text=True, timeout=a.seconds + 60)
            kills = sum(int(k) for k in re.findall(r": (\d+) kills", r.stderr))
            rates.append(kills / (a.seconds / 60))
        finally:
            bzfs.terminate(); bzfs.wait()
    print(f"two hunters, generated 800 x 800 world, {a.seconds} s x {a.runs} runs: kills per minute "
          f"{', '.join(f'{r:.1f}' for r in rates)} (median {statistics.median(rates):.1f})")

def capture(a):
    times = []
    for _ in range(a.runs):
        bzfs, server = start_bzfs(["-c", "-j", "-ms", "3", "-mp", "0,2,2,0,0,2"])
        try:
            sitter = subprocess.Popen([a.bzhead, "bot", "sitter", "--team", "green", "--quiet", "--for", "400", server],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)
            cap = subprocess.Popen([a.bzhead, "bot", "capper", "--team", "red", "--quiet", "--for", "300", server],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            out = Lines(cap.stdout)
            if not out.wait_for(lambda l: ": spawned" in l, 30):
                raise SystemExit("the capper did not spawn")
            t0 = time.time()
            line = out.wait_for(lambda l: ": captured" in l, 290)
            times.append(time.time() - t0 if line else float("inf"))
            cap.send_signal(2); sitter.send_signal(2)
            cap.wait(timeout=10); sitter.wait(timeout=10)
        finally:
            bzfs.terminate(); bzfs.wait()
    print(f"capper vs sitter on the standard CTF map, {a.runs} runs: seconds from spawn to capture "
          f"{', '.join(f'{t:.1f}' for t in times)} (median {statistics.median(times):.1f})")

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["cpu", "hunters", "capture"])
    ap.add_argument("--bzhead", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release/bzhead"))
    ap.add_argument("--bots", default="1,10,100")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    {"cpu": cpu, "hunters": hunters, "capture": capture}[a.what](a)

if __name__ == "__main__":
    main()
