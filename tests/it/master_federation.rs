//! Federation between two `bzhead monitor`s on loopback, with real peers: a real `bzfs` registers with monitor A's
//! BZFlag list server; monitor B reads A as a `[[master]]` upstream and serves the bzfs in its own `LIST` (plain and
//! JSON) exactly as A does, `bzhead scan` lists and queries it through B, B's API says where it comes from and tells
//! the bzhead bot on it (a robot player) from humans; when A dies, B keeps serving it and says the upstream is
//! stale.

use serde_json::{json, Value};

use crate::master_http::{list, scan_master, wait_until};
use crate::monitor::{Bot, MonitorProc};
use crate::support::plugins::real_plugin_dir;
use crate::support::{free_port, Bzfs, TempDir, WAIT};

/// The server of `protocol` at `address` in `/api/servers`.
fn api_server(m: &MonitorProc, protocol: &str, address: &str) -> Option<Value> {
    let v = m.json("/api/servers");
    v["servers"].as_array()?.iter().find(|s| s["protocol"] == protocol && s["address"] == address).cloned()
}

#[test]
fn a_bzfs_registered_upstream_is_served_downstream_as_registered_and_kept_while_the_upstream_is_dead() {
    let plugins = real_plugin_dir();
    let dir = TempDir::new("master-federation-bzflag");
    let a =
        MonitorProc::start(&dir.join("a.db"), &plugins, &["--allow-private".into(), "--interval".into(), "1".into()]);
    let a_url = format!("http://{}/db/", a.http);
    let port = free_port();
    let title = "bzhead federated bzfs";
    let bzfs = Bzfs::builder()
        .port(port)
        .args(["-publictitle", title, "-publickey", "x", "-noMasterBanlist"])
        .args(["-publicaddr".to_owned(), format!("127.0.0.1:{port}"), "-publiclist".to_owned(), a_url.clone()])
        .start();
    let nameport = format!("127.0.0.1:{port}");
    let line_of = |body: String| body.lines().find(|l| l.starts_with(&format!("{nameport} "))).map(str::to_owned);
    wait_until("bzfs listed by A", WAIT * 2, || line_of(list(a.http, "action=LIST")));
    // A bzhead bot plays on it: a robot player.
    let _bot = Bot::join(&bzfs, "fedbot");
    assert!(bzfs.wait_for_log("fedbot1", WAIT), "{}", bzfs.log());

    // B reads A as its upstream BZFlag list server.
    let config = dir.join("b.toml");
    std::fs::write(
        &config,
        format!("interval = 1\nallow_private = true\n[[master]]\nprotocol = \"bzflag-list\"\nurl = \"{a_url}\"\n"),
    )
    .unwrap();
    let b = MonitorProc::start(&dir.join("b.db"), &plugins, &["--config".into(), config.to_str().unwrap().into()]);
    // B's LIST line is A's, field for field (the gameinfo changes as players come and go: the two are read
    // together until B has caught up).
    let (a_line, b_line) = wait_until("B lists what A lists", WAIT * 3, || {
        let b_line = line_of(list(b.http, "action=LIST&version=BZFS0221"))?;
        let a_line = line_of(list(a.http, "action=LIST&version=BZFS0221"))?;
        (a_line == b_line).then_some((a_line, b_line))
    });
    let fields: Vec<&str> = b_line.splitn(5, ' ').collect();
    assert_eq!((fields[1], fields[3], fields[4]), ("BZFS0221", "127.0.0.1", title), "{b_line}");
    assert_eq!(fields[2].len(), 58, "gameinfo: {b_line}");
    assert_eq!(a_line, b_line);
    // The JSON LIST too.
    let row = |m: &MonitorProc| -> Option<Value> {
        let v: Value = serde_json::from_str(&list(m.http, "action=LIST&listformat=json")).ok()?;
        assert_eq!(v["fields"], json!(["addr", "version", "hexcode", "ipaddr", "title", "owner", "ownername"]));
        v["servers"].as_array()?.iter().find(|r| r[0] == nameport.as_str()).cloned()
    };
    let b_row = wait_until("B's JSON row is A's", WAIT * 2, || {
        let (x, y) = (row(&a)?, row(&b)?);
        (x == y).then_some(y)
    });
    assert_eq!((b_row[4].clone(), b_row[3].clone()), (title.into(), "127.0.0.1".into()), "{b_row}");

    // bzhead's own client reads B's list and queries the server.
    let results = scan_master(&plugins, &format!("http://{}/db/", b.http), "bzflag-list", "bzflag");
    let r = results.iter().find(|r| r["address"] == bzfs.addr().to_string());
    assert!(r.is_some_and(|r| r["ok"] == true), "{results:?}");

    // B's API: where the server comes from, and the bot told apart.
    let addr = bzfs.addr().to_string();
    let s = wait_until("B queried it with the bot on", WAIT * 2, || {
        api_server(&b, "bzflag", &addr).filter(|s| s["up"] == true && s["bots"] == 1)
    });
    crate::schemas::Schema::load("monitor-api").check(&b.json("/api/servers"));
    assert_eq!((s["humans"].clone(), s["players"].clone()), (0.into(), 1.into()), "{s}");
    let src = &s["source"];
    assert_eq!((src["registered"].clone(), src["upstreams"][0]["name"].clone()), (Value::Null, a_url.clone().into()));
    assert_eq!(src["upstreams"][0]["stale"], false, "{s}");
    assert!(src["listed_first"].as_i64().is_some_and(|f| src["listed_last"].as_i64() >= Some(f)), "{s}");
    // A's own API: registered there directly (A's rounds query the servers registered with it).
    let masters = a.json("/api/masters");
    let direct = masters["servers"].as_array().unwrap().iter().find(|s| s["address"] == nameport.as_str()).cloned();
    assert_eq!(direct.map(|d| d["direct"].clone()), Some("bzflag-list".into()), "{masters}");
    let s = wait_until("A queried it", WAIT * 2, || api_server(&a, "bzflag", &addr).filter(|s| s["up"] == true));
    assert_eq!(
        (s["source"]["registered"].clone(), s["source"]["upstreams"].clone()),
        ("bzflag-list".into(), json!([]))
    );
    assert!(s["source"]["listed_first"].is_i64(), "{s}");

    // A dies: B keeps serving the server, and says its upstream is stale.
    drop(a);
    let s = wait_until("stale upstream", WAIT * 2, || {
        api_server(&b, "bzflag", &addr).filter(|s| s["source"]["upstreams"][0]["stale"] == true)
    });
    assert_eq!(s["source"]["upstreams"][0]["name"], a_url.as_str(), "{s}");
    let kept = line_of(list(b.http, "action=LIST"));
    assert!(kept.as_deref().is_some_and(|l| l.ends_with(&format!(" 127.0.0.1 {title}"))), "{kept:?}");
    let m = b.json("/api/masters");
    crate::schemas::Schema::load("monitor-api").check(&m);
    let e = m["servers"].as_array().unwrap().iter().find(|s| s["address"] == addr).cloned().unwrap();
    assert_eq!((e["upstreams_stale"].clone(), e["direct"].clone()), (true.into(), Value::Null), "{e}");
    assert_eq!(e["bots"], 1, "{e}");
}
