//! A recording played in the web view (`bzhead replay FILE --web ADDR`): the file fed through the engine on a clock
//! the viewer controls (play, pause, speed from [`MIN_SPEED`] to [`MAX_SPEED`], seek to any moment), for the one
//! [`super::WebView`] of `observe --web`.
//!
//! The replay's game time runs on its own clock: paused, or `speed` × the wall time since the last command. The
//! session and the view's scene are given `base + game time` as `now` (never the wall clock), so a replay at 64x
//! reckons tanks and flies shots as the live view does at 1x.
//!
//! **Seeking** rebuilds the session from the nearest point at or before the time asked, never by playing from
//! the start:
//!
//! * a BZFlag `.rec` holds a state block every 10 s (bzfs's `/record rate`): [`Replay::open`] reads the file once
//!   and keeps where each block starts ([`MAX_BLOCKS`] of them at most: past that every other one is dropped, so
//!   the index stays at most 16 bytes × [`MAX_BLOCKS`]); a seek joins a fresh session from the header, plays the
//!   block's state packets, then the packets up to the time asked, as `bzfs -replay` does for `/replay skip`;
//! * bzhead's own format holds no state (every input of one session, from its connect), so a seek in it plays the
//!   file again from its start up to the time asked, in one go (about 58 MB/s of recording here; a seek to the end
//!   of an hour-long recording of a busy server takes a fraction of a second to a few seconds).
//!
//! A playing replay is advanced at most every [`STEP`] of wall time and at most [`STEP_PACKETS`] packets at a time
//! (a replay that falls behind its clock catches up over the next steps), so no turn of the loop is long.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::bzflag::event::Event;
use crate::bzflag::session::Session;
use crate::record::rec::{Mode, HEADER_LEN};
use crate::record::{
    feed_record, is_rec, rec_join, Meta, RecFeed, RecHeader, RecPacket, RecReader, Record, RecordError, RecordReader,
};

use super::{state, to_json, WebView};
use crate::http::{Request, Response};
use crate::reactor::Reactor;

/// The slowest speed.
pub const MIN_SPEED: f64 = 0.25;
/// The fastest speed.
pub const MAX_SPEED: f64 = 64.0;
/// A playing replay is advanced at most this often (wall time).
pub const STEP: Duration = Duration::from_millis(10);
/// The most packets (or records) one step feeds.
pub const STEP_PACKETS: usize = 20_000;
/// The least wall time between two pushes of motion of a replay played faster than real time (see
/// [`Replay::push_interval`]).
pub const MIN_PUSH_INTERVAL: Duration = Duration::from_millis(50);
/// The most state blocks indexed (10 s apart: 11 days of play); past it every other one is dropped.
pub const MAX_BLOCKS: usize = 100_000;

enum Source {
    Rec {
        header: RecHeader,
        /// The first packet's timestamp (the origin of the replay's times).
        t0: Option<i64>,
        /// Where each state block starts: its time and the byte of its marker.
        blocks: Vec<(Duration, u64)>,
    },
    Bzh {
        meta: Meta,
    },
}

enum Input {
    Rec { reader: RecReader<BufReader<File>>, feed: RecFeed },
    Bzh { reader: RecordReader<BufReader<File>> },
}

enum Item {
    Rec(RecPacket),
    Bzh(Record),
}

/// The replay's clock: game time `t` at wall time `wall`, running at `speed` while playing.
#[derive(Debug, Clone, Copy)]
struct Clock {
    wall: Instant,
    t: Duration,
    speed: f64,
    playing: bool,
}

impl Clock {
    fn at(&self, now: Instant, end: Duration) -> Duration {
        if !self.playing {
            return self.t.min(end);
        }
        let run = now.saturating_duration_since(self.wall).as_secs_f64() * self.speed;
        (self.t + Duration::from_secs_f64(run.min(1e9))).min(end)
    }

    /// The clock anchored at `now` (before a change of speed or state).
    fn anchor(&mut self, now: Instant, end: Duration) {
        self.t = self.at(now, end);
        self.wall = now;
    }
}

