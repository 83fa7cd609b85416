#!/usr/bin/env python3
"""Makes a large BZFlag .rec for the conversion benchmark (docs/benchmarks.md, "BZFlag .rec to JSON lines").

    bench/rec_concat.py SOURCE.rec OUT.rec BYTES

Repeats SOURCE's packets after its header until OUT holds BYTES, each copy later by the source's span plus one
second, with the packet links recomputed and the player update order numbers moved on (so that a replay takes
every copy's updates as new, as in one long game).
"""
import struct
import sys

src, dst, target = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = open(src, "rb").read()
flags_size, world_size = struct.unpack(">II", b[24:32])
header_len = 426 + flags_size + world_size
packets = []
p = header_len
while p + 32 <= len(b):
    mode, code, length, _next, _prev, hi, lo = struct.unpack(">HHIIIII", b[p : p + 24])
    packets.append((mode, code, (hi << 32) | lo, b[p + 32 : p + 32 + length]))
    p += 32 + length
span = packets[-1][2] - packets[0][2] + 1_000_000
with open(dst, "wb") as out:
    out.write(b[:header_len])
    pos, prev, k = header_len, 0, 0
    while pos < target:
        for mode, code, ts, data in packets:
            t = ts + k * span
            if code in (0x7075, 0x7073) and len(data) >= 9:  # MsgPlayerUpdate(Small): order at byte 5
                order = struct.unpack(">i", data[5:9])[0] + k * 20000
                data = data[:5] + struct.pack(">i", order) + data[9:]
            head = struct.pack(">HHIIIII", mode, code, len(data), (pos + 32 + len(data)) & 0xFFFFFFFF, prev, t >> 32, t & 0xFFFFFFFF)
            out.write(head + b"\0" * 8 + data)
            prev, pos = pos, pos + 32 + len(data)
        k += 1
print(f"{pos} bytes, {k} copies of {span / 1e6:.1f} s")
