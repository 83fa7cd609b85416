//! The BZRC text protocol of the BZRFlag course labs (the agents' side of `bzrflag/server.py`), as a sans-IO
//! engine: [`Agent`] takes one connection's lines and writes its replies, asking a [`Game`] for what the tanks
//! see and passing the tanks' commands to it. `bzhead bzrc` (`src/cli/bzrc.rs`) owns the sockets (the reactor's
//! line listeners) and the tanks (bots of the bot host); `docs/bzrc.md` has the protocol as served.
//!
//! ```text
//! agent.greeting()                         -> "bzrobots 1\n"
//! agent.handle_line(line, t, game, out)    -> Outcome (replies appended to `out`, commands sent to `game`)
//! ```
//!
//! Every reply follows the reference server (`docs/bzrc.md` lists the few deliberate differences): the ack's time
//! and floats as Python 2 prints them (12 significant digits, [`py_float`]), `fail invalid command` without an
//! ack, malformed arguments echoed raw. Nothing a client sends can panic the engine: tokens are parsed, never
//! indexed blindly, and every reply is bounded by the game's size (tanks, shots, obstacles, one occupancy window).

use crate::bot::brains::common::Rng;

/// The greeting the server sends on accept.
pub const GREETING: &str = "bzrobots 1\n";
/// Side of the occupancy window in cells (world units), as the reference's default `--occgrid-width`.
pub const OCCGRID_WIDTH: i32 = 50;

/// The usage lines of `help`, in the reference's order.
const HELP: &[&str] = &[
    "angvel [tankid] [angular_velocity]",
    "bases",
    "constants",
    "flags",
    "help [command]",
    "mytanks",
    "obstacles",
    "occgrid [tankid]",
    "othertanks",
    "quit",
    "scores",
    "shoot [tankid]",
    "shots",
    "speed [tankid] [speed]",
    "teams",
    "timer",
];

/// The noise and sensor settings of one team (standard deviations and probabilities, as the reference's
/// `--<color>-posnoise` etc.).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// Standard deviation of the noise on other tanks' and flags' positions and on obstacle corners (units).
    pub pos: f64,
    /// Standard deviation of the noise on other tanks' angles (radians).
    pub ang: f64,
    /// Standard deviation of the noise on velocities (reported in `constants` only: the reference computes it
    /// but sends no velocity of other tanks).
    pub vel: f64,
    /// p(`1` | occupied) in `occgrid`.
    pub true_positive: f64,
    /// p(`0` | free) in `occgrid`.
    pub true_negative: f64,
}

impl Default for Noise {
    fn default() -> Self {
        Noise { pos: 0.0, ang: 0.0, vel: 0.0, true_positive: 1.0, true_negative: 1.0 }
    }
}

/// One of the asking team's tanks (`mytank`).
#[derive(Debug, Clone, PartialEq)]
pub struct MyTank {
    /// Callsign.
    pub callsign: String,
    /// Alive.
    pub alive: bool,
    /// Shots it can still fire now (most in flight minus those flying).
    pub shots_left: u32,
    /// Seconds until it can fire.
    pub reload: f64,
    /// The team color of the flag it carries, or `-`.
    pub flag: String,
    /// Position.
    pub x: f64,
    /// Position.
    pub y: f64,
    /// Heading, radians.
    pub angle: f64,
    /// Velocity.
    pub vx: f64,
    /// Velocity.
    pub vy: f64,
    /// The turn rate asked for, as a fraction of the most.
    pub angvel: f64,
}

/// Another team's tank (`othertank`).
#[derive(Debug, Clone, PartialEq)]
pub struct OtherTank {
    /// Callsign.
    pub callsign: String,
    /// Team color.
    pub color: String,
    /// Alive.
    pub alive: bool,
    /// The team color of the flag it carries, or `-`.
    pub flag: String,
    /// Position.
    pub x: f64,
    /// Position.
    pub y: f64,
    /// Heading, radians.
    pub angle: f64,
}

/// A team flag (`flag`).
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    /// Its team color.
    pub color: String,
    /// The team color of its carrier, or `none`.
    pub holder: String,
    /// Position.
    pub x: f64,
    /// Position.
    pub y: f64,
}

