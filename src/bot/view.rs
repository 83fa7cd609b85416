//! What a bot sees: [`View`], a read-only picture of the game at one tick.
//!
//! Everything in it was computed once for the tick and is shared by every bot of the same server: the other
//! tanks dead-reckoned to the tick's time ([`TankView`]), every live shot with its whole path
//! ([`LiveShot`]), the flags with their flights followed ([`FlagView`]), the world, the server's variables and the
//! planner's grid (built the first time a bot asks for it).

use std::cell::OnceCell;
use std::time::Instant;

use glam::{Vec2, Vec3};

use super::aim::{self, FiringSolution, Shooter, TargetTrack};
use super::danger::{self, DangerOptions, PlayerSet, Threat};
use super::levels::{Levels, Route};
use super::nav::{NavGrid, Path};
use crate::bzflag::consts::{FlagStatus, Team};
use crate::bzflag::game::{Game, Player};
use crate::bzflag::msg::Abbv;
use crate::bzflag::play::physics::flag;
use crate::bzflag::play::{Controls, LiveShot, Physics, ShotTracker, Tank};
use crate::bzflag::scene::SceneTank;
use crate::bzflag::session::team_of_flag;
use crate::bzflag::world::{BaseModel, WorldModel};

/// Game types of `MsgGameSettings`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GameType {
    /// Team free-for-all.
    TeamFfa,
    /// Capture the flag.
    Ctf,
    /// Open free-for-all (no teams).
    OpenFfa,
    /// Rabbit chase.
    Rabbit,
}

impl GameType {
    /// From the settings' game type number (unknown numbers count as team free-for-all).
    pub fn from_u16(v: u16) -> GameType {
        match v {
            1 => GameType::Ctf,
            2 => GameType::OpenFfa,
            3 => GameType::Rabbit,
            _ => GameType::TeamFfa,
        }
    }
}

/// Whether a player of team `theirs` is an enemy of a player of team `mine` in a game of type `game`.
pub fn hostile(mine: Team, theirs: Team, game: GameType) -> bool {
    match (mine, theirs) {
        (_, Team::Observer) | (Team::Observer, _) => false,
        _ if game == GameType::OpenFfa => true,
        (Team::Rogue, _) | (_, Team::Rogue) => true,
        (Team::Hunter, Team::Hunter) => false,
        _ => mine != theirs,
    }
}

/// Another tank, dead-reckoned to the tick's time (§9.4): a tank of the engine's scene, with
/// [`SceneTank::ours`] set for the bots of this process.
pub type TankView = SceneTank;

/// A flag as a bot sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlagView {
    /// Flag index.
    pub index: u16,
    /// Its type as far as known (loose flags are disguised as `PZ`; team flags always show their team).
    pub abbv: Abbv,
    /// Status.
    pub status: FlagStatus,
    /// The player carrying it.
    pub owner: Option<u8>,
    /// Where it is at the tick (a flying flag is followed along its flight).
    pub pos: Vec3,
    /// The team of a team flag.
    pub team: Option<Team>,
}

/// Our own tank and gun.
#[derive(Debug, Clone, Copy)]
pub struct Me<'a> {
    /// Our player id.
    pub id: u8,
    /// Our team.
    pub team: Team,
    /// Our callsign.
    pub callsign: &'a str,
    /// Our tank: position, velocity, heading, status, the flag we carry.
    pub tank: &'a Tank,
    /// Seconds until a shot can be fired (0: now).
    pub reload: f32,
    /// The index of the flag we carry.
    pub flag_index: Option<u16>,
    /// The id our next shot will carry (slot + salt << 8) when a slot is free (it picks the way through
    /// teleporters with several destinations).
    pub next_shot_id: Option<u16>,
}

impl Me<'_> {
    /// Alive.
    pub fn alive(&self) -> bool {
        self.tank.is_alive()
    }

    /// Position (bottom centre).
    pub fn pos(&self) -> Vec3 {
        self.tank.pos
    }

    /// Heading, radians.
    pub fn azimuth(&self) -> f32 {
        self.tank.azimuth
    }
}

/// The planner's grid of one server's world, built the first time a bot asks for it.
#[derive(Debug, Default)]
pub(crate) struct NavSlot(OnceCell<NavGrid>, OnceCell<Levels>, TeamBoard);

impl NavSlot {
    pub(crate) fn get(&self, world: &WorldModel, phys: &Physics) -> &NavGrid {
        self.0.get_or_init(|| NavGrid::build(world, phys))
    }

    pub(crate) fn levels(&self, world: &WorldModel, phys: &Physics) -> &Levels {
        self.1.get_or_init(|| Levels::build(world, phys, self.get(world, phys)))
    }
}

/// What the bots of one server in one process tell each other: which flag each is going for, and how far it has
/// to go. A claim holds for [`CLAIM_FOR`] seconds unless renewed.
#[derive(Debug, Default)]
pub(crate) struct TeamBoard(std::cell::RefCell<Vec<Claim>>);

