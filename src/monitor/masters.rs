//! Server lists published over HTTP(S): the BZFlag list server's `LIST` reply and DDNet's `servers.json`.
//! (dpmaster and the Teeworlds UDP masters are plugin protocols: `dpmaster`, `teeworlds-master`.)
//!
//! * **BZFlag** (`bzflag-list`): the client POSTs `action=LIST&version=BZFS0221` to the list server
//!   (`https://my.bzflag.org/db/`); the reply is text, one server per line: `host[:port] BZFS0221 <58 hex digits of
//!   the ping packet> <ip> <title>`, whitespace-separated, the title being the rest of the line, among optional
//!   `TOKEN:`, `NOTOK:`, `ERROR:` and `NOTICE:` lines. Lines of another protocol version are skipped, as the client
//!   does. The entry is queried at `<ip>` with the port of `host[:port]` (5154 when none).
//! * **DDNet** (`ddnet-http`): `GET https://master1.ddnet.org/ddnet/15/servers.json`, a JSON object whose
//!   `servers` array has objects with `addresses` such as `tw-0.6+udp://1.2.3.4:8303` and `tw-0.7+udp://...`, and an
//!   `info` object. An entry is queried with `teeworlds` at its first 0.6 address, else with `teeworlds7` at its
//!   first 0.7 address.
//!
//! Each entry keeps what its list said of it ([`Listed`]), so that the monitor, as a master, can serve it in the
//! same game's list (a BZFlag `LIST` line's fields; a DDNet entry's addresses and `info` object, at most
//! [`MAX_INFO_BYTES`] of it).
//!
//! Both parsers are pure functions over the reply (bounded: at most [`MAX_ENTRIES`] entries), never panic, and
//! skip what they cannot read. [`fetch`] blocks (ureq, with a time limit and a body limit): the command runs it as
//! a job on the reactor's worker (a lane of its own), so the event loop never waits for a master.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde::Deserialize;

/// Most entries taken from one list.
pub const MAX_ENTRIES: usize = 1 << 20;
/// Largest reply read.
pub const MAX_BODY: u64 = 64 << 20;
/// Time allowed for one fetch.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(20);
/// The BZFlag protocol version the list is asked for.
pub const BZFLAG_VERSION: &str = "BZFS0221";
/// Most bytes of a DDNet entry's `info` kept (as JSON text; a larger one is left out: the entry is still listed).
/// DDNet's own register body, the same object, is about 10 KiB for 64 clients.
pub const MAX_INFO_BYTES: usize = 16 * 1024;
/// Most addresses of a DDNet entry kept (a server has one per protocol and address family).
pub const MAX_DDNET_ADDRESSES: usize = 8;
/// Most characters of a BZFlag title kept (bzfs allows 127).
pub const MAX_TITLE: usize = 128;
/// Most bytes of a BZFlag `host:port` kept (a longer line is skipped).
pub const MAX_NAMEPORT: usize = 256;

/// An HTTP master's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The BZFlag list server (`bzflag-list`).
    BzflagList,
    /// DDNet's `servers.json` (`ddnet-http`).
    DdnetJson,
}

impl Format {
    /// From its protocol name.
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "bzflag-list" => Some(Format::BzflagList),
            "ddnet-http" => Some(Format::DdnetJson),
            _ => None,
        }
    }

    /// Its protocol name.
    pub fn name(self) -> &'static str {
        match self {
            Format::BzflagList => "bzflag-list",
            Format::DdnetJson => "ddnet-http",
        }
    }
}

/// One listed server: the protocol to query it with, its address, and the title the list gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Query protocol (`bzflag`, `teeworlds`, `teeworlds7`).
    pub protocol: &'static str,
    /// Address.
    pub addr: SocketAddr,
    /// The list's title or name for it.
    pub title: Option<String>,
    /// What the list said of it, to serve it again in the same game's list.
    pub listed: Option<Listed>,
}

/// What a master's list says of a server, as that game's list carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum Listed {
    /// A BZFlag `LIST` line: `nameport version gameinfo ipaddr title` (the address is the entry's).
    Bzflag {
        /// `host[:port]` as the server announced it.
        nameport: String,
        /// Protocol version (`BZFS0221`).
        version: String,
        /// The 58 hex digits of its ping packet (team counts and settings).
        gameinfo: String,
        /// Its title (control characters left out, at most [`MAX_TITLE`] characters).
        title: String,
    },
    /// A DDNet `servers.json` entry: every address (`tw-0.6+udp://...`) and its `info` object as the list gave it.
    Ddnet {
        /// Its addresses, as listed.
        addresses: Vec<String>,
        /// Its info (at most [`MAX_INFO_BYTES`] as JSON), `None` when the list had none or a larger one.
        info: Option<serde_json::Value>,
        /// Bytes of `info` as JSON.
        info_bytes: usize,
    },
}

impl Listed {
    /// About the bytes it holds (for the mirror's bound).
    pub fn bytes(&self) -> usize {
        match self {
            Listed::Bzflag { nameport, version, gameinfo, title } => {
                nameport.len() + version.len() + gameinfo.len() + title.len()
            }
            Listed::Ddnet { addresses, info_bytes, .. } => {
                addresses.iter().map(String::len).sum::<usize>() + info_bytes
            }
        }
    }
}