/// The replay's state, as `GET /api/replay` answers it and the stream's `replay` events (and `hello`) carry it
/// (`docs/schemas/web-state.schema.json`, `$defs/replay`).
#[derive(Debug, Clone, Serialize)]
pub struct ReplayOut {
    v: u8,
    pub(super) file: String,
    /// Game time (s) from the recording's first packet.
    t: f64,
    /// The recording's length (s).
    duration: f64,
    speed: f64,
    playing: bool,
    /// At the end of the recording.
    ended: bool,
    /// Seeks so far (the page starts its feed again when it changes).
    seeks: u64,
    /// Why the replay stopped before the end of the file (a broken packet), if it did.
    error: Option<String>,
}

impl ReplayOut {
    /// The recording's length in seconds.
    pub fn duration(&self) -> f64 {
        self.duration
    }
}

/// See the module documentation.
pub struct Replay {
    path: PathBuf,
    source: Source,
    duration: Duration,
    base: Instant,
    session: Session,
    input: Input,
    /// The next packet read and not yet due, with its time.
    next: Option<(Duration, Item)>,
    /// The game time the session is at.
    at: Duration,
    clock: Clock,
    seeks: u64,
    error: Option<String>,
    /// Events not yet taken, with their game time.
    events: Vec<(Instant, Event)>,
}

