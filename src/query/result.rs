//! The one result shape every protocol's answer is printed in.
//!
//! An answer: `{"v":1,"protocol","address","ok":true,"ping_ms","name","map","game_type","players","max_players",
//! "bots","password","version","player_list":[{"name","score","team","ping",...}],"rules":{...},"raw":{...}}`
//! (a master's answer adds `"servers":["ADDR:PORT",...]`). A failure: `{"v":1,"protocol","address","ok":false,
//! "error":KIND,"detail":TEXT}` where `KIND` is one of [`ErrorKind`]'s names (`timeout`, `refused`, `malformed`,
//! `plugin`, `unsupported`, `error`). Keys come out in this order.
//!
//! An [`Answer`] keeps all of its text (names, rule keys and values, player names and fields) back to back in one
//! buffer and its fields and players in two small vectors: building one costs a handful of allocations however many
//! rules and players a server reports, and a scan of thousands of servers runs mostly without `malloc`. Read it
//! through its accessors ([`Answer::name`], [`Answer::rules`], [`Answer::player_list`]...).
//! [`QueryResult::write_json`] prints the shape straight from that buffer; it writes exactly what the `Serialize`
//! implementation (through `serde_json`) writes.

use std::fmt;
use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};

use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// Largest player count kept; a larger (or negative) one is printed as unknown (`null`).
pub const MAX_COUNT: i64 = 1_000_000;

/// Result shape version (`"v"`).
pub const SHAPE_VERSION: u32 = 1;

/// Most bytes of text one answer holds (its offsets are 32-bit); the host fails a query that reports more.
pub const MAX_ANSWER_TEXT: usize = u32::MAX as usize;
/// Most players kept for one answer; the host fails a query that reports more.
pub const MAX_PLAYERS: usize = 4096;
/// Most rules (and most raw fields) kept for one answer; the host fails a query that reports more.
pub const MAX_FIELDS: usize = 4096;

/// Player fields that are the entry's own keys; an `extra` field with one of these names is left out.
const RESERVED_PLAYER_KEYS: [&str; 4] = ["name", "score", "team", "ping"];

/// A field's value, borrowed from an [`Answer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldValue<'a> {
    /// JSON `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// Text.
    Str(&'a str),
    /// Any other JSON value (floats, arrays and objects of the built-in BZFlag query).
    Json(&'a Value),
}

impl FieldValue<'_> {
    /// As an owned JSON value.
    pub fn to_json(&self) -> Value {
        match *self {
            FieldValue::Null => Value::Null,
            FieldValue::Bool(b) => Value::Bool(b),
            FieldValue::Int(i) => Value::from(i),
            FieldValue::Str(s) => Value::String(s.to_owned()),
            FieldValue::Json(v) => v.clone(),
        }
    }

    /// The text, when the value is text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            FieldValue::Str(s) => Some(s),
            FieldValue::Json(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// The integer, when the value is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            FieldValue::Int(i) => Some(*i),
            FieldValue::Json(v) => v.as_i64(),
            _ => None,
        }
    }
}

impl<'a> From<&'a Value> for FieldValue<'a> {
    fn from(v: &'a Value) -> Self {
        match v {
            Value::Null => FieldValue::Null,
            Value::Bool(b) => FieldValue::Bool(*b),
            Value::String(s) => FieldValue::Str(s),
            Value::Number(n) if n.is_i64() => n.as_i64().map_or(FieldValue::Json(v), FieldValue::Int),
            v => FieldValue::Json(v),
        }
    }
}

impl fmt::Display for FieldValue<'_> {
    /// Text as it is, `-` for null, anything else as JSON.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldValue::Null => f.write_str("-"),
            FieldValue::Bool(b) => write!(f, "{b}"),
            FieldValue::Int(i) => write!(f, "{i}"),
            FieldValue::Str(s) => f.write_str(s),
            FieldValue::Json(Value::String(s)) => f.write_str(s),
            FieldValue::Json(Value::Null) => f.write_str("-"),
            FieldValue::Json(v) => write!(f, "{v}"),
        }
    }
}

impl Serialize for FieldValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            FieldValue::Null => s.serialize_unit(),
            FieldValue::Bool(b) => s.serialize_bool(b),
            FieldValue::Int(i) => s.serialize_i64(i),
            FieldValue::Str(t) => s.serialize_str(t),
            FieldValue::Json(v) => v.serialize(s),
        }
    }
}

/// A byte range of an answer's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Span {
    start: u32,
    len: u32,
}

/// A value as an answer stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    Null,
    Bool(bool),
    Int(i64),
    Str(Span),
    /// Index into [`Answer::json`].
    Json(u32),
}

/// Which map a field belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rule,
    Raw,
    /// A player's protocol-specific field (players point at their run of these).
    Extra,
}

#[derive(Debug, Clone, Copy)]
struct Field {
    kind: Kind,
    key: Span,
    value: Stored,
}

