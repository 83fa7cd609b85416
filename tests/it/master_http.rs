//! `bzhead monitor` serving masters on its HTTP listener, to real peers on loopback: a real `bzfs` registers with
//! the BZFlag list server at `/db/` (`ADD` with the connect-back check, `REMOVE` when it stops) and `LIST` and
//! `bzhead scan --master-protocol bzflag-list` list it; an upstream master that dies keeps its last list served,
//! with provenance saying so.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::monitor::MonitorProc;
use crate::support::plugins::real_plugin_dir;
use crate::support::{free_port, Bzfs, TempDir, WAIT};

/// One HTTP/1.1 request with `Connection: close`: status and body.
pub(crate) fn http(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, WAIT).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(WAIT)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (n, v) in headers {
        req += &format!("{n}: {v}\r\n");
    }
    req += &format!("Content-Length: {}\r\n\r\n", body.len());
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    s.write_all(&bytes).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or(String::new(), |(_, b)| b.to_owned());
    (status, body)
}

pub(crate) fn list(addr: SocketAddr, form: &str) -> String {
    let (status, body) =
        http(addr, "POST", "/db/", &[("Content-Type", "application/x-www-form-urlencoded")], form.as_bytes());
    assert_eq!(status, 200, "{body}");
    body
}

/// `bzhead scan --master URL --master-protocol MP --protocol P --allow-private --json`: its results.
pub(crate) fn scan_master(plugins: &TempDir, url: &str, master_protocol: &str, protocol: &str) -> Vec<Value> {
    let p = plugins.path().to_str().unwrap();
    let args =
        ["scan", "--plugin-dir", p, "--master", url, "--master-protocol", master_protocol, "--protocol", protocol];
    crate::monitor_masters::scan_json(&[&args[..], &["--allow-private", "--json"]].concat())
}

pub(crate) fn wait_until<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what}: not in time");
        thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_real_bzfs_registers_is_listed_and_removes_itself() {
    let dir = TempDir::new("master-bzfls");
    let plugins = real_plugin_dir();
    let m = MonitorProc::start(&dir.join("m.db"), &plugins, &["--allow-private".into()]);
    let url = format!("http://{}/db/", m.http);
    let port = free_port();
    let bzfs = Bzfs::builder()
        .port(port)
        .args(["-publictitle", "bzhead list server test", "-publickey", "x", "-noMasterBanlist"])
        .args(["-publicaddr".to_owned(), format!("127.0.0.1:{port}"), "-publiclist".to_owned(), url.clone()])
        .start();
    let nameport = format!("127.0.0.1:{port}");
    // bzfs posts ADD at start; the list server connects back to it before listing it.
    let line = wait_until("bzfs listed", WAIT * 2, || {
        list(m.http, "action=LIST&version=BZFS0221").lines().find(|l| l.starts_with(&nameport)).map(str::to_owned)
    });
    let fields: Vec<&str> = line.splitn(5, ' ').collect();
    assert_eq!((fields[1], fields[3], fields[4]), ("BZFS0221", "127.0.0.1", "bzhead list server test"), "{line}");
    assert_eq!(fields[2].len(), 58, "gameinfo hex: {line}");
    let json: Value = serde_json::from_str(&list(m.http, "action=LIST&listformat=json")).unwrap();
    assert_eq!(json["servers"][0][0], nameport.as_str(), "{json}");
    assert_eq!(json["fields"][0], "addr");
    // bzhead's own client reads it and queries the server.
    let results = scan_master(&plugins, &url, "bzflag-list", "bzflag");
    assert!(results.iter().any(|r| r["address"] == bzfs.addr().to_string() && r["ok"] == true), "{results:?}");
    // The API shows it registered directly, with its counts from the gameinfo.
    let (_, api) = m.get("/api/masters");
    let v: Value = serde_json::from_str(&api).unwrap();
    crate::schemas::Schema::load("monitor-api").check(&v);
    let s = v["servers"].as_array().unwrap().iter().find(|s| s["address"] == nameport.as_str()).cloned();
    let s = s.unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!((s["direct"].clone(), s["players"].clone()), ("bzflag-list".into(), 0.into()), "{s}");
    assert!(v["counts"]["bzflag"]["added"].as_u64() >= Some(1), "{v}");
    // It posts REMOVE when it stops (SIGTERM, as an operator stops it).
    let mut bzfs = bzfs;
    let _ = bzfs.terminate(WAIT);
    wait_until("bzfs removed", WAIT * 2, || (!list(m.http, "action=LIST").contains(&nameport)).then_some(()));
    let (_, metrics) = m.get("/metrics");
    assert!(metrics.contains("bzhead_master_removed_total{protocol=\"bzflag\"} 1"), "{metrics}");
    assert!(metrics.contains("bzhead_master_list_requests_total{protocol=\"bzflag\"}"), "{metrics}");
}

