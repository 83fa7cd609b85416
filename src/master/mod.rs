//! The monitor as a master: the lists other masters serve, served back in each game's own master protocol.
//!
//! * [`bzfls`]: the BZFlag list server (`/db/`: `ADD` with the connect-back check, `REMOVE`, `LIST`).
//! * [`ddnet`]: DDNet's HTTP master (`/ddnet/15/register` with the UDP challenge, `/ddnet/15/servers.json`).
//! * [`dpmaster`]: the dpmaster protocol (Quake III engines, DarkPlaces, Warsow...) over UDP: heartbeats answered
//!   with a `getinfo` challenge, servers listed after a valid `infoResponse` for a lease, `getservers` and
//!   `getserversExt` answered with their filters, dpmaster's policies and caps. Datagrams and `now` in, datagrams
//!   out; the reactor's UDP services ([`crate::reactor::Reactor::add_udp_service`]) carry it.
//! * [`metrics`]: their part of the Prometheus exposition: every master counts the same things ([`Counters`]),
//!   exposed with a `protocol` label.
//! * [`registry`]: the merged list with provenance: the upstream masters the monitor reads (its `[[master]]`
//!   sources), mirrored, and the servers registered directly.
//!
//! Each is sans-IO (fields and Unix seconds in, answers out); the command (`src/cli/monitor.rs`) routes the HTTP
//! requests to them, runs the BZFlag connect-back checks on the reactor's worker and sends the DDNet challenges.

pub mod bzfls;
pub mod ddnet;
pub mod dpmaster;
pub mod metrics;
pub mod registry;

/// Most bytes of a request body on the masters' routes (`/db/`, `/ddnet/15/register`): a bzfs `ADD` is well under
/// 1 KiB; a DDNet register carries the server info with its client list (about 10 KiB for 64 clients).
pub const MAX_BODY: usize = 32 * 1024;

/// The HTTP routes that take a body (see [`crate::http::Limits::body_routes`]).
pub const BODY_ROUTES: &[&str] = &["/db", "/ddnet/15/register"];

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use serde_json::{json, Value};

use crate::http::Request;
use crate::monitor::api::{Source, SourceUpstream};
use crate::monitor::state::humans_and_bots;
use crate::monitor::Monitor;

/// The paths the masters answer (besides the monitor's own).
pub const PATHS: &[&str] = &["/db", "/db/", "/ddnet/15/register", "/ddnet/15/servers.json", "/api/masters"];

/// What the command is to do with a master request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Served {
    /// Answer: status, content type, body.
    Response(u16, &'static str, String),
    /// Run the BZFlag connect-back check ([`bzfls::connect_back`] on the worker), then answer with
    /// [`Masters::checked`].
    Check(bzfls::Check),
    /// Answer, and send this challenge datagram to this address.
    Challenge(u16, String, SocketAddr, Vec<u8>),
}

/// The masters the monitor serves, and the mirror of the ones it reads.
pub struct Masters {
    /// The BZFlag list server.
    pub bzfls: bzfls::ListServer,
    /// DDNet's HTTP master.
    pub ddnet: ddnet::DdnetMaster,
    /// The upstream mirror.
    pub registry: registry::Registry,
    /// Unix seconds of the last verified join of a BZFlag server (`verify_join`), by address.
    pub verified: HashMap<SocketAddr, i64>,
    /// Challenge datagrams that could not be sent.
    pub challenges_unsent: u64,
    /// The servers the dpmaster master lists, as of the command's last look (it sets them before `/api/masters`
    /// is answered: the dpmaster master lives on the reactor's UDP services).
    pub dpmaster_listed: Vec<dpmaster::Listed>,
}

/// The servers registered here, indexed for [`SourceIndex::source`] ([`Masters::sources`]).
pub struct SourceIndex<'a> {
    masters: &'a Masters,
    direct: HashMap<(&'static str, SocketAddr), Registered>,
}

