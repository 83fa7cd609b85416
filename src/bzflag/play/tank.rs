//! Our own tank (`LocalPlayer::doUpdateMotion`, §9.2): driving by speed and turn fractions within the server's
//! limits, accelerations and flag modifiers; collisions with the world (no driving through solids, climbing only
//! below `_maxBumpHeight`, sliding along walls); jumping and falling under `_gravity`; physics drivers (linear,
//! rotating, slide, death); water; teleporters (`MsgTeleport` faces and the Teleporting bit); explosion.
//!
//! # Use
//!
//! ```text
//! tank.spawn(pos, azimuth)                       on MsgAlive for us
//! let r = tank.step(dt, controls, &phys, &world) every tick
//! r.teleported → send MsgTeleport(from, to)       (then the Teleporting bit makes the send rule fire)
//! r.death      → send tank.death_messages(..)     (drop the flag, then MsgKilled), then tank.explode()
//! tank.explode()                                  when we are killed (MsgKilled about us, a hit, a capture)
//! ```
//!
//! # Collision model
//!
//! Like the client, each step moves the tank by `velocity · dt`; if the tank box then overlaps an obstacle it
//! is not allowed to drive through, the latest free time is found by bisection (7 halvings), the tank is put
//! there, and the velocity loses its component into the obstacle's surface (sliding along it); up to four such
//! rounds per step. A collision caused by the vertical motion alone is a landing (on a roof: the tank stands
//! on the building) or a bump of the head. A flat-topped obstacle (box, base, teleporter) whose top is less than
//! `_maxBumpHeight` above the tank is climbed at once. Long steps are split so that no sub-step moves farther
//! than half a tank width, so thin walls cannot be tunnelled. A tank that starts a step overlapping something (e.g. a
//! spawn inside a mesh) may drive out of it: only the outer walls stop it then.
//!
//! Differences from the official client, on purpose: the surface normal comes from the obstacle's geometry (the
//! plane of the solid or mesh face nearest to the tank's centre) instead of `getHitNormal`; the tank's size
//! changes at once when a flag changes it (no `_flagEffectTime` animation); Bouncy's random jumps are not made;
//! a death physics driver counts when it is the surface the tank stands on.

use glam::{Vec2, Vec3};

use super::hit::Victim;
use super::physics::{flag, FlagEffect, Physics};
use super::reckon::{sane, sane3, DriverMotion};
use super::shots::Muzzle;
use super::updates::OwnState;
use crate::bzflag::consts::{kill_reason, PlayerStatus, Team};
use crate::bzflag::msg::{wrap_angle, Abbv, ClientMsg};
use crate::bzflag::world::{Geometry, ObstacleId, ObstacleKind, TankBox, WorldModel};

/// What the driver asks for this tick.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Controls {
    /// Speed as a fraction of `_tankSpeed`: −0.5 (full reverse) to 1 (full ahead).
    pub speed: f32,
    /// Turn rate as a fraction of `_tankAngVel`: −1 (full right) to 1 (full left).
    pub turn: f32,
    /// Jump (when allowed).
    pub jump: bool,
}

/// Where the tank is (`LocalPlayer::Location`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// Not spawned, or the explosion is over.
    Dead,
    /// Blowing up (`_explodeTime`).
    Exploding,
    /// On the ground.
    OnGround,
    /// Inside an obstacle (Oscillation Overthruster, Phantom Zone).
    InBuilding,
    /// On top of an obstacle.
    OnBuilding,
    /// Jumping or falling.
    InAir,
}

/// A death the tank found by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Death {
    /// Sank below the water level.
    Water,
    /// Touched a death physics driver (its index).
    PhysicsDriver(u32),
}

/// What happened during a step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepReport {
    /// The tank passed a teleporter: send `MsgTeleport(from, to)`.
    pub teleported: Option<(u16, u16)>,
    /// The tank died by itself: send [`Tank::death_messages`] and call [`Tank::explode`].
    pub death: Option<Death>,
    /// Jumped this step.
    pub jumped: bool,
    /// Landed this step.
    pub landed: bool,
    /// The explosion ended: the tank is dead and may ask to respawn (`MsgAlive`).
    pub explosion_over: bool,
    /// Paused longer than `_pauseDropTime` with a flag: send `MsgDropFlag` (once per pause).
    pub pause_drop: bool,
}

/// Our tank.
#[derive(Debug, Clone, PartialEq)]
pub struct Tank {
    /// Position (bottom centre).
    pub pos: Vec3,
    /// Velocity.
    pub vel: Vec3,
    /// Azimuth, radians in [−π, π).
    pub azimuth: f32,
    /// Angular velocity.
    pub ang_vel: f32,
    /// Status bits as sent in updates.
    pub status: PlayerStatus,
    /// Location.
    pub location: Location,
    /// Flag carried (`NONE` for none). Set it when the server says we grabbed, dropped or lost a flag.
    pub flag: Abbv,
    /// Handicap 0..1 (from `MsgHandicap`, when the game has the handicap option).
    pub handicap: f32,
    /// Physics driver under the tank.
    pub phydrv: Option<u32>,
    /// Sound bits for the next update (jump 1, wings 2, bounce 4); cleared by [`Tank::take_sounds`].
    pub sounds: u8,
    /// While crossing a teleporter: the plane behind which hits do not count.
    pub crossing_plane: Option<(Vec3, f32)>,
    /// Position at the start of the last step and the velocity over it (for hit detection).
    pub last_motion: (Vec3, Vec3),
    desired_speed: f32,
    desired_ang_vel: f32,
    last_speed: f32,
    wings_flaps: i32,
    clock: f32,
    agility_time: f32,
    explode_start: f32,
    teleport_start: f32,
    last_flat_top: bool,
    paused_for: f32,
    pause_dropped: bool,
    rng: u64,
}

