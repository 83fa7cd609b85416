//! The BZFlag list server (`bzfls.php`'s protocol) as a sans-IO state: form fields and the request's source address
//! in, an answer (or a connect-back check to run) out; Unix seconds are passed in, never read here.
//!
//! * `action=ADD` (`nameport`, `version`, `gameinfo` hex, `build`, `title`): the `nameport`'s host must be the
//!   requesting address (a literal IP, or a name the check resolves to it), the address must not be loopback or
//!   private unless allowed, and the server must accept a TCP connection on `nameport` within
//!   [`CONNECT_BACK_TIMEOUT`] (the check runs off the event loop: [`ListServer::add`] returns a [`Check`], the
//!   command runs [`connect_back`] on the reactor's worker and hands the outcome to [`ListServer::checked`]).
//! * `action=REMOVE` (`nameport`): from the address that added it.
//! * `action=LIST` (optional `version=`, `listformat=json`): plain text, one server per line
//!   `nameport version gameinfo ipaddr title`, or `{"fields":[...],"servers":[[...]]}`: the servers added here and
//!   the ones mirrored from the upstream list servers (given by the caller, [`ListServer::handle`]'s `mirrored`),
//!   one line each in the same shape, a server added here taking the place of its mirrored line.
//!
//! An entry not added again within [`LEASE`] (1,830 s, as bzfls) is dropped by [`ListServer::expire`].
//! Bounds: [`MAX_ENTRIES`] entries, [`MAX_PER_ADDRESS`] per address, [`MAX_CHECKS`] checks at once, fields
//! ([`MAX_TITLE`], [`MAX_FIELD`]) truncated or refused; the request body itself is bounded by the HTTP layer
//! ([`crate::master::MAX_BODY`]).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::json;

use crate::query::filter::special_use;

/// Seconds an entry stays listed without a new `ADD` (bzfls drops servers after 1,830 s).
pub const LEASE: i64 = 1830;
/// Time the connect-back check allows the server to accept (as bzfls).
pub const CONNECT_BACK_TIMEOUT: Duration = Duration::from_secs(5);
/// Most entries listed.
pub const MAX_ENTRIES: usize = 10_000;
/// Most entries from one address.
pub const MAX_PER_ADDRESS: usize = 32;
/// Most connect-back checks waiting or running at once (more `ADD`s are refused until they finish).
pub const MAX_CHECKS: usize = 16;
/// Most characters of a title kept (bzfs allows 127).
pub const MAX_TITLE: usize = 128;
/// Most bytes of `nameport`, `version`, `gameinfo` and `build`.
pub const MAX_FIELD: usize = 256;

/// One listed server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// `host:port` as the server announced it.
    pub nameport: String,
    /// The address it was checked at.
    pub addr: SocketAddr,
    /// Protocol version (`BZFS0221`).
    pub version: String,
    /// Hex of its ping packet.
    pub gameinfo: String,
    /// Its build string.
    pub build: String,
    /// Title.
    pub title: String,
    /// Unix seconds of its first and last `ADD`.
    pub first_seen: i64,
    /// Unix seconds of its last `ADD`.
    pub last_seen: i64,
}

/// An `ADD` waiting for its connect-back check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The listing, its `addr` not known yet (the request's source with the port of `nameport`).
    pub listing: Listing,
    /// The address the request came from: the check's address must be it.
    pub source: IpAddr,
}

/// The list server's answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Answer now: status, content type, body.
    Now(u16, &'static str, String),
    /// Run the check ([`connect_back`]) and give its outcome to [`ListServer::checked`].
    Check(Check),
}

/// What the list server counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Servers added (new).
    pub added: u64,
    /// `ADD`s refused (bad fields, forged or private address, caps, failed check).
    pub refused: u64,
    /// Connect-back checks that failed.
    pub checks_failed: u64,
    /// `REMOVE`s honoured.
    pub removed: u64,
    /// Entries dropped after [`LEASE`].
    pub expired: u64,
    /// `LIST` requests answered.
    pub lists: u64,
}