/// (Keyed by query protocol and address) the master a server registered with, and when it was first and last
/// registered.
type Registered = (&'static str, Option<(i64, i64)>);

impl SourceIndex<'_> {
    /// Where the server of `protocol` at `address` comes from.
    pub fn source(&self, protocol: &str, address: &str) -> Source {
        let Ok(addr) = address.parse::<SocketAddr>() else { return Source::default() };
        let mut out = Source { last_verified_join: self.masters.verified.get(&addr).copied(), ..Source::default() };
        let mut span: Option<(i64, i64)> = None;
        let mut widen = |first: i64, last: i64| {
            span = Some(span.map_or((first, last), |(f, l)| (f.min(first), l.max(last))));
        };
        if let Some((master, times)) = self.direct.get(&(protocol, addr)) {
            out.registered = Some(master);
            if let Some((f, l)) = times {
                widen(*f, *l);
            }
        }
        let registry = &self.masters.registry;
        if let Some(p) = registry.provenance(protocol, addr) {
            out.upstreams = p
                .upstreams
                .iter()
                .filter_map(|i| registry.upstreams().get(*i))
                .map(|u| SourceUpstream { name: u.name.clone(), stale: u.stale, last_ok: u.last_ok })
                .collect();
            widen(p.first_seen, p.last_seen);
        }
        (out.listed_first, out.listed_last) = (span.map(|s| s.0), span.map(|s| s.1));
        out
    }
}

/// Players and observers in a BZFlag `gameinfo` (the hex of the ping packet: team counts at bytes 17..=27; the
/// packet does not tell bots apart).
pub fn bzflag_counts(gameinfo: &str) -> Option<(u32, u32)> {
    let byte = |i: usize| gameinfo.get(2 * i..2 * i + 2).and_then(|h| u8::from_str_radix(h, 16).ok());
    let players = [17, 19, 21, 23, 25].iter().map(|&i| byte(i).map(u32::from)).sum::<Option<u32>>()?;
    Some((players, u32::from(byte(27)?)))
}

impl Masters {
    /// The masters, empty; `allow_private` takes registrations from loopback and private addresses.
    pub fn new(allow_private: bool, now: i64) -> Masters {
        Masters {
            bzfls: bzfls::ListServer::new(allow_private),
            ddnet: ddnet::DdnetMaster::new(allow_private, now),
            registry: registry::Registry::new(),
            verified: HashMap::new(),
            challenges_unsent: 0,
            dpmaster_listed: Vec::new(),
        }
    }

    /// True when `path` is a master's.
    pub fn serves(path: &str) -> bool {
        PATHS.contains(&path)
    }

    /// Time passes: leases and upstream lists expire.
    pub fn tick(&mut self, now: i64) {
        self.bzfls.expire(now);
        self.ddnet.tick(now);
        self.registry.expire(now);
    }

    /// A request to a master path ([`Masters::serves`]) from `source`.
    pub fn handle(&mut self, req: &Request, source: IpAddr, now: i64, monitor: &Monitor) -> Served {
        self.tick(now);
        match req.path.as_str() {
            "/db" | "/db/" => {
                match self.bzfls.handle(&|k| req.form_param(k), source, now, &|| self.registry.bzflag_listings()) {
                    bzfls::Answer::Now(status, ct, body) => Served::Response(status, ct, body),
                    bzfls::Answer::Check(c) => Served::Check(c),
                }
            }
            "/ddnet/15/register" => {
                if req.method != crate::http::Method::Post {
                    return Served::Response(405, "application/json", r#"{"status":"error"}"#.into());
                }
                let r = self.ddnet.register(&|k| req.header(k).map(str::to_owned), &req.body, source, now);
                match r.challenge {
                    Some((to, packet)) => Served::Challenge(r.status, r.body, to, packet),
                    None => Served::Response(r.status, "application/json", r.body),
                }
            }
            "/ddnet/15/servers.json" => {
                let extra = self.federated_ddnet(monitor);
                Served::Response(200, "application/json", self.ddnet.servers_json(now, extra))
            }
            _ => Served::Response(200, "application/json", self.view(monitor, now).to_string()),
        }
    }

    /// The outcome of a connect-back check.
    pub fn checked(&mut self, check: bzfls::Check, outcome: Result<SocketAddr, String>, now: i64) -> Served {
        match self.bzfls.checked(check, outcome, now) {
            bzfls::Answer::Now(status, ct, body) => Served::Response(status, ct, body),
            bzfls::Answer::Check(c) => Served::Check(c),
        }
    }

    /// Mirrored Teeworlds/DDNet entries not registered directly, in `servers.json`'s shape: with the addresses and
    /// the info their upstream's `servers.json` gave, else (an entry of a UDP master) with the info the monitor's
    /// last answer gives (entries it never got an answer from are then left out: a client cannot show them).
    fn federated_ddnet(&self, monitor: &Monitor) -> Vec<Value> {
        let direct: std::collections::HashSet<SocketAddr> =
            self.ddnet.servers().flat_map(|s| s.addresses.iter().map(|a| a.addr)).collect();
        let mut out = Vec::new();
        for ((protocol, addr), p) in self.registry.entries() {
            let scheme = match protocol.as_str() {
                "teeworlds" => ddnet::Proto::V6,
                "teeworlds7" => ddnet::Proto::V7,
                _ => continue,
            };
            if direct.contains(addr) {
                continue;
            }
            if let Some((_, registry::Listed::Ddnet { addresses, info: Some(info), .. })) = &p.listed {
                out.push(json!({"addresses": addresses, "info": info}));
                continue;
            }
            let Some(s) = monitor.server(protocol, &addr.to_string()).filter(|s| s.row.last_ok > 0) else { continue };
            let r = &s.row;
            out.push(json!({
                "addresses": [ddnet::DdAddr { proto: scheme, addr: *addr }.to_string()],
                "info": {
                    "name": r.name.clone().unwrap_or_default(),
                    "map": {"name": r.map.clone().unwrap_or_default()},
                    "max_clients": r.max_players.unwrap_or(0),
                    "max_players": r.max_players.unwrap_or(0),
                    "passworded": false,
                    "game_type": "",
                    "version": "",
                    "clients": [],
                },
            }));
        }
        out
    }

    /// Where the monitor's servers come from ([`crate::monitor::api::Source`]), for one request: the servers
    /// registered here indexed once (`dpmaster`: the addresses the dpmaster master lists now), the mirror looked up
    /// per server.
    pub fn sources(&self, dpmaster: &[SocketAddr]) -> SourceIndex<'_> {
        let mut direct = HashMap::new();
        for e in self.bzfls.entries() {
            direct.insert((crate::query::BZFLAG, e.addr), ("bzflag-list", Some((e.first_seen, e.last_seen))));
        }
        for s in self.ddnet.servers() {
            let last = s.addresses.iter().filter_map(|a| self.ddnet.last_register(a)).max();
            for a in &s.addresses {
                direct.insert((a.proto.query_protocol(), a.addr), ("ddnet-http", last.map(|l| (s.first_seen, l))));
            }
        }
        for a in dpmaster {
            direct.entry(("quake3", *a)).or_insert(("dpmaster", None));
        }
        SourceIndex { masters: self, direct }
    }

