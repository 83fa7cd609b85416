#!/usr/bin/env python3
"""What `bzhead monitor` costs next to a plain `bzhead scan` of the same fleet, and what 100,000 servers at a five-minute
interval would need.

Usage: bench/monitor.py [--bzhead $CARGO_TARGET_DIR/release/bzhead] [--fleet 20000] [--rounds 4] [--interval 10]
                        [--scans 3] [--intervals 4,16,32 [--compare OTHER_BZHEAD]]

Needs `cargo build --release -p bzhead -p cdylib-quake3` (bzhead and the quake3 plugin file, libbzhead_quake3.so, in the
same directory: `bzhead monitor` loads plugin files only, not the built-in protocols).

The fleet: FLEET simple Quake III responders on 127.0.0.1 (bench/query_vs_qstat.py's, in processes of at most
10,000 sockets each; getinfo and getstatus with the challenge echoed, 4 players each). The monitor watches them
from a list file for ROUNDS rounds, one every INTERVAL seconds (`--rate 20000`: the round then spreads its requests
at 4 x FLEET / INTERVAL datagrams a second, about two per query, the monitor's own pacing), writing its SQLite history; its CPU (user + system of
the whole process, writer thread included: every thread's on-CPU time from /proc/PID/task/*/schedstat) is read when each round's line appears, so the
first round (which inserts every server) and the later ones are told apart. A plain `bzhead scan` of the same list at
the same send rate is run SCANS times (CPU from wait4) for the comparison. Then: resident memory after the last
round (VmRSS) per tracked server, and the database's growth per round per server, turned into bytes per server per
day at a 60 s and at a 300 s interval.

With `--intervals 4,16,64` (and `--compare OTHER_BZHEAD`) it measures instead what a steady round costs per server at
each interval, so at each round send rate, next to a plain scan at that rate, the builds taking turns interval by
interval: does the monitor's cost per answer grow when its rounds wait between sends?
"""
import argparse, json, os, resource, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")


def cpu_of(pid):
    """The process's CPU time so far, s: every thread's on-CPU time (schedstat, nanoseconds), or its user + system
    time in clock ticks where schedstat is missing."""
    try:
        total = 0
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def spawn_fleet(n, tmp):
    """Responders in processes of at most 10,000 sockets; returns (processes, addresses)."""
    procs, addrs = [], []
    left, k = n, 0
    while left > 0:
        m = min(left, 10000)
        portfile = os.path.join(tmp, "fleet%d.txt" % k)
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "query_vs_qstat.py"), "--_fleet", str(m), portfile])
        for _ in range(1200):
            if os.path.exists(portfile) and os.path.getsize(portfile) > 0:
                time.sleep(0.3)
                break
            time.sleep(0.05)
        else:
            raise SystemExit("fleet helper did not start")
        procs.append(p)
        addrs += open(portfile).read().split()
        left -= m
        k += 1
    return procs, addrs


def db_bytes(path):
    """The database file's size after a checkpoint into it (the WAL keeps page images, not the data's size)."""
    import sqlite3
    try:
        c = sqlite3.connect(path, timeout=5)
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        c.close()
    except sqlite3.Error:
        pass
    return os.path.getsize(path)


def monitor_rounds(bzhead, lst, interval, rounds, db, common):
    """Runs a monitor for ROUNDS rounds; returns (round lines, CPU at each round line, RSS KiB at the end, DB sizes)."""
    cmd = [bzhead, "monitor", "--db", db, "--list", "quake3=" + lst, "--interval", str(interval),
           "--rounds", str(rounds), "--print-rounds", "--rate", "20000"] + common
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines, cpus, sizes = [], [], []
    rss = 0
    for line in p.stdout:
        try:
            v = json.loads(line)
        except ValueError:
            continue
        cpus.append(cpu_of(p.pid))
        rss = rss_kib(p.pid)
        time.sleep(1.0)  # the round's batch is written by then
        sizes.append(db_bytes(db))
        lines.append(v)
    p.wait()
    return lines, cpus, rss, sizes


def scan_cpu(bzhead, lst, rate, common):
    """CPU (wait4) and answers of one plain scan of the list at `rate`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([bzhead, "scan", "--list", lst, "--protocol", "quake3", "--json", "--quiet",
                          "--rate", str(rate)] + common, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            sum(1 for l in out.splitlines() if '"ok":true' in l))


def round_rate(servers, interval):
    """The monitor's own round send rate (src/cli/monitor.rs): about four datagrams a server over the interval."""
    return max(50, min(20000, int(4 * servers / interval + 0.999)))