impl Tank {
    /// A dead tank; `seed` seeds the choice among several teleporter destinations.
    pub fn new(seed: u64) -> Tank {
        Tank {
            pos: Vec3::ZERO,
            vel: Vec3::ZERO,
            azimuth: 0.0,
            ang_vel: 0.0,
            status: PlayerStatus::empty(),
            location: Location::Dead,
            flag: flag::NONE,
            handicap: 0.0,
            phydrv: None,
            sounds: 0,
            crossing_plane: None,
            last_motion: (Vec3::ZERO, Vec3::ZERO),
            desired_speed: 0.0,
            desired_ang_vel: 0.0,
            last_speed: 0.0,
            wings_flaps: 0,
            clock: 0.0,
            agility_time: -1.0e9,
            explode_start: 0.0,
            teleport_start: -1.0e9,
            last_flat_top: true,
            paused_for: 0.0,
            pause_dropped: false,
            rng: seed | 1,
        }
    }

    /// `LocalPlayer::restart`: alive at `pos` facing `azimuth`, at rest, without a flag.
    pub fn spawn(&mut self, pos: [f32; 3], azimuth: f32) {
        self.pos = sane3(pos);
        self.azimuth = wrap_angle(sane(azimuth));
        self.vel = Vec3::ZERO;
        self.ang_vel = 0.0;
        self.flag = flag::NONE;
        self.phydrv = None;
        self.location = if self.pos.z > 0.0 { Location::OnBuilding } else { Location::OnGround };
        self.status = PlayerStatus::ALIVE;
        self.desired_speed = 0.0;
        self.desired_ang_vel = 0.0;
        self.last_speed = 0.0;
        self.crossing_plane = None;
        self.last_motion = (self.pos, Vec3::ZERO);
    }

    /// Blows the tank up (`Player::setExplode`): Exploding and Falling, no longer Alive or Paused.
    pub fn explode(&mut self) {
        if !self.is_alive() {
            return;
        }
        self.status = (self.status | PlayerStatus::EXPLODING | PlayerStatus::FALLING)
            - (PlayerStatus::ALIVE | PlayerStatus::PAUSED);
        self.location = Location::Exploding;
        self.explode_start = self.clock;
        self.flag = flag::NONE;
    }

    /// Pauses or resumes (only while alive; send `MsgPause` too).
    pub fn set_paused(&mut self, paused: bool) {
        if self.is_alive() {
            self.status.set(PlayerStatus::PAUSED, paused);
        }
    }

    /// Alive.
    pub fn is_alive(&self) -> bool {
        self.status.contains(PlayerStatus::ALIVE)
    }

    /// Paused.
    pub fn is_paused(&self) -> bool {
        self.status.contains(PlayerStatus::PAUSED)
    }

    /// Phantom-zoned: carrying PZ with its effect on (toggled by passing a teleporter).
    pub fn is_zoned(&self) -> bool {
        self.flag == flag::PHANTOM_ZONE && self.status.contains(PlayerStatus::FLAG_ACTIVE)
    }

    /// Seconds since the tank was created (the sum of every `dt` stepped).
    pub fn clock(&self) -> f32 {
        self.clock
    }

    /// Half-length, half-width and height with the flag's size effect.
    pub fn dimensions(&self, phys: &Physics) -> Vec3 {
        let e = FlagEffect::of(self.flag, phys);
        Vec3::new(e.length * 0.5 * phys.tank_length, e.width * 0.5 * phys.tank_width, e.height * phys.tank_height)
    }

    /// Hit-sphere radius (`getRadius`: Obesity, Tiny, Thief scale it; Narrow does not).
    pub fn radius(&self, phys: &Physics) -> f32 {
        FlagEffect::of(self.flag, phys).length * phys.tank_radius
    }

    /// The state the update send rule needs.
    pub fn own_state(&self) -> OwnState {
        OwnState {
            status: self.status,
            pos: self.pos,
            vel: self.vel,
            azimuth: self.azimuth,
            ang_vel: self.ang_vel,
            phydrv: self.phydrv.map_or(-1, |d| d as i32),
            sounds: self.sounds,
            burrow: self.flag == flag::BURROW,
        }
    }

    /// Takes the pending sound bits (after building an update).
    pub fn take_sounds(&mut self) -> u8 {
        std::mem::take(&mut self.sounds)
    }

    /// What our shots are fired from.
    pub fn muzzle(&self, team: Team) -> Muzzle {
        Muzzle {
            pos: self.pos,
            vel: self.vel,
            azimuth: self.azimuth,
            flag: self.flag,
            flag_active: self.status.contains(PlayerStatus::FLAG_ACTIVE),
            team,
            handicap: self.handicap,
        }
    }

    /// Our tank as a target over the last step, for [`super::hit::check_hits`].
    pub fn victim(&self, id: u8, team: Team) -> Victim {
        Victim {
            id,
            team,
            flag: self.flag,
            zoned: self.is_zoned(),
            pos: self.last_motion.0,
            vel: self.last_motion.1,
            azimuth: self.azimuth,
            crossing: self.crossing_plane,
        }
    }

    /// Whether the firing rules let us shoot now (alive, not paused, not inside a building unless zoned).
    pub fn can_fire(&self) -> bool {
        self.is_alive() && !self.is_paused() && (self.location != Location::InBuilding || self.is_zoned())
    }

    /// The messages for a death found by [`Tank::step`]: `MsgDropFlag` first when carrying a flag, then
    /// `MsgKilled` (reason water, or a physics driver with its index) naming ourselves as the killer. Call before
    /// [`Tank::explode`] (which forgets the flag).
    pub fn death_messages(&self, me: u8, death: Death) -> Vec<ClientMsg> {
        let mut out = Vec::with_capacity(2);
        if !self.flag.is_none() {
            out.push(ClientMsg::DropFlag { pos: self.pos.to_array() });
        }
        let (reason, phydrv) = match death {
            Death::Water => (kill_reason::WATER_DEATH, None),
            Death::PhysicsDriver(d) => (kill_reason::PHYSICS_DRIVER_DEATH, Some(d as i32)),
        };
        out.push(ClientMsg::Killed { killer: me, reason, shot_id: -1, flag: flag::NONE, phydrv });
        out
    }

