//! The one front door of a scan, shared by `bzhead query`, `bzhead scan`, `bzhead monitor` and Python's
//! `bzhead.query` / `bzhead.scan`: protocol names to their default ports ([`default_port`], with a typed error that
//! lists the known protocols), server and master targets ([`server_target`], [`master_target`], [`listed_targets`]),
//! the scan's configuration ([`ScanConfig::front`]: tokens and challenges always fresh from the operating system,
//! one burst rule) and the driver ([`start`], [`drain`], [`run`]) that runs a scan on a [`ScanHost`] (the reactor).
//!
//! Duplicates: a scan queries each (protocol, address) once ([`Scan::add_target`]); the same server given twice
//! (also as two spellings of one address, `127.0.0.1:27960` and `localhost:27960`) gives one result, at the place
//! of its first appearance.

use std::collections::HashSet;
use std::fmt;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::filter::{EntryFilter, MasterPolicy};
use super::loader::{PluginSet, ProtocolKind};
use super::result::QueryResult;
use super::scan::{Scan, ScanConfig, ScanEvent, ScanStats, Target};
use super::targets::{resolve, AddrError};
use super::{BZFLAG, BZFLAG_PORT};

/// A protocol name that neither the built-in protocols nor a loaded plugin know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProtocol {
    /// The name asked for.
    pub protocol: String,
    /// Every known protocol: `bzflag`, then the plugins' in load order.
    pub known: Vec<String>,
    /// The plugins that failed to load (one line each), which may have been meant to serve it.
    pub not_loaded: Vec<String>,
}

impl fmt::Display for UnknownProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown protocol {:?}; known: {}", self.protocol, self.known.join(", "))?;
        for e in &self.not_loaded {
            write!(f, "\n  not loaded: {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownProtocol {}

/// Why a scan's targets could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontError {
    /// A protocol nobody knows.
    UnknownProtocol(UnknownProtocol),
    /// A master protocol where a server's was expected (its entries are asked with `expand`, see [`master_target`]).
    IsMaster(String),
    /// A server protocol given as a master's.
    NotMaster(String),
    /// A server's address.
    Address(AddrError),
    /// A master's address.
    MasterAddress(AddrError),
}

impl fmt::Display for FrontError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrontError::UnknownProtocol(e) => e.fmt(f),
            FrontError::IsMaster(p) => write!(f, "{p} is a master protocol; ask it as a master, for its servers"),
            FrontError::NotMaster(p) => write!(f, "{p} is not a master protocol"),
            FrontError::Address(e) => e.fmt(f),
            FrontError::MasterAddress(e) => write!(f, "master {e}"),
        }
    }
}

impl std::error::Error for FrontError {}

impl From<UnknownProtocol> for FrontError {
    fn from(e: UnknownProtocol) -> FrontError {
        FrontError::UnknownProtocol(e)
    }
}

/// The default port of `protocol`: the built-in `bzflag`'s or the plugin's that serves it.
pub fn default_port(set: &PluginSet, protocol: &str) -> Result<u16, UnknownProtocol> {
    if protocol == BZFLAG {
        return Ok(BZFLAG_PORT);
    }
    set.protocol(protocol).map(|d| d.default_port).ok_or_else(|| UnknownProtocol {
        protocol: protocol.to_owned(),
        known: std::iter::once(BZFLAG).chain(set.protocol_names()).map(str::to_owned).collect(),
        not_loaded: set.errors().iter().map(ToString::to_string).collect(),
    })
}

/// True when a plugin serves `protocol` as a master (a list of servers).
pub fn is_master(set: &PluginSet, protocol: &str) -> bool {
    set.protocol(protocol).is_some_and(|d| d.kind == ProtocolKind::Master)
}

/// The default port of `protocol`, a server protocol: refuses unknown and master protocols (a scan's servers).
pub fn server_port(set: &PluginSet, protocol: &str) -> Result<u16, FrontError> {
    let port = default_port(set, protocol)?;
    if is_master(set, protocol) {
        return Err(FrontError::IsMaster(protocol.to_owned()));
    }
    Ok(port)
}

/// A query of `address` (`HOST[:PORT]`, the protocol's default port when none is given; names are looked up,
/// blocking) with `protocol`, which may be a master's (its answer then lists servers, none of them asked).
pub fn server_target(set: &PluginSet, protocol: &str, address: &str) -> Result<Target, FrontError> {
    let port = default_port(set, protocol)?;
    let addr = resolve(address, port).map_err(FrontError::Address)?;
    Ok(Target::new(protocol, addr))
}

/// A master asked over UDP whose entries the scan queries too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MasterSpec {
    /// The master's protocol (`dpmaster`, `teeworlds-master`, ...).
    pub protocol: String,
    /// `HOST[:PORT]` (the master protocol's default port when none is given).
    pub address: String,
    /// The protocol its entries are queried with.
    pub servers: String,
    /// The game name of the list (`game`; e.g. Quake3Arena).
    pub game: Option<String>,
    /// The game's protocol number (`game_protocol`).
    pub game_protocol: Option<String>,
    /// List filters (`filters`; e.g. "empty full").
    pub filters: Option<String>,
}