#[derive(Debug, Clone, Copy)]
struct PlayerSlot {
    name: Span,
    score: Stored,
    team: Stored,
    ping: Stored,
    /// The player's extra fields: `fields[extra_start..extra_start + extra_len]`.
    extra_start: u32,
    extra_len: u32,
}

/// A server's (or master's) answer. See the module documentation for how it is stored.
#[derive(Clone, Default)]
pub struct Answer {
    text: String,
    /// Values that are neither null, booleans, integers nor text (only the built-in BZFlag query has them).
    json: Vec<Value>,
    fields: Vec<Field>,
    players_list: Vec<PlayerSlot>,
    /// False: the player list is unknown (printed as `null`), whatever `players_list` holds.
    list_known: bool,
    rule_count: u32,
    raw_count: u32,
    name: Option<Span>,
    map: Option<Span>,
    game_type: Option<Span>,
    version: Option<Span>,
    players: Option<i64>,
    max_players: Option<i64>,
    bots: Option<i64>,
    password: Option<bool>,
    servers: Option<Vec<SocketAddr>>,
}

/// The text-valued well-known fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextField {
    /// `name`.
    Name,
    /// `map`.
    Map,
    /// `game_type`.
    GameType,
    /// `version`.
    Version,
}

/// The well-known fields an answer stores (`query_abi::keys`, but `player_list_complete`, which is not stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerField {
    /// `name`.
    Name,
    /// `map`.
    Map,
    /// `game_type`.
    GameType,
    /// `players`.
    Players,
    /// `max_players`.
    MaxPlayers,
    /// `bots`.
    Bots,
    /// `password`.
    Password,
    /// `version`.
    Version,
}

impl ServerField {
    /// The field of a well-known key.
    pub fn from_key(key: &str) -> Option<ServerField> {
        use query_abi::keys;
        Some(match key {
            keys::NAME => ServerField::Name,
            keys::MAP => ServerField::Map,
            keys::GAME_TYPE => ServerField::GameType,
            keys::PLAYERS => ServerField::Players,
            keys::MAX_PLAYERS => ServerField::MaxPlayers,
            keys::BOTS => ServerField::Bots,
            keys::PASSWORD => ServerField::Password,
            keys::VERSION => ServerField::Version,
            _ => return None,
        })
    }
}

/// The integer-valued well-known fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountField {
    /// `players`.
    Players,
    /// `max_players`.
    MaxPlayers,
    /// `bots`.
    Bots,
}

impl Answer {
    /// An empty answer with room for `text` bytes, `fields` rules, raw and player fields, and `players` players.
    pub fn with_capacity(text: usize, fields: usize, players: usize) -> Answer {
        Answer {
            text: String::with_capacity(text),
            fields: Vec::with_capacity(fields),
            players_list: Vec::with_capacity(players),
            ..Answer::default()
        }
    }

    /// Makes room for `text` more bytes, `fields` more fields and `players` more players.
    pub fn reserve(&mut self, text: usize, fields: usize, players: usize) {
        self.text.reserve(text);
        self.fields.reserve(fields);
        self.players_list.reserve(players);
    }

    /// Empties the answer, keeping the room of its buffers (to build another one in it).
    pub fn clear(&mut self) {
        let Answer {
            text,
            json,
            fields,
            players_list,
            list_known,
            rule_count,
            raw_count,
            name,
            map,
            game_type,
            version,
            players,
            max_players,
            bots,
            password,
            servers,
        } = self;
        text.clear();
        json.clear();
        fields.clear();
        players_list.clear();
        *list_known = false;
        (*rule_count, *raw_count) = (0, 0);
        (*name, *map, *game_type, *version) = (None, None, None, None);
        (*players, *max_players, *bots, *password) = (None, None, None, None);
        *servers = None;
    }

    /// Bytes of text, fields and players the answer has room for without growing.
    pub fn capacities(&self) -> (usize, usize, usize) {
        (self.text.capacity(), self.fields.capacity(), self.players_list.capacity())
    }

    /// Bytes of text, fields and players held (to size the next answer).
    pub fn sizes(&self) -> (usize, usize, usize) {
        (self.text.len(), self.fields.len(), self.players_list.len())
    }

    fn str_at(&self, s: Span) -> &str {
        // Spans are only made by `push_text`, over whole `&str`s, so they are in range and on char boundaries.
        self.text.get(s.start as usize..(s.start as usize + s.len as usize)).unwrap_or("")
    }

    fn push_text(&mut self, s: &str) -> Span {
        let start = self.text.len();
        if start.saturating_add(s.len()) > MAX_ANSWER_TEXT {
            // The host refuses reports that would get here (`Answer::can_hold`); keep the invariant anyway.
            return Span::default();
        }
        self.text.push_str(s);
        Span { start: start as u32, len: s.len() as u32 }
    }

    /// True when `extra` more bytes of text still fit.
    pub fn can_hold(&self, extra: usize) -> bool {
        self.text.len().saturating_add(extra) <= MAX_ANSWER_TEXT
    }

