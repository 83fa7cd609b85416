//! The `savage2` query: one 12-byte info request, one reply, retries on silence.
//!
//! Replies are matched by source address. The request's last four bytes are expected back in bytes 8-11 of the
//! reply, but what the server really puts there is unverified (the two real replies carry 0x29 and 0x24), so a
//! mismatch is reported (`raw.echo_matched = false`) rather than treated as a foreign packet.

use crate::msg;
use query_abi::{keys, CreateError, Datagram, Level, QueryConfig, QueryEngine, RetryTimer, Sink, Status, Value};
use std::net::SocketAddr;

/// One Savage 2 info query.
#[derive(Debug)]
pub struct Savage2Engine {
    target: SocketAddr,
    echo: i32,
    timer: RetryTimer,
    done: bool,
}

impl Savage2Engine {
    /// Like [`QueryEngine::new`] with an explicit echo value.
    pub fn with_echo(target: SocketAddr, config: &QueryConfig, echo: i32, now_ms: u64, sink: &mut dyn Sink) -> Self {
        let mut e = Savage2Engine { target, echo, timer: RetryTimer::new(config), done: false };
        e.send(now_ms, sink);
        e
    }

    fn send(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        sink.send(self.target, &msg::info_request(self.echo));
        self.timer.arm(now_ms);
    }

    fn finish(&mut self, sink: &mut dyn Sink, info: &msg::Info) {
        sink.server(keys::NAME, Value::Str(&info.name));
        sink.server(keys::MAP, Value::Str(&info.map));
        sink.server(keys::PLAYERS, Value::Int(i64::from(info.players)));
        sink.server(keys::MAX_PLAYERS, Value::Int(i64::from(info.max_players)));
        sink.server(keys::PASSWORD, Value::Bool(info.password));
        sink.server(keys::VERSION, Value::Str(&info.version));
        sink.server(keys::PLAYER_LIST_COMPLETE, Value::Bool(false));
        let plain = msg::strip_colours(&info.name);
        sink.raw("name_plain", Value::Str(&plain));
        sink.raw("match_time", Value::Str(&info.match_time));
        sink.raw("next_map", Value::Str(&info.next_map));
        sink.raw("location", Value::Str(&info.location));
        sink.raw("min_players", Value::Int(i64::from(info.min_players)));
        sink.raw("flag_byte", Value::Int(i64::from(info.extra_flag)));
        sink.raw("races", Value::Str(&info.races));
        sink.raw("echo", Value::Int(i64::from(info.echo)));
        sink.raw("echo_matched", Value::Bool(info.echo == self.echo));
        sink.raw("client_id", Value::Int(i64::from(info.client_id)));
        sink.raw("trailing_bytes", Value::Int(i64::try_from(info.trailing).unwrap_or(i64::MAX)));
        sink.finish();
    }
}

