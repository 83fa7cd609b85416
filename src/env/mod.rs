//! The game logic of bzhead's learning environments (`bzhead.env` in Python, `docs/env.md`): what a learning
//! tank observes, how an action drives it, which of the game's events reward it, and when it decides.
//!
//! Everything here is sans-IO and works on the bot API's [`View`] and [`Control`]: a learning tank is an ordinary
//! [`Bot`](crate::bot::Bot) of the [`BotHost`](crate::bot::BotHost) whose tick calls [`observe`] and
//! [`Action::apply`], and whose `on_event` calls [`rewards`]. The Python layer only moves the numbers.
//!
//! * [`ObsSpec`]: the observation vector's fixed layout (own tank, the nearest other tanks, flags, shots, and
//!   distances along rays through the real world model), every entry scaled into −1..1.
//! * [`Action`]: speed, turn, fire, jump and drop flag, from a continuous (`Box`) or a discrete
//!   (`MultiDiscrete`) action, with clear errors for out-of-range, NaN or wrongly shaped input.
//! * [`RewardWeights`], [`rewards`]: kills, deaths, team kills, captures (ours and against us) and flag grabs from
//!   the server's own messages.
//! * [`DecisionClock`]: decisions at a fixed rate of game time; decisions missed because the policy was slower
//!   than the game are counted, never hidden.

use glam::{Vec2, Vec3};

use crate::bot::{Control, View};
use crate::bzflag::consts::{FlagStatus, Team};
use crate::bzflag::event::Event;
use crate::bzflag::session::team_of_flag;
use crate::bzflag::world::{Mask, WorldModel};

/// The world's width when the world model does not give one (BZFlag's default world).
const DEFAULT_WORLD_SIZE: f32 = 800.0;
/// Height above the tank's bottom at which the rays are cast (about the muzzle's).
const RAY_HEIGHT: f32 = 1.0;

/// The observation's layout. The vector is, in this order (every entry clamped to −1..1):
///
/// * own tank, [`ObsSpec::OWN`] entries: `x / (W/2)`, `y / (W/2)`, `z / W`, forward and leftward velocity
///   `/ _tankSpeed`, `cos` and `sin` of the heading, alive (0/1), reload left `/ _reloadTime`, carries a flag
///   (0/1), carries another team's team flag (0/1);
/// * the `nearest` other tanks, nearest first, [`ObsSpec::TANK`] entries each (all 0 for a missing one): present,
///   forward and leftward offset `/ W`, height offset `/ W`, forward and leftward velocity `/ _tankSpeed`, `cos`
///   and `sin` of its heading relative to ours, hostile, alive, carries a flag;
/// * the `flags` nearest flags on the field, [`ObsSpec::FLAG`] entries each: present, forward and leftward offset
///   `/ W`, team flag, our team's flag, carried by a tank;
/// * the `shots` nearest shots of other players, [`ObsSpec::SHOT`] entries each: present, forward and leftward
///   offset `/ W`, forward and leftward velocity `/ _shotSpeed`, fired by an enemy;
/// * `rays` distances (`/ ray_range`, 1 for nothing within range) to the first surface a tank cannot drive through,
///   along rays spread evenly around the tank, the first straight ahead, counter-clockwise.
///
/// `W` is the world's width. Offsets and velocities are in the tank's own frame (forward, left).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ObsSpec {
    /// Other tanks observed.
    pub nearest: usize,
    /// Flags observed.
    pub flags: usize,
    /// Shots observed.
    pub shots: usize,
    /// Rays cast.
    pub rays: usize,
    /// How far a ray looks (world units).
    pub ray_range: f32,
}

impl Default for ObsSpec {
    fn default() -> Self {
        ObsSpec { nearest: 4, flags: 4, shots: 4, rays: 16, ray_range: 200.0 }
    }
}

/// Most tanks, flags, shots or rays an [`ObsSpec`] may ask for (keeps the vector bounded).
pub const MAX_ITEMS: usize = 256;

impl ObsSpec {
    /// Entries of the own tank.
    pub const OWN: usize = 11;
    /// Entries per other tank.
    pub const TANK: usize = 11;
    /// Entries per flag.
    pub const FLAG: usize = 6;
    /// Entries per shot.
    pub const SHOT: usize = 6;

