//! The merged list with provenance: which upstream masters (the monitor's `[[master]]` sources) list a server, and
//! when, next to the servers registered directly. Sans-IO: lists and Unix seconds in.
//!
//! An upstream's last good list is kept while it fails, for [`KEEP_FAILED`] (an hour) after its last good answer;
//! then its entries are dropped (an entry listed by no upstream any more and not registered directly leaves the
//! merged list). Each entry keeps what the list said of it ([`Listed`]: a BZFlag `LIST` line's fields, a DDNet
//! entry's addresses and info), from the last upstream that said something, so that the monitor serves it in the
//! same game's list as a server registered directly (the BZFlag `LIST`, DDNet's `servers.json`).
//!
//! Bounds: [`MAX_ENTRIES`] entries (an upstream list beyond it is cut), [`MAX_UPSTREAMS`] upstreams, and
//! [`MAX_LISTED_BYTES`] of what the lists said (past it, further entries are mirrored without it: they are still
//! queried and in `/api/masters`, but a list that needs it leaves them out).

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;

use serde::Serialize;

pub use crate::monitor::masters::Listed;

/// Seconds an upstream's last good list is served after its last good answer while it fails.
pub const KEEP_FAILED: i64 = 3600;
/// Most entries mirrored (all upstreams together).
pub const MAX_ENTRIES: usize = 100_000;
/// Most upstreams.
pub const MAX_UPSTREAMS: usize = 256;
/// Most bytes of what the upstream lists say of their entries kept ([`Listed::bytes`], all entries together).
pub const MAX_LISTED_BYTES: usize = 64 << 20;

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
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Provenance {
    /// Indexes (into [`Registry::upstreams`]) of the upstreams whose last good list has it.
    pub upstreams: BTreeSet<usize>,
    /// Unix seconds it was first and last listed by an upstream.
    pub first_seen: i64,
    /// Unix seconds it was last listed by an upstream.
    pub last_seen: i64,
    /// What an upstream's list said of it, and which upstream (an index into [`Registry::upstreams`]).
    pub listed: Option<(usize, Listed)>,
}

/// The mirror of the upstream masters.
#[derive(Debug, Default)]
pub struct Registry {
    upstreams: Vec<Upstream>,
    entries: HashMap<(String, SocketAddr), Provenance>,
    /// Bytes of the entries' [`Provenance::listed`].
    listed_bytes: usize,
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

    /// Bytes of what the lists said of the entries kept now.
    pub fn listed_bytes(&self) -> usize {
        self.listed_bytes
    }

    /// Forgets what upstream `i` said of the entries, and drops the entries no upstream lists.
    fn drop_upstream(&mut self, i: usize) {
        let mut freed = 0;
        for p in self.entries.values_mut() {
            p.upstreams.remove(&i);
            if p.listed.as_ref().is_some_and(|(from, _)| *from == i) {
                freed += p.listed.take().map_or(0, |(_, l)| l.bytes());
            }
        }
        self.entries.retain(|_, p| {
            let keep = !p.upstreams.is_empty();
            if !keep {
                freed += p.listed.as_ref().map_or(0, |(_, l)| l.bytes());
            }
            keep
        });
        self.listed_bytes = self.listed_bytes.saturating_sub(freed);
    }

    /// An upstream's good list: it now lists exactly these, each with what the list said of it.
    pub fn listed<'a>(
        &mut self,
        name: &str,
        list: impl IntoIterator<Item = (&'a str, SocketAddr, Option<Listed>)>,
        now: i64,
    ) {
        let Some(i) = self.index(name) else { return };
        self.drop_upstream(i);
        let mut n = 0;
        for (protocol, addr, listed) in list {
            let k = (protocol.to_owned(), addr);
            if !self.entries.contains_key(&k) && self.entries.len() >= MAX_ENTRIES {
                break;
            }
            let p = self.entries.entry(k).or_insert(Provenance { first_seen: now, ..Provenance::default() });
            if p.upstreams.insert(i) {
                n += 1;
            }
            p.last_seen = now;
            if let Some(l) = listed {
                let old = p.listed.as_ref().map_or(0, |(_, l)| l.bytes());
                let bytes = l.bytes();
                if self.listed_bytes - old + bytes <= MAX_LISTED_BYTES {
                    self.listed_bytes = self.listed_bytes - old + bytes;
                    p.listed = Some((i, l));
                }
            }
        }
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
        for i in gone {
            self.drop_upstream(i);
        }
    }

