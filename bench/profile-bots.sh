#!/usr/bin/env bash
# Where the time of `bzhead bot` goes: a local bzfs, `bzhead bot hunter --count N` (release build with full debug
# info), and `perf record` on the bot process for a window once every bot has joined; then a summary by area and by
# function in docs/bench/bots-profile.md and, when inferno is installed, a flame graph docs/bench/bots-flame.svg.
# Without a usable perf it falls back to `valgrind --tool=callgrind` (fewer bots, shorter window: callgrind runs
# the program some 50 times slower).
#
#   bench/profile-bots.sh                 # 100 hunters, 30 s window
#   bench/profile-bots.sh --bots 40 --seconds 20 --out /tmp/prof   # elsewhere (the summary's name stays)
#   bench/profile-bots.sh --from-work /tmp/profile-bots.XXXXXX     # only redo the summary of an earlier run
#
# Environment: PROFILE_TARGET_DIR (default target/profile-bots: a target directory of its own, since the debug
# setting differs from the usual release build), PERF_FREQ (default 499 Hz), INFERNO (directory holding
# inferno-flamegraph; `cargo install inferno` puts it in ~/.cargo/bin, which is also searched).
set -euo pipefail
cd "$(dirname "$0")/.."

bots=100
seconds=30
out=docs/bench
tool=auto
from_work=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --bots) bots="$2"; shift 2 ;;
        --seconds) seconds="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --callgrind) tool=callgrind; shift ;;
        --from-work) from_work="$2"; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

target_dir=${PROFILE_TARGET_DIR:-target/profile-bots}
freq=${PERF_FREQ:-499}
if [[ -n "$from_work" ]]; then
    work=$from_work
    # shellcheck disable=SC1091
    source "$work/run.env"
else
work=$(mktemp -d /tmp/profile-bots.XXXXXX)
echo "work directory: $work" >&2

# ---- the binary: release, full debug info (symbols and line tables for the profile) ---------------------------
echo "building bzhead (release, debug=true) in $target_dir" >&2
CARGO_TARGET_DIR="$target_dir" CARGO_PROFILE_RELEASE_DEBUG=true cargo build --release --bin bzhead >&2
bzhead="$target_dir/release/bzhead"

if [[ $tool == auto ]]; then
    if command -v perf >/dev/null && perf record -o "$work/probe.data" -q -- true >/dev/null 2>&1; then
        tool=perf
    elif command -v valgrind >/dev/null; then
        tool=callgrind
    else
        echo "neither a usable perf nor valgrind: apt-get install linux-perf valgrind" >&2
        exit 1
    fi
fi
if [[ $tool == callgrind && $bots -eq 100 && $seconds -eq 30 ]]; then
    bots=20
    seconds=20
fi
echo "profiler: $tool; $bots hunters; ${seconds} s window" >&2

# ---- bzfs on a free port (as bench/bots.py starts it) -----------------------------------------------------------
free_port() {
    python3 - <<'PY'
import socket
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
        print(p); break
PY
}
per_team=$((bots / 4 + 2))
port=$(free_port)
/usr/games/bzfs -i 127.0.0.1 -p "$port" -j -ms 3 -mp "0,$per_team,$per_team,$per_team,$per_team,4" \
    >"$work/bzfs.log" 2>&1 &