    /// Checks the counts and the range.
    pub fn validate(&self) -> Result<(), String> {
        for (name, n) in [("nearest", self.nearest), ("flags", self.flags), ("shots", self.shots), ("rays", self.rays)]
        {
            if n > MAX_ITEMS {
                return Err(format!("{name} must be at most {MAX_ITEMS}, not {n}"));
            }
        }
        if !(self.ray_range.is_finite() && self.ray_range > 0.0 && self.ray_range <= 10_000.0) {
            return Err("ray_range must be a number of world units in (0, 10000]".into());
        }
        Ok(())
    }

    /// The observation's length.
    pub fn len(&self) -> usize {
        Self::OWN + self.nearest * Self::TANK + self.flags * Self::FLAG + self.shots * Self::SHOT + self.rays
    }

    /// Never empty (the own tank is always there); for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// A vector in the tank's frame: (forward, left) for heading `azimuth`.
pub fn to_frame(v: Vec2, azimuth: f32) -> Vec2 {
    let (s, c) = azimuth.sin_cos();
    Vec2::new(v.x * c + v.y * s, -v.x * s + v.y * c)
}

fn unit(x: f32) -> f32 {
    if x.is_finite() {
        x.clamp(-1.0, 1.0)
    } else {
        0.0
    }
}

fn flag01(b: bool) -> f32 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// Appends the observation of `view`'s tank (see [`ObsSpec`]) to `out`; exactly [`ObsSpec::len`] entries.
pub fn observe(view: &View<'_>, spec: &ObsSpec, out: &mut Vec<f32>) {
    let start = out.len();
    let w = if view.world.world_size > 0.0 { view.world.world_size } else { DEFAULT_WORLD_SIZE };
    let me = view.me.tank;
    let (pos, az) = (me.pos, me.azimuth);
    let ts = view.phys.tank_speed.max(1.0);
    let ss = view.phys.shot_speed.max(1.0);
    let v = to_frame(me.vel.truncate(), az);
    let flag = me.flag;
    let enemy_team_flag = team_of_flag(flag).is_some_and(|t| t != view.me.team);
    out.extend([
        pos.x / (w / 2.0),
        pos.y / (w / 2.0),
        pos.z / w,
        v.x / ts,
        v.y / ts,
        az.cos(),
        az.sin(),
        flag01(view.me.alive()),
        view.me.reload / view.phys.reload_time.max(0.1),
        flag01(!flag.is_none()),
        flag01(enemy_team_flag),
    ]);

    // The nearest other tanks.
    let tanks: Vec<_> = view.tanks().iter().filter(|t| t.id != view.me.id).collect();
    let order = nearest(tanks.iter().map(|t| t.pose.pos.distance_squared(pos)), spec.nearest);
    for k in 0..spec.nearest {
        match order.get(k).and_then(|&i| tanks.get(i)) {
            Some(t) => {
                let d = to_frame((t.pose.pos - pos).truncate(), az);
                let tv = to_frame(t.pose.vel.truncate(), az);
                let rel = t.pose.azimuth - az;
                out.extend([
                    1.0,
                    d.x / w,
                    d.y / w,
                    (t.pose.pos.z - pos.z) / w,
                    tv.x / ts,
                    tv.y / ts,
                    rel.cos(),
                    rel.sin(),
                    flag01(view.is_hostile(t.team)),
                    flag01(t.alive),
                    flag01(t.flag.is_some_and(|f| !f.is_none())),
                ]);
            }
            None => out.extend(std::iter::repeat_n(0.0, ObsSpec::TANK)),
        }
    }

    // The nearest flags.
    let flags: Vec<_> = view
        .flags()
        .filter(|f| matches!(f.status, FlagStatus::OnGround | FlagStatus::OnTank | FlagStatus::InAir))
        .collect();
    let order = nearest(flags.iter().map(|f| f.pos.distance_squared(pos)), spec.flags);
    for k in 0..spec.flags {
        match order.get(k).and_then(|&i| flags.get(i)) {
            Some(f) => {
                let d = to_frame((f.pos - pos).truncate(), az);
                out.extend([
                    1.0,
                    d.x / w,
                    d.y / w,
                    flag01(f.team.is_some()),
                    flag01(f.team == Some(view.me.team)),
                    flag01(f.status == FlagStatus::OnTank),
                ]);
            }
            None => out.extend(std::iter::repeat_n(0.0, ObsSpec::FLAG)),
        }
    }

    // The nearest shots of others, where they are now.
    let shots: Vec<(Vec3, Vec3, bool)> = view
        .shots()
        .filter(|s| s.shooter != view.me.id)
        .filter_map(|s| {
            let age = s.age(view.now);
            let p = s.position_at(age)?;
            let vel = s.segments.iter().find(|g| age >= g.t0 && age < g.t1).map_or(s.velocity, |g| g.velocity);
            let hostile = s.team == Team::Rogue || view.is_hostile(s.team);
            Some((p, vel, hostile))
        })
        .collect();
    let order = nearest(shots.iter().map(|s| s.0.distance_squared(pos)), spec.shots);
    for k in 0..spec.shots {
        match order.get(k).and_then(|&i| shots.get(i)) {
            Some((p, vel, hostile)) => {
                let d = to_frame((*p - pos).truncate(), az);
                let sv = to_frame(vel.truncate(), az);
                out.extend([1.0, d.x / w, d.y / w, sv.x / ss, sv.y / ss, flag01(*hostile)]);
            }
            None => out.extend(std::iter::repeat_n(0.0, ObsSpec::SHOT)),
        }
    }

    // Rays through the world model.
    rays(view.world, pos, az, spec, out);

    for x in &mut out[start..] {
        *x = unit(*x);
    }
}

/// The indices of the `k` nearest of some items, given their distances in order, nearest first: what a stable sort
/// by distance puts first (equal distances keep the items' order), with NaN as the farthest. It selects the `k`
/// and sorts only those (O(n + k log k), not a sort of every tank, flag or shot at every decision), and its order
/// is total, so no distance a server sends can make it panic.
fn nearest(distances: impl Iterator<Item = f32>, k: usize) -> Vec<usize> {
    let mut keyed: Vec<(f32, usize)> =
        distances.enumerate().map(|(i, d)| (if d.is_nan() { f32::INFINITY } else { d }, i)).collect();
    let cmp = |a: &(f32, usize), b: &(f32, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    if k == 0 {
        return Vec::new();
    }
    if k < keyed.len() {
        keyed.select_nth_unstable_by(k - 1, cmp);
        keyed.truncate(k);
    }
    keyed.sort_unstable_by(cmp);
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// Appends `spec.rays` distances (`/ ray_range`, 1 for nothing within range) from a tank at `pos` heading `azimuth`
/// to the first surface a tank cannot drive through, the first ray straight ahead, then counter-clockwise.
pub fn rays(world: &WorldModel, pos: Vec3, azimuth: f32, spec: &ObsSpec, out: &mut Vec<f32>) {
    let eye = pos + Vec3::Z * RAY_HEIGHT;
    for k in 0..spec.rays {
        let a = azimuth + std::f32::consts::TAU * k as f32 / spec.rays as f32;
        let end = eye + Vec3::new(a.cos(), a.sin(), 0.0) * spec.ray_range;
        out.push(world.segment(eye, end, Mask::Tanks).map_or(1.0, |h| h.t));
    }
}

/// What a learning tank does until its next decision.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Action {
    /// Speed, −0.5 (full reverse) to 1 (full ahead) of `_tankSpeed`.
    pub speed: f32,
    /// Turn, −1 (full right) to 1 (full left) of `_tankAngVel`.
    pub turn: f32,
    /// Fire once, now (when loaded).
    pub fire: bool,
    /// Jump (when jumping is allowed).
    pub jump: bool,
    /// Drop the flag carried.
    pub drop_flag: bool,
}

/// The entries of an action, in order.
pub const ACTION_NAMES: [&str; 5] = ["speed", "turn", "fire", "jump", "drop_flag"];
/// The continuous action's lower bounds (`fire`, `jump`, `drop_flag` are on above 0.5).
pub const ACTION_LOW: [f32; 5] = [-0.5, -1.0, 0.0, 0.0, 0.0];
/// The continuous action's upper bounds.
pub const ACTION_HIGH: [f32; 5] = [1.0, 1.0, 1.0, 1.0, 1.0];
/// The discrete action's choices per entry: speed −0.5, 0, 0.5, 1; turn −1, −0.5, 0, 0.5, 1; the others off/on.
pub const ACTION_NVEC: [i64; 5] = [4, 5, 2, 2, 2];
const SPEEDS: [f32; 4] = [-0.5, 0.0, 0.5, 1.0];
const TURNS: [f32; 5] = [-1.0, -0.5, 0.0, 0.5, 1.0];
/// How far outside its bounds a continuous entry may be (rounding), and is then clamped.
const SLACK: f32 = 1e-4;

impl Action {
    /// From the continuous form: 5 finite numbers within [`ACTION_LOW`]..[`ACTION_HIGH`].
    pub fn from_box(a: &[f32]) -> Result<Action, String> {
        if a.len() != 5 {
            return Err(format!("an action has 5 entries ({}), not {}", ACTION_NAMES.join(", "), a.len()));
        }
        for (k, &x) in a.iter().enumerate() {
            if !x.is_finite() {
                return Err(format!("action entry {} ({}) is {x}, not a finite number", k, ACTION_NAMES[k]));
            }
            if x < ACTION_LOW[k] - SLACK || x > ACTION_HIGH[k] + SLACK {
                return Err(format!(
                    "action entry {} ({}) is {x}, outside {}..{}",
                    k, ACTION_NAMES[k], ACTION_LOW[k], ACTION_HIGH[k]
                ));
            }
        }
        let c = |k: usize| a[k].clamp(ACTION_LOW[k], ACTION_HIGH[k]);
        Ok(Action { speed: c(0), turn: c(1), fire: a[2] > 0.5, jump: a[3] > 0.5, drop_flag: a[4] > 0.5 })
    }

    /// From the discrete form: 5 integers, entry `k` in `0..ACTION_NVEC[k]`.
    pub fn from_discrete(a: &[i64]) -> Result<Action, String> {
        if a.len() != 5 {
            return Err(format!("an action has 5 entries ({}), not {}", ACTION_NAMES.join(", "), a.len()));
        }
        for (k, &x) in a.iter().enumerate() {
            if !(0..ACTION_NVEC[k]).contains(&x) {
                return Err(format!(
                    "action entry {} ({}) is {x}, outside 0..{}",
                    k,
                    ACTION_NAMES[k],
                    ACTION_NVEC[k] - 1
                ));
            }
        }
        // The indices were checked just above.
        Ok(Action {
            speed: SPEEDS[a[0] as usize],
            turn: TURNS[a[1] as usize],
            fire: a[2] == 1,
            jump: a[3] == 1,
            drop_flag: a[4] == 1,
        })
    }

    /// Sets the control: speed and turn hold until the next action; fire, jump and drop only when `now` (the
    /// decision's own tick), so one decision fires at most one shot.
    pub fn apply(&self, c: &mut Control, now: bool) {
        c.drive(self.speed, self.turn);
        if now {
            c.fire |= self.fire;
            c.jump |= self.jump;
            c.drop_flag |= self.drop_flag;
        }
    }
}

/// What each kind of event is worth to the learning tank it concerns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewardWeights {
    /// We killed an enemy.
    pub kill: f32,
    /// We died (by anyone, ourselves included).
    pub death: f32,
    /// We killed a team mate.
    pub team_kill: f32,
    /// We captured a team flag.
    pub capture: f32,
    /// Our team's flag was captured by someone else.
    pub captured_against: f32,
    /// We grabbed a flag.
    pub flag_grab: f32,
}

impl Default for RewardWeights {
    fn default() -> Self {
        RewardWeights { kill: 1.0, death: -1.0, team_kill: -1.0, capture: 5.0, captured_against: -5.0, flag_grab: 0.1 }
    }
}

/// The kinds of rewarded events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewardKind {
    /// See [`RewardWeights::kill`].
    Kill,
    /// See [`RewardWeights::death`].
    Death,
    /// See [`RewardWeights::team_kill`].
    TeamKill,
    /// See [`RewardWeights::capture`].
    Capture,
    /// See [`RewardWeights::captured_against`].
    CapturedAgainst,
    /// See [`RewardWeights::flag_grab`].
    FlagGrab,
}