/// The numbers of `constants` that come from the game.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constants {
    /// Side of the square world.
    pub world_size: f64,
    /// Most turn rate, rad/s.
    pub tank_ang_vel: f64,
    /// Tank length.
    pub tank_length: f64,
    /// Tank radius.
    pub tank_radius: f64,
    /// Most speed, units/s.
    pub tank_speed: f64,
    /// Tank width.
    pub tank_width: f64,
    /// Shot radius.
    pub shot_radius: f64,
    /// Shot range.
    pub shot_range: f64,
    /// Shot speed.
    pub shot_speed: f64,
    /// Flag radius.
    pub flag_radius: f64,
    /// Seconds a killed tank stays dead at least.
    pub explode_time: f64,
}

impl Default for Constants {
    /// The reference server's values (its `constants` reply with the default world).
    fn default() -> Self {
        Constants {
            world_size: 800.0,
            tank_ang_vel: std::f64::consts::FRAC_PI_4,
            tank_length: 6.0,
            tank_radius: 4.32,
            tank_speed: 25.0,
            tank_width: 2.8,
            shot_radius: 0.5,
            shot_range: 350.0,
            shot_speed: 100.0,
            flag_radius: 2.5,
            explode_time: 5.0,
        }
    }
}

/// What the gateway asks of the game: the picture the tanks see and their controls. Team colors are the
/// reference's (`red`, `green`, `blue`, `purple`).
pub trait Game {
    /// The teams and how many tanks each has.
    fn teams(&self) -> Vec<(String, usize)>;
    /// The bases: color and four corners.
    fn bases(&self) -> Vec<(String, [[f64; 2]; 4])>;
    /// The obstacles' footprints, four corners each.
    fn obstacles(&self) -> Vec<[[f64; 2]; 4]>;
    /// The team flags.
    fn flags(&self) -> Vec<Flag>;
    /// Every live shot: x, y, vx, vy.
    fn shots(&self) -> Vec<[f64; 4]>;
    /// The tanks of `team`, in index order.
    fn my_tanks(&self, team: &str) -> Vec<MyTank>;
    /// The tanks of the other teams.
    fn other_tanks(&self, team: &str) -> Vec<OtherTank>;
    /// The game's constants.
    fn constants(&self) -> Constants;
    /// Game seconds since the start, and the time limit.
    fn timer(&self) -> (f64, f64);
    /// A team's total score.
    fn score(&self, team: &str) -> f64;
    /// Whether each world cell `[x, x+1) × [y, y+1)` of the window from (`x0`, `y0`), `cols` × `rows` cells, is
    /// occupied at ground level: column-major (`(x − x0) × rows + (y − y0)`), `cols × rows` values.
    fn occupancy(&self, x0: i32, y0: i32, cols: i32, rows: i32) -> Vec<bool>;
    /// Sets the goal speed of tank `tank` of `team` (a fraction of the most, clamped to [−1, 1]).
    fn speed(&mut self, team: &str, tank: usize, v: f64);
    /// Sets the goal turn rate of tank `tank` of `team` (a fraction of the most, clamped to [−1, 1]).
    fn angvel(&mut self, team: &str, tank: usize, w: f64);
    /// Fires tank `tank` of `team`: false when it cannot (dead, reloading, every shot in flight).
    fn shoot(&mut self, team: &str, tank: usize) -> bool;
    /// Says `text` for the team: false while an earlier taunt still shows.
    fn taunt(&mut self, team: &str, text: &str) -> bool;
}

/// What the caller does after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Go on.
    Continue,
    /// Close the connection once the replies are written (`quit`, a bad handshake).
    Close,
    /// Stop the whole gateway once the replies are written (`endgame`).
    EndGame,
}

/// One agent's connection. See the module documentation.
#[derive(Debug, Clone)]
pub struct Agent {
    team: String,
    noise: Noise,
    rng: Rng,
    greeted: bool,
}

impl Agent {
    /// An agent of `team` (its color) with its noise, and a seed for the noise.
    pub fn new(team: &str, noise: Noise, seed: u64) -> Agent {
        Agent { team: team.to_string(), noise, rng: Rng::new(seed), greeted: false }
    }

    /// The team.
    pub fn team(&self) -> &str {
        &self.team
    }

