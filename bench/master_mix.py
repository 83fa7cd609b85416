#!/usr/bin/env python3
"""One `bzhead monitor` holding listed servers of every master protocol at once: dpmaster registrations (UDP),
DDNet HTTP registrations (`POST /ddnet/15/register` through the UDP challenge) and BZFlag list-server `ADD`s
(`POST /db/` through the connect-back check). Resident memory per listed server for each protocol and for the mix,
and the time and CPU to answer each protocol's list with everything listed: `getservers` (dpmaster),
`GET /ddnet/15/servers.json` and `POST /db/ action=LIST`.

Usage: bench/master_mix.py [--bzhead target/release/bzhead] [--dpmaster 80000] [--ddnet 10000] [--bzflag 10000]
                           [--lists 10]

The DDNet and BZFlag masters hold at most 10,000 entries each (`ddnet::MAX_ADDRESSES`, `bzfls::MAX_ENTRIES`), so
100,000 across the protocols is 80,000 dpmaster servers and 10,000 of each of the others.

The load, from this script (one process):
* dpmaster: as bench/master.py (a UDP socket per server on 127.x.y.z, heartbeat, getinfo, infoResponse).
* BZFlag: `ADD`s over 8 keep-alive connections from 127.0.0.1 with `X-Real-IP: 127.150.x.y` (the monitor runs with
  `--master-ip-header X-Real-IP`, as behind a local proxy), 32 servers per address (the list server's cap), their
  `nameport`s on 32 TCP listeners bound to 0.0.0.0 that accept the connect-back checks. A 70-digit `gameinfo`.
* DDNet: registrations over one keep-alive connection the same way (`X-Real-IP: 127.100.x.y`, 64 per address, the
  cap), the challenges received on 64 UDP sockets bound to 0.0.0.0, each register sent again with its token. The
  info is a 0.6 server's without clients (about 330 bytes of JSON). DDNet drops an address not registered again
  within 30 s, so it registers last and the lists are timed right after.
* memory: VmRSS before and after each protocol's phase (the phases one after another), per listed server.
* lists: LISTS requests of each, one at a time: wall time from the request to the last byte, the monitor's CPU time
  per answer (every thread), and the longest event-loop stall while they are answered, from a probe: a one-datagram
  `getservers` every millisecond from another thread, its longest round trip.
"""
import argparse, http.client, os, resource, select, socket, subprocess, sys, tempfile, threading, time, types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from monitor import cpu_of, rss_kib  # noqa: E402
import master  # noqa: E402 (bench/master.py: the dpmaster load)

INFO = (b'{"max_clients":64,"max_players":64,"passworded":false,"game_type":"DDraceNetwork","name":"bench server %d",'
        b'"map":{"name":"Kobra 4","sha256":"%s","size":112233},"version":"0.6.4, 18.9",'
        b'"client_score_kind":"time","requires_login":false,"clients":[]}')
SHA = b"3f2a" * 16
GAMEINFO = "0001007a000300000000000000000000000000000000000000000000000000000000aa"


