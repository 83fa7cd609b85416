//! The monitor's TOML configuration (`bzhead monitor --config FILE`). Every key is optional; command-line options
//! add to the sources and override the scalars. See `docs/monitor.md` for an example.
//!
//! ```toml
//! db = "monitor.db"            # SQLite file
//! http = "127.0.0.1:8080"      # API address
//! interval = 60                # seconds between rounds
//! down_after = 2               # failed rounds before server_down
//! samples_days = 7             # raw samples kept
//! hourly_days = 365            # hourly aggregates kept
//! events_days = 90             # events and sightings kept
//! rate = 1000                  # datagrams per second at most
//! timeout_ms = 1000            # first wait for an answer
//! retries = 2
//! allow_private = false        # master entries with special-use addresses are dropped
//! max_ports_per_host = 4       # per host, from a master's list
//! forget_after = 604800        # seconds unseen before a server is forgotten (7 days)
//! write_queue_bytes = 33554432 # rounds waiting for the database, at most (32 MiB)
//!
//! [[server]]
//! protocol = "bzflag"
//! address = "127.0.0.1:5154"
//! verify_join = true           # join as an observer now and then
//! verify_every = 3600          # seconds
//!
//! [[list]]
//! protocol = "quake3"
//! file = "servers.txt"
//!
//! [[master]]
//! protocol = "dpmaster"        # a UDP master plugin protocol (dpmaster, teeworlds-master)
//! address = "127.0.0.1:27950"
//! servers = "quake3"           # the protocol its entries are queried with
//! game = "Quake3Arena"
//! game_protocol = 68
//!
//! [[master]]
//! protocol = "bzflag-list"     # or ddnet-http: lists fetched over HTTP(S)
//! url = "https://my.bzflag.org/db/"
//!
//! [dpmaster]                   # serve a dpmaster-compatible master (docs/master.md)
//! listen = ["0.0.0.0:27950", "[::]:27950"]
//! max_servers = 4096           # dpmaster -n
//! max_per_address = 32         # dpmaster -N
//! flood_throttle = 5           # dpmaster -f --fp-throttle (0: off)
//! lease = 900                  # seconds a valid infoResponse lists a server
//! game_policy = "accept"       # dpmaster --game-policy: accept or reject these games
//! games = ["Quake3Arena", "Xonotic"]
//! game_properties = { Quake3Arena = ["protocols+=71"] }  # dpmaster -g
//! ```

use serde::Deserialize;

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Database file.
    pub db: Option<String>,
    /// HTTP address.
    pub http: Option<String>,
    /// Seconds between rounds.
    pub interval: Option<f64>,
    /// Failed rounds before a server is down.
    pub down_after: Option<u32>,
    /// Days of raw samples.
    pub samples_days: Option<u32>,
    /// Days of hourly aggregates.
    pub hourly_days: Option<u32>,
    /// Days of events and sightings.
    pub events_days: Option<u32>,
    /// Datagrams per second.
    pub rate: Option<u32>,
    /// Milliseconds to wait for a first answer.
    pub timeout_ms: Option<u64>,
    /// Re-sends.
    pub retries: Option<u32>,
    /// Take master entries with special-use addresses (loopback, private, ...) too (a LAN's own master).
    pub allow_private: Option<bool>,
    /// Most ports taken per host from a master's list.
    pub max_ports_per_host: Option<u32>,
    /// Seconds a server may go unseen (not listed, not queried) before it is forgotten everywhere.
    pub forget_after: Option<f64>,
    /// Most bytes of rounds waiting while the database cannot be written (older rounds are dropped past it).
    pub write_queue_bytes: Option<u64>,
    /// Single servers.
    #[serde(default)]
    pub server: Vec<ServerSource>,
    /// List files.
    #[serde(default)]
    pub list: Vec<ListSource>,
    /// Masters.
    #[serde(default)]
    pub master: Vec<MasterSource>,
    /// The dpmaster-compatible master served.
    pub dpmaster: Option<DpmasterConfig>,
}

/// `[dpmaster]`: the dpmaster-compatible master the monitor serves (`--dpmaster` and its options add to it).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DpmasterConfig {
    /// UDP addresses to listen on.
    #[serde(default)]
    pub listen: Vec<String>,
    /// Most servers (dpmaster `-n`).
    pub max_servers: Option<u32>,
    /// Most servers per IP address (dpmaster `-N`).
    pub max_per_address: Option<u32>,
    /// List requests per address before the flood throttle (dpmaster `--fp-throttle`; 0: off).
    pub flood_throttle: Option<u32>,
    /// Seconds a valid infoResponse lists a server.
    pub lease: Option<f64>,
    /// `accept` or `reject` the `games` (dpmaster `--game-policy`).
    pub game_policy: Option<String>,
    /// The games of the policy.
    #[serde(default)]
    pub games: Vec<String>,
    /// Game properties: per game, changes as dpmaster's `-g` takes them (`protocols+=71`, `heartbeat=NAME`...).
    #[serde(default)]
    pub game_properties: std::collections::BTreeMap<String, Vec<String>>,
}