    /// `GET /api/masters`: the upstreams, every listed server with its provenance, and the counts.
    pub fn view(&self, monitor: &Monitor, now: i64) -> Value {
        let mut servers: Vec<Value> = Vec::new();
        let monitored = |protocol: &str, addr: SocketAddr| {
            let s = monitor.server(protocol, &addr.to_string());
            let counts = s.and_then(|s| s.last.outcome.as_ref().ok()).map(|a| humans_and_bots(protocol, a));
            let (humans, bots) = counts.unwrap_or((None, None));
            // Humans where bots are told apart, else every player.
            (s.map(|s| s.row.last_ok).filter(|t| *t > 0), humans.or(s.and_then(|s| s.row.players)), bots)
        };
        let mut direct_bz = std::collections::HashSet::new();
        for e in self.bzfls.entries() {
            direct_bz.insert(e.addr);
            let (last_ok, _, _) = monitored(crate::query::BZFLAG, e.addr);
            let counts = bzflag_counts(&e.gameinfo);
            let (ups, stale) = self.upstream_names(crate::query::BZFLAG, e.addr);
            servers.push(json!({
                "protocol": crate::query::BZFLAG, "address": e.addr.to_string(), "name": e.title,
                "direct": "bzflag-list", "upstreams": ups, "upstreams_stale": stale,
                "first_seen": e.first_seen, "last_seen": e.last_seen, "last_ok": last_ok,
                "last_verified_join": self.verified.get(&e.addr),
                "players": counts.map(|c| c.0), "observers": counts.map(|c| c.1), "bots": Value::Null,
            }));
        }
        let mut direct_dd = std::collections::HashSet::new();
        for s in self.ddnet.servers() {
            let (players, spectators) = s.players_and_spectators();
            let last_seen = s.addresses.iter().filter_map(|a| self.ddnet.last_register(a)).max();
            for a in &s.addresses {
                direct_dd.insert((a.proto.query_protocol(), a.addr));
            }
            let Some(first) = s.addresses.first() else { continue };
            let (last_ok, _, _) = monitored(first.proto.query_protocol(), first.addr);
            let (ups, stale) = self.upstream_names(first.proto.query_protocol(), first.addr);
            servers.push(json!({
                "protocol": first.proto.query_protocol(), "address": first.addr.to_string(),
                "addresses": s.addresses.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "name": s.info.get("name"), "direct": "ddnet-http", "upstreams": ups, "upstreams_stale": stale,
                "first_seen": s.first_seen, "last_seen": last_seen, "last_ok": last_ok,
                "last_verified_join": Value::Null,
                "players": players, "spectators": spectators, "bots": Value::Null,
            }));
        }
        for l in &self.dpmaster_listed {
            direct_dd.insert(("quake3", l.addr));
            let (last_ok, humans, bots) = monitored("quake3", l.addr);
            let (ups, stale) = self.upstream_names("quake3", l.addr);
            let name = monitor.server("quake3", &l.addr.to_string()).and_then(|s| s.row.name.clone());
            servers.push(json!({
                "protocol": "quake3", "address": l.addr.to_string(), "name": name,
                "direct": "dpmaster", "upstreams": ups, "upstreams_stale": stale,
                "first_seen": Value::Null, "last_seen": Value::Null, "last_ok": last_ok,
                "last_verified_join": Value::Null, "players": humans, "bots": bots,
            }));
        }
        let mut mirrored: Vec<_> = self
            .registry
            .entries()
            .filter(|((p, a), _)| {
                let bz = p == crate::query::BZFLAG && direct_bz.contains(a);
                !bz && !direct_dd.contains(&(p.as_str(), *a))
            })
            .collect();
        mirrored.sort_by(|a, b| a.0.cmp(b.0));
        for ((protocol, addr), prov) in mirrored {
            let (names, stale) = self.registry.names(prov);
            let (last_ok, players, bots) = monitored(protocol, *addr);
            let name = monitor.server(protocol, &addr.to_string()).and_then(|s| s.row.name.clone());
            servers.push(json!({
                "protocol": protocol, "address": addr.to_string(), "name": name,
                "direct": Value::Null, "upstreams": names, "upstreams_stale": stale,
                "first_seen": prov.first_seen, "last_seen": prov.last_seen, "last_ok": last_ok,
                "last_verified_join": self.verified.get(addr),
                "players": players, "bots": bots,
            }));
        }
        let (b, d) = (self.bzfls.counts(), self.ddnet.counts());
        json!({
            "v": 1,
            "now": now,
            "upstreams": self.registry.upstreams(),
            "servers": servers,
            "counts": {
                "bzflag": {"listed": self.bzfls.entries().count(), "added": b.added, "refused": b.refused,
                           "checks_failed": b.checks_failed, "removed": b.removed, "expired": b.expired,
                           "list_requests": b.lists},
                "ddnet": {"listed": self.ddnet.servers().count(), "registered": d.registered,
                          "challenges_sent": d.challenges_sent, "challenges_failed": d.challenges_failed,
                          "challenges_unsent": self.challenges_unsent, "refused": d.refused,
                          "expired": d.expired, "deleted": d.deleted, "list_requests": d.lists},
                "mirrored": self.registry.entries().count(),
            },
        })
    }