impl Replay {
    /// Opens a recording (bzhead's own or a BZFlag `.rec`, told apart by their first bytes), reads it once for its
    /// length (and, for a `.rec`, where its state blocks are), and places it at its start, paused at speed 1.
    /// `base` is the instant game time 0 stands for.
    pub fn open(path: &Path, base: Instant) -> Result<Replay, RecordError> {
        let mut head = [0u8; 8];
        let n = std::io::Read::read(&mut File::open(path)?, &mut head)?;
        let (source, duration, error) = if is_rec(&head[..n]) {
            let (header, mut reader) = RecReader::open(path)?;
            let mut feed = RecFeed::new(None);
            let (mut blocks, mut t0, mut end, mut error) = (Vec::new(), None, Duration::ZERO, None);
            let mut every = 1usize;
            let mut seen = 0usize;
            loop {
                match reader.next_packet() {
                    Ok(Some(p)) => {
                        t0.get_or_insert(p.timestamp_us);
                        end = feed.time(&p);
                        if p.mode == Mode::Update {
                            if seen % every == 0 {
                                blocks.push((end, p.pos));
                            }
                            seen += 1;
                            if blocks.len() >= MAX_BLOCKS {
                                // Keep every other block: the index stays bounded, seeks replay a little more.
                                let mut i = 0;
                                blocks.retain(|_| {
                                    i += 1;
                                    i % 2 == 1
                                });
                                every *= 2;
                            }
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        error = Some(e.to_string());
                        break;
                    }
                }
            }
            (Source::Rec { header, t0, blocks }, end, error)
        } else {
            let (meta, reader) = RecordReader::open(path)?;
            let mut end = Duration::ZERO;
            let mut error = None;
            for r in reader {
                match r {
                    Ok(r) => end = end.max(r.t),
                    Err(e) => {
                        error = Some(e.to_string());
                        break;
                    }
                }
            }
            (Source::Bzh { meta }, end, error)
        };
        let (session, input) = start(path, &source, base, None)?;
        let mut r = Replay {
            path: path.to_path_buf(),
            source,
            duration,
            base,
            session,
            input,
            next: None,
            at: Duration::ZERO,
            clock: Clock { wall: base, t: Duration::ZERO, speed: 1.0, playing: false },
            seeks: 0,
            error,
            events: Vec::new(),
        };
        r.drain(base);
        r.advance_to(Duration::ZERO, usize::MAX);
        Ok(r)
    }

    /// The session the recording is fed to.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The session, to take its world.
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    /// The instant game time 0 stands for.
    pub fn base(&self) -> Instant {
        self.base
    }

    /// The game time the session is at, as the instant given to the session and the scene.
    pub fn game_now(&self) -> Instant {
        self.base + self.at
    }

    /// The recording's length.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The events of the packets fed since the last call, with their game time.
    pub fn take_events(&mut self) -> Vec<(Instant, Event)> {
        std::mem::take(&mut self.events)
    }

    /// Feeds the packets due at wall time `now`; true when the replay just reached its end (it is then paused).
    pub fn step(&mut self, now: Instant) -> bool {
        let target = self.clock.at(now, self.duration);
        self.advance_to(target, STEP_PACKETS);
        if self.clock.playing && target >= self.duration {
            self.clock.anchor(now, self.duration);
            self.clock.playing = false;
            return true;
        }
        false
    }

    /// When a playing replay wants its next step (`None` when paused).
    pub fn wake(&self, now: Instant) -> Option<Instant> {
        if !self.clock.playing {
            return None;
        }
        let due = |t: Duration| {
            let ahead = t.saturating_sub(self.clock.t).as_secs_f64() / self.clock.speed;
            self.clock.wall + Duration::from_secs_f64(ahead.min(1e9))
        };
        let next = self.next.as_ref().map_or(self.duration, |(t, _)| *t).min(self.duration);
        Some(due(next).max(now + STEP))
    }

    /// The frame interval of the stream for this replay: `push` of game time (so that the page reckons tanks over
    /// as much game time at 64x as at 1x), but at least [`MIN_PUSH_INTERVAL`] of wall time (64x: a push every 50
    /// ms, 3.2 s of game).
    pub fn push_interval(&self, push: Duration) -> Duration {
        if !self.clock.playing || self.clock.speed <= 1.0 {
            return push;
        }
        push.div_f64(self.clock.speed).max(MIN_PUSH_INTERVAL).min(push)
    }

    /// Plays (from the start again when at the end).
    pub fn play(&mut self, now: Instant) -> Result<bool, String> {
        let mut seeked = false;
        if self.clock.at(now, self.duration) >= self.duration {
            self.seek(now, 0.0)?;
            seeked = true;
        }
        self.clock.anchor(now, self.duration);
        self.clock.playing = true;
        Ok(seeked)
    }

    /// Pauses.
    pub fn pause(&mut self, now: Instant) {
        self.clock.anchor(now, self.duration);
        self.clock.playing = false;
    }

    /// Sets the speed; `Err` (what to tell the user) unless it is a number from [`MIN_SPEED`] to [`MAX_SPEED`].
    pub fn set_speed(&mut self, now: Instant, speed: f64) -> Result<(), String> {
        if !(MIN_SPEED..=MAX_SPEED).contains(&speed) {
            return Err(format!("speed must be a number from {MIN_SPEED} to {MAX_SPEED}"));
        }
        self.clock.anchor(now, self.duration);
        self.clock.speed = speed;
        Ok(())
    }

    /// Checks a time to seek to (seconds from the start): `Err` (what to tell the user) unless it is a number from
    /// 0 to the recording's length.
    pub fn check_seek(&self, secs: f64) -> Result<Duration, String> {
        let end = self.duration.as_secs_f64();
        if !(secs.is_finite() && (0.0..=end + 0.0005).contains(&secs)) {
            return Err(format!("seek must be a time in seconds from 0 to {end:.3} (the recording's length)"));
        }
        Ok(Duration::from_secs_f64(secs).min(self.duration))
    }

    /// Goes to game time `secs`: a fresh session from the nearest state block at or before it (bzhead's own
    /// format: from the start), fed up to it. The events of that catch-up are in [`Replay::take_events`]; the
    /// clock keeps its speed and whether it plays.
    pub fn seek(&mut self, now: Instant, secs: f64) -> Result<(), String> {
        let t = self.check_seek(secs)?;
        let block = match &self.source {
            Source::Rec { blocks, .. } => blocks.iter().rev().find(|b| b.0 <= t).copied(),
            Source::Bzh { .. } => None,
        };
        let from = block.map_or(Duration::ZERO, |b| b.0);
        let (session, input) =
            start(&self.path, &self.source, self.base, block.map(|b| b.1)).map_err(|e| e.to_string())?;
        self.session = session;
        self.input = input;
        self.next = None;
        self.at = from;
        self.events.clear();
        self.seeks += 1;
        self.drain(self.base + from);
        self.advance_to(t, usize::MAX);
        self.clock.wall = now;
        self.clock.t = t;
        Ok(())
    }

    /// The replay's state at wall time `now`.
    pub fn status(&self, now: Instant) -> ReplayOut {
        let t = self.clock.at(now, self.duration);
        ReplayOut {
            v: 1,
            file: self.path.display().to_string(),
            t: (t.as_secs_f64() * 1000.0).round() / 1000.0,
            duration: (self.duration.as_secs_f64() * 1000.0).round() / 1000.0,
            speed: self.clock.speed,
            playing: self.clock.playing,
            ended: t >= self.duration,
            seeks: self.seeks,
            error: self.error.clone(),
        }
    }

    /// Feeds the packets up to game time `target` (at most `max` of them).
    fn advance_to(&mut self, target: Duration, max: usize) {
        let mut fed = 0;
        while fed < max {
            if self.next.is_none() {
                self.next = self.read();
            }
            let Some((t, _)) = &self.next else { break };
            if *t > target {
                break;
            }
            let Some((t, item)) = self.next.take() else { break };
            let now = self.base + t;
            match (&mut self.input, item) {
                (Input::Rec { feed, .. }, Item::Rec(p)) => {
                    feed.play(&mut self.session, now, &p);
                }
                (_, Item::Bzh(r)) => feed_record(&mut self.session, now, &r),
                _ => {}
            }
            self.drain(now);
            self.at = self.at.max(t);
            fed += 1;
        }
        if self.next.as_ref().is_none_or(|(t, _)| *t > target) {
            self.at = self.at.max(target);
        }
    }

    /// Takes the session's events (at `now`); what it would send is dropped (a replay answers nobody).
    fn drain(&mut self, now: Instant) {
        let events = &mut self.events;
        crate::record::rec::drain(&mut self.session, Duration::ZERO, &mut |_, e| events.push((now, e)));
    }

    /// The next packet (or record) of the file, with its time; `None` at its end or at an error (kept).
    fn read(&mut self) -> Option<(Duration, Item)> {
        let r = match &mut self.input {
            Input::Rec { reader, feed } => reader.next_packet().map(|p| p.map(|p| (feed.time(&p), Item::Rec(p)))),
            Input::Bzh { reader } => reader.next().transpose().map(|r| r.map(|r| (r.t, Item::Bzh(r)))),
        };
        match r {
            Ok(x) => x,
            Err(e) => {
                self.error.get_or_insert_with(|| e.to_string());
                None
            }
        }
    }
}

/// A fresh session and the file opened where a replay starts: at byte `block` of a `.rec` (a state block; its
/// first packet when `None`), at the start of bzhead's own format.
fn start(path: &Path, source: &Source, base: Instant, block: Option<u64>) -> Result<(Session, Input), RecordError> {
    match source {
        Source::Rec { header, t0, .. } => {
            let pos = block.unwrap_or((HEADER_LEN + header.flags.len() + header.world.len()) as u64);
            let session = rec_join(header, base).map_err(|b| b.1)?;
            let reader = RecReader::open_at(path, pos)?;
            Ok((session, Input::Rec { reader, feed: RecFeed::new(*t0) }))
        }
        Source::Bzh { meta } => {
            let (_, reader) = RecordReader::open(path)?;
            Ok((Session::new(meta.config()), Input::Bzh { reader }))
        }
    }
}

impl WebView {
    /// Plays the replay's packets due at wall time `now` into the view; when the replay wants its next step.
    pub(super) fn replay_step(&mut self, reactor: &mut Reactor, now: Instant) -> Option<Instant> {
        let r = self.replay.as_mut()?;
        let ended = r.step(now);
        let events = r.take_events();
        let wake = r.wake(now);
        for (at, ev) in events {
            self.on_event(reactor, 0, at, &ev);
        }
        if ended {
            self.replay_changed(now);
        }
        wake
    }

