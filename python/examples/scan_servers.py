"""Query a list of game servers at once and print a table of those that answered.

    python python/examples/scan_servers.py PROTOCOL ADDR[:PORT]...
    python python/examples/scan_servers.py teeworlds 127.0.0.1:8303 127.0.0.1:8304
    python python/examples/scan_servers.py bzflag --file servers.txt   (one ADDR[:PORT] per line, # comments)

Every protocol of `bzhead.protocols()` works: bzflag and the games built into the library (teeworlds,
teeworlds7, quake3, warsow, savage2, srb2) with no plugin file.
"""

from __future__ import annotations

import sys

import bzhead


def main() -> None:
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    protocol, rest = args[0], args[1:]
    if rest[0] == "--file":
        with open(rest[1]) as f:
            addresses = [line.split("#")[0].strip() for line in f]
        addresses = [a for a in addresses if a]
    else:
        addresses = rest
    results = bzhead.scan(addresses, protocol=protocol, timeout=1.0)
    print(f"{'ADDRESS':<24} {'PING':>6} {'PLAYERS':>8}  {'MAP':<16} NAME")
    for r in results:
        if r["ok"]:
            players = f"{r['players']}/{r['max_players']}"
            ping = f"{r['ping_ms']:.1f}" if r["ping_ms"] is not None else "-"
            print(f"{r['address']:<24} {ping:>6} {players:>8}  {(r['map'] or '-'):<16} {r['name'] or '-'}")
    answered = sum(r["ok"] for r in results)
    print(f"{answered} of {len(results)} answered", file=sys.stderr)


if __name__ == "__main__":
    main()