/// The target of a master: its protocol must be a master's, the protocol of its entries a server's.
pub fn master_target(set: &PluginSet, m: &MasterSpec) -> Result<Target, FrontError> {
    server_port(set, &m.servers)?;
    let port = default_port(set, &m.protocol)?;
    if !is_master(set, &m.protocol) {
        return Err(FrontError::NotMaster(m.protocol.clone()));
    }
    let addr = resolve(&m.address, port).map_err(FrontError::MasterAddress)?;
    let params = [("game", &m.game), ("game_protocol", &m.game_protocol), ("filters", &m.filters)]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v.clone()?)))
        .collect();
    Ok(Target { protocol: m.protocol.clone(), addr, params, expand: Some((m.servers.clone(), Vec::new())) })
}

/// The targets of a list published over HTTP(S) (`(protocol, address)` entries, in order), through the same entry
/// policy as a UDP master's list (duplicates removed first); returns them and how many the policy dropped.
pub fn listed_targets<'a>(
    entries: impl IntoIterator<Item = (&'a str, SocketAddr)>,
    policy: MasterPolicy,
) -> (Vec<Target>, u64) {
    let mut filter = EntryFilter::new(policy);
    let mut seen = HashSet::new();
    let targets = entries
        .into_iter()
        .filter(|&(p, addr)| seen.insert((p, addr)) && filter.check(addr).is_ok())
        .map(|(p, addr)| Target::new(p, addr))
        .collect();
    (targets, filter.counts().dropped())
}

impl ScanConfig {
    /// The configuration every front end starts from: `timeout` (clamped to 1 ms ..= 600 s), `retries` (at most
    /// 16), `params` for every plugin query, and every query's tokens and challenges fresh from the operating
    /// system's random source ([`ScanConfig::seed`] 0; the seeded mode is for the scheduler's own tests).
    pub fn front(timeout: Duration, retries: u32, params: Vec<(String, String)>) -> ScanConfig {
        ScanConfig {
            timeout: timeout.clamp(Duration::from_millis(1), Duration::from_secs(600)),
            retries: retries.min(16),
            seed: 0,
            params,
            ..ScanConfig::default()
        }
    }

    /// At `rate` datagrams a second (at least 1), with [`ScanConfig::burst_for_rate`]'s burst.
    #[must_use]
    pub fn at_rate(self, rate: u32) -> ScanConfig {
        let rate = rate.max(1);
        ScanConfig { rate, burst: ScanConfig::burst_for_rate(rate), ..self }
    }

    /// For queries asked once (`bzhead query`, `bzhead.query`): no pace between two queries of one address.
    #[must_use]
    pub fn unpaced(self) -> ScanConfig {
        ScanConfig { pace: Duration::ZERO, ..self }
    }
}

/// What runs a scan's I/O: the reactor implements it (`src/reactor/scan_io.rs`). A trait, so that the query layer
/// does not import the reactor, which imports it.
pub trait ScanHost {
    /// A scan on the host.
    type Id: Copy + Eq;
    /// Puts a scan on the host.
    fn add_scan(&mut self, scan: Scan) -> Self::Id;
    /// The scan, while it is on the host.
    fn scan(&self, id: Self::Id) -> Option<&Scan>;
    /// The next finished query of any scan.
    fn poll_scan_event(&mut self) -> Option<(Self::Id, Instant, ScanEvent)>;
    /// Gives a result back to its scan for reuse.
    fn recycle_scan_result(&mut self, id: Self::Id, result: QueryResult);
    /// True when the scan has nothing waiting, running or queued to send.
    fn is_scan_done(&self, id: Self::Id) -> bool;
    /// Takes the scan off the host.
    fn remove_scan(&mut self, id: Self::Id) -> Option<Scan>;
}

/// A scan of `targets` (in order; a duplicate of an earlier (protocol, address) is skipped, see the module doc).
pub fn new_scan<'a>(
    set: PluginSet,
    cfg: ScanConfig,
    targets: impl ExactSizeIterator<Item = &'a Target>,
    now: Instant,
) -> Scan {
    let mut scan = Scan::new(set, cfg, now);
    scan.reserve(targets.len());
    for t in targets {
        // A duplicate is counted (ScanStats::duplicates) and skipped; past MAX_PENDING waiting targets the rest
        // are refused alike.
        let _ = scan.add_target(now, t.clone());
    }
    scan
}

/// Puts a scan of `targets` on `host`.
pub fn start<H: ScanHost>(host: &mut H, set: PluginSet, cfg: ScanConfig, targets: &[Target]) -> H::Id {
    host.add_scan(new_scan(set, cfg, targets.iter(), Instant::now()))
}

