//! Victim-side hit detection (§9.6, `LocalPlayer::checkHit` and the shot strategies' `checkHit`), the
//! messages a hit makes us send (§8.5, `playing.cxx`), and the server's end-shot accounting (§11).
//!
//! Each tick, call [`check_hits`] with our tank's motion over the tick ([`Victim`]) and every live shot with its
//! age at the start and end of the tick ([`HitCandidate`]). The earliest hit wins; [`hit_messages`] then gives
//! what the official client sends, in its order: `MsgShotEnd(shooter, id, 1)` if the shot type stops on a hit,
//! then for a Thief shot `MsgTransferFlag` (when we carry a flag), otherwise `MsgDropFlag` (when we carry a
//! flag) and `MsgKilled` unless the flag was a Shield.
//!
//! The test: for each segment of the shot overlapping the tick, the shot's ray relative to the tank's centre
//! (its position plus half its height, moving with its velocity over the tick) must come within 0.99 × the tank
//! radius (scaled by Obesity, Tiny, Thief); a Narrow tank is a thin box (half-length `_tankLength/2`, half-width
//! `_shotRadius`, the tank's height) instead. Beams (Laser, Thief) hit anything their whole path touches
//! during their lifetime, except the shooter's own first laser segment; a Shock Wave hits every tank whose
//! position is inside its sphere, even inside buildings or zoned; a missile is harmless for its first
//! `_gmActivationTime` seconds.

use glam::Vec3;

use super::physics::{flag, FlagEffect, Physics};
use super::shots::{LiveShot, ShotKind};
use crate::bzflag::consts::{kill_reason, Team};
use crate::bzflag::msg::{Abbv, ClientMsg};

/// Our tank as a target over one tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Victim {
    /// Our id.
    pub id: u8,
    /// Our team.
    pub team: Team,
    /// Flag we carry (`NONE` for none).
    pub flag: Abbv,
    /// Phantom-zoned (PZ with its effect active).
    pub zoned: bool,
    /// Position (bottom centre) at the start of the tick.
    pub pos: Vec3,
    /// Velocity over the tick (displacement / dt).
    pub vel: Vec3,
    /// Azimuth.
    pub azimuth: f32,
    /// While the tank crosses a teleporter: the plane (unit normal, offset: n·p + d) behind which hits do not
    /// count (see `Tank::crossing_plane`).
    pub crossing: Option<(Vec3, f32)>,
}

/// A shot to test, with its age at the start and the end of the tick.
#[derive(Debug, Clone, Copy)]
pub struct HitCandidate<'a> {
    /// The shot.
    pub shot: &'a LiveShot,
    /// Its shooter is paused (its shots do not count).
    pub shooter_paused: bool,
    /// Shot age at the start of the tick.
    pub t_prev: f32,
    /// Shot age at the end of the tick.
    pub t_now: f32,
}

impl<'a> HitCandidate<'a> {
    /// The candidate for a tick from local time `prev` to `now`.
    pub fn over(shot: &'a LiveShot, prev: std::time::Instant, now: std::time::Instant, shooter_paused: bool) -> Self {
        HitCandidate { shot, shooter_paused, t_prev: shot.age(prev), t_now: shot.age(now) }
    }
}

/// The shot that hit us.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HitReport {
    /// Shooter.
    pub shooter: u8,
    /// Shot id.
    pub shot_id: u16,
    /// Flag of the shot.
    pub flag: Abbv,
    /// Kind of the shot.
    pub kind: ShotKind,
    /// Seconds into the tick.
    pub time: f32,
    /// Where the shot met the tank.
    pub position: Vec3,
}

impl HitReport {
    /// Whether the hit ends the shot (then the victim sends `MsgShotEnd`).
    pub fn stops_shot(&self) -> bool {
        self.kind.stopped_by_hit()
    }
}

/// The earliest hit on `v` among `shots` during a tick of `dt` seconds, if any.
pub fn check_hits<'a>(
    v: &Victim,
    shots: impl IntoIterator<Item = HitCandidate<'a>>,
    dt: f32,
    phys: &Physics,
) -> Option<HitReport> {
    let mut best: Option<HitReport> = None;
    for c in shots {
        if let Some((t, p)) = shot_hits(v, &c, dt, phys) {
            if best.is_none_or(|b| t < b.time) {
                best = Some(HitReport {
                    shooter: c.shot.shooter,
                    shot_id: c.shot.shot_id,
                    flag: c.shot.flag,
                    kind: c.shot.kind,
                    time: t,
                    position: p,
                });
            }
        }
    }
    best
}

