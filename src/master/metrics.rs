//! The masters' part of the monitor's Prometheus exposition (after [`crate::monitor::metrics`]' own families).

use std::fmt::Write as _;

use crate::monitor::metrics::{escape_label, family};

use super::Masters;

/// The masters' part of the exposition: servers listed per protocol (directly registered, mirrored), their
/// registrations, failed challenges and checks, expiries, refusals and list requests, and the upstreams' health.
pub fn render_masters(m: &Masters) -> String {
    let (b, d) = (m.bzfls.counts(), m.ddnet.counts());
    let mut out = String::with_capacity(2048);
    type Family<'a> = (&'a str, &'a str, [(&'a str, u64); 2]);
    let per_protocol: [Family; 6] = [
        (
            "bzhead_master_registrations_total",
            "Servers newly registered directly.",
            [("bzflag", b.added), ("ddnet", d.registered)],
        ),
        (
            "bzhead_master_challenges_failed_total",
            "Registrations whose challenge failed (BZFlag: connect-back; DDNet: wrong token).",
            [("bzflag", b.checks_failed), ("ddnet", d.challenges_failed)],
        ),
        (
            "bzhead_master_expired_total",
            "Registrations dropped after their lease.",
            [("bzflag", b.expired), ("ddnet", d.expired)],
        ),
        (
            "bzhead_master_refused_total",
            "Registrations refused (bad, forged, private, over a cap).",
            [("bzflag", b.refused), ("ddnet", d.refused)],
        ),
        (
            "bzhead_master_removed_total",
            "Registrations removed by their server.",
            [("bzflag", b.removed), ("ddnet", d.deleted)],
        ),
        ("bzhead_master_list_requests_total", "List requests answered.", [("bzflag", b.lists), ("ddnet", d.lists)]),
    ];
    for (name, help, values) in per_protocol {
        family(&mut out, name, "counter", help);
        for (p, v) in values {
            let _ = writeln!(out, "{name}{{protocol=\"{p}\"}} {v}");
        }
    }
    family(&mut out, "bzhead_master_challenges_sent_total", "counter", "DDNet challenges sent.");
    let _ = writeln!(out, "bzhead_master_challenges_sent_total {}", d.challenges_sent);
    family(&mut out, "bzhead_master_listed", "gauge", "Servers listed, by protocol and source (direct, mirrored).");
    let _ =
        writeln!(out, "bzhead_master_listed{{protocol=\"bzflag\",source=\"direct\"}} {}", m.bzfls.entries().count());
    let _ = writeln!(out, "bzhead_master_listed{{protocol=\"ddnet\",source=\"direct\"}} {}", m.ddnet.servers().count());
    let mut mirrored: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for ((p, _), _) in m.registry.entries() {
        *mirrored.entry(p.as_str()).or_default() += 1;
    }
    for (p, n) in mirrored {
        let mut l = String::new();
        escape_label(&mut l, p);
        let _ = writeln!(out, "bzhead_master_listed{{protocol=\"{l}\",source=\"mirrored\"}} {n}");
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
