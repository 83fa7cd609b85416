//! The server variable store (`MsgSetVar`, fact sheet §5.1 and §10).
//!
//! The server sends every variable it has set right after `MsgAccept` (168 on a stock 2.4 server) and then each
//! change on its own. A value is plain text: a number (`"25.0"`), a word (`"none"`, `"fog"`, a colour name), an
//! empty string, a list (`"0.25 0.25 0.25"`) or an **expression** over other variables such as
//! `_reloadTime = _shotRange / _shotSpeed`. [`VarStore`] keeps the raw text of every name it is given and
//! evaluates expressions when asked, so changing `_shotSpeed` later changes `_reloadTime` too.
//!
//! # Expression grammar
//!
//! ```text
//! expr  := term (('+' | '-') term)*
//! term  := unary (('*' | '/') unary)*
//! unary := ('-' | '+') unary | power
//! power := atom ('^' unary)?             right-associative, binds tighter than unary minus: -2^2 = -4
//! atom  := number | name | '(' expr ')'
//! number: 25  25.0  .5  1.  1e-3  2.5E+2
//! name  : first '_', '$' or an ASCII letter, then ASCII letters, digits or '_'
//! ```
//! Spaces and tabs are ignored between tokens. A name refers to another variable; a variable that is not set, is
//! not a well-formed expression (a word, an empty string, a list), refers to itself through any chain of names,
//! or yields a non-finite number anywhere along the way (division by zero, `(-8)^(1/3)`, overflow) evaluates to
//! `None`. BZFlag's own evaluator (`StateDatabase::eval`) returns NaN in those cases.
//!
//! # Bounds
//!
//! Everything is bounded so a hostile server cannot make evaluation panic, overflow the stack or run long: at
//! most [`MAX_VARS`] names, expressions of at most [`MAX_EXPR_LEN`] bytes nested at most [`MAX_NESTING`] deep, and
//! chains of at most [`MAX_CHAIN`] variables below the one asked for. Evaluated values are cached per variable and
//! the whole cache is dropped on every [`VarStore::set`], so each variable is computed at most once between two
//! changes, however its references fan out, and a steady-state lookup is a map search.
//!
//! The official client only accepts names starting with `_` or `$` and ignores the `poll` variable the server also
//! sends. Storing those is harmless, so this store keeps every name; callers that mirror the client can filter.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

/// Most distinct names a [`VarStore`] holds; [`VarStore::set`] refuses new names beyond this.
pub const MAX_VARS: usize = 4096;
/// Longest value (in bytes) that is parsed as an expression; longer values are kept but evaluate to `None`.
pub const MAX_EXPR_LEN: usize = 1024;
/// Deepest nesting of parentheses, unary signs and powers inside one expression.
pub const MAX_NESTING: usize = 64;
/// Longest chain of variable references below the evaluated variable (`_a = _b`, `_b = _c`, ... ).
pub const MAX_CHAIN: usize = 64;

/// The server variables, name → raw text, with lazily evaluated expressions. See the [module docs](self).
#[derive(Clone, Default)]
pub struct VarStore {
    vars: BTreeMap<String, Entry>,
}

#[derive(Clone)]
struct Entry {
    raw: String,
    /// The value compiled to postfix, or `None` when it is not a well-formed expression.
    program: Option<Box<[Op]>>,
    /// The evaluated value and its height (longest chain of variables below it); reset on every `set`.
    cache: OnceLock<(Option<f64>, usize)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Num(f64),
    Var(Box<str>),
    Neg,
    Add,
    Sub,
    Mul,
    Div,
    Pow,
}

/// Evaluation stopped because a chain of variables went deeper than [`MAX_CHAIN`].
struct TooDeep;