    fn set_desired(&mut self, c: &Controls, phys: &Physics) {
        let f = self.flag;
        let mut frac = sane(c.speed).clamp(-0.5, 1.0);
        if frac < 0.0 && self.location == Location::InBuilding && f == flag::OSCILLATION {
            frac = 0.0;
        }
        if f == flag::VELOCITY {
            frac *= phys.velocity_ad;
        } else if f == flag::THIEF {
            frac *= phys.thief_vel_ad;
        } else if f == flag::BURROW && self.pos.z < 0.0 {
            frac *= phys.burrow_speed_ad;
        } else if f == flag::FORWARD_ONLY && frac < 0.0 || f == flag::REVERSE_ONLY && frac > 0.0 {
            frac = 0.0;
        } else if f == flag::AGILITY {
            if self.clock - self.agility_time < phys.agility_time_window {
                frac *= phys.agility_ad_vel;
            } else {
                let old = if phys.tank_speed > 0.0 { self.desired_speed / phys.tank_speed } else { 0.0 };
                let old = old.clamp(-0.5, 1.0);
                let limit = if frac < 0.0 { phys.agility_vel_delta / 2.0 } else { phys.agility_vel_delta };
                if (frac - old).abs() > limit {
                    frac *= phys.agility_ad_vel;
                    self.agility_time = self.clock;
                }
            }
        }
        let h = sane(self.handicap).clamp(0.0, 1.0);
        frac *= 1.0 + h * (phys.handicap_vel_ad - 1.0);
        self.desired_speed = phys.tank_speed * frac;

        let mut turn = sane(c.turn).clamp(-1.0, 1.0);
        if turn < 0.0 && f == flag::LEFT_TURN_ONLY || turn > 0.0 && f == flag::RIGHT_TURN_ONLY {
            turn = 0.0;
        }
        if f == flag::QUICK_TURN {
            turn *= phys.angular_ad;
        } else if f == flag::BURROW && self.pos.z < 0.0 {
            turn *= phys.burrow_angular_ad;
        }
        turn *= 1.0 + h * (phys.handicap_ang_ad - 1.0);
        self.desired_ang_vel = turn * phys.tank_ang_vel;
    }

    /// Advances the tank by `dt` seconds with `controls` (see the module docs).
    pub fn step(&mut self, dt: f32, controls: Controls, phys: &Physics, world: &WorldModel) -> StepReport {
        let mut report = StepReport::default();
        let dt = if dt.is_finite() { dt.clamp(0.0, 1.0) } else { 0.0 };
        let start = self.pos;
        // Sub-steps of at most half a tank width, so that no step passes through a thin wall or face.
        let top_speed = phys.max_speed(self.flag) * if self.flag == flag::AGILITY { phys.agility_ad_vel } else { 1.0 };
        let speed = self.vel.length().max(top_speed).max(phys.jump_velocity.abs());
        let n = ((speed * dt / (0.5 * phys.tank_width).max(0.1)).ceil() as usize).clamp(1, 32);
        let sub = dt / n as f32;
        let mut jump = controls.jump;
        for _ in 0..n {
            self.step_once(sub, &controls, jump, phys, world, &mut report);
            jump = false;
        }
        // Over the whole step: where the tank started and its velocity (a teleport restarts the motion).
        self.last_motion = if report.teleported.is_some() || dt <= 0.0 {
            (self.pos, self.vel)
        } else {
            (start, (self.pos - start) / dt)
        };
        report
    }

    fn collide(&self, world: &WorldModel, pos: Vec3, az: f32, dims: Vec3, phased: bool) -> Option<(ObstacleId, bool)> {
        let b = TankBox { pos, angle: az, half_length: dims.x, half_width: dims.y, height: dims.z };
        if !phased {
            return world.tank_collides(&b).map(|id| (id, true));
        }
        let mut hits = Vec::new();
        world.tank_collisions(&b, &mut hits);
        let mut first = None;
        for id in hits {
            let kind = world.obstacle(id).map(|o| o.kind);
            if matches!(kind, Some(ObstacleKind::Wall | ObstacleKind::Teleporter)) {
                return Some((id, true));
            }
            first.get_or_insert((id, false));
        }
        first
    }