/// Whether a shot can hit a tank at all, before any geometry: the filters of `LocalPlayer::checkHit` (§9.6).
/// A tank with id `id`, on `team`, carrying `carried`, `zoned` or not; `shooter_paused` when the shot's shooter
/// is paused.
pub fn can_hit(
    id: u8,
    team: Team,
    carried: Abbv,
    zoned: bool,
    s: &LiveShot,
    shooter_paused: bool,
    phys: &Physics,
) -> bool {
    if shooter_paused || s.ended {
        return false;
    }
    let own = s.shooter == id;
    if own && matches!(s.kind, ShotKind::ShockWave | ShotKind::Thief) {
        return false;
    }
    if team != Team::Rogue && !phys.team_kills() && s.kind != ShotKind::Thief && s.team == team && !own {
        return false;
    }
    if zoned && !matches!(s.kind, ShotKind::ShockWave | ShotKind::SuperBullet | ShotKind::PhantomZone) {
        return false;
    }
    if carried == flag::CLOAKING && s.kind == ShotKind::Laser {
        return false;
    }
    s.kind != ShotKind::PhantomZone || zoned
}

/// Whether (and when in the tick, where) one shot hits `v`, after the filters of [`can_hit`].
pub fn shot_hits(v: &Victim, c: &HitCandidate<'_>, dt: f32, phys: &Physics) -> Option<(f32, Vec3)> {
    let dt = if dt.is_finite() { dt.clamp(0.0, 10.0) } else { 0.0 };
    if !can_hit(v.id, v.team, v.flag, v.zoned, c.shot, c.shooter_paused, phys) {
        return None;
    }
    let hit = raw_hit(v, c, dt, phys)?;
    if let Some((n, d)) = v.crossing {
        if n.dot(hit.1) + d < 0.0 {
            return None;
        }
    }
    Some(hit)
}

fn raw_hit(v: &Victim, c: &HitCandidate<'_>, dt: f32, phys: &Physics) -> Option<(f32, Vec3)> {
    let s = c.shot;
    let scale = FlagEffect::of(v.flag, phys);
    let radius = scale.length * phys.tank_radius;
    let height = scale.height * phys.tank_height;
    let centre0 = v.pos + Vec3::new(0.0, 0.0, 0.5 * height);
    let shape = if v.flag == flag::NARROW {
        Shape::Block { half_length: 0.5 * phys.tank_length, half_width: phys.shot_radius, height, angle: v.azimuth }
    } else {
        Shape::Sphere { radius: 0.99 * radius, limit: radius }
    };
    match s.kind {
        ShotKind::ShockWave => {
            let r = s.shock_radius(c.t_now, phys)?;
            if s.expired_at(c.t_now) {
                return None;
            }
            let p = v.pos + v.vel * dt;
            (p.distance_squared(s.start) <= r * r).then_some((0.0, p))
        }
        k if k.is_beam() => {
            if s.expired_at(c.t_now) {
                return None;
            }
            let centre = centre0 + v.vel * dt;
            let mut best: Option<(f32, Vec3)> = None;
            for (i, seg) in s.segments.iter().enumerate() {
                if i == 0 && s.kind == ShotKind::Laser && s.shooter == v.id {
                    continue;
                }
                let o = seg.start - centre;
                if let Some(t) = shape.first_time(o, seg.velocity, 0.0, seg.t1 - seg.t0) {
                    let at = seg.t0 + t;
                    if best.is_none_or(|b| at < b.0) {
                        best = Some((at, centre + o + seg.velocity * t));
                    }
                }
            }
            best.map(|(_, p)| (0.0, p))
        }
        _ => {
            let segs: &[_] = match (&s.missile, s.kind) {
                (Some(m), ShotKind::GuidedMissile) => {
                    if c.t_now < phys.gm_activation_time {
                        return None;
                    }
                    &m.recent
                }
                _ => &s.segments,
            };
            let mut best: Option<(f32, Vec3)> = None;
            for seg in segs {
                if seg.t1 <= c.t_prev || seg.t0 > c.t_now {
                    continue;
                }
                let lo = (seg.t0 - c.t_prev).max(0.0);
                let hi = (seg.t1 - c.t_prev).min(dt);
                if hi < lo {
                    continue;
                }
                let o = seg.start + seg.velocity * (c.t_prev - seg.t0) - centre0;
                let d = seg.velocity - v.vel;
                if let Some(t) = shape.first_time(o, d, lo, hi) {
                    if best.is_none_or(|b| t < b.0) {
                        best = Some((t, centre0 + v.vel * t + o + d * t));
                    }
                }
            }
            best
        }
    }
}

