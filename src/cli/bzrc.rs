//! `bzhead bzrc SERVER --team TEAM=ADDR [--team ...] --tanks N [noise]`: the BZRC text protocol of the BZRFlag
//! course labs as a gateway, so that unmodified course agents drive real tanks on a real server. One listener per
//! team (every address ADDR's host resolves to); each team's tanks are bots of the bot host whose controls the
//! agent sets ([`bzhead::bzrc::Agent`] speaks the protocol; `docs/bzrc.md`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bzhead::bot::{Bot, BotConfig, BotHost, BotId, Control, HostConfig, HostEvent, ServerId, View};
use bzhead::bzflag::consts::{PlayerType, Team, DEFAULT_PORT};
use bzhead::bzflag::session::team_of_flag;
use bzhead::bzflag::world::{Geometry, ObstacleKind, TankBox, WorldModel};
use bzhead::bzrc::{self, Agent, Constants, Flag, MyTank, Noise, OtherTank, Outcome};
use bzhead::reactor::{Line, LineConnId, LineEvent, LineLimits, LineListenerId};

use super::exit::{CONNECT, OK, PROTOCOL, USAGE};

/// Arguments of `bzhead bzrc`.
#[derive(clap::Args)]
pub struct BzrcArgs {
    /// Server, HOST[:PORT] (port 5154 by default).
    server: String,
    /// A team and where its agent connects, e.g. red=localhost:50100 (every address the host resolves to is
    /// listened on); repeat for each team.
    #[arg(long = "team", value_name = "TEAM=ADDR", required = true)]
    teams: Vec<String>,
    /// Tanks per team.
    #[arg(long, default_value_t = 1, value_parser = bzhead::args::int(1u32, 20))]
    tanks: u32,
    /// Standard deviation of the noise on other tanks' and flags' positions and on obstacle corners.
    #[arg(long, default_value_t = 0.0, value_parser = bzhead::args::float(0.0, 1000.0))]
    posnoise: f64,
    /// Standard deviation of the noise on other tanks' angles (radians).
    #[arg(long, default_value_t = 0.0, value_parser = bzhead::args::float(0.0, 10.0))]
    angnoise: f64,
    /// Standard deviation of the noise on velocities (accepted as the reference does; it sends no noisy velocity).
    #[arg(long, default_value_t = 0.0, value_parser = bzhead::args::float(0.0, 1000.0))]
    velnoise: f64,
    /// Probability that an occupied cell of `occgrid` reads 1.
    #[arg(long, default_value_t = 1.0, value_parser = bzhead::args::float(0.0, 1.0))]
    occgrid_true_positive: f64,
    /// Probability that a free cell of `occgrid` reads 0.
    #[arg(long, default_value_t = 1.0, value_parser = bzhead::args::float(0.0, 1.0))]
    occgrid_true_negative: f64,
    /// Leave cleanly after this many seconds.
    #[arg(long = "for", value_name = "SECONDS", value_parser = bzhead::args::seconds(0.0))]
    for_secs: Option<f64>,
    /// Seed of the noise.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Lines of one agent answered per event-loop turn, so that a pipelining agent never holds up the tanks' ticks.
const LINES_PER_TURN: usize = 256;

/// The height of the slice of the world `occgrid` and `obstacles` show (BZFlag's `_tankHeight`).
const TANK_HEIGHT: f32 = 2.05;

/// The reference's team colors and ours.
const COLORS: [(&str, Team); 4] =
    [("red", Team::Red), ("green", Team::Green), ("blue", Team::Blue), ("purple", Team::Purple)];

fn color_of(team: Team) -> Option<&'static str> {
    COLORS.iter().find(|(_, t)| *t == team).map(|(c, _)| *c)
}

/// One tank the gateway flies: what its agent asked for and what it last saw.
#[derive(Debug, Default)]
struct Slot {
    color: &'static str,
    speed: f32,
    angvel: f32,
    fire: bool,
    me: Option<MyTank>,
}