    fn store(&mut self, v: FieldValue<'_>) -> Stored {
        match v {
            FieldValue::Null => Stored::Null,
            FieldValue::Bool(b) => Stored::Bool(b),
            FieldValue::Int(i) => Stored::Int(i),
            FieldValue::Str(s) => Stored::Str(self.push_text(s)),
            FieldValue::Json(v) => match FieldValue::from(v) {
                FieldValue::Json(v) => {
                    self.json.push(v.clone());
                    Stored::Json(u32::try_from(self.json.len() - 1).unwrap_or(u32::MAX))
                }
                scalar => self.store(scalar),
            },
        }
    }

    fn load(&self, v: Stored) -> FieldValue<'_> {
        match v {
            Stored::Null => FieldValue::Null,
            Stored::Bool(b) => FieldValue::Bool(b),
            Stored::Int(i) => FieldValue::Int(i),
            Stored::Str(s) => FieldValue::Str(self.str_at(s)),
            Stored::Json(i) => self.json.get(i as usize).map_or(FieldValue::Null, FieldValue::Json),
        }
    }

    /// Server name as sent (colour codes kept).
    pub fn name(&self) -> Option<&str> {
        self.name.map(|s| self.str_at(s))
    }

    /// Map.
    pub fn map(&self) -> Option<&str> {
        self.map.map(|s| self.str_at(s))
    }

    /// Game type or mode.
    pub fn game_type(&self) -> Option<&str> {
        self.game_type.map(|s| self.str_at(s))
    }

    /// Version.
    pub fn version(&self) -> Option<&str> {
        self.version.map(|s| self.str_at(s))
    }

    /// Connected clients.
    pub fn players(&self) -> Option<i64> {
        self.players
    }

    /// Slots.
    pub fn max_players(&self) -> Option<i64> {
        self.max_players
    }

    /// Bots among the players, when the protocol tells.
    pub fn bots(&self) -> Option<i64> {
        self.bots
    }

    /// Password required.
    pub fn password(&self) -> Option<bool> {
        self.password
    }

    /// The players; `None` when unknown (a rate-limited reply, a query without players).
    pub fn player_list(&self) -> Option<Players<'_>> {
        self.list_known.then(|| Players { answer: self, slots: self.players_list.iter() })
    }

    /// Players added so far (whether or not the list is known).
    pub fn player_count(&self) -> usize {
        self.players_list.len()
    }

    /// Server rules (cvars, settings), in the order first reported.
    pub fn rules(&self) -> Fields<'_> {
        Fields { answer: self, items: &self.fields, kind: Kind::Rule, count: self.rule_count as usize }
    }

    /// Protocol-specific fields, in the order first reported.
    pub fn raw(&self) -> Fields<'_> {
        Fields { answer: self, items: &self.fields, kind: Kind::Raw, count: self.raw_count as usize }
    }

    /// For a master: the servers it listed.
    pub fn servers(&self) -> Option<&[SocketAddr]> {
        self.servers.as_deref()
    }

    /// Sets a text field.
    pub fn set_text(&mut self, field: TextField, v: Option<&str>) {
        let span = v.map(|s| self.push_text(s));
        match field {
            TextField::Name => self.name = span,
            TextField::Map => self.map = span,
            TextField::GameType => self.game_type = span,
            TextField::Version => self.version = span,
        }
    }

    /// Sets a count. Counts come from the server through the plugin: a negative or absurd one is unknown (`None`),
    /// not an error.
    pub fn set_count(&mut self, field: CountField, v: Option<i64>) {
        let v = v.filter(|i| (0..=MAX_COUNT).contains(i));
        match field {
            CountField::Players => self.players = v,
            CountField::MaxPlayers => self.max_players = v,
            CountField::Bots => self.bots = v,
        }
    }

    /// Sets whether a password is required.
    pub fn set_password(&mut self, v: Option<bool>) {
        self.password = v;
    }

    /// Sets a well-known field (`query_abi::keys`) from a value whose kind the host checked; other keys and kinds
    /// are ignored.
    pub fn set_server_field(&mut self, key: &str, v: FieldValue<'_>) {
        if let Some(f) = ServerField::from_key(key) {
            self.set_server(f, v);
        }
    }

    /// [`Answer::set_server_field`] with the key already looked up.
    pub fn set_server(&mut self, field: ServerField, v: FieldValue<'_>) {
        let text = || v.as_str();
        let int = || v.as_i64();
        match field {
            ServerField::Name => self.set_text(TextField::Name, text()),
            ServerField::Map => self.set_text(TextField::Map, text()),
            ServerField::GameType => self.set_text(TextField::GameType, text()),
            ServerField::Version => self.set_text(TextField::Version, text()),
            ServerField::Players => self.set_count(CountField::Players, int()),
            ServerField::MaxPlayers => self.set_count(CountField::MaxPlayers, int()),
            ServerField::Bots => self.set_count(CountField::Bots, int()),
            ServerField::Password => self.password = if let FieldValue::Bool(b) = v { Some(b) } else { None },
        }
    }

    fn find(&self, kind: Kind, key: &str) -> Option<usize> {
        let k = key.as_bytes();
        self.fields
            .iter()
            .position(|f| f.kind == kind && f.key.len as usize == k.len() && self.str_at(f.key).as_bytes() == k)
    }

    fn set_field(&mut self, kind: Kind, key: &str, v: FieldValue<'_>) {
        match self.find(kind, key) {
            // A key set twice keeps its first position and takes its last value (the old value's text stays in the
            // buffer, unused).
            Some(i) => {
                let value = self.store(v);
                if let Some(f) = self.fields.get_mut(i) {
                    f.value = value;
                }
            }
            None => {
                let key = self.push_text(key);
                let value = self.store(v);
                self.fields.push(Field { kind, key, value });
                match kind {
                    Kind::Rule => self.rule_count += 1,
                    Kind::Raw => self.raw_count += 1,
                    Kind::Extra => {}
                }
            }
        }
    }

    /// Sets a rule (replacing the value of an earlier one with the same key, in its place).
    pub fn set_rule(&mut self, key: &str, v: FieldValue<'_>) {
        self.set_field(Kind::Rule, key, v);
    }

    /// Sets a raw field (replacing the value of an earlier one with the same key, in its place).
    pub fn set_raw(&mut self, key: &str, v: FieldValue<'_>) {
        self.set_field(Kind::Raw, key, v);
    }

    /// Adds a player to the list. Extra fields named like the entry's own keys (`name`, `score`, `team`, `ping`)
    /// are left out; the others are kept in order.
    pub fn push_player<'v>(
        &mut self,
        name: &str,
        score: FieldValue<'_>,
        team: FieldValue<'_>,
        ping: FieldValue<'_>,
        extra: impl IntoIterator<Item = (&'v str, FieldValue<'v>)>,
    ) {
        let name = self.push_text(name);
        let (score, team, ping) = (self.store(score), self.store(team), self.store(ping));
        let extra_start = self.fields.len();
        for (k, v) in extra {
            if RESERVED_PLAYER_KEYS.contains(&k) {
                continue;
            }
            let key = self.push_text(k);
            let value = self.store(v);
            self.fields.push(Field { kind: Kind::Extra, key, value });
        }
        let extra_len = self.fields.len() - extra_start;
        self.players_list.push(PlayerSlot {
            name,
            score,
            team,
            ping,
            extra_start: u32::try_from(extra_start).unwrap_or(u32::MAX),
            extra_len: u32::try_from(extra_len).unwrap_or(0),
        });
    }

    /// Whether the player list is known: when it is not, it is printed as `null` whatever was added.
    pub fn set_player_list_known(&mut self, known: bool) {
        self.list_known = known;
    }

    /// Sets the servers a master listed.
    pub fn set_servers(&mut self, servers: Option<Vec<SocketAddr>>) {
        self.servers = servers;
    }

    /// Reads an answer that is already in the shared shape (the built-in BZFlag query renders itself so).
    pub fn from_shape(v: &Value) -> Answer {
        let mut a = Answer::default();
        let text = |k: &str| v.get(k).and_then(Value::as_str);
        a.set_text(TextField::Name, text("name"));
        a.set_text(TextField::Map, text("map"));
        a.set_text(TextField::GameType, text("game_type"));
        a.set_text(TextField::Version, text("version"));
        // The shape's own counts are taken as they are (the built-in query makes them).
        a.players = v.get("players").and_then(Value::as_i64);
        a.max_players = v.get("max_players").and_then(Value::as_i64);
        a.bots = v.get("bots").and_then(Value::as_i64);
        a.password = v.get("password").and_then(Value::as_bool);
        if let Some(list) = v.get("player_list").and_then(Value::as_array) {
            a.list_known = true;
            for p in list {
                let get = |k: &str| p.get(k).map_or(FieldValue::Null, FieldValue::from);
                let extra = p
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| !RESERVED_PLAYER_KEYS.contains(&k.as_str()))
                    .map(|(k, v)| (k.as_str(), FieldValue::from(v)));
                let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
                a.push_player(name, get("score"), get("team"), get("ping"), extra);
            }
        }
        for (key, kind) in [("rules", Kind::Rule), ("raw", Kind::Raw)] {
            for (k, val) in v.get(key).and_then(Value::as_object).into_iter().flatten() {
                a.set_field(kind, k, FieldValue::from(val));
            }
        }
        a
    }
}

