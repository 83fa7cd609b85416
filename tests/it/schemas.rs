//! Every JSON bzhead prints validates against its schema in `docs/schemas/` (JSON Schema draft 2020-12, checked with
//! the `jsonschema` crate): real output of real peers the tests start (bzfs and bzhead bots and observers, DDNet,
//! OpenArena), not hand-made samples. And the event schema lists exactly bzhead's event types, so a new event type
//! without its schema entry fails here even before any server sends it.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use bzhead::bot::BotEvent;
use bzhead::bzflag::consts::{FlagStatus, PlayerStatus, PlayerType, RejectCode, Team};
use bzhead::bzflag::event::{Event, FlagEvent, QueryPlayer};
use bzhead::bzflag::msg::{Abbv, FiringInfo, GameSettings, PlayerUpdate, QueryGameInfo, TeamInfo};
use bzhead::bzflag::netstats::{DrError, PlayerNet};
use bzhead::netwatch;
use bzhead::observer::json_line;
use serde_json::Value;

use crate::support::fake::silent;
use crate::support::gameservers::GameServer;
use crate::support::plugins::{plugin_dir_with, MISBEHAVE_PLUGINS, REAL_PLUGINS};
use crate::support::{run_bzhead, Bzadmin, Bzfs, RunOutput, TempDir, WAIT};

/// Line types the command line prints besides the engine's events (`bzhead bot`, `observe --count`,
/// `observe --netstats`, `observe --reconnect`).
const CLI_TYPES: &[&str] = &["bot", "observer_joined", "all_joined", "netstats", "link", "reconnecting", "reconnected"];

fn schema_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schemas").join(format!("{name}.schema.json"))
}

