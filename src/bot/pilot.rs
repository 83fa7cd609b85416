//! The protocol side of one bot's tank: everything the official client does for its own player each frame, so
//! that a [`super::Bot`] only decides and never gets its player kicked.
//!
//! Per tick, in the client's order: step the tank (teleports, deaths by water or a death driver, the end of an
//! explosion and the `MsgAlive` that follows), detect hits on our tank (§9.6: `MsgShotEnd` then `MsgKilled`,
//! dropping the flag first, within the server's end-shot balance), steamrollers, grab flags within reach (at most
//! every 0.2 s, never our own team flag), capture (an update right before every `MsgCaptureFlag`), shake off sticky
//! flags, drop on request, fire (an update right before every `MsgShotBegin`), then the update send rule (§9.3).
//!
//! Events of the bot's own session keep the tank in step with the server: our spawn, our death (a kill reported by
//! the server, or our team flag captured), flags grabbed, dropped, stolen and captured.

use std::time::Instant;

use glam::Vec3;

use super::danger::PlayerSet;
use super::view::TankView;
use super::{BotEvent, Control};
use crate::bzflag::consts::{kill_reason, Team};
use crate::bzflag::event::Event;
use crate::bzflag::game::Game;
use crate::bzflag::msg::ClientMsg;
use crate::bzflag::play::hit::{hit_messages, run_over_by, EndShotCredit, Roller};
use crate::bzflag::play::physics::flag;
use crate::bzflag::play::updates::as_received;
use crate::bzflag::play::{
    check_hits, Controls, FlagEffect, FlagRules, Gun, HitCandidate, LiveShot, Location, Physics, ShotKind, ShotTracker,
    Tank, UpdateSender,
};
use crate::bzflag::session::team_of_flag;
use crate::bzflag::world::WorldModel;

/// Counts of what a bot did, for its owner and for benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct BotStats {
    /// Times spawned.
    pub spawns: u32,
    /// Shots fired.
    pub shots: u32,
    /// Kills the server confirmed (`MsgKilled` naming us as the killer of someone else).
    pub kills: u32,
    /// Deaths the server confirmed.
    pub deaths: u32,
    /// Hits on us we detected and reported.
    pub hits_taken: u32,
    /// Flags grabbed.
    pub grabs: u32,
    /// Team flags captured.
    pub captures: u32,
    /// Player updates sent.
    pub updates: u32,
}

/// What one tick needs from the shared state of the bot's server.
pub(crate) struct Shared<'a> {
    pub now: Instant,
    pub clock: f32,
    pub world: &'a WorldModel,
    pub phys: &'a Physics,
    pub game: &'a Game,
    pub shots: &'a ShotTracker,
    pub tanks: &'a [TankView],
    pub paused: &'a PlayerSet,
}

/// One bot's tank, gun, update rule and flag rules. See the module documentation.
#[derive(Debug)]
pub(crate) struct Pilot {
    pub me: Option<u8>,
    pub team: Team,
    pub tank: Tank,
    gun: Gun,
    updates: UpdateSender,
    flags: FlagRules,
    credit: EndShotCredit,
    last_step: Option<Instant>,
    pub flag_index: Option<u16>,
    last_capture: f32,
    alive_sent: Option<f32>,
    /// Since when the tank is dead and may respawn, while it waits for its team's shots to end (see
    /// [`SPAWN_HOLD_MAX`]).
    spawn_ready: Option<f32>,
    pub stats: BotStats,
    /// Messages to send after the tick.
    pub out: Vec<ClientMsg>,
}

/// How often `MsgAlive` is repeated while the server has not spawned us (it queues the first one).
const ALIVE_REPEAT: f32 = 10.0;

/// Longest wait (s) before asking to respawn while a shot of our own team is in flight. bzfs puts a respawned
/// tank where it likes, and a team mate's shot fired while we were dead was checked against the living only: in
/// 3-against-3 ricochet games every team kill left was a tank that respawned into such a shot. A shot lives
/// 3.5 s by default.
const SPAWN_HOLD_MAX: f32 = 4.0;

impl Pilot {
    pub fn new(seed: u64) -> Pilot {
        Pilot {
            me: None,
            team: Team::NoTeam,
            tank: Tank::new(seed),
            gun: Gun::new(),
            updates: UpdateSender::new(),
            flags: FlagRules::new(),
            credit: EndShotCredit::new(),
            last_step: None,
            flag_index: None,
            last_capture: -1.0e9,
            alive_sent: None,
            spawn_ready: None,
            stats: BotStats::default(),
            out: Vec::new(),
        }
    }

