#!/usr/bin/env python3
"""bzhead's dpmaster-compatible master (`bzhead monitor --dpmaster`) next to the real dpmaster, on the same load, in one
run: registrations and heartbeats handled per second, `getservers` answered per second with SERVERS listed (CPU per
request), and resident memory per listed server.

Usage: bench/master.py [--bzhead target/release/bzhead] [--dpmaster /tmp/dpmaster-src/src/dpmaster]
                       [--before OLD_BZHEAD] [--servers 10000] [--heartbeats 100000] [--lists 300]
                       [--only bzhead|dpmaster]

`--before` adds a row for another bzhead build (an earlier commit's, kept aside), measured in the same run.

dpmaster is built from its public C source (kphillisjr/dpmaster, dpmaster 2.2) with `make release` outside this tree;
it is never committed here. Both masters get the same policies: no flood protection (`--dpmaster-flood-throttle 0`;
dpmaster without `-f`), no per-address cap (`-N 0`; bzhead: the cap set to SERVERS), room for every server (`-n`),
loopback servers allowed, and dpmaster at verbosity 0 (its default prints a line per message). The monitor's own rounds
are pushed a day away so that its queries of the listed servers do not add to the figures.

The load, from this script (one process; the masters are measured, not the load):
* registration: SERVERS servers on 127.x.y.z, one UDP socket each, in bursts of 250: heartbeat (sent again once if no getinfo came), the getinfo's
  challenge read back, infoResponse. Rate = servers listed / wall time; CPU per registration from the master's CPU
  time (/proc/PID/task/*/schedstat) over the phase.
* heartbeats: HEARTBEATS heartbeats of already listed servers (each answered with getinfo), sent in bursts of 250 that the
  replies pace; rate = getinfo received / wall time; CPU per heartbeat.
* getservers: LISTS `getservers Quake3Arena 71 empty full` from one client, 4 in flight, each answered in full
  (SERVERS x 7 bytes in datagrams of at most 1,400 bytes until EOT); rate and CPU per request.
* memory: VmRSS after registration minus VmRSS before it, per listed server.
"""
import argparse, os, resource, select, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from monitor import cpu_of, rss_kib  # noqa: E402 (bench/monitor.py: a process's CPU time and resident size)

OOB = b"\xff\xff\xff\xff"
# Datagrams sent in one burst before their replies are read (a default 208 KiB receive buffer holds about 300).
BATCH = 250


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(kind, a, tmp, binary=None):
    port = free_udp_port()
    if kind == "bzhead":
        cmd = [binary or a.bzhead, "monitor", "--db", os.path.join(tmp, "m.db"), "--dpmaster", "127.0.0.1:%d" % port,
               "--allow-private", "--dpmaster-max-servers", str(a.servers * 2),
               "--dpmaster-max-per-address", str(a.servers * 2), "--dpmaster-flood-throttle", "0",
               "--interval", "86400"]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for _ in range(50):
            line = p.stderr.readline()
            if "dpmaster master on" in line or not line:
                break
        if "dpmaster master on" not in line:
            raise SystemExit("bzhead did not start")
    else:
        cmd = [a.dpmaster, "-l", "127.0.0.1", "-p", str(port), "--allow-loopback", "-n", str(a.servers * 2),
               "-N", "0", "-v", "0", "-H", "16", "-u", "root", "-j", tmp]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    if p.poll() is not None:
        raise SystemExit("%s exited: %s" % (kind, cmd))
    return p, ("127.0.0.1", port)


def recv_all(socks, timeout, want):
    """Reads datagrams from `socks` until `want` came or nothing came for `timeout`; returns {sock: [data]}."""
    got, n = {}, 0
    poller = select.epoll()
    by_fd = {s.fileno(): s for s in socks}
    for fd in by_fd:
        poller.register(fd, select.EPOLLIN)
    while n < want:
        ev = poller.poll(timeout)
        if not ev:
            break
        for fd, _ in ev:
            s = by_fd[fd]
            while True:
                try:
                    d = s.recv(2048)
                except BlockingIOError:
                    break
                got.setdefault(s, []).append(d)
                n += 1
    poller.close()
    return got