impl PartialEq for Answer {
    fn eq(&self, o: &Answer) -> bool {
        self.name() == o.name()
            && self.map() == o.map()
            && self.game_type() == o.game_type()
            && self.version() == o.version()
            && (self.players, self.max_players, self.bots, self.password)
                == (o.players, o.max_players, o.bots, o.password)
            && match (self.player_list(), o.player_list()) {
                (Some(a), Some(b)) => a.eq(b),
                (None, None) => true,
                _ => false,
            }
            && self.rules() == o.rules()
            && self.raw() == o.raw()
            && self.servers == o.servers
    }
}

impl fmt::Debug for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Answer")
            .field("name", &self.name())
            .field("map", &self.map())
            .field("game_type", &self.game_type())
            .field("players", &self.players)
            .field("max_players", &self.max_players)
            .field("bots", &self.bots)
            .field("password", &self.password)
            .field("version", &self.version())
            .field("player_list", &self.player_list().map(Iterator::collect::<Vec<_>>))
            .field("rules", &self.rules())
            .field("raw", &self.raw())
            .field("servers", &self.servers)
            .finish()
    }
}

/// Key/value pairs of an answer (its rules, its raw fields or one player's extra fields), in order.
#[derive(Clone, Copy)]
pub struct Fields<'a> {
    answer: &'a Answer,
    items: &'a [Field],
    kind: Kind,
    count: usize,
}

