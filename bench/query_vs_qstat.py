#!/usr/bin/env python3
"""Client CPU per answered Quake III query (bzhead scan, qstat, node gamedig) and the wall time of a 10,000-address
scan where most addresses do not answer, side by side in one run against the same local servers.

Usage: bench/query_vs_qstat.py [--bzhead $CARGO_TARGET_DIR/release/bzhead] [--compare OTHER_BZHEAD] [--fleet 500]
                               [--runs 3] [--silent 9500] [--gamedig /tmp/gamedig] [--skip-qstat-10k] [--skip-10k]

Needs `cargo build --release --workspace` (bzhead and its plugins in the same directory: `target/release`, or
`$CARGO_TARGET_DIR/release` when that is set, which is where `--bzhead` points by default), qstat (`quakestat`), and
for gamedig a directory with `npm install gamedig@5.3.3` in it (optional).

Real servers throttle repeated queries (ioquake3 answers one address about once a second after a burst of ten), so
throughput needs many servers: a fleet of FLEET simple Quake III responders on 127.0.0.1 (one Python process, one
UDP socket each; getinfo and getstatus with the challenge echoed, 4 players). Every client queries every fleet
server once per run, the clients taking turns round by round (so that the machine's load drifting during the
benchmark falls on all of them alike); its CPU time (user + system, from wait4) is divided by the servers it reported
answered. A run of the same client with an empty list, in the same round, is its start-up cost, subtracted for the
"marginal" column. `--compare` adds another bzhead build to the rounds (rows "bzhead before").

The 10,000-address list is the fleet plus SILENT addresses bound by a second process that never reads them (no
ICMP, no answer: the way most addresses of a real master list behave).
"""
import argparse, json, os, resource, selectors, signal, socket, statistics, subprocess, sys, tempfile, time

OOB = b"\xff\xff\xff\xff"


def fleet_main(n, portfile):
    sel = selectors.DefaultSelector()
    socks = []
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, i)
        socks.append(s)
    with open(portfile, "w") as f:
        f.write("\n".join("127.0.0.1:%d" % s.getsockname()[1] for s in socks))
    players = b"".join(b'%d %d "player%d"\n' % (i, 20 + i, i) for i in range(4))
    while True:
        for key, _ in sel.select():
            s, i = key.fileobj, key.data
            while True:
                try:
                    d, a = s.recvfrom(2048)
                except BlockingIOError:
                    break
                if not d.startswith(OOB):
                    continue
                words = d[4:].rstrip(b"\n\0").split(b" ", 1)
                ch = words[1] if len(words) > 1 else b""
                if words[0] == b"getinfo":
                    r = (OOB + b"infoResponse\n\\sv_maxclients\\16\\clients\\4\\mapname\\q3dm%d\\hostname\\fleet %d"
                         b"\\protocol\\68\\gamename\\Quake3Arena\\g_humanplayers\\4\\challenge\\" % (i % 20, i) + ch)
                elif words[0] == b"getstatus":
                    r = (OOB + b"statusResponse\n\\challenge\\" + ch + b"\\sv_hostname\\fleet %d\\mapname\\q3dm%d"
                         b"\\sv_maxclients\\16\\g_gametype\\0\\version\\fleet 1.0\n" % (i, i % 20) + players)
                else:
                    continue
                try:
                    s.sendto(r, a)
                except OSError:
                    pass


def silent_main(n, portfile):
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    with open(portfile, "w") as f:
        f.write("\n".join("127.0.0.1:%d" % s.getsockname()[1] for s in socks))
    signal.pause()


def spawn_helper(kind, n, tmp):
    portfile = os.path.join(tmp, kind + ".txt")
    p = subprocess.Popen([sys.executable, __file__, "--_" + kind, str(n), portfile])
    for _ in range(600):
        if os.path.exists(portfile) and os.path.getsize(portfile) > 0:
            time.sleep(0.2)
            return p, open(portfile).read().split()
        time.sleep(0.05)
    raise SystemExit(kind + " helper did not start")


