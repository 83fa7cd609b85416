//! The harness itself against the real programs: if these fail, every other integration test is suspect.

use std::net::{TcpStream, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::{
    bzhead_bin, free_port, port_is_usable_for_bzflag_udp, run_bzfquery, run_with_deadline, run_with_input, Bzadmin,
    Bzfs, TempDir, WAIT,
};

#[test]
fn free_ports_are_bindable_for_tcp_and_udp() {
    for _ in 0..20 {
        let port = free_port();
        assert!(port_is_usable_for_bzflag_udp(port), "{port}");
        assert!(port & 0xff > 3);
        let _tcp = std::net::TcpListener::bind(("127.0.0.1", port)).expect("TCP");
        let _udp = UdpSocket::bind(("127.0.0.1", port)).expect("UDP");
    }
    assert!(!port_is_usable_for_bzflag_udp(1024));
    assert!(!port_is_usable_for_bzflag_udp(51203));
    assert!(port_is_usable_for_bzflag_udp(51204));
}

#[test]
fn bzfquery_reports_the_game() {
    let bzfs = Bzfs::builder().ctf().jumping().max_shots(3).max_players("4,4,4,4,4,4").start();
    let out = run_bzfquery(bzfs.addr());
    assert!(out.contains("style: ClassicCTF"), "{out}");
    assert!(out.contains("maxShots: 3"), "{out}");
    assert!(out.contains("max sizes:  4 4 4 4 4 4"), "{out}");
    assert!(out.contains("Red team: 0 players"), "{out}");
    // bzfquery's connection is logged as a player slot that disconnects.
    assert!(bzfs.wait_for_log("removed", WAIT), "{}", bzfs.log());
}

#[test]
fn bzadmin_joins_chats_and_leaves() {
    let bzfs = Bzfs::builder().srvmsg("harness says hi").start();
    let mut admin = Bzadmin::join("watcher", bzfs.addr());
    assert!(admin.output().contains("*** 'watcher' joined the game as Observer."), "{}", admin.output());
    assert!(admin.wait_for_output("[SERVER->] harness says hi", WAIT), "{}", admin.output());
    assert!(admin.wait_for_output("[SERVER->] You are in observer mode.", WAIT), "{}", admin.output());
    assert!(bzfs.wait_for_log("Player watcher [0] has joined from 127.0.0.1", WAIT), "{}", bzfs.log());

    admin.say("hello from the harness");
    assert!(bzfs.wait_for_log("Player watcher [0] -> All: hello from the harness", WAIT), "{}", bzfs.log());
    assert!(admin.wait_for_output("    watcher: hello from the harness", WAIT), "{}", admin.output());

    let status = admin.quit(WAIT).expect("bzadmin exits after /quit");
    assert!(status.success(), "{status}");
    assert!(bzfs.wait_for_log("Player watcher [0] removed", WAIT), "{}", bzfs.log());
}

#[test]
fn two_observers_see_each_other() {
    let bzfs = Bzfs::start();
    let mut alice = Bzadmin::join("alice", bzfs.addr());
    let mark = alice.output_buf().mark();
    let mut bob = Bzadmin::join("bob", bzfs.addr());
    assert!(alice.output_buf().wait_for_since(mark, "*** 'bob' joined the game as Observer.", WAIT));
    bob.say("hi alice");
    assert!(alice.wait_for_output("    bob: hi alice", WAIT), "{}", alice.output());
    assert!(bob.quit(WAIT).is_some_and(|s| s.success()));
    assert!(alice.wait_for_output("*** 'bob' left the game.", WAIT), "{}", alice.output());
    assert!(alice.quit(WAIT).is_some_and(|s| s.success()));
}

#[test]
fn bzadmin_rejection_is_visible() {
    let bzfs = Bzfs::start();
    let mut admin = Bzadmin::builder("x", bzfs.addr()).start();
    let status = admin.wait_exit(WAIT).expect("a rejected bzadmin exits");
    assert_eq!(status.code(), Some(1));
    assert!(admin.output().contains("Callsigns must be at least 2 characters."), "{}", admin.output());
}

#[test]
fn dropping_bzfs_kills_the_server() {
    let bzfs = Bzfs::start();
    let (addr, pid) = (bzfs.addr(), bzfs.pid());
    TcpStream::connect(addr).expect("the server accepts connections while running");
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    drop(bzfs);
    // Killed and reaped (no zombie left in /proc), and nobody listens on its port any more.
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "bzfs {pid} still exists");
    let err = TcpStream::connect(addr).expect_err("port closed");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[test]
fn bzfs_stop_returns_the_whole_log() {
    let bzfs = Bzfs::builder().ctf().start();
    let log = bzfs.stop();
    assert!(log.contains("capture the flag"), "{log}");
    assert!(log.contains("listening on 127.0.0.1:"), "{log}");
}

#[test]
fn bzfs_on_a_taken_port_fails_with_its_log() {
    let port = free_port();
    let _squatter = UdpSocket::bind(("127.0.0.1", port)).unwrap();
    let err = Bzfs::builder().port(port).try_start().err().expect("port is taken");
    assert!(err.contains("Unable to start the server"), "{err}");
}

#[test]
fn run_with_deadline_collects_output_and_kills_overruns() {
    let out = run_with_deadline(Command::new("sh").args(["-c", "echo out; echo err >&2; exit 7"]), WAIT);
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str(), out.timed_out), (Some(7), "out\n", "err\n", false));

    let out = run_with_deadline(Command::new("sleep").arg("60"), Duration::from_millis(200));
    assert!(out.timed_out && out.code.is_none(), "{}", out.describe());

    let out = run_with_input(&mut Command::new("cat"), Some(b"piped"), WAIT);
    assert!(out.success() && out.stdout == "piped", "{}", out.describe());
}

#[test]
fn temp_dirs_are_unique_and_removed() {
    let a = TempDir::new("harness");
    let b = TempDir::new("harness");
    assert_ne!(a.path(), b.path());
    std::fs::write(a.join("f"), "x").unwrap();
    let path = a.path().to_path_buf();
    drop(a);
    assert!(!path.exists());
    assert!(b.path().is_dir());
}

#[test]
fn bzhead_binary_is_built() {
    assert!(bzhead_bin().is_file(), "{}", bzhead_bin().display());
}

#[test]
#[should_panic(expected = "apt-get install bzflag-server")]
fn a_missing_program_fails_with_install_advice() {
    crate::support::require_program("/usr/games/no-such-bzflag-program");
}
