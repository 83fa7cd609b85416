"""Python's queries take their tokens and challenges fresh from the operating system's random source, like the
CLI's: a UDP stand-in for a Quake III server captures the challenges of `bzhead.query` and `bzhead.scan` and checks
that none can be predicted, neither from another query nor from its own first bytes."""

from __future__ import annotations

import subprocess
import sys

import bzhead

from conftest import udp_socket

ALPHABET = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-"
# A `quake3` challenge: `bzh` and 86 characters of six bits carrying the query's 64 random bytes
# (plugins/query-quake3/src/engine.rs, `challenge_from`).
CHARS = 86
M = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
# One request (getinfo) per query.
INFO = {"query": "info"}


def mix(z: int) -> int:
    """splitmix64's finaliser: what a seeded query (`ScanConfig::seed` != 0) derives its random bytes with."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def unmix(z: int) -> int:
    """The inverse of `mix` (each step is a bijection of 64-bit words)."""
    z = z ^ (z >> 31) ^ (z >> 62)
    z = (z * pow(0x94D049BB133111EB, -1, 1 << 64)) & M
    z = z ^ (z >> 27) ^ (z >> 54)
    z = (z * pow(0xBF58476D1CE4E5B9, -1, 1 << 64)) & M
    return z ^ (z >> 30) ^ (z >> 60)


def random_bytes(datagram: bytes) -> bytes:
    """The 64 bytes a challenge carries (the first 512 of its 516 bits)."""
    at = datagram.index(b"bzh") + 3
    chars = datagram[at : at + CHARS]
    assert len(chars) == CHARS, datagram
    bits = "".join(format(ALPHABET.index(c), "06b") for c in chars)
    return int(bits[:512], 2).to_bytes(64, "big")


def predictable(random: bytes) -> bool:
    """True when the bytes are splitmix64 words of one 64-bit seed (`QueryConfig::random_bytes` of a seeded
    query): the seed recovered from the first word predicts the second."""
    words = [int.from_bytes(random[i : i + 8], "little") for i in range(0, 64, 8)]
    seed = (unmix(words[0]) - 1001 * GOLDEN) & M
    return mix((seed + 1002 * GOLDEN) & M) == words[1]


def captured(sock, n: int) -> list[bytes]:
    """The first request of each of `n` queries that came to `sock` (retries are off)."""
    out = []
    sock.settimeout(2.0)
    for _ in range(n):
        data, _ = sock.recvfrom(4096)
        out.append(data)
    return out


def test_the_inverse_is_right():
    for x in (0, 1, GOLDEN, M, 0x0123456789ABCDEF):
        assert unmix(mix(x)) == x and mix(unmix(x)) == x
    # A seeded query's bytes are found out (so the check below can fail).
    seed = 0x5EED
    words = [mix((seed + (1001 + i) * GOLDEN) & M) for i in range(8)]
    assert predictable(b"".join(w.to_bytes(8, "little") for w in words))


def test_python_queries_take_fresh_random_tokens():
    sock = udp_socket()
    port = sock.getsockname()[1]
    addr = f"127.0.0.1:{port}"
    try:
        # Two queries in this process, a scan of this stand-in and another, and a query from another process.
        for _ in range(2):
            r = bzhead.query("quake3", addr, timeout=0.05, retries=0, params=INFO)
            assert r["ok"] is False and r["error"] == "timeout", r
        other = udp_socket()
        try:
            both = [addr, f"127.0.0.1:{other.getsockname()[1]}"]
            bzhead.scan(both, protocol="quake3", timeout=0.05, retries=0, params=INFO)
            scanned = captured(other, 1)
        finally:
            other.close()
        code = f"import bzhead; bzhead.query('quake3', {addr!r}, timeout=0.05, retries=0, params={INFO!r})"
        subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
        requests = captured(sock, 4) + scanned
    finally:
        sock.close()
    randoms = [random_bytes(d) for d in requests]
    assert len(set(randoms)) == len(randoms), "two queries sent the same challenge"
    for d, r in zip(requests, randoms):
        assert not predictable(r), f"the challenge of {d!r} derives from a 64-bit seed: its tokens can be predicted"