def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(a, tmp, n_dp):
    hp, up = free_port(), free_port(socket.SOCK_DGRAM)
    cmd = [a.bzhead, "monitor", "--db", os.path.join(tmp, "m.db"), "--http", "127.0.0.1:%d" % hp,
           "--dpmaster", "127.0.0.1:%d" % up, "--allow-private", "--master-ip-header", "X-Real-IP",
           "--dpmaster-max-servers", str(max(2 * n_dp, 1)), "--dpmaster-max-per-address", str(max(2 * n_dp, 1)),
           "--dpmaster-flood-throttle", "0", "--interval", "86400"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = ""
    for _ in range(100):
        line = p.stderr.readline()
        seen += line
        if ("monitor API on" in seen and "dpmaster master on" in seen) or not line:
            break
    if "monitor API on" not in seen:
        raise SystemExit("bzhead did not start:\n" + seen)
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()  # keep its stderr drained
    time.sleep(0.5)
    return p, hp, ("127.0.0.1", up)


def post(conn, path, headers, body):
    conn.request("POST", path, body=body, headers=headers)
    r = conn.getresponse()
    return r.status, r.read()


def bzflag(hp, n):
    """n ADDs; returns how many were listed."""
    listeners = []
    for _ in range(32):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", 0))
        s.listen(1024)
        s.setblocking(False)
        listeners.append(s)
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            r, _, _ = select.select(listeners, [], [], 0.1)
            for s in r:
                try:
                    c, _ = s.accept()
                    c.close()
                except BlockingIOError:
                    pass
    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    ok = [0]
    lock = threading.Lock()

    def worker(part):
        conn = http.client.HTTPConnection("127.0.0.1", hp, timeout=30)
        for i in part:
            k = i // 32
            ip = "127.150.%d.%d" % (k // 250, k % 250 + 1)
            port = listeners[i % 32].getsockname()[1]
            form = "action=ADD&nameport=%s:%d&version=BZFS0221&gameinfo=%s&build=2.4.26-bench&title=bench+server+%d" % (
                ip, port, GAMEINFO, i)
            for _ in range(20):
                status, body = post(conn, "/db/", {"Content-Type": "application/x-www-form-urlencoded",
                                                   "X-Real-IP": ip}, form)
                if body.startswith(b"MSG: ADD"):
                    with lock:
                        ok[0] += 1
                    break
                if b"busy" not in body:
                    print("ADD refused:", body[:200], file=sys.stderr)
                    break
                time.sleep(0.01)
        conn.close()
    threads = [threading.Thread(target=worker, args=(range(j, n, 8),)) for j in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    acceptor.join()
    for s in listeners:
        s.close()
    return ok[0]


def ddnet(hp, n):
    """n registrations through the challenge; returns how many succeeded."""
    socks = []
    for _ in range(64):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind(("0.0.0.0", 0))
        s.setblocking(False)
        socks.append(s)
    conn = http.client.HTTPConnection("127.0.0.1", hp, timeout=30)
    ok = 0
    for b in range(0, n, 64):
        batch = range(b, min(n, b + 64))
        k = b // 64
        ip = "127.100.%d.%d" % (k // 250, k % 250 + 1)
        sent = {}
        for i in batch:
            port = socks[i % 64].getsockname()[1]
            h = {"Address": "tw-0.6+udp://connecting-address.invalid:%d" % port, "Secret": "secret-%d" % i,
                 "Challenge-Secret": "cs-%d" % i, "Info-Serial": "1", "X-Real-IP": ip,
                 "Content-Type": "application/json"}
            status, body = post(conn, "/ddnet/15/register", h, INFO % (i, SHA))
            sent[i] = h
        tokens = {}
        got = master.recv_all([socks[i % 64] for i in batch], 1.0, len(batch))
        for ds in got.values():
            for d in ds:
                rest = d.split(b"chal", 1)[1]
                secret, token = rest.split(b"\0")[:2]
                tokens[int(secret[3:])] = token.decode()
        for i, h in sent.items():
            if i not in tokens:
                continue
            h = dict(h, **{"Challenge-Token": tokens[i]})
            status, body = post(conn, "/ddnet/15/register", h, INFO % (i, SHA))
            ok += b"success" in body
    conn.close()
    for s in socks:
        s.close()
    return ok


PROBE = r"""
import socket, sys, time
dp = (sys.argv[1], int(sys.argv[2]))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
s.settimeout(2.0)
out = []
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    t = time.monotonic()
    s.sendto(b"\xff\xff\xff\xffgetservers NobodyPlaysThis 1", dp)
    try:
        s.recv(2048)
    except socket.timeout:
        pass
    out.append("%.6f %.6f" % (t, time.monotonic() - t))
    time.sleep(0.001)
print("\n".join(out))
"""


class Probe:
    """A tiny UDP request (`getservers` of a game nobody plays: one datagram back) every millisecond from another
    process (not this one's threads: they share its interpreter lock), answered by the monitor's event loop: the
    longest round trip while a list is answered bounds how long that answer kept the loop from everything else."""

    def __init__(self, dp, secs):
        self.p = subprocess.Popen([sys.executable, "-c", PROBE, dp[0], str(dp[1]), str(secs)],
                                  stdout=subprocess.PIPE, text=True)
        self.windows = []

    def window(self, name, t0, t1):
        self.windows.append((name, t0, t1))

    def results(self):
        samples = [tuple(map(float, l.split())) for l in self.p.communicate()[0].split("\n") if l]
        return {name: max([rtt * 1e3 for t, rtt in samples if t0 <= t <= t1] or [0.0])
                for name, t0, t1 in self.windows}


def timed(p, f, n, probe, name):
    """Runs f n times; returns (median wall ms, max wall ms, CPU ms per call, f's last result)."""
    walls, out = [], None
    t0 = time.monotonic()
    cpu0 = cpu_of(p.pid)
    for _ in range(n):
        t = time.monotonic()
        out = f()
        walls.append((time.monotonic() - t) * 1e3)
    cpu = (cpu_of(p.pid) - cpu0) / n * 1e3
    probe.window(name, t0, time.monotonic())
    walls.sort()
    return walls[len(walls) // 2], walls[-1], cpu, out


def get(hp, path):
    conn = http.client.HTTPConnection("127.0.0.1", hp, timeout=30)
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return body


def list_bzflag(hp):
    conn = http.client.HTTPConnection("127.0.0.1", hp, timeout=30)
    status, body = post(conn, "/db/", {"Content-Type": "application/x-www-form-urlencoded"}, "action=LIST")
    conn.close()
    return body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bzhead", default="target/release/bzhead")
    ap.add_argument("--dpmaster", type=int, default=80000)
    ap.add_argument("--ddnet", type=int, default=10000)
    ap.add_argument("--bzflag", type=int, default=10000)
    ap.add_argument("--lists", type=int, default=10)
    ap.add_argument("--perf", metavar="FILE", help="perf record -g the monitor while it answers the lists")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    tmp = tempfile.mkdtemp(prefix="bench-master-mix-")
    p, hp, dp = start(a, tmp, a.dpmaster)
    rows = []
    try:
        rss = [rss_kib(p.pid)]
        t = time.monotonic()
        n_dp, _keep = master.register(dp, types.SimpleNamespace(servers=a.dpmaster)) if a.dpmaster else (0, [])
        del _keep
        time.sleep(0.5)
        rss.append(rss_kib(p.pid))
        rows.append(("dpmaster", n_dp, time.monotonic() - t))
        t = time.monotonic()
        n_bz = bzflag(hp, a.bzflag) if a.bzflag else 0
        time.sleep(0.5)
        rss.append(rss_kib(p.pid))
        rows.append(("BZFlag", n_bz, time.monotonic() - t))
        t = time.monotonic()
        n_dd = ddnet(hp, a.ddnet) if a.ddnet else 0
        time.sleep(0.5)
        rss.append(rss_kib(p.pid))
        rows.append(("DDNet", n_dd, time.monotonic() - t))
        print("| protocol | listed | registration phase | RSS before → after | bytes/listed server |")
        print("|---|---|---|---|---|")
        for i, (name, n, secs) in enumerate(rows):
            print("| %s | %d | %.1f s | %d → %d KiB | %.0f |" % (
                name, n, secs, rss[i], rss[i + 1], (rss[i + 1] - rss[i]) * 1024 / max(n, 1)))
        total = sum(r[1] for r in rows)
        print("| all | %d | %.1f s | %d → %d KiB | %.0f |" % (
            total, sum(r[2] for r in rows), rss[0], rss[-1], (rss[-1] - rss[0]) * 1024 / max(total, 1)))
        print()
        perf = subprocess.Popen(["perf", "record", "-g", "-o", a.perf, "-p", str(p.pid)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) if a.perf else None
        probe = Probe(dp, 2.0 + 3 * a.lists * 0.5)
        time.sleep(0.5)
        t = time.monotonic()
        time.sleep(1.0)
        probe.window("idle", t, time.monotonic())
        rows = []
        med, mx, cpu, body = timed(p, lambda: get(hp, "/ddnet/15/servers.json"), a.lists, probe, "ddnet")
        rows.append(("`GET /ddnet/15/servers.json`", body.count(b'"addresses"'), len(body), med, mx, cpu, "ddnet"))
        med, mx, cpu, body = timed(p, lambda: list_bzflag(hp), a.lists, probe, "bzflag")
        rows.append(("`POST /db/ action=LIST`", body.count(b"\n"), len(body), med, mx, cpu, "bzflag"))
        got = [0]

        def gs():
            done, per = master.lists(dp, 1, 0)
            got[0] = per
            return per
        med, mx, cpu, _ = timed(p, gs, a.lists, probe, "dpmaster")
        rows.append(("`getservers Quake3Arena 71 empty full`", got[0], 24 + got[0] * 7, med, mx, cpu, "dpmaster"))
        stalls = probe.results()
        print("| list | entries | bytes | wall, median (max) | monitor CPU per answer | longest loop stall |")
        print("|---|---|---|---|---|---|")
        print("| (idle: the probe alone, 1 s) | | | | | %.1f ms |" % stalls["idle"])
        for name, n, size, med, mx, cpu, key in rows:
            print("| %s | %d | %d | %.1f ms (%.1f) | %.1f ms | %.1f ms |" % (name, n, size, med, mx, cpu, stalls[key]))
        if perf:
            perf.send_signal(2)
            perf.wait()
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
