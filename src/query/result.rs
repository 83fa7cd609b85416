//! The one result shape every protocol's answer is printed in.
//!
//! An answer: `{"v":1,"protocol","address","ok":true,"ping_ms","name","map","game_type","players","max_players",
//! "bots","password","version","player_list":[{"name","score","team","ping",...}],"rules":{...},"raw":{...}}`
//! (a master's answer adds `"servers":["ADDR:PORT",...]`). A failure: `{"v":1,"protocol","address","ok":false,
//! "error":KIND,"detail":TEXT}` where `KIND` is one of [`ErrorKind`]'s names (`timeout`, `refused`, `malformed`,
//! `plugin`, `unsupported`, `error`). Keys come out in this order.

use std::fmt;
use std::net::SocketAddr;

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::plugin::{PlayerReport, Val};

/// Largest player count kept; a larger (or negative) one is printed as unknown (`null`).
pub const MAX_COUNT: i64 = 1_000_000;

/// Result shape version (`"v"`).
pub const SHAPE_VERSION: u32 = 1;

/// Key/value pairs serialised as a JSON object in their order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fields(pub Vec<(String, Value)>);

impl Fields {
    /// The value of `key` (the last one if repeated).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Sets `key`, replacing an earlier value in place.
    pub fn set(&mut self, key: &str, value: Value) {
        if let Some(slot) = self.0.iter_mut().find(|(k, _)| k == key) {
            slot.1 = value;
        } else {
            self.0.push((key.to_owned(), value));
        }
    }

    /// [`Fields::set`] with an owned key (no copy).
    pub fn set_owned(&mut self, key: String, value: Value) {
        if let Some(slot) = self.0.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = value;
        } else {
            self.0.push((key, value));
        }
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Fields {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// One entry of `player_list`.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayerEntry {
    /// Name as sent.
    pub name: String,
    /// Score (null when the protocol has none).
    pub score: Value,
    /// Team (null when the protocol has none).
    pub team: Value,
    /// Ping in ms as the server reports it (null when it does not).
    pub ping: Value,
    /// Protocol-specific fields, flattened into the entry.
    pub extra: Fields,
}

impl From<PlayerReport> for PlayerEntry {
    fn from(p: PlayerReport) -> Self {
        let reserved = ["name", "score", "team", "ping"];
        let mut extra = p.extra;
        extra.retain(|(k, _)| !reserved.contains(&k.as_str()));
        PlayerEntry {
            name: p.name,
            score: p.score.into_json(),
            team: p.team.into_json(),
            ping: p.ping.into_json(),
            extra: Fields(extra),
        }
    }
}

impl Serialize for PlayerEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4 + self.extra.len()))?;
        m.serialize_entry("name", &self.name)?;
        m.serialize_entry("score", &self.score)?;
        m.serialize_entry("team", &self.team)?;
        m.serialize_entry("ping", &self.ping)?;
        for (k, v) in &self.extra.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A server's (or master's) answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answer {
    /// Server name as sent (colour codes kept).
    pub name: Option<String>,
    /// Map.
    pub map: Option<String>,
    /// Game type or mode.
    pub game_type: Option<String>,
    /// Connected clients.
    pub players: Option<i64>,
    /// Slots.
    pub max_players: Option<i64>,
    /// Bots among the players, when the protocol tells.
    pub bots: Option<i64>,
    /// Password required.
    pub password: Option<bool>,
    /// Version.
    pub version: Option<String>,
    /// The players; `None` when unknown (a rate-limited reply, a query without players).
    pub player_list: Option<Vec<PlayerEntry>>,
    /// Server rules (cvars, settings).
    pub rules: Fields,
    /// Protocol-specific fields.
    pub raw: Fields,
    /// For a master: the servers it listed.
    pub servers: Option<Vec<SocketAddr>>,
}

