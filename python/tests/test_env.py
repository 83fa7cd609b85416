"""bzhead.env on a real private bzfs: the PettingZoo and Gymnasium API checkers, a scripted policy that kills a
sitter (rewards against the server's own kill messages), the vector form, and bad input."""

from __future__ import annotations

import time

import numpy as np
import pytest

import bzhead.env

import env_scripted  # python/examples/env_scripted.py (conftest puts python/examples on the path)


def test_the_parallel_env_passes_pettingzoo_s_api_test():
    from pettingzoo.test import parallel_api_test

    env = bzhead.env.parallel_env(teams={"red": 2}, opponents={"green": ["sitter"]}, episode_seconds=3.0)
    try:
        parallel_api_test(env, num_cycles=40)
        assert env.state().shape == env.state_space.shape
        assert env.state_space.contains(env.state())
    finally:
        env.close()


def test_the_gym_env_passes_gymnasium_s_env_checker(monkeypatch):
    from gymnasium.utils import env_checker

    # Every check but one: a live networked game cannot replay the same observations after two resets with the
    # same seed (bzfs picks spawn points, and the players' timing is the network's), so the step-determinism
    # check is left out; docs/env.md says what a seed does and does not fix.
    monkeypatch.setattr(env_checker, "check_step_determinism", lambda env, seed=123: None)
    check_env = env_checker.check_env
    env = bzhead.env.gym_env(opponents={"green": ["sitter"]}, episode_seconds=2.0, action_type="discrete")
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_a_scripted_policy_kills_a_sitter_and_the_rewards_match_the_server(open_world):
    env = bzhead.env.gym_env(
        opponents={"green": ["sitter"]}, world=open_world, mode="ffa", episode_seconds=45.0,
        rewards={"kill": 2.0, "death": -1.0},
    )
    try:
        obs, _ = env.reset(seed=3)
        assert env.observation_space.contains(obs)
        kills_rewarded, total, server_kills, missed = 0, 0.0, 0, 0
        done = False
        while not done and kills_rewarded < 2:
            obs, reward, terminated, truncated, info = env.step(env_scripted.policy(obs))
            assert "error" not in info, info
            total += reward
            kills_rewarded += sum(1 for e in info["events"] if e["kind"] == "kill")
            assert reward == sum(e["reward"] for e in info["events"])
            server_kills += sum(
                1 for e in info["game_events"]
                if e["type"] == "kill" and e["killer_callsign"] == "red0" and e["victim_callsign"].startswith("sitter")
            )
            missed = info["missed_decisions_total"]
            done = terminated or truncated
        assert kills_rewarded >= 1, f"no kill in 45 game-s: {env.status()}"
        # Every rewarded kill is one of the server's kill messages, and the bot host counted the same.
        assert server_kills == kills_rewarded
        assert env.status()["red0"][1] == kills_rewarded
        deaths = env.status()["red0"][2]
        assert total == pytest.approx(2.0 * kills_rewarded - 1.0 * deaths)
        assert missed < 50  # a policy this fast keeps up with 10 decisions a game-second (counted, not hidden)
        log = env.server_log().lower()
        assert "kicked" not in log
    finally:
        env.close()


def test_a_warped_game_plays_eight_game_seconds_a_second_and_scores(open_world):
    """warp=8: the private bzfs under faketime, the event loop on its scaled clock; the same scripted policy kills
    the sitter, the game runs at least 4 game-seconds per wall-second, and bzfs logs no kick or lag warning."""
    import time

    env = bzhead.env.gym_env(
        opponents={"green": ["sitter"]}, world=open_world, mode="ffa", episode_seconds=60.0, warp=8.0,
    )
    try:
        obs, _ = env.reset(seed=5)
        start, game_start, game_now, kills, done = time.monotonic(), None, None, 0, False
        while not done and kills < 2:
            obs, _, terminated, truncated, info = env.step(env_scripted.policy(obs))
            assert "error" not in info, info
            game_now = info["game_time"]
            game_start = game_now if game_start is None else game_start
            kills += sum(1 for e in info["events"] if e["kind"] == "kill")
            done = terminated or truncated
        wall = time.monotonic() - start
        assert kills >= 1, f"no kill in 60 game-s at warp 8: {env.status()}"
        assert game_now - game_start >= 4.0 * wall, (game_now - game_start, wall)
        log = env.server_log().lower()
        for word in ("kicked", "jitter", "too high", "without reaching"):
            assert word not in log, log
    finally:
        env.close()