impl RewardKind {
    /// The name used in `info` and the weights' option names.
    pub fn name(self) -> &'static str {
        match self {
            RewardKind::Kill => "kill",
            RewardKind::Death => "death",
            RewardKind::TeamKill => "team_kill",
            RewardKind::Capture => "capture",
            RewardKind::CapturedAgainst => "captured_against",
            RewardKind::FlagGrab => "flag_grab",
        }
    }

    /// Its weight.
    pub fn weight(self, w: &RewardWeights) -> f32 {
        match self {
            RewardKind::Kill => w.kill,
            RewardKind::Death => w.death,
            RewardKind::TeamKill => w.team_kill,
            RewardKind::Capture => w.capture,
            RewardKind::CapturedAgainst => w.captured_against,
            RewardKind::FlagGrab => w.flag_grab,
        }
    }
}

/// One rewarded event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// What.
    pub kind: RewardKind,
    /// The other player (the victim, the killer, the capturer; our own id for a grab).
    pub other: u8,
}

/// The rewarded events one server message means for player `me` of `my_team`; `team_of` gives another player's
/// team (from the roster).
pub fn rewards(event: &Event, me: u8, my_team: Team, team_of: impl Fn(u8) -> Option<Team>, out: &mut Vec<Outcome>) {
    match event {
        Event::Kill { victim, killer, .. } => {
            if *victim == me {
                out.push(Outcome { kind: RewardKind::Death, other: *killer });
            } else if *killer == me {
                let mate = my_team != Team::Rogue && team_of(*victim) == Some(my_team);
                out.push(Outcome { kind: if mate { RewardKind::TeamKill } else { RewardKind::Kill }, other: *victim });
            }
        }
        Event::Grab { player, .. } if *player == me => out.push(Outcome { kind: RewardKind::FlagGrab, other: me }),
        Event::Capture { player, abbv, .. } => {
            if *player == me {
                out.push(Outcome { kind: RewardKind::Capture, other: me });
            } else if team_of_flag(*abbv) == Some(my_team) {
                out.push(Outcome { kind: RewardKind::CapturedAgainst, other: *player });
            }
        }
        _ => {}
    }
}

