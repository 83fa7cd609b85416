//! Issue 20, "one shape per fact": a player (and a team) of the stream's `state` events has the shape of
//! `/api/state`'s, as `docs/schemas/web-state.schema.json` describes it (the stream's player without `net`). On
//! `main` the stream said `az` and `wins`/`losses`/`tks` where the API said `azimuth` and `score{}`.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{api_players, api_state, bots, web_observer};
use crate::schemas::Schema;
use crate::support::Bzfs;

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
}

/// The first full `state` of a stream of server 0 that has players, as JSON.
fn first_full_state(addr: std::net::SocketAddr) -> Value {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    write!(s, "GET /events?server=0 HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("write");
    let (mut event, start) = (String::new(), Instant::now());
    for line in BufReader::new(s).lines().map_while(Result::ok) {
        assert!(start.elapsed() < Duration::from_secs(20), "no state in 20 s");
        if let Some(e) = line.strip_prefix("event: ") {
            event = e.to_string();
        } else if let Some(data) = line.strip_prefix("data: ") {
            if event == "state" {
                return serde_json::from_str(data).expect("state JSON");
            }
        }
    }
    panic!("the stream ended before a state");
}

#[test]
fn a_player_and_a_team_have_one_shape_in_the_stream_and_the_api() {
    let bzfs = Bzfs::builder().ctf().max_players("0,5,5,0,0,6").start();
    let _bots = bots("hunter", 2, &bzfs);
    let (_obs, addr) = web_observer(&[bzfs.host_port()], &[]);
    let start = Instant::now();
    while api_players(&api_state(addr, 0)).len() < 2 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let state = first_full_state(addr);
    let api = api_state(addr, 0);
    let stream_players = state["players"].as_array().expect("players");
    assert!(stream_players.len() >= 2, "{state}");
    let schema = Schema::load("web-state");
    for p in stream_players {
        let twin = api["players"].as_array().into_iter().flatten().find(|a| a["id"] == p["id"]).expect("in the API");
        let mut with_net = keys(p);
        with_net.insert("net".into());
        assert_eq!(with_net, keys(twin), "stream {p}\napi {twin}");
        assert!(p["azimuth"].is_number() && p["score"]["tks"].is_u64(), "{p}");
        // The stream's player, with its network figures, is a valid player of the schema.
        let mut doc = api.clone();
        let mut player = p.clone();
        player["net"] = Value::Null;
        doc["players"] = Value::Array(vec![player]);
        schema.check(&doc);
    }
    let stream_team = &state["teams"][0];
    let api_team = api["teams"].as_array().into_iter().flatten().find(|t| t["team"] == stream_team["team"]);
    let api_team = api_team.unwrap_or_else(|| panic!("no team {stream_team} in the API: {api}"));
    assert_eq!(keys(stream_team), keys(api_team), "stream {stream_team}\napi {api_team}");
}