def test_bad_actions_are_refused_with_clear_errors():
    env = bzhead.env.parallel_env(teams={"red": 2}, opponents={}, episode_seconds=5.0)
    try:
        env.reset(seed=0)
        ok = np.zeros(5, dtype=np.float32)
        with pytest.raises(ValueError, match=r"red0.*speed.*outside"):
            env.step({"red0": np.array([2.0, 0, 0, 0, 0]), "red1": ok})
        with pytest.raises(ValueError, match=r"red1.*turn.*NaN"):
            env.step({"red0": ok, "red1": np.array([0.0, np.nan, 0, 0, 0])})
        with pytest.raises(ValueError, match=r"red0.*shape \(5,\).*\(3,\)"):
            env.step({"red0": np.zeros(3), "red1": ok})
        with pytest.raises(ValueError, match=r"no action for \['red1'\]"):
            env.step({"red0": ok})
        with pytest.raises(ValueError, match=r"not in the game"):
            env.step({"red0": ok, "red1": ok, "blue7": ok})
        with pytest.raises(ValueError, match="warp"):
            bzhead.env.parallel_env(teams={"red": 1}, warp=100.0)
        with pytest.raises(ValueError, match="warp"):
            bzhead.env.parallel_env(teams={"red": 1}, warp=float("nan"))
        with pytest.raises(ValueError, match="unknown reward"):
            bzhead.env.parallel_env(teams={"red": 1}, rewards={"kills": 1.0})
        # After refused steps the episode goes on.
        _, rewards, _, truncs, _ = env.step({"red0": ok, "red1": ok})
        assert set(rewards) == {"red0", "red1"} and not any(truncs.values())
    finally:
        env.close()


def test_a_private_server_that_dies_mid_episode_truncates_the_episode():
    env = bzhead.env.parallel_env(teams={"red": 1}, opponents={}, episode_seconds=60.0)
    try:
        env.reset(seed=0)
        env.step({"red0": np.zeros(5, dtype=np.float32)})
        env._s.arenas[0].private.proc.kill()
        start = time.monotonic()
        truncated, info = False, {}
        for _ in range(200):
            _, _, terms, truncs, infos = env.step({"red0": np.zeros(5, dtype=np.float32)})
            if truncs["red0"]:
                truncated, info = True, infos["red0"]
                break
        assert truncated and "error" in info, info
        assert "bzfs exited" in info["error"] or "left the game" in info["error"], info
        assert time.monotonic() - start < 15.0
        assert env.agents == []
        # reset() starts a fresh private server.
        obs, _ = env.reset()
        assert obs["red0"].shape == env.observation_space("red0").shape
    finally:
        env.close()


def test_the_vector_env_runs_several_games_on_one_loop():
    venv = bzhead.env.vector_env(2, opponents={"green": ["sitter"]}, episode_seconds=1.0)
    try:
        obs, _ = venv.reset(seed=1)
        assert obs.shape == (2, venv.single_observation_space.shape[0]) and obs.dtype == np.float32
        ended = np.zeros(2, dtype=bool)
        for _ in range(12):
            obs, rewards, terms, truncs, infos = venv.step(venv.action_space.sample())
            assert obs.shape[0] == 2 and rewards.shape == (2,)
            ended |= truncs
        # 1 game-second at 10 decisions a second: each game's episode was truncated (and went on, autoreset).
        assert ended.all()
        assert len(set(venv._s.arenas[k].addr for k in range(2))) == 2
    finally:
        venv.close()