/// The list server.
#[derive(Debug, Default)]
pub struct ListServer {
    entries: HashMap<String, Listing>,
    checks: usize,
    allow_private: bool,
    counts: Counts,
}

fn text(status: u16, body: String) -> Answer {
    Answer::Now(status, "text/plain; charset=utf-8", body)
}

/// `host[:port]` of a `nameport` (5154 when no port).
fn split_nameport(nameport: &str) -> Option<(&str, u16)> {
    match nameport.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => p.parse::<u16>().ok().filter(|p| *p != 0).map(|p| (h, p)),
        Some(_) => None,
        None => Some((nameport, crate::query::BZFLAG_PORT)),
    }
}

/// The key of an entry: its `nameport` with the host lower-cased.
fn key(nameport: &str) -> String {
    nameport.to_ascii_lowercase()
}

impl ListServer {
    /// An empty list; `allow_private` lists loopback and private addresses too.
    pub fn new(allow_private: bool) -> ListServer {
        ListServer { allow_private, ..ListServer::default() }
    }

    /// What it counted.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The entries listed.
    pub fn entries(&self) -> impl Iterator<Item = &Listing> {
        self.entries.values()
    }

    /// Checks running.
    pub fn checks_running(&self) -> usize {
        self.checks
    }

    /// A request: `field` reads a form field (body or query), `source` is the peer's address; `mirrored` gives the
    /// servers mirrored from upstream list servers (asked for by `LIST` only).
    pub fn handle(
        &mut self,
        field: &dyn Fn(&str) -> Option<String>,
        source: IpAddr,
        now: i64,
        mirrored: &dyn Fn() -> Vec<Listing>,
    ) -> Answer {
        match field("action").unwrap_or_default().to_ascii_uppercase().as_str() {
            "ADD" => self.add(field, source, now),
            "REMOVE" => self.remove(field, source),
            "LIST" | "" => self.list(field, &mirrored()),
            a => text(400, format!("ERROR: unknown action {:?}\n", a.chars().take(32).collect::<String>())),
        }
    }

    fn refuse(&mut self, why: &str) -> Answer {
        self.counts.refused += 1;
        text(200, format!("ERROR: {why}\n"))
    }