impl<'a> Fields<'a> {
    /// The pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, FieldValue<'a>)> + 'a {
        let (answer, kind) = (self.answer, self.kind);
        self.items.iter().filter(move |f| f.kind == kind).map(move |f| (answer.str_at(f.key), answer.load(f.value)))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<FieldValue<'a>> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

impl PartialEq for Fields<'_> {
    fn eq(&self, o: &Fields<'_>) -> bool {
        self.count == o.count && self.iter().eq(o.iter())
    }
}

impl fmt::Debug for Fields<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.count))?;
        for (k, v) in self.iter() {
            m.serialize_entry(k, &v)?;
        }
        m.end()
    }
}

/// One entry of an answer's player list.
#[derive(Clone, Copy)]
pub struct Player<'a> {
    /// Name as sent.
    pub name: &'a str,
    /// Score (null when the protocol has none).
    pub score: FieldValue<'a>,
    /// Team (null when the protocol has none).
    pub team: FieldValue<'a>,
    /// Ping in ms as the server reports it (null when it does not).
    pub ping: FieldValue<'a>,
    /// Protocol-specific fields, flattened into the entry.
    pub extra: Fields<'a>,
}

impl PartialEq for Player<'_> {
    fn eq(&self, o: &Player<'_>) -> bool {
        (self.name, self.score, self.team, self.ping) == (o.name, o.score, o.team, o.ping) && self.extra == o.extra
    }
}

impl fmt::Debug for Player<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Player")
            .field("name", &self.name)
            .field("score", &self.score)
            .field("team", &self.team)
            .field("ping", &self.ping)
            .field("extra", &self.extra)
            .finish()
    }
}

impl Serialize for Player<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4 + self.extra.len()))?;
        m.serialize_entry("name", self.name)?;
        m.serialize_entry("score", &self.score)?;
        m.serialize_entry("team", &self.team)?;
        m.serialize_entry("ping", &self.ping)?;
        for (k, v) in self.extra.iter() {
            m.serialize_entry(k, &v)?;
        }
        m.end()
    }
}

/// The players of an answer, in order.
#[derive(Clone)]
pub struct Players<'a> {
    answer: &'a Answer,
    slots: std::slice::Iter<'a, PlayerSlot>,
}

impl<'a> Iterator for Players<'a> {
    type Item = Player<'a>;

    fn next(&mut self) -> Option<Player<'a>> {
        let p = self.slots.next()?;
        let a = self.answer;
        let start = p.extra_start as usize;
        let items = a.fields.get(start..start + p.extra_len as usize).unwrap_or(&[]);
        Some(Player {
            name: a.str_at(p.name),
            score: a.load(p.score),
            team: a.load(p.team),
            ping: a.load(p.ping),
            extra: Fields { answer: a, items, kind: Kind::Extra, count: items.len() },
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

impl ExactSizeIterator for Players<'_> {}

/// Serialises a player list (`Players` is an iterator, consumed by serialising it).
struct PlayerSeq<'a>(Players<'a>);

impl Serialize for PlayerSeq<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for p in self.0.clone() {
            seq.serialize_element(&p)?;
        }
        seq.end()
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
        let mut out = Vec::new();
        self.write_json(&mut out);
        String::from_utf8(out)
            .unwrap_or_else(|e| format!("{{\"v\":1,\"ok\":false,\"error\":\"error\",\"detail\":\"{e}\"}}"))
    }

