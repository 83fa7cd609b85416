//! Dead reckoning (§9.4, `Player::setDeadReckoning` / `getDeadReckoning`): where a tank is `dt` seconds after
//! the state it last sent, as every other client predicts it.
//!
//! The same [`Reckoning`] predicts remote tanks from their last accepted update and our own tank from the last
//! update we sent (the send rule in [`super::updates`] compares our true state against it).
//!
//! * Paused: the tank stays where it was, velocity 0.
//! * Falling: x, y move with the sent velocity; z follows the parabola under `_gravity`; the azimuth turns
//!   only while alive. Once the predicted z reaches the ground limit (0, or `_burrowDepth` with Burrow) with
//!   vz ≤ 0 the tank stays there (the client clears Falling then).
//! * Otherwise z = z0 + vz·dt; on a straight line when |ω| ≤ 0.001 (relative to the physics driver), else on a
//!   circular arc: radius R = s/ω with s the speed along the heading, turn vector T = (R sin a, −R cos a), centre
//!   C = p − T, after φ = ω·dt the tank is at C + rot(φ)·T with velocity rot(φ)·v and azimuth a + φ.
//! * A physics driver under the tank then adds its motion: a slide driver keeps the tank on its straight
//!   relative line, a rotating one turns position and azimuth about its centre and adds the tangential
//!   velocity, a linear one adds its velocity. (The client adds the tangential velocity of the position before
//!   the rotation; we add it where the tank is predicted to be, so the velocity is the true one.)

use std::time::Instant;

use glam::{Vec2, Vec3};

use crate::bzflag::consts::PlayerStatus;
use crate::bzflag::msg::PlayerUpdate;
use crate::bzflag::world::PhysicsDriver;

/// Largest coordinate or speed accepted from the wire; anything bigger is treated as garbage and zeroed.
pub const MAX_WIRE_VALUE: f32 = 1.0e6;

/// Replaces a non-finite or absurd value with 0.
pub fn sane(v: f32) -> f32 {
    if v.is_finite() && v.abs() <= MAX_WIRE_VALUE {
        v
    } else {
        0.0
    }
}

/// [`sane`] on every component.
pub fn sane3(v: [f32; 3]) -> Vec3 {
    Vec3::new(sane(v[0]), sane(v[1]), sane(v[2]))
}

/// The part of a physics driver that moves tanks.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DriverMotion {
    /// Linear velocity.
    pub linear: Vec3,
    /// Angular velocity (rad/s) about `angular_pos`.
    pub angular_vel: f32,
    /// Centre of the rotation.
    pub angular_pos: Vec2,
    /// A slide (slippery) driver.
    pub slide: bool,
    /// A death driver (touching it kills).
    pub death: bool,
}

impl DriverMotion {
    /// From a world physics driver (sanitised).
    pub fn of(d: &PhysicsDriver) -> DriverMotion {
        DriverMotion {
            linear: sane3(d.linear.to_array()),
            angular_vel: sane(d.angular_velocity),
            angular_pos: Vec2::new(sane(d.angular_pos[0]), sane(d.angular_pos[1])),
            slide: d.slide_time > 0.0,
            death: !d.death_message.is_empty(),
        }
    }

    /// The driver with index `index` (as carried by `PlayerUpdate::phydrv`), if it exists.
    pub fn lookup(drivers: &[PhysicsDriver], index: i32) -> Option<DriverMotion> {
        usize::try_from(index).ok().and_then(|i| drivers.get(i)).map(DriverMotion::of)
    }
}

/// A predicted state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// Position (bottom centre of the tank).
    pub pos: Vec3,
    /// Velocity.
    pub vel: Vec3,
    /// Azimuth (rad, not wrapped).
    pub azimuth: f32,
    /// Still falling at that time.
    pub falling: bool,
}

fn rot(v: Vec2, c: f32, s: f32) -> Vec2 {
    Vec2::new(v.x * c - v.y * s, v.y * c + v.x * s)
}