    /// Back to a fresh state for a new connection (the server forgets everything of an old one).
    pub fn reset(&mut self) {
        let stats = self.stats;
        let seed = self.stats.spawns as u64 ^ 0x9e37_79b9;
        *self = Pilot::new(seed);
        self.stats = stats;
    }

    /// Seconds since the last step (0 before the first).
    pub fn since_last_step(&self, now: Instant) -> f32 {
        self.last_step.map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f32())
    }

    /// The id of the next shot, if one can be fired now.
    pub fn next_shot_id(&self, clock: f32, phys: &Physics) -> Option<u16> {
        self.gun.next_shot_id(clock, phys.max_shots)
    }

    /// Seconds until a shot can be fired.
    pub fn reload(&self, clock: f32, phys: &Physics) -> f32 {
        self.gun.reload_left(clock, phys.max_shots)
    }

    /// Follows an event of the bot's own session; `game` is the shared state of the server (for flag types).
    pub fn on_event(&mut self, ev: &Event, game: &Game, clock: f32) -> Option<BotEvent> {
        let me = self.me;
        match ev {
            Event::Accept { id } => {
                self.me = Some(*id);
                self.request_spawn(clock);
                None
            }
            Event::Join { id, team, .. } if Some(*id) == me => {
                self.team = *team;
                Some(BotEvent::Joined { id: *id, team: *team })
            }
            Event::NewRabbit { id } => {
                // The server re-teams players locally in rabbit games.
                if Some(*id) == me {
                    self.team = Team::Rabbit;
                } else if self.team == Team::Rabbit {
                    self.team = Team::Hunter;
                }
                None
            }
            Event::Spawn { id, pos, azimuth, .. } if Some(*id) == me => {
                self.tank.spawn(*pos, *azimuth);
                self.gun.clear();
                self.flags = FlagRules::new();
                self.flag_index = None;
                self.alive_sent = None;
                self.spawn_ready = None;
                self.stats.spawns += 1;
                Some(BotEvent::Spawned { pos: *pos })
            }
            Event::Kill { victim, killer, reason, .. } if Some(*victim) == me => {
                self.tank.explode();
                self.flag_index = None;
                self.stats.deaths += 1;
                Some(BotEvent::Died { killer: *killer, reason: (*reason).to_string() })
            }
            Event::Kill { victim, killer, .. } if Some(*killer) == me => {
                self.stats.kills += 1;
                if let Some(m) = self.flags.on_wins(1, &self.tank) {
                    self.out.push(m);
                }
                Some(BotEvent::Killed { victim: *victim })
            }
            Event::Grab { player, flag: f, .. } if Some(*player) == me => {
                self.tank.flag = f.abbv;
                self.flag_index = Some(f.index);
                let endurance = game.flags.get(&f.index).map_or(0, |s| s.info.endurance);
                self.flags.on_flag(f.abbv, endurance, game.settings.as_ref());
                self.stats.grabs += 1;
                Some(BotEvent::Grabbed { flag: f.abbv.as_string() })
            }
            Event::Drop { player, .. } if Some(*player) == me => {
                self.tank.flag = flag::NONE;
                self.flag_index = None;
                None
            }
            Event::Transfer { from, to, flag: f } => {
                if Some(*from) == me {
                    self.tank.flag = flag::NONE;
                    self.flag_index = None;
                } else if Some(*to) == me {
                    self.tank.flag = f.abbv;
                    self.flag_index = Some(f.index);
                }
                None
            }
            Event::Capture { player, index, abbv, team, .. } => {
                let abbv =
                    if abbv.is_none() { game.flags.get(index).map(|f| f.abbv()).unwrap_or(*abbv) } else { *abbv };
                let mut reported = None;
                if Some(*player) == me {
                    self.tank.flag = flag::NONE;
                    self.flag_index = None;
                    self.stats.captures += 1;
                    reported = Some(BotEvent::Captured { team: *team });
                }
                // Our team's flag was captured: the server counts us dead without a MsgKilled (§8.3).
                if team_of_flag(abbv) == Some(self.team) && self.tank.is_alive() {
                    self.tank.explode();
                    self.flag_index = None;
                }
                reported
            }
            _ => None,
        }
    }

    /// Dead and about to respawn: waiting for its team's shots to end, or asked and not spawned yet. Its team
    /// mates in this process hold fire meanwhile, since bzfs may put it anywhere.
    pub fn awaiting_spawn(&self) -> bool {
        self.me.is_some() && self.tank.location == Location::Dead && self.spawn_ready.is_some()
    }

    /// Whether to ask to respawn now: no shot of our team is in flight (none can hit us where bzfs puts us), or we
    /// have waited [`SPAWN_HOLD_MAX`] already. Always when the server has team kills off, and for rogues.
    fn spawn_is_safe(&mut self, sh: &Shared<'_>, clock: f32) -> bool {
        let since = *self.spawn_ready.get_or_insert(clock);
        if !sh.phys.team_kills() || matches!(self.team, Team::Rogue | Team::NoTeam) || clock - since >= SPAWN_HOLD_MAX {
            return true;
        }
        !sh.shots.iter().any(|s| s.team == self.team && !s.expired_at(s.age(sh.now)))
    }

    fn request_spawn(&mut self, clock: f32) {
        self.out.push(ClientMsg::Alive);
        self.alive_sent = Some(clock);
    }

    /// One tick with the bot's `control` (`may_fire` false holds fire: a tank without its UDP link). See the
    /// module documentation. Messages to send are left in `self.out`.
    pub fn tick(&mut self, sh: &Shared<'_>, control: &Control, may_fire: bool) {
        let now = sh.now;
        let prev = self.last_step.unwrap_or(now);
        let dt = now.saturating_duration_since(prev).as_secs_f32().min(1.0);
        self.last_step = Some(now);
        let Some(me) = self.me else { return };
        let (phys, world, clock) = (sh.phys, sh.world, sh.clock);
        let Control { speed, turn, jump, fire, drop_flag: drop, grab, grab_own_flag, target, .. } = *control;
        let fire = fire && may_fire;

        let report = self.tank.step(dt, Controls { speed, turn, jump }, phys, world);
        if self.tank.location == Location::Dead
            && self.alive_sent.is_none_or(|t| clock - t > ALIVE_REPEAT)
            && self.spawn_is_safe(sh, clock)
        {
            self.request_spawn(clock);
        }
        if let Some((from, to)) = report.teleported {
            self.out.push(ClientMsg::Teleport { from, to });
        }
        if let Some(death) = report.death {
            let msgs = self.tank.death_messages(me, death);
            self.send_all(msgs);
            self.tank.explode();
            self.flag_index = None;
        }
        if report.pause_drop {
            self.out.push(ClientMsg::DropFlag { pos: self.tank.pos.to_array() });
        }

        if self.tank.is_alive() && dt > 0.0 {
            self.check_hits(sh, me, prev, dt);
        }
        if self.tank.is_alive() {
            self.run_over(sh, me);
        }

        if self.tank.is_alive() {
            if grab {
                let team = self.team;
                let mut grabs = self.flags.grabs(clock, &self.tank, &sh.game.flags, phys);
                grabs.retain(|m| match m {
                    ClientMsg::GrabFlag { index } => {
                        grab_own_flag || sh.game.flags.get(index).is_none_or(|f| team_of_flag(f.abbv()) != Some(team))
                    }
                    _ => true,
                });
                self.out.extend(grabs);
            }
            if clock - self.last_capture > 0.25 && self.flags.capture(&self.tank, self.team, world).is_some() {
                // bzfs checks a capture against the position of our last update (`captureFlag`, bzfs.cxx):
                // updates go out only when dead reckoning drifts (§9.3), so the last one was usually sent
                // before we reached the base, and the server logged "might have tried to capture ... without
                // reaching their own base". An update first puts us on the base in the server's eyes, and we
                // capture only where the server will see us: the small update truncates positions towards
                // zero in steps of 0.02, which can put a tank just inside a base's edge on the edge (outside
                // for bzfs); the capture then waits a tick or two until we are further in.
                let upd = self.update_now(sh, me);
                let mut seen = self.tank.clone();
                seen.pos = as_server_sees(&upd).unwrap_or(seen.pos);
                self.out.push(upd);
                if let Some(m) = self.flags.capture(&seen, self.team, world) {
                    self.out.push(m);
                    self.last_capture = clock;
                }
            }
            if let Some(m) = self.flags.tick(dt, &self.tank) {
                self.out.push(m);
            }
            if drop && !self.tank.flag.is_none() {
                let endurance = self.flag_index.and_then(|i| sh.game.flags.get(&i)).map_or(0, |f| f.info.endurance);
                if FlagRules::can_drop(&self.tank, endurance) {
                    self.out.push(ClientMsg::DropFlag { pos: self.tank.pos.to_array() });
                }
            }
            if fire && self.tank.can_fire() {
                let muzzle = self.tank.muzzle(self.team);
                if let Ok(info) = self.gun.fire(clock, me, &muzzle, phys) {
                    let upd = self.update_now(sh, me);
                    self.out.push(upd);
                    let shot = ClientMsg::ShotBegin(info);
                    self.credit.record(&shot, self.tank.flag);
                    self.out.push(shot);
                    self.stats.shots += 1;
                    // A guided missile locks on our target at once (GuidedMissileStrategy sends the update when
                    // the lock changes): every client then steers it towards that tank.
                    if let Some(t) = target.filter(|_| ShotKind::of(info.flag) == ShotKind::GuidedMissile) {
                        let missile = LiveShot::new(&info, now, phys, Some(world));
                        if let Some(m) = missile.gm_update(t, phys) {
                            self.out.push(m);
                        }
                    }
                }
            }
        }

        let state = self.tank.own_state();
        if let Some(m) = self.updates.poll(now, me, clock, &state, phys, &world.physics_drivers) {
            self.tank.take_sounds();
            self.stats.updates += 1;
            self.out.push(m);
        }
    }

    /// An update of our tank as it is, to send whatever the send rule says: before a shot or a capture, which the
    /// server checks against our last update.
    fn update_now(&mut self, sh: &Shared<'_>, me: u8) -> ClientMsg {
        let state = self.tank.own_state();
        let upd = self.updates.before_shot(sh.now, me, sh.clock, &state, sh.phys, &sh.world.physics_drivers);
        self.tank.take_sounds();
        self.stats.updates += 1;
        upd
    }

    fn send_all(&mut self, msgs: Vec<ClientMsg>) {
        let mut holding = self.tank.flag;
        for m in msgs {
            self.credit.record(&m, holding);
            if matches!(m, ClientMsg::DropFlag { .. }) {
                holding = flag::NONE;
            }
            self.out.push(m);
        }
    }

    /// Hit detection over the tick (§9.6) and what a hit makes us send (§8.5).
    fn check_hits(&mut self, sh: &Shared<'_>, me: u8, prev: Instant, dt: f32) {
        let phys = sh.phys;
        let victim = self.tank.victim(me, self.team);
        // The farthest a shot that can hit us may be from our tank over the tick: our hit radius (Obesity at
        // most triples it), our own motion and the shot's, with slack.
        let reach = FlagEffect::of(self.tank.flag, phys).length.max(1.0) * phys.tank_radius
            + self.tank.last_motion.1.length() * dt
            + 2.0;
        let centre = victim.pos + Vec3::new(0.0, 0.0, 0.5 * phys.tank_height);
        let candidates = sh.shots.iter().filter(|s| !s.ended).filter_map(|s| {
            let c = HitCandidate::over(s, prev, sh.now, sh.paused.contains(s.shooter));
            (near(s, c.t_prev, c.t_now, centre, reach) && !own_first_leg(s, me, c.t_now)).then_some(c)
        });
        let Some(hit) = check_hits(&victim, candidates, dt, phys) else { return };
        let mut msgs = hit_messages(&hit, me, self.tank.flag, self.tank.pos);
        // Never more end-shot credit than the server allows (§11): without the MsgShotEnd the kill still counts.
        if !self.credit.allows(&msgs, self.tank.flag, phys.end_shot_detection) {
            msgs.retain(|m| !matches!(m, ClientMsg::ShotEnd { .. }));
        }
        let shield = self.tank.flag == flag::SHIELD;
        self.send_all(msgs);
        self.stats.hits_taken += 1;
        if hit.kind != ShotKind::Thief && !shield {
            self.tank.explode();
            self.flag_index = None;
        } else if shield {
            self.tank.flag = flag::NONE;
            self.flag_index = None;
        }
    }

    /// Steamroller (and burrowed tanks run over by anyone): `MsgKilled` reason 2.
    fn run_over(&mut self, sh: &Shared<'_>, me: u8) {
        let phys = sh.phys;
        if !sh.tanks.iter().any(|t| t.flag == Some(flag::STEAMROLLER)) && self.tank.pos.z >= 0.0 {
            return;
        }
        let victim = self.tank.victim(me, self.team);
        let rollers = sh.tanks.iter().filter(|t| t.id != me).map(|t| Roller {
            id: t.id,
            team: t.team,
            flag: t.flag.unwrap_or(flag::NONE),
            pos: t.pose.pos,
            radius: FlagEffect::of(t.flag.unwrap_or(flag::NONE), phys).length * phys.tank_radius,
            alive: t.alive,
            paused: t.paused,
            zoned: false,
        });
        let radius = self.tank.radius(phys);
        if let Some(killer) = run_over_by(&victim, self.tank.pos, radius, rollers, phys) {
            let mut msgs = Vec::with_capacity(2);
            if !self.tank.flag.is_none() {
                msgs.push(ClientMsg::DropFlag { pos: self.tank.pos.to_array() });
            }
            msgs.push(ClientMsg::Killed {
                killer,
                reason: kill_reason::GOT_RUN_OVER,
                shot_id: -1,
                flag: flag::STEAMROLLER,
                phydrv: None,
            });
            self.send_all(msgs);
            self.tank.explode();
            self.flag_index = None;
        }
    }
}

