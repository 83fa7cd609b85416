//! Bots: a [`Bot`] trait driven by the reactor at a fixed tick ([`BotHost`]), the read-only [`View`] of the game a
//! bot decides from, the [`Control`]s it sets, and the helpers bots are made of.
//!
//! # Writing a bot
//!
//! ```no_run
//! use bzhead::bot::{Bot, BotConfig, BotHost, Control, HostConfig, View};
//!
//! /// Drives in circles and fires whenever a shot is loaded.
//! struct Circler;
//!
//! impl Bot for Circler {
//!     fn tick(&mut self, view: &View<'_>, control: &mut Control) {
//!         control.drive(1.0, 0.3);
//!         control.fire = view.me.reload == 0.0;
//!     }
//! }
//!
//! let mut host = BotHost::new(HostConfig::default())?;
//! let server = "127.0.0.1:5154".parse().unwrap();
//! host.add_bot(server, BotConfig { callsign: "circler".into(), ..BotConfig::default() }, Box::new(Circler));
//! loop {
//!     host.turn(None)?;
//!     while let Some(event) = host.poll_event() {
//!         println!("{event:?}");
//!     }
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The host does everything the protocol asks of a player (spawning, updates, hits on our tank, kills, flags,
//! the server's checks); a bot only looks at its [`View`] and sets its [`Control`]. See `examples/` and
//! [`brains`] for complete bots.
//!
//! # Modules
//!
//! * [`host`]: [`BotHost`], the runner: one observer link per server shared by its bots, staggered joins,
//!   reconnects, yielding slots to humans, the tick.
//! * [`view`]: [`View`], what a bot sees; [`control`]: [`Control`], what it does.
//! * [`nav`]: a path planner for a tank over the world (an occupancy grid at ground level, A*, shared distance
//!   fields).
//! * [`levels`]: navigation in three dimensions: the decks above the ground, the drives, falls, jumps and
//!   teleports between them, and routes over them.
//! * [`aim`]: firing solutions that lead a moving target along its predicted line or arc, and bank shots.
//! * [`danger`]: which live shots will pass close to us, and how to steer out of their way.
//! * [`brains`]: the bots the `bzhead bot` command runs (hunter, capper, ...), written against this API only.
//! * `pilot` (private): the protocol side of each bot's tank.

pub mod aim;
pub mod brains;
pub mod control;
pub mod danger;
pub mod host;
pub mod levels;
pub mod nav;
mod pilot;
pub mod view;
mod watchdog;

pub use control::Control;
pub use host::{BotConfig, BotHost, BotId, BotState, BotStatus, HostConfig, HostEvent, ServerId};
pub use pilot::BotStats;
pub use view::{FlagView, GameType, Me, TankView, View};

use serde::Serialize;

use crate::bzflag::consts::Team;
use crate::bzflag::event::Event;

/// A bot: it decides, the [`BotHost`] does the rest.
pub trait Bot {
    /// Called once per tick while the bot is in the game (alive or dead: check `view.me.alive()`). Set `control`;
    /// it keeps its speed, turn and grab setting from the previous tick.
    fn tick(&mut self, view: &View<'_>, control: &mut Control);

    /// Called for each event of the bot's own session since its last tick, right before [`Bot::tick`]. Player
    /// updates, shots and variables are not passed on (they are in the [`View`]).
    fn on_event(&mut self, view: &View<'_>, event: &Event) {
        let _ = (view, event);
    }

    /// Called by the host's watchdog when our tank has been asked to move and has not moved for a while (a
    /// [`BotEvent::Stuck`]): forget the plan and try another way. The host backs the tank out meanwhile.
    fn on_stuck(&mut self, view: &View<'_>) {
        let _ = view;
    }
}

/// What happened to one of our bots.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "bot_event", rename_all = "snake_case")]
pub enum BotEvent {
    /// Connecting (the n-th attempt).
    Connecting {
        /// Attempt number, from 1.
        attempt: u32,
    },
    /// In the game.
    Joined {
        /// Player id.
        id: u8,
        /// Team.
        team: Team,
    },
    /// Spawned.
    Spawned {
        /// Where.
        pos: [f32; 3],
    },
    /// Killed (the server's `MsgKilled`).
    Died {
        /// By whom.
        killer: u8,
        /// Why, in a word.
        reason: String,
    },
    /// We killed someone (the server's `MsgKilled`).
    Killed {
        /// Whom.
        victim: u8,
    },
    /// Grabbed a flag.
    Grabbed {
        /// Its type.
        flag: String,
    },
    /// Captured a team flag.
    Captured {
        /// The team whose base it was brought to.
        team: Team,
    },
    /// The brain wants to go somewhere it cannot reach from where it is (no drive, fall, jump or teleport
    /// leads there); it does something else meanwhile.
    Unreachable {
        /// Where.
        goal: [f32; 3],
        /// What is there ("flag", "base", ...).
        what: String,
    },
    /// The host's watchdog saw the tank alive, asked to move, and not moving nor firing for a while; it backs
    /// the tank out and asks the brain to plan again ([`Bot::on_stuck`]).
    Stuck {
        /// Where.
        pos: [f32; 3],
        /// For how long, in seconds.
        seconds: f32,
    },
    /// Lost the connection; retrying after a while (`None`: not retrying).
    Disconnected {
        /// Why.
        reason: String,
        /// Seconds until the next attempt.
        retry_in: Option<f32>,
    },
    /// Left to free a slot for a human.
    Yielded {
        /// Free slots when it left.
        free: u16,
    },
    /// Left the game.
    Left,
    /// Gave up for good.
    Stopped {
        /// Why.
        reason: String,
    },
}
