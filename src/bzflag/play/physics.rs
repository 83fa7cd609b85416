//! Every number the game's physics needs, read from the server variables (§10) and `MsgGameSettings`, and the
//! flags that change a tank's size, speed and shots.

use crate::bzflag::consts::GameOptions;
use crate::bzflag::msg::{Abbv, GameSettings};
use crate::bzflag::vars::VarStore;

/// Flag abbreviations with an effect on physics, shots or hits.
#[allow(missing_docs)]
pub mod flag {
    use crate::bzflag::msg::Abbv;
    pub const NONE: Abbv = Abbv([0, 0]);
    pub const VELOCITY: Abbv = Abbv([b'V', 0]);
    pub const QUICK_TURN: Abbv = Abbv([b'Q', b'T']);
    pub const OSCILLATION: Abbv = Abbv([b'O', b'O']);
    pub const RAPID_FIRE: Abbv = Abbv([b'F', 0]);
    pub const MACHINE_GUN: Abbv = Abbv([b'M', b'G']);
    pub const GUIDED_MISSILE: Abbv = Abbv([b'G', b'M']);
    pub const LASER: Abbv = Abbv([b'L', 0]);
    pub const RICOCHET: Abbv = Abbv([b'R', 0]);
    pub const SUPER_BULLET: Abbv = Abbv([b'S', b'B']);
    pub const STEALTH: Abbv = Abbv([b'S', b'T']);
    pub const TINY: Abbv = Abbv([b'T', 0]);
    pub const NARROW: Abbv = Abbv([b'N', 0]);
    pub const SHIELD: Abbv = Abbv([b'S', b'H']);
    pub const STEAMROLLER: Abbv = Abbv([b'S', b'R']);
    pub const SHOCK_WAVE: Abbv = Abbv([b'S', b'W']);
    pub const PHANTOM_ZONE: Abbv = Abbv([b'P', b'Z']);
    pub const JUMPING: Abbv = Abbv([b'J', b'P']);
    pub const CLOAKING: Abbv = Abbv([b'C', b'L']);
    pub const THIEF: Abbv = Abbv([b'T', b'H']);
    pub const BURROW: Abbv = Abbv([b'B', b'U']);
    pub const WINGS: Abbv = Abbv([b'W', b'G']);
    pub const AGILITY: Abbv = Abbv([b'A', 0]);
    pub const OBESITY: Abbv = Abbv([b'O', 0]);
    pub const LEFT_TURN_ONLY: Abbv = Abbv([b'L', b'T']);
    pub const RIGHT_TURN_ONLY: Abbv = Abbv([b'R', b'T']);
    pub const FORWARD_ONLY: Abbv = Abbv([b'F', b'O']);
    pub const REVERSE_ONLY: Abbv = Abbv([b'R', b'O']);
    pub const MOMENTUM: Abbv = Abbv([b'M', 0]);
    pub const NO_JUMPING: Abbv = Abbv([b'N', b'J']);
    pub const TRIGGER_HAPPY: Abbv = Abbv([b'T', b'R']);
    pub const BOUNCY: Abbv = Abbv([b'B', b'Y']);
}

/// A flag's effect on a tank's dimensions (`Player::updateFlagEffect`): scale of length (and radius), width
/// and height.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlagEffect {
    /// Scale of the length and of the hit radius (Obesity, Tiny, Thief).
    pub length: f32,
    /// Scale of the width (also Narrow: 0.001).
    pub width: f32,
    /// Scale of the height.
    pub height: f32,
}

impl FlagEffect {
    /// The target dimensions with `flag` held. (The client grows and shrinks towards them over
    /// `_flagEffectTime`; we use the target at once.)
    pub fn of(flag: Abbv, phys: &Physics) -> FlagEffect {
        let (length, width) = if flag == flag::OBESITY {
            (phys.obese_factor, phys.obese_factor)
        } else if flag == flag::TINY {
            (phys.tiny_factor, phys.tiny_factor)
        } else if flag == flag::THIEF {
            (phys.thief_tiny_factor, phys.thief_tiny_factor)
        } else if flag == flag::NARROW {
            (1.0, 0.001)
        } else {
            (1.0, 1.0)
        };
        FlagEffect { length, width, height: 1.0 }
    }
}

