//! The monitor's HTTP API as plain functions: a path and its query parameters in, an [`ApiResponse`] out. The
//! command mounts [`route`] on the shared HTTP layer; the change feed (`/api/events`) is a stream there, fed from
//! [`Monitor::events_after`] with [`sse_event`].
//!
//! * `GET /api/servers?protocol=P&min_players=N&q=TEXT&limit=N&offset=N` → `{"v":1,"servers":[...],"total":N}`:
//!   each server in the shared query result shape (without its player list) plus `up`, `first_seen`, `last_seen`,
//!   `last_ok` (Unix seconds), `humans` and `bots` ([`super::state::humans_and_bots`]) and `source`: where it comes
//!   from ([`Source`]: registered here, which upstream masters list it, since when). `q` matches the name case-insensitively; `total` counts the matches, of which at most
//!   `limit` ([`MAX_PAGE`] at most) are sent from `offset` on.
//! * `GET /api/servers/PROTOCOL/ADDRESS?since=T` → that server with its players and `"history"`: its recent
//!   samples after `T`, downsampled to at most [`MAX_HISTORY_POINTS`] points `[t, up, players]`.
//! * `GET /api/players?name=NAME` → `{"v":1,"name","seen":[{"protocol","address","server","first_seen",
//!   "last_seen","present"}]}`.
//! * `GET /metrics` → [`super::metrics::render`].
//! * `GET /` → the page (embedded).

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::metrics::{self, Own};
use super::state::{humans_and_bots, Monitor, Point, Server};

/// Most servers in one `/api/servers` answer (`limit`, `offset` page through more).
pub const MAX_PAGE: usize = 5000;

/// Most points of a history in an answer.
pub const MAX_HISTORY_POINTS: usize = 60;

/// The page, embedded.
pub const PAGE: &str = include_str!("page.html");
/// The page's script, embedded (served apart, so that the page's policy allows no inline script).
pub const SCRIPT: &str = include_str!("page.js");
/// The page's Content-Security-Policy: scripts and data from this server only, no inline script.
pub const PAGE_CSP: &str =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:";

/// Where a server comes from: the masters that list it. The masters are above the monitor on the crate's map, so
/// the command gives [`route`] a function that answers it ([`Sources`]; `crate::master::Masters::sources`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Source {
    /// Registered directly with this monitor as a master: which one (`bzflag-list`, `ddnet-http`, `dpmaster`).
    pub registered: Option<&'static str>,
    /// The upstream masters (the configuration's `[[master]]` sources) whose last good list has it.
    pub upstreams: Vec<SourceUpstream>,
    /// Unix seconds it was first listed by a master (registered or mirrored; `null`: no master lists it, it is
    /// one of the configured servers).
    pub listed_first: Option<i64>,
    /// Unix seconds it was last listed by a master (a registration renewed, an upstream list that has it).
    pub listed_last: Option<i64>,
    /// Unix seconds of its last `verify_join` that worked (BZFlag).
    pub last_verified_join: Option<i64>,
}

/// An upstream master listing a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceUpstream {
    /// Its name (its URL, or `PROTOCOL@ADDRESS`).
    pub name: String,
    /// It fails now: its last good list is served (for an hour after it).
    pub stale: bool,
    /// Unix seconds of its last good list.
    pub last_ok: Option<i64>,
}

/// The source of a server, by protocol and address.
pub type Sources<'a> = &'a dyn Fn(&str, &str) -> Source;

/// No master knows any server (a monitor that serves none, and the tests).
pub fn no_sources(_: &str, _: &str) -> Source {
    Source::default()
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResponse {
    /// HTTP status.
    pub status: u16,
    /// Content type.
    pub content_type: &'static str,
    /// Body.
    pub body: Vec<u8>,
}

impl ApiResponse {
    fn json(body: &impl Serialize) -> ApiResponse {
        match serde_json::to_vec(body) {
            Ok(body) => ApiResponse { status: 200, content_type: "application/json", body },
            Err(e) => ApiResponse::error(500, &e.to_string()),
        }
    }

    fn error(status: u16, msg: &str) -> ApiResponse {
        ApiResponse {
            status,
            content_type: "application/json",
            body: json!({"v": 1, "error": msg}).to_string().into_bytes(),
        }
    }
}

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    /// Answer at once.
    Response(ApiResponse),
    /// Start the change feed after this event id.
    Events {
        /// Send events with a greater id.
        after: u64,
    },
}

