"""observe, query and scan against real servers return what the CLI's JSON lines say."""

from __future__ import annotations

import json
import time

import bzhead
from conftest import REPO, run_bzhead, udp_socket

# A fixed world (a generated one may differ between two joins).
WORLD = str(REPO / "testdata" / "worlds" / "ctf-small.bzw")


def without(d: dict, *keys: str) -> dict:
    return {k: v for k, v in d.items() if k not in keys}


def canonical(events: list) -> list:
    return sorted(json.dumps(without(e, "t"), sort_keys=True) for e in events)


def test_observe_yields_the_events_of_the_cli_json_lines(bzfs_factory):
    bzfs = bzfs_factory("-c", "-mp", "0,3,3,0,0,3", "-world", WORLD, "-srvmsg", "welcome to the python test")
    cli = run_bzhead("observe", "--json", "--no-cache", "--for", "1.5", bzfs.addr)
    assert cli.returncode == 0, cli.stderr
    cli_events = [json.loads(line) for line in cli.stdout.splitlines()]
    # The server has let the CLI's observer go (its slot and the team sizes are as before it joined).
    assert bzfs.wait_for_log("Player bzhead [0] removed"), bzfs.log()
    py_events = list(bzhead.observe(bzfs.addr, seconds=1.5, cache=False))
    assert cli_events, cli.stdout
    # The same events with the same contents; only the times differ, and the UDP link may come up a little
    # earlier or later among the join's messages.
    assert canonical(py_events) == canonical(cli_events)
    in_order = [without(e, "t") for e in py_events if e["type"] != "udp_link"]
    assert in_order == [without(e, "t") for e in cli_events if e["type"] != "udp_link"]
    assert all(isinstance(e["t"], float) for e in py_events)
    kinds = [e["type"] for e in py_events]
    assert "world" in kinds and "accept" in kinds and kinds[-1] == "closed", kinds
    # The Python observer left cleanly too.
    deadline = time.monotonic() + 10
    while bzfs.log().count("Player bzhead [0] removed") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert bzfs.log().count("Player bzhead [0] removed at") == 2 and bzfs.log().count(": left") >= 2, bzfs.log()


def test_observe_shows_what_is_asked(bzfs_factory):
    bzfs = bzfs_factory()
    types = {e["type"] for e in bzhead.observe(bzfs.addr, seconds=1.0, cache=False, hide=["set_var", "team"])}
    assert "set_var" not in types and "team" not in types and "accept" in types, types
    try:
        bzhead.observe(bzfs.addr, show=["no_such_type"])
    except ValueError as e:
        assert "unknown event type" in str(e)
    else:
        raise AssertionError("an unknown event type was accepted")


def test_query_and_scan_of_bzfs_match_the_cli(bzfs_factory, tmp_path):
    bzfs = bzfs_factory("-ms", "4")
    listing = tmp_path / "servers.txt"
    listing.write_text(f"# one server\n{bzfs.addr}\n")
    cli = run_bzhead("scan", "--protocol", "bzflag", "--list", str(listing), "--json")
    assert cli.returncode == 0, cli.stderr
    (cli_result,) = [json.loads(line) for line in cli.stdout.splitlines()]
    py_result = bzhead.query("bzflag", bzfs.addr, timeout=2.0)
    assert py_result["ok"] and py_result["raw"]["max_shots"] == 4 if "max_shots" in py_result["raw"] else py_result["ok"]
    assert without(py_result, "ping_ms") == without(cli_result, "ping_ms")
    (scanned,) = bzhead.scan([bzfs.addr], protocol="bzflag")
    assert without(scanned, "ping_ms") == without(cli_result, "ping_ms")


def test_query_of_a_ddnet_server_matches_the_cli(ddnet):
    cli = run_bzhead("query", "teeworlds", ddnet.addr, "--json")
    assert cli.returncode == 0, cli.stdout + cli.stderr
    cli_result = json.loads(cli.stdout)
    # The protocol is built into the library: no plugin file is needed (nor found: no plugin_dirs, and the
    # test's environment has no $BZHEAD_PLUGIN_PATH).
    py_result = bzhead.query("teeworlds", ddnet.addr)
    assert py_result["ok"] and py_result["name"] == "bzhead python test", py_result
    # Everything but the round-trip time and the random request token of the query.
    assert without(py_result, "ping_ms", "raw") == without(cli_result, "ping_ms", "raw")
    assert without(py_result["raw"], "token") == without(cli_result["raw"], "token"), (py_result["raw"], cli_result["raw"])


def test_every_bundled_game_is_built_in():
    protos = {p["name"]: p for p in bzhead.protocols()}
    for name in ("bzflag", "teeworlds", "teeworlds7", "quake3", "warsow", "dpmaster", "savage2", "srb2"):
        assert name in protos, sorted(protos)
    assert "built in" in protos["teeworlds"]["origin"], protos["teeworlds"]


def test_a_server_that_does_not_answer_is_a_timeout_result():
    r = bzhead.query("bzflag", "127.0.0.1:9", timeout=0.3)
    assert r["ok"] is False and r["error"] in ("timeout", "refused"), r


def test_bad_arguments_are_python_exceptions():
    for call in (
        lambda: bzhead.query("no-such-protocol", "127.0.0.1:1"),
        lambda: bzhead.query("bzflag", "not an address::"),
        lambda: bzhead.scan(protocol="bzflag"),
        lambda: bzhead.BotHost(tick_hz=0),
        lambda: bzhead.BotHost().add_bot("127.0.0.1:5154", object()),
        lambda: bzhead.BotHost().add_bot("127.0.0.1:5154", "no-such-brain"),
        lambda: bzhead.BotHost().add_bot("127.0.0.1:5154", bzhead.Bot(), team="mauve"),
        lambda: bzhead.observe("127.0.0.1:5154", seconds=float("nan")),
    ):
        try:
            call()
        except (ValueError, TypeError) as e:
            assert str(e)
        else:
            raise AssertionError("no exception")


def test_a_scan_queries_each_distinct_server_once(bzfs_factory):
    bzfs = bzfs_factory()
    stand_in = udp_socket()  # a Quake III server that never answers: it counts the requests
    q3 = f"127.0.0.1:{stand_in.getsockname()[1]}"
    try:
        spellings = [bzfs.addr, f"localhost:{bzfs.port}", bzfs.addr, "127.0.0.1:9"]
        results = bzhead.scan(spellings, protocol="bzflag", timeout=1.0)
        assert [r["address"] for r in results] == [bzfs.addr, "127.0.0.1:9"], results
        assert results[0]["ok"] and not results[1]["ok"], results
        results = bzhead.scan([q3, q3, f"localhost:{stand_in.getsockname()[1]}"], protocol="quake3",
                              timeout=0.1, retries=0, params={"query": "info"})
        assert [(r["address"], r["error"]) for r in results] == [(q3, "timeout")], results
        stand_in.settimeout(0.5)
        stand_in.recvfrom(4096)  # the one request
        try:
            data, _ = stand_in.recvfrom(4096)
        except TimeoutError:
            pass
        else:
            raise AssertionError(f"a duplicate was queried: {data!r}")
    finally:
        stand_in.close()
