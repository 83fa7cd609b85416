//! DDNet's HTTP master (`mastersrv`) as a sans-IO state: a register request's headers, body and source address in,
//! the JSON answer and the UDP challenge to send out; Unix seconds passed in, never read here.
//!
//! * `POST /ddnet/15/register` with headers `Address` (`tw-0.6+udp://HOST:PORT` or `tw-0.7+udp://…`; the host is
//!   ignored, the request's source address is used, as mastersrv does: DDNet-Server sends
//!   `connecting-address.invalid`), `Secret` (the server's identity across its addresses), `Challenge-Secret`,
//!   `Challenge-Token` (absent on the first try), `Info-Serial`, `Connless-Token` (0.7: 8 hex digits), and the
//!   server info JSON as the body; `Action: delete` unregisters. Answers `{"status":"success"}`,
//!   `{"status":"need_challenge"}`, `{"status":"need_info"}` or `{"status":"error","message":...}`.
//! * The challenge token of an address is a keyed hash of it ([`TOKEN_RESEED`]: the key changes hourly, the
//!   previous one stays valid, as mastersrv); it is sent by UDP to the registering address, and a register is taken
//!   only with the right token: a register cannot be made for an address one does not receive at.
//! * A registered address not registered again within [`TIMEOUT`] (30 s; servers re-register every 15 s) is
//!   dropped; a server goes with its last address.
//! * `GET /ddnet/15/servers.json`: `{"servers":[{"addresses":[...],"info":{...}}]}` (sorted by addresses).
//!
//! Bounds: [`MAX_ADDRESSES`] addresses, [`MAX_PER_IP`] per IP address, header values of at most [`MAX_HEADER`]
//! bytes; the body by the HTTP layer ([`crate::master::MAX_BODY`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use md5::{Digest, Md5};
use serde_json::{json, Value};

use crate::query::filter::special_use;

/// Seconds a registered address stays without a new register.
pub const TIMEOUT: i64 = 30;
/// Seconds between two keys of the challenge tokens.
pub const TOKEN_RESEED: i64 = 3600;
/// Most addresses registered.
pub const MAX_ADDRESSES: usize = 10_000;
/// Most addresses registered from one IP address.
pub const MAX_PER_IP: usize = 64;
/// Most bytes of a header value taken (`Secret`, tokens; mastersrv's are at most 64).
pub const MAX_HEADER: usize = 64;

/// The game protocol of a registered address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Proto {
    /// `tw-0.6+udp`.
    V6,
    /// `tw-0.7+udp`.
    V7,
}

impl Proto {
    /// The URL scheme.
    pub fn scheme(self) -> &'static str {
        match self {
            Proto::V6 => "tw-0.6+udp",
            Proto::V7 => "tw-0.7+udp",
        }
    }

    /// The query protocol bzhead scans it with.
    pub fn query_protocol(self) -> &'static str {
        match self {
            Proto::V6 => "teeworlds",
            Proto::V7 => "teeworlds7",
        }
    }
}

/// A registered address: `tw-0.6+udp://IP:PORT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DdAddr {
    /// Its protocol.
    pub proto: Proto,
    /// Where.
    pub addr: SocketAddr,
}

impl std::fmt::Display for DdAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.proto.scheme(), self.addr)
    }
}

/// A server: its addresses, its info and when it was seen.
#[derive(Debug, Clone)]
pub struct DdServer {
    /// Its addresses, sorted.
    pub addresses: Vec<DdAddr>,
    /// The serial of `info`.
    pub info_serial: i64,
    /// Its info, a JSON object.
    pub info: Value,
    /// Unix seconds of its first register.
    pub first_seen: i64,
}

impl DdServer {
    /// Clients in its info that play (`is_player`), and the others (spectators).
    pub fn players_and_spectators(&self) -> (usize, usize) {
        let clients = self.info.get("clients").and_then(Value::as_array).map_or(&[][..], |v| v.as_slice());
        let players = clients.iter().filter(|c| c.get("is_player").and_then(Value::as_bool).unwrap_or(true)).count();
        (players, clients.len() - players)
    }
}

struct AddrInfo {
    secret: String,
    last: i64,
}