/// Every physics number, from the server variables and `MsgGameSettings` (§9.1, §10). Build it with
/// [`Physics::new`]; values that are missing or not finite fall back to the 2.4 defaults, and values that must
/// be positive are clamped so no computation divides by zero.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub struct Physics {
    pub tank_speed: f32,
    pub tank_ang_vel: f32,
    pub tank_length: f32,
    pub tank_width: f32,
    pub tank_height: f32,
    pub tank_radius: f32,
    pub muzzle_height: f32,
    pub muzzle_front: f32,
    pub shot_speed: f32,
    pub shot_range: f32,
    pub reload_time: f32,
    pub shot_radius: f32,
    pub shots_keep_vertical_velocity: bool,
    pub gravity: f32,
    pub jump_velocity: f32,
    pub wings_gravity: f32,
    pub wings_jump_velocity: f32,
    pub wings_jump_count: i32,
    pub wings_slide_time: f32,
    /// Side of the square world (`_worldSize`, or `MsgGameSettings`).
    pub world_size: f32,
    pub flag_radius: f32,
    pub explode_time: f32,
    pub teleport_time: f32,
    pub position_tolerance: f32,
    pub angle_tolerance: f32,
    pub update_throttle_rate: f32,
    pub no_small_packets: bool,
    pub not_responding_time: f32,
    pub velocity_ad: f32,
    pub angular_ad: f32,
    pub thief_vel_ad: f32,
    pub agility_ad_vel: f32,
    pub agility_time_window: f32,
    pub agility_vel_delta: f32,
    pub burrow_depth: f32,
    pub burrow_speed_ad: f32,
    pub burrow_angular_ad: f32,
    pub rfire_ad_vel: f32,
    pub rfire_ad_life: f32,
    pub rfire_ad_rate: f32,
    pub mgun_ad_vel: f32,
    pub mgun_ad_life: f32,
    pub mgun_ad_rate: f32,
    pub laser_ad_vel: f32,
    pub laser_ad_life: f32,
    pub laser_ad_rate: f32,
    pub gm_ad_life: f32,
    pub gm_turn_angle: f32,
    pub gm_activation_time: f32,
    pub thief_ad_life: f32,
    pub thief_ad_shot_vel: f32,
    pub thief_ad_rate: f32,
    pub shock_in_radius: f32,
    pub shock_out_radius: f32,
    pub shock_ad_life: f32,
    pub sr_radius_mult: f32,
    pub tiny_factor: f32,
    pub obese_factor: f32,
    pub thief_tiny_factor: f32,
    pub momentum_lin_acc: f32,
    pub momentum_ang_acc: f32,
    pub friction: f32,
    pub momentum_friction: f32,
    pub handicap_vel_ad: f32,
    pub handicap_ang_ad: f32,
    pub handicap_shot_ad: f32,
    pub max_bump_height: f32,
    pub no_climb: bool,
    pub pause_drop_time: f32,
    pub end_shot_detection: f32,
    /// `MsgGameSettings` linear acceleration (0 = unlimited).
    pub linear_acceleration: f32,
    /// `MsgGameSettings` angular acceleration (0 = unlimited).
    pub angular_acceleration: f32,
    /// Shots per player (`MsgGameSettings`; 1 until known).
    pub max_shots: u16,
    /// Game option bits.
    pub options: GameOptions,
}

impl Default for Physics {
    fn default() -> Self {
        Physics::new(&VarStore::defaults(), None)
    }
}