    /// The answer as a JSON value.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Appends the answer as one line of JSON (no newline) to `out`: the bytes `serde_json` writes for this
    /// result's `Serialize`, without its per-field machinery.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"v\":");
        write_int(out, i64::from(SHAPE_VERSION));
        out.extend_from_slice(b",\"protocol\":");
        write_str(out, &self.protocol);
        out.extend_from_slice(b",\"address\":\"");
        write_addr(out, &self.address);
        match &self.outcome {
            Ok(a) => {
                // Every string below but the JSON values' comes from the answer's text buffer: when nothing in it
                // needs escaping (nearly always), the strings are copied as they are, without a look at each.
                let clean = (!needs_escape(a.text.as_bytes())).then_some(a.text.as_str());
                out.reserve(a.text.len() + 24 * a.fields.len() + 64 * a.players_list.len() + 256);
                out.extend_from_slice(b"\",\"ok\":true,\"ping_ms\":");
                match self.ping_ms {
                    // `serde_json` writes non-finite floats as null and the rest in its shortest form.
                    Some(p) => {
                        let _ = serde_json::to_writer(&mut *out, &p);
                    }
                    None => out.extend_from_slice(b"null"),
                }
                out.extend_from_slice(b",\"name\":");
                write_opt_text(out, clean, a.name());
                out.extend_from_slice(b",\"map\":");
                write_opt_text(out, clean, a.map());
                out.extend_from_slice(b",\"game_type\":");
                write_opt_text(out, clean, a.game_type());
                out.extend_from_slice(b",\"players\":");
                write_opt_int(out, a.players);
                out.extend_from_slice(b",\"max_players\":");
                write_opt_int(out, a.max_players);
                out.extend_from_slice(b",\"bots\":");
                write_opt_int(out, a.bots);
                out.extend_from_slice(b",\"password\":");
                out.extend_from_slice(match a.password {
                    None => b"null",
                    Some(true) => b"true",
                    Some(false) => b"false",
                });
                out.extend_from_slice(b",\"version\":");
                write_opt_text(out, clean, a.version());
                out.extend_from_slice(b",\"player_list\":");
                match a.player_list() {
                    None => out.extend_from_slice(b"null"),
                    Some(players) => {
                        out.push(b'[');
                        for (i, p) in players.enumerate() {
                            if i > 0 {
                                out.push(b',');
                            }
                            out.extend_from_slice(b"{\"name\":");
                            write_text(out, clean, p.name);
                            out.extend_from_slice(b",\"score\":");
                            write_text_value(out, clean, p.score);
                            out.extend_from_slice(b",\"team\":");
                            write_text_value(out, clean, p.team);
                            out.extend_from_slice(b",\"ping\":");
                            write_text_value(out, clean, p.ping);
                            for (k, v) in p.extra.iter() {
                                out.push(b',');
                                write_text(out, clean, k);
                                out.push(b':');
                                write_text_value(out, clean, v);
                            }
                            out.push(b'}');
                        }
                        out.push(b']');
                    }
                }
                out.extend_from_slice(b",\"rules\":");
                write_fields(out, clean, a.rules());
                out.extend_from_slice(b",\"raw\":");
                write_fields(out, clean, a.raw());
                if let Some(servers) = a.servers() {
                    out.extend_from_slice(b",\"servers\":[");
                    for (i, s) in servers.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        out.push(b'"');
                        write_addr(out, s);
                        out.push(b'"');
                    }
                    out.push(b']');
                }
                out.push(b'}');
            }
            Err(e) => {
                out.extend_from_slice(b"\",\"ok\":false,\"error\":");
                write_str(out, e.kind.name());
                out.extend_from_slice(b",\"detail\":");
                write_str(out, &e.detail);
                out.push(b'}');
            }
        }
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
                st.serialize_field("name", &a.name())?;
                st.serialize_field("map", &a.map())?;
                st.serialize_field("game_type", &a.game_type())?;
                st.serialize_field("players", &a.players)?;
                st.serialize_field("max_players", &a.max_players)?;
                st.serialize_field("bots", &a.bots)?;
                st.serialize_field("password", &a.password)?;
                st.serialize_field("version", &a.version())?;
                st.serialize_field("player_list", &a.player_list().map(PlayerSeq))?;
                st.serialize_field("rules", &a.rules())?;
                st.serialize_field("raw", &a.raw())?;
                if let Some(servers) = a.servers() {
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

// ------------------------------------------------------------------------------------------------ JSON writing

/// What `serde_json` writes after a backslash for each byte (0: the byte is written as it is; `u`: `\u00XX`).
const ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// True when one of the 8 bytes of `w` is below 0x20, a quote or a backslash (exact: no byte is missed).
fn word_needs_escape(w: u64) -> bool {
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    (below_space | zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\')))) != 0
}

/// True when some byte of `b` must be escaped in a JSON string (8 bytes at a time).
fn needs_escape(b: &[u8]) -> bool {
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(w);
        if word_needs_escape(u64::from_le_bytes(bytes)) {
            return true;
        }
    }
    words.remainder().iter().any(|&c| ESCAPE[usize::from(c)] != 0)
}

/// A JSON string, escaped as `serde_json` escapes it; text without anything to escape (nearly all of it) is copied
/// in one piece.
fn write_str(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    if needs_escape(b) {
        let mut start = 0;
        for (i, &c) in b.iter().enumerate() {
            let esc = ESCAPE[usize::from(c)];
            if esc == 0 {
                continue;
            }
            out.extend_from_slice(&b[start..i]);
            if esc == b'u' {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(c >> 4)]);
                out.push(HEX[usize::from(c & 0xf)]);
            } else {
                out.push(b'\\');
                out.push(esc);
            }
            start = i + 1;
        }
        out.extend_from_slice(&b[start..]);
    } else {
        out.extend_from_slice(b);
    }
    out.push(b'"');
}