/// Decisions at a fixed rate of game time. [`DecisionClock::due`] is asked at every tick with the game time; it
/// says whether this tick is a decision and how many decisions were missed since the last one (the ticks between
/// them did not run because the policy, or anything else, held the loop).
#[derive(Debug, Clone)]
pub struct DecisionClock {
    period: f32,
    next: Option<f32>,
    missed: u64,
    decisions: u64,
}

impl DecisionClock {
    /// `hz` decisions per game second (finite, > 0).
    pub fn new(hz: f32) -> DecisionClock {
        DecisionClock { period: 1.0 / hz.max(1e-3), next: None, missed: 0, decisions: 0 }
    }

    /// At game time `t` (seconds): `Some(missed)` when a decision is due now, with the decisions missed just
    /// before it; `None` between decisions. A tick less than a millisecond early counts as on time.
    pub fn due(&mut self, t: f32) -> Option<u64> {
        let next = *self.next.get_or_insert(t);
        if t + 1e-3 < next {
            return None;
        }
        let behind = ((t - next) / self.period).floor().max(0.0) as u64;
        self.next = Some(if behind > 0 { t + self.period } else { next + self.period });
        self.missed += behind;
        self.decisions += 1;
        Some(behind)
    }

    /// Decisions made.
    pub fn decisions(&self) -> u64 {
        self.decisions
    }

    /// Decisions missed in all.
    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// Starts again at the next tick.
    pub fn restart(&mut self) {
        self.next = None;
    }
}

#[cfg(test)]
mod tests;