/// What the tanks share with the gateway: their slots (by bot) and the picture of the last tick.
#[derive(Debug, Default)]
struct Shared {
    slots: HashMap<BotId, Slot>,
    /// Bots of each team in index order.
    order: Vec<(&'static str, Vec<BotId>)>,
    picture_at: Option<Instant>,
    /// Every tank but the viewer's: id, one of the gateway's own, the line.
    others: Vec<(u8, bool, OtherTank)>,
    shots: Vec<[f64; 4]>,
    flags: Vec<Flag>,
    constants: Option<Constants>,
    reload_time: f64,
    time: f64,
    taunts: Vec<(&'static str, String)>,
    last_taunt: HashMap<&'static str, f64>,
}

/// The bot that flies one tank for an agent.
struct Tank {
    shared: Rc<RefCell<Shared>>,
    bot: Rc<RefCell<Option<BotId>>>,
}

impl Bot for Tank {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        let Some(bot) = *self.bot.borrow() else { return };
        let mut sh = self.shared.borrow_mut();
        if sh.picture_at != Some(view.now) {
            sh.picture_at = Some(view.now);
            picture(&mut sh, view);
        }
        let color = sh.slots.get(&bot).map_or("", |s| s.color);
        let taunt = sh.taunts.iter().position(|(c, _)| *c == color).map(|i| sh.taunts.remove(i).1);
        if let Some(t) = taunt {
            control.say(t);
        }
        let Some(slot) = sh.slots.get_mut(&bot) else { return };
        control.drive(slot.speed, slot.angvel);
        let fired = std::mem::take(&mut slot.fire) && view.me.alive();
        control.fire = fired;
        let me = view.me;
        let max_shots = view.game.settings.map_or(1, |s| u32::from(s.max_shots));
        let flying = view.shots().filter(|s| s.shooter == me.id).count() as u32;
        let flag = team_of_flag(me.tank.flag).and_then(color_of).unwrap_or("-");
        slot.me = Some(MyTank {
            callsign: me.callsign.to_string(),
            alive: me.alive(),
            shots_left: max_shots.saturating_sub(flying + u32::from(fired)),
            reload: if fired { f64::from(view.phys.reload_time) } else { f64::from(me.reload) },
            flag: flag.to_string(),
            // Dead tanks are far away, as the reference has them.
            x: if me.alive() { f64::from(me.tank.pos.x) } else { -999999.0 },
            y: if me.alive() { f64::from(me.tank.pos.y) } else { -999999.0 },
            angle: f64::from(me.tank.azimuth),
            vx: f64::from(me.tank.vel.x),
            vy: f64::from(me.tank.vel.y),
            angvel: f64::from(slot.angvel),
        });
    }
}

/// The shared part of the picture at a tick: other tanks, shots, flags, constants.
fn picture(sh: &mut Shared, view: &View<'_>) {
    let p = view.phys;
    sh.time = f64::from(view.time);
    sh.reload_time = f64::from(p.reload_time);
    sh.constants = Some(Constants {
        world_size: f64::from(p.world_size),
        tank_ang_vel: f64::from(p.tank_ang_vel),
        tank_length: f64::from(p.tank_length),
        tank_radius: f64::from(p.tank_radius),
        tank_speed: f64::from(p.tank_speed),
        tank_width: f64::from(p.tank_width),
        shot_radius: f64::from(p.shot_radius),
        shot_range: f64::from(p.shot_range),
        shot_speed: f64::from(p.shot_speed),
        flag_radius: f64::from(p.flag_radius),
        explode_time: f64::from(p.explode_time),
    });
    let name = |id: u8| view.player(id).map_or_else(|| format!("player{id}"), |p| p.callsign.clone());
    let mut others: Vec<(u8, bool, OtherTank)> = view
        .tanks()
        .iter()
        .map(|t| {
            let color = color_of(t.team).unwrap_or("rogue");
            let flag = t.flag.and_then(team_of_flag).and_then(color_of).unwrap_or("-");
            let (x, y) =
                if t.alive { (f64::from(t.pose.pos.x), f64::from(t.pose.pos.y)) } else { (-999999.0, -999999.0) };
            let o = OtherTank {
                callsign: name(t.id),
                color: color.to_string(),
                alive: t.alive,
                flag: flag.to_string(),
                x,
                y,
                angle: f64::from(t.pose.azimuth),
            };
            (t.id, t.ours, o)
        })
        .collect();
    others.sort_by_key(|(id, ..)| *id);
    sh.others = others;
    let now = view.now;
    sh.shots = view
        .shots()
        .filter_map(|s| {
            let age = s.age(now);
            let pos = s.position_at(age)?;
            let vel = s.segments.iter().find(|g| age >= g.t0 && age < g.t1).map_or(s.velocity, |g| g.velocity);
            Some([f64::from(pos.x), f64::from(pos.y), f64::from(vel.x), f64::from(vel.y)])
        })
        .collect();
    sh.flags = view
        .flags()
        .filter_map(|f| {
            let color = color_of(f.team?)?;
            let holder = f.owner.and_then(|o| view.player(o)).and_then(|p| color_of(p.team)).unwrap_or("none");
            Some(Flag {
                color: color.to_string(),
                holder: holder.to_string(),
                x: f64::from(f.pos.x),
                y: f64::from(f.pos.y),
            })
        })
        .collect();
}

/// The game as the agents see it, at reply time.
struct GameView<'a> {
    shared: &'a mut Shared,
    world: Option<&'a WorldModel>,
    scores: HashMap<&'static str, f64>,
    time_limit: f64,
    reload_time: f64,
}