/// A string of an answer: `clean` is the answer's whole text buffer when nothing in it needs escaping (see
/// [`QueryResult::write_json`]), `None` when something might; clean text is copied as it is.
fn write_text(out: &mut Vec<u8>, clean: Option<&str>, s: &str) {
    match clean {
        Some(_) => {
            out.push(b'"');
            out.extend_from_slice(s.as_bytes());
            out.push(b'"');
        }
        None => write_str(out, s),
    }
}

fn write_opt_text(out: &mut Vec<u8>, clean: Option<&str>, s: Option<&str>) {
    match s {
        Some(s) => write_text(out, clean, s),
        None => out.extend_from_slice(b"null"),
    }
}

fn write_uint(out: &mut Vec<u8>, mut n: u64) {
    if n < 10 {
        out.push(b'0' + n as u8);
        return;
    }
    if n < 100 {
        out.extend_from_slice(&[b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]);
        return;
    }
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn write_int(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    write_uint(out, n.unsigned_abs());
}

fn write_opt_int(out: &mut Vec<u8>, n: Option<i64>) {
    match n {
        Some(n) => write_int(out, n),
        None => out.extend_from_slice(b"null"),
    }
}

/// [`write_value`] of a value of an answer (text from its buffer, see [`write_text`]).
fn write_text_value(out: &mut Vec<u8>, clean: Option<&str>, v: FieldValue<'_>) {
    match v {
        FieldValue::Str(s) => write_text(out, clean, s),
        v => write_value(out, v),
    }
}

fn write_value(out: &mut Vec<u8>, v: FieldValue<'_>) {
    match v {
        FieldValue::Null => out.extend_from_slice(b"null"),
        FieldValue::Bool(true) => out.extend_from_slice(b"true"),
        FieldValue::Bool(false) => out.extend_from_slice(b"false"),
        FieldValue::Int(i) => write_int(out, i),
        FieldValue::Str(s) => write_str(out, s),
        FieldValue::Json(v) => {
            let _ = serde_json::to_writer(&mut *out, v);
        }
    }
}

fn write_fields(out: &mut Vec<u8>, clean: Option<&str>, f: Fields<'_>) {
    out.push(b'{');
    for (i, (k, v)) in f.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_text(out, clean, k);
        out.push(b':');
        write_text_value(out, clean, v);
    }
    out.push(b'}');
}