impl QueryEngine for Savage2Engine {
    fn new(
        protocol: &str,
        target: SocketAddr,
        config: &QueryConfig,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<Self, CreateError> {
        if protocol != "savage2" {
            return Err(CreateError::UnknownProtocol);
        }
        // A positive value; the Launcher sends 1, the seed page a "ping" value.
        let echo = ((config.derive(1) & 0x7fff_fffe) | 1) as i32;
        Ok(Self::with_echo(target, config, echo, now_ms, sink))
    }

    fn on_datagram(&mut self, _now_ms: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram {
        if self.done || from != self.target || !msg::is_info_reply(data) {
            return Datagram::Ignored;
        }
        self.done = true;
        self.timer.stop();
        match msg::parse_info(data) {
            Ok(info) => {
                if info.echo != self.echo {
                    sink.log_fmt(Level::Debug, format_args!("echo {} instead of {}", info.echo, self.echo));
                }
                self.finish(sink, &info);
            }
            Err(e) => sink.done(Status::MALFORMED, &format!("info reply: {e}")),
        }
        Datagram::Accepted
    }

    fn on_timeout(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        if self.done || self.timer.is_waiting(now_ms) {
            return;
        }
        if !self.timer.next_attempt() {
            self.done = true;
            self.timer.stop();
            let n = self.timer.attempts();
            return sink.done(Status::TIMEOUT, &format!("no reply after {n} request(s)"));
        }
        self.send(now_ms, sink);
    }

    fn next_deadline(&self) -> Option<u64> {
        self.timer.deadline()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bzhead_wire::fuzz::{for_each_mutation, for_each_truncation};
    use query_abi::collect::{Collector, OwnedValue, Report};

    const R1: &[u8] = include_bytes!("../testdata/savage2-reply1.bin");
    const R2: &[u8] = include_bytes!("../testdata/savage2-reply2.bin");

    fn target() -> SocketAddr {
        "127.0.0.1:15210".parse().unwrap()
    }

    fn run(echo: i32, replies: &[&[u8]], config: QueryConfig) -> (Report, Vec<Vec<u8>>, Vec<Datagram>) {
        let mut c = Collector::new();
        let mut e = Savage2Engine::with_echo(target(), &config, echo, 0, &mut c);
        let results = replies.iter().map(|r| e.on_datagram(1, target(), r, &mut c)).collect();
        for _ in 0..100 {
            if c.done().is_some() {
                break;
            }
            let now = e.next_deadline().expect("not done and no deadline");
            e.on_timeout(now, &mut c);
        }
        let sends = c.take_sends().into_iter().map(|(_, d)| d).collect();
        (c.report(), sends, results)
    }

    #[test]
    fn reply1_every_field() {
        let (rep, sends, res) = run(0x29, &[R1], QueryConfig::default());
        assert_eq!(sends, vec![msg::info_request(0x29).to_vec()]);
        assert_eq!(res, vec![Datagram::Accepted]);
        assert!(rep.ok());
        assert_eq!(rep.str(keys::NAME), Some("Unnamed Server"));
        assert_eq!(rep.str(keys::MAP), Some("duel_arena"));
        assert_eq!(rep.int(keys::PLAYERS), Some(2));
        assert_eq!(rep.int(keys::MAX_PLAYERS), Some(20));
        assert_eq!(rep.bool(keys::PASSWORD), Some(true), "the byte after the version");
        assert_eq!(rep.str(keys::VERSION), Some("1.7.5.0"), "gamedig says \"HvB\": it misses the flag byte");
        assert_eq!(rep.raw("match_time"), Some(&OwnedValue::from("00:03:19")));
        assert_eq!(rep.raw("next_map"), Some(&OwnedValue::from("ancientcities")));
        assert_eq!(rep.raw("location"), Some(&OwnedValue::from("Unknown")));
        assert_eq!(rep.raw("min_players"), Some(&OwnedValue::Int(2)));
        assert_eq!(rep.raw("flag_byte"), Some(&OwnedValue::Int(0)));
        assert_eq!(rep.raw("races"), Some(&OwnedValue::from("HvB")));
        assert_eq!(rep.raw("echo_matched"), Some(&OwnedValue::Bool(true)));
        assert_eq!(rep.raw("client_id"), Some(&OwnedValue::Int(0xa670)));
        assert_eq!(rep.raw("trailing_bytes"), Some(&OwnedValue::Int(9)));
        assert!(rep.players.is_empty());
    }

    #[test]
    fn reply2_colours_and_echo_mismatch() {
        let (rep, _, _) = run(7, &[R2], QueryConfig::default());
        assert!(rep.ok());
        assert_eq!(rep.str(keys::NAME), Some("^gEro's ^yCTF RPS ^rCharge"));
        assert_eq!(rep.raw("name_plain"), Some(&OwnedValue::from("Ero's CTF RPS Charge")));
        assert_eq!(rep.str(keys::MAP), Some("ctf_beach"));
        assert_eq!(rep.int(keys::PLAYERS), Some(0));
        assert_eq!(rep.int(keys::MAX_PLAYERS), Some(16));
        assert_eq!(rep.bool(keys::PASSWORD), Some(false));
        assert_eq!(rep.raw("match_time"), Some(&OwnedValue::from("Waiting")));
        assert_eq!(rep.raw("location"), Some(&OwnedValue::from("Chi Suburbs, IL")));
        assert_eq!(rep.raw("min_players"), Some(&OwnedValue::Int(3)));
        assert_eq!(rep.raw("echo"), Some(&OwnedValue::Int(0x24)));
        assert_eq!(rep.raw("echo_matched"), Some(&OwnedValue::Bool(false)), "reported, not refused");
    }

    #[test]
    fn silence_retries_then_times_out_and_strangers_are_ignored() {
        let (rep, sends, res) = run(1, &[b"\x01", &[0u8; 40]], QueryConfig::default());
        assert_eq!(res, vec![Datagram::Ignored, Datagram::Ignored]);
        assert_eq!(rep.done.unwrap().0, Status::TIMEOUT);
        assert_eq!(sends.len(), 3);
        let mut c = Collector::new();
        let mut e = Savage2Engine::with_echo(target(), &QueryConfig::default(), 1, 0, &mut c);
        assert_eq!(e.on_datagram(1, "127.0.0.1:1".parse().unwrap(), R1, &mut c), Datagram::Ignored);
        assert_eq!(e.on_datagram(1, target(), R1, &mut c), Datagram::Accepted);
        assert_eq!(e.on_datagram(1, target(), R1, &mut c), Datagram::Ignored, "done");
        assert!(Savage2Engine::new("srb2", target(), &QueryConfig::default(), 0, &mut c).is_err());
    }

    #[test]
    fn truncations_give_malformed_and_mutations_never_panic() {
        let mut n = 0;
        for (i, base) in [R1, R2].into_iter().enumerate() {
            for_each_truncation(base, |t| {
                let (rep, _, _) = run(1, &[t], QueryConfig { retries: 0, ..QueryConfig::default() });
                let st = rep.done.unwrap().0;
                // Up to the password byte everything is required; a cut reply is malformed (or, before the
                // command byte, not recognisably a reply at all).
                if t.len() >= 12 && t.len() < base.len() - 9 {
                    assert_eq!(st, Status::MALFORMED, "len {}", t.len());
                } else if t.len() < 12 {
                    assert_eq!(st, Status::TIMEOUT);
                }
                n += 1;
            });
            for_each_mutation(0x5A5A + i as u64, base, 2000, |seed, m| {
                let r = std::panic::catch_unwind(|| run(1, &[m], QueryConfig { retries: 0, ..QueryConfig::default() }));
                assert!(r.is_ok_and(|(rep, _, _)| rep.done.is_some()), "seed {seed:#x}");
                n += 1;
            });
        }
        assert!(n > 3000);
    }
}