#[test]
fn the_list_server_refuses_forged_private_and_oversized_adds() {
    let dir = TempDir::new("master-bzfls-hostile");
    let plugins = real_plugin_dir();
    // Without --allow-private: a loopback server is refused.
    let m = MonitorProc::start(&dir.join("m.db"), &plugins, &["--master-ip-header".into(), "X-Real-IP".into()]);
    let port = free_port();
    let add = format!("action=ADD&nameport=127.0.0.1:{port}&version=BZFS0221&gameinfo=00&build=x&title=t");
    assert!(list(m.http, &add).starts_with("ERROR:"));
    // A body over the bound: 413, and the route still answers after.
    let big = vec![b'a'; bzhead::master::MAX_BODY + 1];
    let (status, _) = http(m.http, "POST", "/db/", &[], &big);
    assert_eq!(status, 413);
    // POST elsewhere, and a body elsewhere: refused as before.
    assert_eq!(http(m.http, "POST", "/api/servers", &[], b"").0, 405);
    assert_eq!(http(m.http, "GET", "/api/servers", &[], b"x").0, 413);
    assert_eq!(list(m.http, "action=LIST"), "");
    let (_, metrics) = m.get("/metrics");
    assert!(metrics.contains("bzhead_master_refused_total{protocol=\"bzflag\"} 1"), "{metrics}");
    // A DDNet delete from loopback is refused as private; through a local proxy's X-Real-IP it is judged as from
    // the forwarded address (no datagram or connection goes anywhere for a delete).
    let delete = [("Address", "tw-0.6+udp://connecting-address.invalid:8303"), ("Secret", "s"), ("Action", "delete")];
    let (status, body) = http(m.http, "POST", "/ddnet/15/register", &delete, b"");
    assert!(status == 400 && body.contains("private"), "{status} {body}");
    let forwarded = [&delete[..], &[("X-Real-IP", "93.184.216.34")]].concat();
    let (status, body) = http(m.http, "POST", "/ddnet/15/register", &forwarded, b"");
    assert!(status == 400 && body.contains("could not find registered server"), "{status} {body}");
}

const STUNNEL: &str = "/usr/bin/stunnel4";
const OPENSSL: &str = "/usr/bin/openssl";

/// A child process killed on drop (its log kept).
struct Proc(std::process::Child, crate::support::OutputBuf);

impl Proc {
    fn spawn(mut cmd: std::process::Command, label: &str) -> Proc {
        use std::process::Stdio;
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let log = crate::support::OutputBuf::new();
        if let Some(o) = child.stdout.take() {
            log.attach(&format!("{label}-stdout"), o);
        }
        if let Some(e) = child.stderr.take() {
            log.attach(&format!("{label}-stderr"), e);
        }
        Proc(child, log)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        if thread::panicking() {
            eprintln!("--- {:?} ---\n{}\n---", self.0.id(), self.1.tail(30));
        }
    }
}

