//! `bzhead bot KIND[,KIND...] [--count N] [--team T] [--for SECONDS] [--time-scale K] [--json] HOST[:PORT]`: bots
//! from [`bzhead::bot::brains`] on a server, with the observer's events (text or JSON lines) and a line for
//! everything that happens to a bot.
//!
//! With `--time-scale K` the bots play on a server that runs K times as fast as real time (`faketime -f '+0 xK'
//! bzfs ...`, see `docs/time-warp.md`): every time of the command (ticks, `--for`, event times, the summary's
//! rates) is game time.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use bzhead::bot::{brains, BotConfig, BotEvent, BotHost, BotId, BotState, HostConfig, HostEvent};
use bzhead::bzflag::consts::{PlayerType, Team, DEFAULT_PORT};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::SessionEnd;
use bzhead::observer::{json_envelope, json_line, text_line, Filter};

use super::exit::{CONNECT, KICKED, OK, PROTOCOL, REJECTED, USAGE};

/// Arguments of `bzhead bot`.
#[derive(clap::Args)]
pub struct BotArgs {
    /// Kind of bot: hunter, capper, defender or sitter; a comma-separated list is cycled over --count (e.g. hunter,capper).
    kind: String,
    /// Server, HOST[:PORT] (port 5154 by default).
    server: String,
    /// Number of bots.
    #[arg(long, default_value_t = 1, value_parser = bzhead::args::int(1u32, 200))]
    count: u32,
    /// Team: auto (the server balances), rogue, red, green, blue or purple; a comma-separated list is cycled over
    /// the bots (e.g. red,green puts every other bot on each team).
    #[arg(long, default_value = "auto")]
    team: String,
    /// Callsign prefix (a number is added: hunter1, hunter2, ...; default: the kind).
    #[arg(long)]
    callsign: Option<String>,
    /// Leave cleanly after this many seconds (of game time).
    #[arg(long = "for", value_name = "SECONDS", value_parser = bzhead::args::seconds(0.0))]
    for_secs: Option<f64>,
    /// Play K times as fast as real time, on a server that runs K times as fast (under `faketime -f '+0 xK'`;
    /// 1/64 to 64). Ticks, timers, event times and --for are in game time.
    #[arg(long, value_name = "K", default_value_t = 1.0, value_parser = super::time_scale_arg())]
    time_scale: f64,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
    /// Also print these game event types (comma-separated, or "all"; e.g. update,shot_begin).
    #[arg(long, value_name = "TYPES")]
    show: Vec<String>,
    /// Do not print these game event types (comma-separated).
    #[arg(long, value_name = "TYPES")]
    hide: Vec<String>,
    /// Only print what happens to the bots, not the game.
    #[arg(long)]
    quiet: bool,
    /// Ticks per second.
    #[arg(long, default_value_t = 30.0, value_parser = bzhead::args::float(1.0, 240.0))]
    tick_hz: f64,
    /// Milliseconds between two bots' connects.
    #[arg(long, default_value_t = 200, value_parser = bzhead::args::int(0u64, 60_000))]
    stagger_ms: u64,
    /// Least milliseconds between two polls of the network (batching relayed messages saves CPU).
    #[arg(long, default_value_t = 4.0, value_parser = bzhead::args::float(0.0, 30.0))]
    poll_ms: f64,
    /// Keep this many player slots free for humans: bots leave when fewer are free and come back later.
    #[arg(long = "yield", value_name = "SLOTS", value_parser = bzhead::args::int(0u16, 255))]
    yield_slots: Option<u16>,
    /// Do not share an observer link (each bot then knows only what changes after it joins, unless --tank).
    #[arg(long)]
    no_eye: bool,
    /// Join as ordinary tanks instead of robot players (some servers forbid robots).
    #[arg(long)]
    tank: bool,
    /// Bring up UDP links for the bots (robots use TCP by default, like the official client's).
    #[arg(long)]
    udp: bool,
    /// Do not reconnect when the server goes away.
    #[arg(long)]
    no_reconnect: bool,
    /// Record the observer link's traffic to FILE (play it back with `bzhead replay FILE`).
    #[arg(long, value_name = "FILE")]
    record: Option<std::path::PathBuf>,
    /// Write the observer link as a BZFlag `.rec` recording to FILE (`bzfs -replay` plays it, `bzhead replay`
    /// reads it; see docs/recordings.md).
    #[arg(long, value_name = "FILE")]
    rec: Option<std::path::PathBuf>,
    /// At the end, also print how long the ticks took (percentiles over the last 100,000 ticks).
    #[arg(long)]
    stats: bool,
}