    fn rand(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// One sub-step of [`Tank::step`], in the order of `LocalPlayer::doUpdateMotion`: the clock and the pause,
    /// the velocity the tank wants where it is, a jump, the physics driver's push, the move through the world
    /// with its collisions, the world's edge, teleporters, the surface under the tank, and the new state.
    fn step_once(
        &mut self,
        dt: f32,
        controls: &Controls,
        want_jump: bool,
        phys: &Physics,
        world: &WorldModel,
        report: &mut StepReport,
    ) {
        if !self.tick(dt, phys, report) {
            return;
        }
        if self.is_alive() {
            self.set_desired(controls, phys);
        }
        let from = StepStart { location: self.location, pos: self.pos, az: self.azimuth, vel: self.vel };
        let env = StepEnv {
            phys,
            world,
            phased: matches!(self.location, Location::Exploding) || self.flag == flag::OSCILLATION || self.is_zoned(),
            ground_limit: if self.flag == flag::BURROW { phys.burrow_depth } else { 0.0 },
            dims: self.dimensions(phys),
        };
        let (dt, mut v, mut w) = self.wanted_motion(dt, &from, &env, report);
        // Below the floor (deeper than Burrow allows): come back up.
        if from.pos.z < env.ground_limit {
            v.z = v.z.max(-from.pos.z / 2.0 + 0.5);
        }
        // A jump; with `_noClimb`, one from a sloped surface goes straight up.
        if want_jump && self.is_alive() && self.try_jump(phys, &mut v) {
            report.jumped = true;
            if !self.last_flat_top && phys.no_climb {
                v.x = 0.0;
                v.y = 0.0;
            }
        }
        self.add_driver_push(dt, &from, &env, &mut v, &mut w);
        // The speed the tank sets out with, which the measured velocity may not exceed.
        let nominal2 = v.truncate().length_squared();

        let (mut m, on_building, bumped) = self.move_through_world(dt, &from, &env, v, w);

        // Stay inside the world whatever happens (the server kicks beyond worldSize/2 + 10).
        let edge = (phys.half_world() - env.dims.y).max(0.0);
        m.pos.x = m.pos.x.clamp(-edge, edge);
        m.pos.y = m.pos.y.clamp(-edge, edge);

        self.crossing_plane = crossing_plane(world, m.pos, m.az, env.dims);
        self.status.set(PlayerStatus::CROSSING_WALL, self.crossing_plane.is_some());

        if dt > 0.0 {
            measure_velocities(dt, bumped.unwrap_or(from.pos), from.az, nominal2, &mut m);
        }
        if self.is_alive() {
            self.pass_teleporter(&from, &env, &mut m, report);
        }
        self.stand_on_driver(world, on_building, m.pos, report);
        self.finish_step(from.location, m, world, report);
    }

    /// The start of a sub-step (`LocalPlayer::doUpdate` before `doUpdateMotion`): advances the clock, ends the
    /// Teleporting bit after `_teleportTime`, and counts a pause, asking once for `MsgDropFlag` after
    /// `_pauseDropTime` with a flag. Whether the tank moves at all this sub-step (not paused, not dead).
    fn tick(&mut self, dt: f32, phys: &Physics, report: &mut StepReport) -> bool {
        self.clock += dt;
        if self.status.contains(PlayerStatus::TELEPORTING) && self.clock - self.teleport_start >= phys.teleport_time {
            self.status.remove(PlayerStatus::TELEPORTING);
        }
        if self.is_paused() {
            self.paused_for += dt;
            if self.paused_for > phys.pause_drop_time && !self.flag.is_none() && !self.pause_dropped {
                self.pause_dropped = true;
                report.pause_drop = true;
            }
            return false;
        }
        self.paused_for = 0.0;
        self.pause_dropped = false;
        self.location != Location::Dead
    }

    /// The velocity and turn rate the tank wants for this sub-step, by where it is (the `location` switch of
    /// `doUpdateMotion`): an explosion only falls (and ends after `_explodeTime`, which makes the rest of the
    /// sub-step last no time: the returned `dt`); on the ground or a roof the tank drives with its accelerations
    /// and friction (sinking or rising under Burrow, falling off an edge); inside a building at its floor it
    /// drives freely; in the air it keeps its course under `_gravity`, or steers under Wings.
    fn wanted_motion(&mut self, dt: f32, from: &StepStart, env: &StepEnv, report: &mut StepReport) -> (f32, Vec3, f32) {
        let phys = env.phys;
        let mut dt = dt;
        let mut v = from.vel;
        let w;
        match self.location {
            Location::Exploding => {
                if self.clock - self.explode_start >= phys.explode_time {
                    self.status = PlayerStatus::empty();
                    self.location = Location::Dead;
                    report.explosion_over = true;
                    dt = 0.0;
                }
                v.z += phys.gravity * dt;
                w = 0.0;
            }
            Location::OnGround | Location::OnBuilding => {
                let (speed, rate) = self.drive_rates(dt, phys);
                w = rate;
                let angle = from.az + 0.5 * dt * w;
                let mut nv = Vec3::new(speed * angle.cos(), speed * angle.sin(), 0.0);
                self.friction(dt, phys, from.vel, &mut nv);
                if self.flag == flag::WINGS {
                    self.wings_flaps = phys.wings_jump_count;
                }
                if from.pos.z < 0.0 && self.flag == flag::BURROW {
                    nv.z += 4.0 * phys.gravity * dt;
                } else if from.pos.z > env.ground_limit {
                    nv.z += phys.gravity * dt;
                }
                self.last_speed = speed;
                v = nv;
            }
            Location::InBuilding if from.pos.z == env.ground_limit => {
                let (speed, rate) = self.drive_rates(dt, phys);
                w = rate;
                let angle = from.az + 0.5 * dt * w;
                v = Vec3::new(speed * angle.cos(), speed * angle.sin(), 0.0);
                self.last_speed = speed;
            }
            _ => {
                if self.flag == flag::WINGS {
                    w = self.desired_ang_vel;
                    let speed = self.desired_speed;
                    if phys.wings_slide_time > 0.0 {
                        self.slide(dt, phys.wings_slide_time, w, phys, &mut v);
                    } else {
                        let angle = from.az + 0.5 * dt * w;
                        v.x = speed * angle.cos();
                        v.y = speed * angle.sin();
                    }
                    v.z += phys.wings_gravity * dt;
                    self.last_speed = speed;
                } else {
                    v.z += phys.gravity * dt;
                    w = self.ang_vel;
                }
            }
        }
        (dt, v, w)
    }

    /// The push of the physics driver under the tank (`doUpdateMotion`'s `PhysicsDriver` part): its linear
    /// velocity, and either a slide (the tank's own speed blends in over the driver's slide time) or its rotation
    /// about its centre (which also turns the tank).
    fn add_driver_push(&self, dt: f32, from: &StepStart, env: &StepEnv, v: &mut Vec3, w: &mut f32) {
        let driver = self.phydrv.and_then(|i| env.world.physics_drivers.get(i as usize));
        let Some(d) = driver.map(DriverMotion::of) else { return };
        v.z += d.linear.z;
        if d.slide {
            let slide_time = driver.map_or(1.0, |p| p.slide_time);
            self.slide(dt, slide_time, *w, env.phys, v);
        } else {
            v.x += d.linear.x;
            v.y += d.linear.y;
            if d.angular_vel != 0.0 {
                *w += d.angular_vel;
                let dp = from.pos.truncate() - d.angular_pos;
                v.x -= d.angular_vel * dp.y;
                v.y += d.angular_vel * dp.x;
            }
        }
    }

    /// Moves the tank by `v` and `w` over `dt`, resolving collisions (the collision loop of `doUpdateMotion`, see
    /// the module docs): up to four rounds of move, find the latest free time by bisection, meet the surface
    /// there. Sets the location (on the ground, on a building, inside one, in the air) and returns where the tank
    /// ended, whether it stands on a building, and where it was raised to when it climbed a low flat top.
    fn move_through_world(
        &mut self,
        dt: f32,
        from: &StepStart,
        env: &StepEnv,
        v: Vec3,
        w: f32,
    ) -> (Motion, bool, Option<Vec3>) {
        let alive_motion = !matches!(self.location, Location::Dead | Location::Exploding);
        if alive_motion {
            self.location = Location::OnGround;
        }
        // A tank that starts inside something drives out of it: only the outer walls stop it then.
        let stuck = self.collide(env.world, from.pos, from.az, env.dims, env.phased).is_some_and(|(_, e)| e);
        let mut m = Motion { pos: from.pos, az: from.az, vel: v, ang_vel: w };
        let mut time_left = dt;
        let mut last_hit: Option<(ObstacleId, bool)> = None;
        let mut on_building = false;
        let mut bumped: Option<Vec3> = None;
        for _ in 0..4 {
            let (tmp_pos, tmp_az) = (m.pos, m.az);
            m.az = tmp_az + time_left * m.ang_vel;
            m.pos = tmp_pos + m.vel * time_left;
            if env.below_floor(m.pos, m.vel) {
                m.pos.z = env.ground_limit;
                if self.location == Location::Exploding {
                    m.pos.x = tmp_pos.x;
                    m.pos.y = tmp_pos.y;
                }
            }
            let hit = if stuck {
                self.collide_walls(env.world, m.pos, m.az, env.dims)
            } else {
                self.collide(env.world, m.pos, m.az, env.dims, env.phased)
            };
            last_hit = hit;
            // Free, or inside a building it passes through (phased): the move stands.
            let Some((obstacle, expelled)) = hit else { break };
            if !expelled {
                break;
            }
            if from.location != Location::InAir {
                if let Some((pos, raised)) = self.climb(dt, from, env, tmp_pos, tmp_az, &m, obstacle) {
                    // As in the client, the raised position is where this step starts (no upward velocity from
                    // the bump); unlike it, the tank is on the building at once.
                    m.pos = pos;
                    bumped = Some(raised);
                    if alive_motion {
                        self.location = Location::OnBuilding;
                        on_building = true;
                        self.last_flat_top = true;
                    }
                    last_hit = None;
                    break;
                }
            }
            let contact = self.latest_free_time(env, tmp_pos, tmp_az, time_left, &m, obstacle);
            (m.pos, m.az) = env.along(tmp_pos, tmp_az, &m, contact.time);
            time_left -= contact.time;
            let n = self.normal(
                env.world,
                contact.obstacle,
                m.pos,
                m.az,
                contact.pos,
                contact.az,
                env.dims,
                env.phased,
                m.vel,
            );
            if self.meet_surface(env, n, stuck, alive_motion, &mut m) {
                on_building = true;
            }
        }
        // Not standing on anything met on the way: inside a building it passes through, in the air, or on the
        // ground.
        if self.location == Location::OnGround {
            if last_hit.is_some_and(|(_, e)| !e) {
                self.location = Location::InBuilding;
            } else if m.pos.z > 0.0 {
                self.location = Location::InAir;
            }
        }
        if self.location == Location::OnGround {
            self.last_flat_top = true;
        }
        (m, on_building, bumped)
    }

    /// Driving up a small bump (`LocalPlayer`'s `_maxBumpHeight` rule): when `obstacle` is flat-topped and its
    /// top is less than `_maxBumpHeight` above the tank, and the tank fits there, the position raised onto the
    /// top (`.1`) and where the rest of the move takes it from there (`.0`; the raised position itself when that
    /// is blocked).
    #[allow(clippy::too_many_arguments)]
    fn climb(
        &self,
        dt: f32,
        from: &StepStart,
        env: &StepEnv,
        tmp_pos: Vec3,
        tmp_az: f32,
        m: &Motion,
        obstacle: ObstacleId,
    ) -> Option<(Vec3, Vec3)> {
        let top = flat_top(env.world, obstacle)?;
        if !(top > tmp_pos.z + 1.0e-4 && top < tmp_pos.z + env.phys.max_bump_height) {
            return None;
        }
        let raised = Vec3::new(from.pos.x, from.pos.y, top);
        if self.collide(env.world, raised, tmp_az, env.dims, env.phased).is_some() {
            return None;
        }
        let mut pos = raised + Vec3::new(m.vel.x, m.vel.y, 0.0) * (dt * 0.5);
        if self.collide(env.world, pos, m.az, env.dims, env.phased).is_some() {
            pos = raised;
        }
        Some((pos, raised))
    }

    /// `LocalPlayer`'s search for the latest time the tank is still free, moving from `tmp_pos`/`tmp_az` with
    /// `m`'s velocities into `obstacle` within `time_left`: 7 halvings of the interval. Also the first position
    /// found blocked, and by what (for the surface normal); `m`'s position when none was.
    fn latest_free_time(
        &self,
        env: &StepEnv,
        tmp_pos: Vec3,
        tmp_az: f32,
        time_left: f32,
        m: &Motion,
        obstacle: ObstacleId,
    ) -> Contact {
        let (mut search_time, mut step) = (0.0f32, 0.5 * time_left);
        let mut contact = Contact { time: 0.0, pos: m.pos, az: m.az, obstacle };
        for _ in 0..7 {
            if step <= 1.0e-4 {
                break;
            }
            let t = search_time + step;
            let (p, az) = env.along(tmp_pos, tmp_az, m, t);
            match self.collide(env.world, p, az, env.dims, env.phased) {
                Some((o, true)) => {
                    contact.pos = p;
                    contact.az = az;
                    contact.obstacle = o;
                }
                _ => search_time = t,
            }
            step *= 0.5;
        }
        contact.time = search_time;
        contact
    }

    /// What meeting a surface with normal `n` does (`doUpdateMotion` after the search): a surface facing up above
    /// the ground is a roof the tank lands on (returns true when it now stands on a building); otherwise the
    /// velocity loses its component into the surface (sliding along it; a head bump stops rising), the tank backs
    /// off a little, and a nearly head-on hit stops its turning.
    fn meet_surface(&mut self, env: &StepEnv, n: Vec3, stuck: bool, alive_motion: bool, m: &mut Motion) -> bool {
        let v = &mut m.vel;
        if m.pos.z > 0.0 && n.z > 0.001 {
            if alive_motion {
                self.location = Location::OnBuilding;
                self.last_flat_top = n.z > 0.999;
            }
            v.z = 0.0;
            return alive_motion;
        }
        let mut mag = n.x * v.x + n.y * v.y;
        if n.z.abs() > 1.0e-6 {
            if v.z < 0.0 && v.z - (mag + n.z * v.z) * n.z > 0.0 {
                v.z = 0.0;
            }
            let hor = n.x * n.x + n.y * n.y;
            if hor > 1.0e-6 {
                mag /= hor;
            }
        }
        if mag < 0.0 {
            v.x -= mag * n.x;
            v.y -= mag * n.y;
            // Back off a little from the surface, unless that pushes the tank into something else (wedged
            // between two obstacles).
            let pushed = Vec3::new(m.pos.x - 0.001 * mag * n.x, m.pos.y - 0.001 * mag * n.y, m.pos.z);
            if stuck || self.collide(env.world, pushed, m.az, env.dims, env.phased).is_none() {
                m.pos = pushed;
            }
        }
        if mag > -0.01 {
            m.ang_vel = 0.0;
        }
        false
    }

    /// `World::crossesTeleporter` and `LocalPlayer`'s teleport: a tank whose centre crossed a teleporter face
    /// comes out of one of the face's linked destinations (picked at random among several), with position,
    /// velocity and azimuth carried through; it stays where it was when the destination is blocked. Under
    /// Phantom Zone the crossing toggles the flag's effect instead.
    fn pass_teleporter(&mut self, from: &StepStart, env: &StepEnv, m: &mut Motion, report: &mut StepReport) {
        let world = env.world;
        let Some(face) = crossed_teleporter(world, from.pos, m.pos) else { return };
        if self.flag == flag::PHANTOM_ZONE {
            self.status.toggle(PlayerStatus::FLAG_ACTIVE);
            return;
        }
        let targets = world.links.targets(face);
        let pick = if targets.is_empty() {
            None
        } else {
            let r = self.rand() as usize % targets.len();
            targets.get(r).copied()
        };
        let Some((to, (p, nv, a))) = pick.and_then(|to| world.teleport(face, to, m.pos, m.vel).map(|t| (to, t))) else {
            return;
        };
        if self.collide(world, p, m.az + a, env.dims, env.phased).is_some() {
            m.pos = from.pos;
            m.vel = Vec3::new(0.0, 0.0, from.vel.z);
            m.az = from.az;
        } else {
            m.pos = p;
            m.vel = nv;
            m.az += a;
            self.status.insert(PlayerStatus::TELEPORTING);
            self.teleport_start = self.clock;
            report.teleported = Some((face as u16, to as u16));
        }
    }

    /// The physics driver of the surface the tank stands on (as `doUpdateMotion` looks it up under a tank on a
    /// building), and a death when that driver kills (a `death` message in its `physics` block).
    fn stand_on_driver(&mut self, world: &WorldModel, on_building: bool, pos: Vec3, report: &mut StepReport) {
        self.phydrv = None;
        if on_building {
            let g = world.ground(pos + Vec3::new(0.0, 0.0, 0.01));
            if let Some(d) = g.phydrv.filter(|&d| (d as usize) < world.physics_drivers.len()) {
                self.phydrv = Some(d);
                if world.physics_drivers.get(d as usize).is_some_and(|p| !p.death_message.is_empty()) && self.is_alive()
                {
                    report.death.get_or_insert(Death::PhysicsDriver(d));
                }
            }
        }
        self.status.set(PlayerStatus::ON_DRIVER, self.phydrv.is_some());
    }

    /// The end of a sub-step (`doUpdateMotion`'s last lines): a landing, the Falling bit, the new position,
    /// velocity, azimuth and turn rate (kept finite), and a death below the water level.
    fn finish_step(&mut self, old_location: Location, m: Motion, world: &WorldModel, report: &mut StepReport) {
        let landed =
            old_location == Location::InAir && matches!(self.location, Location::OnGround | Location::OnBuilding);
        report.landed |= landed;
        match self.location {
            Location::OnGround | Location::OnBuilding => self.status.remove(PlayerStatus::FALLING),
            Location::InBuilding if m.pos.z == 0.0 => self.status.remove(PlayerStatus::FALLING),
            Location::InAir | Location::InBuilding => self.status.insert(PlayerStatus::FALLING),
            _ => {}
        }

        self.pos = sane3(m.pos.to_array());
        self.vel = sane3(m.vel.to_array());
        self.azimuth = wrap_angle(m.az);
        self.ang_vel = sane(m.ang_vel);

        if self.is_alive() {
            if let Some(level) = world.water_level.filter(|l| *l > 0.0) {
                if self.pos.z <= level {
                    report.death.get_or_insert(Death::Water);
                }
            }
        }
    }

    /// Speed and turn rate under full control (`getNewAngVel` as for mouse users: the desired rate at once;
    /// then `doMomentum`'s acceleration limits).
    fn drive_rates(&self, dt: f32, phys: &Physics) -> (f32, f32) {
        let momentum = self.flag == flag::MOMENTUM;
        let lin = if momentum { phys.momentum_lin_acc } else { phys.linear_acceleration };
        let mut speed = self.desired_speed;
        if lin > 0.0 && dt > 0.0 {
            let acc = (speed - self.last_speed) / dt;
            if acc > 20.0 * lin {
                speed = self.last_speed + dt * 20.0 * lin;
            } else if acc < -20.0 * lin {
                speed = self.last_speed - dt * 20.0 * lin;
            }
        }
        let mut w = self.desired_ang_vel;
        let ang = if momentum { phys.momentum_ang_acc } else { phys.angular_acceleration };
        if ang > 0.0 && dt > 0.0 {
            let acc = (w - self.ang_vel) / dt;
            if acc > ang {
                w = self.ang_vel + dt * ang;
            } else if acc < -ang {
                w = self.ang_vel - dt * ang;
            }
        }
        (speed, w)
    }

    fn friction(&self, dt: f32, phys: &Physics, old: Vec3, new: &mut Vec3) {
        let friction = if self.flag == flag::MOMENTUM { phys.momentum_friction } else { phys.friction };
        if friction > 0.0 && dt > 0.0 {
            let delta = new.truncate() - old.truncate();
            let acc = delta.length() / dt;
            let limit = 20.0 * friction;
            if acc > limit {
                let r = limit / acc;
                new.x = old.x + delta.x * r;
                new.y = old.y + delta.y * r;
            }
        }
    }

    fn slide(&self, dt: f32, slide_time: f32, w: f32, phys: &Physics, v: &mut Vec3) {
        let slide_time = if slide_time > 0.0 { slide_time } else { 1.0 };
        let angle = self.azimuth + 0.5 * dt * w;
        let scale = dt / slide_time;
        let adj = self.desired_speed * scale;
        let ov = self.vel.truncate();
        let mut nv = ov + Vec2::new(angle.cos(), angle.sin()) * adj;
        let max = phys.max_speed(self.flag);
        let ns = nv.length();
        if ns > max && ns > 0.0 {
            let os = ov.length();
            let adj_speed = if os > max { (os - max * scale).max(0.0) } else { max };
            nv *= adj_speed / ns;
        }
        v.x = nv.x;
        v.y = nv.y;
    }

    fn try_jump(&mut self, phys: &Physics, v: &mut Vec3) -> bool {
        let f = self.flag;
        if self.pos.z < 0.0 {
            return false;
        }
        let grounded = matches!(self.location, Location::OnGround | Location::OnBuilding);
        if f == flag::WINGS {
            if self.wings_flaps <= 0 {
                return false;
            }
            self.wings_flaps -= 1;
        } else if !grounded
            || (f != flag::BOUNCY && ((f != flag::JUMPING && !phys.jumping_allowed()) || f == flag::NO_JUMPING))
        {
            return false;
        }
        if f == flag::WINGS {
            let mut vz = phys.wings_jump_velocity;
            if self.vel.z < 0.0 {
                vz += self.vel.z;
            } else if self.vel.z > vz {
                vz = self.vel.z;
            }
            v.z = vz;
            self.sounds |= 2;
        } else {
            v.z = phys.jump_velocity;
            self.sounds |= 1;
        }
        self.location = Location::InAir;
        true
    }

    fn collide_walls(&self, world: &WorldModel, pos: Vec3, az: f32, dims: Vec3) -> Option<(ObstacleId, bool)> {
        let corners = TankBox { pos, angle: az, half_length: dims.x, half_width: dims.y, height: dims.z };
        let (s, c) = az.sin_cos();
        for wall in &world.walls {
            for (dx, dy) in [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)] {
                let off = Vec3::new(
                    c * dx * corners.half_length - s * dy * corners.half_width,
                    s * dx * corners.half_length + c * dy * corners.half_width,
                    0.0,
                );
                if wall.plane.distance(pos + off) < 0.0 {
                    return Some((wall.obstacle, true));
                }
            }
        }
        None
    }