/// The address as `Display` writes it (no character of it needs escaping); IPv4 without the formatting machinery.
fn write_addr(out: &mut Vec<u8>, a: &SocketAddr) {
    match a.ip() {
        IpAddr::V4(ip) => {
            for (i, o) in ip.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                write_uint(out, u64::from(o));
            }
            out.push(b':');
            write_uint(out, u64::from(a.port()));
        }
        IpAddr::V6(_) => {
            let _ = write!(out, "{a}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(outcome: Result<Answer, QueryError>) -> QueryResult {
        QueryResult {
            index: 0,
            protocol: "quake3".into(),
            address: "127.0.0.1:27960".parse().unwrap(),
            ping_ms: Some(1.5),
            outcome,
        }
    }

    #[test]
    fn keys_come_out_in_the_documented_order() {
        let mut a = Answer::default();
        a.set_text(TextField::Name, Some("n"));
        a.set_player_list_known(true);
        a.set_rule("z", FieldValue::Str("1"));
        a.set_rule("a", FieldValue::Str("2"));
        let r = result(Ok(a));
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

    /// Every string the writer may meet: escapes, control bytes at every offset of a word, multi-byte text.
    const NASTY: [&str; 8] = [
        "",
        "plain ascii text, longer than a word",
        "q\"uo\\te",
        "\u{0}\u{1}\u{8}\u{9}\u{a}\u{b}\u{c}\u{d}\u{1f}\u{7f} end",
        "ünïcødé ^1colours ^^ 名前 🙂",
        "1234567\"",
        "12345678\\abcdefgh\n",
        "\u{1f}\u{1f}\u{1f}\u{1f}\u{1f}\u{1f}\u{1f}\u{1f}\u{1f}x",
    ];

    #[test]
    fn the_writer_matches_serde_json_byte_for_byte() {
        let mut a = Answer::with_capacity(8, 1, 1);
        for (i, s) in NASTY.iter().enumerate() {
            a.set_rule(&format!("{s}{i}"), FieldValue::Str(s));
            a.set_raw(s, FieldValue::Int(-(i as i64)));
        }
        a.set_raw("min", FieldValue::Int(i64::MIN));
        a.set_raw("max", FieldValue::Int(i64::MAX));
        a.set_raw("float", FieldValue::Json(&Value::from(0.1)));
        a.set_raw("nested", FieldValue::Json(&serde_json::json!({"a": [1, "\u{1}", null], "b": 2.5})));
        a.set_raw("flag", FieldValue::Bool(true));
        a.set_raw("none", FieldValue::Null);
        a.set_text(TextField::Name, Some(NASTY[3]));
        a.set_text(TextField::Version, Some(NASTY[4]));
        a.set_count(CountField::Players, Some(7));
        a.set_count(CountField::Bots, Some(-1));
        a.set_password(Some(false));
        a.set_player_list_known(true);
        for s in NASTY {
            a.push_player(s, FieldValue::Int(3), FieldValue::Null, FieldValue::Str(s), [("clan", FieldValue::Str(s))]);
        }
        a.push_player("x", FieldValue::Null, FieldValue::Null, FieldValue::Null, [("ping", FieldValue::Int(1))]);
        let mut r = result(Ok(a.clone()));
        for (ping, addr) in [
            (Some(0.0), "0.0.0.0:0"),
            (Some(123.4), "255.255.255.255:65535"),
            (None, "[::1]:27960"),
            (Some(f64::NAN), "[fe80::1%3]:1"),
        ] {
            r.ping_ms = ping;
            r.address = addr.parse().unwrap();
            let mut mine = Vec::new();
            r.write_json(&mut mine);
            assert_eq!(String::from_utf8(mine).unwrap(), serde_json::to_string(&r).unwrap());
        }
        // Text without anything to escape is copied without a look at each string.
        let mut plain = Answer::with_capacity(0, 0, 0);
        plain.set_text(TextField::Name, Some("a"));
        plain.set_player_list_known(true);
        for n in 0..40 {
            let s: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            plain.set_rule(&format!("k{n}"), FieldValue::Str(&s));
            plain.push_player(
                &s,
                FieldValue::Int(n),
                FieldValue::Null,
                FieldValue::Int(999),
                [("x", FieldValue::Str(&s))],
            );
        }
        plain.set_raw("last", FieldValue::Str("tail end"));
        plain.set_text(TextField::Version, Some("v"));
        let mut r = result(Ok(plain));
        let mut mine = Vec::new();
        r.write_json(&mut mine);
        assert_eq!(String::from_utf8(mine).unwrap(), serde_json::to_string(&r).unwrap());
        r.ping_ms = Some(12.5);
        assert_eq!(r.to_json_line(), serde_json::to_string(&r).unwrap());
        let mut master = Answer::default();
        master.set_servers(Some(vec!["1.2.3.4:5".parse().unwrap(), "[2001:db8::1]:27950".parse().unwrap()]));
        let mut r = result(Ok(master));
        let mut mine = Vec::new();
        r.write_json(&mut mine);
        assert_eq!(String::from_utf8(mine).unwrap(), serde_json::to_string(&r).unwrap());
        r.outcome = Err(QueryError::new(ErrorKind::Plugin, NASTY[3]));
        assert_eq!(r.to_json_line(), serde_json::to_string(&r).unwrap());
    }

    #[test]
    fn keys_set_twice_keep_their_place_and_take_the_last_value() {
        let mut a = Answer::default();
        a.set_rule("a", FieldValue::Str("1"));
        a.set_rule("b", FieldValue::Str("2"));
        a.set_raw("a", FieldValue::Int(1));
        a.set_rule("a", FieldValue::Str("3"));
        let rules: Vec<_> = a.rules().iter().collect();
        assert_eq!(rules, [("a", FieldValue::Str("3")), ("b", FieldValue::Str("2"))]);
        assert_eq!(a.rules().len(), 2);
        assert_eq!(a.raw().get("a"), Some(FieldValue::Int(1)));
        // Counts out of range are unknown.
        a.set_server_field(query_abi::keys::PLAYERS, FieldValue::Int(MAX_COUNT + 1));
        assert_eq!(a.players(), None);
        a.set_server_field(query_abi::keys::PLAYERS, FieldValue::Int(3));
        assert_eq!(a.players(), Some(3));
        // An unknown list stays unknown whatever was added.
        a.push_player("p", FieldValue::Null, FieldValue::Null, FieldValue::Null, []);
        assert!(a.player_list().is_none());
        a.set_player_list_known(true);
        assert_eq!(a.player_list().unwrap().map(|p| p.name).collect::<Vec<_>>(), ["p"]);
    }

    #[test]
    fn the_shape_reads_back_into_an_equal_answer() {
        let mut a = Answer::default();
        a.set_text(TextField::Name, Some("srv"));
        a.set_count(CountField::MaxPlayers, Some(8));
        a.set_player_list_known(true);
        a.push_player(
            "p",
            FieldValue::Int(1),
            FieldValue::Str("red"),
            FieldValue::Null,
            [("motto", FieldValue::Str("m"))],
        );
        a.set_rule("options", FieldValue::Json(&serde_json::json!(["jumping"])));
        a.set_raw("k", FieldValue::Bool(false));
        let v = result(Ok(a.clone())).to_json();
        assert_eq!(Answer::from_shape(&v), a);
        assert_ne!(Answer::default(), a);
    }
}