fn schema(name: &str) -> Value {
    let p = schema_path(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A validator of `docs/schemas/<name>.schema.json` (also used by the web view's and the monitor's tests on the
/// answers they fetch).
pub(crate) struct Schema {
    name: &'static str,
    validator: jsonschema::Validator,
}

impl Schema {
    pub(crate) fn load(name: &'static str) -> Schema {
        let s = schema(name);
        assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema", "{name}");
        let validator = jsonschema::validator_for(&s).unwrap_or_else(|e| panic!("{name}.schema.json is invalid: {e}"));
        Schema { name, validator }
    }

    /// Fails the test with every error when `v` does not validate.
    #[track_caller]
    pub(crate) fn check(&self, v: &Value) {
        let errors: Vec<String> = self
            .validator
            .iter_errors(v)
            .map(|e| format!("at {} (schema {}): {e}", e.instance_path(), e.schema_path()))
            .collect();
        let text = v.to_string();
        let cut = (0..=text.len().min(400)).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        let head = &text[..cut];
        assert!(
            errors.is_empty(),
            "{head} does not validate against {}.schema.json:\n{}",
            self.name,
            errors.join("\n")
        );
    }

    /// Parses and checks every line of `out` (at least one); returns them.
    #[track_caller]
    fn check_lines(&self, out: &RunOutput) -> Vec<Value> {
        let lines: Vec<Value> = out
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{}", out.describe())))
            .collect();
        assert!(!lines.is_empty(), "no JSON output:\n{}", out.describe());
        for v in &lines {
            self.check(v);
        }
        lines
    }
}

fn types(lines: &[Value]) -> BTreeSet<String> {
    lines.iter().filter_map(|v| v["type"].as_str().map(String::from)).collect()
}

/// The name of each bot event (exhaustive: a new `BotEvent` does not compile here until it is named, and then
/// [`the_event_schema_lists_every_event_type`] wants its schema entry).
fn bot_event_name(e: &BotEvent) -> &'static str {
    match e {
        BotEvent::Connecting { .. } => "connecting",
        BotEvent::Joined { .. } => "joined",
        BotEvent::Spawned { .. } => "spawned",
        BotEvent::Died { .. } => "died",
        BotEvent::Killed { .. } => "killed",
        BotEvent::Grabbed { .. } => "grabbed",
        BotEvent::Captured { .. } => "captured",
        BotEvent::Unreachable { .. } => "unreachable",
        BotEvent::Stuck { .. } => "stuck",
        BotEvent::Disconnected { .. } => "disconnected",
        BotEvent::Yielded { .. } => "yielded",
        BotEvent::Left => "left",
        BotEvent::Stopped { .. } => "stopped",
    }
}

fn every_bot_event() -> Vec<BotEvent> {
    vec![
        BotEvent::Connecting { attempt: 2 },
        BotEvent::Joined { id: 3, team: Team::Red },
        BotEvent::Spawned { pos: [1.0, -2.5, 0.0] },
        BotEvent::Died { killer: 4, reason: "shot".into() },
        BotEvent::Killed { victim: 4 },
        BotEvent::Grabbed { flag: "G".into() },
        BotEvent::Captured { team: Team::Green },
        BotEvent::Unreachable { goal: [10.0, 20.0, 15.5], what: "flag".into() },
        BotEvent::Stuck { pos: [-3.0, 4.0, 0.0], seconds: 2.5 },
        BotEvent::Disconnected { reason: "connection reset".into(), retry_in: Some(1.5) },
        BotEvent::Disconnected { reason: "rejected".into(), retry_in: None },
        BotEvent::Yielded { free: 1 },
        BotEvent::Left,
        BotEvent::Stopped { reason: "bots are disabled".into() },
    ]
}

fn enum_of(v: &Value) -> BTreeSet<String> {
    v["enum"].as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default()
}

/// The `if`/`then` dispatch of `allOf` (`{"if":{"properties":{KEY:{"const":NAME}}},"then":{"$ref":"#/$defs/REF"}}`):
/// NAME → REF.
fn dispatch(all_of: &Value, key: &str) -> Vec<(String, String)> {
    all_of
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| {
                    let name = c["if"]["properties"][key]["const"].as_str()?;
                    let r = c["then"]["$ref"].as_str()?.strip_prefix("#/$defs/")?;
                    Some((name.to_owned(), r.to_owned()))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_event_schema_lists_every_event_type() {
    let s = schema("event");
    let listed = enum_of(&s["properties"]["type"]);
    let ours: BTreeSet<String> = Event::KINDS.iter().chain(CLI_TYPES).map(|k| (*k).to_owned()).collect();
    assert_eq!(
        listed, ours,
        "docs/schemas/event.schema.json `properties.type.enum` must list exactly Event::KINDS and the command \
         line's own types; add a new type there, with its `$defs` entry and its `if`/`then` in `allOf`"
    );
    let routes = dispatch(&s["allOf"], "type");
    for k in &ours {
        let to = routes.iter().find(|(n, _)| n == k).map(|(_, r)| r.as_str());
        let to = to.unwrap_or_else(|| panic!("event.schema.json: no `if`/`then` in `allOf` for type {k:?}"));
        assert!(s["$defs"][to].is_object(), "event.schema.json: `$defs/{to}` (for type {k:?}) is missing");
    }

    // Bot events: every variant is listed and its JSON validates.
    let bot = &s["$defs"]["bot_line"];
    let listed = enum_of(&bot["properties"]["bot_event"]);
    let all = every_bot_event();
    let ours: BTreeSet<String> = all.iter().map(|e| bot_event_name(e).to_owned()).collect();
    assert_eq!(listed, ours, "event.schema.json `$defs/bot_line` must list every BotEvent");
    let routes = dispatch(&bot["allOf"], "bot_event");
    assert_eq!(routes.len(), ours.len(), "one `if`/`then` per bot event: {routes:?}");
    let v = Schema::load("event");
    for e in &all {
        let mut line = serde_json::json!({"v": 1, "t": 0.5, "type": "bot", "bot": "hunter1"});
        let Value::Object(body) = serde_json::to_value(e).unwrap() else { panic!("{e:?} is not an object") };
        line.as_object_mut().unwrap().extend(body);
        v.check(&line);
    }
    // The lines of `observe --netstats` and `--reconnect`, as `bzhead::netwatch` prints them (the real run below
    // sees netstats and link lines; a reconnection is left to tests/it/netstats.rs).
    let net = PlayerNet {
        id: 3,
        updates_per_s: 3.4,
        jitter_ms: None,
        dr_error: DrError { p50: Some(0.05), p95: None, max: Some(1.25), samples: 51 },
        lag_ms: Some(3.0),
        server_jitter_ms: None,
        server_loss_pct: Some(0.0),
        updates: 55,
        out_of_order: 0,
        missing: 1,
        since_last_ms: None,
        flagged: Some("warping".into()),
    };
    let t = std::time::Duration::from_millis(2500);
    for line in [
        netwatch::netstats_json_line(t, "hunter3", Team::Purple, &net),
        netwatch::reconnecting_line(t, true, 2, std::time::Duration::from_millis(1000), "connection reset"),
        netwatch::reconnected_line(t, true, 2, std::time::Duration::from_millis(4321)),
    ] {
        let line: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        v.check(&line);
    }
    // And the schema is not a rubber stamp.
    for bad in [
        r#"{"v":1,"t":0.1,"type":"link","lag_ms":1.0,"command_rtt_ms":null}"#,
        r#"{"v":1,"t":0.1,"type":"reconnecting","attempt":0,"in_ms":500,"reason":"x"}"#,
        r#"{"v":1,"t":0.1,"type":"no_such_event"}"#,
        r#"{"v":1,"t":0.1,"type":"chat","from":253}"#,
        r#"{"v":1,"t":0.1,"type":"hello","id":300}"#,
        r#"{"v":2,"t":0.1,"type":"hello","id":1}"#,
        r#"{"v":1,"t":0.1,"type":"bot","bot":"b","bot_event":"joined","id":1}"#,
    ] {
        let line: Value = serde_json::from_str(bad).unwrap();
        assert!(!v.validator.is_valid(&line), "event.schema.json accepts {bad}");
    }
}

/// One event of every kind, as the engine makes them (the real runs below cannot provoke every kind: a kick, a
/// teleport, a rabbit...). [`every_event_kind_printed_by_the_observer_validates`] wants one per `Event::KINDS`.
fn one_event_of_each_kind() -> Vec<Event> {
    let flag =
        FlagEvent { index: 3, abbv: Abbv::new("GM"), status: FlagStatus::OnTank, owner: 2, pos: [1.0, 2.0, 0.5] };
    let team = TeamInfo { team: Team::Red, size: 2, wins: 3, losses: 1 };
    let update = PlayerUpdate {
        small: true,
        timestamp: 12.5,
        id: 2,
        order: 77,
        status: PlayerStatus::ALIVE,
        pos: [10.0, -20.0, 0.0],
        vel: [1.0, 0.0, 0.0],
        azimuth: 1.5,
        ang_vel: 0.25,
        jump_jets: 0.0,
        phydrv: -1,
        user_inputs: (0.0, 0.0),
        sounds: 0,
    };
    let shot = FiringInfo {
        time_sent: 12.5,
        shooter: 2,
        shot_id: 0x0102,
        pos: [10.0, -20.0, 1.5],
        vel: [100.0, 0.0, 0.0],
        dt: 0.0,
        team: Team::Green,
        flag: Abbv::new("L"),
        lifetime: 3.5,
    };
    let settings = GameSettings {
        world_size: 800.0,
        game_type: 1,
        game_options: 26,
        max_players: 200,
        max_shots: 3,
        num_flags: 30,
        linear_acceleration: 0.0,
        angular_acceleration: 0.0,
        shake_timeout: 0,
        shake_wins: 0,
        sync_time: 0,
    };
    let player = QueryPlayer {
        id: 1,
        callsign: "alice".into(),
        motto: "hi".into(),
        team: Team::Blue,
        player_type: PlayerType::Computer,
        wins: 4,
        losses: 2,
        team_kills: 0,
    };
    let s = |x: &str| x.to_owned();
    vec![
        Event::Hello { id: 1 },
        Event::UdpLink { up: true, detail: s("UDP link established") },
        Event::Settings(settings),
        Event::CacheUrl { url: s("http://example.invalid/world.bwc") },
        Event::World { hash: s("a4f58da93d7bf49df9ef31cee06c2c59"), bytes: 368, cached: true },
        Event::Accept { id: 1 },
        Event::Reject { code: RejectCode::TeamFull, reason: s("The callsign specified is already in use.") },
        Event::SetVar { count: 2, vars: vec![(s("_gravity"), s("-9.8"))] },
        Event::Team(team),
        Event::Join {
            id: 2,
            callsign: s("bob"),
            team: Team::Rogue,
            player_type: PlayerType::Tank,
            motto: s(""),
            wins: 0,
            losses: 0,
            team_kills: 0,
        },
        Event::Leave { id: 2, callsign: s("bob") },
        Event::Score { id: 2, wins: 1, losses: 2, team_kills: 0 },
        Event::NewRabbit { id: 2 },
        Event::GameOver { player: 255, team: Team::Red },
        Event::TimeLeft { seconds: -1 },
        Event::Flag(flag),
        Event::Grab { player: 2, callsign: s("bob"), flag },
        Event::Drop { player: 2, callsign: s("bob"), flag },
        Event::Transfer { from: 2, to: 3, flag },
        Event::Capture { player: 2, callsign: s("bob"), index: 0, abbv: Abbv::new("R*"), team: Team::Green },
        Event::NearFlag { pos: [1.0, 2.0, 0.0], name: s("Genocide") },
        Event::Spawn { id: 2, callsign: s("bob"), pos: [1.0, 2.0, 0.0], azimuth: 3.0 },
        Event::Kill {
            victim: 2,
            victim_callsign: s("bob"),
            killer: 3,
            killer_callsign: s("carol"),
            reason: "shot",
            reason_code: 1,
            shot_id: 258,
            flag: Abbv::new("L"),
            phydrv: Some(4),
        },
        Event::Teleport { player: 2, callsign: s("bob"), from: 0, to: 3 },
        Event::Pause { player: 2, callsign: s("bob"), paused: true },
        Event::AutoPilot { player: 2, callsign: s("bob"), on: false },
        Event::Update(update),
        Event::ShotBegin(shot),
        Event::ShotEnd { shooter: 2, shot_id: 258, reason: 1 },
        Event::Chat {
            from: 253,
            from_callsign: s("SERVER"),
            to: 254,
            to_name: s("all"),
            action: false,
            text: s("welcome"),
        },
        Event::Resources { count: 0 },
        Event::Warning { message: s("skipped a malformed message") },
        Event::Kicked { reason: s("kicked by the server") },
        Event::QueryResult { game: QueryGameInfo::default(), teams: vec![team], players: vec![player] },
        Event::Closed { reason: bzhead::bzflag::session::SessionEnd::Left },
    ]
}

#[test]
fn every_event_kind_printed_by_the_observer_validates() {
    let events = Schema::load("event");
    let all = one_event_of_each_kind();
    let kinds: BTreeSet<&str> = all.iter().map(Event::kind).collect();
    let ours: BTreeSet<&str> = Event::KINDS.iter().copied().collect();
    assert_eq!(kinds, ours, "one_event_of_each_kind() needs a sample of every Event::KINDS entry");
    for e in &all {
        let line = json_line(std::time::Duration::from_millis(1234), e);
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|err| panic!("{err}: {line}"));
        assert_eq!(v["type"], e.kind(), "{line}");
        events.check(&v);
    }
}

#[test]
fn observer_bot_and_replay_json_of_a_real_game_validates() {
    let events = Schema::load("event");
    let bzfs = Bzfs::builder().ctf().jumping().srvmsg("schema check").start();
    let dir = TempDir::new("schema-events");
    let rec = dir.join("session.bzrec");
    let cache = dir.join("cache");
    let (cache, rec) = (cache.to_str().unwrap(), rec.to_str().unwrap());
    let hp = bzfs.host_port();

    // Bots on both teams, hunting each other, with the observer link printing the game; meanwhile an observer
    // prints their network figures every second (`netstats` lines, each round after a `link` line).
    let bots = {
        let hp = hp.clone();
        std::thread::spawn(move || {
            run_bzhead(
                ["bot", "hunter,capper", "--count", "4", "--team", "red,green", "--for", "10", "--json", &hp],
                WAIT * 3,
            )
        })
    };
    std::thread::sleep(std::time::Duration::from_secs(2));
    let net = run_bzhead(["observe", "--json", "--netstats", "1", "--for", "6", "--no-cache", &hp], WAIT * 2);
    let out = bots.join().expect("the bot run");
    assert!(out.success(), "{}", out.describe());
    assert!(net.success(), "{}", net.describe());
    let net_lines = events.check_lines(&net);
    for t in ["netstats", "link"] {
        assert!(net_lines.iter().any(|v| v["type"] == t), "no {t:?} line from `observe --netstats 1`:\n{}", net.stdout);
    }
    let lines = events.check_lines(&out);
    let seen = types(&lines);
    for t in ["hello", "settings", "world", "accept", "team", "join", "flag", "spawn", "chat", "bot", "closed"] {
        assert!(seen.contains(t), "no {t:?} line from `bot --json`: {seen:?}");
    }

    // Observers (with their own lines), a chat from bzadmin, a recording, and its replay.
    let mut admin = Bzadmin::join("schema-talker", bzfs.addr());
    admin.say("a line for the schema");
    let out = run_bzhead(
        ["observe", "--json", "--count", "2", "--for", "3", "--cache-dir", cache, "--record", rec, &hp],
        WAIT * 2,
    );
    assert!(out.success(), "{}", out.describe());
    let seen = types(&events.check_lines(&out));
    for t in ["observer_joined", "all_joined", "join", "closed"] {
        assert!(seen.contains(t), "no {t:?} line from `observe --count 2 --json`: {seen:?}");
    }
    let out = run_bzhead(["replay", "--json", rec], WAIT);
    assert!(out.success(), "{}", out.describe());
    events.check_lines(&out);
}

#[test]
fn query_bzflag_scan_and_world_json_of_a_real_bzfs_validates() {
    let results = Schema::load("query-result");
    let world = Schema::load("world");
    let bzfs = Bzfs::builder().jumping().world(worlds_dir().join("objects.bzw")).start();
    let hp = bzfs.host_port();

    let out = run_bzhead(["query", "bzflag", &hp, "--json"], WAIT);
    assert!(out.success(), "{}", out.describe());
    let v = results.check_lines(&out);
    assert_eq!(v[0]["ok"], true, "{}", out.stdout);

    // A scan with an answer and a refusal.
    let dir = TempDir::new("schema-scan");
    let list = dir.join("servers.txt");
    std::fs::write(&list, format!("{hp}\n127.0.0.1:1\n")).unwrap();
    let out = run_bzhead(
        ["scan", "--list", list.to_str().unwrap(), "--protocol", "bzflag", "--json", "--all", "--quiet"],
        WAIT * 2,
    );
    let v = results.check_lines(&out);
    let oks: Vec<&Value> = v.iter().map(|r| &r["ok"]).collect();
    assert!(oks.contains(&&Value::Bool(true)) && oks.contains(&&Value::Bool(false)), "{}", out.stdout);

    // Worlds with teleporters, links, meshes, groups, zones and weapons.
    let cache = dir.join("cache");
    let out = run_bzhead(["world", &hp, "--json", "--cache-dir", cache.to_str().unwrap()], WAIT * 2);
    assert!(out.success(), "{}", out.describe());
    let v = world.check_lines(&out);
    assert!(v[0]["obstacles"].as_array().is_some_and(|o| !o.is_empty()), "{}", out.stdout);
    drop(bzfs);
    // Group instances (paths, names).
    let bzfs = Bzfs::builder().jumping().world(worlds_dir().join("groups.bzw")).start();
    let out = run_bzhead(["world", &bzfs.host_port(), "--json", "--no-cache"], WAIT * 2);
    assert!(out.success(), "{}", out.describe());
    world.check_lines(&out);
}

#[test]
fn plugin_query_scan_and_plugins_json_validates() {
    let results = Schema::load("query-result");
    let plugins = Schema::load("plugins");
    let ddnet = GameServer::ddnet("bzhead schema DDNet");
    let oa = GameServer::openarena("bzhead schema OA", 2);
    let quiet = silent("127.0.0.1:0");

    let out = run_bzhead(["query", "teeworlds", &ddnet.addr().to_string(), "--json"], WAIT * 2);
    assert!(out.success(), "{}", out.describe());
    let v = results.check_lines(&out);
    assert!(v[0]["player_list"].is_array(), "{}", out.stdout);

    // Answer, timeout and refusal side by side.
    let dir = TempDir::new("schema-plugin-scan");
    let list = dir.join("servers.txt");
    let silent_addr: SocketAddr = quiet.addr();
    std::fs::write(&list, format!("{}\n{silent_addr}\n", oa.addr())).unwrap();
    let out = run_bzhead(
        [
            "scan",
            "--list",
            list.to_str().unwrap(),
            "--protocol",
            "quake3",
            "--json",
            "--all",
            "--quiet",
            "--timeout-ms",
            "300",
            "--retries",
            "0",
        ],
        WAIT * 2,
    );
    let v = results.check_lines(&out);
    let errors: Vec<&Value> = v.iter().map(|r| &r["error"]).collect();
    assert!(errors.contains(&&Value::from("timeout")), "{}", out.stdout);
    assert!(v.iter().any(|r| r["ok"] == true && r["bots"] == 2), "{}", out.stdout);

    // plugins --json: built in only; and with files that load, override built-ins, or are refused.
    let out = run_bzhead(["plugins", "--json"], WAIT);
    assert!(out.success(), "{}", out.describe());
    plugins.check_lines(&out);
    let mut crates = MISBEHAVE_PLUGINS.to_vec();
    crates.extend(REAL_PLUGINS);
    let files = plugin_dir_with("schema-plugins", &crates);
    let out = run_bzhead(["plugins", "--json", "--plugin-dir", files.path().to_str().unwrap()], WAIT);
    assert!(out.success(), "{}", out.describe());
    let v = plugins.check_lines(&out);
    assert!(v[0]["errors"].as_array().is_some_and(|e| e.len() >= 6), "{}", out.stdout);
    let overridden = v[0]["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["protocols"].as_array().unwrap())
        .any(|d| d["overridden_by"]["file"].is_string());
    assert!(overridden, "the files override the built-ins: {}", out.stdout);
}

fn worlds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/worlds")
}

/// The web view's and the monitor's schemas (validated on real answers in tests/it/web/api.rs and
/// tests/it/monitor.rs) load, accept a minimal answer and refuse broken ones.
#[test]
fn the_web_and_monitor_schemas_are_not_rubber_stamps() {
    let web = Schema::load("web-state");
    let ok: Value = serde_json::from_str(
        r#"{"v":1,"server":0,"address":"127.0.0.1:5154","status":"connecting","world":{"hash":null,"size":null},
            "time":0.5,"time_left":null,"teams":[],"players":[],"flags":[],"shots":[]}"#,
    )
    .unwrap();
    web.check(&ok);
    for (key, bad) in [
        ("status", Value::from("dancing")),
        ("players", serde_json::json!([{"id": 1, "callsign": "x"}])),
        ("v", Value::from(2)),
    ] {
        let mut v = ok.clone();
        v[key] = bad;
        assert!(!web.validator.is_valid(&v), "web-state.schema.json accepts {v}");
    }
    let monitor = Schema::load("monitor-api");
    monitor.check(&serde_json::json!({"v": 1, "servers": [], "total": 0}));
    monitor.check(&serde_json::json!({"v": 1, "name": "a", "seen": []}));
    for bad in [
        r#"{"v":1}"#,
        r#"{"v":1,"servers":[{"v":1,"protocol":"quake3"}],"total":1}"#,
        r#"{"v":1,"name":"a","seen":[{"protocol":"bzflag"}]}"#,
        r#"{"v":1,"servers":[],"total":-1}"#,
    ] {
        let v: Value = serde_json::from_str(bad).unwrap();
        assert!(!monitor.validator.is_valid(&v), "monitor-api.schema.json accepts {bad}");
    }
}