/// Whether a shot can come within `reach` of `p` between shot ages `t0` and `t1` (a cheap test before the
/// exact one; beams, shock waves and missiles always pass it).
/// Whether `s` is one of our own shots still on its first leg at `age` (it has not yet ricocheted nor gone through a
/// teleporter): it leaves the muzzle ahead of our tank and flies away faster than any tank drives, so it cannot hit
/// us, and is not tested. The shared picture starts every shot when the observer link received its
/// `MsgShotBegin`, for our own shots a round trip after we fired: on a busy machine that delay put the start of a
/// shot fired at full speed ahead inside our own tank (the muzzle is only 0.1 units outside its hit sphere plus
/// the height difference), and the bot blew itself up with its own shot. Guided missiles turn, and are tested.
/// Where the server will see our tank after `update` (the small form quantizes positions). `None` for anything
/// else.
fn as_server_sees(update: &ClientMsg) -> Option<Vec3> {
    let ClientMsg::PlayerUpdate(u) = update else { return None };
    Some(Vec3::from_array(as_received(u).pos))
}

fn own_first_leg(s: &LiveShot, me: u8, age: f32) -> bool {
    s.shooter == me && s.kind != ShotKind::GuidedMissile && s.segments.first().is_some_and(|g| age < g.t1)
}

