#!/usr/bin/env python3
"""CPU per answer of `bzhead scan` at several send rates (does waiting between sends cost CPU?).

Usage: bench/scan_rates.py [--bzhead $CARGO_TARGET_DIR/release/bzhead] [--fleet 4000] [--rates 1000,5000,20000]
                           [--runs 3] [--query status]

Needs `cargo build --release -p bzhead -p query-quake3`. A fleet of FLEET Quake III responders on 127.0.0.1
(bench/query_vs_qstat.py's). For each rate, `bzhead scan --list FLEET --protocol quake3 --param query=QUERY --rate R
--concurrency 1000` runs RUNS times, rates taking turns; its CPU (user + system, wait4) is divided by the answers. The
table gives the median per rate and its ratio to the fastest rate's.
"""
import argparse, os, resource, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from monitor import spawn_fleet  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    target_dir = os.environ.get("CARGO_TARGET_DIR") or "target"
    ap.add_argument("--bzhead", default=os.path.join(target_dir, "release", "bzhead"))
    ap.add_argument("--fleet", type=int, default=4000)
    ap.add_argument("--rates", default="1000,5000,20000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--query", default="status")
    a = ap.parse_args()
    rates = [int(r) for r in a.rates.split(",")]
    tmp = tempfile.mkdtemp(prefix="bzhead-bench-rates-")
    procs, fleet = spawn_fleet(a.fleet, tmp)
    try:
        lst = os.path.join(tmp, "fleet.list")
        open(lst, "w").write("\n".join(fleet) + "\n")
        per = {r: [] for r in rates}
        for _ in range(a.runs):
            for r in rates:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                out = subprocess.run([a.bzhead, "scan", "--list", lst, "--protocol", "quake3", "--json", "--quiet",
                                      "--param", "query=" + a.query, "--rate", str(r), "--concurrency", "1000"],
                                     capture_output=True, text=True).stdout
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                n = sum(1 for l in out.splitlines() if '"ok":true' in l)
                per[r].append((cpu, n))
        fastest = max(rates)
        base = statistics.median(c / max(n, 1) for c, n in per[fastest])
        print("| --rate | answered | CPU for the fleet (median) | µs per answer | vs --rate %d |" % fastest)
        print("|---|---|---|---|---|")
        for r in rates:
            cpu = statistics.median(c for c, _ in per[r])
            pa = statistics.median(c / max(n, 1) for c, n in per[r])
            print("| %d | %s | %.3f s | %.1f | %.2fx |" % (r, "/".join(str(n) for _, n in per[r]), cpu, pa * 1e6,
                                                          pa / base))
    finally:
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
