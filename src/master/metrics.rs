//! The masters' part of the monitor's Prometheus exposition (after [`crate::monitor::metrics`]' own families): the
//! same families for every master protocol ([`Counters`], a `protocol` label), then what only some have (DDNet's
//! challenges sent, mirrored entries, the upstreams' health).

use std::fmt::Write as _;

use crate::monitor::metrics::{escape_label, family};

use super::{Counters, Masters};

/// The counters of the HTTP masters (`bzflag`, `ddnet`) in the shape every master shares.
pub fn http_counters(m: &Masters) -> [(&'static str, Counters); 2] {
    let (b, d) = (m.bzfls.counts(), m.ddnet.counts());
    let bzflag = Counters {
        heartbeats: b.added + b.refused + b.checks_failed,
        registrations: b.added,
        challenges_failed: b.checks_failed,
        leases_expired: b.expired,
        list_requests: b.lists,
        refused: b.refused,
        removed: b.removed,
        throttled: 0,
        listed: m.bzfls.entries().count() as u64,
        pending: 0,
    };
    let ddnet = Counters {
        heartbeats: d.registered + d.refused + d.challenges_failed,
        registrations: d.registered,
        challenges_failed: d.challenges_failed,
        leases_expired: d.expired,
        list_requests: d.lists,
        refused: d.refused,
        removed: d.deleted,
        throttled: 0,
        listed: m.ddnet.servers().count() as u64,
        pending: 0,
    };
    [("bzflag", bzflag), ("ddnet", ddnet)]
}

/// The masters' exposition: every master served (the HTTP ones always, `dpmaster` when it runs) in the shared
/// families, then DDNet's challenges sent, mirrored entries per protocol and each upstream's health.
pub fn render_masters(m: &Masters, dpmaster: Option<Counters>) -> String {
    let mut out = String::with_capacity(2048);
    let mut served: Vec<(&str, Counters)> = http_counters(m).to_vec();
    if let Some(c) = dpmaster {
        served.push(("dpmaster", c));
    }
    render_metrics(&mut out, &served);
    family(&mut out, "bzhead_master_challenges_sent_total", "counter", "DDNet challenges sent.");
    let _ = writeln!(out, "bzhead_master_challenges_sent_total {}", m.ddnet.counts().challenges_sent);
    family(&mut out, "bzhead_master_mirrored", "gauge", "Entries mirrored from upstream masters, by protocol.");
    let mut mirrored: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for ((p, _), _) in m.registry.entries() {
        *mirrored.entry(p.as_str()).or_default() += 1;
    }
    for (p, n) in mirrored {
        let mut l = String::new();
        escape_label(&mut l, p);
        let _ = writeln!(out, "bzhead_master_mirrored{{protocol=\"{l}\"}} {n}");
    }
    family(
        &mut out,
        "bzhead_master_upstream_ok",
        "gauge",
        "1 while an upstream master answers; 0 while its last list is served stale.",
    );
    for u in m.registry.upstreams() {
        let mut l = String::new();
        escape_label(&mut l, &u.name);
        let _ = writeln!(out, "bzhead_master_upstream_ok{{upstream=\"{l}\"}} {}", u8::from(u.failing_since.is_none()));
    }
    family(&mut out, "bzhead_master_upstream_entries", "gauge", "Entries of an upstream master's last good list.");
    for u in m.registry.upstreams() {
        let mut l = String::new();
        escape_label(&mut l, &u.name);
        let _ = writeln!(out, "bzhead_master_upstream_entries{{upstream=\"{l}\"}} {}", u.entries);
    }
    out
}

/// Appends the master families to a Prometheus exposition: one sample per master protocol in each.
pub fn render_metrics(out: &mut String, masters: &[(&str, Counters)]) {
    if masters.is_empty() {
        return;
    }
    type Field = fn(&Counters) -> u64;
    let families: [(&str, &str, &str, Field); 10] = [
        ("bzhead_master_heartbeats_total", "counter", "Heartbeats (registration requests) received.", |c| c.heartbeats),
        (
            "bzhead_master_registrations_total",
            "counter",
            "Registrations completed (dpmaster: a server listed or its lease renewed; HTTP masters: servers newly listed).",
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
        ("bzhead_master_removed_total", "counter", "Registrations removed by their server.", |c| c.removed),
        ("bzhead_master_throttled_total", "counter", "Requests dropped by a flood throttle.", |c| c.throttled),
        ("bzhead_master_servers", "gauge", "Servers listed.", |c| c.listed),
        ("bzhead_master_pending", "gauge", "Servers waiting for their challenge's answer.", |c| c.pending),
    ];
    for (name, kind, help, field) in families {
        family(out, name, kind, help);
        for (protocol, c) in masters {
            let mut p = String::new();
            escape_label(&mut p, protocol);
            let _ = writeln!(out, "{name}{{protocol=\"{p}\"}} {}", field(c));
        }
    }
}