    /// `GET /api/replay`: the replay's state after the commands given (`cmd=play` or `cmd=pause`, `speed=X`,
    /// `seek=T` in seconds), applied only when every one of them is valid (else `400` saying why).
    pub(super) fn replay_request(&mut self, reactor: &mut Reactor, r: &Request, now: Instant) -> Response {
        let Some(rep) = self.replay.as_mut() else {
            return Response::error(404, "not a replay (/api/replay answers `bzhead replay FILE --web ADDR`)");
        };
        let bad = |why: String| Response::error(400, &why);
        let speed = match r.query_param("speed") {
            None => None,
            Some(v) => match v.parse::<f64>() {
                Ok(x) if (MIN_SPEED..=MAX_SPEED).contains(&x) => Some(x),
                _ => return bad(format!("speed must be a number from {MIN_SPEED} to {MAX_SPEED}, not {v:?}")),
            },
        };
        let seek = match r.query_param("seek") {
            None => None,
            Some(v) => match v.parse::<f64>().map_err(|_| String::new()).and_then(|x| rep.check_seek(x).map(|_| x)) {
                Ok(x) => Some(x),
                Err(_) => {
                    let end = rep.duration().as_secs_f64();
                    return bad(format!(
                        "seek must be a time in seconds from 0 to {end:.3} (the recording's length), not {v:?}"
                    ));
                }
            },
        };
        let cmd = r.query_param("cmd");
        if r.method != crate::http::Method::Get && (speed.is_some() || seek.is_some() || cmd.is_some()) {
            return Response::error(405, "commands are GET requests (HEAD only reads the state)");
        }
        if let Some(c) = cmd.as_deref().filter(|c| !matches!(*c, "play" | "pause")) {
            return bad(format!("cmd must be play or pause, not {c:?}"));
        }
        let mut seeked = false;
        let mut result = Ok(());
        if let Some(x) = speed {
            result = rep.set_speed(now, x);
        }
        if let (Some(x), Ok(())) = (seek, &result) {
            result = rep.seek(now, x);
            seeked = result.is_ok();
        }
        match (cmd.as_deref(), &result) {
            (Some("play"), Ok(())) => match rep.play(now) {
                Ok(again) => seeked |= again,
                Err(e) => result = Err(e),
            },
            (Some("pause"), Ok(())) => rep.pause(now),
            _ => {}
        }
        if seeked {
            self.after_seek(reactor, now);
        } else if speed.is_some() || cmd.is_some() {
            self.replay_changed(now);
        }
        match (result, &self.replay) {
            (Err(e), _) => Response::error(500, &format!("the replay failed: {e}")),
            (Ok(()), Some(rep)) => Response::json(to_json(&rep.status(now))),
            (Ok(()), None) => Response::error(404, "not a replay"),
        }
    }