bzfs_pid=$!
bot_pid=""
cleanup() {
    [[ -n "$bot_pid" ]] && kill -INT "$bot_pid" 2>/dev/null || true
    sleep 1
    [[ -n "$bot_pid" ]] && kill "$bot_pid" 2>/dev/null || true
    kill "$bzfs_pid" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT
sleep 1
kill -0 "$bzfs_pid" || { cat "$work/bzfs.log" >&2; exit 1; }

# ---- the bots, then the profile window once all have joined -----------------------------------------------------
run_for=$((seconds + bots / 10 + 40))
join_wait=$((bots / 5 + 30))
if [[ $tool == perf ]]; then
    "$bzhead" bot hunter --count "$bots" --stagger-ms 50 --quiet --stats --for "$run_for" "127.0.0.1:$port" \
        >"$work/bots.out" 2>"$work/bots.err" &
    bot_pid=$!
else
    valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" --instr-atstart=no \
        "$bzhead" bot hunter --count "$bots" --stagger-ms 50 --quiet --stats --for "$((run_for * 3))" \
        "127.0.0.1:$port" >"$work/bots.out" 2>"$work/bots.err" &
    bot_pid=$!
    join_wait=$((join_wait * 6))
fi
end=$((SECONDS + join_wait))
while (( SECONDS < end )); do
    joined=$(grep -c ": joined as player" "$work/bots.out" || true)
    (( joined >= bots )) && break
    sleep 1
done
joined=$(grep -c ": joined as player" "$work/bots.out" || true)
echo "$joined of $bots bots joined" >&2
(( joined >= bots )) || { tail "$work/bots.err" >&2; exit 1; }
sleep 3 # the last ones spawn

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
c0=$(cpu_ticks "$bot_pid"); s0=$(cpu_ticks "$bzfs_pid"); t0=$(date +%s.%N)
if [[ $tool == perf ]]; then
    perf record -F "$freq" --call-graph dwarf,32768 -p "$bot_pid" -o "$work/perf.data" -- sleep "$seconds" \
        2>"$work/perf-record.log" >&2
else
    callgrind_control -i on "$bot_pid" >/dev/null
    sleep "$seconds"
    callgrind_control -i off "$bot_pid" >/dev/null
fi
c1=$(cpu_ticks "$bot_pid"); s1=$(cpu_ticks "$bzfs_pid"); t1=$(date +%s.%N)
kill -INT "$bot_pid"
wait "$bot_pid" || true
bot_pid=""
kill "$bzfs_pid" 2>/dev/null || true

hz=$(getconf CLK_TCK)
bot_cpu=$(python3 -c "print(f'{($c1 - $c0) / $hz / ($t1 - $t0):.3f}')")
bzfs_cpu=$(python3 -c "print(f'{($s1 - $s0) / $hz / ($t1 - $t0):.3f}')")
ticks=$(grep -o "tick time µs: .*" "$work/bots.err" | head -1 || true)
echo "bzhead CPU: $bot_cpu cores, bzfs: $bzfs_cpu cores; $ticks" >&2

printf 'tool=%q\nbots=%q\nseconds=%q\nbot_cpu=%q\nbzfs_cpu=%q\nticks=%q\nfreq=%q\n' \
    "$tool" "$bots" "$seconds" "$bot_cpu" "$bzfs_cpu" "$ticks" "$freq" >"$work/run.env"
fi

# ---- stacks: one line per sample, frames leaf first -------------------------------------------------------------
if [[ $tool == perf ]]; then
    echo "perf script (unwinding the samples)" >&2
    perf script -i "$work/perf.data" --no-inline -F comm,tid,ip,sym,dso 2>/dev/null >"$work/perf.script"
    python3 - "$work/perf.script" >"$work/stacks.folded" <<'PY'
import re, sys
# perf script: a header line per sample, then "\t<addr> <symbol> (<dso>)" per frame, leaf first; blank line.
def clean(sym, dso):
    lib = dso.rsplit("/", 1)[-1]
    if sym in ("[unknown]", ""):
        return "[kernel]" if "kernel" in dso else f"[unknown in {lib}]"
    sym = re.sub(r"::h[0-9a-f]{16}$", "", sym).replace(";", ":")
    if "kernel" in dso:
        return sym + " [k]"              # kernel functions, tagged for the summary's areas
    if lib.startswith(("libc.", "libm.", "ld-linux", "libgcc")):
        return f"{sym} [{lib.split('.so')[0]}]"
    return sym
frames = []
def flush():
    if frames:
        print(";".join(reversed(frames)) + " 1")
    frames.clear()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    if not line.strip():
        flush()
        continue
    if line[0] in " \t":
        m = re.match(r"\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$", line)
        if m:
            frames.append(clean(m.group(2), m.group(3)))
    else:
        flush()
flush()
PY
else
    callgrind_annotate --inclusive=yes --tree=none "$work/callgrind.out" >"$work/callgrind.incl.txt" 2>/dev/null || true
    callgrind_annotate --inclusive=no --tree=none "$work/callgrind.out" >"$work/callgrind.self.txt" 2>/dev/null || true
    # callgrind has no per-sample stacks: fold its call graph (caller -> callee costs) is out of scope here; the
    # summary lists functions by self and inclusive cost instead.
    : >"$work/stacks.folded"
fi

# ---- the summary ------------------------------------------------------------------------------------------------
mkdir -p "$out"
python3 - "$work" "$tool" "$bots" "$seconds" "$bot_cpu" "$bzfs_cpu" "$ticks" "$freq" >"$out/bots-profile.md" <<'PY'
import collections, re, subprocess, sys
work, tool, bots, seconds, bot_cpu, bzfs_cpu, ticks, freq = sys.argv[1:]

# Areas, first match wins; a function's area comes from its name.
AREAS = [
    ("brains, aim, danger, nav", r"^bzhead::bot::(brains|aim|danger|nav)\b|^<bzhead::bot::brains"),
    ("bot host and pilot (per-bot protocol side, tick loop)", r"^bzhead::bot::|^<bzhead::bot::"),
    ("dead reckoning, physics, shots, hits", r"^bzhead::bzflag::(play|flight)\b|^<bzhead::bzflag::play"),
    ("world queries (BVH, segments, collisions)", r"^bzhead::bzflag::world\b|^<bzhead::bzflag::world"),
    ("session engine and message decode/encode", r"^bzhead::bzflag::|^<bzhead::bzflag::|^bzhead::wire\b|^<bzhead::wire"),
    ("JSON / text output", r"^bzhead::observer\b|^<bzhead::observer|serde_json|^core::fmt|^<.*as core::fmt|^alloc::fmt|^std::io::Write"),
    ("reactor (mio, sockets, timers)", r"^bzhead::reactor\b|^<bzhead::reactor|^mio::|^<mio::|^std::net|^std::sys::net|^socket2"),
    ("kernel: TCP/UDP send and receive, epoll, scheduling", r" \[k\]$|^\[kernel\]"),
    ("memory (malloc, free, memcpy)", r"malloc|^free |^cfree|realloc|^_int_|^__mem(cpy|move|set)|^mem(cpy|move|set)|^alloc::raw_vec|^alloc::alloc|^__rust_(alloc|dealloc|realloc)"),
    ("system call wrappers (libc)", r"^(__libc_|__GI_|epoll_wait|__(send|recv|write|read|epoll)|send|recv|write|read|clock_gettime|__vdso)"),
    ("libm (sin, cos, atan2, sqrt)", r"\[libm\]$"),
    ("other Rust std / core", r"^(std|core|alloc)::|^<(std|core|alloc)::"),
]
AREA_RE = [(a, re.compile(p)) for a, p in AREAS]
def area(fn):
    for a, r in AREA_RE:
        if r.search(fn):
            return a
    return "other"
def ours(fn):
    return fn.startswith("bzhead::") or fn.startswith("<bzhead::")

def short(fn, width=110):
    fn = re.sub(r"<impl [^>]*>", "<impl>", fn)
    return fn if len(fn) <= width else fn[: width - 1] + "…"

print(f"# Where `bzhead bot` spends its time ({bots} hunters)")
print()
print("Generated by `bench/profile-bots.sh` (do not edit by hand): a local `bzfs -j -ms 3` on the generated world,")
print(f"`bzhead bot hunter --count {bots} --stagger-ms 50 --quiet --stats` (release build with `debug = true`), and once")
if tool == "perf":
    print(f"every bot had joined and spawned, `perf record -F {freq} --call-graph dwarf` on the bot process for {seconds} s.")
else:
    print(f"every bot had joined and spawned, `valgrind --tool=callgrind` collecting for {seconds} s.")
print()
print(f"bzhead used **{bot_cpu} cores** over the window (bzfs {bzfs_cpu}); {ticks or 'no tick statistics printed'}.")
print()

if tool == "perf":
    samples = []
    for line in open(f"{work}/stacks.folded", encoding="utf-8"):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        samples.append(stack.split(";"))
    total = len(samples)
    print(f"{total} samples. Percentages are of all samples of the bot process (its only thread does everything).")
    print()
    self_c = collections.Counter()
    incl = collections.Counter()
    by_area_self = collections.Counter()
    by_area_ours = collections.Counter()
    for frames in samples:
        leaf = frames[-1]
        self_c[leaf] += 1
        by_area_self[area(leaf)] += 1
        for f in set(frames):
            incl[f] += 1
        # The innermost of our own functions on the stack: where a malloc, a memcpy or a system call was asked for.
        mine = next((f for f in reversed(frames) if ours(f)), None)
        by_area_ours[area(mine) if mine else area(leaf)] += 1
    pct = lambda c: f"{100.0 * c / total:.1f}%"
    print("## By area")
    print()
    print("\"Self\" puts each sample where the CPU was (so allocation, copies and the kernel are areas of their own);")
    print("\"attributed\" puts it in the area of the innermost bzhead function on its stack (a `malloc` called by the")
    print("aim code counts as aim).")
    print()
    print("| area | self | attributed |")
    print("|---|---|---|")
    for a in sorted(set(by_area_self) | set(by_area_ours), key=lambda a: -by_area_ours[a]):
        print(f"| {a} | {pct(by_area_self[a])} | {pct(by_area_ours[a])} |")
    print()
    print("## Top functions by self time")
    print()
    print("| self | inclusive | area | function |")
    print("|---|---|---|---|")
    for fn, c in self_c.most_common(25):
        print(f"| {pct(c)} | {pct(incl[fn])} | {area(fn)} | `{short(fn)}` |")
    print()
    print("## Top bzhead functions by inclusive time")
    print()
    print("| inclusive | self | area | function |")
    print("|---|---|---|---|")
    skip = re.compile(r"^(bzhead::main|bzhead::cli::|main$|std::rt::|core::ops::function)")
    rows = [(fn, c) for fn, c in incl.most_common() if ours(fn) and not skip.search(fn)]
    for fn, c in rows[:30]:
        print(f"| {pct(c)} | {pct(self_c[fn])} | {area(fn)} | `{short(fn)}` |")
    print()
    print("## System calls (inclusive, kernel side included)")
    print()
    print("| inclusive | system call |")
    print("|---|---|")
    sys_rows = [(fn, c) for fn, c in incl.most_common() if re.match(r"^__(x64|ia32)_sys_", fn)]
    for fn, c in sys_rows[:12]:
        print(f"| {pct(c)} | `{fn.split('_sys_', 1)[1].removesuffix(' [k]')}` |")
    print()
    print("The flame graph of the same samples is `docs/bench/bots-flame.svg` (when inferno was installed).")
else:
    for kind in ("self", "incl"):
        print(f"## callgrind_annotate, {'self' if kind == 'self' else 'inclusive'}")
        print()
        print("```")
        lines = open(f"{work}/callgrind.{kind}.txt", encoding="utf-8", errors="replace").read().splitlines()
        body = [l for l in lines if re.match(r"\s*[0-9,]+ \(", l)]
        for l in body[:30]:
            print(l[:160])
        print("```")
        print()
PY
echo "wrote $out/bots-profile.md" >&2

# ---- the flame graph --------------------------------------------------------------------------------------------
flamegraph=""
for d in ${INFERNO:+"$INFERNO"} "$HOME/.cargo/bin" "$target_dir/inferno/bin"; do
    [[ -x "$d/inferno-flamegraph" ]] && flamegraph="$d/inferno-flamegraph" && break
done
[[ -z "$flamegraph" ]] && command -v inferno-flamegraph >/dev/null && flamegraph=$(command -v inferno-flamegraph)
if [[ $tool == perf && -n "$flamegraph" && -s "$work/stacks.folded" ]]; then
    "$flamegraph" --title "bzhead bot hunter --count $bots: ${seconds} s" --width 1600 --minwidth 0.2 \
        <"$work/stacks.folded" >"$out/bots-flame.svg"
    echo "wrote $out/bots-flame.svg" >&2
else
    echo "no flame graph (needs perf and inferno-flamegraph: cargo install inferno)" >&2
fi
