"""bzhead.env's recordings (`record=DIR`) on a real private bzfs: every episode as bzhead's recording and BZFlag's
`.rec`, read back by `bzhead replay` (the learning tank joins, moves, and the kill the env rewarded is there), a
warped episode on game time, the `.rec` loaded and played by a real `bzfs -replay`, and the size cap."""

from __future__ import annotations

import json
import shutil
import time
import warnings
from pathlib import Path

import pytest

import bzhead.env
from conftest import Bzadmin, Bzfs, run_bzhead

import env_scripted  # python/examples/env_scripted.py (conftest puts python/examples on the path)


def replay_json(path: Path, *extra: str) -> list:
    out = run_bzhead("replay", "--json", *extra, str(path), timeout=60)
    assert out.returncode == 0, f"{out.stdout}\n{out.stderr}"
    assert "ends mid" not in out.stderr and "incomplete" not in out.stderr, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def say(admin: Bzadmin, line: str) -> None:
    assert admin.proc.stdin is not None
    admin.proc.stdin.write((line + "\n").encode())
    admin.proc.stdin.flush()


def test_a_warped_episode_is_recorded_in_both_formats_on_game_time(open_world, tmp_path):
    """warp=8, a scripted policy against a sitter until the episode's 60 game-s are up: its `.bzrec` and `.rec`
    are complete when the episode ends (before close), replay with the learner joining, moving and the kills the
    env rewarded, span game seconds (not the few wall seconds it took), and a real `bzfs -replay` plays the
    `.rec`. A second episode gets files of its own, complete after close()."""
    rec_dir = tmp_path / "episodes"
    env = bzhead.env.gym_env(
        opponents={"green": ["sitter"]}, world=open_world, mode="ffa", episode_seconds=60.0, warp=8.0,
        record=str(rec_dir),
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no recording warning in a normal episode
            obs, _ = env.reset(seed=7)
            wall = time.monotonic()
            kills, done, game_start, game_end = [], False, None, None
            while not done:
                obs, _, terminated, truncated, info = env.step(env_scripted.policy(obs))
                assert "error" not in info, info
                game_start = info["game_time"] if game_start is None else game_start
                game_end = info["game_time"]
                kills += [e for e in info["game_events"] if e["type"] == "kill" and e["killer_callsign"] == "red0"]
                done = terminated or truncated
            wall = time.monotonic() - wall
        assert kills, f"no kill in 60 game-s at warp 8: {env.status()}"
        assert game_end - game_start > 2.0 * wall, (game_end - game_start, wall)
        bzrec, rec = rec_dir / "episode-00001.bzrec", rec_dir / "episode-00001.rec"
        lines = [json.loads(x) for x in (rec_dir / "episode-00001.jsonl").read_text().splitlines()]
        assert lines[0]["recording"]["bzrec"] == bzrec.name and lines[0]["recording"]["rec"] == rec.name

        # The episode is over: both files are complete now, before close().
        for path in (bzrec, rec):
            events = replay_json(path, "--show", "all")
            red0 = [e for e in events if e.get("type") == "join" and e.get("callsign") == "red0"]
            assert red0, f"{path.name}: red0 never joins: {events[:20]}"
            me = red0[0]["id"]
            moves = [e for e in events if e.get("type") == "update" and e.get("id") == me]
            positions = {tuple(round(c) for c in e["pos"][:2]) for e in moves}
            assert len(positions) > 3, f"{path.name}: red0 does not move: {moves[:5]}"
            seen = [e for e in events if e.get("type") == "kill" and e.get("killer_callsign") == "red0"]
            assert len(seen) >= len(kills) - 1 >= 0 and seen, f"{path.name}: kills {seen} vs the env's {kills}"
            # Game time: the recording spans about the episode's 60 game-s, far more than the wall time.
            ts = [e["t"] for e in events if "t" in e]
            span = max(ts) - min(ts)
            assert 50.0 <= span <= 70.0 and span > 2.0 * wall, f"{path.name}: spans {span} s (wall {wall:.1f} s)"

        # A second episode: its own files, complete after close().
        obs, _ = env.reset()
        for _ in range(20):
            obs, *_ = env.step(env_scripted.policy(obs))
    finally:
        env.close()
    events = replay_json(rec_dir / "episode-00002.bzrec")
    assert any(e.get("type") == "join" and e.get("callsign") == "red0" for e in events)
    assert events[-1]["type"] == "closed", events[-3:]
    replay_json(rec_dir / "episode-00002.rec")

    # A real bzfs plays the first episode's .rec to a viewer.
    play = tmp_path / "play"
    play.mkdir()
    shutil.copy(rec, play / "ep.rec")
    server = Bzfs("-replay", "-passwd", "adm", "-recdir", f"{play}/")
    viewer = admin = None
    try:
        viewer = Bzadmin("viewer", server.addr)
        admin = Bzadmin("radmin", server.addr)
        assert admin.wait_for("radmin", 10), admin.output()
        say(admin, "/password adm")
        say(admin, "/replay load ep.rec")
        assert admin.wait_for("Loaded file:", 10), admin.output() + server.log()
        say(admin, "/replay play")
        # The first state block adds every player at once: the viewer sees the learning tank.
        assert viewer.wait_for("red0", 15), viewer.output() + server.log()
        for bad in ("ERROR", "Could not", "No valid data"):
            assert bad not in server.log() and bad not in admin.output(), server.log() + admin.output()
    finally:
        for p in (viewer, admin):
            if p is not None:
                p.stop()
        server.stop()


def test_the_vector_env_records_each_arena_and_the_cap_warns_without_stopping(tmp_path):
    """Two arenas, autoreset: files per arena and episode (the arena in the name); a cap far too small for an
    episode stops the recordings with a RuntimeWarning while the games go on. The recorders started by the last
    automatic reset, closed before they joined, leave no empty files."""
    rec_dir = tmp_path / "vec"
    env = bzhead.env.vector_env(
        2, opponents={"green": ["hunter", "hunter"]}, episode_seconds=10.0, warp=8.0, record=str(rec_dir),
        record_max_mib=0.008,
    )
    try:
        with pytest.warns(RuntimeWarning, match="recording .*(cap|MiB|bytes|stop)"):
            env.reset(seed=1)
            ended = 0
            for _ in range(130):
                _, _, terms, truncs, infos = env.step(env.action_space.sample())
                assert not any(infos["error"]), infos["error"]
                ended += int((terms | truncs).sum())
        assert ended >= 2
    finally:
        env.close()
    names = sorted(p.name for p in rec_dir.iterdir())
    for k in (0, 1):
        for n in (1, 2):
            for ext in ("bzrec", "rec"):
                assert f"episode-{n:05d}-arena{k}.{ext}" in names, names
    for path in rec_dir.glob("episode-*.*rec"):
        assert path.stat().st_size > 0, names
    # Cut at the cap, each file still reads back (whole records only) up to where it stopped.
    events = replay_json(rec_dir / "episode-00001-arena0.bzrec")
    assert any(e.get("type") == "accept" for e in events)
    for path in rec_dir.glob("episode-*.*rec"):
        assert path.stat().st_size <= 0.008 * (1 << 20), path
