//! `bzhead bzrc`: a BZRC client written from `docs/bzrc.md` (the protocol notes of the BZRFlag course labs) plays
//! on a real `bzfs` through the gateway: it reads `constants`, `mytanks`, `occgrid`, drives, shoots, sees its
//! shots and kills a sitter bot of the other team. And what a bad client does to the gateway: garbage lines, an
//! oversized line, a second connection, a disconnect in the middle of a command.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::{bzhead, free_port, Bzfs, TempDir};

/// A two-team CTF world, 120 × 120: red's base at (−40, 0), green's at (40, 0), a 4 × 4 box at (−40, 20) beside
/// red's base (inside the occupancy window of a tank on that base, and off the line between the bases).
const WORLD: &str = "world\n  size 60\nend\n\
base\n  position -40 0 0\n  size 10 10 0\n  color 1\nend\n\
base\n  position 40 0 0\n  size 10 10 0\n  color 2\nend\n\
box\n  position -40 20 0\n  size 2 2 5\nend\n";

/// The gateway and a sitter, killed on drop.
struct Game {
    bzfs: Bzfs,
    gateway: Child,
    sitter: Option<Child>,
    port: u16,
    _dir: TempDir,
}

impl Drop for Game {
    fn drop(&mut self) {
        for c in std::iter::once(&mut self.gateway).chain(self.sitter.as_mut()) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn start(sitter: bool) -> Game {
    let dir = TempDir::new("bzrc");
    let world = dir.join("two.bzw");
    std::fs::write(&world, WORLD).expect("world file");
    let bzfs = Bzfs::builder().ctf().arg("-sb").max_players("0,4,4,0,0,4").world(&world).start();
    let port = free_port();
    let gateway = bzhead([
        "bzrc".to_string(),
        bzfs.host_port(),
        "--team".into(),
        format!("red=localhost:{port}"),
        "--tanks".into(),
        "1".into(),
        "--for".into(),
        "90".into(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("bzhead bzrc");
    let sitter = sitter.then(|| {
        bzhead(["bot", "sitter", "--team", "green", "--quiet", "--for", "90", &bzfs.host_port()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("bzhead bot sitter")
    });
    Game { bzfs, gateway, sitter, port, _dir: dir }
}

/// A BZRC client as the course libraries are: one request, then its whole answer.
struct Client {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Client {
    /// Connects (waiting for the gateway to listen) and reads the greeting; no handshake yet.
    fn connect(addr: SocketAddr) -> Client {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            // Refused, or closed without a greeting while the port still has an agent: try again.
            if let Ok(s) = TcpStream::connect(addr) {
                s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
                let mut c = Client { r: BufReader::new(s.try_clone().expect("clone")), w: s };
                let mut greeting = String::new();
                if c.r.read_line(&mut greeting).is_ok_and(|n| n > 0) {
                    assert_eq!(greeting, "bzrobots 1\n", "the greeting");
                    return c;
                }
            }
            assert!(Instant::now() < deadline, "no greeting on {addr}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn agent(addr: SocketAddr) -> Client {
        let mut c = Client::connect(addr);
        c.send("agent 1");
        c
    }

    fn send(&mut self, line: &str) {
        self.w.write_all(format!("{line}\n").as_bytes()).expect("send");
    }

    fn line(&mut self) -> String {
        let mut s = String::new();
        self.r.read_line(&mut s).expect("a line");
        s.trim_end_matches('\n').to_string()
    }

    /// The ack of `what`: checks its shape and returns the echo.
    fn ack(&mut self, what: &str) -> String {
        let l = self.line();
        let mut w = l.splitn(3, ' ');
        assert_eq!(w.next(), Some("ack"), "ack of {what:?}: {l:?}");
        let t: f64 = w.next().and_then(|t| t.parse().ok()).unwrap_or(f64::NAN);
        assert!(t.is_finite() && t >= 0.0, "ack time of {what:?}: {l:?}");
        w.next().unwrap_or_default().to_string()
    }

    /// A list query: the items between `begin` and `end`.
    fn list(&mut self, cmd: &str) -> Vec<Vec<String>> {
        self.send(cmd);
        assert_eq!(self.ack(cmd), cmd);
        self.body()
    }

    fn body(&mut self) -> Vec<Vec<String>> {
        assert_eq!(self.line(), "begin");
        let mut items = Vec::new();
        loop {
            let l = self.line();
            if l == "end" {
                return items;
            }
            items.push(l.split_whitespace().map(str::to_string).collect());
        }
    }

    /// A command: `ok` or `fail`.
    fn command(&mut self, cmd: &str) -> bool {
        self.send(cmd);
        self.ack(cmd);
        match self.line().as_str() {
            "ok" => true,
            "fail" => false,
            other => panic!("{cmd:?} answered {other:?}"),
        }
    }

    /// Our tank 0: (alive, x, y, angle, vx, vy, shots_left, reload).
    fn me(&mut self) -> (bool, f64, f64, f64, f64, f64, u32, f64) {
        let items = self.list("mytanks");
        let t = items.first().expect("a tank");
        assert_eq!(t.len(), 13, "mytank has 12 fields: {t:?}");
        let f = |i: usize| t[i].parse::<f64>().unwrap_or(f64::NAN);
        (t[3] == "alive", f(7), f(8), f(9), f(10), f(11), t[4].parse().unwrap_or(99), f(5))
    }
}

fn red(game: &Game) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], game.port))
}

/// Turns our tank to face east (the open side of red's base), so that it can drive a while.
fn face_east(c: &mut Client) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (_, _, _, angle, ..) = c.me();
        if angle.abs() < 0.05 {
            break;
        }
        assert!(Instant::now() < deadline, "cannot turn east (at {angle})");
        assert!(c.command(&format!("angvel 0 {}", (-angle * 2.0).clamp(-1.0, 1.0))));
        std::thread::sleep(Duration::from_millis(30));
    }
    assert!(c.command("angvel 0 0"));
}

/// Waits until our tank is alive.
fn wait_alive(c: &mut Client) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !c.me().0 {
        assert!(Instant::now() < deadline, "our tank never spawned");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_course_client_plays_a_game() {
    let game = start(true);
    // `localhost` is every address it resolves to (127.0.0.1 here; ::1 too where /etc/hosts says so).
    let addrs: Vec<SocketAddr> = ("localhost", game.port).to_socket_addrs().expect("localhost").collect();
    for addr in addrs {
        let mut c = Client::agent(addr);
        assert!(c.command("quit"), "quit on {addr}");
    }
    let mut c = Client::agent(red(&game));
    wait_alive(&mut c);

    let constants = c.list("constants");
    assert_eq!(constants.len(), 18, "{constants:?}");
    assert_eq!(constants[0], ["constant", "team", "red"]);
    assert_eq!(constants[1][..2], ["constant", "worldsize"]);
    assert_eq!(constants[5], ["constant", "tankspeed", "25"]);

    let bases = c.list("bases");
    assert!(
        bases
            .iter()
            .any(|b| b[1] == "red" && b[2..] == ["-30.0", "10.0", "-30.0", "-10.0", "-50.0", "-10.0", "-50.0", "10.0"]),
        "{bases:?}"
    );
    // Our tank and, once it joined, the sitter; then both team flags (bzfs shows a team's flag while it has players).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut teams = c.list("teams");
        teams.sort();
        if teams.len() == 2 {
            assert_eq!(teams, [["team", "green", "1"], ["team", "red", "1"]], "our tank and the sitter");
            break;
        }
        assert_eq!(teams, [["team", "red", "1"]]);
        assert!(Instant::now() < deadline, "the sitter never joined");
        std::thread::sleep(Duration::from_millis(100));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut flags: Vec<(String, String)> =
            c.list("flags").into_iter().map(|f| (f[1].clone(), f[2].clone())).collect();
        flags.sort();
        if flags.len() == 2 || Instant::now() > deadline {
            assert_eq!(flags, [("green".into(), "none".into()), ("red".into(), "none".into())]);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let obstacles = c.list("obstacles");
    assert!(
        obstacles.iter().any(|o| o[1..] == ["-38.0", "22.0", "-38.0", "18.0", "-42.0", "18.0", "-42.0", "22.0"]),
        "{obstacles:?}"
    );

    // The occupancy window around our tank on its base holds the box: 4 × 4 cells, nothing else.
    let (_, x, y, ..) = c.me();
    c.send("occgrid 0");
    assert_eq!(c.ack("occgrid 0"), "occgrid");
    assert_eq!(c.line(), "begin");
    let at = c.line();
    let (x0, y0) = at.strip_prefix("at ").and_then(|s| s.split_once(',')).expect("at X,Y");
    let (x0, y0): (i32, i32) = (x0.parse().expect("x0"), y0.parse().expect("y0"));
    let size = c.line();
    let (w, h) = size.strip_prefix("size ").and_then(|s| s.split_once('x')).expect("size WxH");
    let (w, h): (i32, i32) = (w.parse().expect("w"), h.parse().expect("h"));
    assert!(w > 0 && w <= 50 && h > 0 && h <= 50, "{size}");
    assert!((f64::from(x0) - (x - 25.0)).abs() <= 1.0 || x0 == -60, "window {at} for a tank at {x},{y}");
    let mut ones = 0;
    for i in 0..w {
        let col = c.line();
        assert_eq!(col.len(), h as usize, "column {i}");
        for (j, ch) in col.chars().enumerate() {
            let (cx, cy) = (x0 + i, y0 + j as i32);
            let boxed = (-42..-38).contains(&cx) && (18..22).contains(&cy);
            assert_eq!(ch == '1', boxed, "cell ({cx}, {cy}) of {at} {size}");
            ones += usize::from(ch == '1');
        }
    }
    assert_eq!(c.line(), "end");
    assert_eq!(ones, 16, "the box's 16 cells");

    // Drive: the tank moves.
    face_east(&mut c);
    let (_, x1, y1, ..) = c.me();
    assert!(c.command("speed 0 1"));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(c.command("speed 0 0"));
    let (_, x2, y2, ..) = c.me();
    let moved = ((x2 - x1).powi(2) + (y2 - y1).powi(2)).sqrt();
    assert!(moved > 5.0, "moved {moved} units in 1.5 s at full speed");

    // Hunt the sitter: turn to face it, fire when lined up, until it is dead.
    let deadline = Instant::now() + Duration::from_secs(40);
    let (mut fired, mut shots_seen, mut reloading_seen, mut killed) = (0, 0, false, false);
    while Instant::now() < deadline && !killed {
        let others = c.list("othertanks");
        let Some(sitter) = others.iter().find(|o| o.get(2).map(String::as_str) == Some("green")) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        assert_eq!(sitter.len(), 8, "othertank has 7 fields: {sitter:?}");
        if fired > 0 && sitter[3] == "dead" {
            killed = true;
            break;
        }
        let (tx, ty): (f64, f64) = (sitter[5].parse().unwrap_or(0.0), sitter[6].parse().unwrap_or(0.0));
        let (alive, x, y, angle, ..) = c.me();
        if !alive || sitter[3] != "alive" {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        let mut err = (ty - y).atan2(tx - x) - angle;
        while err > std::f64::consts::PI {
            err -= std::f64::consts::TAU;
        }
        while err < -std::f64::consts::PI {
            err += std::f64::consts::TAU;
        }
        assert!(c.command(&format!("angvel 0 {}", (err * 2.0).clamp(-1.0, 1.0))));
        if err.abs() < 0.04 && c.command("shoot 0") {
            fired += 1;
            let (.., shots_left, reload) = c.me();
            reloading_seen |= reload > 0.0 || shots_left == 0;
            // The tank fires at its next tick (30 a second).
            std::thread::sleep(Duration::from_millis(100));
            let shots = c.list("shots");
            shots_seen += usize::from(shots.iter().any(|s| s.len() == 5));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(fired > 0, "never fired");
    assert!(shots_seen > 0, "our shots never showed in `shots` ({fired} fired)");
    assert!(reloading_seen, "mytanks never showed a reload after a shot");
    assert!(killed, "the sitter was not killed in 40 s ({fired} shots)");
    assert!(c.command("quit"));
    let mut rest = String::new();
    let _ = c.r.read_to_string(&mut rest);
    assert_eq!(rest, "", "nothing after quit's ok");
    assert!(!game.bzfs.log().contains("Kicking"), "{}", game.bzfs.log());
}

#[test]
fn bad_clients_get_fail_and_cannot_hurt_the_gateway() {
    let game = start(false);
    // A bad handshake: fail, closed.
    let mut c = Client::connect(red(&game));
    c.send("hello");
    assert_eq!(c.line(), "fail Unrecognized handshake");
    let mut rest = String::new();
    let _ = c.r.read_to_string(&mut rest);
    assert_eq!(rest, "");

    let mut c = Client::agent(red(&game));
    // A second agent for the same team is closed at once, without a greeting.
    let mut second = TcpStream::connect(red(&game)).expect("connect");
    second.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut got = Vec::new();
    let _ = second.read_to_end(&mut got);
    assert_eq!(got, b"", "a second connection gets nothing");

    // Garbage, pipelined in one write: every answer, in order.
    c.w.write_all(b"foo\n\x00\xff\xfe\n\n  \r\nspeed 0\nshoot x\nspeed 7 1\noccgrid 9\nmytanks extra\nteams\n")
        .expect("send");
    assert_eq!(c.line(), "fail invalid command");
    assert_eq!(c.line(), "fail invalid command");
    assert_eq!(c.ack("speed 0"), "speed 0");
    assert_eq!(c.line(), "fail Invalid parameter(s)");
    assert_eq!(c.line(), "fail");
    assert_eq!(c.ack("shoot x"), "shoot x");
    assert_eq!(c.line(), "fail Invalid parameter(s)");
    assert_eq!(c.ack("speed 7 1"), "speed 7 1.0");
    assert_eq!(c.line(), "fail Invalid tank ID: 7");
    assert_eq!(c.ack("occgrid 9"), "occgrid 9");
    assert_eq!(c.line(), "fail Invalid parameter(s)");
    assert_eq!(c.ack("mytanks extra"), "mytanks extra");
    assert_eq!(c.line(), "fail Invalid parameter(s)");
    assert_eq!(c.ack("teams"), "teams");
    let teams = c.body();
    assert_eq!(teams[0], ["team", "red", "1"]);

    // An oversized line (100 KB, past the 4 KiB bound): one `fail`, and the connection goes on.
    let mut big = vec![b'a'; 100_000];
    big.push(b'\n');
    c.w.write_all(&big).expect("send");
    assert_eq!(c.line(), "fail invalid command");
    c.send("timer");
    c.ack("timer");
    assert!(c.line().starts_with("timer "));

    // Drive, then drop the connection in the middle of a command: the tank stops and the port takes a new agent.
    wait_alive(&mut c);
    face_east(&mut c);
    assert!(c.command("speed 0 1"));
    std::thread::sleep(Duration::from_millis(1000));
    let (.., vx, vy, _, _) = c.me();
    assert!(vx.hypot(vy) > 5.0, "driving at {vx}, {vy}");
    c.w.write_all(b"angvel 0 0.").expect("send");
    drop(c);
    let mut c = Client::agent(red(&game));
    std::thread::sleep(Duration::from_millis(1000));
    let (alive, _, _, _, vx, vy, _, _) = c.me();
    assert!(alive && vx.hypot(vy) < 1.0, "the tank still moves at {vx}, {vy} after its agent left");

    // A client that sends and never reads: the gateway stops taking its lines once 64 KiB of answers wait, so its
    // memory stays put however much the client sends (unbounded, a megabyte of `occgrid 0` would queue 250 MB).
    drop(c);
    let rss_before = rss_kib(game.gateway.id());
    let mut c = Client::agent(red(&game));
    c.w.set_nonblocking(true).expect("nonblocking");
    let chunk = b"occgrid 0\n".repeat(1000);
    let (mut sent, until) = (0usize, Instant::now() + Duration::from_secs(3));
    while Instant::now() < until {
        match c.w.write(&chunk) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("write: {e}"),
        }
    }
    let grown = rss_kib(game.gateway.id()).saturating_sub(rss_before);
    eprintln!("flood: {sent} bytes sent unread; gateway RSS {rss_before} KiB, grew {grown} KiB");
    assert!(sent > 100_000, "only {sent} bytes sent");
    assert!(grown < 16 * 1024, "the gateway grew by {grown} KiB while a client sent {sent} bytes and read none");
    drop(c);
    let mut c = Client::agent(red(&game));
    c.send("timer");
    c.ack("timer");
    assert!(c.line().starts_with("timer "));
}

/// Resident memory of a process, KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