/// What the master counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Addresses registered (new).
    pub registered: u64,
    /// Challenges sent.
    pub challenges_sent: u64,
    /// Registers with a wrong token (forged or stale).
    pub challenges_failed: u64,
    /// Registers refused (bad headers or body, private address, caps).
    pub refused: u64,
    /// Addresses dropped after [`TIMEOUT`].
    pub expired: u64,
    /// Addresses deleted (`Action: delete`).
    pub deleted: u64,
    /// `servers.json` answered.
    pub lists: u64,
}

/// The answer to a register: HTTP status, JSON body, and a challenge datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The JSON body.
    pub body: String,
    /// The UDP challenge: where and what.
    pub challenge: Option<(SocketAddr, Vec<u8>)>,
}

/// The master.
pub struct DdnetMaster {
    addresses: HashMap<DdAddr, AddrInfo>,
    servers: HashMap<String, DdServer>,
    key: [u8; 16],
    prev_key: [u8; 16],
    keyed_at: i64,
    allow_private: bool,
    counts: Counts,
    /// Per server (by secret): its `servers.json` object, written when it changed, and its sort key (its
    /// addresses joined by spaces).
    fragments: HashMap<String, (String, Vec<u8>)>,
    /// The registered servers as `servers.json` lists them (the fragments sorted, comma-separated), put together by
    /// the first list after a change ([`DdnetMaster::changed`]): a server registering again as it was changes
    /// nothing.
    listed_json: Option<Vec<u8>>,
}

fn status(s: &str) -> Reply {
    Reply { status: 200, body: json!({ "status": s }).to_string(), challenge: None }
}

fn error(msg: &str) -> Reply {
    Reply { status: 400, body: json!({"status": "error", "message": msg}).to_string(), challenge: None }
}

fn random_key() -> [u8; 16] {
    let mut k = [0u8; 16];
    // A key the OS could not give is still a key nobody else knows the next hour of: fall back to the clock.
    if getrandom::fill(&mut k).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        k = t.to_le_bytes();
    }
    k
}