    fn upstream_names(&self, protocol: &str, addr: SocketAddr) -> (Vec<&str>, bool) {
        match self.registry.provenance(protocol, addr) {
            Some(p) => self.registry.names(p),
            None => (Vec::new(), false),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bzflag_counts_from_gameinfo() {
        // 29 bytes: 16 of settings, max players, then (count, max) for rogue, red, green, blue, purple, observer.
        let hex = "0001007a00030000000000000000000014010a020a030a000a000a0105";
        assert_eq!(hex.len(), 58);
        assert_eq!(super::bzflag_counts(hex), Some((6, 1)));
        assert_eq!(super::bzflag_counts("zz"), None);
    }
}

/// What a master counts (totals since start), the same for every master protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Heartbeats (registration requests) received.
    pub heartbeats: u64,
    /// Registrations that completed (a server listed or its lease renewed).
    pub registrations: u64,
    /// Challenges that failed: a reply with a wrong, unknown, replayed or late challenge, or none before it expired.
    pub challenges_failed: u64,
    /// Listed servers dropped because their lease ran out.
    pub leases_expired: u64,
    /// List requests answered.
    pub list_requests: u64,
    /// Requests refused by a policy or a cap (special-use address, game policy, server caps, malformed, oversized).
    pub refused: u64,
    /// Registrations removed by their server (BZFlag `REMOVE`, DDNet `Action: delete`).
    pub removed: u64,
    /// Requests dropped by a flood throttle.
    pub throttled: u64,
    /// Servers listed now.
    pub listed: u64,
    /// Servers waiting for their challenge's answer now.
    pub pending: u64,
}