/// A team of `--team`: auto, rogue, red, green, blue or purple (not a number, nor observer, rabbit or hunter,
/// which [`Team::parse`] takes).
fn team(s: &str) -> Option<Team> {
    Some(match s.to_ascii_lowercase().as_str() {
        "auto" | "automatic" => Team::Automatic,
        "rogue" => Team::Rogue,
        "red" => Team::Red,
        "green" => Team::Green,
        "blue" => Team::Blue,
        "purple" => Team::Purple,
        _ => return None,
    })
}

/// The bots of `bzhead bot`, on their host, with their callsigns.
struct Bots {
    host: BotHost,
    names: Vec<(BotId, String)>,
    filter: Filter,
}

/// Checks the arguments, starts the host and adds the bots; `Err` is the exit code.
fn start(a: &BotArgs) -> Result<Bots, u8> {
    let kinds: Vec<String> =
        a.kind.split(',').map(|k| k.trim().to_ascii_lowercase()).filter(|k| !k.is_empty()).collect();
    if kinds.is_empty() || kinds.iter().any(|k| !brains::KINDS.contains(&k.as_str())) {
        eprintln!("bzhead: unknown bot kind {:?}; known kinds: {}", a.kind, brains::KINDS.join(", "));
        return Err(USAGE);
    }
    let teams: Option<Vec<Team>> = a.team.split(',').map(|t| team(t.trim())).collect();
    let Some(teams) = teams.filter(|t| !t.is_empty()) else {
        eprintln!("bzhead: unknown team in {:?}; teams: auto, rogue, red, green, blue, purple", a.team);
        return Err(USAGE);
    };
    if a.count == 0 || a.count > 200 {
        eprintln!("bzhead: --count must be 1 to 200 (a server has at most 200 player slots)");
        return Err(USAGE);
    }
    if !(a.tick_hz.is_finite() && (1.0..=240.0).contains(&a.tick_hz)) {
        eprintln!("bzhead: --tick-hz must be between 1 and 240");
        return Err(USAGE);
    }
    let filter = super::event_filter(&a.show, &a.hide)?;
    let addr = super::resolve_or_exit(&a.server, DEFAULT_PORT)?;
    let config = HostConfig {
        tick: Duration::from_secs_f64(1.0 / a.tick_hz),
        join_stagger: Duration::from_millis(a.stagger_ms),
        poll_interval: Duration::from_secs_f64(a.poll_ms.clamp(0.0, 30.0) / 1000.0),
        shared_eye: !a.no_eye,
        yield_slots: a.yield_slots,
        reconnect: !a.no_reconnect,
        record: a.record.clone(),
        rec: a.rec.clone(),
        ..HostConfig::default()
    };
    let reactor = super::new_reactor_at(a.time_scale)?;
    let mut host = BotHost::with_reactor(reactor, config);
    let mut names = Vec::new();
    for i in 0..a.count {
        let kind = &kinds[i as usize % kinds.len()];
        let prefix = a.callsign.clone().unwrap_or_else(|| kind.clone());
        let callsign = format!("{prefix}{}", i + 1);
        let seed = u64::from(i) * 7919 + 17;
        let Some(bot) = brains::by_name(kind, seed) else { return Err(USAGE) };
        let bc = BotConfig {
            callsign: callsign.clone(),
            motto: format!("bzhead {kind}"),
            team: teams[i as usize % teams.len()],
            player_type: if a.tank { PlayerType::Tank } else { PlayerType::Computer },
            udp: a.udp,
            seed,
        };
        let id = host.add_bot(addr, bc, bot);
        names.push((id, callsign));
    }
    Ok(Bots { host, names, filter })
}