/// The state a tank last sent, prepared for prediction (the client's `input*` fields).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reckoning {
    /// Status bits sent.
    pub status: PlayerStatus,
    /// Position sent.
    pub pos: Vec3,
    /// Velocity sent.
    pub vel: Vec3,
    /// Azimuth sent.
    pub azimuth: f32,
    /// Angular velocity sent.
    pub ang_vel: f32,
    /// Physics driver index sent (−1 none).
    pub phydrv: i32,
    /// The driver's motion, when it exists in the world.
    pub driver: Option<DriverMotion>,
    rel_vel: Vec2,
    rel_ang_vel: f32,
    turning: bool,
    turn_center: Vec2,
    turn_vector: Vec2,
}

impl Reckoning {
    /// Prepares a sent state. Every value is sanitised; `drivers` are the world's physics drivers.
    pub fn new(u: &PlayerUpdate, drivers: &[PhysicsDriver]) -> Reckoning {
        let phydrv = if u.status.contains(PlayerStatus::ON_DRIVER) { u.phydrv } else { -1 };
        Reckoning::from_parts(
            u.status,
            sane3(u.pos),
            sane3(u.vel),
            sane(u.azimuth),
            sane(u.ang_vel),
            phydrv,
            DriverMotion::lookup(drivers, phydrv),
        )
    }

    /// Prepares a state given as parts (our own tank). Values are sanitised.
    pub fn from_parts(
        status: PlayerStatus,
        pos: Vec3,
        vel: Vec3,
        azimuth: f32,
        ang_vel: f32,
        phydrv: i32,
        driver: Option<DriverMotion>,
    ) -> Reckoning {
        let pos = sane3(pos.to_array());
        let vel = sane3(vel.to_array());
        let azimuth = sane(azimuth);
        let ang_vel = sane(ang_vel);
        // Motion relative to the driver (`calcRelativeMotion`).
        let mut rel_vel = vel.truncate();
        let mut rel_ang_vel = ang_vel;
        if let Some(d) = driver {
            rel_vel -= d.linear.truncate();
            if d.angular_vel != 0.0 {
                let dp = pos.truncate() - d.angular_pos;
                rel_vel.x += d.angular_vel * dp.y;
                rel_vel.y -= d.angular_vel * dp.x;
                rel_ang_vel = ang_vel - d.angular_vel;
            }
        }
        let (s, c) = azimuth.sin_cos();
        let rel_speed = rel_vel.x * c + rel_vel.y * s;
        let mut r = Reckoning {
            status,
            pos,
            vel,
            azimuth,
            ang_vel,
            phydrv,
            driver,
            rel_vel,
            rel_ang_vel,
            turning: false,
            turn_center: Vec2::ZERO,
            turn_vector: Vec2::ZERO,
        };
        if rel_ang_vel.abs() > 0.001 {
            let radius = rel_speed / rel_ang_vel;
            if radius.is_finite() {
                r.turning = true;
                r.turn_vector = Vec2::new(s * radius, -c * radius);
                r.turn_center = pos.truncate() - r.turn_vector;
            }
        }
        r
    }

    /// True when the prediction turns on a circular arc.
    pub fn is_turning(&self) -> bool {
        self.turning
    }

