#!/usr/bin/env python3
"""CPU per answer of `bzhead scan` at several send rates (does waiting between sends cost CPU?), side by side with qstat
in one run.

Usage: bench/scan_rates.py [--bzhead $CARGO_TARGET_DIR/release/bzhead] [--compare OTHER_BZHEAD] [--fleet 4000]
                           [--rates 250,1000,5000,20000] [--runs 3] [--queries both,status] [--no-qstat]

Needs `cargo build --release -p bzhead` (the quake3 plugin is built in) and, for the anchors, qstat (`quakestat`). A
fleet of FLEET Quake III responders on 127.0.0.1 (bench/query_vs_qstat.py's). Each run goes once through every case,
in turn (so that a change of the shared machine's load falls on all of them alike): for each bzhead build (`--bzhead`,
then `--compare`, "before"), each query (`both`: the default, getinfo + getstatus; `status`: `--param query=status`,
getstatus only, what qstat's `-q3s` sends) and each rate, `bzhead scan --list FLEET --protocol quake3 --json --quiet
--param query=Q --rate R` with every other option at its default (`--concurrency 1000`, `--timeout-ms 1000`,
`--retries 2`); then qstat at its defaults (`quakestat -P -R -json -f`: players and rules, like bzhead's output) and
tuned (`-maxsim 100`, its best on this fleet), which has no rate limit. A case's CPU is the process's user + system
time (wait4), divided by the servers it reported answered; its voluntary context switches per answer say how often it
slept and woke. The tables give medians of RUNS, each bzhead row's ratio to its own fastest rate, and the status-only
rows' ratio to tuned qstat.
"""
import argparse, json, os, resource, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from monitor import spawn_fleet  # noqa: E402

QUERY_NAMES = {"both": "getinfo + getstatus (default)", "status": "getstatus only (`--param query=status`)"}


def run(cmd):
    """(cpu s, voluntary context switches, stdout) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, after.ru_nvcsw - before.ru_nvcsw, out


def bzhead_answered(out):
    return sum(1 for l in out.splitlines() if '"ok":true' in l)


def qstat_answered(out):
    try:
        return sum(1 for s in json.loads(out) if s.get("status") == "online")
    except ValueError:
        return 0


def main():
    ap = argparse.ArgumentParser()
    target_dir = os.environ.get("CARGO_TARGET_DIR") or "target"
    ap.add_argument("--bzhead", default=os.path.join(target_dir, "release", "bzhead"))
    ap.add_argument("--compare", metavar="BZHEAD", help="another bzhead build measured in the same runs, as 'before'")
    ap.add_argument("--fleet", type=int, default=4000)
    ap.add_argument("--rates", default="250,1000,5000,20000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", default="both,status")
    ap.add_argument("--no-qstat", action="store_true")
    a = ap.parse_args()
    rates = [int(r) for r in a.rates.split(",")]
    queries = a.queries.split(",")
    builds = [("now", a.bzhead)] + ([("before", a.compare)] if a.compare else [])
    qstat = None if a.no_qstat else shutil.which("quakestat") or shutil.which("qstat")
    tmp = tempfile.mkdtemp(prefix="bzhead-bench-rates-")
    procs, fleet = spawn_fleet(a.fleet, tmp)
    try:
        lst = os.path.join(tmp, "fleet.list")
        open(lst, "w").write("\n".join(fleet) + "\n")
        qlst = os.path.join(tmp, "fleet.qstat")
        open(qlst, "w").write("".join("q3s %s\n" % s for s in fleet))
        cases = []  # (key, command, answered)
        for build, binary in builds:
            for q in queries:
                for r in rates:
                    cmd = [binary, "scan", "--list", lst, "--protocol", "quake3", "--json", "--quiet", "--param",
                           "query=" + q, "--rate", str(r)]
                    cases.append(((build, q, r), cmd, bzhead_answered))
        if qstat:
            cases.append((("qstat", "defaults", 0), [qstat, "-P", "-R", "-json", "-f", qlst], qstat_answered))
            cases.append((("qstat", "tuned", 0), [qstat, "-maxsim", "100", "-P", "-R", "-json", "-f", qlst],
                          qstat_answered))
        per = {key: [] for key, _, _ in cases}
        for i in range(a.runs):
            for key, cmd, answered in cases:
                cpu, csw, out = run(cmd)
                n = answered(out)
                per[key].append((cpu, csw, n))
                time.sleep(1.2)  # every server's pace (ioq3-like responders do not care; real ones would)
            print("run %d of %d done" % (i + 1, a.runs), file=sys.stderr)

        def med_us(key):
            return statistics.median(c / max(n, 1) for c, _, n in per[key]) * 1e6

        def med_csw(key):
            return statistics.median(w / max(n, 1) for _, w, n in per[key])

        print("Fleet of %d local Quake III responders, %d runs (medians): CPU per answered server, µs (ratio to the "
              "same build's --rate %d), and voluntary context switches per answer\n" % (a.fleet, a.runs, max(rates)))
        print("| bzhead | query | " + " | ".join("`--rate %d`" % r for r in rates) + " |")
        print("|---|---|" + "---|" * len(rates))
        for q in queries:
            for build, _ in builds:
                base = med_us((build, q, max(rates)))
                cells = ["%.1f (%.2fx; %.2f csw)" % (med_us((build, q, r)), med_us((build, q, r)) / base,
                                                     med_csw((build, q, r))) for r in rates]
                print("| %s | %s | %s |" % (build, QUERY_NAMES.get(q, q), " | ".join(cells)))
        print()
        answered = {key: "/".join(str(n) for _, _, n in v) for key, v in per.items()}
        print("answered per run: " + "; ".join("%s %s %s: %s" % (k[0], k[1], k[2] or "", v)
                                               for k, v in answered.items()))
        if qstat:
            print()
            print("| qstat (no rate limit) | query | CPU per answer, µs | csw per answer |")
            print("|---|---|---|---|")
            for kind, flags in (("defaults", "-P -R"), ("tuned", "-maxsim 100 -P -R")):
                print("| %s `%s` | getstatus | %.1f | %.2f |" % (kind, flags, med_us(("qstat", kind, 0)),
                                                               med_csw(("qstat", kind, 0))))
            tuned = med_us(("qstat", "tuned", 0))
            if "status" in queries:
                print()
                for build, _ in builds:
                    print("%s, getstatus only, per answer / tuned qstat's: %s" % (build, ", ".join(
                        "%.2f at --rate %d" % (med_us((build, "status", r)) / tuned, r) for r in rates)))
    finally:
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