/// Routes a `GET` (or `HEAD`) request. `param` reads a (decoded) query parameter, `last_event_id` is the
/// `Last-Event-ID` header.
pub fn route(
    m: &Monitor,
    sources: Sources<'_>,
    own: &Own,
    joins: &[(String, bool, Option<f64>)],
    path: &str,
    param: &dyn Fn(&str) -> Option<String>,
    last_event_id: Option<&str>,
) -> Routed {
    let r = match path {
        "/" | "/index.html" => {
            ApiResponse { status: 200, content_type: "text/html; charset=utf-8", body: PAGE.as_bytes().to_vec() }
        }
        "/app.js" => ApiResponse {
            status: 200,
            content_type: "application/javascript; charset=utf-8",
            body: SCRIPT.as_bytes().to_vec(),
        },
        "/metrics" => ApiResponse {
            status: 200,
            content_type: "text/plain; version=0.0.4; charset=utf-8",
            body: metrics::render(m, own, joins).into_bytes(),
        },
        "/api/servers" => servers(m, sources, param),
        "/api/players" => match param("name") {
            Some(n) => players(m, &n),
            None => ApiResponse::error(400, "name= is required"),
        },
        "/api/events" => {
            let after = last_event_id
                .and_then(|s| s.trim().parse::<u64>().ok())
                .or_else(|| param("after").and_then(|s| s.parse().ok()));
            // Without a position, the feed starts with what comes next.
            return Routed::Events { after: after.unwrap_or_else(|| m.last_event_id()) };
        }
        p => match p.strip_prefix("/api/servers/").and_then(|rest| rest.split_once('/')) {
            Some((proto, addr)) => {
                let (proto, addr) = (crate::http::percent_decode(proto), crate::http::percent_decode(addr));
                let (proto, addr) = (proto.as_str(), addr.as_str());
                let since = param("since").and_then(|s| s.parse::<i64>().ok()).unwrap_or(i64::MIN);
                server(m, sources, proto, addr, since)
            }
            None => ApiResponse::error(404, "no such page"),
        },
    };
    Routed::Response(r)
}

/// A server as the API answers it: its last answer in the shared result shape (written by the result's own
/// serialiser, kept as a typed map) and the monitor's fields.
#[derive(Debug, Clone, Serialize)]
pub struct ServerView {
    /// The last answer's fields (see [`server_view`]).
    #[serde(flatten)]
    pub result: Map<String, Value>,
    /// Up as of its last round.
    pub up: bool,
    /// Unix seconds.
    pub first_seen: i64,
    /// Unix seconds.
    pub last_seen: i64,
    /// Unix seconds of its last answer (`null`: never).
    pub last_ok: Option<i64>,
    /// Its players less its bots, where the protocol tells bots apart (`null` where it does not).
    pub humans: Option<i64>,
    /// Where it comes from.
    pub source: Source,
    /// Recent samples `[t, up, players]`, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Point>>,
}