/// What a shot must come within, relative to the tank's centre.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// `rayAtDistanceFromOrigin(0.99 r)`, confirmed against r.
    Sphere { radius: f32, limit: f32 },
    /// `timeRayHitsBlock`: an upright box centred on the tank's centre.
    Block { half_length: f32, half_width: f32, height: f32, angle: f32 },
}

impl Shape {
    /// The first time in `[lo, hi]` at which `o + t·d` is in the shape.
    fn first_time(&self, o: Vec3, d: Vec3, lo: f32, hi: f32) -> Option<f32> {
        if !(o.is_finite() && d.is_finite() && lo.is_finite() && hi.is_finite()) || hi < lo {
            return None;
        }
        match *self {
            Shape::Sphere { radius, limit } => {
                let r2 = radius * radius;
                let p = o + d * lo;
                if p.length_squared() <= r2 {
                    return Some(lo);
                }
                let a = d.length_squared();
                if a <= 0.0 {
                    return None;
                }
                let b = o.dot(d);
                let disc = b * b - a * (o.length_squared() - r2);
                if disc < 0.0 {
                    return None;
                }
                let t = (-b - disc.sqrt()) / a;
                let at = o + d * t;
                (t >= lo && t <= hi && at.length_squared() < limit * limit).then_some(t)
            }
            Shape::Block { half_length, half_width, height, angle } => {
                let (s, c) = (-angle).sin_cos();
                let local = |v: Vec3| Vec3::new(c * v.x - s * v.y, s * v.x + c * v.y, v.z);
                let (o, d) = (local(o), local(d));
                let min = Vec3::new(-half_length, -half_width, -0.5 * height);
                let max = Vec3::new(half_length, half_width, 0.5 * height);
                let (mut t0, mut t1) = (lo, hi);
                for k in 0..3 {
                    let (ok, dk, mn, mx) = (o[k], d[k], min[k], max[k]);
                    if dk.abs() < 1.0e-12 {
                        if ok < mn || ok > mx {
                            return None;
                        }
                        continue;
                    }
                    let (mut a, mut b) = ((mn - ok) / dk, (mx - ok) / dk);
                    if a > b {
                        std::mem::swap(&mut a, &mut b);
                    }
                    t0 = t0.max(a);
                    t1 = t1.min(b);
                    if t0 > t1 {
                        return None;
                    }
                }
                Some(t0)
            }
        }
    }
}

/// The messages the official client sends when `hit` hit us, in order (see the module docs). `my_flag` is the
/// flag we carry (`NONE` for none), `my_pos` our position (where a dropped flag is dropped).
pub fn hit_messages(hit: &HitReport, me: u8, my_flag: Abbv, my_pos: Vec3) -> Vec<ClientMsg> {
    let mut out = Vec::with_capacity(3);
    if hit.stops_shot() {
        out.push(ClientMsg::ShotEnd { shooter: hit.shooter, shot_id: hit.shot_id as i16, reason: 1 });
    }
    let carrying = !my_flag.is_none();
    if hit.kind == ShotKind::Thief {
        if carrying {
            out.push(ClientMsg::TransferFlag { from: me, to: hit.shooter });
        }
        return out;
    }
    if carrying {
        out.push(ClientMsg::DropFlag { pos: my_pos.to_array() });
    }
    if my_flag != flag::SHIELD {
        out.push(ClientMsg::Killed {
            killer: hit.shooter,
            reason: kill_reason::GOT_SHOT,
            shot_id: hit.shot_id as i16,
            flag: hit.flag,
            phydrv: None,
        });
    }
    out
}

