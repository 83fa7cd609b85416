//! Playing for real: our own tank's physics, the update send rule, dead reckoning of every tank, shots in
//! flight and hit detection (protocol fact sheet §8–§11), as pure sans-IO computations.
//!
//! # Contract
//!
//! Nothing here touches a socket or reads a clock. Every function takes the elapsed time (`dt`, seconds) or a
//! caller-supplied `Instant`, the server variables as a [`Physics`] snapshot, and the world as a
//! [`WorldModel`](super::world::WorldModel); it returns new state and the [`ClientMsg`](super::msg::ClientMsg)s
//! the official client would send, which the caller hands to `Session::send`. Nothing panics on any input: values
//! from the wire are sanitised (non-finite or absurd numbers become 0 or are clamped) before they enter any
//! state, so a hostile update cannot poison a prediction.
//!
//! # One tick of a bot (what `tests/it/play.rs` does against a real `bzfs`)
//!
//! ```text
//! phys = Physics::new(&game.vars, game.settings.as_ref())
//! report = tank.step(dt, controls, &phys, &world)
//!   report.teleported  → send MsgTeleport(from, to)
//!   report.death       → send tank.death_messages(me, death); tank.explode()
//!   report.pause_drop  → send MsgDropFlag
//!   report.explosion_over → send MsgAlive (the server respawns us; Event::Spawn → tank.spawn(pos, azimuth))
//! tracker.sync(&game.shots, &phys, Some(&world))   (a ShotTracker per session; update_missile for missiles)
//! if let Some(hit) = check_hits(&tank.victim(me, team), shots over (prev, now), dt, &phys)
//!     → send hit_messages(&hit, me, tank.flag, tank.pos); tank.explode()   (unless only a Shield was lost)
//! if let Some(m) = updates.poll(now, me, clock, &tank.own_state(), &phys, &world.physics_drivers)
//!     → send m; tank.take_sounds()
//! to fire: gun.fire(clock, me, &tank.muzzle(team), &phys) → send updates.before_shot(..), then MsgShotBegin
//! flags: FlagRules::grabs / capture / can_drop / tick
//! our team flag captured (MsgCaptureFlag of our flag): tank.explode() without any MsgKilled
//! ```
//!
//! # Layout
//!
//! * [`physics`]: [`Physics`], every number the game needs, read from the `VarStore` and `MsgGameSettings`
//!   (rebuild it whenever a variable changes, or every tick: it is about a hundred cached look-ups); flag
//!   abbreviations and their effects on size and speed.
//! * [`tank`]: our own tank ([`Tank`]): driving with the server's limits and flag modifiers, collisions, bumps,
//!   jumping and falling, physics drivers, water, teleporters, explosion.
//! * [`reckon`]: dead reckoning ([`Reckoning`], [`RemoteTank`]): where a tank is at a time after its last
//!   update, on a line, an arc, a ballistic fall or a physics driver.
//! * [`updates`]: the official client's send rule ([`UpdateSender`]): when to send `MsgPlayerUpdate`, in
//!   which form, with which `order`.
//! * [`shots`]: live shots built from `MsgShotBegin` with every flag modifier ([`LiveShot`]), guided missiles
//!   ([`GuidedMissile`]), and firing our own shots with slots, salt and reload ([`Gun`]).
//! * [`flags`]: the client's rules for grabbing, capturing, dropping and shaking off flags ([`FlagRules`]).
//! * [`hit`]: victim-side hit detection ([`hit::check_hits`]) and the messages a hit makes us send, plus the
//!   server's end-shot accounting ([`hit::EndShotCredit`]).
pub mod flags;
pub mod hit;
pub mod physics;
pub mod reckon;
pub mod shots;
pub mod tank;
pub mod updates;

#[cfg(test)]
mod tests;

pub use flags::FlagRules;
pub use hit::{check_hits, HitCandidate, HitReport, Victim};
pub use physics::{FlagEffect, Physics};
pub use reckon::{DriverMotion, Pose, Reckoning, RemotePose, RemoteTank};
pub use shots::{FireError, GuidedMissile, Gun, LiveShot, ShotKind, ShotTracker};
pub use tank::{Controls, Death, Location, StepReport, Tank};
pub use updates::{OwnState, UpdateSender};
