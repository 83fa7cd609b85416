#!/usr/bin/env python3
"""CPU of `bzhead replay FILE --web` while a recording plays (docs/benchmarks.md, "Replay in the web view").

Starts `bzhead replay FILE --web 127.0.0.1:0`, opens VIEWERS event streams (read and thrown away, as a browser
reads them), then for each speed plays the recording for SECONDS of wall time (a replay that reaches its end is
played again from the start: `cmd=play` at the end starts over, a seek from the file's first state block) and
prints the process's CPU (user + system, from /proc/PID/stat) as a share of one core, and the game seconds
played per wall second.

  bench/replay_web.py [--bin target/release/bzhead] [--file testdata/recordings/bzfs-2.4.26-ctf-14-bots.rec]
                      [--speeds 0,1,64] [--seconds 20] [--viewers 1]
"""

import argparse
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.request

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def get(addr, path):
    with urllib.request.urlopen(f"http://{addr}{path}", timeout=10) as r:
        return json.loads(r.read())


def viewer(addr, stop):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    s.sendall(f"GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n".encode())
    s.settimeout(0.5)
    while not stop.is_set():
        try:
            if not s.recv(65536):
                break
        except socket.timeout:
            pass
    s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/bzhead")
    ap.add_argument("--file", default="testdata/recordings/bzfs-2.4.26-ctf-14-bots.rec")
    ap.add_argument("--speeds", default="0,1,64", help="0: paused")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--viewers", type=int, default=1)
    a = ap.parse_args()
    p = subprocess.Popen([a.bin, "replay", a.file, "--web", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    m = re.search(r"http://([^/]+)/", line)
    if not m:
        raise SystemExit(f"no web view address: {line!r}")
    addr = m.group(1)
    stop = threading.Event()
    threads = [threading.Thread(target=viewer, args=(addr, stop), daemon=True) for _ in range(a.viewers)]
    for t in threads:
        t.start()
    time.sleep(1)
    try:
        for speed in [float(x) for x in a.speeds.split(",")]:
            if speed == 0:
                get(addr, "/api/replay?cmd=pause&seek=0")
            else:
                get(addr, f"/api/replay?seek=0&speed={speed}&cmd=play")
            c0, w0 = cpu_seconds(p.pid), time.monotonic()
            played, last_t = 0.0, 0.0
            while time.monotonic() - w0 < a.seconds:
                time.sleep(0.05)
                s = get(addr, "/api/replay")
                played += s["t"] - last_t if s["t"] >= last_t else s["t"]
                last_t = s["t"]
                if speed and s["ended"]:
                    get(addr, "/api/replay?cmd=play")
                    last_t = 0.0
            c1, w1 = cpu_seconds(p.pid), time.monotonic()
            print(f"speed {speed:>5}: {100 * (c1 - c0) / (w1 - w0):6.2f} % of a core, "
                  f"{played / (w1 - w0):6.1f} game s per s, {a.viewers} viewer(s)")
    finally:
        stop.set()
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
