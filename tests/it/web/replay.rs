//! `bzhead replay FILE --web`: a real bzfs recording (14 bots, CTF, state blocks every 10 s) in the web view, in
//! real headless Chromium: a seek through the page's control bar shows the players where `bzhead replay FILE
//! --json` has them at that time; 64x plays the recording in about 1/64 of its length; bad commands are a 400.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::chromium::Browser;
use super::{http_get, Spawned};
use crate::support::bzhead;

const REC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/recordings/bzfs-2.4.26-ctf-14-bots.rec");

/// `bzhead replay FILE --web 127.0.0.1:0`, once its view is up: the process and the view's address.
fn web_replay(file: &str) -> (Spawned, SocketAddr) {
    let p = Spawned::start(bzhead(["replay", file, "--web", "127.0.0.1:0"]));
    let ok = p.wait_for(false, Duration::from_secs(20), |s| s.contains("web view on http://"));
    assert!(ok, "no web view URL\nstderr:\n{}", p.stderr());
    let err = p.stderr();
    let url = err.split("web view on http://").nth(1).and_then(|r| r.split('/').next()).expect("url");
    (p, url.parse().expect("address"))
}

/// `GET /api/replay?QUERY`: the status and the body.
fn replay_api(addr: SocketAddr, query: &str) -> (u16, String) {
    let (status, _, body) = http_get(addr, &format!("/api/replay?{query}"));
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// `GET /api/replay?QUERY` as JSON, checked against `docs/schemas/web-state.schema.json`'s `$defs/replay`.
fn replay_json(addr: SocketAddr, query: &str) -> Value {
    let (status, body) = replay_api(addr, query);
    assert_eq!(status, 200, "{query}: {body}");
    let v: Value = serde_json::from_str(&body).expect("replay JSON");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schemas/web-state.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("schema JSON");
    let replay = serde_json::json!({"$ref": "#/$defs/replay", "$defs": schema["$defs"]});
    let validator = jsonschema::validator_for(&replay).expect("valid schema");
    assert!(validator.is_valid(&v), "{v} does not match $defs/replay");
    v
}

/// Where each living player is at `t` by `bzhead replay FILE --json`: its last update at most 2 s before, moved
/// on along its velocity.
fn positions_at(file: &str, t: f64) -> HashMap<u64, [f64; 2]> {
    let out = bzhead(["replay", file, "--json", "--show", "update"]).output().expect("run bzhead replay");
    assert!(out.status.success());
    let mut last: HashMap<u64, Value> = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        let at = v["t"].as_f64().unwrap_or(f64::MAX);
        if at > t {
            break;
        }
        match v["type"].as_str() {
            Some("update") => {
                last.insert(v["id"].as_u64().unwrap_or(999), v);
            }
            // Killed or gone since its last update: not drawn.
            Some("kill") => {
                last.remove(&v["victim"].as_u64().unwrap_or(999));
            }
            Some("leave") => {
                last.remove(&v["id"].as_u64().unwrap_or(999));
            }
            _ => {}
        }
    }
    last.into_iter()
        .filter(|(_, u)| u["alive"] == true && t - u["t"].as_f64().unwrap_or(0.0) <= 2.0)
        .map(|(id, u)| {
            // On the arc of its velocity and angular velocity (the dead reckoning of a BZFlag client).
            let dt = t - u["t"].as_f64().unwrap_or(0.0);
            let f = |x: &Value, i: usize| x[i].as_f64().unwrap_or(0.0);
            let (p, v, w) = (&u["pos"], &u["vel"], u["ang_vel"].as_f64().unwrap_or(0.0));
            if w.abs() < 1e-4 {
                return (id, [f(p, 0) + f(v, 0) * dt, f(p, 1) + f(v, 1) * dt]);
            }
            let (s, c) = ((w * dt).sin(), 1.0 - (w * dt).cos());
            (id, [f(p, 0) + (f(v, 0) * s - f(v, 1) * c) / w, f(p, 1) + (f(v, 1) * s + f(v, 0) * c) / w])
        })
        .collect()
}

/// The living tanks as the page draws them now: id, x, y.
const TANKS_JS: &str = r#"JSON.stringify((() => {
  const now = pageNow(performance.now());
  return [...players.values()].filter((e) => e.p.alive && e.p.team !== "observer")
    .map((e) => { const [x, y] = tankAt(e, now); return [e.p.id, x, y]; });
})())"#;

