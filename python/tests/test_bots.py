"""Python bots on a real bzfs: a Python hunter kills a sitter (witnessed by bzadmin), and a bot whose tick raises
is reported and stopped while another Python bot plays on."""

from __future__ import annotations

import sys
import time

import bzhead
from conftest import Bzadmin

import hunter as hunter_example  # noqa: E402  (python/examples/hunter.py)


def run_until(host: bzhead.BotHost, seconds: float, done) -> list:
    """Runs the host in short slices until `done(events)` holds or `seconds` pass; returns every event."""
    events: list = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        host.run(0.25)
        events.extend(host.events())
        if done(events):
            break
    return events


def test_a_python_hunter_kills_a_sitter_and_the_server_says_so(bzfs_factory):
    bzfs = bzfs_factory("-ms", "3")
    witness = Bzadmin("witness", bzfs.addr)
    assert witness.wait_for("joined the game"), witness.output()
    hunter = hunter_example.Hunter()
    host = bzhead.BotHost(game_events=True)
    try:
        hid = host.add_bot(bzfs.addr, hunter, callsign="pyhunter", team="red")
        host.add_bot(bzfs.addr, "sitter", callsign="sitter", team="green")
        events = run_until(
            host, 120, lambda evs: any(e.get("bot_event") == "killed" and e["bot"] == "pyhunter" for e in evs)
        )
        kills = [e for e in events if e.get("bot_event") == "killed" and e["bot"] == "pyhunter"]
        assert kills, f"no kill in 120 s: {host.status(hid)}\n{bzfs.log()}"
        # The server told every player: the observer link's kill event, and bzadmin's line.
        assert any(
            e["type"] == "kill" and e["killer_callsign"] == "pyhunter" and e["victim_callsign"] == "sitter"
            for e in events
        ), events
        assert witness.wait_for("'sitter' destroyed by 'pyhunter'"), witness.output()
        assert hunter.kills >= 1  # on_event saw it too
        status = host.status(hid)
        assert status["kills"] >= 1 and status["state"] == "joined" and not status["failed"], status
    finally:
        host.close()
        witness.stop()
    assert "kicked" not in bzfs.log().lower(), bzfs.log()


class Faulty(bzhead.Bot):
    """Plays a few ticks, then divides by zero."""

    def __init__(self) -> None:
        self.ticks = 0
        self.kept_view = None

    def tick(self, view, control):
        self.ticks += 1
        self.kept_view = view
        control.drive(0.5, 0.0)
        if self.ticks == 10:
            self.explode()

    def explode(self):
        return 1 / 0


class Steady(bzhead.Bot):
    """Counts its ticks and what it saw."""

    def __init__(self) -> None:
        self.ticks = 0
        self.seen_players: set = set()
        self.events: list = []

    def tick(self, view, control):
        self.ticks += 1
        control.drive(0.3, 0.2)
        for p in view.players:
            self.seen_players.add(p.callsign)
        assert view.var("_tankSpeed") is not None and view.var("_noSuchVariable") is None
        assert view.world.size > 0
        # Every part of the view answers with plain values.
        me = view.me
        assert me.callsign == "steady" and len(me.pos) == 3 and isinstance(me.azimuth, float)
        assert view.game_type in ("team_ffa", "ctf", "open_ffa", "rabbit")
        assert isinstance(view.flags, list) and isinstance(view.shots, list) and isinstance(view.enemies(), list)
        assert view.world.ground_height(me.pos[:2]) >= 0.0
        assert isinstance(view.world.line_of_sight(me.pos, (0.0, 0.0, 1.0)), bool)
        assert isinstance(bzhead.danger.threats(view, 1.0), list)
        control.grab = False
        assert control.grab is False and abs(control.speed - 0.3) < 0.02  # drive() rounds to 1/64
        if self.ticks == 3:
            control.say("hello from python")
        if self.ticks == 5:
            path = bzhead.nav.path_to(view, (0.0, 0.0))
            assert path is None or (len(path) >= 2 and len(path[0]) == 2), path

    def on_event(self, event):
        self.events.append(event)


def test_a_bot_whose_tick_raises_is_reported_and_stopped_while_another_plays_on(bzfs_factory):
    bzfs = bzfs_factory()
    faulty, steady = Faulty(), Steady()
    host = bzhead.BotHost()
    try:
        fid = host.add_bot(bzfs.addr, faulty, callsign="faulty")
        sid = host.add_bot(bzfs.addr, steady, callsign="steady")
        events = run_until(
            host, 30, lambda evs: any(e.get("bot_event") == "error" for e in evs) and steady.ticks > 0
        )
        errors = [e for e in events if e.get("bot_event") == "error"]
        assert len(errors) == 1 and errors[0]["bot"] == "faulty" and errors[0]["bot_id"] == fid, events
        err = errors[0]
        assert err["error"].startswith("ZeroDivisionError"), err
        assert "in explode" in err["traceback"] and "1 / 0" in err["traceback"], err["traceback"]
        # The faulty bot leaves the server; the steady one plays on: it keeps ticking and stays in the game.
        assert bzfs.wait_for_log("Player faulty [", 5), bzfs.log()
        events += run_until(host, 15, lambda evs: any(e.get("bot_event") == "left" and e["bot"] == "faulty" for e in evs))
        assert any(e.get("bot_event") == "left" and e["bot"] == "faulty" for e in events), events
        before, faulty_ticks = steady.ticks, faulty.ticks
        host.run(2.0)
        assert steady.ticks >= before + 20, (before, steady.ticks)
        assert faulty.ticks == faulty_ticks == 10
        fs, ss = host.status(fid), host.status(sid)
        assert fs["failed"] and fs["state"] == "left", fs
        assert ss["state"] == "joined" and not ss["failed"], ss
        assert "faulty" in steady.seen_players
        assert bzfs.wait_for_log("-> All: hello from python"), bzfs.log()
        assert any(e["bot_event"] == "joined" for e in steady.events), steady.events
        assert bzfs.wait_for_log(f"Player faulty [{faulty_id(events)}] removed"), bzfs.log()
        assert "steady" in bzfs.log() and "Player steady" in bzfs.log()
        assert not any("Player steady" in line and "removed" in line for line in bzfs.log().splitlines())
        # A view kept past its tick refuses to be read.
        try:
            faulty.kept_view.me
        except RuntimeError as e:
            assert "only valid during Bot.tick" in str(e)
        else:
            raise AssertionError("a view read after its tick did not raise")
    finally:
        host.close()


