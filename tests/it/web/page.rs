//! The page in real headless Chromium: an observer watching a real bzfs where bzhead bots play.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::chromium::Browser;
use super::{api_players, api_state, bots, bzfquery_players, web_observer};
use crate::support::Bzfs;

const PLAYERS_JS: &str = r#"JSON.stringify({
  rows: [...document.querySelectorAll('#scoreboard tbody tr td.callsign')].map(td => td.textContent).sort(),
  drawn: JSON.parse(document.getElementById('overlay').dataset.drawn || '[]'),
  status: document.getElementById('status').textContent,
  map: !document.getElementById('map').hidden && document.getElementById('map').complete
       && document.getElementById('map').naturalWidth > 0,
  feed: document.querySelectorAll('#feed li.kill').length,
  html: document.querySelectorAll('#scoreboard tbody b, #scoreboard tbody script').length,
})"#;

fn page_state(b: &mut Browser) -> Value {
    let v = b.eval(PLAYERS_JS);
    serde_json::from_str(v.as_str().unwrap_or("{}")).unwrap_or(Value::Null)
}

#[test]
fn chromium_shows_the_scoreboard_and_the_tanks_of_a_real_game() {
    // The project's custom world: boxes, pyramids, teleporters with links, a group, bases, a world weapon.
    let world = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/bzflag/custom-world.bzw");
    let bzfs = Bzfs::builder().ctf().jumping().ricochet().max_shots(3).world(world).max_players("0,5,5,0,0,6").start();
    let _bots = bots("capper,hunter,defender", 6, &bzfs);
    let (obs, addr) = web_observer(&[bzfs.host_port()], &[]);
    // Every bot is in and alive (bzfs' roster through bzfquery).
    let start = Instant::now();
    let mut roster = Vec::new();
    while start.elapsed() < Duration::from_secs(90) {
        roster = bzfquery_players(&bzfs);
        if roster.len() == 6 {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(roster.len(), 6, "bzfs has {roster:?}\n{}", bzfs.log());
    let mut browser = Browser::open(&format!("http://{addr}/"), 1400, 860);
    let (v, ok) = browser.wait_for(PLAYERS_JS, Duration::from_secs(60), |v| {
        let s: Value = serde_json::from_str(v.as_str().unwrap_or("{}")).unwrap_or(Value::Null);
        s["rows"].as_array().is_some_and(|r| r.len() == roster.len())
            && s["drawn"].as_array().is_some_and(|d| d.len() == roster.len())
            && s["map"] == true
            && s["status"] == "live"
    });
    assert!(ok, "the page never showed the game: {v}\nobserver stderr:\n{}", obs.stderr());
    let s = page_state(&mut browser);
    // The scoreboard lists exactly the players bzfs has (asked again now, in case the roster moved).
    let roster = bzfquery_players(&bzfs);
    let rows: Vec<String> = s["rows"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect();
    assert_eq!(rows, roster, "scoreboard vs bzfquery");
    let drawn: Vec<String> = s["drawn"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect();
    assert_eq!(drawn, roster, "tanks drawn on the map vs bzfquery");
    assert_eq!(api_players(&api_state(addr, 0)), roster, "/api/state vs bzfquery");
    // The map the page shows: the world's meshes (a meshbox, an arc, a cone, a sphere, a tetrahedron and a mesh) are
    // outlines, not filled shapes.
    let (status, _, svg) = super::http_get(addr, "/map.svg?server=0");
    assert_eq!(status, 200);
    let svg = String::from_utf8_lossy(&svg);
    let outlines: Vec<&str> = svg.lines().filter(|l| l.contains("class=\"outline\"")).collect();
    assert_eq!(outlines.len(), 6, "{svg}");
    assert!(outlines.iter().all(|l| l.starts_with("<path ") && l.contains("fill=\"none\"")), "{outlines:?}");
    // The world's guided-missile weapon fires every few seconds: the page flies its missiles between states.
    let missiles_js = "Number(document.getElementById('overlay').dataset.missiles || 0)";
    let (v, ok) = browser.wait_for(missiles_js, Duration::from_secs(40), |v| v.as_f64().unwrap_or(0.0) >= 1.0);
    assert!(ok, "no guided missile drawn: {v}\n{}", bzfs.log());
    // Let a few kills happen for the feed, then the screenshot for the docs, with every tank on the map if they
    // are all alive at once within a while.
    let kills_js = |v: &Value, all: bool| {
        let s: Value = serde_json::from_str(v.as_str().unwrap_or("{}")).unwrap_or(Value::Null);
        s["feed"].as_u64().unwrap_or(0) >= 3 && (!all || s["drawn"].as_array().is_some_and(|d| d.len() == 6))
    };
    let (_, all) = browser.wait_for(PLAYERS_JS, Duration::from_secs(90), |v| kills_js(v, true));
    if !all {
        let (v, kills) = browser.wait_for(PLAYERS_JS, Duration::from_secs(30), |v| kills_js(v, false));
        assert!(kills, "no kills in the page's feed: {v}\n{}", bzfs.log());
    }
    assert_eq!(page_state(&mut browser)["html"], 0, "markup in the scoreboard");
    let png = browser.screenshot();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000, "screenshot of {} bytes", png.len());
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/web-view.png");
    std::fs::write(&path, &png).expect("write the screenshot");
    eprintln!("screenshot: {}", path.display());
    if std::env::var_os("BZHEAD_UPDATE_DOCS").is_some() {
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/web-view.png");
        std::fs::write(&docs, &png).expect("write docs/web-view.png");
    }
}

#[test]
fn reconnect_across_a_bzfs_restart_with_a_browser_connected() {
    let mut bzfs = Bzfs::builder().ctf().max_players("0,5,5,0,0,6").start();
    let (obs, addr) = web_observer(&[bzfs.host_port()], &["--reconnect"]);
    let mut browser = Browser::open(&format!("http://{addr}/"), 1200, 800);
    let status_js = "document.getElementById('status').textContent";
    let (v, ok) = browser.wait_for(status_js, Duration::from_secs(60), |v| v == "live");
    assert!(ok, "never live: {v}\n{}", obs.stderr());
    let log = bzfs.kill_now();
    let (v, ok) = browser.wait_for(status_js, Duration::from_secs(60), |v| v == "reconnecting");
    assert!(ok, "the page never said reconnecting: {v}\n{}\n{log}", obs.stdout());
    bzfs.restart(Duration::from_secs(20));
    let (v, ok) = browser.wait_for(status_js, Duration::from_secs(90), |v| v == "live");
    assert!(ok, "the page never came back: {v}\nstdout:\n{}\nstderr:\n{}", obs.stdout(), obs.stderr());
    // The page goes live in the turn the observer is accepted again; its stdout line comes through a pipe.
    let said = obs.wait_for(true, Duration::from_secs(20), |out| out.contains("--- reconnected"));
    assert!(said, "{}", obs.stdout());
    // The game after the restart reaches the same page: bots that join now are on its scoreboard.
    let _bots = bots("hunter", 2, &bzfs);
    let (v, ok) = browser.wait_for(PLAYERS_JS, Duration::from_secs(60), |v| {
        let s: Value = serde_json::from_str(v.as_str().unwrap_or("{}")).unwrap_or(Value::Null);
        s["rows"].as_array().is_some_and(|r| r.len() == 2) && s["drawn"].as_array().is_some_and(|d| d.len() == 2)
    });
    assert!(ok, "the bots of the restarted server never showed: {v}\n{}", bzfs.log());
}

#[test]
fn two_servers_in_one_process_one_tab_each() {
    let a = Bzfs::builder().ctf().max_players("0,5,5,0,0,6").start();
    let b = Bzfs::builder().ctf().max_players("0,5,5,0,0,6").start();
    let _bots_a = bots("hunter", 2, &a);
    let _bots_b = bots("capper", 4, &b);
    let (obs, addr) = web_observer(&[a.host_port(), b.host_port()], &[]);
    let (status, _, body) = super::http_get(addr, "/api/servers");
    assert_eq!(status, 200);
    let list: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(list["servers"].as_array().map(Vec::len), Some(2), "{list}");
    assert_eq!(list["servers"][1]["address"], b.addr().to_string());
    let mut browser = Browser::open(&format!("http://{addr}/"), 1200, 800);
    let rows = |n: usize| {
        move |v: &Value| {
            let s: Value = serde_json::from_str(v.as_str().unwrap_or("{}")).unwrap_or(Value::Null);
            s["rows"].as_array().is_some_and(|r| r.len() == n)
        }
    };
    let (v, ok) = browser.wait_for(PLAYERS_JS, Duration::from_secs(60), rows(2));
    assert!(ok, "first tab: {v}\n{}", obs.stderr());
    browser.eval("document.querySelectorAll('#tabs button')[1].click()");
    let (v, ok) = browser.wait_for(PLAYERS_JS, Duration::from_secs(60), rows(4));
    assert!(ok, "second tab: {v}\n{}", obs.stderr());
    assert_eq!(api_players(&api_state(addr, 1)), bzfquery_players(&b));
    assert_eq!(api_players(&api_state(addr, 0)), bzfquery_players(&a));
    // Both observers' events are printed, each line saying which server it is about.
    let out = obs.stdout();
    assert!(out.contains(&format!("[{}] --- joined the game", a.host_port())), "{out}");
    assert!(out.contains(&format!("[{}] --- joined the game", b.host_port())), "{out}");
}