    /// What the server sends on accept.
    pub fn greeting(&self) -> &'static str {
        GREETING
    }

    /// Handles one line (without its `\n`; any bytes) received `t` seconds after the connection was accepted,
    /// appending the replies to `out`.
    pub fn handle_line(&mut self, line: &[u8], t: f64, game: &mut dyn Game, out: &mut String) -> Outcome {
        let text = String::from_utf8_lossy(line);
        let words: Vec<&str> = text.split_whitespace().collect();
        let Some(&cmd) = words.first() else { return Outcome::Continue };
        if !self.greeted {
            if words == ["agent", "1"] {
                self.greeted = true;
                return Outcome::Continue;
            }
            out.push_str("fail Unrecognized handshake\n");
            return Outcome::Close;
        }
        let args = &words[1..];
        let ack = |out: &mut String, echo: &str| {
            out.push_str("ack ");
            out.push_str(&py_float(t));
            out.push(' ');
            out.push_str(echo);
            out.push('\n');
        };
        let raw = words.join(" ");
        match cmd {
            "help" => {
                self.help(args, out);
                Outcome::Continue
            }
            "shoot" | "occgrid" => {
                let index = match args {
                    [i] => i.parse::<i64>().ok(),
                    _ => None,
                };
                let Some(i) = index else { return refuse(out, &raw, false, ack) };
                let tank = self.tank_index(i, game);
                match (cmd, tank) {
                    ("shoot", Some(tank)) => {
                        ack(out, &format!("shoot {tank}"));
                        out.push_str(if game.shoot(&self.team, tank) { "ok\n" } else { "fail\n" });
                    }
                    ("shoot", None) => {
                        ack(out, &format!("shoot {i}"));
                        out.push_str(&format!("fail Invalid tank ID: {i}\n"));
                    }
                    (_, Some(tank)) => {
                        ack(out, "occgrid");
                        self.occgrid(tank, game, out);
                    }
                    (_, None) => return refuse(out, &raw, false, ack),
                }
                Outcome::Continue
            }
            "speed" | "angvel" => {
                let parsed = match args {
                    [i, v] => i.parse::<i64>().ok().zip(py_float_arg(v)),
                    _ => None,
                };
                let Some((i, v)) = parsed else { return refuse(out, &raw, true, ack) };
                ack(out, &format!("{cmd} {i} {}", py_float(v)));
                let Some(tank) = self.tank_index(i, game) else {
                    out.push_str(&format!("fail Invalid tank ID: {i}\n"));
                    return Outcome::Continue;
                };
                let v = v.clamp(-1.0, 1.0);
                if cmd == "speed" {
                    game.speed(&self.team, tank, v);
                } else {
                    game.angvel(&self.team, tank, v);
                }
                out.push_str("ok\n");
                Outcome::Continue
            }
            "taunt" => {
                ack(out, &raw);
                let ok = !args.is_empty() && game.taunt(&self.team, &args.join(" "));
                out.push_str(if ok { "ok\n" } else { "fail\n" });
                Outcome::Continue
            }
            "quit" | "endgame" | "teams" | "obstacles" | "bases" | "flags" | "shots" | "mytanks" | "othertanks"
            | "constants" | "scores" | "timer" => {
                if !args.is_empty() {
                    return refuse(out, &raw, false, ack);
                }
                ack(out, cmd);
                match cmd {
                    "quit" => {
                        out.push_str("ok\n");
                        return Outcome::Close;
                    }
                    "endgame" => {
                        out.push_str("ok\n");
                        return Outcome::EndGame;
                    }
                    "timer" => {
                        let (elapsed, limit) = game.timer();
                        out.push_str(&format!("timer {elapsed:.6} {}\n", py_num(limit)));
                    }
                    _ => {
                        out.push_str("begin\n");
                        self.list(cmd, game, out);
                        out.push_str("end\n");
                    }
                }
                Outcome::Continue
            }
            _ => {
                out.push_str("fail invalid command\n");
                Outcome::Continue
            }
        }
    }

    /// A tank index of the team, if it has that tank.
    fn tank_index(&self, i: i64, game: &dyn Game) -> Option<usize> {
        let n = game.my_tanks(&self.team).len();
        usize::try_from(i).ok().filter(|&i| i < n)
    }

    fn help(&self, args: &[&str], out: &mut String) {
        let lines: Vec<&&str> = match args {
            [] => HELP.iter().collect(),
            [c, ..] => HELP.iter().filter(|h| h.split(' ').next() == Some(*c)).collect(),
        };
        for l in lines {
            out.push(':');
            out.push_str(l);
            out.push('\n');
        }
    }

    fn gauss(&mut self, sd: f64) -> f64 {
        if sd <= 0.0 || !sd.is_finite() {
            return 0.0;
        }
        // Box–Muller.
        let u1 = f64::from(self.rng.unit()).max(1.0e-9);
        let u2 = f64::from(self.rng.unit());
        sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    fn corners(&mut self, c: &[[f64; 2]; 4], sd: f64) -> String {
        let mut s = String::new();
        for p in c {
            for v in p {
                s.push(' ');
                s.push_str(&py_float(v + self.gauss(sd)));
            }
        }
        s
    }

    /// The items of a list query.
    fn list(&mut self, cmd: &str, game: &dyn Game, out: &mut String) {
        let pos = self.noise.pos;
        match cmd {
            "teams" => {
                for (color, n) in game.teams() {
                    out.push_str(&format!("team {color} {n}\n"));
                }
            }
            "obstacles" => {
                for o in game.obstacles() {
                    out.push_str(&format!("obstacle{}\n", self.corners(&o, pos)));
                }
            }
            "bases" => {
                for (color, c) in game.bases() {
                    out.push_str(&format!("base {color}{}\n", self.corners(&c, 0.0)));
                }
            }
            "flags" => {
                for f in game.flags() {
                    let (x, y) = (f.x + self.gauss(pos), f.y + self.gauss(pos));
                    out.push_str(&format!("flag {} {} {} {}\n", f.color, f.holder, py_float(x), py_float(y)));
                }
            }
            "shots" => {
                for [x, y, vx, vy] in game.shots() {
                    out.push_str(&format!("shot {} {} {} {}\n", py_float(x), py_float(y), py_float(vx), py_float(vy)));
                }
            }
            "mytanks" => {
                for (i, t) in game.my_tanks(&self.team).iter().enumerate() {
                    let reload = if t.reload > 0.0 { py_float((t.reload * 1.0e6).round() / 1.0e6) } else { "0".into() };
                    out.push_str(&format!(
                        "mytank {i} {} {} {} {reload} {}{}{} {} {} {} {} {}\n",
                        t.callsign,
                        status(t.alive),
                        t.shots_left,
                        t.flag,
                        // The reference's format string carries a run of 28 spaces here.
                        " ".repeat(28),
                        t.x.trunc() as i64,
                        t.y.trunc() as i64,
                        py_float(py_angle(t.angle)),
                        py_float(t.vx),
                        py_float(t.vy),
                        py_num(t.angvel),
                    ));
                }
            }
            "othertanks" => {
                let ang = self.noise.ang;
                for t in game.other_tanks(&self.team) {
                    let (x, y) = if t.alive { (t.x + self.gauss(pos), t.y + self.gauss(pos)) } else { (t.x, t.y) };
                    let a = py_angle(t.angle + self.gauss(ang));
                    out.push_str(&format!(
                        "othertank {} {} {} {} {} {} {}\n",
                        t.callsign,
                        t.color,
                        status(t.alive),
                        t.flag,
                        py_float(x),
                        py_float(y),
                        py_float(a)
                    ));
                }
            }
            "constants" => {
                let c = game.constants();
                let n = &self.noise;
                let items: [(&str, String); 18] = [
                    ("team", self.team.clone()),
                    ("worldsize", py_num(c.world_size)),
                    ("tankangvel", py_num(c.tank_ang_vel)),
                    ("tanklength", py_num(c.tank_length)),
                    ("tankradius", py_num(c.tank_radius)),
                    ("tankspeed", py_num(c.tank_speed)),
                    ("tankalive", "alive".into()),
                    ("tankdead", "dead".into()),
                    ("linearaccel", "0.5".into()),
                    ("angularaccel", "0.5".into()),
                    ("tankwidth", py_num(c.tank_width)),
                    ("shotradius", py_num(c.shot_radius)),
                    ("shotrange", py_num(c.shot_range)),
                    ("shotspeed", py_num(c.shot_speed)),
                    ("flagradius", py_num(c.flag_radius)),
                    ("explodetime", py_num(c.explode_time)),
                    ("truepositive", py_num(n.true_positive)),
                    ("truenegative", py_num(n.true_negative)),
                ];
                for (k, v) in items {
                    out.push_str(&format!("constant {k} {v}\n"));
                }
            }
            "scores" => {
                let teams: Vec<(String, f64)> =
                    game.teams().into_iter().map(|(c, _)| (c.clone(), game.score(&c))).collect();
                for (a, sa) in &teams {
                    for (b, sb) in &teams {
                        if a != b {
                            out.push_str(&format!("score {a} {b} {}\n", py_float(((sa - sb) * 100.0).round() / 100.0)));
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The body of `occgrid` for a tank: the window of [`OCCGRID_WIDTH`] cells around it, clipped to the world,
    /// one line per column x, one character per row y; `fail` for a dead tank.
    fn occgrid(&mut self, tank: usize, game: &dyn Game, out: &mut String) {
        let Some(t) = game.my_tanks(&self.team).into_iter().nth(tank).filter(|t| t.alive) else {
            out.push_str("fail\n");
            return;
        };
        let half = (game.constants().world_size / 2.0).clamp(1.0, 1.0e5) as i32;
        let w = OCCGRID_WIDTH;
        let (cx, cy) = (t.x.clamp(-1.0e5, 1.0e5), t.y.clamp(-1.0e5, 1.0e5));
        let x0 = (cx - f64::from(w) / 2.0).floor() as i32;
        let y0 = (cy - f64::from(w) / 2.0).floor() as i32;
        let (x1, y1) = ((x0 + w).min(half), (y0 + w).min(half));
        let (x0, y0) = (x0.max(-half), y0.max(-half));
        let (cols, rows) = ((x1 - x0).max(0), (y1 - y0).max(0));
        out.push_str(&format!("begin\nat {x0},{y0}\nsize {cols}x{rows}\n"));
        let (tp, tn) = (self.noise.true_positive, self.noise.true_negative);
        let truth = game.occupancy(x0, y0, cols, rows);
        for x in 0..cols {
            for y in 0..rows {
                let truth = usize::try_from(x * rows + y).ok().and_then(|i| truth.get(i)).copied().unwrap_or(false);
                let p_one = if truth { tp } else { 1.0 - tn };
                let one = if p_one >= 1.0 {
                    true
                } else if p_one <= 0.0 {
                    false
                } else {
                    f64::from(self.rng.unit()) < p_one
                };
                out.push(if one { '1' } else { '0' });
            }
            out.push('\n');
        }
        out.push_str("end\n");
    }
}

/// Writes the refusal of a command's arguments (wrong count, not numbers): the ack of the raw line, `fail
/// Invalid parameter(s)`, and a bare `fail` after it for `speed` and `angvel`, as the reference.
fn refuse(out: &mut String, raw: &str, bare_fail: bool, ack: impl Fn(&mut String, &str)) -> Outcome {
    ack(out, raw);
    out.push_str("fail Invalid parameter(s)\n");
    if bare_fail {
        out.push_str("fail\n");
    }
    Outcome::Continue
}

fn status(alive: bool) -> &'static str {
    if alive {
        "alive"
    } else {
        "dead"
    }
}

/// A float argument as Python's `float()` reads it; NaN is refused.
fn py_float_arg(s: &str) -> Option<f64> {
    let lower = s.to_ascii_lowercase();
    let v: f64 = match lower.trim_start_matches(['+', '-']) {
        "inf" | "infinity" => {
            if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        _ => s.parse().ok()?,
    };
    (!v.is_nan()).then_some(v)
}

/// An angle in (−π, π], as the reference sends them.
pub fn py_angle(a: f64) -> f64 {
    if !a.is_finite() {
        return 0.0;
    }
    let mut a = a.rem_euclid(std::f64::consts::TAU);
    if a > std::f64::consts::PI {
        a -= std::f64::consts::TAU;
    }
    a
}

/// A float as Python 2's `str()` prints it: `%.12g`, with `.0` added to whole numbers (`150.0`, `-0.0`).
pub fn py_float(v: f64) -> String {
    let s = g12(v);
    if s.contains(['.', 'e', 'n', 'i']) {
        s
    } else {
        s + ".0"
    }
}

/// A number as the reference prints its ints and floats: whole values without `.0` (`800`, `0`), others as
/// [`py_float`].
pub fn py_num(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1.0e12 {
        format!("{}", v as i64)
    } else {
        py_float(v)
    }
}

/// `%.12g`.
fn g12(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{v:.11e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if (-4..12).contains(&exp) {
        let decimals = usize::try_from(11 - exp).unwrap_or(0);
        strip(&format!("{v:.decimals$}"))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mant), exp.abs())
    }
}

#[cfg(test)]
mod tests;
