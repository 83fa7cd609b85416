//! Loss and delay for a test: a private network namespace whose loopback has a `tc netem` qdisc when the machine
//! can do that (root, and a kernel with `sch_netem`), else the relays of [`super::relay`] in the test.
//!
//! The namespace is the calling thread's own (`unshare(CLONE_NEWNET)`): every socket the thread opens afterwards,
//! every thread it starts and every program it runs (servers, `bzhead`) lives in it, and it disappears with them.
//! Nothing is left behind on the host, and nothing outside the test sees the loss.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Duration;

use super::run_with_deadline;

/// How the loss and delay are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetMode {
    /// This thread is in a new network namespace whose loopback delays and drops (`tc netem`).
    Netem,
    /// No netem here (the reason): the test puts relays between the peers.
    Relay(String),
}

impl NetMode {
    /// Tries netem in a new network namespace; falls back to [`NetMode::Relay`], restoring the original
    /// namespace, when anything is missing. Prints which mode runs.
    pub fn setup(delay: Duration, loss_percent: u32) -> NetMode {
        let mode = try_netem(delay, loss_percent).map_or_else(NetMode::Relay, |()| NetMode::Netem);
        match &mode {
            NetMode::Netem => eprintln!(
                "loss and delay: netem mode (private network namespace, `tc qdisc ... netem delay {}ms loss {loss_percent}%` on lo)",
                delay.as_millis()
            ),
            NetMode::Relay(why) => eprintln!(
                "loss and delay: relay mode (netem is not available: {why}); relays in the test delay each direction by {} ms \
                 and drop {loss_percent} % of the UDP datagrams (TCP is delayed only)",
                delay.as_millis()
            ),
        }
        mode
    }

    /// The qdisc's counters (`tc -s qdisc show dev lo`), in netem mode.
    pub fn qdisc_stats(&self) -> String {
        if *self != NetMode::Netem {
            return String::new();
        }
        let out =
            run_with_deadline(Command::new("tc").args(["-s", "qdisc", "show", "dev", "lo"]), Duration::from_secs(5));
        out.stdout
    }
}

/// Runs a short command (`ip`, `tc`); a missing program is an error, not a panic.
fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("cannot run `{}`: {e} (package iproute2)", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

fn try_netem(delay: Duration, loss_percent: u32) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not running as root (CI runs the tests as root)".into());
    }
    let original = File::open("/proc/thread-self/ns/net")
        .map_err(|e| format!("cannot open this thread's network namespace: {e}"))?;
    // SAFETY: unshare only changes this thread's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!("unshare(CLONE_NEWNET): {}", std::io::Error::last_os_error()));
    }
    let setup = run(&["ip", "link", "set", "lo", "up"]).and_then(|()| {
        run(&[
            "tc",
            "qdisc",
            "add",
            "dev",
            "lo",
            "root",
            "netem",
            "delay",
            &format!("{}ms", delay.as_millis()),
            "loss",
            &format!("{loss_percent}%"),
        ])
    });
    if let Err(why) = setup {
        // SAFETY: `original` is an open namespace file descriptor of the right type.
        if unsafe { libc::setns(original.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            panic!("cannot return to the original network namespace: {}", std::io::Error::last_os_error());
        }
        return Err(why);
    }
    Ok(())
}