fn token(key: &[u8; 16], addr: &DdAddr) -> String {
    let mut h = Md5::new();
    h.update(key);
    h.update(addr.to_string().as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses `tw-0.6+udp://HOST:PORT` into its protocol and port (the host is not used).
fn parse_address(a: &str) -> Option<(Proto, u16)> {
    let (scheme, rest) = a.trim().split_once("://")?;
    let proto = match scheme {
        "tw-0.6+udp" => Proto::V6,
        "tw-0.7+udp" => Proto::V7,
        _ => return None,
    };
    let port = rest.trim_end_matches('/').rsplit_once(':')?.1.parse::<u16>().ok().filter(|p| *p != 0)?;
    Some((proto, port))
}

/// The challenge datagram (mastersrv's `send_challenge`).
pub fn challenge_packet(connless_token: Option<[u8; 4]>, challenge_secret: &str, token: &str) -> Vec<u8> {
    let mut p = Vec::with_capacity(32 + challenge_secret.len() + token.len());
    match connless_token {
        Some(t) => {
            p.push(0x21);
            p.extend_from_slice(&t);
            p.extend_from_slice(&[0xff; 8]);
        }
        None => p.extend_from_slice(&[0xff; 10]),
    }
    p.extend_from_slice(b"chal");
    p.extend_from_slice(challenge_secret.as_bytes());
    p.push(0);
    p.extend_from_slice(token.as_bytes());
    p.push(0);
    p
}

impl DdnetMaster {
    /// An empty master; `allow_private` takes registers from loopback and private addresses too.
    pub fn new(allow_private: bool, now: i64) -> DdnetMaster {
        DdnetMaster {
            addresses: HashMap::new(),
            servers: HashMap::new(),
            key: random_key(),
            prev_key: random_key(),
            keyed_at: now,
            allow_private,
            counts: Counts::default(),
            fragments: HashMap::new(),
            listed_json: None,
        }
    }

    /// What it counted.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The servers registered.
    pub fn servers(&self) -> impl Iterator<Item = &DdServer> {
        self.servers.values()
    }

    /// Unix seconds of the last register of an address.
    pub fn last_register(&self, a: &DdAddr) -> Option<i64> {
        self.addresses.get(a).map(|i| i.last)
    }

    fn refuse(&mut self, msg: &str) -> Reply {
        self.counts.refused += 1;
        error(msg)
    }

    /// A register (or `Action: delete`) request: `header` reads a request header, `body` is the request body.
    pub fn register(
        &mut self,
        header: &dyn Fn(&str) -> Option<String>,
        body: &[u8],
        source: IpAddr,
        now: i64,
    ) -> Reply {
        self.tick(now);
        let get = |k: &str| header(k).map(|v| v.trim().to_owned());
        let Some((proto, port)) = get("address").as_deref().and_then(parse_address) else {
            return self.refuse("missing or bad header Address");
        };
        let Some(secret) = get("secret").filter(|s| !s.is_empty() && s.len() <= MAX_HEADER) else {
            return self.refuse("missing or bad header Secret");
        };
        if !self.allow_private && special_use(source).is_some() {
            return self.refuse("private and loopback addresses are not listed here");
        }
        let source = match source {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(source, IpAddr::V4),
            v4 => v4,
        };
        let addr = DdAddr { proto, addr: SocketAddr::new(source, port) };
        if get("action").is_some_and(|a| a.eq_ignore_ascii_case("delete")) {
            return match self.addresses.get(&addr) {
                Some(i) if i.secret == secret => {
                    self.remove_addr(&addr);
                    self.counts.deleted += 1;
                    status("success")
                }
                _ => self.refuse("could not find registered server"),
            };
        }
        let Some(challenge_secret) = get("challenge-secret").filter(|s| s.len() <= MAX_HEADER) else {
            return self.refuse("missing or bad header Challenge-Secret");
        };
        if challenge_secret.contains('\0') {
            return self.refuse("bad header Challenge-Secret");
        }
        let Some(info_serial) = get("info-serial").and_then(|s| s.parse::<i64>().ok()) else {
            return self.refuse("missing or bad header Info-Serial");
        };
        let connless = match proto {
            Proto::V6 => None,
            Proto::V7 => {
                let t = get("connless-token").unwrap_or_default();
                let bytes: Option<Vec<u8>> = (t.len() == 8)
                    .then(|| (0..4).map(|i| u8::from_str_radix(t.get(2 * i..2 * i + 2)?, 16).ok()).collect())
                    .flatten();
                match bytes.and_then(|b| <[u8; 4]>::try_from(b).ok()) {
                    Some(b) => Some(b),
                    None => return self.refuse("tw-0.7+udp requires header Connless-Token (8 hex digits)"),
                }
            }
        };
        let info = if body.is_empty() {
            None
        } else {
            match serde_json::from_slice::<Value>(body) {
                Ok(v @ Value::Object(_)) => Some(v),
                _ => return self.refuse("register info must be a JSON object"),
            }
        };
        let (current, prev) = (token(&self.key, &addr), token(&self.prev_key, &addr));
        let given = get("challenge-token");
        let good = given.as_deref().is_some_and(|t| t == current || t == prev);
        let send = given.as_deref() != Some(current.as_str());
        if given.is_some() && !good {
            self.counts.challenges_failed += 1;
        }
        let mut reply = if good { self.add(addr, &secret, info_serial, info, now) } else { status("need_challenge") };
        if send {
            self.counts.challenges_sent += 1;
            reply.challenge = Some((addr.addr, challenge_packet(connless, &challenge_secret, &current)));
        }
        reply
    }

    fn add(&mut self, addr: DdAddr, secret: &str, info_serial: i64, info: Option<Value>, now: i64) -> Reply {
        let need_info = self.servers.get(secret).is_none_or(|s| info_serial > s.info_serial);
        if need_info && info.is_none() {
            return status("need_info");
        }
        if !self.addresses.contains_key(&addr) {
            if self.addresses.len() >= MAX_ADDRESSES {
                return self.refuse("the list is full");
            }
            if self.addresses.keys().filter(|a| a.addr.ip() == addr.addr.ip()).count() >= MAX_PER_IP {
                return self.refuse("too many servers from this address");
            }
        }
        let old = self.addresses.insert(addr, AddrInfo { secret: secret.to_owned(), last: now });
        match old {
            Some(o) if o.secret != secret => {
                self.detach(&addr, &o.secret);
            }
            Some(_) => {}
            None => self.counts.registered += 1,
        }
        let s = self.servers.entry(secret.to_owned()).or_insert_with(|| DdServer {
            addresses: Vec::new(),
            info_serial: i64::MIN,
            info: Value::Null,
            first_seen: now,
        });
        let mut changed = false;
        if !s.addresses.contains(&addr) {
            s.addresses.push(addr);
            s.addresses.sort_unstable();
            changed = true;
        }
        if let Some(info) = info.filter(|_| info_serial > s.info_serial) {
            s.info_serial = info_serial;
            s.info = info;
            changed = true;
        }
        if changed {
            let f = fragment(s);
            self.fragments.insert(secret.to_owned(), f);
            self.changed();
        }
        status("success")
    }

    /// The list changed: `servers.json`'s cached part is rebuilt when next asked for.
    fn changed(&mut self) {
        self.listed_json = None;
    }

    fn detach(&mut self, addr: &DdAddr, secret: &str) {
        self.changed();
        if let Some(s) = self.servers.get_mut(secret) {
            s.addresses.retain(|a| a != addr);
            if s.addresses.is_empty() {
                self.servers.remove(secret);
                self.fragments.remove(secret);
            } else {
                let f = fragment(s);
                self.fragments.insert(secret.to_owned(), f);
            }
        }
    }

    fn remove_addr(&mut self, addr: &DdAddr) {
        if let Some(i) = self.addresses.remove(addr) {
            self.detach(addr, &i.secret);
        }
    }

    /// Drops the addresses past [`TIMEOUT`]; changes the token key every [`TOKEN_RESEED`].
    pub fn tick(&mut self, now: i64) {
        if now.saturating_sub(self.keyed_at) >= TOKEN_RESEED {
            self.prev_key = std::mem::replace(&mut self.key, random_key());
            self.keyed_at = now;
        }
        let old: Vec<DdAddr> =
            self.addresses.iter().filter(|(_, i)| now.saturating_sub(i.last) > TIMEOUT).map(|(a, _)| *a).collect();
        for a in old {
            self.remove_addr(&a);
            self.counts.expired += 1;
        }
    }

    /// `servers.json`: the registered servers, then `extra` (federated entries, already in the shape).
    ///
    /// Each server's object is serialized when it changes (its info written as it is, no copy of it), and the list
    /// of them put together once per change, so that a list of [`MAX_ADDRESSES`] servers costs a sort and a
    /// concatenation after a change and a copy of its bytes while nothing changed.
    pub fn servers_json(&mut self, now: i64, extra: Vec<Value>) -> String {
        self.tick(now);
        self.counts.lists += 1;
        let listed = self.listed_json.get_or_insert_with(|| listed_json(&self.fragments));
        let mut out = Vec::with_capacity(listed.len() + 16 + extra.len() * 256);
        out.extend_from_slice(br#"{"servers":["#);
        out.extend_from_slice(listed);
        for (i, e) in extra.iter().enumerate() {
            if i > 0 || !listed.is_empty() {
                out.push(b',');
            }
            // Writing a `Value` into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut out, e);
        }
        out.extend_from_slice(b"]}");
        // serde_json writes UTF-8 only.
        String::from_utf8(out).unwrap_or_default()
    }
}

/// A server's object in `servers.json` (`{"addresses":[...],"info":{...}}`) and its sort key.
fn fragment(s: &DdServer) -> (String, Vec<u8>) {
    let addresses: Vec<String> = s.addresses.iter().map(ToString::to_string).collect();
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(br#"{"addresses":"#);
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, &addresses);
    out.extend_from_slice(br#","info":"#);
    let _ = serde_json::to_writer(&mut out, &s.info);
    out.push(b'}');
    out.shrink_to_fit(); // kept for as long as the server is listed
    (addresses.join(" "), out)
}

/// The registered servers as `servers.json` lists them: their objects sorted by their addresses (joined by spaces),
/// separated by commas.
fn listed_json(fragments: &HashMap<String, (String, Vec<u8>)>) -> Vec<u8> {
    let mut rows: Vec<&(String, Vec<u8>)> = fragments.values().collect();
    rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::with_capacity(rows.iter().map(|r| r.1.len() + 1).sum());
    for (i, (_, f)) in rows.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| n.eq_ignore_ascii_case(k)).map(|(_, v)| v.clone())
    }

    fn reg(token: Option<String>, serial: i64) -> Vec<(&'static str, String)> {
        let mut h = vec![
            ("Address", "tw-0.7+udp://connecting-address.invalid:8303".to_owned()),
            ("Secret", "s3cr3t".to_owned()),
            ("Challenge-Secret", "cs:0".to_owned()),
            ("Info-Serial", serial.to_string()),
            ("Connless-Token", "0a0b0c0d".to_owned()),
        ];
        if let Some(t) = token {
            h.push(("Challenge-Token", t));
        }
        h
    }

    #[test]
    fn register_through_the_challenge_and_expire() {
        let src: IpAddr = "93.184.216.7".parse().unwrap();
        let mut m = DdnetMaster::new(false, 0);
        let info = br#"{"name":"x","clients":[{"name":"a","is_player":true},{"name":"b","is_player":false}]}"#;
        let r = m.register(&headers(reg(None, 1)), info, src, 10);
        assert!(r.body.contains("need_challenge"));
        let (to, pkt) = r.challenge.unwrap();
        assert_eq!(to, "93.184.216.7:8303".parse().unwrap());
        assert_eq!(&pkt[..5], &[0x21, 0x0a, 0x0b, 0x0c, 0x0d]);
        assert_eq!(&pkt[5..17], b"\xff\xff\xff\xff\xff\xff\xff\xffchal");
        let rest = &pkt[17..];
        let parts: Vec<&[u8]> = rest.split(|b| *b == 0).collect();
        assert_eq!(parts[0], b"cs:0");
        let token = String::from_utf8(parts[1].to_vec()).unwrap();
        // A wrong token is counted and not taken.
        let r = m.register(&headers(reg(Some("forged".into()), 1)), info, src, 10);
        assert!(r.body.contains("need_challenge"));
        assert_eq!(m.counts().challenges_failed, 1);
        // Without info first: need_info.
        let r = m.register(&headers(reg(Some(token.clone()), 1)), b"", src, 11);
        assert!(r.body.contains("need_info"));
        let r = m.register(&headers(reg(Some(token.clone()), 1)), info, src, 11);
        assert!(r.body.contains("success") && r.challenge.is_none(), "{r:?}");
        let s = m.servers().next().unwrap();
        assert_eq!(s.players_and_spectators(), (1, 1));
        let v: Value = serde_json::from_str(&m.servers_json(12, vec![])).unwrap();
        assert_eq!(v["servers"][0]["addresses"][0], "tw-0.7+udp://93.184.216.7:8303");
        assert_eq!(v["servers"][0]["info"]["name"], "x");
        // Re-registering keeps it; 31 s without drops it.
        let _ = m.register(&headers(reg(Some(token), 1)), b"", src, 30);
        m.tick(60);
        assert_eq!(m.servers().count(), 1);
        m.tick(61);
        assert_eq!((m.servers().count(), m.counts().expired), (0, 1));
    }

    #[test]
    fn hostile_registers_are_refused() {
        let mut m = DdnetMaster::new(false, 0);
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(m.register(&headers(reg(None, 1)), b"{}", lo, 1).status, 400);
        let src: IpAddr = "93.184.216.7".parse().unwrap();
        let mut h = reg(None, 1);
        h.retain(|(n, _)| *n != "Connless-Token");
        assert_eq!(m.register(&headers(h), b"{}", src, 1).status, 400);
        assert_eq!(m.register(&headers(reg(None, 1)), b"[1]", src, 1).status, 400);
        let mut h = reg(None, 1);
        h[1].1 = "x".repeat(MAX_HEADER + 1);
        assert_eq!(m.register(&headers(h), b"{}", src, 1).status, 400);
        assert_eq!(m.counts().refused, 4);
        // A delete for an address not registered.
        let mut h = reg(None, 1);
        h.push(("Action", "delete".into()));
        assert_eq!(m.register(&headers(h), b"", src, 1).status, 400);
    }

    #[test]
    fn a_flood_from_one_address_stays_within_the_caps() {
        let src: IpAddr = "93.184.216.7".parse().unwrap();
        let mut m = DdnetMaster::new(false, 0);
        for port in 1..=1000u16 {
            let addr = DdAddr { proto: Proto::V6, addr: SocketAddr::new(src, port) };
            let h = vec![
                ("Address", format!("tw-0.6+udp://connecting-address.invalid:{port}")),
                ("Secret", format!("s{port}")),
                ("Challenge-Secret", "c".to_owned()),
                ("Info-Serial", "1".to_owned()),
                ("Challenge-Token", token(&m.key, &addr)),
            ];
            let _ = m.register(&headers(h), b"{\"name\":\"x\"}", src, 1);
        }
        assert_eq!(m.servers().count(), MAX_PER_IP);
        assert_eq!(m.counts().refused, 1000 - MAX_PER_IP as u64);
    }
}

#[cfg(test)]
mod list_tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Registers `secret` from `ip` with `info` at `serial`, through the challenge.
    fn register(m: &mut DdnetMaster, ip: &str, secret: &str, serial: i64, info: &str, now: i64) {
        let src: IpAddr = ip.parse().unwrap();
        let mut h = vec![
            ("address", "tw-0.6+udp://connecting-address.invalid:8303".to_owned()),
            ("secret", secret.to_owned()),
            ("challenge-secret", "cs".to_owned()),
            ("info-serial", serial.to_string()),
        ];
        fn get<'a>(h: &'a [(&'static str, String)]) -> impl Fn(&str) -> Option<String> + 'a {
            move |k| h.iter().find(|(n, _)| n.eq_ignore_ascii_case(k)).map(|(_, v)| v.clone())
        }
        let r = m.register(&get(&h), info.as_bytes(), src, now);
        let token = match r.challenge {
            Some((_, pkt)) => {
                let rest = &pkt[14..];
                String::from_utf8(rest.split(|b| *b == 0).nth(1).unwrap().to_vec()).unwrap()
            }
            None => return,
        };
        h.push(("challenge-token", token));
        let r = m.register(&get(&h), info.as_bytes(), src, now);
        assert!(r.body.contains("success"), "{r:?}");
    }

    /// `servers.json` built from the servers as one JSON value (the shape the cached bytes must have).
    fn reference(m: &DdnetMaster, extra: &[Value]) -> String {
        let mut list: BTreeMap<String, Value> = BTreeMap::new();
        for s in m.servers() {
            let addresses: Vec<String> = s.addresses.iter().map(|a| a.to_string()).collect();
            list.insert(addresses.join(" "), json!({"addresses": addresses, "info": s.info}));
        }
        let mut servers: Vec<Value> = list.into_values().collect();
        servers.extend(extra.iter().cloned());
        json!({ "servers": servers }).to_string()
    }

    #[test]
    fn the_cached_list_follows_every_change() {
        let mut m = DdnetMaster::new(false, 0);
        let extra = vec![json!({"addresses": ["tw-0.6+udp://93.184.216.99:8303"], "info": {"name": "fed"}})];
        let check = |m: &mut DdnetMaster, now: i64, what: &str| {
            assert_eq!(m.servers_json(now, vec![]), reference(m, &[]), "{what}");
            assert_eq!(m.servers_json(now, extra.clone()), reference(m, &extra), "{what}, with extra");
        };
        check(&mut m, 1, "empty");
        register(&mut m, "93.184.216.20", "b", 1, r#"{"name":"b \"quoted\" é"}"#, 1);
        register(&mut m, "93.184.216.10", "a", 1, r#"{"name":"a","clients":[]}"#, 1);
        check(&mut m, 2, "two");
        // Another address of a server; a new info; the same again (no change).
        register(&mut m, "93.184.216.11", "a", 1, r#"{"name":"a","clients":[]}"#, 3);
        check(&mut m, 3, "a second address");
        register(&mut m, "93.184.216.20", "b", 2, r#"{"name":"b2"}"#, 4);
        check(&mut m, 4, "new info");
        assert!(m.servers_json(4, vec![]).contains(r#""name":"b2""#));
        register(&mut m, "93.184.216.20", "b", 2, r#"{"name":"b2"}"#, 20);
        check(&mut m, 20, "registered again");
        // a's addresses lapse (last at 1 and 3); b stays.
        check(&mut m, 34, "expired");
        assert_eq!(m.servers().count(), 1);
    }
}