    /// The surface normal where the tank met `id` moving from `free` to `hit` (see the module docs).
    #[allow(clippy::too_many_arguments)]
    fn normal(
        &self,
        world: &WorldModel,
        id: ObstacleId,
        free: Vec3,
        free_az: f32,
        hit: Vec3,
        hit_az: f32,
        dims: Vec3,
        phased: bool,
        v: Vec3,
    ) -> Vec3 {
        let dz = hit.z - free.z;
        if dz != 0.0 {
            let vertical = self.collide(world, Vec3::new(free.x, free.y, hit.z), free_az, dims, phased).is_some();
            let horizontal = self.collide(world, Vec3::new(hit.x, hit.y, free.z), hit_az, dims, phased).is_some();
            if vertical && !horizontal {
                return if dz < 0.0 { Vec3::Z } else { Vec3::NEG_Z };
            }
        }
        let centre = free + Vec3::new(0.0, 0.0, 0.5 * dims.z);
        let fallback = {
            let h = -v.truncate().normalize_or_zero();
            h.extend(0.0)
        };
        let Some(o) = world.obstacle(id) else { return fallback };
        let best_plane = |planes: &mut dyn Iterator<Item = (Vec3, f32)>| -> Option<(Vec3, f32)> {
            planes.fold(None, |best: Option<(Vec3, f32)>, (n, d)| match best {
                Some((_, bd)) if bd >= d => best,
                _ => Some((n, d)),
            })
        };
        let solid_normal = |i: u32| {
            world
                .solids
                .get(i as usize)
                .and_then(|s| best_plane(&mut s.shape.planes().iter().map(|p| (p.normal, p.distance(centre)))))
        };
        let n = match &o.geometry {
            Geometry::Wall(i) => world.walls.get(*i as usize).map(|w| w.plane.normal),
            Geometry::Solid(i) => solid_normal(*i).map(|(n, _)| n),
            Geometry::Teleporter(i) => world.teleporters.get(*i as usize).and_then(|t| {
                t.frame
                    .iter()
                    .filter_map(|&s| solid_normal(s))
                    .fold(None, |best: Option<(Vec3, f32)>, (n, d)| match best {
                        Some((_, bd)) if bd <= d => best,
                        _ => Some((n, d)),
                    })
                    .map(|(n, _)| n)
            }),
            Geometry::Faces(_) => {
                best_plane(&mut world.obstacle_faces(id).iter().map(|f| (f.plane.normal, f.plane.distance(centre))))
                    .map(|(n, _)| n)
            }
            Geometry::None => None,
        };
        n.filter(|n| n.is_finite() && n.length_squared() > 0.5).unwrap_or(fallback)
    }
}

