//! The merged list with provenance: which upstream masters (the monitor's `[[master]]` sources) list a server, and
//! when, next to the servers registered directly. Sans-IO: lists and Unix seconds in.
//!
//! An upstream's last good list is kept while it fails, for [`KEEP_FAILED`] (an hour) after its last good answer;
//! then its entries are dropped (an entry listed by no upstream any more and not registered directly leaves the
//! merged list). Bounds: [`MAX_ENTRIES`] entries (an upstream list beyond it is cut), [`MAX_UPSTREAMS`] upstreams.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;

use serde::Serialize;

/// Seconds an upstream's last good list is served after its last good answer while it fails.
pub const KEEP_FAILED: i64 = 3600;
/// Most entries mirrored (all upstreams together).
pub const MAX_ENTRIES: usize = 100_000;
/// Most upstreams.
pub const MAX_UPSTREAMS: usize = 256;

/// An upstream master and how it fares.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Upstream {
    /// Its name (the URL, or `protocol@address`).
    pub name: String,
    /// Unix seconds of its last good list.
    pub last_ok: Option<i64>,
    /// Unix seconds of its last failure (after its last good list), and why.
    pub failing_since: Option<i64>,
    /// Why it failed last.
    pub error: Option<String>,
    /// Entries it lists (as of its last good list).
    pub entries: usize,
    /// Its last good list is served though it fails now.
    pub stale: bool,
}

/// Where an entry comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// Indexes (into [`Registry::upstreams`]) of the upstreams whose last good list has it.
    pub upstreams: BTreeSet<usize>,
    /// Unix seconds it was first and last listed by an upstream.
    pub first_seen: i64,
    /// Unix seconds it was last listed by an upstream.
    pub last_seen: i64,
}

/// The mirror of the upstream masters.
#[derive(Debug, Default)]
pub struct Registry {
    upstreams: Vec<Upstream>,
    entries: HashMap<(String, SocketAddr), Provenance>,
}

impl Registry {
    /// An empty mirror.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// The upstreams.
    pub fn upstreams(&self) -> &[Upstream] {
        &self.upstreams
    }

    /// The mirrored entries: `(protocol, address)` and where they come from.
    pub fn entries(&self) -> impl Iterator<Item = (&(String, SocketAddr), &Provenance)> {
        self.entries.iter()
    }

    /// Where `(protocol, addr)` comes from, when an upstream lists it.
    pub fn provenance(&self, protocol: &str, addr: SocketAddr) -> Option<&Provenance> {
        self.entries.get(&(protocol.to_owned(), addr))
    }

    fn index(&mut self, name: &str) -> Option<usize> {
        if let Some(i) = self.upstreams.iter().position(|u| u.name == name) {
            return Some(i);
        }
        if self.upstreams.len() >= MAX_UPSTREAMS {
            return None;
        }
        self.upstreams.push(Upstream {
            name: name.to_owned(),
            last_ok: None,
            failing_since: None,
            error: None,
            entries: 0,
            stale: false,
        });
        Some(self.upstreams.len() - 1)
    }

    /// An upstream's good list: it now lists exactly these.
    pub fn listed<'a>(&mut self, name: &str, list: impl IntoIterator<Item = (&'a str, SocketAddr)>, now: i64) {
        let Some(i) = self.index(name) else { return };
        for p in self.entries.values_mut() {
            p.upstreams.remove(&i);
        }
        let mut n = 0;
        for (protocol, addr) in list {
            let k = (protocol.to_owned(), addr);
            if !self.entries.contains_key(&k) && self.entries.len() >= MAX_ENTRIES {
                break;
            }
            let p = self.entries.entry(k).or_insert(Provenance { first_seen: now, ..Provenance::default() });
            if p.upstreams.insert(i) {
                n += 1;
            }
            p.last_seen = now;
        }
        self.entries.retain(|_, p| !p.upstreams.is_empty());
        let u = &mut self.upstreams[i];
        u.last_ok = Some(now);
        u.failing_since = None;
        u.error = None;
        u.entries = n;
        u.stale = false;
    }

    /// An upstream failed: its last good list stays, for [`KEEP_FAILED`] after it ([`Registry::expire`]).
    pub fn failed(&mut self, name: &str, error: &str, now: i64) {
        let Some(i) = self.index(name) else { return };
        let u = &mut self.upstreams[i];
        u.failing_since.get_or_insert(now);
        u.error = Some(error.chars().take(200).collect());
        u.stale = u.entries > 0;
    }

    /// Drops the lists of upstreams failing for longer than [`KEEP_FAILED`] after their last good list.
    pub fn expire(&mut self, now: i64) {
        let mut gone = Vec::new();
        for (i, u) in self.upstreams.iter_mut().enumerate() {
            let old = u.failing_since.is_some() && u.last_ok.is_none_or(|t| now.saturating_sub(t) > KEEP_FAILED);
            if old && u.entries > 0 {
                u.entries = 0;
                u.stale = false;
                gone.push(i);
            }
        }
        if gone.is_empty() {
            return;
        }
        for p in self.entries.values_mut() {
            for i in &gone {
                p.upstreams.remove(i);
            }
        }
        self.entries.retain(|_, p| !p.upstreams.is_empty());
    }

    /// The names of the upstreams of an entry, and whether all of them are stale (failing now).
    pub fn names(&self, p: &Provenance) -> (Vec<&str>, bool) {
        let names: Vec<&str> =
            p.upstreams.iter().filter_map(|i| self.upstreams.get(*i)).map(|u| u.name.as_str()).collect();
        let stale = p.upstreams.iter().filter_map(|i| self.upstreams.get(*i)).all(|u| u.stale);
        (names, stale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_upstream_keeps_its_list_for_a_while() {
        let a: SocketAddr = "93.184.216.1:8303".parse().unwrap();
        let b: SocketAddr = "93.184.216.2:8303".parse().unwrap();
        let mut r = Registry::new();
        r.listed("up1", [("teeworlds", a), ("teeworlds", b)], 100);
        r.listed("up2", [("teeworlds", b)], 100);
        assert_eq!(r.entries().count(), 2);
        r.listed("up2", [], 160);
        assert_eq!(r.provenance("teeworlds", b).unwrap().upstreams.len(), 1);
        r.failed("up1", "connection refused", 200);
        r.expire(200 + KEEP_FAILED - 100);
        let p = r.provenance("teeworlds", a).unwrap();
        let (names, stale) = r.names(p);
        assert_eq!((names, stale), (vec!["up1"], true));
        assert_eq!(p.first_seen, 100);
        r.expire(101 + KEEP_FAILED);
        assert_eq!(r.entries().count(), 0);
        assert_eq!(r.upstreams()[0].entries, 0);
    }
}
