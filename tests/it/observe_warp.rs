//! `bzhead observe --time-scale K` on a real `bzfs` that runs K times as fast as real time (under libfaketime, as
//! in `warp.rs`): `--for`, the event times and the recording are game time; the scale is checked as `bot` checks
//! it.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{bzhead, run_bzhead, Bzfs, TempDir};

/// The `t` of every JSON line of `text`.
fn times(text: &str) -> Vec<f64> {
    text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter_map(|v| v["t"].as_f64()).collect()
}

#[test]
fn observe_at_time_scale_8_keeps_game_time() {
    let bzfs = Bzfs::builder().time_scale(8.0).start();
    let dir = TempDir::new("observe-warp");
    let record = dir.join("warped.bzrec");
    let server = bzfs.addr().to_string();
    // A witness on real time, started first with the same --for: 2 s of wall time, which the observer at time
    // scale 8 must not need (a reading of --for, or of the clock, in wall time would outlast it).
    let mut witness = bzhead(["observe", "--callsign", "witness", "--for", "2", "--no-cache", &server])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the witness");
    let wall = Instant::now();
    let out = run_bzhead(
        [
            "observe",
            "--time-scale",
            "8",
            "--for",
            "2",
            "--json",
            "--no-cache",
            "--record",
            record.to_str().expect("path"),
            &server,
        ],
        Duration::from_secs(30),
    );
    let wall = wall.elapsed();
    let witness_done = witness.try_wait().expect("witness").is_some();
    let _ = witness.kill();
    let _ = witness.wait();
    assert_eq!(out.code, Some(0), "{}", out.describe());
    assert!(!witness_done, "2 game-s at time scale 8 took longer than 2 wall-s ({wall:?}):\n{}", out.describe());
    let t = times(&out.stdout);
    assert!(out.stdout.contains("\"type\":\"accept\""), "{}", out.describe());
    let last = t.iter().copied().fold(0.0, f64::max);
    // 2 game seconds, then the clean leave: a reading of --for in wall seconds would last 16 game seconds.
    assert!((1.9..=2.5).contains(&last), "last t {last} (wall {wall:?}):\n{}", out.describe());
    assert!(wall < Duration::from_secs(20), "{wall:?}");

    // The recording is on the same clock: its replay ends at the same game time.
    let replay = run_bzhead(["replay", "--json", record.to_str().expect("path")], Duration::from_secs(30));
    assert_eq!(replay.code, Some(0), "{}", replay.describe());
    let rlast = times(&replay.stdout).into_iter().fold(0.0, f64::max);
    assert!((last - rlast).abs() < 0.3, "live {last}, replayed {rlast}:\n{}", replay.describe());
}

#[test]
fn observe_checks_the_time_scale_as_bot_does() {
    for k in ["0", "65", "nan", "-1"] {
        let arg = format!("--time-scale={k}");
        let ours = run_bzhead(["observe", &arg, "127.0.0.1:9"], Duration::from_secs(10));
        let bots = run_bzhead(["bot", "sitter", &arg, "127.0.0.1:9"], Duration::from_secs(10));
        assert_eq!(ours.code, Some(2), "{}", ours.describe());
        assert_eq!(bots.code, Some(2), "{}", bots.describe());
        // The same message, from the same check.
        let why = |s: &str| s.lines().find(|l| l.contains("--time-scale")).map(str::to_string);
        assert!(why(&ours.stderr).is_some(), "{}", ours.describe());
        assert_eq!(why(&ours.stderr), why(&bots.stderr));
    }
    let web = run_bzhead(["observe", "--time-scale", "8", "--web", "0", "127.0.0.1:9"], Duration::from_secs(10));
    assert_eq!(web.code, Some(2), "{}", web.describe());
}
