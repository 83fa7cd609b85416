//! A [`Sink`] that records everything, for testing engines as plain Rust (and for in-process hosts).

use crate::safe::{Level, Player, Sink, Value};
use crate::Status;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// An owned [`Value`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnedValue {
    /// Unknown.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// Text.
    Str(String),
}

impl OwnedValue {
    /// Copies a borrowed value.
    pub fn from_value(v: Value<'_>) -> OwnedValue {
        match v {
            Value::Null => OwnedValue::Null,
            Value::Bool(b) => OwnedValue::Bool(b),
            Value::Int(i) => OwnedValue::Int(i),
            Value::Str(s) => OwnedValue::Str(s.to_owned()),
        }
    }

    /// The text, if this is text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            OwnedValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            OwnedValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            OwnedValue::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl From<&str> for OwnedValue {
    fn from(s: &str) -> Self {
        OwnedValue::Str(s.to_owned())
    }
}
impl From<i64> for OwnedValue {
    fn from(i: i64) -> Self {
        OwnedValue::Int(i)
    }
}
impl From<bool> for OwnedValue {
    fn from(b: bool) -> Self {
        OwnedValue::Bool(b)
    }
}

/// An owned [`Player`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedPlayer {
    /// Name.
    pub name: String,
    /// Score.
    pub score: Option<i64>,
    /// Team.
    pub team: OwnedValue,
    /// Ping.
    pub ping: Option<i64>,
    /// Extra fields, in order.
    pub extra: Vec<(String, OwnedValue)>,
}

impl OwnedPlayer {
    /// The extra field `key`.
    pub fn get(&self, key: &str) -> Option<&OwnedValue> {
        self.extra.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// One thing an engine did, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// [`Sink::send`].
    Send(SocketAddr, Vec<u8>),
    /// [`Sink::server`].
    Server(String, OwnedValue),
    /// [`Sink::rule`].
    Rule(String, String),
    /// [`Sink::raw`].
    Raw(String, OwnedValue),
    /// [`Sink::player`].
    Player(OwnedPlayer),
    /// [`Sink::master_entry`].
    MasterEntry(SocketAddr),
    /// [`Sink::done`] (every call is recorded; the report keeps the first).
    Done(Status, String),
    /// [`Sink::log`].
    Log(Level, String),
}

/// Records every call. [`Collector::take_sends`] drains the datagrams to send; [`Collector::report`] assembles the
/// results the way a host would.
#[derive(Clone, Debug, Default)]
pub struct Collector {
    /// Everything, in order.
    pub events: Vec<Event>,
    /// Highest level kept by [`Sink::log`] (default: everything).
    pub max_level: Option<Level>,
}

/// The results of one query, assembled from a [`Collector`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Well-known server fields (the last value of each key).
    pub server: BTreeMap<String, OwnedValue>,
    /// Rules in report order.
    pub rules: Vec<(String, String)>,
    /// Raw fields (the last value of each key).
    pub raw: BTreeMap<String, OwnedValue>,
    /// Players in report order.
    pub players: Vec<OwnedPlayer>,
    /// Master-list entries in report order.
    pub masters: Vec<SocketAddr>,
    /// The first `done`, if any.
    pub done: Option<(Status, String)>,
}

impl Report {
    /// A server field as text.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.server.get(key).and_then(OwnedValue::as_str)
    }
    /// A server field as an integer.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.server.get(key).and_then(OwnedValue::as_int)
    }
    /// A server field as a boolean.
    pub fn bool(&self, key: &str) -> Option<bool> {
        self.server.get(key).and_then(OwnedValue::as_bool)
    }
    /// A raw field.
    pub fn raw(&self, key: &str) -> Option<&OwnedValue> {
        self.raw.get(key)
    }
    /// A rule.
    pub fn rule(&self, key: &str) -> Option<&str> {
        self.rules.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
    /// True when the query finished with [`Status::OK`].
    pub fn ok(&self) -> bool {
        matches!(self.done, Some((s, _)) if s.is_ok())
    }
}

impl Collector {
    /// An empty collector that keeps every log line.
    pub fn new() -> Self {
        Collector::default()
    }

    /// Removes and returns the datagrams sent so far.
    pub fn take_sends(&mut self) -> Vec<(SocketAddr, Vec<u8>)> {
        let mut out = Vec::new();
        self.events.retain(|e| match e {
            Event::Send(a, d) => {
                out.push((*a, d.clone()));
                false
            }
            _ => true,
        });
        out
    }

    /// The first `done`, if any.
    pub fn done(&self) -> Option<(Status, &str)> {
        self.events.iter().find_map(|e| match e {
            Event::Done(s, m) => Some((*s, m.as_str())),
            _ => None,
        })
    }

    /// Assembles the report (everything up to and including the first `done`).
    pub fn report(&self) -> Report {
        let mut r = Report::default();
        for e in &self.events {
            match e {
                Event::Server(k, v) => {
                    r.server.insert(k.clone(), v.clone());
                }
                Event::Rule(k, v) => r.rules.push((k.clone(), v.clone())),
                Event::Raw(k, v) => {
                    r.raw.insert(k.clone(), v.clone());
                }
                Event::Player(p) => r.players.push(p.clone()),
                Event::MasterEntry(a) => r.masters.push(*a),
                Event::Done(s, m) => {
                    r.done = Some((*s, m.clone()));
                    break;
                }
                Event::Send(..) | Event::Log(..) => {}
            }
        }
        r
    }
}

impl Sink for Collector {
    fn send(&mut self, to: SocketAddr, data: &[u8]) -> Status {
        self.events.push(Event::Send(to, data.to_vec()));
        Status::OK
    }
    fn server(&mut self, key: &str, value: Value<'_>) {
        self.events.push(Event::Server(key.to_owned(), OwnedValue::from_value(value)));
    }
    fn rule(&mut self, key: &str, value: &str) {
        self.events.push(Event::Rule(key.to_owned(), value.to_owned()));
    }
    fn raw(&mut self, key: &str, value: Value<'_>) {
        self.events.push(Event::Raw(key.to_owned(), OwnedValue::from_value(value)));
    }
    fn player(&mut self, p: &Player<'_>) {
        self.events.push(Event::Player(OwnedPlayer {
            name: p.name.to_owned(),
            score: p.score,
            team: OwnedValue::from_value(p.team),
            ping: p.ping,
            extra: p.extra.iter().map(|(k, v)| ((*k).to_owned(), OwnedValue::from_value(*v))).collect(),
        }));
    }
    fn master_entry(&mut self, addr: SocketAddr) {
        self.events.push(Event::MasterEntry(addr));
    }
    fn done(&mut self, status: Status, error: &str) {
        self.events.push(Event::Done(status, error.to_owned()));
    }
    fn log(&mut self, level: Level, msg: &str) {
        if self.log_enabled(level) {
            self.events.push(Event::Log(level, msg.to_owned()));
        }
    }
    fn log_enabled(&self, level: Level) -> bool {
        self.max_level.is_none_or(|m| level <= m)
    }
}