    /// `ADD`: checks the fields and the caps; the connect-back check comes next.
    pub fn add(&mut self, field: &dyn Fn(&str) -> Option<String>, source: IpAddr, now: i64) -> Answer {
        let get = |k: &str| field(k).map(|v| v.trim().to_owned()).unwrap_or_default();
        let (nameport, version, gameinfo, build) = (get("nameport"), get("version"), get("gameinfo"), get("build"));
        if [&nameport, &version, &gameinfo, &build].iter().any(|f| f.len() > MAX_FIELD) {
            return self.refuse("field too long");
        }
        if nameport.is_empty() || split_nameport(&nameport).is_none() || nameport.contains(char::is_whitespace) {
            return self.refuse("bad nameport");
        }
        if version.is_empty() || !version.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return self.refuse("bad version");
        }
        if gameinfo.is_empty() || !gameinfo.bytes().all(|b| b.is_ascii_hexdigit()) {
            return self.refuse("bad gameinfo");
        }
        if !self.allow_private && special_use(source).is_some() {
            return self.refuse("private and loopback addresses are not listed here");
        }
        let k = key(&nameport);
        if !self.entries.contains_key(&k) {
            if self.entries.len() >= MAX_ENTRIES {
                return self.refuse("the list is full");
            }
            if self.entries.values().filter(|e| e.addr.ip() == source).count() >= MAX_PER_ADDRESS {
                return self.refuse("too many servers from this address");
            }
        }
        if self.checks >= MAX_CHECKS {
            return self.refuse("busy, try again later");
        }
        self.checks += 1;
        let title: String = get("title").chars().filter(|c| !c.is_control()).take(MAX_TITLE).collect();
        let port = split_nameport(&nameport).map_or(crate::query::BZFLAG_PORT, |(_, p)| p);
        let listing = Listing {
            nameport,
            addr: SocketAddr::new(source, port),
            version,
            gameinfo,
            build: build.chars().filter(|c| !c.is_control()).collect(),
            title,
            first_seen: now,
            last_seen: now,
        };
        Answer::Check(Check { listing, source })
    }

    /// The outcome of a check ([`connect_back`]): the address it reached, or why not. Lists the server.
    pub fn checked(&mut self, check: Check, outcome: Result<SocketAddr, String>, now: i64) -> Answer {
        self.checks = self.checks.saturating_sub(1);
        let addr = match outcome {
            Ok(a) => a,
            Err(e) => {
                self.counts.checks_failed += 1;
                return self.refuse(&format!("cannot connect back to {}: {e}", check.listing.nameport));
            }
        };
        if addr.ip() != check.source {
            return self.refuse(&format!("{} is not the requesting address", check.listing.nameport));
        }
        let k = key(&check.listing.nameport);
        if !self.entries.contains_key(&k) && self.entries.len() >= MAX_ENTRIES {
            return self.refuse("the list is full");
        }
        let mut l = check.listing;
        l.addr = addr;
        l.last_seen = now;
        let msg = format!("MSG: ADD {} {} {} {} {}\n", l.nameport, l.version, l.gameinfo, l.build, l.title);
        match self.entries.get_mut(&k) {
            Some(e) => {
                l.first_seen = e.first_seen;
                *e = l;
            }
            None => {
                self.counts.added += 1;
                self.entries.insert(k, l);
            }
        }
        text(200, msg)
    }

    /// `REMOVE`: only from the address that added it.
    fn remove(&mut self, field: &dyn Fn(&str) -> Option<String>, source: IpAddr) -> Answer {
        let nameport = field("nameport").unwrap_or_default();
        let k = key(nameport.trim());
        match self.entries.get(&k) {
            Some(e) if e.addr.ip() == source => {
                self.entries.remove(&k);
                self.counts.removed += 1;
                text(200, format!("MSG: REMOVE {}\n", nameport.trim()))
            }
            Some(_) => self.refuse("not the address that added it"),
            None => text(200, format!("MSG: REMOVE {} (not listed)\n", nameport.trim())),
        }
    }

    /// Drops the entries not added again within [`LEASE`].
    pub fn expire(&mut self, now: i64) {
        let before = self.entries.len();
        self.entries.retain(|_, e| now.saturating_sub(e.last_seen) <= LEASE);
        self.counts.expired += (before - self.entries.len()) as u64;
    }

    /// `LIST`: the entries added here and the `mirrored` ones not added here (by `nameport` and by address), of
    /// `version=` when given, sorted by `nameport`, plain or JSON (`listformat=json`).
    fn list(&mut self, field: &dyn Fn(&str) -> Option<String>, mirrored: &[Listing]) -> Answer {
        self.counts.lists += 1;
        let version = field("version").filter(|v| !v.is_empty());
        let json = field("listformat").is_some_and(|f| f.eq_ignore_ascii_case("json"));
        let direct: std::collections::HashSet<SocketAddr> = self.entries.values().map(|e| e.addr).collect();
        let mirrored =
            mirrored.iter().filter(|m| !direct.contains(&m.addr) && !self.entries.contains_key(&key(&m.nameport)));
        let mut rows: Vec<&Listing> = self
            .entries
            .values()
            .chain(mirrored)
            .filter(|e| version.as_deref().is_none_or(|v| v == e.version))
            .collect();
        rows.sort_by(|a, b| a.nameport.cmp(&b.nameport));
        if json {
            let servers: Vec<_> = rows
                .iter()
                .map(|e| json!([e.nameport, e.version, e.gameinfo, e.addr.ip().to_string(), e.title, "", ""]))
                .collect();
            let body = json!({
                "fields": ["addr", "version", "hexcode", "ipaddr", "title", "owner", "ownername"],
                "servers": servers,
            });
            return Answer::Now(200, "application/json", body.to_string());
        }
        // Written in place (one `format!` a line cost 2.4 µs a line, most of a 10,000-line list's 24 ms).
        let mut out = String::with_capacity(rows.iter().map(|e| e.nameport.len() + e.gameinfo.len() + 80).sum());
        for e in rows {
            let _ = writeln!(out, "{} {} {} {} {}", e.nameport, e.version, e.gameinfo, e.addr.ip(), e.title);
        }
        text(200, out)
    }
}