/// Parses a BZFlag list server reply.
pub fn parse_bzflag_list(body: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    for line in body.lines() {
        if out.len() >= MAX_ENTRIES {
            break;
        }
        let line = line.trim_end_matches('\r');
        let mut parts = line.splitn(5, [' ', '\t']).filter(|s| !s.is_empty());
        let (Some(nameport), Some(version), Some(hex), Some(ip)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if version != BZFLAG_VERSION || hex.len() != 58 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let Ok(ip) = ip.parse::<IpAddr>() else { continue };
        if nameport.len() > MAX_NAMEPORT {
            continue;
        }
        let port = match nameport.rsplit_once(':') {
            Some((_, p)) => match p.parse::<u16>() {
                Ok(p) if p != 0 => p,
                _ => continue,
            },
            None => crate::query::BZFLAG_PORT,
        };
        let title: Option<String> = line
            .splitn(5, ' ')
            .nth(4)
            .map(|t| t.trim().chars().filter(|c| !c.is_control()).take(MAX_TITLE).collect())
            .filter(|t: &String| !t.is_empty());
        let listed = Listed::Bzflag {
            nameport: nameport.to_owned(),
            version: version.to_owned(),
            gameinfo: hex.to_owned(),
            title: title.clone().unwrap_or_default(),
        };
        out.push(Entry {
            protocol: crate::query::BZFLAG,
            addr: SocketAddr::new(ip, port),
            title,
            listed: Some(listed),
        });
    }
    out
}

#[derive(Deserialize)]
struct DdnetList {
    servers: Vec<DdnetServer>,
}

#[derive(Deserialize)]
struct DdnetServer {
    #[serde(default)]
    addresses: Vec<String>,
    #[serde(default)]
    info: Option<serde_json::Value>,
}

fn ddnet_addr(a: &str) -> Option<(&'static str, SocketAddr)> {
    let (scheme, rest) = a.split_once("://")?;
    let protocol = match scheme {
        "tw-0.6+udp" => "teeworlds",
        "tw-0.7+udp" => "teeworlds7",
        _ => return None,
    };
    let addr: SocketAddr = rest.trim_end_matches('/').parse().ok()?;
    (addr.port() != 0).then_some((protocol, addr))
}

/// Parses DDNet's `servers.json`.
pub fn parse_ddnet_json(body: &str) -> Result<Vec<Entry>, String> {
    let list: DdnetList = serde_json::from_str(body).map_err(|e| format!("not a DDNet server list: {e}"))?;
    let mut out = Vec::new();
    for s in list.servers.into_iter().take(MAX_ENTRIES) {
        let addrs: Vec<_> = s.addresses.iter().filter_map(|a| ddnet_addr(a)).collect();
        let pick = addrs.iter().find(|(p, _)| *p == "teeworlds").or_else(|| addrs.first());
        if let Some(&(protocol, addr)) = pick {
            let title = s.info.as_ref().and_then(|i| i.get("name")).and_then(|n| n.as_str()).map(str::to_owned);
            let info_bytes = s.info.as_ref().filter(|i| i.is_object()).and_then(|i| serde_json::to_string(i).ok());
            let info_bytes = info_bytes.map_or(0, |t| t.len());
            let info = s.info.filter(|_| (1..=MAX_INFO_BYTES).contains(&info_bytes));
            let info_bytes = if info.is_some() { info_bytes } else { 0 };
            let addresses =
                s.addresses.into_iter().filter(|a| ddnet_addr(a).is_some()).take(MAX_DDNET_ADDRESSES).collect();
            out.push(Entry { protocol, addr, title, listed: Some(Listed::Ddnet { addresses, info, info_bytes }) });
        }
    }
    Ok(out)
}

/// Fetches and parses one list (blocking: call it on a worker thread).
pub fn fetch(format: Format, url: &str) -> Result<Vec<Entry>, String> {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().timeout_global(Some(FETCH_TIMEOUT)).http_status_as_error(true).build().into();
    let resp = match format {
        Format::BzflagList => agent.post(url).send_form([("action", "LIST"), ("version", BZFLAG_VERSION)]),
        Format::DdnetJson => agent.get(url).call(),
    };
    let mut resp = resp.map_err(|e| format!("{url}: {e}"))?;
    let body = resp
        .body_mut()
        .with_config()
        .limit(MAX_BODY)
        .lossy_utf8(true)
        .read_to_string()
        .map_err(|e| format!("{url}: {e}"))?;
    match format {
        Format::BzflagList => Ok(parse_bzflag_list(&body)),
        Format::DdnetJson => parse_ddnet_json(&body).map_err(|e| format!("{url}: {e}")),
    }
}

/// A fetch's outcome: the entries or why there are none.
pub type Fetched = Result<Vec<Entry>, String>;

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0001007a000300000000000000000000000000000000000000000000ff";

    #[test]
    fn bzflag_list_lines() {
        assert_eq!(HEX.len(), 58);
        let body = format!(
            "TOKEN: 123\nNOTICE: hello\nbz.example.org:5155 {BZFLAG_VERSION} {HEX} 192.0.2.7 Capture the <b>flag</b>  \n\
             other.example.org {BZFLAG_VERSION} {HEX} 192.0.2.8 plain\n\
             old.example.org:5154 BZFS0026 {HEX} 192.0.2.9 old one\n\
             bad.example.org:0 {BZFLAG_VERSION} {HEX} 192.0.2.10 bad port\n\
             short.example.org:5154 {BZFLAG_VERSION} abcd 192.0.2.11 bad hex\n\
             v6.example.org:5154 {BZFLAG_VERSION} {HEX} 2001:db8::1 six\n"
        );
        let e = parse_bzflag_list(&body);
        let got: Vec<(String, Option<&str>)> = e.iter().map(|e| (e.addr.to_string(), e.title.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("192.0.2.7:5155".to_owned(), Some("Capture the <b>flag</b>")),
                ("192.0.2.8:5154".to_owned(), Some("plain")),
                ("[2001:db8::1]:5154".to_owned(), Some("six")),
            ]
        );
        // Every cut of the reply parses without panicking.
        for i in 0..body.len() {
            if body.is_char_boundary(i) {
                let _ = parse_bzflag_list(&body[..i]);
            }
        }
    }

    #[test]
    fn what_a_hostile_list_says_is_bounded() {
        // A DDNet entry with a huge info and a thousand addresses: the info is left out, eight addresses kept.
        let addrs: Vec<String> = (0..1000).map(|i| format!("tw-0.6+udp://192.0.2.1:{}", 1000 + i)).collect();
        let big = serde_json::json!({"servers": [{"addresses": addrs,
            "info": {"name": "x", "clients": vec![serde_json::json!({"name": "n".repeat(100)}); 500]}}]});
        let e = parse_ddnet_json(&big.to_string()).unwrap();
        let Some(Listed::Ddnet { addresses, info, info_bytes }) = &e[0].listed else { panic!() };
        assert_eq!((addresses.len(), info.is_none(), *info_bytes), (MAX_DDNET_ADDRESSES, true, 0));
        assert_eq!(e[0].title.as_deref(), Some("x"));
        assert!(e[0].listed.as_ref().unwrap().bytes() < 1024);
        // A BZFlag line with a long title and control characters: cut; a long host:port: skipped.
        let hex = HEX;
        let body = format!(
            "a:1 {BZFLAG_VERSION} {hex} 192.0.2.7 {}\u{7}{}\n{}:5154 {BZFLAG_VERSION} {hex} 192.0.2.8 t\n",
            "t".repeat(100),
            "u".repeat(1000),
            "h".repeat(MAX_NAMEPORT + 1)
        );
        let e = parse_bzflag_list(&body);
        assert_eq!(e.len(), 1);
        let Some(Listed::Bzflag { title, nameport, .. }) = &e[0].listed else { panic!() };
        assert_eq!((title.chars().count(), title.contains('\u{7}'), nameport.as_str()), (MAX_TITLE, false, "a:1"));
    }

    #[test]
    fn ddnet_servers_json() {
        let body = r#"{"servers":[
            {"addresses":["tw-0.7+udp://192.0.2.1:8303","tw-0.6+udp://192.0.2.1:8303"],"location":"eu:de",
             "info":{"max_clients":64,"name":"DDNet GER","map":{"name":"Tutorial"},"clients":[]}},
            {"addresses":["tw-0.7+udp://192.0.2.2:8304"],"info":{"name":"only seven"}},
            {"addresses":["ddrace://192.0.2.3:1"],"info":{"name":"unknown scheme"}},
            {"addresses":["tw-0.6+udp://[2001:db8::2]:8305"]}
        ]}"#;
        let e = parse_ddnet_json(body).unwrap();
        let got: Vec<(&str, String)> = e.iter().map(|e| (e.protocol, e.addr.to_string())).collect();
        assert_eq!(
            got,
            [
                ("teeworlds", "192.0.2.1:8303".to_owned()),
                ("teeworlds7", "192.0.2.2:8304".to_owned()),
                ("teeworlds", "[2001:db8::2]:8305".to_owned())
            ]
        );
        assert_eq!(e[0].title.as_deref(), Some("DDNet GER"));
        // What the list says is kept: every address, the info as it is.
        let Some(Listed::Ddnet { addresses, info: Some(info), info_bytes }) = &e[0].listed else { panic!("{e:?}") };
        assert_eq!(addresses, &["tw-0.7+udp://192.0.2.1:8303", "tw-0.6+udp://192.0.2.1:8303"]);
        assert_eq!((info["map"]["name"].as_str(), *info_bytes), (Some("Tutorial"), info.to_string().len()));
        assert!(matches!(&e[2].listed, Some(Listed::Ddnet { info: None, info_bytes: 0, .. })));
        assert!(parse_ddnet_json("{\"servers\":5}").is_err());
        assert!(parse_ddnet_json("[").is_err());
    }
}