/// The four corners of a footprint, in the reference's order: (+x,+y), (+x,−y), (−x,−y), (−x,+y), rotated.
fn corners(cx: f32, cy: f32, angle: f32, hx: f32, hy: f32) -> [[f64; 2]; 4] {
    let (s, c) = angle.sin_cos();
    let at = |dx: f32, dy: f32| [f64::from(cx + dx * c - dy * s), f64::from(cy + dx * s + dy * c)];
    [at(hx, hy), at(hx, -hy), at(-hx, -hy), at(-hx, hy)]
}

impl bzrc::Game for GameView<'_> {
    fn teams(&self) -> Vec<(String, usize)> {
        let mut teams: Vec<(String, usize)> = self.shared.order.iter().map(|(c, b)| (c.to_string(), b.len())).collect();
        // The gateway's own tanks are counted above.
        for (_, _, o) in self.shared.others.iter().filter(|(_, ours, _)| !ours) {
            match teams.iter_mut().find(|(c, _)| *c == o.color) {
                Some(t) => t.1 += 1,
                None => teams.push((o.color.clone(), 1)),
            }
        }
        teams
    }

    fn bases(&self) -> Vec<(String, [[f64; 2]; 4])> {
        let Some(w) = self.world else { return Vec::new() };
        w.bases
            .iter()
            .filter_map(|b| {
                let color = color_of(Team::from_u16(b.team))?;
                Some((color.to_string(), corners(b.pos.x, b.pos.y, b.angle, b.size.x, b.size.y)))
            })
            .collect()
    }

    fn obstacles(&self) -> Vec<[[f64; 2]; 4]> {
        let Some(w) = self.world else { return Vec::new() };
        w.obstacles
            .iter()
            .filter(|o| o.bounds.min.z < TANK_HEIGHT && !o.passable.drive_through)
            .filter_map(|o| match (o.kind, &o.geometry) {
                (ObstacleKind::Wall | ObstacleKind::Base, _) | (_, Geometry::None) => None,
                (ObstacleKind::Box | ObstacleKind::Pyramid | ObstacleKind::Teleporter, _) => {
                    Some(corners(o.pos.x, o.pos.y, o.angle, o.size.x, o.size.y))
                }
                _ => {
                    let b = &o.bounds;
                    let (cx, cy) = ((b.min.x + b.max.x) / 2.0, (b.min.y + b.max.y) / 2.0);
                    Some(corners(cx, cy, 0.0, (b.max.x - b.min.x) / 2.0, (b.max.y - b.min.y) / 2.0))
                }
            })
            .collect()
    }

    fn flags(&self) -> Vec<Flag> {
        self.shared.flags.clone()
    }

    fn shots(&self) -> Vec<[f64; 4]> {
        self.shared.shots.clone()
    }

    fn my_tanks(&self, team: &str) -> Vec<MyTank> {
        let Some((_, bots)) = self.shared.order.iter().find(|(c, _)| *c == team) else { return Vec::new() };
        bots.iter()
            .enumerate()
            .map(|(i, b)| {
                self.shared.slots.get(b).and_then(|s| s.me.clone()).unwrap_or_else(|| MyTank {
                    callsign: format!("{team}{i}"),
                    alive: false,
                    shots_left: 0,
                    reload: 0.0,
                    flag: "-".into(),
                    x: -999999.0,
                    y: -999999.0,
                    angle: 0.0,
                    vx: 0.0,
                    vy: 0.0,
                    angvel: 0.0,
                })
            })
            .collect()
    }

    fn other_tanks(&self, team: &str) -> Vec<OtherTank> {
        self.shared.others.iter().filter(|(_, _, o)| o.color != team).map(|(_, _, o)| o.clone()).collect()
    }

    fn constants(&self) -> Constants {
        self.shared.constants.unwrap_or_default()
    }

    fn timer(&self) -> (f64, f64) {
        (self.shared.time, self.time_limit)
    }

    fn score(&self, team: &str) -> f64 {
        self.scores.get(team).copied().unwrap_or(0.0)
    }

    fn occupancy(&self, x0: i32, y0: i32, cols: i32, rows: i32) -> Vec<bool> {
        let n = usize::try_from(cols.max(0) * rows.max(0)).unwrap_or(0);
        let Some(w) = self.world else { return vec![false; n] };
        // A cell is occupied when a 0.9 × 0.9 square at its centre, from the ground to tank height, meets
        // something a tank cannot drive through. The whole window first: most windows hold nothing.
        let cell = |cx: f32, cy: f32, hx: f32, hy: f32| TankBox {
            pos: bzhead::Vec3::new(cx, cy, 0.0),
            angle: 0.0,
            half_length: hx,
            half_width: hy,
            height: TANK_HEIGHT,
        };
        let (fx, fy, fc, fr) = (x0 as f32, y0 as f32, cols as f32, rows as f32);
        let mut ids = Vec::new();
        w.tank_collisions(&cell(fx + fc / 2.0, fy + fr / 2.0, fc / 2.0, fr / 2.0), &mut ids);
        if ids.is_empty() {
            return vec![false; n];
        }
        // Then each cell that meets the bounds of something the window met (an unknown id: every cell).
        let everywhere = ([f32::MIN; 2], [f32::MAX; 2]);
        let rects: Vec<([f32; 2], [f32; 2])> = ids
            .iter()
            .map(|id| {
                w.obstacle(*id)
                    .map_or(everywhere, |o| ([o.bounds.min.x, o.bounds.min.y], [o.bounds.max.x, o.bounds.max.y]))
            })
            .collect();
        let mut v = Vec::with_capacity(n);
        for x in x0..x0 + cols {
            for y in y0..y0 + rows {
                let (cx, cy) = (x as f32 + 0.5, y as f32 + 0.5);
                let near = rects
                    .iter()
                    .any(|(lo, hi)| lo[0] < cx + 0.45 && hi[0] > cx - 0.45 && lo[1] < cy + 0.45 && hi[1] > cy - 0.45);
                v.push(near && w.tank_collides(&cell(cx, cy, 0.45, 0.45)).is_some());
            }
        }
        v
    }

    fn speed(&mut self, team: &str, tank: usize, v: f64) {
        if let Some(s) = self.slot(team, tank) {
            s.speed = v as f32;
        }
    }

    fn angvel(&mut self, team: &str, tank: usize, w: f64) {
        if let Some(s) = self.slot(team, tank) {
            s.angvel = w as f32;
        }
    }

    fn shoot(&mut self, team: &str, tank: usize) -> bool {
        let Some(s) = self.slot(team, tank) else { return false };
        let ready = s.me.as_ref().is_some_and(|m| m.alive && m.reload <= 0.0 && m.shots_left > 0);
        if !ready || s.fire {
            return false;
        }
        s.fire = true;
        // Fired as far as the agent can tell (the reference fires at once): the tank fires at its next tick.
        let reload = self.reload_time;
        if let Some(m) = self.slot(team, tank).and_then(|s| s.me.as_mut()) {
            m.reload = reload;
            m.shots_left = m.shots_left.saturating_sub(1);
        }
        true
    }

    fn taunt(&mut self, team: &str, text: &str) -> bool {
        let Some(color) = COLORS.iter().map(|(c, _)| *c).find(|c| *c == team) else { return false };
        let now = self.shared.time;
        if self.shared.last_taunt.get(color).is_some_and(|t| now - t < 3.0) {
            return false;
        }
        self.shared.last_taunt.insert(color, now);
        let text: String = text.chars().take(120).collect();
        self.shared.taunts.retain(|(c, _)| *c != color);
        self.shared.taunts.push((color, text));
        true
    }
}

