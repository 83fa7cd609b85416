//! `observe --web`: the live web view against real `bzfs` games with bzhead bots, opened in real headless Chromium;
//! `/api/state` against the bots' own knowledge; and hostile HTTP clients against the one reactor.

mod api;
mod chromium;
mod hostile;
mod page;
mod replay;
mod shapes;
mod worker;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{bzhead, Bzfs};

/// A child process whose stdout and stderr are collected line by line as they come; killed on drop.
pub struct Spawned {
    child: Child,
    out: Arc<Mutex<String>>,
    err: Arc<Mutex<String>>,
}

impl Spawned {
    pub fn start(mut cmd: Command) -> Spawned {
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let out = Arc::new(Mutex::new(String::new()));
        let err = Arc::new(Mutex::new(String::new()));
        for (pipe, buf) in [
            (child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>), out.clone()),
            (child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>), err.clone()),
        ] {
            let Some(pipe) = pipe else { continue };
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut b = buf.lock().unwrap();
                    b.push_str(&line);
                    b.push('\n');
                }
            });
        }
        Spawned { child, out, err }
    }

    pub fn stdout(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    pub fn stderr(&self) -> String {
        self.err.lock().unwrap().clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until `f` accepts stderr (or stdout with `on_stdout`), up to `limit`.
    pub fn wait_for(&self, on_stdout: bool, limit: Duration, f: impl Fn(&str) -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            let s = if on_stdout { self.stdout() } else { self.stderr() };
            if f(&s) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `bzhead observe --web 127.0.0.1:0 SERVERS... [extra]`, once its web view is up: the process and the view's
/// address (from the URL it prints on stderr).
pub fn web_observer(servers: &[String], extra: &[&str]) -> (Spawned, SocketAddr) {
    let mut cmd = bzhead(["observe", "--web", "127.0.0.1:0", "--no-cache"]);
    cmd.args(extra).args(servers);
    let p = Spawned::start(cmd);
    let ok = p.wait_for(false, Duration::from_secs(20), |s| s.contains("web view on http://"));
    assert!(ok, "no web view URL\nstderr:\n{}\nstdout:\n{}", p.stderr(), p.stdout());
    let err = p.stderr();
    let url = err.split("web view on http://").nth(1).and_then(|r| r.split('/').next()).expect("url");
    let addr: SocketAddr = url.parse().expect("address");
    (p, addr)
}

/// `bzhead bot KINDS --count N --team red,green --quiet SERVER`.
pub fn bots(kinds: &str, count: u32, bzfs: &Bzfs) -> Spawned {
    let cmd =
        bzhead(["bot", kinds, "--count", &count.to_string(), "--team", "red,green", "--quiet", &bzfs.host_port()]);
    Spawned::start(cmd)
}

/// A blocking HTTP/1.1 GET with `Connection: close`: status, head and body.
pub fn http_get(addr: SocketAddr, path: &str) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").expect("write");
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    split_response(&buf)
}

pub fn split_response(buf: &[u8]) -> (u16, String, Vec<u8>) {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").map_or(buf.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head, buf[end..].to_vec())
}

/// `/api/state?server=N` as JSON.
pub fn api_state(addr: SocketAddr, n: usize) -> Value {
    let (status, head, body) = http_get(addr, &format!("/api/state?server={n}"));
    assert_eq!(status, 200, "{head}{}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).expect("state JSON")
}

/// The non-observer players bzfs has, from the real `bzfquery` ("player NAME (Red team) is a ...").
pub fn bzfquery_players(bzfs: &Bzfs) -> Vec<String> {
    let out = crate::support::run_bzfquery(bzfs.addr());
    let mut v: Vec<String> = out
        .lines()
        .filter_map(|l| l.strip_prefix("player "))
        .filter(|l| !l.contains("(Observer team)"))
        .filter_map(|l| l.rsplit_once(" (").map(|(name, _)| name.to_string()))
        .collect();
    v.sort();
    v
}

/// The non-observer callsigns of a `/api/state`.
pub fn api_players(state: &Value) -> Vec<String> {
    let mut v: Vec<String> = state["players"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["team"] != "observer")
        .filter_map(|p| p["callsign"].as_str().map(str::to_string))
        .collect();
    v.sort();
    v
}

/// Resident memory of a process (kB), from /proc.
pub fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