fn near(s: &LiveShot, t0: f32, t1: f32, p: Vec3, reach: f32) -> bool {
    if s.kind.is_beam() || matches!(s.kind, ShotKind::ShockWave | ShotKind::GuidedMissile) {
        return true;
    }
    s.segments.iter().filter(|g| g.t1 >= t0 && g.t0 <= t1).any(|g| {
        let a = g.start + g.velocity * (t0.max(g.t0) - g.t0);
        let b = g.start + g.velocity * (t1.min(g.t1) - g.t0);
        distance_to_segment(p, a, b) <= reach
    })
}

fn distance_to_segment(p: Vec3, a: Vec3, b: Vec3) -> f32 {
    let ab = b - a;
    let len2 = ab.length_squared();
    let t = if len2 > 0.0 { ((p - a).dot(ab) / len2).clamp(0.0, 1.0) } else { 0.0 };
    let d = p.distance(a + ab * t);
    if d.is_finite() {
        d
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The small update truncates towards zero in steps of 0.02: a tank at x = -105.01 (inside a base whose edge
    /// is at -105) is at -105 for the server, on the edge, which bzfs counts as outside.
    #[test]
    fn the_server_sees_a_small_update_truncated_and_a_full_one_as_sent() {
        let mut u = crate::bot::aim::tests::update([-105.01, 7.45, 0.0], [0.0; 3], 0.0, 0.0);
        u.small = true;
        let seen = as_server_sees(&ClientMsg::PlayerUpdate(u)).unwrap();
        assert!((seen.x + 105.0).abs() < 1e-4 && (seen.y - 7.44).abs() < 1e-4, "{seen}");
        u.small = false;
        assert_eq!(as_server_sees(&ClientMsg::PlayerUpdate(u)), Some(Vec3::new(-105.01, 7.45, 0.0)));
        assert_eq!(as_server_sees(&ClientMsg::Alive), None);
    }

    #[test]
    fn our_own_shot_is_not_tested_against_us_until_it_ricochets() {
        let phys = Physics::default();
        let info = crate::bzflag::msg::FiringInfo {
            time_sent: 0.0,
            shooter: 3,
            shot_id: 0x0100,
            pos: [4.42, 0.0, 1.57],
            vel: [125.0, 0.0, 0.0],
            dt: 0.0,
            team: crate::bzflag::consts::Team::Red,
            flag: flag::NONE,
            lifetime: 3.5,
        };
        let shot = LiveShot::new(&info, Instant::now(), &phys, None);
        assert!(own_first_leg(&shot, 3, 0.0));
        assert!(own_first_leg(&shot, 3, 1.0));
        assert!(!own_first_leg(&shot, 4, 0.0), "another's shot is tested");
        // A shot with a second leg (a ricochet) is tested from there on.
        let mut bounced = shot.clone();
        let first = bounced.segments[0];
        let mut second = first;
        second.t0 = 0.5;
        second.velocity = -first.velocity;
        bounced.segments = vec![crate::bzflag::world::ShotSegment { t1: 0.5, ..first }, second];
        assert!(own_first_leg(&bounced, 3, 0.4));
        assert!(!own_first_leg(&bounced, 3, 0.6));
    }

    #[test]
    fn a_dead_bot_waits_to_respawn_while_a_shot_of_its_team_flies() {
        use crate::bzflag::consts::{GameOptions, Team};
        let s = crate::bot::aim::tests::settings(GameOptions::empty(), 400.0);
        let phys = Physics::new(&crate::bzflag::vars::VarStore::defaults(), Some(&s));
        let no_tk = Physics::new(
            &crate::bzflag::vars::VarStore::defaults(),
            Some(&crate::bot::aim::tests::settings(GameOptions::NO_TEAM_KILLS, 400.0)),
        );
        let world = crate::bot::aim::tests::world_with(200.0, Vec::new());
        let game = Game::default();
        let start = Instant::now();
        let fired = |team| crate::bzflag::game::Shot {
            info: crate::bzflag::msg::FiringInfo {
                time_sent: 0.0,
                shooter: 2,
                shot_id: 0x0100,
                pos: [0.0, 0.0, 1.57],
                vel: [100.0, 0.0, 0.0],
                dt: 0.0,
                team,
                flag: flag::NONE,
                lifetime: 3.5,
            },
            received: start,
            gm_update: None,
        };
        let tracker = |team| {
            let mut t = ShotTracker::new();
            t.sync(&[((2u8, 0x0100u16), fired(team))].into_iter().collect(), &phys, Some(&world));
            t
        };
        let (mate, enemy, none) = (tracker(Team::Red), tracker(Team::Green), ShotTracker::new());
        let paused = PlayerSet::default();
        let waited = |shots: &ShotTracker, phys: &Physics, secs: f32, ready: f32| {
            let now = start + std::time::Duration::from_secs_f32(secs);
            let sh = Shared { now, clock: secs, world: &world, phys, game: &game, shots, tanks: &[], paused: &paused };
            let mut p = Pilot::new(1);
            p.team = Team::Red;
            p.spawn_ready = Some(ready);
            p.spawn_is_safe(&sh, secs)
        };
        let at = |shots: &ShotTracker, phys: &Physics, secs: f32| waited(shots, phys, secs, 0.0);
        // A team mate's shot in flight (it ends at the world's far wall, 200 units out: 2 s): wait.
        assert!(!at(&mate, &phys, 0.5));
        // ...until it is over, or the wait is up.
        assert!(at(&mate, &phys, 2.5));
        assert!(waited(&mate, &phys, 0.5, 0.5 - SPAWN_HOLD_MAX));
        assert!(at(&none, &phys, 0.5));
        // An enemy's shot is no reason to wait (bzfs keeps spawns away from enemies), nor is any with team kills off.
        assert!(at(&enemy, &phys, 0.5));
        assert!(at(&mate, &no_tk, 0.5));
    }

    #[test]
    fn the_near_test_keeps_shots_that_pass_close() {
        let d = distance_to_segment(Vec3::new(5.0, 3.0, 0.0), Vec3::ZERO, Vec3::new(10.0, 0.0, 0.0));
        assert!((d - 3.0).abs() < 1e-6);
        let d = distance_to_segment(Vec3::new(-4.0, 3.0, 0.0), Vec3::ZERO, Vec3::new(10.0, 0.0, 0.0));
        assert!((d - 5.0).abs() < 1e-6);
        assert_eq!(distance_to_segment(Vec3::new(1.0, 1.0, 1.0), Vec3::ONE, Vec3::ONE), 0.0);
        assert_eq!(
            distance_to_segment(Vec3::splat(f32::NAN), Vec3::ZERO, Vec3::X),
            0.0,
            "NaN passes to the exact test"
        );
    }
}
