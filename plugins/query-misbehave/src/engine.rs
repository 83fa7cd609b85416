//! The misbehaving engine.

use query_abi::{keys, CreateError, Datagram, Player, QueryConfig, QueryEngine, Sink, Value};
use std::net::SocketAddr;

/// What this instance does wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Behaves.
    Echo,
    /// Panics on a datagram.
    PanicOnDatagram,
    /// Panics in `on_timeout`.
    PanicOnTimeout,
    /// Panics in `next_deadline`.
    PanicOnDeadline,
    /// Panics when dropped.
    PanicOnDrop,
    /// Reported garbage in `new`.
    Garbage,
    /// Never finishes.
    NeverDone,
    /// Always due.
    BusyDeadline,
    /// Flooded sends in `new`.
    SendFlood,
    /// Flooded reports in `new`.
    ReportFlood,
}

/// One misbehaving query.
#[derive(Debug)]
pub struct Misbehave {
    kind: Kind,
    target: SocketAddr,
    now: u64,
    /// `n` garbage callbacks were made (0 when not run through the export layer).
    pub garbage_calls: usize,
}

static BIG_NAME: [u8; 4096] = [b'x'; 4096];

impl QueryEngine for Misbehave {
    fn new(
        protocol: &str,
        target: SocketAddr,
        _config: &QueryConfig,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<Self, CreateError> {
        let kind = match protocol {
            "echo" => Kind::Echo,
            "panic-on-create" => panic!("misbehave: panic-on-create"),
            "panic-on-datagram" => Kind::PanicOnDatagram,
            "panic-on-timeout" => Kind::PanicOnTimeout,
            "panic-on-deadline" => Kind::PanicOnDeadline,
            "panic-on-drop" => Kind::PanicOnDrop,
            "garbage" => Kind::Garbage,
            "never-done" => Kind::NeverDone,
            "busy-deadline" => Kind::BusyDeadline,
            "send-flood" => Kind::SendFlood,
            "report-flood" => Kind::ReportFlood,
            _ => return Err(CreateError::UnknownProtocol),
        };
        let mut e = Misbehave { kind, target, now: now_ms, garbage_calls: 0 };
        match kind {
            Kind::Echo | Kind::PanicOnDatagram => {
                sink.send(target, b"ping");
            }
            Kind::PanicOnDrop => sink.finish(),
            Kind::Garbage => {
                sink.send(target, b"garbage");
                e.garbage_calls = query_abi::misbehave::send_garbage_reports(sink, target);
            }
            Kind::SendFlood => {
                for i in 0..10_000u32 {
                    sink.send(target, &i.to_le_bytes());
                }
                sink.finish();
            }
            Kind::ReportFlood => {
                let name = std::str::from_utf8(&BIG_NAME).unwrap_or("x");
                for i in 0..100_000i64 {
                    sink.player(&Player { name, score: Some(i), team: Value::Null, ping: None, extra: &[] });
                    sink.rule(name, name);
                }
                sink.server(keys::NAME, Value::Str(name));
                sink.finish();
            }
            Kind::PanicOnTimeout | Kind::PanicOnDeadline | Kind::NeverDone | Kind::BusyDeadline => {}
        }
        Ok(e)
    }

    fn on_datagram(&mut self, now_ms: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram {
        self.now = now_ms;
        match self.kind {
            Kind::PanicOnDatagram => panic!("misbehave: panic-on-datagram"),
            Kind::Echo if from == self.target => {
                let text = String::from_utf8_lossy(data);
                sink.server(keys::NAME, Value::Str(&text));
                sink.finish();
                Datagram::Accepted
            }
            _ => Datagram::Ignored,
        }
    }

    fn on_timeout(&mut self, now_ms: u64, _sink: &mut dyn Sink) {
        self.now = now_ms;
        if self.kind == Kind::PanicOnTimeout {
            panic!("misbehave: panic-on-timeout");
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        match self.kind {
            Kind::PanicOnDeadline => panic!("misbehave: panic-on-deadline"),
            Kind::PanicOnTimeout | Kind::BusyDeadline => Some(self.now),
            _ => None,
        }
    }
}

impl Drop for Misbehave {
    fn drop(&mut self) {
        if self.kind == Kind::PanicOnDrop && !std::thread::panicking() {
            panic!("misbehave: panic-on-drop");
        }
    }
}
