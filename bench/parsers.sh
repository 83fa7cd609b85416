#!/usr/bin/env bash
# Parser throughput: runs the divan benchmarks `cargo bench --bench parsers` (world, messages, session) and
# `--bench 'parsers_*'` (one per query plugin: their rlibs cannot link into one binary, see benches/parsers.rs),
# then prints a Markdown table (figure | value | command) on stdout for docs/benchmarks.md, between the
# `<!-- bench:parsers -->` markers. Progress and cargo's output go to stderr; the raw divan output is kept in
# ${CARGO_TARGET_DIR:-target}/bench-parsers.txt.
#
#   bench/parsers.sh                       # full run (about a minute of benchmarking after the build)
#   bench/parsers.sh --quick               # short samples, for trying the script
#   bench/parsers.sh --from FILE           # only parse a divan output saved earlier
#   bench/parsers.sh -- --sample-count 50  # anything after -- goes to divan
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir=${CARGO_TARGET_DIR:-target}
raw="$target_dir/bench-parsers.txt"
from=""
divan_args=(--color never)
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) divan_args+=(--max-time 0.3 --sample-count 20); shift ;;
        --from) from="$2"; shift 2 ;;
        --) shift; divan_args+=("$@"); break ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

if [[ -z "$from" ]]; then
    mkdir -p "$target_dir"
    echo "cargo bench --bench parsers --bench 'parsers_*' -- ${divan_args[*]}" >&2
    # One cargo invocation; each bench binary prints its own divan tree (and `parsers-info:` lines first).
    status=0
    cargo bench --no-fail-fast --bench parsers --bench 'parsers_*' -- "${divan_args[@]}" >"$raw" || status=$?
    from="$raw"
    if [[ $status -ne 0 ]]; then
        echo "some benchmark failed (exit $status); the table below has what ran" >&2
        trap "exit $status" EXIT
    fi
fi

python3 - "$from" <<'PY'
import re, sys

text = open(sys.argv[1], encoding="utf-8").read().splitlines()

# ---- divan's tree output -------------------------------------------------------------------------------------
# A header line per binary:  "<binary>   fastest │ slowest │ median │ mean │ samples │ iters"
# then one line per node:    "<prefix><branch><name>  <fastest> │ <slowest> │ <median> │ <mean> │ <samples> │ <iters>"
# and one line per counter:  "<prefix>               <fastest> │ <slowest> │ <median> │ <mean> │         │"
# The tree prefix also uses "│", so a line is split from the right: its last five fields are always the columns
# after "fastest". Depth is where the name starts (three characters per level).
TREE = "│├╰─ "
UNITS = {"ps": 1e-12, "ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
SI = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}

def seconds(s):
    m = re.fullmatch(r"([0-9.]+)\s*(ps|ns|µs|us|ms|s)", s.strip())
    return float(m.group(1)) * UNITS[m.group(2)] if m else None

def rate(s):
    """'1.765 GB/s' -> ('bytes', 1.765e9); '169.7 Kitem/s' -> ('items', 169.7e3)."""
    m = re.fullmatch(r"([0-9.]+)\s*([KMGT]?)(i?B|item)/s", s.strip())
    if not m:
        return None
    v = float(m.group(1)) * (SI[m.group(2)] * (1.024 if m.group(3) == "iB" else 1))
    return ("items" if m.group(3) == "item" else "bytes", v)

results = {}   # "binary/path::to::bench" -> {"median": s, "bytes": B/s, "items": 1/s, "samples": n}
info = {}
binary, stack, last = None, [], None
for line in text:
    if line.startswith("parsers-info: "):
        k, _, v = line[len("parsers-info: "):].partition("=")
        info[k.strip()] = v.strip()
        continue
    fields = line.split("│")
    if len(fields) < 6:
        continue
    head = "│".join(fields[:-5])
    slowest, median, mean, samples, iters = (f.strip() for f in fields[-5:])
    if median == "median" and mean == "mean":            # a binary's header line
        # (taken from the end of the text: a bench binary that died mid-line leaves its last words before it)
        binary, stack, last = head.split()[-2], [], None
        continue
    if binary is None:
        continue
    stripped = head.lstrip(TREE)
    depth = (len(head) - len(stripped)) // 3
    parts = stripped.split(None, 1)
    if parts and rate(stripped.strip()) is None:         # a node (a counter line holds only its fastest rate)
        name = parts[0]
        stack = stack[: max(depth - 1, 0)] + [name]
        if seconds(median) is not None:
            last = binary + "/" + "::".join(stack)
            results[last] = {"median": seconds(median), "samples": samples}
        else:
            last = None
        continue
    r = rate(median)
    if r and last:
        results[last][r[0]] = r[1]

if not results:
    sys.exit("no divan results found in " + sys.argv[1])

# ---- the table -------------------------------------------------------------------------------------------------
def get(key):
    r = results.get(key)
    if r is None:
        print(f"warning: no result for {key}", file=sys.stderr)
    return r

def t(s):
    for div, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if s >= div:
            return f"{s / div:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"

def n(x, unit=""):
    """27400000 -> '27.4 M', with ' unit' after."""
    for div, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.3g} {prefix}" + (f" {unit}" if unit else "")
    return f"{x:.3g}" + (f" {unit}" if unit else "")

def mbs(x):
    return f"{x / 1e6:,.0f} MB/s" if x >= 1e7 else f"{x / 1e6:.1f} MB/s"