/// The server's view: its last answer in the shared shape (without `player_list` unless `with_players`) plus `up`,
/// `first_seen`, `last_seen`, `last_ok` (ISO 8601 is left to clients: Unix seconds); a server that does not answer
/// now keeps its last answer with `"ok": false` and the `error`, and one that never answered (the error shape) gets
/// its last known `name`, `map`, `players` and `max_players`. `bots` and `humans` are of its last answer
/// ([`humans_and_bots`]).
pub fn server_view(s: &Server, source: Source, with_players: bool) -> ServerView {
    let mut result = match serde_json::to_value(&s.last) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    if !with_players {
        result.remove("player_list");
    }
    if s.answered_now() {
        // The answer is current: its own "ok": true stands.
    } else if s.row.last_ok > 0 {
        // The last good answer; say it is stale.
        result.insert("ok".into(), Value::Bool(false));
        result.insert("error".into(), s.error.clone().into());
    } else {
        result.insert("name".into(), s.row.name.clone().into());
        result.insert("map".into(), s.row.map.clone().into());
        result.insert("players".into(), s.row.players.into());
        result.insert("max_players".into(), s.row.max_players.into());
    }
    let (humans, bots) = s.last.outcome.as_ref().map_or((None, None), |a| humans_and_bots(&s.row.protocol, a));
    result.insert("bots".into(), bots.into());
    ServerView {
        result,
        up: s.row.up,
        first_seen: s.row.first_seen,
        last_seen: s.row.last_seen,
        last_ok: (s.row.last_ok > 0).then_some(s.row.last_ok),
        humans,
        source,
        history: None,
    }
}

/// `{"v":1,"servers":[...],"total":N}`.
#[derive(Serialize)]
struct ServerList {
    v: u32,
    servers: Vec<ServerView>,
    total: usize,
}

/// `GET /api/servers`.
pub fn servers(m: &Monitor, sources: Sources<'_>, param: &dyn Fn(&str) -> Option<String>) -> ApiResponse {
    let protocol = param("protocol");
    let min_players = param("min_players").and_then(|s| s.parse::<i64>().ok());
    let q = param("q").map(|s| s.to_lowercase());
    let history = param("history").is_some_and(|h| h == "1");
    // One answer never builds more than MAX_PAGE servers (a turn of the loop stays short); `offset` pages on.
    let limit = param("limit").and_then(|s| s.parse::<usize>().ok()).unwrap_or(MAX_PAGE).min(MAX_PAGE);
    let offset = param("offset").and_then(|s| s.parse::<usize>().ok()).unwrap_or(0);
    let mut list = Vec::new();
    let mut matched = 0usize;
    for s in m.servers() {
        if protocol.as_deref().is_some_and(|p| p != s.row.protocol) {
            continue;
        }
        if min_players.is_some_and(|n| s.row.players.unwrap_or(0) < n || !s.row.up) {
            continue;
        }
        if let Some(q) = &q {
            if !s.row.name.as_deref().is_some_and(|n| n.to_lowercase().contains(q.as_str())) {
                continue;
            }
        }
        matched += 1;
        if matched <= offset || matched > offset.saturating_add(limit) {
            continue;
        }
        let mut view = server_view(s, sources(&s.row.protocol, &s.row.address), false);
        if history {
            let points: Vec<Point> = s.history().collect();
            view.history = Some(downsample(&points, 30));
        }
        list.push(view);
    }
    ApiResponse::json(&ServerList { v: 1, servers: list, total: matched })
}

/// Downsamples points to at most `max` (each bucket: its last time, up when any sample was, the highest count).
pub fn downsample(points: &[Point], max: usize) -> Vec<Point> {
    if points.len() <= max || max == 0 {
        return points.to_vec();
    }
    let per = points.len().div_ceil(max);
    points
        .chunks(per)
        .filter_map(|c| {
            let last = c.last()?;
            let up = c.iter().any(|p| p.1);
            let players = c.iter().filter_map(|p| p.2).max();
            Some((last.0, up, players))
        })
        .collect()
}

/// `GET /api/servers/PROTOCOL/ADDRESS`.
pub fn server(m: &Monitor, sources: Sources<'_>, protocol: &str, address: &str, since: i64) -> ApiResponse {
    let Some(s) = m.server(protocol, address) else {
        return ApiResponse::error(404, "no such server");
    };
    let mut view = server_view(s, sources(protocol, address), true);
    let points: Vec<Point> = s.history().filter(|p| p.0 >= since).collect();
    view.history = Some(downsample(&points, MAX_HISTORY_POINTS));
    ApiResponse::json(&view)
}

