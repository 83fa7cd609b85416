//! The Prometheus text exposition (format 0.0.4) of the monitor: one gauge family per server figure, labelled
//! `protocol`, `address` and `name`, and the monitor's own counters.
//!
//! Label values are escaped as the format requires (`\` as `\\`, `"` as `\"`, a line feed as `\n`); every family
//! has its `# HELP` and `# TYPE` line once, before its samples.

use std::fmt::Write as _;

use super::state::Monitor;

/// The monitor's own counters (totals since start), kept by the command.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Own {
    /// Queries started.
    pub queries_sent: u64,
    /// Queries answered.
    pub answered: u64,
    /// Queries timed out.
    pub timed_out: u64,
    /// Malformed answers.
    pub malformed: u64,
    /// Refused and other failures.
    pub failed: u64,
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// Rounds finished.
    pub rounds: u64,
    /// Seconds the last round took.
    pub last_round_seconds: f64,
    /// Seconds all rounds took.
    pub round_seconds_sum: f64,
    /// Database writes that failed.
    pub db_errors: u64,
    /// Rounds committed.
    pub db_commits: u64,
    /// Rounds dropped because the database could not be written for too long.
    pub db_dropped_rounds: u64,
    /// The last database write failed.
    pub db_failing: bool,
    /// Seconds the last commit took.
    pub db_last_commit_seconds: f64,
    /// Times the database disappeared, was replaced or failed `PRAGMA quick_check` while running.
    pub db_unhealthy: u64,
    /// The last check of the database found it missing or damaged (until the next good check).
    pub db_damaged: bool,
    /// Bytes of rounds waiting to be written.
    pub db_queued_bytes: u64,
    /// Joins verified (BZFlag `verify_join`), and how many worked.
    pub joins_tried: u64,
    /// Joins that worked.
    pub joins_ok: u64,
}

/// Escapes a label value.
pub fn escape_label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Writes the `# HELP` and `# TYPE` lines of a family.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn float(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v.is_nan() {
        "NaN".to_owned()
    } else if v > 0.0 {
        "+Inf".to_owned()
    } else {
        "-Inf".to_owned()
    }
}