def timed(cmd, stdout=subprocess.PIPE):
    """(wall s, stdout, stderr) of one run."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    # communicate() already reaped it; use the children rusage delta instead.
    return wall, out.decode(errors="replace") if out else "", err.decode(errors="replace")


def run_cpu(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, out, err = timed(cmd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out, err


def bzhead_answered(out):
    n = 0
    for line in out.splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        n += v.get("ok") is True
    return n


def qstat_answered(out):
    try:
        return sum(1 for s in json.loads(out) if s.get("status") == "online")
    except ValueError:
        return 0


GAMEDIG_JS = r"""
import { GameDig } from 'gamedig';
import { readFileSync } from 'fs';
const list = readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean);
const max = 100;
let next = 0, ok = 0;
async function worker() {
  while (next < list.length) {
    const [host, port] = list[next++].split(':');
    try { await GameDig.query({ type: 'q3a', host, port: +port, maxRetries: 1, socketTimeout: 1000 }); ok++; }
    catch (e) {}
  }
}
await Promise.all(Array.from({ length: max }, worker));
console.log(JSON.stringify({ answered: ok }));
"""


def main():
    ap = argparse.ArgumentParser()
    target_dir = os.environ.get("CARGO_TARGET_DIR") or "target"
    ap.add_argument("--bzhead", default=os.path.join(target_dir, "release", "bzhead"),
                    help="the bzhead binary; its plugins are loaded from beside it")
    ap.add_argument("--compare", metavar="BZHEAD",
                    help="another bzhead build (plugins beside it) measured in the same rounds, as 'bzhead before'")
    ap.add_argument("--fleet", type=int, default=500)
    ap.add_argument("--silent", type=int, default=9500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--gamedig", default="/tmp/gamedig")
    ap.add_argument("--skip-qstat-10k", action="store_true")
    ap.add_argument("--skip-10k", action="store_true", help="only the per-query CPU table")
    ap.add_argument("--_fleet", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--_silent", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._fleet:
        return fleet_main(int(a._fleet[0]), a._fleet[1])
    if a._silent:
        return silent_main(int(a._silent[0]), a._silent[1])

    tmp = tempfile.mkdtemp(prefix="bzhead-bench-")
    helpers = []
    try:
        fp, fleet = spawn_helper("fleet", a.fleet, tmp)
        helpers.append(fp)
        fleet_list = os.path.join(tmp, "fleet.list")
        open(fleet_list, "w").write("\n".join(fleet) + "\n")
        empty_list = os.path.join(tmp, "empty.list")
        open(empty_list, "w").write("")
        qstat_fleet = os.path.join(tmp, "fleet.qstat")
        open(qstat_fleet, "w").write("".join("q3s %s\n" % s for s in fleet))

        def scan(binary):
            return [binary, "scan", "--protocol", "quake3", "--json", "--quiet", "--rate", "20000", "--concurrency",
                    "1000", "--timeout-ms", "1000", "--retries", "1"]
        bz = scan(a.bzhead)
        clients = {
            "bzhead (getinfo + getstatus)": (lambda l: bz + ["--list", l], bzhead_answered),
            "bzhead (getstatus only)": (lambda l: bz + ["--param", "query=status", "--list", l], bzhead_answered),
        }
        if a.compare:
            before = scan(a.compare)
            clients["bzhead before (getinfo + getstatus)"] = (lambda l: before + ["--list", l], bzhead_answered)
            clients["bzhead before (getstatus only)"] = (
                lambda l: before + ["--param", "query=status", "--list", l], bzhead_answered)
        clients |= {
            "qstat -maxsim 100 -P -R": (
                lambda l: ["quakestat", "-maxsim", "100", "-P", "-R", "-json", "-f", l if l != empty_list else empty_list],
                qstat_answered),
        }
        have_gamedig = os.path.isdir(os.path.join(a.gamedig, "node_modules", "gamedig"))
        if have_gamedig:
            js = os.path.join(a.gamedig, "bench.mjs")
            open(js, "w").write(GAMEDIG_JS)
            clients["node gamedig 5.3.3 (100 at once)"] = (
                lambda l: ["node", js, l], lambda out: json.loads(out.strip().splitlines()[-1])["answered"])
        # Round by round: every client runs once per round (its empty-list run, then the fleet), so that a change in
        # the machine's load during the benchmark (others compiling on the other core) falls on every client alike.
        failed = False
        base = {name: [] for name in clients}
        runs = {name: [] for name in clients}  # (wall s, cpu s, answered)
        for _ in range(a.runs):
            for name, (cmd, answered) in clients.items():
                if runs[name] is None:
                    continue
                lst = qstat_fleet if name.startswith("qstat") else fleet_list
                base[name].append(run_cpu(cmd(empty_list))[1])
                wall, cpu, out, err = run_cpu(cmd(lst))
                n = answered(out)
                if n == 0:
                    print(f"{name}: nothing answered\n{err[-2000:]}", file=sys.stderr)
                    runs[name] = None
                    if name.startswith("bzhead"):
                        failed = True
                    continue
                runs[name].append((wall, cpu, n))
                time.sleep(1.2)
        if failed:
            sys.exit("bench/query_vs_qstat.py: bzhead answered nothing (see above)")
        rows = []
        for name, rs in runs.items():
            if not rs:
                continue
            b = statistics.median(base[name])
            rows.append((name, statistics.median(n for _, _, n in rs), statistics.median(w for w, _, _ in rs) * 1000,
                         b * 1000, statistics.median(c / n * 1e6 for _, c, n in rs),
                         statistics.median((c - b) / n * 1e6 for _, c, n in rs)))
        print(f"\nFleet of {a.fleet} local Quake III responders, {a.runs} runs each (median):\n")
        print("| client | answered | wall ms | start-up CPU ms | CPU µs / answered query | marginal CPU µs / query |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print("| %s | %d | %.0f | %.1f | %.1f | %.1f |" % r)
        q = [r for r in rows if r[0].startswith("qstat")]
        if q:
            print()
            for r in rows:
                if r[0].startswith("bzhead"):
                    print("%s / qstat, marginal: %.2f" % (r[0], r[5] / q[0][5]))

        if a.skip_10k:
            return
        # The 10,000-address scan.
        sp, silent = spawn_helper("silent", a.silent, tmp)
        helpers.append(sp)
        big = fleet + silent
        big_list = os.path.join(tmp, "big.list")
        open(big_list, "w").write("\n".join(big) + "\n")
        print(f"\n{len(big)}-address list ({len(fleet)} answer, {len(silent)} silent):\n")
        print("| client | settings | answered | wall s | client CPU s |")
        print("|---|---|---|---|---|")
        for rate in (2000, 5000):
            cmd = [a.bzhead, "scan", "--protocol", "quake3", "--json", "--quiet", "--rate", str(rate), "--concurrency",
                   "10000", "--timeout-ms", "1000", "--retries", "1", "--list", big_list]
            wall, cpu, out, err = run_cpu(cmd)
            print("| bzhead | --rate %d --concurrency 10000 --timeout-ms 1000 --retries 1 | %d | %.1f | %.2f |"
                  % (rate, bzhead_answered(out), wall, cpu))
            sys.stdout.flush()
            time.sleep(1.2)
        if not a.skip_qstat_10k:
            ql = os.path.join(tmp, "big.qstat")
            open(ql, "w").write("".join("q3s %s\n" % s for s in big))
            wall, cpu, out, err = run_cpu(["quakestat", "-maxsim", "100", "-json", "-f", ql])
            print("| qstat | -maxsim 100 (defaults: -retry 3, -interval 0.5 s) | %d | %.1f | %.2f |"
                  % (qstat_answered(out), wall, cpu))
    finally:
        for p in helpers:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