/// `GET /api/players?name=NAME`.
pub fn players(m: &Monitor, name: &str) -> ApiResponse {
    let seen: Vec<_> = m
        .player(name)
        .into_iter()
        .map(|(p, a, first, last)| {
            let s = m.server(p, a);
            let present = s.is_some_and(|s| s.present.iter().any(|(n, _)| n == name));
            json!({"protocol": p, "address": a, "server": s.and_then(|s| s.row.name.clone()),
                   "first_seen": first, "last_seen": last, "present": present})
        })
        .collect();
    ApiResponse::json(&json!({"v": 1, "name": name, "seen": seen}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_filter_and_page() {
        use crate::monitor::MonitorConfig;
        use crate::query::result::{Answer, CountField, QueryResult, TextField};
        let mut m = Monitor::new(MonitorConfig::default());
        m.begin_round(100);
        for port in 1..=5u16 {
            let mut a = Answer::default();
            a.set_text(TextField::Name, Some(&format!("srv {port}")));
            a.set_count(CountField::Players, Some(i64::from(port)));
            m.observe(&QueryResult {
                index: 0,
                protocol: "quake3".into(),
                address: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
                ping_ms: None,
                outcome: Ok(a),
            });
        }
        let _ = m.end_round();
        let get = |q: &[(&str, &str)]| {
            let q: Vec<(String, String)> = q.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            let r = servers(&m, &no_sources, &|k| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()));
            serde_json::from_slice::<serde_json::Value>(&r.body).unwrap()
        };
        let v = get(&[("min_players", "3")]);
        assert_eq!(v["total"], 3);
        let v = get(&[("min_players", "2"), ("limit", "2"), ("offset", "1")]);
        let names: Vec<&str> = v["servers"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!((names, v["total"].clone()), (vec!["srv 3", "srv 4"], 4.into()));
        assert_eq!(get(&[("q", "SRV 5")])["servers"][0]["players"], 5);
        assert_eq!(get(&[("protocol", "teeworlds")])["total"], 0);
    }

    #[test]
    fn downsample_keeps_the_bounds() {
        let pts: Vec<Point> = (0..130).map(|i| (i, i % 2 == 0, Some(i))).collect();
        let d = downsample(&pts, 60);
        assert!(d.len() <= 60);
        assert_eq!(d.last().unwrap().0, 129);
        assert_eq!(d.last().unwrap().2, Some(129));
    }

    #[test]
    fn server_json_adds_the_monitor_fields_and_escapes() {
        use crate::monitor::state::test_answer;
        use crate::monitor::MonitorConfig;
        use crate::query::result::{ErrorKind, QueryError, QueryResult};
        let answer = |name: &str| test_answer(name, "m", &["a"]);
        let timeout = QueryResult {
            outcome: Err(QueryError::new(ErrorKind::Timeout, "no answer")),
            ping_ms: None,
            ..answer("x")
        };
        let mut m = Monitor::new(MonitorConfig::default());
        let round = |m: &mut Monitor, t: i64, r: &QueryResult| {
            m.begin_round(t);
            m.observe(r);
            let b = m.end_round();
            m.committed(b.round);
        };
        let json = |s: &Server, with: bool| serde_json::to_string(&server_view(s, Source::default(), with)).unwrap();
        round(&mut m, 100, &answer("<b>\"x\"</b>"));
        let s = m.server("quake3", "127.0.0.1:27960").unwrap();
        let v: serde_json::Value = serde_json::from_str(&json(s, false)).unwrap();
        assert_eq!(v["name"], "<b>\"x\"</b>");
        assert_eq!(v["up"], true);
        assert_eq!(v["first_seen"], 100);
        assert!(v.get("player_list").is_none());
        let v: serde_json::Value = serde_json::from_str(&json(s, true)).unwrap();
        assert_eq!(v["player_list"][0]["name"], "a");
        round(&mut m, 160, &timeout);
        round(&mut m, 220, &timeout);
        let s = m.server("quake3", "127.0.0.1:27960").unwrap();
        let v: serde_json::Value = serde_json::from_str(&json(s, false)).unwrap();
        assert_eq!(
            (v["up"].clone(), v["ok"].clone(), v["error"].clone()),
            (false.into(), false.into(), "timeout".into())
        );
        assert_eq!(v["last_ok"], 100);
    }
}