/// The top of a flat-topped obstacle (box, base, teleporter), for driving up small bumps.
fn flat_top(world: &WorldModel, id: ObstacleId) -> Option<f32> {
    let o = world.obstacle(id)?;
    matches!(o.kind, ObstacleKind::Box | ObstacleKind::Base | ObstacleKind::Teleporter).then_some(o.pos.z + o.size.z)
}

/// `World::crossesTeleporter` / `Teleporter::hasCrossed`: the face whose plane the tank's centre crossed from
/// `a` to `b` inside the field.
fn crossed_teleporter(world: &WorldModel, a: Vec3, b: Vec3) -> Option<u32> {
    for (i, t) in world.teleporters.iter().enumerate() {
        let top = t.pos.z + t.size.z - t.border;
        if (a.z < t.pos.z && b.z < t.pos.z) || (a.z > top && b.z > top) || t.horizontal {
            continue;
        }
        let (s, c) = (-t.angle).sin_cos();
        let local = |p: Vec3| {
            let d = p - t.pos;
            Vec2::new(c * d.x - s * d.y, c * d.y + s * d.x)
        };
        let (p1, p2) = (local(a), local(b));
        if p1.x * p2.x < 0.0 && p2.y.abs() <= t.size.y - t.border {
            return Some(2 * i as u32 + if p1.x > 0.0 { 0 } else { 1 });
        }
    }
    None
}

