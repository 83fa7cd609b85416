"""bzhead.env and a policy that does not keep up: a slow policy's missed decisions are counted in `info` (never
silently stretched), and an agent that does not step for a long while finds its game still there, its missed
decisions counted, without a hang or a kick."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import bzhead.env

STILL = np.zeros(5, dtype=np.float32)


def test_a_policy_slower_than_the_game_is_counted_in_info():
    # 10 decisions a game-second: a policy that takes 0.35 s a decision misses about three of every four.
    env = bzhead.env.parallel_env(teams={"red": 1}, opponents={}, decision_hz=10.0, episode_seconds=60.0)
    try:
        env.reset(seed=0)
        _, _, _, _, infos = env.step({"red0": STILL})
        assert infos["red0"]["missed_decisions"] == 0, infos
        t0 = infos["red0"]["game_time"]
        missed = []
        for _ in range(4):
            time.sleep(0.35)
            _, _, _, truncs, infos = env.step({"red0": STILL})
            assert not truncs["red0"], infos
            missed.append(infos["red0"]["missed_decisions"])
        # Every late step says how many decisions went by, and the total adds them up.
        assert all(m >= 2 for m in missed), missed
        assert infos["red0"]["missed_decisions_total"] == sum(missed)
        # The game's clock went on with the wall clock: the decision times say so (not one period per step).
        elapsed = infos["red0"]["game_time"] - t0
        assert elapsed >= 4 * 0.3, (elapsed, missed)
    finally:
        env.close()


def test_an_agent_that_does_not_step_for_a_while_finds_its_game_still_there():
    env = bzhead.env.parallel_env(teams={"red": 1}, opponents={"green": ["sitter"]}, episode_seconds=120.0)
    try:
        env.reset(seed=0)
        env.step({"red0": STILL})
        time.sleep(20.0)
        start = time.monotonic()
        _, _, terms, truncs, infos = env.step({"red0": STILL})
        # The step comes back at once (the next decision is due), with the gap counted and the tank in the game.
        assert time.monotonic() - start < 5.0
        assert not terms["red0"] and not truncs["red0"], infos
        assert "error" not in infos["red0"], infos
        assert infos["red0"]["missed_decisions"] >= 150, infos
        for _ in range(20):
            _, _, _, truncs, infos = env.step({"red0": STILL})
            assert not truncs["red0"], infos
        status = env._s.core.status()
        assert status["red0"][0] == "joined", status
    finally:
        env.close()


def _children(pid: int) -> list:
    """The pids whose parent is `pid` (from /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(d))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_warped_private_server_is_gone_after_close():
    # Under warp the private bzfs is faketime's child: close() ends both, not only faketime.
    env = bzhead.env.parallel_env(teams={"red": 1}, opponents={}, warp=8.0, episode_seconds=10.0)
    try:
        env.reset(seed=0)
        env.step({"red0": STILL})
        wrapper = env._s.arenas[0].private.proc.pid
        servers = _children(wrapper)
        assert servers and all(_alive(p) for p in servers), servers
    finally:
        env.close()
    deadline = time.monotonic() + 5.0
    while any(_alive(p) for p in servers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in servers), f"bzfs {servers} still runs after close()"


def test_a_learner_the_server_refuses_fails_the_reset_at_once():
    # Room for one red tank: the second learner is refused while joining. reset() says so when that happens,
    # not after its ready_timeout.
    env = bzhead.env.parallel_env(
        teams={"red": 2}, opponents={}, server_options=["-mp", "0,1,0,0,0,2"], ready_timeout=60.0
    )
    try:
        start = time.monotonic()
        with pytest.raises(RuntimeError, match=r"did not get into the game: \['red1'\]"):
            env.reset(seed=0)
        assert time.monotonic() - start < 30.0
    finally:
        env.close()
