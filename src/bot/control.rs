//! What a bot asks its tank to do: [`Control`].

use crate::bzflag::consts::player;

/// The control surface a [`super::Bot`] sets every tick.
///
/// `speed`, `turn` and `grab` stay as they are from one tick to the next (a hand on the wheel); `fire`, `jump` and
/// `drop_flag` are one-shot requests that are cleared after each tick, like chat lines.
///
/// Every change of `speed` or `turn` makes the tank's motion differ from what other players predict, and so makes
/// the tank send an update (§9.3): steady controls are cheaper for everyone. [`Control::drive`] rounds both to a
/// fine grid so that tiny jitters do not count as changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Control {
    /// Speed as a fraction of `_tankSpeed`: −0.5 (full reverse) to 1 (full ahead).
    pub speed: f32,
    /// Turn rate as a fraction of `_tankAngVel`: −1 (full right, clockwise) to 1 (full left).
    pub turn: f32,
    /// Jump this tick (when the server allows jumping).
    pub jump: bool,
    /// Fire this tick (when a shot is loaded; the shot flies along the tank's heading).
    pub fire: bool,
    /// Drop the flag this tick (refused for sticky flags, as the official client refuses).
    pub drop_flag: bool,
    /// The player we aim at: a guided missile fired now locks on it (`MsgGMUpdate`), as the official client's
    /// lock does.
    pub target: Option<u8>,
    /// Grab flags the tank drives over, like the official client (default on). Our own team's flag is never
    /// grabbed: carrying it onto another team's base would capture it and kill our own team.
    pub grab: bool,
    /// Grab our own team's flag too when `grab` is on (default off): to bring it home from where an enemy
    /// dropped it. Never carry it onto another team's base: that captures it, and our whole team dies.
    pub grab_own_flag: bool,
    pub(crate) chat: Vec<(u8, String)>,
    pub(crate) notes: Vec<super::BotEvent>,
}

impl Default for Control {
    fn default() -> Self {
        Control {
            speed: 0.0,
            turn: 0.0,
            jump: false,
            fire: false,
            drop_flag: false,
            target: None,
            grab: true,
            grab_own_flag: false,
            chat: Vec::new(),
            notes: Vec::new(),
        }
    }
}

impl Control {
    /// Sets speed and turn (clamped to their ranges, NaN as 0), rounded to 1/64 so that noise in a steering
    /// computation does not change the motion others predict.
    pub fn drive(&mut self, speed: f32, turn: f32) {
        let q = |v: f32, lo: f32, hi: f32| if v.is_finite() { (v.clamp(lo, hi) * 64.0).round() / 64.0 } else { 0.0 };
        self.speed = q(speed, -0.5, 1.0);
        self.turn = q(turn, -1.0, 1.0);
    }

    /// Stops the tank (speed and turn 0).
    pub fn stop(&mut self) {
        self.speed = 0.0;
        self.turn = 0.0;
    }

    /// Says `text` to everybody.
    pub fn say(&mut self, text: impl Into<String>) {
        self.say_to(player::ALL_PLAYERS, text);
    }

    /// Says `text` to one player (its id), or to a team (251 − team number), or to admins (252).
    pub fn say_to(&mut self, to: u8, text: impl Into<String>) {
        // A handful per tick at most: the server's spam filter drops floods anyway.
        if self.chat.len() < 8 {
            self.chat.push((to, text.into()));
        }
    }

    /// Tells the host's user that `goal` cannot be reached from where we are (a [`super::BotEvent::Unreachable`]),
    /// with a word on what was wanted there ("flag", "base" ...).
    pub fn unreachable(&mut self, goal: glam::Vec3, what: &str) {
        if self.notes.len() < 8 {
            self.notes.push(super::BotEvent::Unreachable { goal: goal.to_array(), what: what.to_string() });
        }
    }

    /// Clears the one-shot requests after a tick.
    pub(crate) fn end_tick(&mut self) {
        self.jump = false;
        self.fire = false;
        self.drop_flag = false;
        self.chat.clear();
    }
}
