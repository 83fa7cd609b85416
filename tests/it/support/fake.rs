//! Small UDP responders written in the tests: a Quake III server (getinfo/getstatus with echoed challenges), a
//! dpmaster-compatible master (several response datagrams, IPv4 and IPv6 entries, `EOT` only in the last), and an
//! echo responder for the misbehaving test plugin. Each runs on its own thread until dropped.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// A handler gets a datagram and its source and returns the datagrams to answer with.
pub type Handler = Box<dyn FnMut(&[u8], SocketAddr) -> Vec<Vec<u8>> + Send>;

/// A UDP responder thread.
pub struct Responder {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
    seen: Arc<Mutex<Vec<Vec<u8>>>>,
    thread: Option<JoinHandle<()>>,
}

impl Responder {
    /// Binds `bind` (e.g. `127.0.0.1:0` or `[::1]:0`) and answers with `handler`.
    pub fn spawn(bind: &str, mut handler: Handler) -> Responder {
        let sock = UdpSocket::bind(bind).unwrap_or_else(|e| panic!("bind {bind}: {e}"));
        sock.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stop2, requests2, seen2) = (stop.clone(), requests.clone(), seen.clone());
        let thread = thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            while !stop2.load(Ordering::Relaxed) {
                let Ok((n, from)) = sock.recv_from(&mut buf) else { continue };
                requests2.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut s) = seen2.lock() {
                    if s.len() < 1000 {
                        s.push(buf[..n].to_vec());
                    }
                }
                for reply in handler(&buf[..n], from) {
                    let _ = sock.send_to(&reply, from);
                }
            }
        });
        Responder { addr, stop, requests, seen, thread: Some(thread) }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Datagrams received so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The first datagrams received (up to 1000).
    pub fn seen(&self) -> Vec<Vec<u8>> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

const OOB: &[u8] = b"\xff\xff\xff\xff";

/// The challenge argument of `getinfo X` / `getstatus X`.
fn q3_arg<'a>(data: &'a [u8], cmd: &str) -> Option<&'a str> {
    let rest = data.strip_prefix(OOB)?;
    let text = std::str::from_utf8(rest).ok()?.trim_end_matches(['\n', '\0']);
    let (c, arg) = text.split_once(' ').unwrap_or((text, ""));
    (c == cmd).then_some(arg)
}

/// A fake Quake III (ioq3-style) server: `name`, `map`, and players `(name, score, ping)`.
pub fn fake_q3(bind: &str, name: &str, map: &str, players: Vec<(String, i32, u32)>) -> Responder {
    let (name, map) = (name.to_owned(), map.to_owned());
    Responder::spawn(
        bind,
        Box::new(move |data, _| {
            let mut out = OOB.to_vec();
            if let Some(ch) = q3_arg(data, "getinfo") {
                let n = players.len();
                out.extend_from_slice(
                    format!(
                        "infoResponse\n\\sv_maxclients\\16\\clients\\{n}\\mapname\\{map}\\hostname\\{name}\\\
                         protocol\\71\\gamename\\Quake3Arena\\challenge\\{ch}"
                    )
                    .as_bytes(),
                );
            } else if let Some(ch) = q3_arg(data, "getstatus") {
                out.extend_from_slice(
                    format!(
                        "statusResponse\n\\challenge\\{ch}\\sv_hostname\\{name}\\mapname\\{map}\\\
                         sv_maxclients\\16\\g_gametype\\0\n"
                    )
                    .as_bytes(),
                );
                for (n, score, ping) in &players {
                    out.extend_from_slice(format!("{score} {ping} \"{n}\"\n").as_bytes());
                }
            } else {
                return vec![];
            }
            vec![out]
        }),
    )
}

/// A dpmaster-compatible master listing `entries`: answers `getservers` (IPv4 entries only) and `getserversExt`
/// (both families) with pages of at most `per_page` entries, the header repeated in every page and `\EOT\0\0\0`
/// only at the end of the last one (as dpmaster 2.x does).
pub fn fake_dpmaster(bind: &str, entries: Vec<SocketAddr>, per_page: usize) -> Responder {
    Responder::spawn(
        bind,
        Box::new(move |data, _| {
            let Some(rest) = data.strip_prefix(OOB) else { return vec![] };
            let ext = rest.starts_with(b"getserversExt ");
            if !ext && !rest.starts_with(b"getservers ") {
                return vec![];
            }
            let header: &[u8] = if ext { b"getserversExtResponse" } else { b"getserversResponse" };
            let list: Vec<&SocketAddr> = entries.iter().filter(|a| ext || a.is_ipv4()).collect();
            let mut pages = Vec::new();
            for chunk in list.chunks(per_page.max(1)) {
                let mut p = OOB.to_vec();
                p.extend_from_slice(header);
                for a in chunk {
                    match a {
                        SocketAddr::V4(v4) => {
                            p.push(b'\\');
                            p.extend_from_slice(&v4.ip().octets());
                        }
                        SocketAddr::V6(v6) => {
                            p.push(b'/');
                            p.extend_from_slice(&v6.ip().octets());
                        }
                    }
                    p.extend_from_slice(&a.port().to_be_bytes());
                }
                pages.push(p);
            }
            if pages.is_empty() {
                let mut p = OOB.to_vec();
                p.extend_from_slice(header);
                pages.push(p);
            }
            if let Some(last) = pages.last_mut() {
                last.extend_from_slice(b"\\EOT\0\0\0");
            }
            pages
        }),
    )
}

/// The responder the `echo` misbehaving protocol expects: `ping` → `name`.
pub fn echo(bind: &str, name: &str) -> Responder {
    let name = name.as_bytes().to_vec();
    Responder::spawn(bind, Box::new(move |data, _| if data == b"ping" { vec![name.clone()] } else { vec![] }))
}

/// A responder that never answers (a silent address that is still "there").
pub fn silent(bind: &str) -> Responder {
    Responder::spawn(bind, Box::new(|_, _| vec![]))
}