/// When every bot gave up (kicked, rejected, bots disabled): the exit code and the first reason.
pub(super) fn all_stopped(host: &BotHost) -> Option<(u8, String)> {
    let ids = host.bot_ids();
    let all_stopped =
        !ids.is_empty() && ids.iter().all(|b| matches!(host.status(*b).map(|s| s.state), Some(BotState::Stopped(_))));
    if !all_stopped {
        return None;
    }
    let reasons: Vec<String> = ids
        .iter()
        .filter_map(|b| match host.status(*b).map(|s| s.state) {
            Some(BotState::Stopped(r)) => Some(r),
            _ => None,
        })
        .collect();
    let kicked =
        ids.iter().any(|b| matches!(host.status(*b).and_then(|s| s.stopped_by), Some(SessionEnd::Kicked { .. })));
    let code = if kicked { KICKED } else { REJECTED };
    Some((code, reasons.first().cloned().unwrap_or_default()))
}

/// Runs `bzhead bot`.
pub fn run(a: BotArgs) -> u8 {
    let Bots { mut host, names, filter } = match start(&a) {
        Ok(b) => b,
        Err(code) => return code,
    };

    // Ctrl-C, SIGTERM and SIGHUP make every bot leave cleanly; a second one quits at once.
    let sig_rx = super::leave_on_signals(host.reactor().waker());

    // Game time throughout (the reactor's clock; real time at --time-scale 1).
    let start = host.now();
    let deadline = a.for_secs.filter(|s| s.is_finite() && *s >= 0.0).map(|s| start + Duration::from_secs_f64(s));
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let name_of = |id: BotId| names.iter().find(|(b, _)| *b == id).map_or("?", |(_, n)| n.as_str()).to_string();
    let mut leaving_since: Option<Instant> = None;
    let mut eye_joined = false;
    let mut code = OK;
    loop {
        let wait = deadline.map(|d| d.saturating_duration_since(host.now())).unwrap_or(Duration::from_secs(1));
        match host.turn(Some(wait.min(Duration::from_secs(1)))) {
            Ok(()) => {}
            // A world the bots cannot play on (too big to model, say): their bots are stopped; say why and leave.
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                eprintln!("bzhead: {e}");
                code = PROTOCOL;
                if leaving_since.is_none() {
                    host.leave_all();
                    leaving_since = Some(host.now());
                }
            }
            Err(e) => {
                eprintln!("bzhead: event loop failed: {e}");
                return PROTOCOL;
            }
        }
        let mut printed = false;
        while let Some(ev) = host.poll_event() {
            let line = match &ev {
                HostEvent::Game { at, event, .. } => {
                    match event {
                        Event::Accept { .. } => eye_joined = true,
                        // Nothing to play on: the server cannot be reached at all.
                        Event::Closed { reason: reason @ SessionEnd::ConnectFailed(_) }
                            if !eye_joined && leaving_since.is_none() =>
                        {
                            eprintln!("bzhead: {}", bzhead::text::for_terminal(&reason.to_string()));
                            code = CONNECT;
                            host.leave_all();
                            leaving_since = Some(host.now());
                        }
                        _ => {}
                    }
                    if a.quiet || !filter.allows(event) {
                        continue;
                    }
                    let t = at.saturating_duration_since(start);
                    if a.json {
                        json_line(t, event)
                    } else {
                        text_line(event)
                    }
                }
                HostEvent::Bot { bot, at, event } => {
                    let t = at.saturating_duration_since(start);
                    bot_line(t, &name_of(*bot), event, a.json)
                }
                HostEvent::Session { .. } => continue,
            };
            let _ = writeln!(out, "{line}");
            printed = true;
        }
        if printed {
            let _ = out.flush();
        }
        let signalled = sig_rx.try_recv().is_ok();
        if leaving_since.is_none() && (signalled || deadline.is_some_and(|d| host.now() >= d)) {
            host.leave_all();
            leaving_since = Some(host.now());
        }
        // Every bot gave up (kicked, rejected, bots disabled): nothing left to do.
        if let Some((c, why)) = all_stopped(&host).filter(|_| leaving_since.is_none()) {
            code = c;
            eprintln!("bzhead: every bot stopped: {}", bzhead::text::for_terminal(&why));
            host.leave_all();
            leaving_since = Some(host.now());
        }
        if let Some(t) = leaving_since {
            if host.is_done() || host.now().saturating_duration_since(t) > Duration::from_secs(3) {
                break;
            }
        }
    }
    let _ = out.flush();
    drop(out);
    summary(&host, &names, host.now().saturating_duration_since(start));
    if a.stats {
        tick_stats(&host);
    }
    code
}