def register(master, a):
    """Registers SERVERS servers in batches; returns (listed, sockets kept for the heartbeat phase)."""
    listed, keep = 0, []
    for b in range(0, a.servers, BATCH):
        socks = []
        for i in range(b, min(a.servers, b + BATCH)):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.%d.%d.%d" % (1 + i // 62500, (i // 250) % 250, i % 250 + 1), 0))
            s.setblocking(False)
            socks.append(s)
        for s in socks:
            s.sendto(OOB + b"heartbeat QuakeArena-1\n", master)
        got = recv_all(socks, 0.2, len(socks))
        missing = [s for s in socks if s not in got]
        for s in missing:  # a heartbeat the kernel dropped (a full receive buffer) is sent again
            s.sendto(OOB + b"heartbeat QuakeArena-1\n", master)
        if missing:
            got.update(recv_all(missing, 0.2, len(missing)))
        for s, ds in got.items():
            ch = ds[-1][len(OOB) + len(b"getinfo "):].decode()
            s.sendto(OOB + b"infoResponse\n\\sv_maxclients\\8\\clients\\1\\protocol\\71\\gametype\\0"
                     b"\\hostname\\bench\\challenge\\" + ch.encode(), master)
            listed += 1
        for s in socks:
            if len(keep) < 2000:
                keep.append(s)
            else:
                s.close()
    return listed, keep


def heartbeats(master, socks, total):
    answered, sent = 0, 0
    while sent < total:
        burst = min(BATCH, total - sent)
        socks = socks[burst:] + socks[:burst]
        for s in socks[-burst:]:
            s.sendto(OOB + b"heartbeat QuakeArena-1\n", master)
        sent += burst
        got = recv_all(socks[-burst:], 0.2, burst)
        answered += sum(len(v) for v in got.values())
    return answered


def lists(master, n, expect):
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    c.bind(("127.0.0.1", 0))
    c.settimeout(2.0)
    req = OOB + b"getservers Quake3Arena 71 empty full"
    done, sent, entries, inflight = 0, 0, 0, 0
    while done < n:
        while inflight < 4 and sent < n:
            c.sendto(req, master)
            sent += 1
            inflight += 1
        try:
            d = c.recv(2048)
        except socket.timeout:
            inflight = 0  # lost replies: start again
            continue
        body = d[len(OOB) + len(b"getserversResponse"):]
        eot = body.endswith(b"\\EOT\x00\x00\x00")
        entries += (len(body) - (7 if eot else 0)) // 7
        if eot:
            done += 1
            inflight -= 1
    c.close()
    return done, entries / max(done, 1)


def measure(kind, a, label=None, binary=None):
    tmp = tempfile.mkdtemp(prefix="bench-master-")
    p, master = start(kind, a, tmp, binary)
    try:
        rss0 = rss_kib(p.pid)
        cpu0, t0 = cpu_of(p.pid), time.monotonic()
        listed, socks = register(master, a)
        time.sleep(0.5)
        cpu1, t1 = cpu_of(p.pid), time.monotonic()
        rss1 = rss_kib(p.pid)
        hb = heartbeats(master, socks, a.heartbeats)
        cpu2, t2 = cpu_of(p.pid), time.monotonic()
        done, per = lists(master, a.lists, listed)
        cpu3, t3 = cpu_of(p.pid), time.monotonic()
        return {
            "kind": label or kind, "listed": listed,
            "reg_per_s": listed / (t1 - t0), "reg_cpu_us": (cpu1 - cpu0) / max(listed, 1) * 1e6,
            "hb": hb, "hb_per_s": hb / (t2 - t1), "hb_cpu_us": (cpu2 - cpu1) / max(hb, 1) * 1e6,
            "lists": done, "entries": per, "list_per_s": done / (t3 - t2),
            "list_cpu_us": (cpu3 - cpu2) / max(done, 1) * 1e6,
            "rss0": rss0, "rss1": rss1, "bytes_per_server": (rss1 - rss0) * 1024 / max(listed, 1),
        }
    finally:
        p.terminate()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bzhead", default="target/release/bzhead")
    ap.add_argument("--dpmaster", default="/tmp/dpmaster-src/src/dpmaster")
    ap.add_argument("--servers", type=int, default=10000)
    ap.add_argument("--heartbeats", type=int, default=100000)
    ap.add_argument("--lists", type=int, default=300)
    ap.add_argument("--before", help="another bzhead build, measured as a row 'bzhead (before)'")
    ap.add_argument("--only", choices=["bzhead", "dpmaster"])
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    kinds = [a.only] if a.only else ["dpmaster", "bzhead"]
    rows = []
    for k in kinds:
        if k == "bzhead" and a.before:
            rows.append(measure(k, a, "bzhead (before)", a.before))
        rows.append(measure(k, a))
    print("| master | listed | registrations/s | CPU/registration | heartbeats/s | CPU/heartbeat | getservers/s "
          "(entries each) | CPU/getservers | RSS before → after | bytes/listed server |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %.0f | %.1f µs | %.0f | %.1f µs | %.0f (%.0f) | %.0f µs | %d → %d KiB | %.0f |" % (
            r["kind"], r["listed"], r["reg_per_s"], r["reg_cpu_us"], r["hb_per_s"], r["hb_cpu_us"],
            r["list_per_s"], r["entries"], r["list_cpu_us"], r["rss0"], r["rss1"], r["bytes_per_server"]))


if __name__ == "__main__":
    main()