/// `[[server]]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerSource {
    /// Protocol.
    pub protocol: String,
    /// `HOST[:PORT]`.
    pub address: String,
    /// BZFlag only: join as an observer now and then.
    #[serde(default)]
    pub verify_join: bool,
    /// Seconds between joins (default 3600).
    pub verify_every: Option<f64>,
    /// Protocol parameters.
    #[serde(default)]
    pub params: std::collections::BTreeMap<String, String>,
}

/// `[[list]]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ListSource {
    /// Protocol of the servers.
    pub protocol: String,
    /// File with one `ADDR[:PORT]` per line.
    pub file: String,
}

/// `[[master]]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MasterSource {
    /// Master protocol (`dpmaster`, or a built-in master format).
    pub protocol: String,
    /// `HOST[:PORT]` of a UDP master.
    pub address: Option<String>,
    /// URL of an HTTP master (or a local file path).
    pub url: Option<String>,
    /// Protocol the listed servers are queried with (UDP masters; an HTTP list says it per entry).
    pub servers: Option<String>,
    /// dpmaster: game name.
    pub game: Option<String>,
    /// dpmaster: game protocol number.
    pub game_protocol: Option<u32>,
    /// dpmaster: filters.
    pub filters: Option<String>,
}

/// Parses a configuration file's text and checks every number in it ([`Config::check`]).
pub fn parse(text: &str) -> Result<Config, String> {
    let c: Config = toml::from_str(text).map_err(|e| e.to_string())?;
    c.check()?;
    Ok(c)
}

/// Checks one float of the configuration: finite and within `min..=max`.
fn check_float(key: &str, v: Option<f64>, min: f64, max: f64) -> Result<(), String> {
    match v {
        Some(x) if !(x.is_finite() && (min..=max).contains(&x)) => {
            Err(format!("{key} = {x}: expected a number of seconds from {min} to {max}"))
        }
        _ => Ok(()),
    }
}

/// The range of `interval` (seconds), as `--interval` takes it.
pub const INTERVAL_RANGE: (f64, f64) = (0.05, 86_400.0);
/// The range of `verify_every` (seconds).
pub const VERIFY_EVERY_RANGE: (f64, f64) = (1.0, 86_400.0 * 365.0);
/// The range of `dpmaster.lease` (seconds), as `--dpmaster-lease` takes it.
pub const DPMASTER_LEASE_RANGE: (f64, f64) = (1.0, 86_400.0);
/// The range of `forget_after` (seconds).
pub const FORGET_AFTER_RANGE: (f64, f64) = (1.0, 86_400.0 * 3650.0);

impl Config {
    /// Every float of the file finite and in its range (NaN, infinities and negative times are errors, not
    /// panics later).
    pub fn check(&self) -> Result<(), String> {
        check_float("interval", self.interval, INTERVAL_RANGE.0, INTERVAL_RANGE.1)?;
        check_float("forget_after", self.forget_after, FORGET_AFTER_RANGE.0, FORGET_AFTER_RANGE.1)?;
        if let Some(d) = &self.dpmaster {
            check_float("dpmaster.lease", d.lease, DPMASTER_LEASE_RANGE.0, DPMASTER_LEASE_RANGE.1)?;
        }
        for s in &self.server {
            check_float(
                &format!("server {}: verify_every", s.address),
                s.verify_every,
                VERIFY_EVERY_RANGE.0,
                VERIFY_EVERY_RANGE.1,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("config.rs");
        let example: String = doc
            .lines()
            .skip_while(|l| !l.starts_with("//! ```toml"))
            .skip(1)
            .take_while(|l| !l.starts_with("//! ```"))
            .map(|l| l.strip_prefix("//!").unwrap_or(l).strip_prefix(' ').unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let c = parse(&example).unwrap();
        assert_eq!(c.interval, Some(60.0));
        assert!(c.server[0].verify_join);
        assert_eq!(c.master[0].game_protocol, Some(68));
        assert_eq!(c.dpmaster.as_ref().map(|d| d.listen.len()), Some(2));
        assert!(parse("bogus = 1").is_err());
    }

    #[test]
    fn every_float_is_checked() {
        for bad in ["nan", "inf", "-inf", "-1.0", "0.0"] {
            let text = format!("[[server]]\nprotocol = \"bzflag\"\naddress = \"x\"\nverify_every = {bad}\n");
            let e = parse(&text).unwrap_err();
            assert!(e.contains("verify_every"), "{e}");
            assert!(parse(&format!("interval = {bad}")).unwrap_err().contains("interval"));
            assert!(parse(&format!("forget_after = {bad}")).unwrap_err().contains("forget_after"));
        }
        assert!(parse("interval = 0.5\nforget_after = 3600").is_ok());
    }
}