def by_interval(a, fleet, lst, tmp):
    common = ["--timeout-ms", "1000", "--retries", "1"]
    intervals = [float(x) for x in a.intervals.split(",")]
    builds = [("now", a.bzhead)] + ([("before", a.compare)] if a.compare else [])
    rows = []
    for interval in intervals:
        rate = round_rate(len(fleet), interval)
        for name, binary in builds:
            db = os.path.join(tmp, "m-%s-%g.db" % (name, interval))
            lines, cpus, _, _ = monitor_rounds(binary, lst, interval, a.rounds, db, common)
            per_round = [cpus[0]] + [b - a_ for a_, b in zip(cpus, cpus[1:])]
            steady = per_round[2:] or per_round[1:] or per_round
            scans = sorted(scan_cpu(binary, lst, rate, common) for _ in range(a.scans))
            sc, sn = scans[len(scans) // 2]
            rows.append((interval, rate, name, [r["answered"] for r in lines], steady, sc, sn))
            print("interval %g s, %s: done" % (interval, name), file=sys.stderr)
    print("Fleet of %d Quake III responders; monitor rounds of %d, steady rounds from the third on\n"
          % (len(fleet), a.rounds))
    print("| interval | round send rate | build | answered per round | monitor CPU per server per steady round "
          "(rounds) | plain scan CPU per answer, same rate (median of %d) | monitor / scan |" % a.scans)
    print("|---|---|---|---|---|---|---|")
    for interval, rate, name, answered, steady, sc, sn in rows:
        per = sum(steady) / len(steady) / len(fleet) * 1e6
        print("| %g s | %d/s | %s | %s | %.1f µs (%s s) | %.1f µs | %.2fx |"
              % (interval, rate, name, ", ".join(map(str, answered)), per, ", ".join("%.2f" % c for c in steady),
                 sc / max(sn, 1) * 1e6, per / (sc / max(sn, 1) * 1e6)))


def main():
    ap = argparse.ArgumentParser()
    target_dir = os.environ.get("CARGO_TARGET_DIR") or "target"
    ap.add_argument("--bzhead", default=os.path.join(target_dir, "release", "bzhead"))
    ap.add_argument("--fleet", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--interval", type=float, default=10.0)
    ap.add_argument("--scans", type=int, default=3)
    ap.add_argument("--intervals", help="comma-separated intervals: CPU per server per round at each")
    ap.add_argument("--compare", metavar="BZHEAD", help="with --intervals: another build, as 'before'")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bzhead-bench-monitor-")
    procs, fleet = spawn_fleet(a.fleet, tmp)
    try:
        lst = os.path.join(tmp, "fleet.list")
        open(lst, "w").write("\n".join(fleet) + "\n")
        if a.intervals:
            return by_interval(a, fleet, lst, tmp)
        rate = max(50, min(20000, int(4 * len(fleet) / a.interval + 0.999)))
        common = ["--timeout-ms", "1000", "--retries", "1"]

        # The monitor.
        db = os.path.join(tmp, "monitor.db")
        rounds, cpus, rss, sizes = monitor_rounds(a.bzhead, lst, a.interval, a.rounds, db, common)
        per_round = [cpus[0]] + [b - a_ for a_, b in zip(cpus, cpus[1:])]
        # A round's batch is written after its line: round 2's figure carries round 1's first writes (every server
        # and stint new, an event for each); the steady state is from round 3 on.
        later = per_round[2:] or per_round[1:] or per_round
        later_avg = sum(later) / len(later)
        answered = [r["answered"] for r in rounds]
        # The same for the file: from the size after round 2 on (round 1's servers, stints and events are written
        # once).
        steady = sizes[1:] if len(sizes) >= 3 else sizes
        growth = [b - a_ for a_, b in zip(steady, steady[1:])] or sizes
        grow_avg = sum(growth) / len(growth)
        servers = len(fleet)

        # Plain scans of the same list at the same send rate.
        scan_cpu, scan_answered = [], []
        for _ in range(a.scans):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            out = subprocess.run([a.bzhead, "scan", "--list", lst, "--protocol", "quake3", "--json", "--quiet",
                                  "--rate", str(rate)] + common, capture_output=True, text=True).stdout
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            scan_cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
            scan_answered.append(sum(1 for l in out.splitlines() if '"ok":true' in l))
        scan_cpu.sort()
        scan_med = scan_cpu[len(scan_cpu) // 2]

        per_server_us = later_avg / servers * 1e6
        rss_per_server = rss * 1024 / servers
        bpsd_60 = grow_avg / servers * 1440
        bpsd_300 = grow_avg / servers * 288
        # 100,000 servers at 300 s: rounds of 100k servers, 288 a day.
        big = 100000
        cores = later_avg / servers * big / 300.0
        mem_mib = rss_per_server * big / 2**20
        disk_gib_7d = bpsd_300 * big * 7 / 2**30

        print("| figure | value |")
        print("|---|---|")
        print("| fleet (Quake III responders on loopback) | %d |" % servers)
        print("| rounds, interval, round send rate | %d, %.0f s, %d/s |" % (len(rounds), a.interval, rate))
        print("| answered per round | %s |" % ", ".join(map(str, answered)))
        print("| round duration (s) | %s |" % ", ".join("%.1f" % r["seconds"] for r in rounds))
        print("| monitor CPU, rounds 1 and 2 (every server, stint and event new) | %s s |"
              % ", ".join("%.2f" % c for c in per_round[:2]))
        print("| monitor CPU per steady round (mean of rounds 3+) | %.2f s (%s) |"
              % (later_avg, ", ".join("%.2f" % c for c in later)))
        print("| plain scan CPU, same list and rate (median of %d) | %.2f s (answered %s) |"
              % (a.scans, scan_med, ", ".join(map(str, scan_answered))))
        print("| monitor / scan, per steady round | %.2fx |" % (later_avg / scan_med if scan_med else float("nan")))
        print("| monitor CPU per server per round | %.1f µs |" % per_server_us)
        print("| resident memory after the last round | %.1f MiB (%.0f bytes per tracked server) |"
              % (rss / 1024, rss_per_server))
        print("| database file after each round | %s MiB |" % ", ".join("%.1f" % (x / 2**20) for x in sizes))
        print("| database growth per steady round | %.2f MiB (%.0f bytes per server) |" % (grow_avg / 2**20, grow_avg / servers))
        print("| database bytes per server per day | %.0f KiB at 60 s, %.0f KiB at 300 s |" % (bpsd_60 / 1024, bpsd_300 / 1024))
        print("| 100,000 servers every 300 s would need | %.2f cores, %.0f MiB resident, %.1f GiB for 7 days of samples |"
              % (cores, mem_mib, disk_gib_7d))
    finally:
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
