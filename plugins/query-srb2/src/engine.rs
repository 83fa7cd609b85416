//! The `srb2` query: `PT_ASKINFO` (with a `time` value the server echoes), then `PT_SERVERINFO` and `PT_PLAYERINFO`
//! as two datagrams, combined into one answer.
//!
//! `PT_SERVERINFO` must echo our `time`; `PT_PLAYERINFO` carries no token and is matched by source address only
//! (the host demultiplexes by address). Either may arrive first. If the player datagram does not follow within a
//! short wait, the server info is reported with `player_list_complete = false`. Packets with a wrong checksum are
//! dropped, as the game does.

use crate::msg::{self, PlayerInfo, ServerInfo};
use bzhead_wire::text::hex;
use query_abi::{
    keys, CreateError, Datagram, Level, Player, QueryConfig, QueryEngine, RetryTimer, Sink, Status, Value,
};
use std::net::SocketAddr;

/// How long to wait for `PT_PLAYERINFO` once `PT_SERVERINFO` is in (they are sent back to back).
const PLAYERS_WAIT_MS: u64 = 500;

/// One SRB2 query.
#[derive(Debug)]
pub struct Srb2Engine {
    target: SocketAddr,
    time: u32,
    timer: RetryTimer,
    server: Option<Box<ServerInfo>>,
    players: Option<(Vec<PlayerInfo>, usize)>,
    done: bool,
}

impl Srb2Engine {
    /// Like [`QueryEngine::new`] with an explicit `time` value.
    pub fn with_time(target: SocketAddr, config: &QueryConfig, time: u32, now_ms: u64, sink: &mut dyn Sink) -> Self {
        let mut e =
            Srb2Engine { target, time, timer: RetryTimer::new(config), server: None, players: None, done: false };
        e.send(now_ms, sink);
        e
    }

    fn send(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        sink.send(self.target, &msg::askinfo(self.time));
        self.timer.arm(now_ms);
    }

    fn finish(&mut self, sink: &mut dyn Sink) {
        self.done = true;
        self.timer.stop();
        let Some(s) = self.server.take() else { return };
        let players = self.players.take();
        sink.server(keys::NAME, Value::Str(&s.name));
        sink.server(keys::MAP, Value::Str(&s.map));
        sink.server(keys::GAME_TYPE, Value::Str(&s.game_type));
        sink.server(keys::PLAYERS, Value::Int(i64::from(s.players)));
        sink.server(keys::MAX_PLAYERS, Value::Int(i64::from(s.max_players)));
        let version = format!("{}.{}.{}", s.version / 100, s.version % 100, s.subversion);
        sink.server(keys::VERSION, Value::Str(&version));
        sink.server(keys::PLAYER_LIST_COMPLETE, Value::Bool(players.is_some()));
        let plain = msg::strip_colours(&s.name);
        sink.raw("name_plain", Value::Str(&plain));
        sink.raw("packet_version", s.packet_version.into());
        if let Some(a) = &s.application {
            sink.raw("application", Value::Str(a));
        }
        sink.raw("refuse_reason", s.refuse_reason.into());
        sink.raw("game_type_number", s.game_type_number.into());
        sink.raw("modified", Value::Bool(s.modified));
        sink.raw("cheats", Value::Bool(s.cheats));
        sink.raw("dedicated", Value::Bool(s.dedicated));
        sink.raw("lots_of_addons", s.lots_of_addons.into());
        if let Some(a) = s.admin_player {
            sink.raw("admin_player", Value::Int(i64::from(a)));
        }
        sink.raw("level_time_tics", Value::Int(i64::from(s.level_time)));
        sink.raw("map_title", Value::Str(&s.map_title));
        let md5 = hex(&s.map_md5);
        sink.raw("map_md5", Value::Str(&md5));
        sink.raw("act", Value::Int(i64::from(s.act)));
        sink.raw("zone", Value::Bool(s.zone));
        if let Some(h) = &s.http_source {
            sink.raw("http_source", Value::Str(h));
        }
        sink.raw("file_count", Value::Int(i64::from(s.file_count)));
        let files = s.files.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ");
        sink.raw("files", Value::Str(&files));
        if s.files_cut {
            sink.raw("files_cut", Value::Bool(true));
        }
        if let Some((list, leftover)) = &players {
            if *leftover != 0 {
                sink.raw("player_info_leftover_bytes", Value::Int(i64::try_from(*leftover).unwrap_or(i64::MAX)));
            }
            for p in list {
                let team = match p.team {
                    255 => Value::Str("spectator"),
                    0 => Value::Null,
                    1 => Value::Str("red"),
                    2 => Value::Str("blue"),
                    t => Value::Int(i64::from(t)),
                };
                let extra = [
                    ("slot", Value::Int(i64::from(p.slot))),
                    ("team_number", Value::Int(i64::from(p.team))),
                    ("skin", Value::Int(i64::from(p.skin))),
                    ("it", Value::Bool(p.data & 0x20 != 0)),
                    ("has_flag", Value::Bool(p.data & 0x40 != 0)),
                    ("super", Value::Bool(p.data & 0x80 != 0)),
                    ("time_in_server_s", Value::Int(i64::from(p.time_in_server))),
                ];
                sink.player(&Player {
                    name: &p.name,
                    score: Some(i64::from(p.score)),
                    team,
                    ping: None,
                    extra: &extra,
                });
            }
        }
        sink.finish();
    }
}

