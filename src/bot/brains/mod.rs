//! The bots `bzhead bot` runs, written against the public bot API only (copy one to start your own):
//!
//! * [`Hunter`]: finds enemies, leads its shots along their predicted lines and arcs, banks shots off walls,
//!   dodges, weaves.
//! * [`Capper`]: capture the flag: fetches an enemy flag and brings it home, hunts the carrier of its own flag.
//! * [`Defender`]: capture the flag: guards its team's flag and hunts whoever takes it.
//! * [`Sitter`]: stays where it spawns and never shoots: a practice target (and a team's token player in tests
//!   and benchmarks, so that its flag exists).
//!
//! [`common`] holds the parts they share: path driving, the gunner, evasion.

pub mod capper;
pub mod common;
pub mod defender;
pub mod hunter;

pub use capper::Capper;
pub use defender::Defender;
pub use hunter::Hunter;

use super::{Bot, Control, View};

/// See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sitter;

impl Bot for Sitter {
    fn tick(&mut self, _view: &View<'_>, control: &mut Control) {
        control.stop();
        control.grab = false;
    }
}

/// The kinds [`by_name`] knows.
pub const KINDS: &[&str] = &["hunter", "capper", "defender", "sitter"];

/// A new bot of a kind ([`KINDS`]) with random choices following `seed`.
pub fn by_name(kind: &str, seed: u64) -> Option<Box<dyn Bot>> {
    Some(match kind {
        "hunter" => Box::new(Hunter::new(seed)),
        "capper" => Box::new(Capper::new(seed)),
        "defender" => Box::new(Defender::new(seed)),
        "sitter" => Box::new(Sitter),
        _ => return None,
    })
}