/// Hands every finished query waiting on `host` to `on`, then back to its scan. The host runs one scan at a time.
pub fn drain<H: ScanHost>(host: &mut H, mut on: impl FnMut(&QueryResult)) {
    while let Some((id, _, ScanEvent::Result(r))) = host.poll_scan_event() {
        on(&r);
        host.recycle_scan_result(id, r);
    }
}

/// What [`run`] reports to its caller.
pub enum Tick<'a> {
    /// A query finished.
    Result(&'a QueryResult),
    /// A turn ended: the counters and how many queries are left (waiting or running).
    Turn(&'a ScanStats, usize),
}

/// Runs a scan of `targets` on `host` until every query finished, handing each result and the end of each turn to
/// `on`; `turn` runs one turn of the host (and may stop the scan with an error, e.g. on a signal). The scan is taken
/// off the host at the end, also on an error; returns its counters.
pub fn run<H: ScanHost, E>(
    host: &mut H,
    set: PluginSet,
    cfg: ScanConfig,
    targets: &[Target],
    mut on: impl FnMut(Tick<'_>),
    mut turn: impl FnMut(&mut H) -> Result<(), E>,
) -> Result<ScanStats, E> {
    let id = start(host, set, cfg, targets);
    let outcome = loop {
        drain(host, |r| on(Tick::Result(r)));
        if let Some(s) = host.scan(id) {
            on(Tick::Turn(&s.stats(), s.pending() + s.running()));
        }
        if host.is_scan_done(id) {
            break Ok(());
        }
        if let Err(e) = turn(host) {
            break Err(e);
        }
    };
    let stats = host.remove_scan(id).map(|s| s.stats()).unwrap_or_default();
    outcome.map(|()| stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin() -> PluginSet {
        PluginSet::load_standard(&[])
    }

    #[test]
    fn an_unknown_protocol_lists_the_known_ones() {
        let set = builtin();
        let e = default_port(&set, "nosuch").unwrap_err();
        assert_eq!(e.protocol, "nosuch");
        assert_eq!(e.known[0], BZFLAG);
        assert!(e.known.iter().any(|p| p == "quake3") && e.known.iter().any(|p| p == "dpmaster"), "{e}");
        assert!(e.to_string().starts_with("unknown protocol \"nosuch\"; known: bzflag, "), "{e}");
        assert_eq!(default_port(&set, BZFLAG), Ok(BZFLAG_PORT));
        assert_eq!(default_port(&set, "quake3"), Ok(27960));
    }

    #[test]
    fn masters_and_servers_are_told_apart() {
        let set = builtin();
        assert_eq!(server_port(&set, "dpmaster"), Err(FrontError::IsMaster("dpmaster".into())));
        let m = MasterSpec {
            protocol: "dpmaster".into(),
            address: "127.0.0.1".into(),
            servers: "quake3".into(),
            game_protocol: Some("68".into()),
            ..MasterSpec::default()
        };
        let t = master_target(&set, &m).unwrap();
        assert_eq!(t.addr, "127.0.0.1:27950".parse().unwrap());
        assert_eq!(t.params, vec![("game_protocol".to_owned(), "68".to_owned())]);
        assert_eq!(t.expand, Some(("quake3".to_owned(), Vec::new())));
        let not = MasterSpec { protocol: "quake3".into(), ..m.clone() };
        assert_eq!(master_target(&set, &not), Err(FrontError::NotMaster("quake3".into())));
        let bad = MasterSpec { servers: "dpmaster".into(), ..m };
        assert_eq!(master_target(&set, &bad), Err(FrontError::IsMaster("dpmaster".into())));
    }

    #[test]
    fn every_front_config_takes_fresh_tokens() {
        let c = ScanConfig::front(Duration::from_secs(7200), 99, Vec::new()).at_rate(0).unpaced();
        assert_eq!((c.seed, c.rate, c.burst, c.retries), (0, 1, 1, 16));
        assert_eq!((c.timeout, c.pace), (Duration::from_secs(600), Duration::ZERO));
        let c = ScanConfig::front(Duration::from_millis(500), 2, Vec::new()).at_rate(1000);
        assert_eq!((c.seed, c.burst), (0, ScanConfig::burst_for_rate(1000)));
    }

    #[test]
    fn listed_targets_take_each_entry_once_through_the_policy() {
        let a: SocketAddr = "203.0.113.9:1".parse().unwrap();
        let open = MasterPolicy { allow_special_use: true, ..MasterPolicy::default() };
        let (t, dropped) = listed_targets([("bzflag", a), ("bzflag", a), ("teeworlds", a)], open);
        assert_eq!((t.len(), dropped), (2, 0));
        let (t, dropped) = listed_targets([("bzflag", a)], MasterPolicy::default());
        assert_eq!((t.len(), dropped), (0, 1), "a documentation address is special-use");
    }
}