impl GameView<'_> {
    fn slot(&mut self, team: &str, tank: usize) -> Option<&mut Slot> {
        let bot = self.shared.order.iter().find(|(c, _)| *c == team)?.1.get(tank).copied()?;
        self.shared.slots.get_mut(&bot)
    }
}

/// One team's side of the gateway.
struct TeamSide {
    color: &'static str,
    listeners: Vec<LineListenerId>,
    conn: Option<(LineConnId, Instant, Agent)>,
}

/// Parses `TEAM=HOST:PORT` into the color and every address it resolves to.
/// `Err` is the exit code and the reason: usage, or an address that does not resolve.
fn team_spec(s: &str) -> Result<(&'static str, Vec<SocketAddr>), (u8, String)> {
    let usage = |why: String| (USAGE, why);
    let (team, addr) = s.split_once('=').ok_or_else(|| usage(format!("--team {s:?}: expected TEAM=HOST:PORT")))?;
    let color = COLORS
        .iter()
        .map(|(c, _)| *c)
        .find(|c| c.eq_ignore_ascii_case(team.trim()))
        .ok_or_else(|| usage(format!("--team {s:?}: the team must be red, green, blue or purple")))?;
    let mut addrs: Vec<SocketAddr> =
        addr.to_socket_addrs().map_err(|e| (CONNECT, format!("--team {s:?}: cannot resolve {addr:?}: {e}")))?.collect();
    addrs.sort();
    addrs.dedup();
    if addrs.is_empty() {
        return Err((CONNECT, format!("--team {s:?}: {addr:?} resolves to no address")));
    }
    Ok((color, addrs))
}