    /// The game was rebuilt at another time: the scene and what the viewers were sent are forgotten, the feed
    /// starts again with the events of the catch-up, and the next push is a full state.
    fn after_seek(&mut self, reactor: &mut Reactor, now: Instant) {
        let events = self.replay.as_mut().map(|r| r.take_events()).unwrap_or_default();
        let Some(s) = self.servers.get_mut(0) else { return };
        s.scene.reset();
        state::forget_sent(s);
        s.feed.clear();
        s.pending.clear();
        s.resync = true;
        self.replay_changed(now);
        for (at, ev) in events {
            self.on_event(reactor, 0, at, &ev);
        }
    }

    /// Tells the viewers the replay's state (a `replay` event, with the next push, in this turn).
    fn replay_changed(&mut self, now: Instant) {
        let Some(status) = self.replay.as_ref().map(|r| r.status(now)) else { return };
        let game_now = self.game_now(now);
        if let Some(s) = self.servers.get_mut(0) {
            s.dirty = true;
            s.urgent_since.get_or_insert(game_now);
        }
        self.broadcast_str(0, "replay", &super::to_string(&status));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/recordings/bzfs-2.4.26-ctf-14-bots.rec");

    /// Each player's callsign, team, score, whether alive, and last update (time and position), sorted by id.
    #[allow(clippy::type_complexity)]
    fn players(r: &Replay) -> Vec<(u8, String, &'static str, u16, u16, bool, Option<(Duration, [f32; 3])>)> {
        let game = r.session().game();
        let mut v: Vec<_> = game
            .players
            .values()
            .map(|p| {
                let u = p.last_update.as_ref().map(|(u, at)| (at.saturating_duration_since(r.base()), u.pos));
                (p.id, p.callsign.clone(), p.team.name(), p.wins, p.losses, p.alive, u)
            })
            .collect();
        v.sort_by_key(|p| p.0);
        v
    }

    #[test]
    fn a_seek_rebuilds_from_the_state_block_the_game_played_from_the_start() {
        let base = Instant::now();
        let mut from_start = Replay::open(Path::new(REC), base).expect("open");
        let mut sought = Replay::open(Path::new(REC), base).expect("open");
        let Source::Rec { blocks, .. } = &sought.source else { panic!("a .rec") };
        assert_eq!(blocks.len(), 4, "state blocks at 0, 10, 20 and 30 s: {blocks:?}");
        for t in [17.3, 25.0, 34.0] {
            from_start.advance_to(Duration::from_secs_f64(t), usize::MAX);
            sought.seek(base, t).expect("seek");
            assert_eq!(sought.game_now(), from_start.game_now());
            let (a, b) = (players(&from_start), players(&sought));
            assert!(a.len() >= 14, "{a:?}");
            // The roster, teams, scores and who is alive agree; so does every update since the block (the block
            // carries no positions: those come with the next update).
            for (x, y) in a.iter().zip(&b) {
                assert_eq!((x.0, &x.1, x.2, x.3, x.4, x.5), (y.0, &y.1, y.2, y.3, y.4, y.5), "at {t}");
                if y.6.is_some_and(|u| u.0 > Duration::from_secs_f64(t - 7.0)) {
                    assert_eq!(x.6, y.6, "player {} at {t}", x.0);
                }
            }
            assert_eq!(a.len(), b.len());
        }
        // Out of range: refused, nothing changed.
        assert!(sought.seek(base, 99.0).is_err());
        assert!(sought.seek(base, f64::NAN).is_err());
        assert_eq!(sought.game_now(), base + Duration::from_secs(34));
    }

    #[test]
    fn a_seek_in_bzheads_own_format_plays_it_again_from_the_start() {
        let own = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/recordings/two-hunters.rec");
        let base = Instant::now();
        let mut from_start = Replay::open(Path::new(own), base).expect("open");
        assert!(matches!(from_start.source, Source::Bzh { .. }), "BZHREC01");
        let mut sought = Replay::open(Path::new(own), base).expect("open");
        let end = from_start.duration().as_secs_f64();
        assert!(end > 1.0, "{end}");
        // Forwards, then back (a fresh session from the start each time).
        for t in [end * 0.75, end * 0.4] {
            sought.seek(base, t).expect("seek");
            let mut fresh = Replay::open(Path::new(own), base).expect("open");
            fresh.advance_to(Duration::from_secs_f64(t), usize::MAX);
            assert_eq!(players(&sought), players(&fresh), "at {t}");
            assert!(!players(&sought).is_empty(), "at {t}");
        }
        from_start.advance_to(from_start.duration(), usize::MAX);
        assert_eq!(from_start.game_now(), base + from_start.duration());
    }

    #[test]
    fn the_clock_runs_at_its_speed_and_stops_at_the_end() {
        let base = Instant::now();
        let mut r = Replay::open(Path::new(REC), base).expect("open");
        assert!(r.set_speed(base, 100.0).is_err() && r.set_speed(base, 0.1).is_err());
        r.set_speed(base, 64.0).expect("speed");
        r.play(base).expect("play");
        assert!(!r.step(base + Duration::from_millis(250)));
        assert_eq!(r.game_now(), base + Duration::from_secs(16));
        assert!(r.step(base + Duration::from_secs(1)), "ended");
        assert_eq!(r.game_now(), base + r.duration());
        assert!(!r.status(base + Duration::from_secs(2)).playing);
    }
}