    /// The prediction `dt` seconds after the state was sent, without any ground clamp (`getDeadReckoning`).
    pub fn raw(&self, dt: f32, gravity: f32) -> Pose {
        let dt = sane(dt);
        let mut azimuth = self.azimuth;
        if self.status.contains(PlayerStatus::PAUSED) {
            return Pose { pos: self.pos, vel: Vec3::ZERO, azimuth, falling: false };
        }
        if self.status.contains(PlayerStatus::FALLING) {
            let pos = Vec3::new(
                self.pos.x + dt * self.vel.x,
                self.pos.y + dt * self.vel.y,
                self.pos.z + self.vel.z * dt + 0.5 * gravity * dt * dt,
            );
            if self.status.contains(PlayerStatus::ALIVE) {
                azimuth += dt * self.ang_vel;
            }
            let vel = Vec3::new(self.vel.x, self.vel.y, self.vel.z + gravity * dt);
            return Pose { pos, vel, azimuth, falling: true };
        }
        let z = self.pos.z + self.vel.z * dt;
        let (mut p, mut v) = if !self.turning {
            (self.pos.truncate() + self.rel_vel * dt, self.rel_vel)
        } else {
            let angle = dt * self.rel_ang_vel;
            azimuth += angle;
            let (s, c) = angle.sin_cos();
            (self.turn_center + rot(self.turn_vector, c, s), rot(self.rel_vel, c, s))
        };
        if let Some(d) = self.driver {
            if d.slide {
                p = self.pos.truncate() + self.rel_vel * dt;
                v = self.rel_vel;
            } else {
                if d.angular_vel != 0.0 {
                    let angle = dt * d.angular_vel;
                    azimuth += angle;
                    let (s, c) = angle.sin_cos();
                    let dp = rot(p - d.angular_pos, c, s);
                    p = d.angular_pos + dp;
                    v += Vec2::new(-dp.y, dp.x) * d.angular_vel;
                }
                p += d.linear.truncate() * dt;
                v += d.linear.truncate();
            }
        }
        Pose { pos: p.extend(z), vel: v.extend(self.vel.z), azimuth, falling: false }
    }

    /// The prediction `dt` seconds later, stopped at `ground` (0, or `_burrowDepth` for a Burrow carrier): below
    /// it with vz ≤ 0 the tank is put on it with vz = 0 and Falling cleared, as `doDeadReckoning` does (x and y
    /// go on along the fall's straight line; the official client's later frames restart from the sent position,
    /// a quirk not copied).
    pub fn at(&self, dt: f32, gravity: f32, ground: f32) -> Pose {
        let p = self.raw(dt, gravity);
        if p.pos.z >= ground || p.vel.z > 0.0 {
            return p;
        }
        Pose {
            pos: p.pos.truncate().extend(ground),
            vel: p.vel.truncate().extend(0.0),
            azimuth: p.azimuth,
            falling: false,
        }
    }
}

/// A remote tank's reckoning state: its last accepted update and when it was received.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RemoteTank {
    /// The prepared state.
    pub reckoning: Reckoning,
    /// `order` of the update (later updates with a lower or equal order are dropped).
    pub order: i32,
    /// Local time the update was received.
    pub received: Instant,
    /// The sender's timestamp.
    pub timestamp: f32,
}

/// Where a remote tank is at a given time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RemotePose {
    /// The predicted pose.
    pub pose: Pose,
    /// Seconds since its last update.
    pub age: f32,
    /// More than `_notRespondingTime` without an update (only for live tanks).
    pub not_responding: bool,
}

impl RemoteTank {
    /// Starts from an update received at `now`.
    pub fn new(u: &PlayerUpdate, now: Instant, drivers: &[PhysicsDriver]) -> RemoteTank {
        RemoteTank {
            reckoning: Reckoning::new(u, drivers),
            order: u.order,
            received: now,
            timestamp: sane(u.timestamp),
        }
    }

    /// Takes a newer update; returns false (and changes nothing) when its `order` is not above the last one.
    pub fn accept(&mut self, u: &PlayerUpdate, now: Instant, drivers: &[PhysicsDriver]) -> bool {
        if u.order <= self.order {
            return false;
        }
        *self = RemoteTank::new(u, now, drivers);
        true
    }

    /// The tank at local time `now`. `gravity` is `_gravity`; `ground` is 0 (or `_burrowDepth` when it carries
    /// Burrow); `not_responding_time` is `_notRespondingTime`.
    pub fn at(&self, now: Instant, gravity: f32, ground: f32, not_responding_time: f32) -> RemotePose {
        let age = now.saturating_duration_since(self.received).as_secs_f32();
        let pose = self.reckoning.at(age.min(3600.0), gravity, ground);
        RemotePose {
            pose,
            age,
            not_responding: self.reckoning.status.contains(PlayerStatus::ALIVE) && age > not_responding_time,
        }
    }
}