impl Answer {
    /// Sets a well-known field from a plugin value (the kind was checked by the host callbacks).
    pub fn set_server_field(&mut self, key: &str, v: Val) {
        use query_abi::keys;
        let s = |v: Val| match v {
            Val::Str(s) => Some(s),
            _ => None,
        };
        // Counts come from the server through the plugin: a negative or absurd one is unknown, not an error.
        let i = |v: Val| match v {
            Val::Int(i) if (0..=MAX_COUNT).contains(&i) => Some(i),
            _ => None,
        };
        match key {
            keys::NAME => self.name = s(v),
            keys::MAP => self.map = s(v),
            keys::GAME_TYPE => self.game_type = s(v),
            keys::PLAYERS => self.players = i(v),
            keys::MAX_PLAYERS => self.max_players = i(v),
            keys::BOTS => self.bots = i(v),
            keys::PASSWORD => self.password = if let Val::Bool(b) = v { Some(b) } else { None },
            keys::VERSION => self.version = s(v),
            _ => {}
        }
    }

    /// Reads an answer that is already in the shared shape (the built-in BZFlag query renders itself so).
    pub fn from_shape(v: &Value) -> Answer {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let int = |k: &str| v.get(k).and_then(Value::as_i64);
        let fields = |k: &str| {
            Fields(
                v.get(k)
                    .and_then(Value::as_object)
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default(),
            )
        };
        let player_list = v.get("player_list").and_then(Value::as_array).map(|a| {
            a.iter()
                .map(|p| {
                    let get = |k: &str| p.get(k).cloned().unwrap_or(Value::Null);
                    let extra = p
                        .as_object()
                        .map(|m| {
                            m.iter()
                                .filter(|(k, _)| !["name", "score", "team", "ping"].contains(&k.as_str()))
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect()
                        })
                        .unwrap_or_default();
                    PlayerEntry {
                        name: p.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
                        score: get("score"),
                        team: get("team"),
                        ping: get("ping"),
                        extra: Fields(extra),
                    }
                })
                .collect()
        });
        Answer {
            name: text("name"),
            map: text("map"),
            game_type: text("game_type"),
            players: int("players"),
            max_players: int("max_players"),
            bots: int("bots"),
            password: v.get("password").and_then(Value::as_bool),
            version: text("version"),
            player_list,
            rules: fields("rules"),
            raw: fields("raw"),
            servers: None,
        }
    }
}

/// Why a query failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// No (complete) answer in time.
    Timeout,
    /// The server or the network refused (connection refused, ICMP unreachable, a send error).
    Refused,
    /// The server answered with something that could not be decoded.
    Malformed,
    /// The plugin failed: it panicked, reported invalid data, or broke the ABI; the query was dropped.
    Plugin,
    /// The query cannot be made with these options (unknown protocol, bad parameters).
    Unsupported,
    /// Any other failure.
    Error,
}

impl ErrorKind {
    /// The name used in JSON and tables.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Refused => "refused",
            ErrorKind::Malformed => "malformed",
            ErrorKind::Plugin => "plugin",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Error => "error",
        }
    }

    /// The kind for a plugin's `report_done` status.
    pub fn from_status(s: query_abi::Status) -> ErrorKind {
        match s {
            query_abi::Status::TIMEOUT => ErrorKind::Timeout,
            query_abi::Status::REFUSED => ErrorKind::Refused,
            query_abi::Status::MALFORMED => ErrorKind::Malformed,
            query_abi::Status::UNSUPPORTED | query_abi::Status::UNKNOWN_PROTOCOL => ErrorKind::Unsupported,
            query_abi::Status::PANICKED | query_abi::Status::BAD_INPUT | query_abi::Status::ABI_MISMATCH => {
                ErrorKind::Plugin
            }
            _ => ErrorKind::Error,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed query: the kind and the detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// In words.
    pub detail: String,
}

impl QueryError {
    /// A new error.
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> QueryError {
        QueryError { kind, detail: detail.into() }
    }
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.detail.is_empty() {
            f.write_str(self.kind.name())
        } else {
            write!(f, "{}: {}", self.kind, self.detail)
        }
    }
}

impl std::error::Error for QueryError {}

/// Serialises a `Display` value as a string without building the string first.
struct AsDisplay<'a, T>(&'a T);

impl<T: fmt::Display> Serialize for AsDisplay<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self.0)
    }
}