/// Runs `bzhead bzrc`.
pub fn run(a: BzrcArgs) -> u8 {
    let server = match super::resolve_or_exit(&a.server, DEFAULT_PORT) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut specs = Vec::new();
    for t in &a.teams {
        match team_spec(t) {
            Ok(s) if specs.iter().any(|(c, _)| *c == s.0) => {
                eprintln!("bzhead: --team {t:?}: that team is given twice");
                return USAGE;
            }
            Ok(s) => specs.push(s),
            Err((code, why)) => {
                eprintln!("bzhead: {why}");
                return code;
            }
        }
    }
    let noise = Noise {
        pos: a.posnoise,
        ang: a.angnoise,
        vel: a.velnoise,
        true_positive: a.occgrid_true_positive,
        true_negative: a.occgrid_true_negative,
    };
    // No least time between two polls (the bot host batches relayed messages by default): an agent that asks one
    // request at a time waits for each answer.
    let config = HostConfig { shared_eye: true, poll_interval: Duration::ZERO, ..HostConfig::default() };
    let mut host = match BotHost::new(config) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("bzhead: cannot start the event loop: {e}");
            return PROTOCOL;
        }
    };
    let shared = Rc::new(RefCell::new(Shared::default()));
    let mut sides = Vec::new();
    let mut names = HashMap::new();
    let limits = LineLimits { max_connections: 2, ..LineLimits::default() };
    for (color, addrs) in &specs {
        let mut listeners = Vec::new();
        for addr in addrs {
            match host.reactor().add_line_listener(*addr, limits) {
                Ok((id, local)) => {
                    eprintln!("bzhead: port for {color}: {} ({local})", local.port());
                    listeners.push(id);
                }
                Err(e) => {
                    eprintln!("bzhead: cannot listen on {addr} for {color}: {e}");
                    return CONNECT;
                }
            }
        }
        let team = COLORS.iter().find(|(c, _)| c == color).map_or(Team::Red, |(_, t)| *t);
        let mut bots = Vec::new();
        for i in 0..a.tanks {
            let cell = Rc::new(RefCell::new(None));
            let bot = Tank { shared: shared.clone(), bot: cell.clone() };
            let config = BotConfig {
                callsign: format!("{color}{i}"),
                motto: "bzhead bzrc".into(),
                team,
                player_type: PlayerType::Computer,
                udp: false,
                seed: u64::from(i) + 1,
            };
            let id = host.add_bot(server, config, Box::new(bot));
            names.insert(id, format!("{color}{i}"));
            *cell.borrow_mut() = Some(id);
            shared.borrow_mut().slots.insert(id, Slot { color, ..Slot::default() });
            bots.push(id);
        }
        shared.borrow_mut().order.push((color, bots));
        sides.push(TeamSide { color, listeners, conn: None });
    }
    let first = shared.borrow().order.first().and_then(|(_, b)| b.first().copied());
    let server_id = first.and_then(|b| host.server_of(b)).unwrap_or(ServerId(0));
    let sig_rx = super::leave_on_signals(host.reactor().waker());
    let start = Instant::now();
    let deadline = a.for_secs.map(|s| start + super::secs(s));
    let mut seed = a.seed;
    let mut leaving: Option<Instant> = None;
    let mut out = String::new();
    let mut code = OK;
    let mut busy = false;
    loop {
        // An agent with more lines waiting than one batch: come straight back for them.
        let wait = if busy { Duration::ZERO } else { Duration::from_millis(100) };
        busy = false;
        if let Err(e) = host.turn(Some(wait)) {
            eprintln!("bzhead: event loop failed: {e}");
            return PROTOCOL;
        }
        while let Some(ev) = host.poll_event() {
            if let HostEvent::Bot { bot, at, event } = ev {
                let name = names.get(&bot).map_or("?", String::as_str);
                eprintln!("{}", super::bot::bot_line(at.saturating_duration_since(start), name, &event, false));
            }
        }
        if let Some((c, why)) = super::bot::all_stopped(&host).filter(|_| leaving.is_none()) {
            eprintln!("bzhead: every tank stopped: {}", bzhead::text::for_terminal(&why));
            code = c;
            host.leave_all();
            leaving = Some(Instant::now());
        }
        while let Some(ev) = host.reactor().poll_line_event() {
            match ev {
                LineEvent::Accepted { listener, conn, peer } => {
                    let Some(side) = sides.iter_mut().find(|s| s.listeners.contains(&listener)) else { continue };
                    if side.conn.is_some() || leaving.is_some() {
                        // One agent per team at a time: the reference accepts and closes with no greeting.
                        host.reactor().line_close(conn);
                        continue;
                    }
                    eprintln!("bzhead: {} agent connected from {peer}", side.color);
                    seed = seed.wrapping_add(1);
                    let agent = Agent::new(side.color, noise, seed);
                    host.reactor().line_send(conn, agent.greeting().as_bytes());
                    side.conn = Some((conn, Instant::now(), agent));
                }
                LineEvent::Closed { conn, reason, .. } => {
                    let Some(side) = sides.iter_mut().find(|s| s.conn.as_ref().is_some_and(|c| c.0 == conn)) else {
                        continue;
                    };
                    eprintln!("bzhead: {} agent gone: {reason}", side.color);
                    side.conn = None;
                    stop_team(&mut shared.borrow_mut(), side.color);
                }
            }
        }
        let mut end_game = false;
        for side in &mut sides {
            let Some((conn, since, agent)) = side.conn.as_mut() else { continue };
            let conn = *conn;
            // A bounded batch per turn, so that one agent's pipeline does not hold up the tanks.
            for n in 0..=LINES_PER_TURN {
                if n == LINES_PER_TURN {
                    busy = true;
                    break;
                }
                let Some(line) = host.reactor().line_next(conn) else { break };
                out.clear();
                let outcome = match line {
                    Line::Overlong => {
                        out.push_str("fail invalid command\n");
                        Outcome::Continue
                    }
                    Line::Text(bytes) => {
                        let t = since.elapsed().as_secs_f64();
                        let mut sh = shared.borrow_mut();
                        let (scores, time_limit) = scores(&host, server_id, &sh);
                        let reload_time = sh.reload_time;
                        let world = host.server_world(server_id);
                        let mut view = GameView { shared: &mut sh, world, scores, time_limit, reload_time };
                        agent.handle_line(&bytes, t, &mut view, &mut out)
                    }
                };
                host.reactor().line_send(conn, out.as_bytes());
                match outcome {
                    Outcome::Continue => {}
                    Outcome::Close => {
                        host.reactor().line_close(conn);
                        break;
                    }
                    Outcome::EndGame => {
                        end_game = true;
                        host.reactor().line_close(conn);
                        break;
                    }
                }
            }
        }
        let signalled = sig_rx.try_recv().is_ok();
        if leaving.is_none() && (end_game || signalled || deadline.is_some_and(|d| Instant::now() >= d)) {
            host.leave_all();
            leaving = Some(Instant::now());
        }
        if let Some(t) = leaving {
            if host.is_done() || t.elapsed() > Duration::from_secs(3) {
                break;
            }
        }
    }
    code
}

/// Every team's total (1000 per capture, as the reference) and the time limit.
fn scores(host: &BotHost, server: ServerId, sh: &Shared) -> (HashMap<&'static str, f64>, f64) {
    let mut scores = HashMap::new();
    let mut limit = 300000.0;
    if let Some(game) = host.server_game(server) {
        for info in game.teams.iter().flatten() {
            if let Some(c) = color_of(info.team) {
                scores.insert(c, 1000.0 * f64::from(info.wins));
            }
        }
        if let Some((left, _)) = game.time_left.filter(|(l, _)| *l > 0) {
            limit = sh.time + f64::from(left);
        }
    }
    (scores, limit)
}

/// Stops a team's tanks (its agent left).
fn stop_team(sh: &mut Shared, color: &str) {
    for s in sh.slots.values_mut().filter(|s| s.color == color) {
        s.speed = 0.0;
        s.angvel = 0.0;
        s.fire = false;
    }
}
