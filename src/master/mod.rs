//! bzhead as a master server: game servers register with it and game clients list them, in each game's own master
//! protocol, served by `bzhead monitor` on its one reactor.
//!
//! * [`dpmaster`]: the dpmaster protocol (Quake III engines, DarkPlaces, Warsow...) over UDP: heartbeats answered
//!   with a `getinfo` challenge, servers listed after a valid `infoResponse` for a lease, `getservers` and
//!   `getserversExt` answered with their filters, dpmaster's policies and caps. A sans-IO engine: datagrams and `now`
//!   in, datagrams out; the reactor's UDP services ([`crate::reactor::Reactor::add_udp_service`]) carry it.
//!
//! Every master counts the same things ([`Counters`]) and exposes them in the monitor's `/metrics` with a `protocol`
//! label ([`render_metrics`]).

use std::fmt::Write as _;

pub mod dpmaster;

/// What a master counts (totals since start), the same for every master protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Heartbeats (registration requests) received.
    pub heartbeats: u64,
    /// Registrations that completed (a server listed or its lease renewed).
    pub registrations: u64,
    /// Challenges that failed: a reply with a wrong, unknown, replayed or late challenge, or none before it expired.
    pub challenges_failed: u64,
    /// Listed servers dropped because their lease ran out.
    pub leases_expired: u64,
    /// List requests answered.
    pub list_requests: u64,
    /// Requests refused by a policy or a cap (special-use address, game policy, server caps, malformed, oversized).
    pub refused: u64,
    /// Requests dropped by a flood throttle.
    pub throttled: u64,
    /// Servers listed now.
    pub listed: u64,
    /// Servers waiting for their challenge's answer now.
    pub pending: u64,
}

/// Appends the master families to a Prometheus exposition: one sample per master protocol in each.
pub fn render_metrics(out: &mut String, masters: &[(&str, Counters)]) {
    if masters.is_empty() {
        return;
    }
    type Field = fn(&Counters) -> u64;
    let families: [(&str, &str, &str, Field); 9] = [
        ("bzhead_master_heartbeats_total", "counter", "Heartbeats (registration requests) received.", |c| c.heartbeats),
        (
            "bzhead_master_registrations_total",
            "counter",
            "Registrations completed (a server listed or its lease renewed).",
            |c| c.registrations,
        ),
        (
            "bzhead_master_challenges_failed_total",
            "counter",
            "Challenges failed (wrong, replayed, late or unanswered).",
            |c| c.challenges_failed,
        ),
        ("bzhead_master_leases_expired_total", "counter", "Listed servers whose lease ran out.", |c| c.leases_expired),
        ("bzhead_master_list_requests_total", "counter", "List requests answered.", |c| c.list_requests),
        ("bzhead_master_refused_total", "counter", "Requests refused by a policy or a cap.", |c| c.refused),
        ("bzhead_master_throttled_total", "counter", "Requests dropped by a flood throttle.", |c| c.throttled),
        ("bzhead_master_servers", "gauge", "Servers listed.", |c| c.listed),
        ("bzhead_master_pending", "gauge", "Servers waiting for their challenge's answer.", |c| c.pending),
    ];
    for (name, kind, help, field) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (protocol, c) in masters {
            let mut p = String::new();
            crate::monitor::metrics::escape_label(&mut p, protocol);
            let _ = writeln!(out, "{name}{{protocol=\"{p}\"}} {}", field(c));
        }
    }
}