/// The result of one query, in the shared shape.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult {
    /// Position of the target in the input (masters' entries follow the input).
    pub index: usize,
    /// Protocol name.
    pub protocol: String,
    /// The server queried.
    pub address: SocketAddr,
    /// Round-trip time the host measured: last request sent to first reply accepted.
    pub ping_ms: Option<f64>,
    /// The answer or why there is none.
    pub outcome: Result<Answer, QueryError>,
}

impl QueryResult {
    /// True for an answer.
    pub fn is_ok(&self) -> bool {
        self.outcome.is_ok()
    }

    /// The answer as one line of JSON.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self)
            .unwrap_or_else(|e| format!("{{\"v\":1,\"ok\":false,\"error\":\"error\",\"detail\":\"{e}\"}}"))
    }

    /// The answer as a JSON value.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Serialize for QueryResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.outcome {
            Ok(a) => {
                let mut st = s.serialize_struct("QueryResult", 17)?;
                st.serialize_field("v", &SHAPE_VERSION)?;
                st.serialize_field("protocol", &self.protocol)?;
                st.serialize_field("address", &AsDisplay(&self.address))?;
                st.serialize_field("ok", &true)?;
                st.serialize_field("ping_ms", &self.ping_ms)?;
                st.serialize_field("name", &a.name)?;
                st.serialize_field("map", &a.map)?;
                st.serialize_field("game_type", &a.game_type)?;
                st.serialize_field("players", &a.players)?;
                st.serialize_field("max_players", &a.max_players)?;
                st.serialize_field("bots", &a.bots)?;
                st.serialize_field("password", &a.password)?;
                st.serialize_field("version", &a.version)?;
                st.serialize_field("player_list", &a.player_list)?;
                st.serialize_field("rules", &a.rules)?;
                st.serialize_field("raw", &a.raw)?;
                if let Some(servers) = &a.servers {
                    let list: Vec<AsDisplay<'_, SocketAddr>> = servers.iter().map(AsDisplay).collect();
                    st.serialize_field("servers", &list)?;
                } else {
                    st.skip_field("servers")?;
                }
                st.end()
            }
            Err(e) => {
                let mut st = s.serialize_struct("QueryResult", 6)?;
                st.serialize_field("v", &SHAPE_VERSION)?;
                st.serialize_field("protocol", &self.protocol)?;
                st.serialize_field("address", &AsDisplay(&self.address))?;
                st.serialize_field("ok", &false)?;
                st.serialize_field("error", e.kind.name())?;
                st.serialize_field("detail", &e.detail)?;
                st.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_out_in_the_documented_order() {
        let mut a = Answer { name: Some("n".into()), player_list: Some(vec![]), ..Answer::default() };
        a.rules.set("z", Value::from("1"));
        a.rules.set("a", Value::from("2"));
        let r = QueryResult {
            index: 0,
            protocol: "quake3".into(),
            address: "127.0.0.1:27960".parse().unwrap(),
            ping_ms: Some(1.5),
            outcome: Ok(a),
        };
        let line = r.to_json_line();
        let order = [
            "\"v\"",
            "\"protocol\"",
            "\"address\"",
            "\"ok\"",
            "\"ping_ms\"",
            "\"name\"",
            "\"map\"",
            "\"game_type\"",
            "\"players\"",
            "\"max_players\"",
            "\"bots\"",
            "\"password\"",
            "\"version\"",
            "\"player_list\"",
            "\"rules\"",
            "\"raw\"",
        ];
        let pos: Vec<usize> = order.iter().map(|k| line.find(k).unwrap()).collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "{line}");
        assert!(line.find("\"z\"").unwrap() < line.find("\"a\"").unwrap());
        let e = QueryResult { outcome: Err(QueryError::new(ErrorKind::Timeout, "no reply")), ..r };
        let want = concat!(
            r#"{"v":1,"protocol":"quake3","address":"127.0.0.1:27960","ok":false,"#,
            r#""error":"timeout","detail":"no reply"}"#
        );
        assert_eq!(e.to_json_line(), want);
    }
}
