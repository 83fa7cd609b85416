#!/usr/bin/env python3
"""Join latency and resident memory of one `bzhead observe` next to one `bzadmin`, on the same local bzfs.

Usage: bench/observer_vs_bzadmin.py [--runs N] [--bzhead target/release/bzhead]

Starts /usr/games/bzfs on a free loopback port (CTF, generated world), then for each run starts one observer
process of each kind, alternating, and measures:
  * spawn -> "joined" line on stdout (process start, connect, hello, and for bzhead the UDP link, flag
    negotiation, settings and a fresh world download: --no-cache);
  * for bzhead also connect -> MsgAccept as the engine stamps it (the JSON "t" of the accept event);
  * VmHWM / VmRSS of the process 1 s after it joined.
Prints a Markdown table of medians (and min/max) and the ratios.
"""
import argparse, json, queue, socket, statistics, subprocess, threading, time

def free_port():
    while True:
        s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
        if p & 0xff >= 4:
            return p

def wait_listen(port, timeout=15):
    end = time.time() + timeout
    while time.time() < end:
        try:
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(0.2)
            u.sendto(b"\x00\x02\x04\x04\x00\x00", ("127.0.0.1", port))
            u.recvfrom(100); u.close(); return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("bzfs did not come up")

def mem_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                out[k] = int(v.split()[0])
    return out

def run_one(cmd, joined_marker):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    accept_t = None
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in p.stdout] + [lines.put(None)], daemon=True).start()
    deadline = time.time() + 20
    spawn_to_join = None
    while time.time() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        if line is None:
            break
        if line.startswith("{") and '"type":"accept"' in line:
            accept_t = json.loads(line)["t"]
        if joined_marker in line:
            spawn_to_join = time.perf_counter() - t0
            break
    if spawn_to_join is None:
        p.kill(); raise SystemExit(f"{cmd[0]} did not join")
    time.sleep(1.0)
    mem = mem_kib(p.pid)
    try:
        p.stdin.write("/quit\n"); p.stdin.flush()
    except BrokenPipeError:
        pass
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill(); p.wait()
    return spawn_to_join, accept_t, mem

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--bzhead", default="target/release/bzhead")
    a = ap.parse_args()
    port = free_port()
    bzfs = subprocess.Popen(["/usr/games/bzfs", "-i", "127.0.0.1", "-p", str(port), "-c", "-j", "+s", "6"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listen(port)
        server = f"127.0.0.1:{port}"
        rows = {"bzhead": [], "bzadmin": []}
        for i in range(a.runs):
            cs = f"bh{i}"
            rows["bzhead"].append(run_one([a.bzhead, "observe", "--json", "--no-cache", "--callsign", cs, server],
                                          f'"callsign":"{cs}","team":"observer"'))
            cs = f"ba{i}"
            rows["bzadmin"].append(run_one(["/usr/games/bzadmin", "-ui", "stdboth", f"{cs}@{server}"],
                                           f"'{cs}' joined the game"))
    finally:
        bzfs.terminate(); bzfs.wait()
    med = lambda xs: statistics.median(xs)
    hj = [r[0] * 1000 for r in rows["bzhead"]]; aj = [r[0] * 1000 for r in rows["bzadmin"]]
    ha = [r[1] * 1000 for r in rows["bzhead"] if r[1] is not None]
    hm = [r[2]["VmHWM"] for r in rows["bzhead"]]; am = [r[2]["VmHWM"] for r in rows["bzadmin"]]
    hr = [r[2]["VmRSS"] for r in rows["bzhead"]]; ar = [r[2]["VmRSS"] for r in rows["bzadmin"]]
    print(f"| figure ({a.runs} runs each, median [min–max]) | bzhead observe | bzadmin | bzhead / bzadmin |")
    print("|---|---|---|---|")
    print(f"| spawn → joined line, ms | {med(hj):.1f} [{min(hj):.1f}–{max(hj):.1f}] | {med(aj):.1f} [{min(aj):.1f}–{max(aj):.1f}] | {med(hj)/med(aj):.2f} |")
    print(f"| connect → MsgAccept (engine clock, world downloaded), ms | {med(ha):.1f} [{min(ha):.1f}–{max(ha):.1f}] | – (skips the world) | |")
    print(f"| peak resident memory (VmHWM), KiB | {med(hm):.0f} | {med(am):.0f} | {med(hm)/med(am):.2f} |")
    print(f"| resident memory 1 s after joining (VmRSS), KiB | {med(hr):.0f} | {med(ar):.0f} | {med(hr)/med(ar):.2f} |")

if __name__ == "__main__":
    main()
