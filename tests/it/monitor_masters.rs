//! The masters of every game, against stand-ins built from their documented formats (no real master is reachable
//! here) that list real servers on loopback: the BZFlag list server's `LIST` reply (HTTP POST), DDNet's
//! `servers.json` (HTTP GET), the Teeworlds 0.6 and 0.7 UDP masters. Each is used from `scan --master` and from
//! `monitor`'s `[[master]]`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::gameservers::GameServer;
use crate::support::plugins::real_plugin_dir;
use crate::support::{bzhead, free_port, run_bzhead, Bzfs, OutputBuf, TempDir, WAIT};

/// An HTTP stand-in on loopback: answers every request with `body`, keeps each request's text.
struct HttpStandIn {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
}

impl HttpStandIn {
    fn start(content_type: &'static str, body: String) -> HttpStandIn {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                let _ = s.set_read_timeout(Some(WAIT));
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut head = String::new();
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    head.push_str(&line);
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body_in = vec![0u8; len.min(1 << 16)];
                let _ = r.read_exact(&mut body_in);
                head.push_str(&String::from_utf8_lossy(&body_in));
                seen.lock().unwrap().push(head);
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        HttpStandIn { addr, requests }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// The LIST reply of a BZFlag list server listing `servers` (as the 2.4 list server writes it).
fn bzflag_list_reply(servers: &[(SocketAddr, &str)]) -> String {
    let hex = "0001007a000300000000000000000000000000000000000000000000ff";
    let mut s = String::from("NOTICE: stand-in list server\n");
    for (a, title) in servers {
        s += &format!("localhost:{} BZFS0221 {hex} {} {title}\n", a.port(), a.ip());
    }
    // A server of another protocol version, which the client skips.
    s += &format!("old.example:5154 BZFS0026 {hex} 192.0.2.1 old\n");
    s
}

pub(crate) fn scan_json(args: &[&str]) -> Vec<Value> {
    let out = run_bzhead(args, WAIT * 3);
    assert!(!out.timed_out, "{}", out.describe());
    out.stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn bzflag_list_server_feeds_scan_and_monitor() {
    let bzfs = Bzfs::builder().start();
    let list = HttpStandIn::start("text/plain", bzflag_list_reply(&[(bzfs.addr(), "stand-in <b>title</b>")]));
    let url = list.url("/db/");
    let results = scan_json(&[
        "scan",
        "--master",
        &url,
        "--master-protocol",
        "bzflag-list",
        "--protocol",
        "bzflag",
        "--allow-private",
        "--json",
    ]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["address"], bzfs.addr().to_string());
    assert_eq!(results[0]["ok"], true, "{}", results[0]);
    let req = list.requests.lock().unwrap()[0].clone();
    assert!(req.starts_with("POST /db/ "), "{req}");
    assert!(req.contains("action=LIST") && req.contains("version=BZFS0221"), "{req}");
    // Without --allow-private the loopback entry is dropped by the entry policy.
    let out = run_bzhead(
        ["scan", "--master", &url, "--master-protocol", "bzflag-list", "--protocol", "bzflag", "--json"],
        WAIT * 3,
    );
    assert!(out.stdout.trim().is_empty() && out.stderr.contains("1 dropped"), "{}", out.describe());

    let dir = TempDir::new("monitor-bzlist");
    let config = dir.join("monitor.toml");
    std::fs::write(
        &config,
        format!("interval = 1\nallow_private = true\n[[master]]\nprotocol = \"bzflag-list\"\nurl = \"{url}\"\n"),
    )
    .unwrap();
    let plugins = real_plugin_dir();
    let m = Monitor::start(&dir, &plugins, &["--config", config.to_str().unwrap()]);
    m.wait_for(WAIT * 2, |s| s.iter().any(|v| v["address"] == bzfs.addr().to_string() && v["up"] == true));
}

#[test]
fn ddnet_servers_json_feeds_scan_and_monitor() {
    let ddnet = GameServer::ddnet("bzhead ddnet-http stand-in");
    let tw07 = GameServer::teeworlds07("bzhead ddnet-http seven");
    let body = serde_json::json!({"servers": [
        {"addresses": [format!("tw-0.6+udp://{}", ddnet.addr()), format!("tw-0.7+udp://{}", ddnet.addr())],
         "location": "eu", "info": {"name": "bzhead ddnet-http stand-in", "max_clients": 64, "clients": []}},
        {"addresses": [format!("tw-0.7+udp://{}", tw07.addr())], "info": {"name": "bzhead ddnet-http seven"}},
    ]})
    .to_string();
    let master = HttpStandIn::start("application/json", body);
    let url = master.url("/ddnet/15/servers.json");
    let plugins = real_plugin_dir();
    let p = plugins.path().to_str().unwrap();
    let results = scan_json(&[
        "scan",
        "--master",
        &url,
        "--master-protocol",
        "ddnet-http",
        "--protocol",
        "teeworlds",
        "--allow-private",
        "--json",
        "--plugin-dir",
        p,
    ]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["name"], "bzhead ddnet-http stand-in", "{}", results[0]);
    assert!(master.requests.lock().unwrap()[0].starts_with("GET /ddnet/15/servers.json "));

    let dir = TempDir::new("monitor-ddnet-http");
    let config = dir.join("monitor.toml");
    std::fs::write(
        &config,
        format!("interval = 1\nallow_private = true\n[[master]]\nprotocol = \"ddnet-http\"\nurl = \"{url}\"\n"),
    )
    .unwrap();
    let m = Monitor::start(&dir, &plugins, &["--config", config.to_str().unwrap()]);
    let s = m.wait_for(WAIT * 2, |s| s.len() == 2 && s.iter().all(|v| v["up"] == true));
    let by_proto = |p: &str| s.iter().find(|v| v["protocol"] == p).unwrap().clone();
    assert_eq!(by_proto("teeworlds")["name"], "bzhead ddnet-http stand-in");
    assert_eq!(by_proto("teeworlds7")["name"], "bzhead ddnet-http seven");
}

/// A Teeworlds UDP master stand-in (0.6 framing, or 0.7 with its token handshake) listing `servers`, in pages of
/// `per_page` 18-byte records, and answering the count request.
fn udp_master(seven: bool, servers: Vec<SocketAddr>, per_page: usize) -> SocketAddr {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sock.local_addr().unwrap();
    thread::spawn(move || {
        let our_token = [0x12, 0x34, 0x56, 0x78];
        let mut buf = [0u8; 2048];
        loop {
            let Ok((n, from)) = sock.recv_from(&mut buf) else { return };
            let d = &buf[..n];
            let (magic, header): (&[u8], Vec<u8>) = if seven {
                // Token request: 04 00 00 ff ff ff ff 05 <client token> + padding (520 bytes).
                if n >= 12 && d[0] == 0x04 && d[7] == 5 {
                    let mut r = vec![0x04, 0, 0];
                    r.extend_from_slice(&d[8..12]);
                    r.push(5);
                    r.extend_from_slice(&our_token);
                    let _ = sock.send_to(&r, from);
                    continue;
                }
                // Connless: 21 <our token> <client token> magic.
                if n < 17 || d[0] != 0x21 || d[1..5] != our_token {
                    continue;
                }
                let mut h = vec![0x21];
                h.extend_from_slice(&d[5..9]);
                h.extend_from_slice(&our_token);
                (&d[9..17], h)
            } else {
                if n < 14 || d[..6] != [0xff; 6] {
                    continue;
                }
                (&d[6..14], vec![0xff; 6])
            };
            if magic == b"\xff\xff\xff\xffcou2" {
                let mut r = header.clone();
                r.extend_from_slice(b"\xff\xff\xff\xffsiz2");
                r.extend_from_slice(&(servers.len() as u16).to_be_bytes());
                let _ = sock.send_to(&r, from);
            } else if magic == b"\xff\xff\xff\xffreq2" {
                for page in servers.chunks(per_page) {
                    let mut r = header.clone();
                    r.extend_from_slice(b"\xff\xff\xff\xfflis2");
                    for a in page {
                        let SocketAddr::V4(v4) = a else { continue };
                        r.extend_from_slice(&v4.ip().to_ipv6_mapped().octets());
                        r.extend_from_slice(&a.port().to_be_bytes());
                    }
                    let _ = sock.send_to(&r, from);
                }
            }
        }
    });
    addr
}

#[test]
fn teeworlds_udp_masters_feed_scan_and_monitor() {
    let ddnet = GameServer::ddnet("bzhead tw master six");
    let tw07 = GameServer::teeworlds07("bzhead tw master seven");
    let plugins = real_plugin_dir();
    let p = plugins.path().to_str().unwrap();
    // Entries that answer nothing, over two pages, so that the list must be reassembled.
    let mut six = vec![ddnet.addr()];
    six.extend((0..3).map(|_| SocketAddr::from(([127, 0, 0, 1], free_port()))));
    let m6 = udp_master(false, six, 2);
    let m7 = udp_master(true, vec![tw07.addr()], 75);
    let results = scan_json(&[
        "scan",
        "--master",
        &m6.to_string(),
        "--master-protocol",
        "teeworlds-master",
        "--protocol",
        "teeworlds",
        "--allow-private",
        "--max-ports-per-host",
        "16",
        "--json",
        "--all",
        "--plugin-dir",
        p,
        "--timeout-ms",
        "300",
        "--retries",
        "0",
    ]);
    // The master's own result (with --all), then its four entries, reassembled from two pages.
    let master = results.iter().find(|r| r["protocol"] == "teeworlds-master").expect("the master's result");
    assert_eq!((master["raw"]["count"].clone(), master["raw"]["pages"].clone()), (4.into(), 2.into()), "{master}");
    let results: Vec<Value> = results.iter().filter(|r| r["protocol"] == "teeworlds").cloned().collect();
    assert_eq!(results.len(), 4, "{results:?}");
    let ok: Vec<&Value> = results.iter().filter(|r| r["ok"] == true).collect();
    assert_eq!(ok.len(), 1, "{results:?}");
    assert_eq!(ok[0]["name"], "bzhead tw master six");
    let results = scan_json(&[
        "scan",
        "--master",
        &m7.to_string(),
        "--master-protocol",
        "teeworlds7-master",
        "--protocol",
        "teeworlds7",
        "--allow-private",
        "--json",
        "--plugin-dir",
        p,
    ]);
    let results: Vec<Value> = results.iter().filter(|r| r["protocol"] == "teeworlds7").cloned().collect();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["name"], "bzhead tw master seven", "{}", results[0]);

    let dir = TempDir::new("monitor-tw-masters");
    let config = dir.join("monitor.toml");
    std::fs::write(
        &config,
        format!(
            "interval = 1\nallow_private = true\nmax_ports_per_host = 16\ntimeout_ms = 300\nretries = 0\n\
             [[master]]\nprotocol = \"teeworlds-master\"\naddress = \"{m6}\"\nservers = \"teeworlds\"\n\
             [[master]]\nprotocol = \"teeworlds7-master\"\naddress = \"{m7}\"\nservers = \"teeworlds7\"\n"
        ),
    )
    .unwrap();
    let m = Monitor::start(&dir, &plugins, &["--config", config.to_str().unwrap()]);
    m.wait_for(WAIT * 2, |s| {
        s.iter().filter(|v| v["up"] == true).count() == 2
            && s.iter().any(|v| v["name"] == "bzhead tw master six")
            && s.iter().any(|v| v["name"] == "bzhead tw master seven")
    });
}

/// `bzhead monitor` with extra arguments, its API on a free port; killed on drop.
struct Monitor {
    child: Child,
    http: SocketAddr,
    log: OutputBuf,
}

impl Monitor {
    fn start(dir: &TempDir, plugins: &TempDir, extra: &[&str]) -> Monitor {
        let http = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let db = dir.join("m.db");
        let mut args = vec![
            "monitor".to_owned(),
            "--db".to_owned(),
            db.to_str().unwrap().to_owned(),
            "--http".to_owned(),
            http.to_string(),
            "--plugin-dir".to_owned(),
            plugins.path().to_str().unwrap().to_owned(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let mut cmd = bzhead(&args);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let log = OutputBuf::new();
        if let Some(o) = child.stdout.take() {
            log.attach("monitor-stdout", o);
        }
        if let Some(e) = child.stderr.take() {
            log.attach("monitor-stderr", e);
        }
        let m = Monitor { child, http, log };
        assert!(m.log.wait_for("monitor API on http://", WAIT), "{}", m.log.text());
        m
    }

    fn wait_for(&self, timeout: Duration, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut s = std::net::TcpStream::connect_timeout(&self.http, WAIT).unwrap();
            s.set_read_timeout(Some(WAIT)).unwrap();
            write!(s, "GET /api/servers HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.http).unwrap();
            let mut text = String::new();
            let _ = s.read_to_string(&mut text);
            let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
            let servers = v["servers"].as_array().cloned().unwrap_or_default();
            if pred(&servers) {
                return servers;
            }
            assert!(Instant::now() < deadline, "not seen in time: {v:#}\n{}", self.log.text());
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
