//! What the `observe` command prints: bzadmin-style text lines or JSON lines, filtered by event type, and the exit
//! code a session's end gives ([`exit`]).

use std::collections::HashSet;
use std::time::Duration;

use crate::bzflag::consts::{flag_name, player, Team};
use crate::bzflag::event::Event;
use crate::bzflag::msg::Abbv;
use crate::bzflag::session::SessionEnd;

/// The process exit codes of the game commands (`observe`, `bot`, `replay`, `world`, `query bzflag`), documented in
/// the README. The engine says why a session ended ([`SessionEnd`]); which code that is belongs to the command
/// line, and lives here, in the library, because the command line, the `closed` JSON line ([`json_line`]) and the
/// Python package's `Observer.exit_code` all give it.
pub mod exit {
    use crate::bzflag::session::SessionEnd;

    /// Clean leave, done.
    pub const OK: u8 = 0;
    /// Usage error.
    pub const USAGE: u8 = 2;
    /// Cannot connect.
    pub const CONNECT: u8 = 3;
    /// Rejected by the server (or it is full).
    pub const REJECTED: u8 = 4;
    /// Kicked or superkilled.
    pub const KICKED: u8 = 5;
    /// Protocol error (including a server that closes, stops answering or shuts down).
    pub const PROTOCOL: u8 = 6;

    /// The exit code of a session that ended this way.
    pub fn of(end: &SessionEnd) -> u8 {
        match end {
            SessionEnd::Left => OK,
            SessionEnd::ConnectFailed(_) => CONNECT,
            SessionEnd::Rejected { .. } | SessionEnd::ServerFull => REJECTED,
            SessionEnd::Kicked { .. } => KICKED,
            SessionEnd::Shutdown
            | SessionEnd::ServerClosed { .. }
            | SessionEnd::Timeout { .. }
            | SessionEnd::Protocol(_) => PROTOCOL,
        }
    }
}

/// Event types hidden unless asked for with `--show` (they come many times a second).
pub const HIDDEN_BY_DEFAULT: &[&str] = &["update", "shot_begin", "shot_end"];

/// Which event types to print.
#[derive(Debug, Clone)]
pub struct Filter {
    shown: HashSet<&'static str>,
}

impl Filter {
    /// The default set adjusted by `--show` and `--hide` lists (comma-separated types, or `all`). Unknown types
    /// are an error that lists the known ones.
    pub fn new(show: &[String], hide: &[String]) -> Result<Filter, String> {
        let mut shown: HashSet<&'static str> =
            Event::KINDS.iter().copied().filter(|k| !HIDDEN_BY_DEFAULT.contains(k)).collect();
        let lookup = |s: &str| -> Result<Vec<&'static str>, String> {
            let s = s.trim();
            if s == "all" {
                return Ok(Event::KINDS.to_vec());
            }
            Event::KINDS
                .iter()
                .find(|k| **k == s)
                .map(|k| vec![*k])
                .ok_or_else(|| format!("unknown event type '{s}'; known types: all, {}", Event::KINDS.join(", ")))
        };
        for item in show.iter().flat_map(|s| s.split(',')).filter(|s| !s.trim().is_empty()) {
            shown.extend(lookup(item)?);
        }
        for item in hide.iter().flat_map(|s| s.split(',')).filter(|s| !s.trim().is_empty()) {
            for k in lookup(item)? {
                shown.remove(k);
            }
        }
        Ok(Filter { shown })
    }

    /// True when `e` is to be printed.
    pub fn allows(&self, e: &Event) -> bool {
        self.shown.contains(e.kind())
    }
}

/// Seconds with millisecond precision, computed from whole microseconds so that a live run and its replay print
/// the same text.
pub fn format_t(t: Duration) -> String {
    let us = t.as_micros();
    format!("{}.{:03}", us / 1_000_000, (us % 1_000_000) / 1000)
}

/// The `closed` line's body: the end in words and its exit code.
#[derive(serde::Serialize)]
struct ClosedLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(serialize_with = "ser_display")]
    reason: &'a SessionEnd,
    exit_code: u8,
}

