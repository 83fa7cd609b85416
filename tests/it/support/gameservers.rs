//! Real game servers on 127.0.0.1 for the query tests: DDNet 16.4, Teeworlds 0.7.5 and OpenArena 0.8.8 (ioquake3),
//! from the Debian packages `.ci/run` installs. Each is bound to 127.0.0.1 only, registers with no master, runs with
//! a throwaway `HOME` (so no user config is read), and is killed and reaped on drop.
//!
//! Settings read from each server's defaults before use:
//! * DDNet: `bindaddr 127.0.0.1` needs `sv_ipv4only 1` (otherwise it also opens an IPv6 socket on that address and
//!   exits); `sv_register 0` turns off the HTTPS master registration.
//! * Teeworlds 0.7.5: `bindaddr 127.0.0.1`, `sv_register 0` (the Debian `/etc/teeworlds/server.cfg` sets
//!   `sv_register 1`, but it is only read with `-f`, which we do not pass).
//! * OpenArena: the Debian wrapper sets `sv_master1 dpmaster.deathmask.net`; `dedicated 1` (LAN) sends no
//!   heartbeats and we also clear `sv_master1..5`; `net_ip 127.0.0.1` and `net_enabled 1` (IPv4 only).

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::{free_port, OutputBuf, TempDir};

/// DDNet's server binary (Debian `ddnet-server`).
pub const DDNET_SERVER: &str = "/usr/games/DDNet-Server";
/// Teeworlds 0.7.5's server (Debian `teeworlds-server`).
pub const TEEWORLDS_SERVER: &str = "/usr/games/teeworlds-server";
/// OpenArena's server wrapper around ioq3ded (Debian `openarena-server`).
pub const OPENARENA_SERVER: &str = "/usr/games/openarena-server";
/// Bots of OpenArena's `baseoa` that [`GameServer::openarena`] adds, in order.
pub const BOT_NAMES: &[&str] = &["grunt", "sarge", "major", "gargoyle", "kyonshi", "sorceress", "dark", "grism"];
/// qstat (Debian `qstat`).
pub const QSTAT: &str = "/usr/bin/quakestat";

/// Fails the test unless `path` exists, saying which package provides it.
#[track_caller]
pub fn require_game_program(path: &str, package: &str) {
    if !Path::new(path).exists() {
        panic!(
            "{path} is missing. The query tests run real game servers: run `.ci/run` as root (it installs them), or \
             `sudo apt-get install {package}` (Debian)."
        );
    }
}

/// Whether a UDP socket is bound to 127.0.0.1:`port` per `/proc/net/udp` (`None` if unreadable).
pub fn udp_bound(port: u16) -> Option<bool> {
    let table = super::proc_net("udp")?;
    let local = format!("0100007F:{port:04X}");
    Some(table.lines().skip(1).any(|line| line.split_whitespace().nth(1) == Some(local.as_str())))
}

/// A running game server.
pub struct GameServer {
    child: Child,
    port: u16,
    log: OutputBuf,
    command_line: String,
    _home: TempDir,
}

impl GameServer {
    /// Starts `program args(port)` and waits until its UDP port is bound (and `ready(log)` holds); retries on a
    /// new port if the process exits first (port taken).
    #[track_caller]
    fn start(
        label: &str,
        program: &str,
        package: &str,
        args: impl Fn(u16) -> Vec<String>,
        ready: impl Fn(&str) -> bool,
    ) -> GameServer {
        require_game_program(program, package);
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port();
            let home = TempDir::new(label);
            let mut cmd = Command::new(program);
            cmd.args(args(port)).env("HOME", home.path()).current_dir(home.path());
            cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
            let command_line = format!("{cmd:?}");
            let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {command_line}: {e}"));
            let log = OutputBuf::new();
            if let Some(o) = child.stdout.take() {
                log.attach(&format!("{label}-stdout"), o);
            }
            if let Some(e) = child.stderr.take() {
                log.attach(&format!("{label}-stderr"), e);
            }
            let mut server = GameServer { child, port, log, command_line, _home: home };
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if let Ok(Some(status)) = server.child.try_wait() {
                    server.log.wait_until(Duration::from_secs(2), |_| false);
                    last = format!("{} exited with {status}:\n{}", server.command_line, server.log.text());
                    break;
                }
                if udp_bound(port) != Some(false) && ready(&server.log.text()) {
                    return server;
                }
                if Instant::now() >= deadline {
                    panic!("{} was not ready within 30 s:\n{}", server.command_line, server.log.text());
                }
                thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("{last}");
    }

    /// A DDNet 16.4 server named `name` (map Tutorial, no players).
    #[track_caller]
    pub fn ddnet(name: &str) -> GameServer {
        let name = name.to_owned();
        GameServer::start(
            "ddnet",
            DDNET_SERVER,
            "ddnet-server",
            move |port| {
                vec![
                    format!("sv_port {port}"),
                    "sv_ipv4only 1".into(),
                    "bindaddr 127.0.0.1".into(),
                    "sv_register 0".into(),
                    format!("sv_name \"{name}\""),
                    "sv_max_clients_per_ip 64".into(),
                ]
            },
            |_| true,
        )
    }