    /// The mirrored BZFlag servers as their upstream list server's `LIST` line says them (for
    /// [`super::bzfls::ListServer::handle`], which leaves out those added there).
    pub fn bzflag_listings(&self) -> Vec<super::bzfls::Listing> {
        let mut out = Vec::new();
        for ((protocol, addr), p) in self.entries() {
            let Some((_, Listed::Bzflag { nameport, version, gameinfo, title })) = &p.listed else { continue };
            if protocol != crate::query::BZFLAG {
                continue;
            }
            out.push(super::bzfls::Listing {
                nameport: nameport.clone(),
                addr: *addr,
                version: version.clone(),
                gameinfo: gameinfo.clone(),
                build: String::new(),
                title: title.clone(),
                first_seen: p.first_seen,
                last_seen: p.last_seen,
            });
        }
        out
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
        r.listed("up1", [("teeworlds", a, None), ("teeworlds", b, None)], 100);
        r.listed("up2", [("teeworlds", b, None)], 100);
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

    fn line(title: &str) -> Listed {
        let gameinfo = "0".repeat(58);
        Listed::Bzflag {
            nameport: "bz.example.org:5154".into(),
            version: "BZFS0221".into(),
            gameinfo,
            title: title.into(),
        }
    }

    #[test]
    fn what_a_list_says_goes_with_the_upstream_that_said_it() {
        let a: SocketAddr = "93.184.216.1:5154".parse().unwrap();
        let mut r = Registry::new();
        r.listed("up1", [("bzflag", a, Some(line("one")))], 100);
        // A UDP master lists it too, saying nothing: what up1 said stays.
        r.listed("up2", [("bzflag", a, None)], 100);
        let said = |r: &Registry| r.provenance("bzflag", a).and_then(|p| p.listed.clone()).map(|(i, _)| i);
        assert_eq!(said(&r), Some(0));
        let bytes = r.listed_bytes();
        assert_eq!(bytes, line("one").bytes());
        // up1 says it again: the bytes are counted once.
        r.listed("up1", [("bzflag", a, Some(line("one")))], 160);
        assert_eq!(r.listed_bytes(), bytes);
        // up1 stops listing it: what it said goes, the entry stays (up2 lists it).
        r.listed("up1", [], 220);
        assert_eq!((said(&r), r.listed_bytes(), r.entries().count()), (None, 0, 1));
        r.listed("up2", [], 220);
        assert_eq!(r.entries().count(), 0);
    }

    #[test]
    fn what_the_lists_say_is_bounded_in_bytes() {
        let mut r = Registry::new();
        let title = "t".repeat(1000);
        let per = line(&title).bytes();
        let n = MAX_LISTED_BYTES / per + 10;
        let list: Vec<_> = (0..n)
            .map(|i| {
                let addr = SocketAddr::from(([10, (i >> 16) as u8, (i >> 8) as u8, i as u8], 5154));
                ("bzflag", addr, Some(line(&title)))
            })
            .collect();
        r.listed("up", list, 100);
        assert_eq!(r.entries().count(), n);
        assert!(r.listed_bytes() <= MAX_LISTED_BYTES);
        assert_eq!(r.entries().filter(|(_, p)| p.listed.is_some()).count(), MAX_LISTED_BYTES / per);
        // The upstream's entries expire: every byte is given back.
        r.failed("up", "gone", 200);
        r.expire(201 + KEEP_FAILED);
        assert_eq!((r.entries().count(), r.listed_bytes()), (0, 0));
    }
}