impl Physics {
    /// Reads every number from `vars` (evaluating expressions, so `_reloadTime` follows `_shotSpeed`) and the game
    /// settings. Call again after each `MsgSetVar` (or each tick) to follow `/set` live.
    pub fn new(vars: &VarStore, settings: Option<&GameSettings>) -> Physics {
        let f = |name: &str, default: f32| {
            let v = vars.get_f32(name, default);
            if v.is_finite() && v.abs() < 1.0e7 {
                v
            } else {
                default
            }
        };
        // Values that must be strictly positive.
        let pos = |name: &str, default: f32| {
            let v = f(name, default);
            if v > 1.0e-6 {
                v
            } else {
                default
            }
        };
        let tank_length = pos("_tankLength", 6.0);
        let tank_radius = pos("_tankRadius", 0.72 * tank_length);
        let shot_speed = pos("_shotSpeed", 100.0);
        let shot_range = pos("_shotRange", 350.0);
        let gravity = f("_gravity", -9.8);
        let jump_velocity = f("_jumpVelocity", 19.0);
        let rfire_rate = pos("_rFireAdRate", 2.0);
        let mgun_rate = pos("_mGunAdRate", 10.0);
        let settings_world = settings.map(|s| s.world_size).filter(|w| w.is_finite() && *w > 1.0 && *w < 1.0e7);
        let finite = |v: f32| if v.is_finite() && v > 0.0 && v < 1.0e7 { v } else { 0.0 };
        Physics {
            tank_speed: f("_tankSpeed", 25.0).max(0.0),
            tank_ang_vel: f("_tankAngVel", std::f32::consts::FRAC_PI_4).max(0.0),
            tank_length,
            tank_width: pos("_tankWidth", 2.8),
            tank_height: pos("_tankHeight", 2.05),
            tank_radius,
            muzzle_height: f("_muzzleHeight", 1.57),
            muzzle_front: f("_muzzleFront", tank_radius + 0.1),
            shot_speed,
            shot_range,
            reload_time: pos("_reloadTime", shot_range / shot_speed),
            shot_radius: pos("_shotRadius", 0.5),
            shots_keep_vertical_velocity: vars.is_true("_shotsKeepVerticalVelocity"),
            gravity,
            jump_velocity,
            wings_gravity: f("_wingsGravity", gravity),
            wings_jump_velocity: f("_wingsJumpVelocity", jump_velocity),
            wings_jump_count: f("_wingsJumpCount", 1.0).clamp(0.0, 1000.0) as i32,
            wings_slide_time: f("_wingsSlideTime", 0.0).max(0.0),
            world_size: settings_world.unwrap_or_else(|| pos("_worldSize", 800.0)),
            flag_radius: pos("_flagRadius", 2.5),
            explode_time: f("_explodeTime", 5.0).max(0.0),
            teleport_time: f("_teleportTime", 1.0).max(0.0),
            position_tolerance: f("_positionTolerance", 0.09).max(0.0),
            angle_tolerance: f("_angleTolerance", 0.05).max(0.0),
            update_throttle_rate: f("_updateThrottleRate", 30.0).max(0.0),
            // The client tests `eval(_noSmallPackets) > 0`, not `isTrue`.
            no_small_packets: vars.get_f32("_noSmallPackets", 0.0) > 0.0,
            not_responding_time: pos("_notRespondingTime", 5.0),
            velocity_ad: pos("_velocityAd", 1.5),
            angular_ad: pos("_angularAd", 1.5),
            thief_vel_ad: pos("_thiefVelAd", 1.67),
            agility_ad_vel: pos("_agilityAdVel", 2.25),
            agility_time_window: f("_agilityTimeWindow", 1.0).max(0.0),
            agility_vel_delta: f("_agilityVelDelta", 0.3).max(0.0),
            burrow_depth: f("_burrowDepth", -1.32).min(0.0),
            burrow_speed_ad: pos("_burrowSpeedAd", 0.8),
            burrow_angular_ad: pos("_burrowAngularAd", 0.55),
            rfire_ad_vel: pos("_rFireAdVel", 1.5),
            rfire_ad_life: pos("_rFireAdLife", 1.0 / rfire_rate),
            rfire_ad_rate: rfire_rate,
            mgun_ad_vel: pos("_mGunAdVel", 1.5),
            mgun_ad_life: pos("_mGunAdLife", 1.0 / mgun_rate),
            mgun_ad_rate: mgun_rate,
            laser_ad_vel: pos("_laserAdVel", 1000.0),
            laser_ad_life: pos("_laserAdLife", 0.1),
            laser_ad_rate: pos("_laserAdRate", 0.5),
            gm_ad_life: pos("_gmAdLife", 0.95),
            gm_turn_angle: f("_gmTurnAngle", 0.628319).max(0.0),
            gm_activation_time: f("_gmActivationTime", 0.5).max(0.0),
            thief_ad_life: pos("_thiefAdLife", 0.05),
            thief_ad_shot_vel: pos("_thiefAdShotVel", 8.0),
            thief_ad_rate: pos("_thiefAdRate", 12.0),
            shock_in_radius: f("_shockInRadius", tank_length).max(0.0),
            shock_out_radius: f("_shockOutRadius", 60.0).max(0.0),
            shock_ad_life: pos("_shockAdLife", 0.2),
            sr_radius_mult: f("_srRadiusMult", 2.0).max(0.0),
            tiny_factor: pos("_tinyFactor", 0.4),
            obese_factor: pos("_obeseFactor", 2.5),
            thief_tiny_factor: pos("_thiefTinyFactor", 0.5),
            momentum_lin_acc: f("_momentumLinAcc", 1.0).max(0.0),
            momentum_ang_acc: f("_momentumAngAcc", 1.0).max(0.0),
            friction: f("_friction", 0.0).max(0.0),
            momentum_friction: f("_momentumFriction", 0.0).max(0.0),
            handicap_vel_ad: f("_handicapVelAd", 2.0),
            handicap_ang_ad: f("_handicapAngAd", 1.5),
            handicap_shot_ad: f("_handicapShotAd", 1.75),
            max_bump_height: f("_maxBumpHeight", 0.33).max(0.0),
            no_climb: vars.is_true("_noClimb") || !vars.contains("_noClimb"),
            pause_drop_time: f("_pauseDropTime", 15.0).max(0.0),
            end_shot_detection: f("_endShotDetection", 5.0),
            linear_acceleration: settings.map_or(0.0, |s| finite(s.linear_acceleration)),
            angular_acceleration: settings.map_or(0.0, |s| finite(s.angular_acceleration)),
            max_shots: settings.map_or(1, |s| s.max_shots),
            options: settings.map_or(GameOptions::empty(), |s| GameOptions::from_bits_retain(s.game_options)),
        }
    }

    /// Half the world's side: the outer walls' distance from the centre.
    pub fn half_world(&self) -> f32 {
        self.world_size * 0.5
    }

    /// The planar speed limit for a tank holding `flag` (`Player::getMaxSpeed`: V and TH raise it).
    pub fn max_speed(&self, flag: Abbv) -> f32 {
        if flag == flag::VELOCITY {
            self.tank_speed * self.velocity_ad
        } else if flag == flag::THIEF {
            self.tank_speed * self.thief_vel_ad
        } else {
            self.tank_speed
        }
    }

    /// True when jumping is allowed without a flag (game option).
    pub fn jumping_allowed(&self) -> bool {
        self.options.contains(GameOptions::JUMPING)
    }

    /// True when every shot ricochets (`+r`).
    pub fn all_ricochet(&self) -> bool {
        self.options.contains(GameOptions::RICOCHET)
    }

    /// True when shots of one's own team kill (`NO_TEAM_KILLS` not set).
    pub fn team_kills(&self) -> bool {
        !self.options.contains(GameOptions::NO_TEAM_KILLS)
    }
}