/// A test certificate authority and a certificate for 127.0.0.1 it signed (openssl): the CA's file, and the
/// certificate with its key in one file (stunnel's `cert`).
fn test_ca(dir: &TempDir) -> (std::path::PathBuf, std::path::PathBuf) {
    crate::support::require_program(OPENSSL);
    let p = |n: &str| dir.join(n).to_str().unwrap().to_owned();
    let ext = dir.join("ext.cnf");
    std::fs::write(&ext, "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
        .unwrap();
    let steps: [Vec<String>; 3] = [
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=bzhead test CA", "-keyout"]
            .map(String::from)
            .into_iter()
            .chain([p("ca.key"), "-out".into(), p("ca.pem")])
            .collect(),
        ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout"]
            .map(String::from)
            .into_iter()
            .chain([p("srv.key"), "-out".into(), p("srv.csr")])
            .collect(),
        ["x509", "-req", "-days", "1", "-CAcreateserial", "-in"]
            .map(String::from)
            .into_iter()
            .chain([p("srv.csr"), "-CA".into(), p("ca.pem"), "-CAkey".into(), p("ca.key")])
            .chain(["-extfile".into(), p("ext.cnf"), "-out".into(), p("srv.pem")])
            .collect(),
    ];
    for args in steps {
        let out = std::process::Command::new(OPENSSL).args(&args).output().unwrap();
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let mut both = std::fs::read(dir.join("srv.pem")).unwrap();
    both.extend(std::fs::read(dir.join("srv.key")).unwrap());
    std::fs::write(dir.join("stunnel.pem"), both).unwrap();
    (dir.join("ca.pem"), dir.join("stunnel.pem"))
}

#[test]
fn a_real_ddnet_server_registers_over_https_through_the_udp_challenge() {
    use crate::support::gameservers::DDNET_SERVER;
    crate::support::require_program(STUNNEL);
    crate::support::require_program(DDNET_SERVER);
    let dir = TempDir::new("master-ddnet");
    let plugins = real_plugin_dir();
    let m = MonitorProc::start(&dir.join("m.db"), &plugins, &["--allow-private".into()]);
    // TLS in front of the monitor's HTTP listener, the way an operator runs it: stunnel with a certificate of a
    // test CA.
    let (ca, cert) = test_ca(&dir);
    let tls = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let conf = dir.join("stunnel.conf");
    std::fs::write(
        &conf,
        format!(
            "foreground = yes\npid =\n[register]\naccept = {tls}\nconnect = {}\ncert = {}\n",
            m.http,
            cert.display()
        ),
    )
    .unwrap();
    let mut stunnel_cmd = std::process::Command::new(STUNNEL);
    stunnel_cmd.arg(&conf);
    let _stunnel = Proc::spawn(stunnel_cmd, "stunnel");
    wait_until("stunnel listening", WAIT, || TcpStream::connect(tls).ok());
    // DDNet-Server's libcurl (Debian's, OpenSSL) reads the CA bundle compiled into it
    // (/etc/ssl/certs/ca-certificates.crt) and ignores SSL_CERT_FILE and CURL_CA_BUNDLE (tried): the test CA is
    // bind-mounted over that file in a mount namespace of the server's own (unshare), so nothing on the machine
    // trusts it but this one process. It registers with our URL only (sv_register_url), never the real masters.
    let port = free_port();
    let home = TempDir::new("master-ddnet-home");
    let name = "bzhead master test";
    let server = format!(
        "mount --bind {ca} /etc/ssl/certs/ca-certificates.crt && exec {DDNET_SERVER} 'sv_port {port}' \
         'sv_ipv4only 1' 'bindaddr 127.0.0.1' 'sv_register 1' \
         'sv_register_url \"https://{tls}/ddnet/15/register\"' 'sv_name \"{name}\"'",
        ca = ca.display()
    );
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c", &server]);
    cmd.env("HOME", home.path()).current_dir(home.path());
    let ddnet = Proc::spawn(cmd, "ddnet");
    let url = format!("http://{}/ddnet/15/servers.json", m.http);
    let (six, seven) = (format!("tw-0.6+udp://127.0.0.1:{port}"), format!("tw-0.7+udp://127.0.0.1:{port}"));
    // Both of its registers (0.6 and 0.7, each through its own challenge) end in one server with two addresses.
    let entry = wait_until("DDNet-Server in servers.json with both addresses", WAIT * 2, || {
        let (_, body) = http(m.http, "GET", "/ddnet/15/servers.json", &[], b"");
        let v: Value = serde_json::from_str(&body).ok()?;
        let want = serde_json::json!([six, seven]);
        v["servers"].as_array()?.iter().find(|s| s["addresses"] == want).cloned()
    });
    assert_eq!(entry["info"]["name"], name, "{entry}\n{}", ddnet.1.text());
    assert_eq!(entry["info"]["map"]["name"], "Tutorial", "{entry}");
    let (_, metrics) = m.get("/metrics");
    assert!(metrics.contains("bzhead_master_registrations_total{protocol=\"ddnet\"} 2"), "{metrics}");
    assert!(metrics.contains("bzhead_master_challenges_failed_total{protocol=\"ddnet\"} 0"), "{metrics}");
    // bzhead's own client reads the list and queries the server.
    let results = scan_master(&plugins, &url, "ddnet-http", "teeworlds");
    assert!(results.iter().any(|r| r["name"] == name && r["ok"] == true), "{results:?}");
    drop(ddnet);
}

/// An upstream DDNet master on loopback that the test can kill: serves `body` as `servers.json` until dropped
/// (then its port refuses connections).
struct DyingMaster {
    addr: SocketAddr,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl DyingMaster {
    fn start(body: String) -> DyingMaster {
        use std::sync::atomic::Ordering;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                let Ok((mut s, _)) = l.accept() else {
                    thread::sleep(Duration::from_millis(20));
                    continue;
                };
                let _ = s.set_nonblocking(false);
                let _ = s.set_read_timeout(Some(WAIT));
                let mut head = [0u8; 4096];
                let _ = s.read(&mut head);
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        DyingMaster { addr, stop, thread: Some(thread) }
    }
}

impl Drop for DyingMaster {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_dead_upstream_master_keeps_its_last_list_served_with_provenance() {
    use crate::support::gameservers::GameServer;
    let ddnet = GameServer::ddnet("bzhead federated");
    let six = format!("tw-0.6+udp://{}", ddnet.addr());
    // The upstream's info (with a field the monitor's own query cannot know) is served downstream as it is.
    let info = serde_json::json!({"name": "bzhead federated", "map": {"name": "upstream-map"}, "max_clients": 64,
                                  "clients": [{"name": "tee", "is_player": true, "afk": false}]});
    let upstream = DyingMaster::start(serde_json::json!({"servers": [{"addresses": [six], "info": info}]}).to_string());
    let url = format!("http://{}/ddnet/15/servers.json", upstream.addr);
    let dir = TempDir::new("master-federation");
    let config = dir.join("monitor.toml");
    std::fs::write(
        &config,
        format!("interval = 1\nallow_private = true\n[[master]]\nprotocol = \"ddnet-http\"\nurl = \"{url}\"\n"),
    )
    .unwrap();
    let plugins = real_plugin_dir();
    let m = MonitorProc::start(&dir.join("m.db"), &plugins, &["--config".into(), config.to_str().unwrap().into()]);
    let entry = |m: &MonitorProc| -> Option<Value> {
        let (_, body) = m.get("/api/masters");
        let v: Value = serde_json::from_str(&body).ok()?;
        v["servers"].as_array()?.iter().find(|s| s["address"] == ddnet.addr().to_string()).cloned()
    };
    // Mirrored, and served in the downstream's own servers.json (with what the monitor's query found).
    let e = wait_until("mirrored and answered", WAIT * 2, || entry(&m).filter(|e| e["last_ok"].is_i64()));
    assert_eq!(e["upstreams"], serde_json::json!([url]), "{e}");
    assert_eq!((e["direct"].clone(), e["upstreams_stale"].clone()), (Value::Null, false.into()), "{e}");
    let served = |m: &MonitorProc| http(m.http, "GET", "/ddnet/15/servers.json", &[], b"").1;
    assert!(served(&m).contains(&six_of(&ddnet)), "{}", served(&m));
    let v: Value = serde_json::from_str(&served(&m)).unwrap();
    let listed = v["servers"].as_array().unwrap().iter().find(|s| s["addresses"][0] == six_of(&ddnet).as_str());
    assert_eq!(listed.map(|s| s["info"].clone()), Some(info.clone()), "{v}");
    // /api/servers says where it comes from.
    let (_, body) = m.get("/api/servers");
    let v: Value = serde_json::from_str(&body).unwrap();
    crate::schemas::Schema::load("monitor-api").check(&v);
    let s = v["servers"].as_array().unwrap().iter().find(|s| s["address"] == ddnet.addr().to_string()).cloned();
    let s = s.unwrap_or_else(|| panic!("{v}"));
    assert_eq!(
        s["source"]["upstreams"],
        serde_json::json!([{"name": url, "stale": false, "last_ok": s["source"]["upstreams"][0]["last_ok"]}]),
        "{s}"
    );
    assert!(s["source"]["upstreams"][0]["last_ok"].is_i64(), "{s}");
    // The upstream dies: the last list stays, marked stale.
    drop(upstream);
    let e = wait_until("stale provenance", WAIT * 2, || entry(&m).filter(|e| e["upstreams_stale"] == true));
    assert_eq!(e["upstreams"], serde_json::json!([url]), "{e}");
    let (_, body) = m.get("/api/masters");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(v["upstreams"][0]["failing_since"].is_i64() && v["upstreams"][0]["stale"] == true, "{v}");
    crate::schemas::Schema::load("monitor-api").check(&v);
    let list = served(&m);
    assert!(list.contains(&six_of(&ddnet)) && list.contains("upstream-map"), "{list}");
    let (_, metrics) = m.get("/metrics");
    assert!(metrics.contains(&format!("bzhead_master_upstream_ok{{upstream=\"{url}\"}} 0")), "{metrics}");
    assert!(metrics.contains(&format!("bzhead_master_upstream_entries{{upstream=\"{url}\"}} 1")), "{metrics}");
}

fn six_of(s: &crate::support::gameservers::GameServer) -> String {
    format!("tw-0.6+udp://{}", s.addr())
}