fn ser_display<S: serde::Serializer>(v: &impl std::fmt::Display, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// When a JSON line happened (`t`, time since the start) and, where one process prints the lines of several
/// servers, which server it is about: the keys of the lines' envelope. A `Duration` is a stamp of no server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Time since the start.
    pub t: Duration,
    /// The server's index (`"server":N`), with several servers in one process.
    pub server: Option<usize>,
}

impl From<Duration> for Stamp {
    fn from(t: Duration) -> Stamp {
        Stamp { t, server: None }
    }
}

/// The envelope every JSON line has: `{"server"?:N,"v":1,"t":<seconds>,...}`, the body's fields after it.
#[derive(serde::Serialize)]
struct Envelope<'a, B: serde::Serialize + ?Sized> {
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<usize>,
    v: u8,
    t: &'a serde_json::value::RawValue,
    #[serde(flatten)]
    body: &'a B,
}

/// The one writer of a JSON line: the envelope (`"server"` when the stamp has one, `"v":1`, `"t"` in seconds with
/// millisecond precision, as [`format_t`] writes it), then the fields of `body`, which serializes as an object.
/// Every JSON line bzhead prints (events, bot events, netstats, reconnections, observers joining) goes through it.
pub fn json_envelope(stamp: impl Into<Stamp>, body: &(impl serde::Serialize + ?Sized)) -> String {
    let stamp = stamp.into();
    let written = serde_json::value::RawValue::from_string(format_t(stamp.t))
        .and_then(|t| serde_json::to_string(&Envelope { server: stamp.server, v: 1, t: &t, body }));
    match written {
        Ok(line) => line,
        Err(err) => {
            #[derive(serde::Serialize)]
            struct Failed {
                #[serde(rename = "type")]
                kind: &'static str,
                error: String,
            }
            let failed = Failed { kind: "error", error: err.to_string() };
            let t = format_t(stamp.t);
            serde_json::value::RawValue::from_string(t)
                .and_then(|t| serde_json::to_string(&Envelope { server: stamp.server, v: 1, t: &t, body: &failed }))
                .unwrap_or_else(|_| String::from(r#"{"v":1,"type":"error"}"#))
        }
    }
}

/// One JSON line of an event: `{"v":1,"t":<seconds>,"type":...,...}` (a `closed` line also gives the exit code,
/// [`exit::of`]); written by [`json_envelope`].
pub fn json_line(stamp: impl Into<Stamp>, e: &Event) -> String {
    match e {
        Event::Closed { reason } => {
            json_envelope(stamp, &ClosedLine { kind: e.kind(), reason, exit_code: exit::of(reason) })
        }
        e => json_envelope(stamp, e),
    }
}

/// Removes ANSI escape sequences and other control characters (server texts carry colour codes); see
/// [`crate::text::for_terminal`], which every text output shares.
pub fn strip_control(s: &str) -> String {
    crate::text::for_terminal(s).into_owned()
}

fn team_words(t: Team) -> String {
    match t {
        Team::Observer => "Observer".into(),
        Team::Rogue => "Rogue".into(),
        Team::NoTeam => "no team".into(),
        t => {
            let n = t.name();
            let mut c = n.chars();
            let cap = c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default();
            format!("{cap} Team")
        }
    }
}

fn flag_words(a: Abbv) -> String {
    // Two bytes from the server: `ESC c` alone resets a terminal.
    let s = strip_control(&a.as_string());
    match flag_name(&s) {
        Some(n) if a.is_team_flag() => format!("the {n} flag"),
        Some(n) => format!("{n} ({s})"),
        None if s.is_empty() => "no flag".into(),
        None => s,
    }
}

fn pos(p: [f32; 3]) -> String {
    format!("({:.1}, {:.1}, {:.1})", p[0], p[1], p[2])
}

/// One bzadmin-style text line for an event.
pub fn text_line(e: &Event) -> String {
    match e {
        Event::Hello { id } => format!("--- connected, player id {id}"),
        Event::UdpLink { detail, .. } => format!("--- {detail}"),
        Event::Settings(s) => format!(
            "--- game settings: world size {}, game type {}, options 0x{:04x}, {} shots, {} flags",
            s.world_size, s.game_type, s.game_options, s.max_shots, s.num_flags
        ),
        Event::CacheUrl { url } => format!("--- world also offered at {}", strip_control(url)),
        Event::World { hash, bytes, cached } => {
            format!("--- world {hash} ({bytes} bytes, {})", if *cached { "from the cache" } else { "downloaded" })
        }
        Event::Accept { id } => format!("--- joined the game as player {id}"),
        Event::Reject { code, reason } => format!("!!! rejected ({code}): {}", strip_control(reason)),
        Event::SetVar { count, .. } => format!("--- {count} server variable(s) set"),
        Event::Team(t) => format!(
            "--- {}: {} player(s), score {} ({} wins, {} losses)",
            team_words(t.team),
            t.size,
            t.wins as i32 - t.losses as i32,
            t.wins,
            t.losses
        ),
        Event::Join { callsign, team, player_type, .. } => {
            let bot = if *player_type == crate::bzflag::consts::PlayerType::Computer { " (robot)" } else { "" };
            format!("*** '{}' joined the game as {}{bot}.", strip_control(callsign), team_words(*team))
        }
        Event::Leave { callsign, .. } => format!("*** '{}' left the game.", strip_control(callsign)),
        Event::Score { id, wins, losses, team_kills } => {
            format!("--- player {id} score: {wins} wins, {losses} losses, {team_kills} team kills")
        }
        Event::NewRabbit { id } => format!("*** player {id} is now the rabbit."),
        Event::GameOver { player: p, team } => {
            if *p != player::NO_PLAYER {
                format!("*** Game over: player {p} won.")
            } else {
                format!("*** Game over: {} won.", team_words(*team))
            }
        }
        Event::TimeLeft { seconds } => match seconds {
            0 => "*** Time is up.".into(),
            -1 => "--- the countdown is paused".into(),
            s => format!("--- {s} seconds left"),
        },
        Event::Flag(f) => format!(
            "--- flag #{} {} {} at {}",
            f.index,
            strip_control(&f.abbv.to_string()),
            f.status.name(),
            pos(f.pos)
        ),
        Event::Grab { callsign, flag, .. } => {
            format!("*** '{}' grabbed {}.", strip_control(callsign), flag_words(flag.abbv))
        }
        Event::Drop { callsign, flag, .. } => {
            format!("*** '{}' dropped {}.", strip_control(callsign), flag_words(flag.abbv))
        }
        Event::Transfer { from, to, flag } => {
            format!("*** player {to} stole {} from player {from}.", flag_words(flag.abbv))
        }
        Event::Capture { callsign, abbv, .. } => {
            format!("*** '{}' captured {}.", strip_control(callsign), flag_words(*abbv))
        }
        Event::NearFlag { name, .. } => format!("--- nearest flag: {}", strip_control(name)),
        Event::Spawn { callsign, pos: p, .. } => format!("*** '{}' spawned at {}.", strip_control(callsign), pos(*p)),
        Event::Kill { victim, victim_callsign, killer, killer_callsign, reason, .. } => {
            let v = strip_control(victim_callsign);
            match *reason {
                _ if victim == killer => format!("*** '{v}' blew up."),
                "shot" | "killed" => format!("*** '{v}' destroyed by '{}'.", strip_control(killer_callsign)),
                "run_over" => format!("*** '{v}' run over by '{}'.", strip_control(killer_callsign)),
                "genocide" => format!("*** '{v}' destroyed by genocide ('{}').", strip_control(killer_callsign)),
                "water" => format!("*** '{v}' drowned."),
                "physics_driver" => format!("*** '{v}' was killed by the world."),
                other => format!("*** '{v}' died ({other})."),
            }
        }
        Event::Teleport { callsign, from, to, .. } => {
            format!("--- '{}' teleported ({from} -> {to})", strip_control(callsign))
        }
        Event::Pause { callsign, paused, .. } => {
            format!("*** '{}': {}.", strip_control(callsign), if *paused { "paused" } else { "resumed" })
        }
        Event::AutoPilot { callsign, on, .. } => {
            format!("*** '{}': autopilot {}.", strip_control(callsign), if *on { "on" } else { "off" })
        }
        Event::Update(u) => format!(
            "--- update #{} order {} status 0x{:04x} at {} azimuth {:.2}",
            u.id,
            u.order,
            u.status.bits(),
            pos(u.pos),
            u.azimuth
        ),
        Event::ShotBegin(f) => format!("--- shot {:#06x} by player {} from {}", f.shot_id, f.shooter, pos(f.pos)),
        Event::ShotEnd { shooter, shot_id, reason } => {
            format!("--- shot {shot_id:#06x} of player {shooter} ended ({reason})")
        }
        Event::Chat { from, from_callsign, to, to_name, action, text } => {
            let text = strip_control(text);
            let from_name = strip_control(from_callsign);
            if *action {
                format!("    * {from_name} {text}")
            } else if *from == player::SERVER {
                format!("    [SERVER->] {text}")
            } else if *to == player::ALL_PLAYERS {
                format!("    {from_name}: {text}")
            } else if (244..=251).contains(to) {
                format!("    [Team] {from_name}: {text}")
            } else if *to == player::ADMIN_PLAYERS {
                format!("    [Admin] {from_name}: {text}")
            } else {
                format!("    [{from_name}->{}] {text}", strip_control(to_name))
            }
        }
        Event::Resources { count } => format!("--- the server lists {count} resource(s)"),
        Event::Warning { message } => format!("!!! warning: {}", strip_control(message)),
        Event::Kicked { reason } => format!("!!! kicked: {}", strip_control(reason)),
        Event::QueryResult { game, players, .. } => {
            format!("--- query: game type {}, {} player(s)", game.game_type, players.len())
        }
        Event::Closed { reason } => format!("--- {}", strip_control(&reason.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_like_bzadmin() {
        let e = Event::Join {
            id: 1,
            callsign: "alice".into(),
            team: Team::Red,
            player_type: crate::bzflag::consts::PlayerType::Tank,
            motto: String::new(),
            wins: 0,
            losses: 0,
            team_kills: 0,
        };
        assert_eq!(text_line(&e), "*** 'alice' joined the game as Red Team.");
        let e = Event::Chat {
            from: 253,
            from_callsign: "SERVER".into(),
            to: 0,
            to_name: "watcher".into(),
            action: false,
            text: "You are in observer mode.".into(),
        };
        assert_eq!(text_line(&e), "    [SERVER->] You are in observer mode.");
    }

    #[test]
    fn the_envelope_is_written_once_for_every_line() {
        #[derive(serde::Serialize)]
        struct Empty {}
        #[derive(serde::Serialize)]
        struct Body<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            name: &'a str,
        }
        let t = Duration::from_millis(1_200);
        assert_eq!(json_envelope(t, &Empty {}), r#"{"v":1,"t":1.200}"#);
        assert_eq!(
            json_envelope(Stamp { t, server: Some(2) }, &Body { kind: "x", name: "a\"b" }),
            r#"{"server":2,"v":1,"t":1.200,"type":"x","name":"a\"b"}"#
        );
        let e = Event::Accept { id: 3 };
        assert_eq!(
            json_line(Stamp { t: Duration::from_micros(1_234_567), server: Some(0) }, &e),
            r#"{"server":0,"v":1,"t":1.234,"type":"accept","id":3}"#
        );
    }

    #[test]
    fn json_lines_carry_version_and_time() {
        let e = Event::Accept { id: 3 };
        assert_eq!(json_line(Duration::from_micros(1_234_567), &e), r#"{"v":1,"t":1.234,"type":"accept","id":3}"#);
    }

    #[test]
    fn filters_know_every_type() {
        let f = Filter::new(&["update".into()], &["flag,team".into()]).unwrap();
        assert!(f.allows(&Event::Accept { id: 1 }));
        assert!(!f.allows(&Event::Team(crate::bzflag::msg::TeamInfo { team: Team::Red, size: 0, wins: 0, losses: 0 })));
        assert!(Filter::new(&["nonsense".into()], &[]).is_err());
    }

    #[test]
    fn control_sequences_are_stripped() {
        assert_eq!(strip_control("\u{1b}[31mred\u{1b}[0m text\u{7}"), "red text");
    }
}