impl VarStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding the variables a stock BZFlag 2.4.26 server sends (`01-ctf-setvars.txt`), without `poll`.
    ///
    /// Useful before the server's `MsgSetVar` arrives and for offline tools; a live session should always replace
    /// them with what the server sends.
    pub fn defaults() -> Self {
        let mut store = Self::new();
        for (name, value) in STOCK {
            store.insert(name, value);
        }
        store
    }

    /// Sets `name` to the raw text `value` (as carried by `MsgSetVar`), replacing any earlier value.
    ///
    /// Returns `false`, and changes nothing, when `name` is new and the store already holds [`MAX_VARS`] names.
    pub fn set(&mut self, name: &str, value: &str) -> bool {
        if !self.vars.contains_key(name) && self.vars.len() >= MAX_VARS {
            return false;
        }
        for entry in self.vars.values_mut() {
            entry.cache.take();
        }
        self.insert(name, value);
        true
    }

    fn insert(&mut self, name: &str, value: &str) {
        let entry = Entry { raw: value.to_owned(), program: compile(value), cache: OnceLock::new() };
        self.vars.insert(name.to_owned(), entry);
    }

    /// Forgets every variable (for a new session).
    pub fn clear(&mut self) {
        self.vars.clear();
    }

    /// The raw text of `name`, as the server sent it.
    pub fn get_raw(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(|e| e.raw.as_str())
    }

    /// Whether `name` is set.
    pub fn contains(&self, name: &str) -> bool {
        self.vars.contains_key(name)
    }

    /// Number of variables set.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether no variable is set.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// Every `(name, raw value)`, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.vars.iter().map(|(k, e)| (k.as_str(), e.raw.as_str()))
    }

    /// Evaluates `name` now: its number, or `None` when it is not set, not a finite numeric expression, part of a
    /// reference cycle, or too deep (see the [module docs](self)).
    pub fn eval(&self, name: &str) -> Option<f64> {
        let mut visiting = Vec::new();
        match self.value_of(name, 0, &mut visiting) {
            Ok((Some(v), _)) if v.is_finite() => Some(v),
            _ => None,
        }
    }

    /// `eval(name)` as an `f32`, or `default` when it is `None` or does not fit an `f32`.
    pub fn get_f32(&self, name: &str, default: f32) -> f32 {
        match self.eval(name) {
            Some(v) if (v as f32).is_finite() => v as f32,
            _ => default,
        }
    }

    /// BZFlag's `StateDatabase::isTrue`: set, and the text is none of `0`, `off`, `false`, `no`, `disable` (any
    /// case). Note that an empty value and `"0.0"` count as true, as in BZFlag.
    pub fn is_true(&self, name: &str) -> bool {
        match self.get_raw(name) {
            None => false,
            Some(raw) => !["0", "off", "false", "no", "disable"].iter().any(|f| raw.eq_ignore_ascii_case(f)),
        }
    }

    /// The value of `name` and its height, evaluated `depth` references below the variable first asked for.
    fn value_of<'a>(
        &'a self,
        name: &str,
        depth: usize,
        visiting: &mut Vec<&'a str>,
    ) -> Result<(Option<f64>, usize), TooDeep> {
        let Some((key, entry)) = self.vars.get_key_value(name) else {
            return Ok((None, 0));
        };
        if let Some(&(value, height)) = entry.cache.get() {
            // The cached height makes the depth check independent of which variable was evaluated first.
            return if depth.saturating_add(height) > MAX_CHAIN { Err(TooDeep) } else { Ok((value, height)) };
        }
        if depth > MAX_CHAIN {
            return Err(TooDeep);
        }
        if visiting.contains(&key.as_str()) {
            // A cycle: every variable on it, and everything that refers to it, is `None`.
            return Ok((None, 0));
        }
        let Some(program) = entry.program.as_deref() else {
            let _ = entry.cache.set((None, 0));
            return Ok((None, 0));
        };
        visiting.push(key.as_str());
        let result = self.run(program, depth, visiting);
        visiting.pop();
        let result = result?;
        let _ = entry.cache.set(result);
        Ok(result)
    }

    /// Runs one compiled expression. Stops at the first `None` operand.
    fn run<'a>(
        &'a self,
        program: &[Op],
        depth: usize,
        visiting: &mut Vec<&'a str>,
    ) -> Result<(Option<f64>, usize), TooDeep> {
        let mut stack: Vec<f64> = Vec::with_capacity(8);
        let mut height = 0;
        for op in program {
            let value = match op {
                Op::Num(n) => Some(*n),
                Op::Var(name) => {
                    let (value, h) = self.value_of(name, depth + 1, visiting)?;
                    height = height.max(h + 1);
                    value
                }
                Op::Neg => stack.pop().map(|a| -a),
                Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Pow => {
                    let (Some(b), Some(a)) = (stack.pop(), stack.pop()) else {
                        return Ok((None, height));
                    };
                    Some(match op {
                        Op::Add => a + b,
                        Op::Sub => a - b,
                        Op::Mul => a * b,
                        Op::Div => a / b,
                        _ => a.powf(b),
                    })
                }
            };
            match value {
                Some(v) if v.is_finite() => stack.push(v),
                _ => return Ok((None, height)),
            }
        }
        match (stack.pop(), stack.is_empty()) {
            (Some(v), true) => Ok((Some(v), height)),
            _ => Ok((None, height)),
        }
    }
}