/// `Teleporter::isCrossing`: while the tank's footprint overlaps a teleporter's field, the plane of the face on
/// the side of the tank's centre, normal pointing away from the teleporter.
fn crossing_plane(world: &WorldModel, pos: Vec3, az: f32, dims: Vec3) -> Option<(Vec3, f32)> {
    for t in &world.teleporters {
        if t.horizontal || pos.z < t.pos.z || pos.z > t.pos.z + t.size.z - t.border {
            continue;
        }
        let field = (t.size.x, t.size.y - t.border);
        if !rects_overlap(pos.truncate(), az, (dims.x, dims.y), t.pos.truncate(), t.angle, field) {
            continue;
        }
        let (s, c) = t.angle.sin_cos();
        let d = pos.truncate() - t.pos.truncate();
        let x = c * d.x + s * d.y;
        let n = if x < 0.0 { Vec3::new(-c, -s, 0.0) } else { Vec3::new(c, s, 0.0) };
        let on = t.pos + n * t.size.x;
        return Some((n, -n.dot(on)));
    }
    None
}

/// Two rotated rectangles (centre, angle, half sizes) overlap (separating axes).
fn rects_overlap(p1: Vec2, a1: f32, h1: (f32, f32), p2: Vec2, a2: f32, h2: (f32, f32)) -> bool {
    let axes = |a: f32| {
        let (s, c) = a.sin_cos();
        [Vec2::new(c, s), Vec2::new(-s, c)]
    };
    let (ax1, ax2) = (axes(a1), axes(a2));
    let d = p2 - p1;
    let radius = |axes: &[Vec2; 2], h: (f32, f32), n: Vec2| axes[0].dot(n).abs() * h.0 + axes[1].dot(n).abs() * h.1;
    ax1.iter().chain(ax2.iter()).all(|&n| d.dot(n).abs() <= radius(&ax1, h1, n) + radius(&ax2, h2, n))
}