def i(key, default=0):
    v = info.get(key)
    try:
        return int(v.split()[0])
    except (AttributeError, ValueError, IndexError):
        return default

rows = []
def row(figure, value, cmd):
    rows.append((figure, value, f"`{cmd}`"))

B = "cargo bench --bench parsers"
blob, inflated = i("world.blob_bytes"), i("world.inflated_bytes")
sent, expanded = i("world.obstacles_sent"), i("world.obstacles_expanded")
row("large world (`benches/data/big-world.bin`, real bzfs `-cacheout`): obstacles as sent / expanded; blob / inflated bytes",
    f"{sent:,} / {expanded:,}; {blob:,} / {inflated:,}", f"{B} -- world::")
if (r := get("parsers/world::parse_blob_inflate_decode")):
    row("world parse (envelope + inflate + decode), time; MB/s of compressed / inflated bytes",
        f"{t(r['median'])}; {blob / r['median'] / 1e6:.0f} / {inflated / r['median'] / 1e6:.0f} MB/s",
        f"{B} -- world::parse_blob")
if (r := get("parsers/world::inflate")):
    row("world inflate alone (zlib), inflated MB/s", f"{t(r['median'])}; {mbs(r['bytes'])}", f"{B} -- world::inflate")
if (r := get("parsers/world::decode")):
    row("world decode alone (`WorldDb::parse` of the inflated database), MB/s", f"{t(r['median'])}; {mbs(r['bytes'])}",
        f"{B} -- world::decode")
if (r := get("parsers/world::model_build")):
    row("world model build (expand groups, tessellate, links, BVH)",
        f"{t(r['median'])}; {n(r['items'], 'obstacles/s')}", f"{B} -- world::model_build")
if (r := get("parsers/world::encode")):
    row("world encode (`WorldDb::to_bytes`), MB/s", f"{t(r['median'])}; {mbs(r['bytes'])}", f"{B} -- world::encode")

msgs = i("recording.server_messages")
LABELS = [
    ("all", f"all {msgs} server messages of `two-hunters.rec` (the mix)"),
    ("player_update", "MsgPlayerUpdateSmall"),
    ("shot_begin", "MsgShotBegin"),
    ("shot_end", "MsgShotEnd"),
    ("killed", "MsgKilled"),
    ("alive", "MsgAlive"),
    ("add_player", "MsgAddPlayer"),
    ("message", "MsgMessage (chat)"),
    ("score", "MsgScore"),
    ("game_time", "MsgGameTime"),
]
for key, label in LABELS:
    d, e = get(f"parsers/messages::decode::{key}"), get(f"parsers/messages::encode::{key}")
    if d and e:
        row(f"{label}: `ServerMsg` decode / encode, messages/s (MB/s)",
            f"{n(d['items'])} / {n(e['items'])} ({mbs(d['bytes'])} / {mbs(e['bytes'])})",
            f"{B} -- messages::.*::{key}")
for key, label in (("player_update", "MsgPlayerUpdateSmall"), ("shot_begin", "MsgShotBegin")):
    if (r := get(f"parsers/messages::client_encode::{key}")):
        row(f"{label}: `ClientMsg` encode (what a bot sends), messages/s (MB/s)",
            f"{n(r['items'])} ({mbs(r['bytes'])})", f"{B} -- messages::client_encode::{key}")
if (r := get("parsers/session::replay_recording")):
    secs = info.get("recording.game_seconds", "?")
    row(f"session engine replaying `two-hunters.rec` ({msgs} server messages, {i('recording.stream_bytes'):,} bytes, "
        f"{secs} s of game, join and world included), messages/s (MB/s)",
        f"{n(r['items'])} ({mbs(r['bytes'])}); {t(r['median'])} per replay", f"{B} -- session::")

PLUGINS = [
    ("parsers_teeworlds", "teeworlds", [
        ("ddnet_extended_60_players", "DDNet extended info, 60 players (2 datagrams)"),
        ("vanilla_06_inf3", "0.6 vanilla `inf3` (1 datagram)"),
        ("legacy64_60_players", "64-player legacy, 60 players (3 datagrams)"),
        ("teeworlds7_60_players", "`teeworlds7` token handshake + `inf3`, 60 players (2 datagrams)"),
    ]),
    ("parsers_quake3", "quake3", [
        ("openarena_info_and_status", "OpenArena getinfo + getstatus, 4 players (2 datagrams)"),
        ("openarena_status_only", "OpenArena getstatus only (1 datagram)"),
        ("dpmaster_getservers_301", "dpmaster getservers, 301 servers (2 datagrams)"),
    ]),
    ("parsers_savage2", "savage2", [
        ("info_reply::1", "Savage 2 info reply 1"),
        ("info_reply::2", "Savage 2 info reply 2"),
    ]),
    ("parsers_srb2", "srb2", [
        ("serverinfo_and_playerinfo", "SRB2 `PT_SERVERINFO` + `PT_PLAYERINFO` (built, no capture; 2 datagrams)"),
    ]),
]
for binary, plugin, cases in PLUGINS:
    for key, label in cases:
        if (r := get(f"{binary}/{key}")):
            row(f"plugin `{plugin}`: {label}: replies/s, MB/s, time per query",
                f"{n(r['items'])}/s, {mbs(r['bytes'])}, {t(r['median'])} per query",
                f"cargo bench --bench {binary} -- {key.split('::')[0]}")

print("| figure | value | command |")
print("|---|---|---|")
for f, v, c in rows:
    print(f"| {f} | {v} | {c} |")
PY