fn tick_stats(host: &BotHost) {
    let mut t = host.tick_times_us();
    if t.is_empty() {
        return;
    }
    t.sort_unstable();
    let p = |q: f64| t[((t.len() - 1) as f64 * q).round() as usize];
    let mean = t.iter().map(|&x| u64::from(x)).sum::<u64>() as f64 / t.len() as f64;
    eprintln!(
        "bzhead: {} ticks, tick time µs: mean {mean:.0}, p50 {}, p90 {}, p99 {}, max {}",
        t.len(),
        p(0.5),
        p(0.9),
        p(0.99),
        t[t.len() - 1]
    );
    eprintln!("bzhead: longest event-loop turn: {} µs", host.longest_turn().as_micros());
}

pub(super) fn bot_line(t: Duration, name: &str, e: &BotEvent, json: bool) -> String {
    if json {
        #[derive(serde::Serialize)]
        struct Line<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            bot: &'a str,
            #[serde(flatten)]
            event: &'a BotEvent,
        }
        return json_envelope(t, &Line { kind: "bot", bot: name, event: e });
    }
    let what = match e {
        BotEvent::Connecting { attempt: 1 } => "connecting".to_string(),
        BotEvent::Connecting { attempt } => format!("connecting (attempt {attempt})"),
        BotEvent::Joined { id, team } => format!("joined as player {id} on the {} team", team.name()),
        BotEvent::Spawned { pos } => format!("spawned at ({:.1}, {:.1}, {:.1})", pos[0], pos[1], pos[2]),
        BotEvent::Died { killer, reason } => format!("died ({reason}, by player {killer})"),
        BotEvent::Killed { victim } => format!("killed player {victim}"),
        BotEvent::Grabbed { flag } => format!("grabbed {flag}"),
        BotEvent::Captured { team } => format!("captured a flag on the {} base", team.name()),
        BotEvent::Unreachable { goal, what } => {
            format!("cannot reach the {what} at ({:.1}, {:.1}, {:.1})", goal[0], goal[1], goal[2])
        }
        BotEvent::Stuck { pos, seconds } => {
            format!("stuck for {seconds:.1} s at ({:.1}, {:.1}, {:.1}); backing out", pos[0], pos[1], pos[2])
        }
        BotEvent::Disconnected { reason, retry_in: Some(s) } => format!("disconnected: {reason}; retrying in {s:.1} s"),
        BotEvent::Disconnected { reason, retry_in: None } => format!("disconnected: {reason}"),
        BotEvent::Yielded { free } => format!("left to make room for a human ({free} slots were free)"),
        BotEvent::Left => "left".to_string(),
        BotEvent::Stopped { reason } => format!("stopped: {reason}"),
    };
    // Reasons (kicks, rejects, disconnects) and flag names come from the server.
    format!("*** {name}: {}", bzhead::text::for_terminal(&what))
}

fn summary(host: &BotHost, names: &[(BotId, String)], elapsed: Duration) {
    let mins = elapsed.as_secs_f64() / 60.0;
    for (id, name) in names {
        if let Some(s) = host.status(*id) {
            let st = s.stats;
            eprintln!(
                "bzhead: {name}: {} kills, {} deaths, {} shots, {} grabs, {} captures, {} updates ({:.1} kills/min)",
                st.kills,
                st.deaths,
                st.shots,
                st.grabs,
                st.captures,
                st.updates,
                if mins > 0.0 { f64::from(st.kills) / mins } else { 0.0 }
            );
        }
    }
}