def faulty_id(events: list) -> int:
    return next(e["id"] for e in events if e.get("bot_event") == "joined" and e["bot"] == "faulty")


CTRL_C_SCRIPT = r"""
import sys, bzhead

class Idle(bzhead.Bot):
    def tick(self, view, control):
        control.drive(0.2, 0.3)
    def on_event(self, event):
        if event["bot_event"] == "spawned":
            print("spawned", flush=True)

host = bzhead.BotHost(game_events=False)
host.add_bot(sys.argv[1], Idle(), callsign="ctrlc")
try:
    host.run()
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(0)
print("run returned", flush=True)
sys.exit(1)
"""


def test_ctrl_c_makes_the_bots_leave_cleanly(bzfs_factory):
    import signal
    import subprocess

    bzfs = bzfs_factory()
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_SCRIPT, bzfs.addr], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "spawned", proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and "interrupted" in out, (out, err)
    # A clean leave (MsgExit), not a dropped connection; the observer link left too.
    deadline = time.monotonic() + 10
    while bzfs.log().count("removed") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    removed = [line for line in bzfs.log().splitlines() if "removed" in line]
    assert any("Player ctrlc [" in line and line.endswith(": left") for line in removed), bzfs.log()
    assert any("Player bzhead-eye [" in line and line.endswith(": left") for line in removed), bzfs.log()


def test_other_python_threads_run_while_the_host_waits():
    import threading

    host = bzhead.BotHost()
    bid = host.add_bot("127.0.0.1:9", bzhead.Bot(), callsign="nobody")  # nothing listens there: it keeps retrying
    count = 0
    stop = threading.Event()

    def spin():
        nonlocal count
        while not stop.is_set():
            count += 1
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    try:
        host.run(1.0)
    finally:
        stop.set()
        t.join()
    # The GIL is released while the loop waits: the thread ran all along (about a thousand rounds on a quiet
    # machine; with the GIL held through the wait it could not run at all).
    assert count > 20, count
    assert host.status(bid)["state"] == "waiting", host.status(bid)
    assert any(e["type"] == "closed" for e in host.events())  # the observer link could not connect


ERROR_SCRIPT = r"""
import sys, bzhead

class Faulty(bzhead.Bot):  # no on_event: nothing but bzhead reports the exception
    ticks = 0
    def tick(self, view, control):
        self.ticks += 1
        if self.ticks == 5:
            self.explode()
    def explode(self):
        return 1 / 0

host = bzhead.BotHost(game_events=False)
host.add_bot(sys.argv[1], Faulty(), callsign="faulty")
host.run(8, raise_errors=sys.argv[2] == "raise")
print("run returned", flush=True)
"""


def run_error_script(bzfs, mode: str):
    import subprocess

    return subprocess.run(
        [sys.executable, "-c", ERROR_SCRIPT, bzfs.addr, mode], capture_output=True, text=True, timeout=60
    )


def test_an_exception_in_a_tick_is_printed_with_its_traceback(bzfs_factory):
    bzfs = bzfs_factory()
    p = run_error_script(bzfs, "print")
    # run() went on for its 8 s (the bot left); the exception was printed as Python prints a thread's.
    assert p.returncode == 0 and "run returned" in p.stdout, (p.stdout, p.stderr)
    assert 'bzhead: bot "faulty" (id ' in p.stderr and "raised an exception" in p.stderr, p.stderr
    assert "Traceback (most recent call last)" in p.stderr and "in explode" in p.stderr, p.stderr
    assert p.stderr.rstrip().endswith("ZeroDivisionError: division by zero"), p.stderr
    assert bzfs.wait_for_log("Player faulty [", 5), bzfs.log()


def test_run_raise_errors_raises_the_exception_of_a_tick(bzfs_factory):
    bzfs = bzfs_factory()
    started = time.monotonic()
    p = run_error_script(bzfs, "raise")
    assert time.monotonic() - started < 7, "run() did not raise at once"
    # Uncaught from run(): the script ends with the exception, its traceback through the bot's code.
    assert p.returncode == 1 and "run returned" not in p.stdout, (p.stdout, p.stderr)
    assert "raised an exception and leaves" not in p.stderr, p.stderr
    assert "in explode" in p.stderr and "ZeroDivisionError: division by zero" in p.stderr, p.stderr