impl fmt::Debug for VarStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> Extend<(&'a str, &'a str)> for VarStore {
    /// Sets each pair in turn, as [`VarStore::set`] (names beyond [`MAX_VARS`] are dropped).
    fn extend<I: IntoIterator<Item = (&'a str, &'a str)>>(&mut self, iter: I) {
        for (name, value) in iter {
            self.set(name, value);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Compiling: text → tokens → postfix program.

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok<'a> {
    Num(f64),
    Name(&'a str),
    Plus,
    Minus,
    Star,
    Slash,
    Caret,
    Open,
    Close,
}

/// Compiles `text` to postfix, or `None` when it is not a well-formed expression within the limits.
fn compile(text: &str) -> Option<Box<[Op]>> {
    if text.len() > MAX_EXPR_LEN {
        return None;
    }
    let tokens = lex(text)?;
    let mut parser = Parser { tokens: &tokens, pos: 0, depth: 0, out: Vec::with_capacity(tokens.len()) };
    parser.expr()?;
    if parser.pos != tokens.len() {
        return None;
    }
    Some(parser.out.into_boxed_slice())
}

fn lex(text: &str) -> Option<Vec<Tok<'_>>> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(&c) = bytes.get(i) {
        let start = i;
        i += 1;
        let tok = match c {
            b' ' | b'\t' | b'\r' | b'\n' => continue,
            b'+' => Tok::Plus,
            b'-' => Tok::Minus,
            b'*' => Tok::Star,
            b'/' => Tok::Slash,
            b'^' => Tok::Caret,
            b'(' => Tok::Open,
            b')' => Tok::Close,
            b'0'..=b'9' | b'.' => {
                i = number_end(bytes, start);
                Tok::Num(text.get(start..i)?.parse().ok()?)
            }
            b'_' | b'$' | b'a'..=b'z' | b'A'..=b'Z' => {
                while bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') {
                    i += 1;
                }
                Tok::Name(text.get(start..i)?)
            }
            _ => return None,
        };
        tokens.push(tok);
    }
    Some(tokens)
}

/// End of the number starting at `start`: digits and dots, then an exponent if one follows (`e`, optional sign,
/// at least one digit). A malformed mantissa (`1.2.3`, `.`) is left for `f64::from_str` to refuse.
fn number_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    while bytes.get(i).is_some_and(|b| b.is_ascii_digit() || *b == b'.') {
        i += 1;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if bytes.get(j).is_some_and(u8::is_ascii_digit) {
            while bytes.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
            i = j;
        }
    }
    i
}

struct Parser<'t, 'a> {
    tokens: &'t [Tok<'a>],
    pos: usize,
    depth: usize,
    out: Vec<Op>,
}