/// The connect-back check (blocking: run it on the worker): resolves `nameport` and connects to it within
/// [`CONNECT_BACK_TIMEOUT`]; the address it reached. Prefers an address equal to `source`.
pub fn connect_back(nameport: &str, source: IpAddr) -> Result<SocketAddr, String> {
    let (host, port) = split_nameport(nameport).ok_or("bad nameport")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs().map_err(|e| e.to_string())?.take(8).collect();
    let addr = addrs
        .iter()
        .find(|a| a.ip() == source)
        .copied()
        .ok_or_else(|| format!("{host} does not resolve to {source}"))?;
    TcpStream::connect_timeout(&addr, CONNECT_BACK_TIMEOUT).map_err(|e| e.to_string())?;
    Ok(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
    }

    const ADD: &[(&str, &str)] = &[
        ("action", "ADD"),
        ("nameport", "93.184.216.5:5154"),
        ("version", "BZFS0221"),
        ("gameinfo", "0001007a0003"),
        ("build", "2.4.26"),
        ("title", "a\u{7}title"),
    ];

    #[test]
    fn add_check_list_remove_expire() {
        let src: IpAddr = "93.184.216.5".parse().unwrap();
        let mut l = ListServer::new(false);
        let Answer::Check(c) = l.handle(&form(ADD), src, 100, &Vec::new) else { panic!("no check") };
        assert_eq!(l.checks_running(), 1);
        let a = l.checked(c, Ok("93.184.216.5:5154".parse().unwrap()), 101);
        assert!(matches!(a, Answer::Now(200, _, ref b) if b.starts_with("MSG: ADD")));
        let Answer::Now(_, _, body) = l.handle(&form(&[("action", "LIST")]), src, 102, &Vec::new) else { panic!() };
        assert_eq!(body, "93.184.216.5:5154 BZFS0221 0001007a0003 93.184.216.5 atitle\n");
        let Answer::Now(_, ct, body) =
            l.handle(&form(&[("action", "LIST"), ("listformat", "json")]), src, 102, &Vec::new)
        else {
            panic!()
        };
        assert_eq!(ct, "application/json");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["servers"][0][0], "93.184.216.5:5154");
        assert_eq!(v["fields"][2], "hexcode");
        // Another version is not listed.
        let Answer::Now(_, _, body) =
            l.handle(&form(&[("action", "LIST"), ("version", "BZFS0026")]), src, 102, &Vec::new)
        else {
            panic!()
        };
        assert!(body.is_empty());
        // REMOVE from another address is refused.
        let other: IpAddr = "1.1.1.1".parse().unwrap();
        let rm = form(&[("action", "REMOVE"), ("nameport", "93.184.216.5:5154")]);
        let _ = l.handle(&rm, other, 103, &Vec::new);
        assert_eq!(l.entries().count(), 1);
        let _ = l.handle(&rm, src, 103, &Vec::new);
        assert_eq!((l.entries().count(), l.counts().removed), (0, 1));
        // Expiry after the lease.
        let Answer::Check(c) = l.handle(&form(ADD), src, 200, &Vec::new) else { panic!() };
        let _ = l.checked(c, Ok("93.184.216.5:5154".parse().unwrap()), 200);
        l.expire(200 + LEASE);
        assert_eq!(l.entries().count(), 1);
        l.expire(201 + LEASE);
        assert_eq!((l.entries().count(), l.counts().expired), (0, 1));
    }

    #[test]
    fn mirrored_servers_are_listed_as_added_ones_and_an_added_one_wins() {
        let src: IpAddr = "93.184.216.5".parse().unwrap();
        let mut l = ListServer::new(false);
        let Answer::Check(c) = l.handle(&form(ADD), src, 100, &Vec::new) else { panic!() };
        let _ = l.checked(c, Ok("93.184.216.5:5154".parse().unwrap()), 100);
        let mirror = |nameport: &str, addr: &str, title: &str| Listing {
            nameport: nameport.into(),
            addr: addr.parse().unwrap(),
            version: "BZFS0221".into(),
            gameinfo: "0002".into(),
            build: String::new(),
            title: title.into(),
            first_seen: 50,
            last_seen: 90,
        };
        let mirrored = || {
            vec![
                mirror("bz.example.org:5155", "192.0.2.7:5155", "far away"),
                mirror("93.184.216.5:5154", "93.184.216.5:5154", "the upstream's line"),
            ]
        };
        let Answer::Now(_, _, body) = l.handle(&form(&[("action", "LIST")]), src, 101, &mirrored) else { panic!() };
        assert_eq!(
            body,
            "93.184.216.5:5154 BZFS0221 0001007a0003 93.184.216.5 atitle\n\
             bz.example.org:5155 BZFS0221 0002 192.0.2.7 far away\n"
        );
        let json = form(&[("action", "LIST"), ("listformat", "json")]);
        let Answer::Now(_, _, body) = l.handle(&json, src, 101, &mirrored) else { panic!() };
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v["servers"][1],
            serde_json::json!(["bz.example.org:5155", "BZFS0221", "0002", "192.0.2.7", "far away", "", ""])
        );
    }

    #[test]
    fn hostile_adds_are_refused() {
        let mut l = ListServer::new(false);
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(matches!(l.handle(&form(ADD), lo, 1, &Vec::new), Answer::Now(200, _, ref b) if b.starts_with("ERROR")));
        let src: IpAddr = "93.184.216.5".parse().unwrap();
        // A failed check, and a check that reached another address than the requester's.
        let Answer::Check(c) = l.handle(&form(ADD), src, 1, &Vec::new) else { panic!() };
        let _ = l.checked(c, Err("refused".into()), 1);
        let Answer::Check(c) = l.handle(&form(ADD), src, 1, &Vec::new) else { panic!() };
        let _ = l.checked(c, Ok("1.1.1.1:5154".parse().unwrap()), 1);
        assert_eq!(l.entries().count(), 0);
        assert_eq!((l.counts().refused, l.counts().checks_failed), (3, 1));
        // Checks are capped.
        for _ in 0..MAX_CHECKS {
            assert!(matches!(l.handle(&form(ADD), src, 1, &Vec::new), Answer::Check(_)));
        }
        assert!(matches!(l.handle(&form(ADD), src, 1, &Vec::new), Answer::Now(_, _, ref b) if b.contains("busy")));
        let bad = form(&[("action", "ADD"), ("nameport", "x:0"), ("version", "V"), ("gameinfo", "zz")]);
        assert!(matches!(l.handle(&bad, src, 1, &Vec::new), Answer::Now(_, _, ref b) if b.starts_with("ERROR")));
    }

    #[test]
    fn a_flood_from_one_address_stays_within_the_caps() {
        let src: IpAddr = "93.184.216.5".parse().unwrap();
        let mut l = ListServer::new(false);
        for port in 1..=100u16 {
            let np = format!("93.184.216.5:{port}");
            let f = |k: &str| match k {
                "action" => Some("ADD".to_owned()),
                "nameport" => Some(np.clone()),
                "version" => Some("BZFS0221".to_owned()),
                "gameinfo" => Some("00".to_owned()),
                _ => None,
            };
            if let Answer::Check(c) = l.handle(&f, src, 1, &Vec::new) {
                let _ = l.checked(c, Ok(SocketAddr::new(src, port)), 1);
            }
        }
        assert_eq!(l.entries().count(), MAX_PER_ADDRESS);
        assert_eq!(l.counts().refused, 100 - MAX_PER_ADDRESS as u64);
        assert_eq!(l.checks_running(), 0);
    }
}