#[derive(Debug, Clone, Copy)]
struct Claim {
    team: Team,
    player: u8,
    flag: u16,
    distance: f32,
    at: f32,
}

/// Seconds a claim on a flag holds without being renewed.
pub const CLAIM_FOR: f32 = 1.5;
/// Most claims kept (one per bot and flag).
const MAX_CLAIMS: usize = 256;

/// The game as one bot sees it at one tick. See the module documentation.
pub struct View<'a> {
    /// The tick's time.
    pub now: Instant,
    /// Seconds since the host started (a monotonic clock for timers of the bot's own).
    pub time: f32,
    /// Seconds since the bot's previous tick.
    pub dt: f32,
    /// Our tank.
    pub me: Me<'a>,
    /// The world.
    pub world: &'a WorldModel,
    /// Every number of the game, from the server's variables and settings.
    pub phys: &'a Physics,
    /// Everything the observer link knows: roster, scores, teams, flags, variables, settings.
    pub game: &'a Game,
    pub(crate) tanks: &'a [TankView],
    /// The tanks of the other bots this host flies on the same server, as their pilots have them now (fresher
    /// than the updates the server relays): the last check before a shot leaves keeps clear of them.
    pub(crate) own_tanks: &'a [(u8, Tank)],
    pub(crate) shots: &'a ShotTracker,
    pub(crate) nav: &'a NavSlot,
}

impl<'a> View<'a> {
    /// The game type.
    pub fn game_type(&self) -> GameType {
        GameType::from_u16(self.game.settings.map_or(0, |s| s.game_type))
    }