/// Where a sub-step started (`LocalPlayer::doUpdateMotion`'s `old*` values).
struct StepStart {
    location: Location,
    pos: Vec3,
    az: f32,
    vel: Vec3,
}

/// What stays fixed during a sub-step: the rules, the world, and the tank's size and way of colliding.
struct StepEnv<'a> {
    phys: &'a Physics,
    world: &'a WorldModel,
    /// Half-length, half-width and height ([`Tank::dimensions`]).
    dims: Vec3,
    /// Passes through buildings (exploding, Oscillation Overthruster, Phantom Zone): only walls and teleporter
    /// frames stop it.
    phased: bool,
    /// The lowest the tank goes: 0, or `_burrowDepth` under Burrow.
    ground_limit: f32,
}

impl StepEnv<'_> {
    /// Moving down below the floor (`ground_limit`).
    fn below_floor(&self, pos: Vec3, vel: Vec3) -> bool {
        pos.z < self.ground_limit && vel.z < 0.0
    }

    /// Position and azimuth `t` seconds on from `pos`/`az` with `m`'s velocities, not sinking below the floor.
    fn along(&self, pos: Vec3, az: f32, m: &Motion, t: f32) -> (Vec3, f32) {
        let az = az + t * m.ang_vel;
        let mut p = pos + m.vel * t;
        if self.below_floor(p, m.vel) {
            p.z = self.ground_limit;
        }
        (p, az)
    }
}

/// The tank's state while a sub-step moves it.
#[derive(Debug, Clone, Copy)]
struct Motion {
    pos: Vec3,
    az: f32,
    vel: Vec3,
    ang_vel: f32,
}

/// Where a move runs into an obstacle ([`Tank::latest_free_time`]).
struct Contact {
    /// The latest time found free.
    time: f32,
    /// The first position found blocked (and its azimuth), by `obstacle`.
    pos: Vec3,
    az: f32,
    obstacle: ObstacleId,
}

/// The velocities the tank actually had over a sub-step (`doUpdateMotion` computes them from the displacement,
/// before teleporting): the displacement from `start` over `dt`, its horizontal part never faster than the
/// velocity the tank set out with (`nominal2` is that speed squared).
fn measure_velocities(dt: f32, start: Vec3, start_az: f32, nominal2: f32, m: &mut Motion) {
    let inv = 1.0 / dt;
    m.ang_vel = (m.az - start_az) * inv;
    m.vel = (m.pos - start) * inv;
    if nominal2 > 0.0 {
        let s2 = m.vel.truncate().length_squared() / nominal2;
        if s2 > 1.0 {
            let s = s2.sqrt();
            m.vel.x /= s;
            m.vel.y /= s;
        }
    }
}