    /// A Teeworlds 0.7.5 server named `name` (map dm1, 8 slots).
    #[track_caller]
    pub fn teeworlds07(name: &str) -> GameServer {
        let name = name.to_owned();
        GameServer::start(
            "tw07",
            TEEWORLDS_SERVER,
            "teeworlds-server",
            move |port| {
                vec![
                    format!("sv_port {port}"),
                    "bindaddr 127.0.0.1".into(),
                    "sv_register 0".into(),
                    format!("sv_name \"{name}\""),
                    "sv_max_clients_per_ip 16".into(),
                ]
            },
            |log| log.contains("version 0.7"),
        )
    }

    /// An OpenArena server named `name` on oa_dm1 with `bots` bots, ready once they all entered the game.
    #[track_caller]
    pub fn openarena(name: &str, bots: u32) -> GameServer {
        GameServer::openarena_with(name, bots, None)
    }

    /// [`GameServer::openarena`] as an Internet server (`dedicated 2`) that sends its heartbeats to `master`.
    #[track_caller]
    pub fn openarena_registered(name: &str, bots: u32, master: SocketAddr) -> GameServer {
        GameServer::openarena_with(name, bots, Some(master))
    }

    #[track_caller]
    fn openarena_with(name: &str, bots: u32, master: Option<SocketAddr>) -> GameServer {
        let name = name.to_owned();
        GameServer::start(
            "openarena",
            OPENARENA_SERVER,
            "openarena-server",
            move |port| {
                let mut v: Vec<String> = Vec::new();
                let mut set = |k: &str, val: &str| v.extend(["+set".to_owned(), k.to_owned(), val.to_owned()]);
                set("net_enabled", "1");
                set("net_ip", "127.0.0.1");
                set("net_port", &port.to_string());
                set("dedicated", if master.is_some() { "2" } else { "1" });
                for i in 1..=5 {
                    set(&format!("sv_master{i}"), "");
                }
                if let Some(m) = master {
                    set("sv_master1", &m.to_string());
                }
                set("sv_hostname", &name);
                set("sv_maxclients", "12");
                set("bot_enable", "1");
                set("g_gametype", "0");
                v.extend(["+map".to_owned(), "oa_dm1".to_owned()]);
                // `addbot` right after the map (bot_minplayers would add one bot every ten seconds).
                for name in BOT_NAMES.iter().cycle().take(bots as usize) {
                    v.extend(["+addbot".to_owned(), (*name).to_owned(), "1".to_owned()]);
                }
                v
            },
            move |log| log.matches("ClientBegin:").count() >= bots as usize,
        )
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// Everything the server printed so far.
    pub fn log(&self) -> String {
        self.log.text()
    }
}

impl Drop for GameServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!("--- last lines of {} ---\n{}\n---", self.command_line, self.log.tail(40));
        }
    }
}

/// A bare Teeworlds 0.7 connection (token handshake + `CTRL CONNECT`, no game messages): 0.7.5 lists it as a
/// `(connecting)` player until it times out (about a minute). Keep the socket alive as long as it should count.
pub fn tw07_bare_connection(server: SocketAddr) -> UdpSocket {
    let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    sock.set_read_timeout(Some(Duration::from_millis(500))).expect("timeout");
    let my_token = (std::process::id() ^ u32::from(sock.local_addr().expect("addr").port())).to_be_bytes();
    let padded = |mut v: Vec<u8>| {
        v.resize(520, 0);
        v
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 2048];
    while Instant::now() < deadline {
        // CTRL TOKEN request: 04 00 00 <no token> 05 <my token>, padded (the server ignores short ones).
        let mut req = vec![0x04, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x05];
        req.extend_from_slice(&my_token);
        sock.send_to(&padded(req), server).expect("send token request");
        let Ok((n, _)) = sock.recv_from(&mut buf) else { continue };
        if n < 12 || buf[0] != 0x04 || buf[7] != 0x05 {
            continue;
        }
        let server_token = [buf[8], buf[9], buf[10], buf[11]];
        let mut connect = vec![0x04, 0x00, 0x00];
        connect.extend_from_slice(&server_token);
        connect.push(0x01); // NET_CTRLMSG_CONNECT
        connect.extend_from_slice(&my_token);
        sock.send_to(&padded(connect), server).expect("send connect");
        if let Ok((n, _)) = sock.recv_from(&mut buf) {
            if n >= 8 && buf[0] == 0x04 && buf[7] == 0x02 {
                return sock; // NET_CTRLMSG_CONNECTACCEPT
            }
        }
    }
    panic!("no 0.7 connection to {server} within 10 s");
}