    /// Every other player with a tank (observers excluded), dead-reckoned to now.
    pub fn tanks(&self) -> &'a [TankView] {
        self.tanks
    }

    /// One player's tank.
    pub fn tank(&self, id: u8) -> Option<&'a TankView> {
        self.tanks.iter().find(|t| t.id == id)
    }

    /// A player's roster entry (callsign, scores).
    pub fn player(&self, id: u8) -> Option<&'a Player> {
        self.game.player(id)
    }

    /// Whether a player of `team` is our enemy.
    pub fn is_hostile(&self, team: Team) -> bool {
        hostile(self.me.team, team, self.game_type())
    }

    /// Live enemy tanks that are not paused, nearest first.
    pub fn enemies(&self) -> Vec<&'a TankView> {
        let me = self.me.tank.pos;
        let mut v: Vec<&TankView> =
            self.tanks.iter().filter(|t| t.alive && !t.paused && self.is_hostile(t.team)).collect();
        v.sort_by(|a, b| a.pose.pos.distance_squared(me).total_cmp(&b.pose.pos.distance_squared(me)));
        v
    }

    /// Every live shot (ours included), with its whole path.
    pub fn shots(&self) -> impl Iterator<Item = &'a LiveShot> + 'a {
        self.shots.iter().filter(|s| !s.ended)
    }

    /// Every flag the server has (unused indices skipped).
    pub fn flags(&self) -> impl Iterator<Item = FlagView> + 'a {
        let now = self.now;
        let gravity = self.phys.gravity;
        let players = &self.game.players;
        self.game.flags.values().filter(|f| f.info.status != FlagStatus::NoExist).map(move |f| {
            let abbv = f.abbv();
            let owner = (f.info.status == FlagStatus::OnTank).then_some(f.info.owner);
            // A carried flag is where its carrier is.
            let pos = match owner.and_then(|o| players.get(&o)).and_then(|p| p.last_update) {
                Some((u, _)) => Vec3::from(u.pos),
                None => Vec3::from(f.position_at(now, gravity)),
            };
            FlagView { index: f.index, abbv, status: f.info.status, owner, pos, team: team_of_flag(abbv) }
        })
    }

    /// A team's flag (CTF), if it exists.
    pub fn team_flag(&self, team: Team) -> Option<FlagView> {
        self.flags().find(|f| f.team == Some(team))
    }

    /// The bases of a team.
    pub fn bases(&self, team: Team) -> impl Iterator<Item = &'a BaseModel> + 'a {
        let n = team.to_i16();
        self.world.bases.iter().filter(move |b| i32::from(b.team) == i32::from(n))
    }

    /// A server variable's raw text.
    pub fn var(&self, name: &str) -> Option<&'a str> {
        self.game.vars.get_raw(name)
    }

    /// The path planner's grid (built on first use, once per world and shared by every bot of the server).
    pub fn nav(&self) -> &'a NavGrid {
        self.nav.get(self.world, self.phys)
    }

    /// The levels of the world (ground and decks) and the hops between them (built on first use, once per world
    /// and shared by every bot of the server).
    pub fn levels(&self) -> &'a Levels {
        self.nav.levels(self.world, self.phys)
    }

    /// A route over the levels for our tank from where it is to `goal`, avoiding the hops in `avoid` (`None`
    /// when there is none, or when either end is on no modelled level).
    pub fn route_to(&self, goal: Vec3, avoid: &[usize]) -> Option<Route> {
        self.levels().route(self.world, self.nav(), self.me.tank.pos, goal, avoid)
    }

    /// Tells the other bots of our team in this process that we are going for flag `flag`, `distance` units of
    /// driving away (renew it every tick or so: a claim lapses after [`CLAIM_FOR`] seconds).
    pub fn claim_flag(&self, flag: u16, distance: f32) {
        let mut claims = self.nav.2 .0.borrow_mut();
        let now = self.time;
        claims.retain(|c| now - c.at <= CLAIM_FOR && !(c.player == self.me.id && c.flag == flag));
        if claims.len() < MAX_CLAIMS {
            claims.push(Claim { team: self.me.team, player: self.me.id, flag, distance, at: now });
        }
    }

    /// A living team mate (a bot of this process) that claimed flag `flag` lately and is nearer to it than
    /// `distance`.
    pub fn flag_claimed_by_mate(&self, flag: u16, distance: f32) -> Option<u8> {
        let claims = self.nav.2 .0.borrow();
        claims
            .iter()
            .filter(|c| c.team == self.me.team && c.player != self.me.id && c.flag == flag)
            .filter(|c| self.time - c.at <= CLAIM_FOR && c.distance < distance)
            .find(|c| self.tank(c.player).is_some_and(|t| t.alive))
            .map(|c| c.player)
    }

    /// A path for our tank from where it is to `goal` around every obstacle (`None` when there is none).
    pub fn path_to(&self, goal: Vec2) -> Option<Path> {
        self.nav().find_path(self.me.tank.pos.truncate(), goal)
    }

    /// Our gun as the aiming helpers see it.
    pub fn shooter(&self) -> Shooter {
        let mut s = Shooter::of_tank(self.me.tank, self.me.id, self.me.team, self.now);
        if let Some(id) = self.me.next_shot_id {
            s.shot_id = id;
        }
        s
    }

    /// A team mate's predicted motion: from its pilot's own state when this host flies it, else as
    /// [`View::track`].
    pub(crate) fn mate_track(&self, t: &TankView) -> TargetTrack {
        match self.own_tanks.iter().find(|(id, _)| *id == t.id) {
            Some((_, tank)) if t.ours => TargetTrack::own(tank, self.phys),
            _ => self.track(t),
        }
    }

    /// Another tank's predicted motion, as aiming needs it.
    pub fn track(&self, t: &TankView) -> TargetTrack {
        let track = match &t.reckoning {
            Some(r) => TargetTrack::new(*r, t.age, self.phys),
            None => TargetTrack::fixed(t.pose.pos, self.phys),
        };
        track.with_flag(t.flag.unwrap_or(flag::NONE), self.phys)
    }

    /// The azimuth that makes our shot meet `target` on its predicted line or arc, checked on the real path
    /// through the world ([`aim::lead`]).
    pub fn lead(&self, target: &TankView) -> Option<FiringSolution> {
        aim::lead(&self.shooter(), &self.track(target), self.phys, self.world)
    }

    /// A shot at `target` off walls and other ricochet surfaces, or through teleporters ([`aim::bank_shot`]; about
    /// 200 simulated paths, so ask now and then, not every tick).
    pub fn bank_shot(&self, target: &TankView) -> Option<FiringSolution> {
        aim::bank_shot(&self.shooter(), &self.track(target), self.phys, self.world)
    }

    /// Us as the danger helpers see us.
    pub fn danger_me(&self) -> danger::Me {
        danger::Me::new(self.me.tank, self.me.id, self.me.team, self.phys)
    }

    /// The danger options for now: `horizon` seconds ahead, the paused players' shots left out.
    pub fn danger_options(&self, horizon: f32) -> DangerOptions {
        let paused: PlayerSet = self.tanks.iter().filter(|t| t.paused).map(|t| t.id).collect();
        DangerOptions { horizon, paused, ..DangerOptions::default() }
    }

    /// Live shots that will pass within a few units of us in the next `horizon` seconds, soonest first
    /// ([`danger::threats`]).
    pub fn threats(&self, horizon: f32) -> Vec<Threat<'a>> {
        let opts = self.danger_options(horizon);
        danger::threats(&self.danger_me(), self.shots(), self.now, self.phys, &opts)
    }

    /// The controls that take us farthest from `threats` ([`danger::dodge`]), if any threatens.
    pub fn dodge(&self, threats: &[Threat<'_>]) -> Option<Controls> {
        let horizon = threats.iter().map(|t| t.time).fold(0.5_f32, f32::max) + 0.25;
        let opts = self.danger_options(horizon);
        danger::dodge(self.me.tank, &self.danger_me(), threats, self.now, self.phys, self.world, &opts)
    }
}