/// Steamroller: whether a tank at `other` with radius `other_radius` runs over our tank at `me` with radius
/// `my_radius` (height difference counted double; `playing.cxx`).
pub fn run_over(me: Vec3, my_radius: f32, other: Vec3, other_radius: f32, phys: &Physics) -> bool {
    let d = me - other;
    let dist = d.truncate().length().hypot(d.z * 2.0);
    dist < my_radius + phys.sr_radius_mult * other_radius
}

/// Another tank, as the steamroller rule needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Roller {
    /// Its id.
    pub id: u8,
    /// Its team.
    pub team: Team,
    /// Its flag.
    pub flag: Abbv,
    /// Its (predicted) position.
    pub pos: Vec3,
    /// Its hit radius (`_tankRadius` scaled by its flag).
    pub radius: f32,
    /// Alive.
    pub alive: bool,
    /// Paused.
    pub paused: bool,
    /// Phantom-zoned.
    pub zoned: bool,
}

/// `playing.cxx`'s steamroller rule: the first of `others` that runs us over (we are `v`, at `my_pos` with
/// `my_radius`): a Steamroller carrier, or anyone alive and not zoned while we are burrowed (z < 0); never from
/// below ground, never a team mate without team kills, never while we are zoned. Send
/// `MsgKilled(killer = its id, reason 2)` (dropping our flag first).
pub fn run_over_by(
    v: &Victim,
    my_pos: Vec3,
    my_radius: f32,
    others: impl IntoIterator<Item = Roller>,
    phys: &Physics,
) -> Option<u8> {
    if v.zoned {
        return None;
    }
    others.into_iter().find_map(|o| {
        let rolls = o.flag == flag::STEAMROLLER || (my_pos.z < 0.0 && o.alive && !o.zoned);
        let mate = o.team != Team::Rogue && !phys.team_kills() && o.team == v.team;
        (o.id != v.id
            && !o.paused
            && rolls
            && o.pos.z >= 0.0
            && !mate
            && run_over(my_pos, my_radius, o.pos, o.radius, phys))
        .then_some(o.id)
    })
}

/// The server's end-shot balance for one player (`endShotCredit`): each `MsgShotEnd` sent adds one (and, while
/// holding Shield, arms a one-credit refund paid when the Shield is dropped), each `MsgKilled` sent and each GM
/// shot fired removes one. A balance above `_endShotDetection` gets the player kicked ("wrong end shots").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndShotCredit {
    credit: i32,
    shield: i32,
}

impl EndShotCredit {
    /// A fresh balance (the server resets it when the player joins).
    pub fn new() -> EndShotCredit {
        EndShotCredit::default()
    }

    /// The balance.
    pub fn credit(&self) -> i32 {
        self.credit
    }

    /// Accounts for a message we send while carrying `holding`.
    pub fn record(&mut self, msg: &ClientMsg, holding: Abbv) {
        match msg {
            ClientMsg::ShotEnd { .. } => {
                self.credit += 1;
                if holding == flag::SHIELD {
                    self.shield = 1;
                }
            }
            ClientMsg::Killed { .. } => self.credit -= 1,
            ClientMsg::ShotBegin(f) if f.flag == flag::GUIDED_MISSILE => self.credit -= 1,
            ClientMsg::DropFlag { .. } if holding == flag::SHIELD => {
                self.credit -= self.shield;
                self.shield = 0;
            }
            _ => {}
        }
    }

    /// Whether sending `msgs` (in order, while carrying `holding`) keeps the balance at or below `limit`
    /// (`_endShotDetection`; a limit ≤ 0 disables the check) at every step.
    pub fn allows(&self, msgs: &[ClientMsg], holding: Abbv, limit: f32) -> bool {
        let limit = limit as i32;
        if limit <= 0 {
            return true;
        }
        let mut c = *self;
        let mut held = holding;
        for m in msgs {
            c.record(m, held);
            if matches!(m, ClientMsg::DropFlag { .. }) {
                held = flag::NONE;
            }
            if c.credit > limit {
                return false;
            }
        }
        true
    }
}