#[test]
fn chromium_seeks_a_bzfs_recording_and_plays_it_at_64x() {
    let (_p, addr) = web_replay(REC);
    let start = replay_json(addr, "");
    let duration = start["duration"].as_f64().expect("duration");
    assert!((34.0..36.0).contains(&duration), "the recording is 34.9 s long: {start}");
    assert_eq!((start["playing"].as_bool(), start["t"].as_f64()), (Some(false), Some(0.0)), "starts paused at 0");

    let mut b = Browser::open(&format!("http://{addr}/"), 1280, 900);
    let (v, ok) = b.wait_for(
        "!!(replay && world && state && !document.getElementById('replaybar').hidden)",
        Duration::from_secs(30),
        |v| v == &Value::Bool(true),
    );
    assert!(ok, "the replay bar never showed: {v}");

    // Seek with the page's own control bar (paused): between two state blocks (10 s apart), so the scene is
    // rebuilt from the block at 10 s and the packets after it.
    let t = 17.3;
    b.eval(&format!("(() => {{ const e = $('rseek'); e.value = '{t}'; e.dispatchEvent(new Event('change')); }})()"));
    let (v, ok) = b.wait_for(
        &format!("!!(state && state.full && Math.abs(state.t - {t}) < 0.01 && replay.seeks === 1 && players.size > 0)"),
        Duration::from_secs(20),
        |v| v == &Value::Bool(true),
    );
    assert!(ok, "the page never showed the state at {t} s: {v}");
    let status = replay_json(addr, "");
    assert_eq!((status["t"].as_f64(), status["seeks"].as_u64()), (Some(t), Some(1)), "{status}");
    let page: Vec<(u64, f64, f64)> = serde_json::from_str(b.eval(TANKS_JS).as_str().unwrap_or("[]")).expect("tanks");
    let want = positions_at(REC, t);
    let mut compared = 0;
    for (id, x, y) in &page {
        let Some(w) = want.get(id) else { continue };
        let d = ((x - w[0]).powi(2) + (y - w[1]).powi(2)).sqrt();
        assert!(d < 3.0, "player {id} drawn at ({x:.1}, {y:.1}), the recording has it at ({:.1}, {:.1})", w[0], w[1]);
        compared += 1;
    }
    assert!(compared >= 6, "too few players compared ({compared}): page {page:?}, recording {want:?}");
    let png = b.screenshot();
    assert!(png.starts_with(b"\x89PNG"), "a screenshot");
    let _ = std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/target/web-replay.png"), &png);
    // Paused: the page stays at the time sought.
    std::thread::sleep(Duration::from_millis(500));
    let rtime = b.eval("document.getElementById('rtime').textContent");
    assert!(rtime.as_str().is_some_and(|s| s.starts_with("17.3 /")), "paused page moved on: {rtime}");

    // A bad command is a 400 that changes nothing.
    for q in [
        "seek=1e9",
        "seek=-1",
        "seek=abc",
        "seek=NaN",
        "speed=100",
        "speed=0.1",
        "speed=abc",
        "speed=inf",
        "cmd=rewind",
    ] {
        let (status, body) = replay_api(addr, q);
        assert_eq!(status, 400, "{q}: {body}");
        let what = q.split('=').next().unwrap_or("");
        assert!(body.contains(&format!("{what} must be")), "{q}: {body}");
    }
    let same = replay_json(addr, "");
    assert_eq!((same["t"].as_f64(), same["seeks"].as_u64(), same["speed"].as_f64()), (Some(t), Some(1), Some(1.0)));

    // 64x from the start: the whole recording in about duration / 64 (0.55 s), loosely.
    let began = Instant::now();
    let playing = replay_json(addr, "speed=64&seek=0&cmd=play");
    assert_eq!((playing["playing"].as_bool(), playing["speed"].as_f64()), (Some(true), Some(64.0)), "{playing}");
    let ended = loop {
        let s = replay_json(addr, "");
        if s["ended"] == true || began.elapsed() > Duration::from_secs(30) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = began.elapsed().as_secs_f64();
    assert_eq!((ended["ended"].as_bool(), ended["playing"].as_bool()), (Some(true), Some(false)), "{ended}");
    let expect = duration / 64.0;
    assert!(
        took > expect * 0.5 && took < expect * 8.0,
        "64x took {took:.2} s for {duration:.1} s (expected ~{expect:.2})"
    );
    let (v, ok) = b.wait_for("document.getElementById('rtime').textContent", Duration::from_secs(10), |v| {
        v.as_str().is_some_and(|s| s.starts_with(&format!("{duration:.1} /")))
    });
    assert!(ok, "the page did not show the end: {v}");
}