impl<'a> Parser<'_, 'a> {
    fn peek(&self) -> Option<Tok<'a>> {
        self.tokens.get(self.pos).copied()
    }

    fn expr(&mut self) -> Option<()> {
        self.term()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Plus) => Op::Add,
                Some(Tok::Minus) => Op::Sub,
                _ => return Some(()),
            };
            self.pos += 1;
            self.term()?;
            self.out.push(op);
        }
    }

    fn term(&mut self) -> Option<()> {
        self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Star) => Op::Mul,
                Some(Tok::Slash) => Op::Div,
                _ => return Some(()),
            };
            self.pos += 1;
            self.unary()?;
            self.out.push(op);
        }
    }

    /// Runs `f` one nesting level deeper, refusing to go past [`MAX_NESTING`].
    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Option<()>) -> Option<()> {
        if self.depth >= MAX_NESTING {
            return None;
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn unary(&mut self) -> Option<()> {
        match self.peek() {
            Some(Tok::Minus) => {
                self.pos += 1;
                self.nested(Self::unary)?;
                self.out.push(Op::Neg);
                Some(())
            }
            Some(Tok::Plus) => {
                self.pos += 1;
                self.nested(Self::unary)
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Option<()> {
        self.atom()?;
        if self.peek() == Some(Tok::Caret) {
            self.pos += 1;
            self.nested(Self::unary)?;
            self.out.push(Op::Pow);
        }
        Some(())
    }

    fn atom(&mut self) -> Option<()> {
        let tok = self.peek()?;
        self.pos += 1;
        match tok {
            Tok::Num(n) => self.out.push(Op::Num(n)),
            Tok::Name(name) => self.out.push(Op::Var(name.into())),
            Tok::Open => {
                self.nested(Self::expr)?;
                if self.peek() != Some(Tok::Close) {
                    return None;
                }
                self.pos += 1;
            }
            _ => return None,
        }
        Some(())
    }
}

// ---------------------------------------------------------------------------------------------------------------

/// What a stock BZFlag 2.4.26 server sends (captured, `01-ctf-setvars.txt`), minus `poll`.
const STOCK: &[(&str, &str)] = &[
    ("_HTTPIndexResourceDir", ""),
    ("_agilityAdVel", "2.25"),
    ("_agilityTimeWindow", "1.0"),
    ("_agilityVelDelta", "0.3"),
    ("_ambientLight", "none"),
    ("_angleTolerance", "0.05"),
    ("_angularAd", "1.5"),
    ("_avenueSize", "2.0*_boxBase"),
    ("_baseSize", "60.0"),
    ("_boxBase", "30.0"),
    ("_boxHeight", "6.0*_muzzleHeight"),
    ("_burrowAngularAd", "0.55"),
    ("_burrowDepth", "-1.32"),
    ("_burrowSpeedAd", "0.80"),
    ("_coldetDepth", "6"),
    ("_coldetElements", "4"),
    ("_countdownResumeDelay", "5"),
    ("_cullDepth", "6"),
    ("_cullDist", "fog"),
    ("_cullElements", "16"),
    ("_cullOccluders", "0"),
    ("_disableBots", "0"),
    ("_disableHeightChecks", "0"),
    ("_disableSpeedChecks", "0"),
    ("_drawCelestial", "1"),
    ("_drawClouds", "1"),
    ("_drawGround", "1"),
    ("_drawGroundLights", "1"),
    ("_drawMountains", "1"),
    ("_drawSky", "1"),
    ("_enableDistanceCheck", "0"),
    ("_endShotDetection", "5"),
    ("_explodeTime", "5.0"),
    ("_flagAltitude", "11.0"),
    ("_flagEffectTime", "0.64"),
    ("_flagHeight", "10.0"),
    ("_flagPoleSize", "0.8"),
    ("_flagPoleWidth", "0.025"),
    ("_flagRadius", "2.5"),
    ("_fogColor", "0.25 0.25 0.25"),
    ("_fogDensity", "0.001"),
    ("_fogEnd", "_worldSize"),
    ("_fogMode", "none"),
    ("_fogNoSky", "0"),
    ("_fogStart", "0.5*_worldSize"),
    ("_forbidHunting", "0"),
    ("_forbidIdentify", "0"),
    ("_forbidMarkers", "0"),
    ("_friction", "0"),
    ("_gmActivationTime", "0.5"),
    ("_gmAdLife", "0.95"),
    ("_gmSize", "1.5"),
    ("_gmTurnAngle", "0.628319"),
    ("_gravity", "-9.8"),
    ("_handicapAngAd", "1.5"),
    ("_handicapScoreDiff", "50.0"),
    ("_handicapShotAd", "1.75"),
    ("_handicapVelAd", "2.0"),
    ("_hideFlagsOnRadar", "0"),
    ("_hideTeamFlagsOnRadar", "0"),
    ("_identifyRange", "50.0"),
    ("_jumpVelocity", "19.0"),
    ("_lRAdRate", "0.5"),
    ("_laserAdLife", "0.1"),
    ("_laserAdRate", "0.5"),
    ("_laserAdVel", "1000.0"),
    ("_latitude", "37.5"),
    ("_lockOnAngle", "0.15"),
    ("_longitude", "122"),
    ("_mGunAdLife", "1.0 / _mGunAdRate"),
    ("_mGunAdRate", "10.0"),
    ("_mGunAdVel", "1.5"),
    ("_maxBumpHeight", "0.33"),
    ("_maxFlagGrabs", "4.0"),
    ("_maxLOD", "32767.0"),
    ("_maxPlayerAddDelay", "30"),
    ("_mirror", "none"),
    ("_momentumAngAcc", "1.0"),
    ("_momentumFriction", "0"),
    ("_momentumLinAcc", "1.0"),
    ("_muzzleFront", "_tankRadius + 0.1"),
    ("_muzzleHeight", "1.57"),
    ("_noClimb", "1"),
    ("_noShadows", "0"),
    ("_noSmallPackets", "0"),
    ("_notRespondingTime", "5.0"),
    ("_obeseFactor", "2.5"),
    ("_pauseDropTime", "15.0"),
    ("_positionTolerance", "0.09"),
    ("_pyrBase", "4.0*_tankHeight"),
    ("_pyrHeight", "5.0*_tankHeight"),
    ("_rFireAdLife", "1.0 / _rFireAdRate"),
    ("_rFireAdRate", "2.0"),
    ("_rFireAdVel", "1.5"),
    ("_radarLimit", "_worldSize"),
    ("_rainBaseColor", "none"),
    ("_rainDensity", "none"),
    ("_rainEndZ", "none"),
    ("_rainMaxPuddleTime", "none"),
    ("_rainPuddleColor", "none"),
    ("_rainPuddleSpeed", "none"),
    ("_rainPuddleTexture", "none"),
    ("_rainRoofs", "1"),
    ("_rainSpeed", "none"),
    ("_rainSpeedMod", "none"),
    ("_rainSpins", "none"),
    ("_rainSpread", "none"),
    ("_rainStartZ", "none"),
    ("_rainTexture", "none"),
    ("_rainTopColor", "none"),
    ("_rainType", "none"),
    ("_rejoinTime", "_explodeTime"),
    ("_reloadTime", "_shotRange / _shotSpeed"),
    ("_shieldFlight", "2.7"),
    ("_shockAdLife", "0.2"),
    ("_shockInRadius", "_tankLength"),
    ("_shockOutRadius", "60.0"),
    ("_shotRadius", "0.5"),
    ("_shotRange", "350.0"),
    ("_shotSpeed", "100.0"),
    ("_shotTailLength", "4.0"),
    ("_shotsKeepVerticalVelocity", "0"),
    ("_skyColor", "white"),
    ("_spawnMaxCompTime", "0.01"),
    ("_spawnSafeRadMod", "20"),
    ("_spawnSafeSRMod", "3"),
    ("_spawnSafeSWMod", "1.5"),
    ("_speedChecksLogOnly", "0"),
    ("_squishFactor", "1.0"),
    ("_squishTime", "1.0"),
    ("_srRadiusMult", "2.0"),
    ("_syncLocation", "0"),
    ("_syncTime", "-1.0"),
    ("_tankAngVel", "0.785398"),
    ("_tankExplosionSize", "3.5 * _tankLength"),
    ("_tankHeight", "2.05"),
    ("_tankLength", "6.0"),
    ("_tankRadius", "0.72 * _tankLength"),
    ("_tankSpeed", "25.0"),
    ("_tankWidth", "2.8"),
    ("_targetingAngle", "0.3"),
    ("_targetingDistance", "300.00"),
    ("_teleportBreadth", "4.48"),
    ("_teleportHeight", "10.08"),
    ("_teleportTime", "1.0"),
    ("_teleportWidth", "1.12"),
    ("_thiefAdLife", "0.05"),
    ("_thiefAdRate", "12.0"),
    ("_thiefAdShotVel", "8.0"),
    ("_thiefDropTime", "_reloadTime * 0.5"),
    ("_thiefTinyFactor", "0.5"),
    ("_thiefVelAd", "1.67"),
    ("_tinyFactor", "0.4"),
    ("_trackFade", "3.0"),
    ("_updateThrottleRate", "30.0"),
    ("_useLineRain", "none"),
    ("_useRainBillboards", "none"),
    ("_useRainPuddles", "none"),
    ("_velocityAd", "1.5"),
    ("_wallHeight", "3.0*_tankHeight"),
    ("_weapons", "1"),
    ("_wideAngleAng", "1.745329"),
    ("_wingsGravity", "_gravity"),
    ("_wingsJumpCount", "1"),
    ("_wingsJumpVelocity", "_jumpVelocity"),
    ("_wingsSlideTime", "0.0"),
    ("_worldSize", "800.0"),
];

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/bzflag/01-ctf-setvars.txt");

    fn captured() -> VarStore {
        let text = std::fs::read_to_string(CAPTURE).unwrap();
        let mut store = VarStore::new();
        for line in text.lines() {
            let (name, value) = line.split_once(" = ").unwrap();
            assert!(store.set(name, value));
        }
        store
    }

    fn one(value: &str) -> Option<f64> {
        let mut store = VarStore::new();
        store.set("_x", value);
        store.eval("_x")
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn capture_values() {
        let vars = captured();
        assert_eq!(vars.len(), 168);
        assert_eq!(vars.eval("_reloadTime"), Some(3.5));
        assert!(close(vars.eval("_tankRadius"), 4.32));
        assert!(close(vars.eval("_muzzleFront"), 4.42));
        assert!(close(vars.eval("_wallHeight"), 6.15));
        assert_eq!(vars.eval("_rFireAdLife"), Some(0.5));
        assert_eq!(vars.eval("_mGunAdLife"), Some(0.1));
        assert_eq!(vars.eval("_thiefDropTime"), Some(1.75));
        assert_eq!(vars.eval("_wingsGravity"), Some(-9.8));
        assert_eq!(vars.eval("_radarLimit"), Some(800.0));
        assert_eq!(vars.eval("_fogStart"), Some(400.0));
        assert!(close(vars.eval("_boxHeight"), 9.42));
        assert!(close(vars.eval("_tankExplosionSize"), 21.0));
        assert_eq!(vars.eval("_burrowDepth"), Some(-1.32));
        assert_eq!(vars.get_f32("_tankSpeed", 0.0), 25.0);
        assert_eq!(vars.get_f32("_gravity", 0.0), -9.8);
        // Words, lists and empty values are not numbers.
        for name in ["_ambientLight", "_cullDist", "_fogColor", "_skyColor", "_HTTPIndexResourceDir", "_nope"] {
            assert_eq!(vars.eval(name), None, "{name}");
        }
        assert_eq!(vars.get_f32("_fogMode", 7.0), 7.0);
        assert_eq!(vars.get_raw("_reloadTime"), Some("_shotRange / _shotSpeed"));
        assert_eq!(vars.get_raw("poll"), Some("94670269967616"));
        assert!(vars.is_true("_noClimb"));
        assert!(!vars.is_true("_disableBots"));
        assert!(!vars.is_true("_nope"));
    }

    #[test]
    fn lazy_after_change() {
        let mut vars = captured();
        assert_eq!(vars.eval("_reloadTime"), Some(3.5));
        assert!(vars.set("_shotSpeed", "200"));
        assert_eq!(vars.eval("_reloadTime"), Some(1.75));
        assert_eq!(vars.eval("_thiefDropTime"), Some(0.875));
        vars.set("_tankLength", "10");
        assert!(close(vars.eval("_muzzleFront"), 7.3));
        assert_eq!(vars.eval("_shockInRadius"), Some(10.0));
        vars.set("_shotSpeed", "0");
        assert_eq!(vars.eval("_reloadTime"), None);
        assert_eq!(vars.eval("_thiefDropTime"), None);
        assert_eq!(vars.get_f32("_reloadTime", 3.5), 3.5);
        assert_eq!(vars.len(), 168);
    }

    #[test]
    fn defaults_match_the_capture() {
        let stock = VarStore::defaults();
        let captured = captured();
        assert_eq!(stock.len(), 167);
        for (name, value) in captured.iter().filter(|(n, _)| *n != "poll") {
            assert_eq!(stock.get_raw(name), Some(value), "{name}");
        }
        assert_eq!(stock.eval("_reloadTime"), Some(3.5));
    }

    #[test]
    fn numbers() {
        assert_eq!(one("25"), Some(25.0));
        assert_eq!(one("25.0"), Some(25.0));
        assert_eq!(one(" .5 "), Some(0.5));
        assert_eq!(one("1."), Some(1.0));
        assert_eq!(one("1e-3"), Some(0.001));
        assert_eq!(one("2.5E+2"), Some(250.0));
        assert_eq!(one("-1.32"), Some(-1.32));
        assert_eq!(one("\t+4 "), Some(4.0));
        assert_eq!(one("1e400"), None);
        assert_eq!(one("."), None);
        assert_eq!(one("1.2.3"), None);
        assert_eq!(one("1e"), None); // the number 1, then the name `e`
        assert_eq!(one(""), None);
        assert_eq!(one("   "), None);
    }

    #[test]
    fn precedence_and_power() {
        assert_eq!(one("1 + 2 * 3"), Some(7.0));
        assert_eq!(one("(1 + 2) * 3"), Some(9.0));
        assert_eq!(one("10 - 4 - 3"), Some(3.0));
        assert_eq!(one("64 / 4 / 2"), Some(8.0));
        assert_eq!(one("2 ^ 3 ^ 2"), Some(512.0));
        assert_eq!(one("2 * 3 ^ 2"), Some(18.0));
        assert_eq!(one("-2 ^ 2"), Some(-4.0));
        assert_eq!(one("(-2) ^ 2"), Some(4.0));
        assert_eq!(one("2 ^ -1"), Some(0.5));
        assert_eq!(one("4 ^ 0.5"), Some(2.0));
        assert_eq!(one("2 * -3"), Some(-6.0));
        assert_eq!(one("--3"), Some(3.0));
        assert_eq!(one("-+-3"), Some(3.0));
        assert_eq!(one("1 - -1"), Some(2.0));
        assert_eq!(one("((((7))))"), Some(7.0));
    }

    #[test]
    fn references() {
        let mut vars = VarStore::new();
        vars.set("_a", "2");
        vars.set("$b", "_a * 3");
        vars.set("_c", "($b + _a) ^ 2");
        vars.set("_d2", "_c / 4");
        assert_eq!(vars.eval("$b"), Some(6.0));
        assert_eq!(vars.eval("_c"), Some(64.0));
        assert_eq!(vars.eval("_d2"), Some(16.0));
        vars.set("_a", "-1");
        assert_eq!(vars.eval("_d2"), Some(4.0));
        vars.set("_e", "_undefined + 1");
        assert_eq!(vars.eval("_e"), None);
        vars.set("_undefined", "1");
        assert_eq!(vars.eval("_e"), Some(2.0));
    }

    #[test]
    fn garbage_is_none() {
        for text in [
            "none",
            "fog",
            "white",
            "0.25 0.25 0.25",
            "1 +",
            "* 2",
            "(1",
            "1)",
            "()",
            "1 2",
            "1 # 2",
            "^2",
            "2^",
            "_a _b",
            "é",
            "1;2",
            "\u{0}",
            "(",
            ")",
            "+",
            "-",
        ] {
            assert_eq!(one(text), None, "{text:?}");
        }
        assert_eq!(one("1/0"), None);
        assert_eq!(one("0/0"), None);
        assert_eq!(one("(0-8)^(1/3)"), None);
        assert_eq!(one("10^400"), None);
        assert_eq!(one("1/(1/0)"), None); // non-finite anywhere along the way
    }

    #[test]
    fn cycles() {
        let mut vars = VarStore::new();
        vars.set("_a", "_b");
        vars.set("_b", "_a");
        vars.set("_self", "_self + 1");
        vars.set("_c", "_a + 1");
        vars.set("_ok", "5");
        for name in ["_a", "_b", "_self", "_c"] {
            assert_eq!(vars.eval(name), None, "{name}");
        }
        assert_eq!(vars.eval("_ok"), Some(5.0));
        vars.set("_b", "3");
        assert_eq!(vars.eval("_a"), Some(3.0));
        assert_eq!(vars.eval("_c"), Some(4.0));
        // A longer cycle, entered from each member.
        let mut vars = VarStore::new();
        vars.set("_x", "_y + 1");
        vars.set("_y", "_z * 2");
        vars.set("_z", "_x - 1");
        for name in ["_z", "_y", "_x"] {
            assert_eq!(vars.eval(name), None, "{name}");
        }
    }

    #[test]
    fn deep_nesting() {
        let ok = format!("{}1{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert_eq!(one(&ok), Some(1.0));
        let deep = format!("{}1{}", "(".repeat(MAX_NESTING + 1), ")".repeat(MAX_NESTING + 1));
        assert_eq!(one(&deep), None);
        assert_eq!(one(&"(".repeat(100_000)), None);
        assert_eq!(one(&format!("{}1", "-".repeat(100_000))), None);
        assert_eq!(one(&format!("{}1", "2^".repeat(500))), None);
        // Long flat sums are fine up to the length limit, and refused beyond it.
        let sum = vec!["1"; MAX_EXPR_LEN / 2].join("+");
        assert_eq!(one(&sum), Some((MAX_EXPR_LEN / 2) as f64));
        let long = vec!["1"; MAX_EXPR_LEN].join("+");
        assert_eq!(one(&long), None);
    }

    #[test]
    fn long_chains_are_bounded_and_deterministic() {
        let mut vars = VarStore::new();
        for i in 0..200 {
            vars.set(&format!("_v{i}"), &format!("_v{} + 1", i + 1));
        }
        vars.set("_v200", "0");
        // _v136 is MAX_CHAIN references above _v200; _v135 is one more.
        assert_eq!(vars.eval("_v136"), Some(64.0));
        assert_eq!(vars.eval("_v135"), None);
        assert_eq!(vars.eval("_v0"), None);
        // Order of evaluation does not matter: evaluating the tail first gives the same answers.
        let mut fresh = vars.clone();
        fresh.set("_v200", "0");
        assert_eq!(fresh.eval("_v0"), None);
        assert_eq!(fresh.eval("_v135"), None);
        assert_eq!(fresh.eval("_v136"), Some(64.0));
    }

    #[test]
    fn fan_out_is_fast() {
        // Each variable refers to the next one twice: 2^60 paths without the cache.
        let mut vars = VarStore::new();
        for i in 0..60 {
            vars.set(&format!("_f{i}"), &format!("_f{n} + _f{n}", n = i + 1));
        }
        vars.set("_f60", "1");
        assert_eq!(vars.eval("_f0"), Some(2f64.powi(60)));
        // Also when a chain is too deep, and when a cycle hides at the bottom.
        for i in 0..200 {
            vars.set(&format!("_g{i}"), &format!("_g{n} * _g{n} + _g{n}", n = i + 1));
        }
        assert_eq!(vars.eval("_g0"), None);
        vars.set("_g199", "_g0");
        assert_eq!(vars.eval("_g150"), None);
    }

    #[test]
    fn limits_and_accessors() {
        let mut vars = VarStore::new();
        assert!(vars.is_empty());
        for i in 0..MAX_VARS {
            assert!(vars.set(&format!("_n{i}"), "1"));
        }
        assert!(!vars.set("_oneTooMany", "1"));
        assert!(vars.set("_n0", "2"), "replacing an existing name is always allowed");
        assert_eq!(vars.len(), MAX_VARS);
        assert_eq!(vars.eval("_n0"), Some(2.0));
        assert_eq!(vars.get_raw("_oneTooMany"), None);
        vars.clear();
        assert!(vars.is_empty());

        vars.extend([("_b", "1"), ("_a", "_b"), ("_c", "off")]);
        assert_eq!(vars.iter().collect::<Vec<_>>(), [("_a", "_b"), ("_b", "1"), ("_c", "off")]);
        assert!(!vars.is_true("_c"));
        assert!(vars.contains("_a"));
        assert_eq!(vars.get_f32("_big", 1.0), 1.0);
        vars.set("_big", "1e300");
        assert_eq!(vars.eval("_big"), Some(1e300));
        assert_eq!(vars.get_f32("_big", 1.0), 1.0, "does not fit an f32");
        assert_eq!(format!("{vars:?}"), r#"{"_a": "_b", "_b": "1", "_big": "1e300", "_c": "off"}"#);
    }
}