/// The whole exposition.
pub fn render(m: &Monitor, own: &Own, joins: &[(String, bool, Option<f64>)]) -> String {
    let mut labels = Vec::new();
    for s in m.servers() {
        let mut l = String::with_capacity(64);
        l.push_str("protocol=\"");
        escape_label(&mut l, &s.row.protocol);
        l.push_str("\",address=\"");
        escape_label(&mut l, &s.row.address);
        l.push_str("\",name=\"");
        escape_label(&mut l, s.row.name.as_deref().unwrap_or(""));
        l.push('"');
        labels.push((l, s));
    }
    let mut out = String::with_capacity(256 + labels.len() * 400);
    family(&mut out, "bzhead_server_up", "gauge", "1 when the server answers, 0 when it is down.");
    for (l, s) in &labels {
        let _ = writeln!(out, "bzhead_server_up{{{l}}} {}", u8::from(s.row.up));
    }
    family(&mut out, "bzhead_server_players", "gauge", "Players on the server as of its last answer.");
    for (l, s) in &labels {
        if let (true, Some(p)) = (s.row.up, s.row.players) {
            let _ = writeln!(out, "bzhead_server_players{{{l}}} {p}");
        }
    }
    family(&mut out, "bzhead_server_max_players", "gauge", "Player slots of the server as of its last answer.");
    for (l, s) in &labels {
        if let (true, Some(p)) = (s.row.up, s.row.max_players) {
            let _ = writeln!(out, "bzhead_server_max_players{{{l}}} {p}");
        }
    }
    family(&mut out, "bzhead_server_ping_seconds", "gauge", "Round trip of the last answer.");
    for (l, s) in &labels {
        if let (true, Some(p)) = (s.row.up, s.row.ping_ms) {
            let _ = writeln!(out, "bzhead_server_ping_seconds{{{l}}} {}", float(p / 1000.0));
        }
    }
    if !joins.is_empty() {
        family(&mut out, "bzhead_server_joinable", "gauge", "1 when the last observer join worked (verify_join).");
        for (addr, ok, _) in joins {
            let mut l = String::new();
            escape_label(&mut l, addr);
            let _ = writeln!(out, "bzhead_server_joinable{{protocol=\"bzflag\",address=\"{l}\"}} {}", u8::from(*ok));
        }
        family(&mut out, "bzhead_server_join_seconds", "gauge", "How long the last observer join took.");
        for (addr, _, secs) in joins {
            if let Some(secs) = secs {
                let mut l = String::new();
                escape_label(&mut l, addr);
                let _ =
                    writeln!(out, "bzhead_server_join_seconds{{protocol=\"bzflag\",address=\"{l}\"}} {}", float(*secs));
            }
        }
    }
    let counters: [(&str, &str, u64); 15] = [
        ("bzhead_monitor_queries_sent_total", "Queries started.", own.queries_sent),
        ("bzhead_monitor_queries_answered_total", "Queries answered.", own.answered),
        ("bzhead_monitor_queries_timed_out_total", "Queries that got no answer in time.", own.timed_out),
        ("bzhead_monitor_queries_malformed_total", "Queries whose answer was malformed.", own.malformed),
        ("bzhead_monitor_queries_failed_total", "Queries refused or failed otherwise.", own.failed),
        ("bzhead_monitor_datagrams_sent_total", "Datagrams sent.", own.datagrams_sent),
        ("bzhead_monitor_rounds_total", "Rounds finished.", own.rounds),
        ("bzhead_monitor_db_errors_total", "Database writes that failed.", own.db_errors),
        ("bzhead_monitor_db_commits_total", "Rounds written to the database.", own.db_commits),
        (
            "bzhead_monitor_db_dropped_rounds_total",
            "Rounds whose history was dropped (database unwritable).",
            own.db_dropped_rounds,
        ),
        ("bzhead_monitor_events_total", "Change events made.", m.counters().events),
        (
            "bzhead_monitor_events_folded_total",
            "Events past a server's per-round cap, folded into its events_folded event.",
            m.counters().events_folded,
        ),
        (
            "bzhead_monitor_events_unwritten_total",
            "Events sent before their round was written (too many bytes of events waited).",
            m.counters().events_unwritten,
        ),
        (
            "bzhead_monitor_servers_forgotten_total",
            "Servers forgotten (not seen for forget_after).",
            m.counters().forgotten,
        ),
        (
            "bzhead_monitor_db_unhealthy_total",
            "Times the database disappeared, was replaced or failed PRAGMA quick_check while running.",
            own.db_unhealthy,
        ),
    ];
    for (name, help, v) in counters {
        family(&mut out, name, "counter", help);
        let _ = writeln!(out, "{name} {v}");
    }
    family(&mut out, "bzhead_monitor_round_duration_seconds", "summary", "How long the rounds took.");
    let _ = writeln!(out, "bzhead_monitor_round_duration_seconds_sum {}", float(own.round_seconds_sum));
    let _ = writeln!(out, "bzhead_monitor_round_duration_seconds_count {}", own.rounds);
    let gauges: [(&str, &str, f64); 7] = [
        ("bzhead_monitor_last_round_duration_seconds", "How long the last round took.", own.last_round_seconds),
        ("bzhead_monitor_db_ok", "0 while the last database write failed.", if own.db_failing { 0.0 } else { 1.0 }),
        ("bzhead_monitor_db_commit_seconds", "How long the last database commit took.", own.db_last_commit_seconds),
        ("bzhead_monitor_servers", "Servers tracked.", m.servers().count() as f64),
        ("bzhead_monitor_events_unpublished", "Events waiting for their database commit.", m.unpublished() as f64),
        (
            "bzhead_monitor_db_healthy",
            "0 while the database is missing or failed its last PRAGMA quick_check.",
            if own.db_damaged { 0.0 } else { 1.0 },
        ),
        ("bzhead_monitor_db_queued_bytes", "Bytes of rounds waiting to be written.", own.db_queued_bytes as f64),
    ];
    for (name, help, v) in gauges {
        family(&mut out, name, "gauge", help);
        let _ = writeln!(out, "{name} {}", float(v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        let mut s = String::new();
        escape_label(&mut s, "a\\b\"c\nd");
        assert_eq!(s, "a\\\\b\\\"c\\nd");
    }
}