impl QueryEngine for Srb2Engine {
    fn new(
        protocol: &str,
        target: SocketAddr,
        config: &QueryConfig,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<Self, CreateError> {
        if protocol != "srb2" {
            return Err(CreateError::UnknownProtocol);
        }
        Ok(Self::with_time(target, config, config.derive(1) as u32, now_ms, sink))
    }

    fn on_datagram(&mut self, now_ms: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram {
        if self.done || from != self.target {
            return Datagram::Ignored;
        }
        let Some((ty, body)) = msg::open(data) else {
            sink.log(Level::Debug, "datagram too short or with a bad checksum");
            return Datagram::Ignored;
        };
        match ty {
            msg::PT_SERVERINFO if self.server.is_none() => {
                // `time` sits at a layout-dependent offset: decode first, then check the echo.
                match msg::parse_serverinfo(body) {
                    Ok(s) if s.time != self.time => {
                        sink.log_fmt(
                            Level::Debug,
                            format_args!("PT_SERVERINFO echoes time {} not {}", s.time, self.time),
                        );
                        return Datagram::Ignored;
                    }
                    Ok(s) => self.server = Some(Box::new(s)),
                    Err(e) => {
                        self.done = true;
                        self.timer.stop();
                        sink.done(Status::MALFORMED, &format!("PT_SERVERINFO: {e}"));
                        return Datagram::Accepted;
                    }
                }
            }
            msg::PT_PLAYERINFO if self.players.is_none() => self.players = Some(msg::parse_playerinfo(body)),
            _ => return Datagram::Ignored,
        }
        if self.server.is_some() {
            if self.players.is_some() {
                self.finish(sink);
            } else {
                self.timer.arm_in(now_ms, PLAYERS_WAIT_MS.min(self.timer.first_wait_ms()));
            }
        }
        Datagram::Accepted
    }

    fn on_timeout(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        if self.done || self.timer.is_waiting(now_ms) {
            return;
        }
        if self.server.is_some() {
            return self.finish(sink);
        }
        if !self.timer.next_attempt() {
            self.done = true;
            self.timer.stop();
            let n = self.timer.attempts();
            return sink.done(Status::TIMEOUT, &format!("no PT_SERVERINFO after {n} request(s)"));
        }
        self.send(now_ms, sink);
    }

    fn next_deadline(&self) -> Option<u64> {
        self.timer.deadline()
    }
}
