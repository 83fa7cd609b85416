//! Where a flag is while it flies (fact sheet §8.3), computed the way the official client animates it
//! (`World::updateFlag` in BZFlag 2.4).
//!
//! Three flag states move on their own, all driven by the flight fields of the `Flag` record (`MsgFlagUpdate`,
//! `MsgDropFlag`; §5.1): the flight time so far `ft0`, the total duration `end`, the initial vertical velocity
//! `v0`, and the world's `_gravity` `g` (negative). With `ft = ft0 + elapsed` (seconds since the record was
//! received), the vertical arc term is `arc(ft) = ft × (v0 + ½·g·ft)`.
//!
//! * **InAir** (3, a dropped or thrown flag): x, y and the base height interpolate linearly from the launch
//!   position to the landing position with the fraction `ft / end`, and `arc(ft)` is added to z. At `ft ≥ end` the
//!   flag lies at the landing position (the server then sends it as `OnGround`).
//! * **Coming** (4, a new flag entering the game): it sits at the record's x, y. During the first half of the flight
//!   it hovers at `hover = ½·end × (v0 + ¼·g·end)` (= `arc(end/2)`, the top of the arc) above its base; during the
//!   second half it falls along `arc(ft)`; at `ft ≥ end` it lies at the record's position.
//! * **Going** (5, a flag vanishing, e.g. dropped where it cannot stay or out of grabs): it rises along `arc(ft)`
//!   above the landing position during the first half, hovers at `hover` during the second half, and is gone (the
//!   server then marks it `NoExist`) at `ft ≥ end`.
//!
//! The server makes these arcs meet the ground: for a drop it picks `v0 = −g × upTime` and `end = upTime +
//! downTime` so that the top is `_flagAltitude` (11) above the launch height; for a new flag `end =
//! 2·√(−2·_flagAltitude / g)` and `v0 = −½·g·end`, so the hover height is exactly `_flagAltitude`.
//!
//! Where bzhead differs from the client, on purpose:
//! * a **Coming** flag's base height is the record's `position.z` (where the server put it) and it comes to rest
//!   there. The client measures from `landing.z`, which the server does not set for new flags (it is left over
//!   from the flag's previous drop), and puts the flag at z = 0 on touchdown until the server's next update;
//! * hostile or broken numbers never give NaN or infinity: a flight whose time fields are not finite, or whose
//!   duration is not positive, is already over, a negative or NaN elapsed time counts as 0, a negative flight
//!   time so far counts as 0, and a position that would not be finite is replaced by the resting position.
//!
//! The server never advances `ft0`: a flag already in flight when a player joins is sent with `ft0 = 0`, so a late
//! joiner sees (and bzhead computes) the whole flight again from the start. That is the protocol, not a bug here.
//!
//! Everything here is a pure function of its arguments; there is no clock.
#![forbid(unsafe_code)]

use glam::Vec3;

/// The flag states that move on their own (the `status` field of a `Flag` record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlightKind {
    /// `FlagInAir` (3): thrown or dropped, flying from the launch to the landing position.
    InAir,
    /// `FlagComing` (4): a new flag hovering in and then falling to its position.
    Coming,
    /// `FlagGoing` (5): a flag rising, hovering and vanishing.
    Going,
}

impl FlightKind {
    /// The kind for a `Flag` record status, or `None` for a status that does not fly (0 NoExist, 1 OnGround, 2 OnTank,
    /// anything unknown).
    pub const fn from_status(status: u16) -> Option<Self> {
        match status {
            3 => Some(FlightKind::InAir),
            4 => Some(FlightKind::Coming),
            5 => Some(FlightKind::Going),
            _ => None,
        }
    }

    /// The `Flag` record status of this kind.
    pub const fn status(self) -> u16 {
        match self {
            FlightKind::InAir => 3,
            FlightKind::Coming => 4,
            FlightKind::Going => 5,
        }
    }
}

/// The flight fields of one `Flag` record, as received.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlagFlight {
    /// What kind of flight.
    pub kind: FlightKind,
    /// The record's `position` (for a drop the server sets it to the landing position; for a new flag it is where
    /// the flag will appear).
    pub position: Vec3,
    /// The record's launch position.
    pub launch: Vec3,
    /// The record's landing position.
    pub landing: Vec3,
    /// Flight time so far when the record was sent, seconds.
    pub flight_time: f32,
    /// Total duration of the flight, seconds.
    pub flight_end: f32,
    /// Initial vertical velocity, units/s.
    pub initial_velocity: f32,
}

/// Which part of its flight a flag is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlightPhase {
    /// InAir: on its arc from launch to landing.
    Flying,
    /// Coming (first half) or Going (second half): standing still at the top of the arc.
    Hovering,
    /// Coming, second half: falling to its position.
    Falling,
    /// Going, first half: rising from its landing position.
    Rising,
    /// InAir or Coming: the flight is over and the flag lies on the ground (or a building).
    Landed,
    /// Going: the flight is over and the flag no longer exists.
    Gone,
}

impl FlightPhase {
    /// Whether the flight is over ([`FlightPhase::Landed`] or [`FlightPhase::Gone`]).
    pub const fn is_over(self) -> bool {
        matches!(self, FlightPhase::Landed | FlightPhase::Gone)
    }
}

/// A flag's computed place at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlightSample {
    /// Where the flag is. For [`FlightPhase::Gone`], where it vanished (the top of its arc).
    pub position: Vec3,
    /// Which part of the flight.
    pub phase: FlightPhase,
}

/// The vertical arc term `t × (v0 + ½·g·t)`: height above the base after `t` seconds.
pub fn arc_height(t: f32, initial_velocity: f32, gravity: f32) -> f32 {
    t * (initial_velocity + 0.5 * gravity * t)
}

/// The hover height of a Coming or Going flag: `½·end × (v0 + ¼·g·end)`, the arc term at half the flight.
pub fn hover_height(flight_end: f32, initial_velocity: f32, gravity: f32) -> f32 {
    0.5 * flight_end * (initial_velocity + 0.25 * gravity * flight_end)
}

impl FlagFlight {
    /// Where the flag is `elapsed` seconds after the record was received, under `gravity` (`_gravity`, negative).
    pub fn at(&self, elapsed: f32, gravity: f32) -> FlightSample {
        let end = self.flight_end;
        let ft = self.flight_time.max(0.0) + elapsed.max(0.0);
        let over = !(end.is_finite() && end > 0.0 && ft.is_finite() && ft < end);
        let (phase, position) = match self.kind {
            FlightKind::InAir => {
                if over {
                    (FlightPhase::Landed, self.landing)
                } else {
                    let mut p = self.launch.lerp(self.landing, ft / end);
                    p.z += arc_height(ft, self.initial_velocity, gravity);
                    (FlightPhase::Flying, p)
                }
            }
            FlightKind::Coming => {
                if over {
                    (FlightPhase::Landed, self.position)
                } else if ft >= 0.5 * end {
                    (FlightPhase::Falling, self.above(self.position, arc_height(ft, self.initial_velocity, gravity)))
                } else {
                    (
                        FlightPhase::Hovering,
                        self.above(self.position, hover_height(end, self.initial_velocity, gravity)),
                    )
                }
            }
            FlightKind::Going => {
                let base = Vec3::new(self.position.x, self.position.y, self.landing.z);
                if over {
                    (FlightPhase::Gone, self.above(base, hover_height(end, self.initial_velocity, gravity)))
                } else if ft < 0.5 * end {
                    (FlightPhase::Rising, self.above(base, arc_height(ft, self.initial_velocity, gravity)))
                } else {
                    (FlightPhase::Hovering, self.above(base, hover_height(end, self.initial_velocity, gravity)))
                }
            }
        };
        let position = if position.is_finite() { position } else { self.resting_place() };
        FlightSample { position, phase }
    }

    /// Seconds of flight left `elapsed` seconds after the record was received (0 once it is over).
    pub fn time_left(&self, elapsed: f32) -> f32 {
        let ft = self.flight_time.max(0.0) + elapsed.max(0.0);
        let left = self.flight_end - ft;
        if left.is_finite() && left > 0.0 {
            left
        } else {
            0.0
        }
    }

    /// Where the flag ends up: the landing position for InAir and Going, the record's position for Coming.
    pub fn resting_place(&self) -> Vec3 {
        match self.kind {
            FlightKind::Coming => self.position,
            FlightKind::InAir | FlightKind::Going => self.landing,
        }
    }

    /// `base` raised by `height`.
    fn above(&self, base: Vec3, height: f32) -> Vec3 {
        Vec3::new(base.x, base.y, base.z + height)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: f32 = -9.8;
    const ALT: f32 = 11.0; // _flagAltitude
    const TANK_HEIGHT: f32 = 2.05;

    fn near(a: Vec3, b: Vec3) -> bool {
        (a - b).abs().max_element() < 1e-4
    }

    fn flight(kind: FlightKind) -> FlagFlight {
        FlagFlight {
            kind,
            position: Vec3::new(10.0, 20.0, 0.0),
            launch: Vec3::new(0.0, 0.0, 2.0),
            landing: Vec3::new(10.0, 20.0, 0.0),
            flight_time: 0.0,
            flight_end: 2.0,
            initial_velocity: 10.0,
        }
    }

    #[test]
    fn status_codes() {
        for s in 0..10 {
            match FlightKind::from_status(s) {
                Some(k) => assert_eq!(k.status(), s),
                None => assert!(!(3..=5).contains(&s)),
            }
        }
        assert_eq!(FlightKind::from_status(4), Some(FlightKind::Coming));
    }

    #[test]
    fn in_air_by_hand() {
        let f = flight(FlightKind::InAir);
        // g = -10, v0 = 10, end = 2. At 0: the launch position.
        assert_eq!(f.at(0.0, -10.0), FlightSample { position: f.launch, phase: FlightPhase::Flying });
        // At 1 s: halfway in x, y; base z = 0.5·2 + 0.5·0 = 1; arc = 1·(10 − 5) = 5.
        let s = f.at(1.0, -10.0);
        assert_eq!(s.phase, FlightPhase::Flying);
        assert!(near(s.position, Vec3::new(5.0, 10.0, 6.0)), "{s:?}");
        // At 1.5 s: x = 7.5, y = 15, base z = 0.25·2 = 0.5, arc = 1.5·(10 − 7.5) = 3.75.
        assert!(near(f.at(1.5, -10.0).position, Vec3::new(7.5, 15.0, 4.25)));
        // Flight time so far counts: received 0.5 s into the flight, 0.5 s later is 1 s into it.
        let late = FlagFlight { flight_time: 0.5, ..f };
        assert!(near(late.at(0.5, -10.0).position, Vec3::new(5.0, 10.0, 6.0)));
        // Over at end: the landing position.
        assert_eq!(f.at(2.0, -10.0), FlightSample { position: f.landing, phase: FlightPhase::Landed });
        assert_eq!(f.at(99.0, -10.0).phase, FlightPhase::Landed);
        assert_eq!(f.time_left(0.5), 1.5);
        assert_eq!(late.time_left(0.5), 1.0);
        assert_eq!(f.time_left(3.0), 0.0);
    }

    #[test]
    fn in_air_server_drop() {
        // bzfs dropFlag from a tank at z = 0: launch at tank height, top of the arc 11 above the drop point.
        let up = (-2.0 * ALT / G).sqrt();
        let f = FlagFlight {
            kind: FlightKind::InAir,
            position: Vec3::new(30.0, -40.0, 0.0),
            launch: Vec3::new(10.0, 0.0, TANK_HEIGHT),
            landing: Vec3::new(30.0, -40.0, 0.0),
            flight_time: 0.0,
            flight_end: 2.0 * up,
            initial_velocity: -G * up,
        };
        // Halfway: x, y midway, base z = half the tank height, plus the arc top (11).
        let s = f.at(up, G);
        assert!(near(s.position, Vec3::new(20.0, -20.0, 0.5 * TANK_HEIGHT + ALT)), "{s:?}");
        // Just before the end the flag is back near the landing height.
        let s = f.at(2.0 * up - 1e-3, G);
        assert_eq!(s.phase, FlightPhase::Flying);
        assert!((s.position.z - 0.0).abs() < 0.02, "{s:?}");
    }

    #[test]
    fn coming_server_flag() {
        // bzfs addFlag: end = 2·√(−2·alt/g), v0 = −½·g·end. Landing is stale (here 5): the record position counts.
        let end = 2.0 * (-2.0 * ALT / G).sqrt();
        let f = FlagFlight {
            kind: FlightKind::Coming,
            position: Vec3::new(-100.0, 50.0, 9.42),
            launch: Vec3::ZERO,
            landing: Vec3::new(1.0, 2.0, 5.0),
            flight_time: 0.0,
            flight_end: end,
            initial_velocity: -0.5 * G * end,
        };
        assert!((hover_height(end, f.initial_velocity, G) - ALT).abs() < 1e-4);
        for t in [0.0, 0.3 * end, 0.49 * end] {
            let s = f.at(t, G);
            assert_eq!(s.phase, FlightPhase::Hovering);
            assert!(near(s.position, Vec3::new(-100.0, 50.0, 9.42 + ALT)), "{s:?}");
        }
        // Three quarters in: arc = 0.75·end·(−½·g·end + ⅜·g·end) = −(3/32)·g·end² = (3/32)·88 = 8.25.
        let s = f.at(0.75 * end, G);
        assert_eq!(s.phase, FlightPhase::Falling);
        assert!(near(s.position, Vec3::new(-100.0, 50.0, 9.42 + 8.25)), "{s:?}");
        // Halfway the fall starts at the hover height: continuous.
        assert!(near(f.at(0.5 * end, G).position, Vec3::new(-100.0, 50.0, 9.42 + ALT)));
        assert_eq!(f.at(end, G), FlightSample { position: f.position, phase: FlightPhase::Landed });
        assert_eq!(f.resting_place(), f.position);
    }

    #[test]
    fn going_by_hand() {
        let mut f = flight(FlightKind::Going);
        f.landing.z = 1.0;
        // g = -10, v0 = 10, end = 2. Rising: at 0.5 s, arc = 0.5·(10 − 2.5) = 3.75 above landing.z.
        let s = f.at(0.5, -10.0);
        assert_eq!(s.phase, FlightPhase::Rising);
        assert!(near(s.position, Vec3::new(10.0, 20.0, 4.75)), "{s:?}");
        // Hovering: ½·2·(10 + ¼·(−10)·2) = 5 above landing.z.
        let s = f.at(1.5, -10.0);
        assert_eq!(s.phase, FlightPhase::Hovering);
        assert!(near(s.position, Vec3::new(10.0, 20.0, 6.0)));
        let s = f.at(2.0, -10.0);
        assert_eq!(s.phase, FlightPhase::Gone);
        assert!(s.phase.is_over());
        assert!(near(s.position, Vec3::new(10.0, 20.0, 6.0)));
    }

    #[test]
    fn broken_numbers() {
        let f = flight(FlightKind::InAir);
        // Zero, negative or non-finite durations: already over.
        for end in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            let s = FlagFlight { flight_end: end, ..f }.at(0.5, G);
            assert_eq!(s, FlightSample { position: f.landing, phase: FlightPhase::Landed }, "{end}");
            assert_eq!(FlagFlight { flight_end: end, ..f }.time_left(0.0), 0.0);
        }
        assert_eq!(FlagFlight { flight_time: f32::INFINITY, ..f }.at(0.0, G).phase, FlightPhase::Landed);
        assert_eq!(FlagFlight { flight_end: 0.0, ..flight(FlightKind::Going) }.at(0.0, G).phase, FlightPhase::Gone);
        // NaN or negative elapsed / flight time count as 0.
        assert_eq!(f.at(f32::NAN, -10.0), f.at(0.0, -10.0));
        assert_eq!(f.at(-5.0, -10.0), f.at(0.0, -10.0));
        assert_eq!(FlagFlight { flight_time: f32::NAN, ..f }.at(1.0, -10.0), f.at(1.0, -10.0));
        assert_eq!(FlagFlight { flight_time: -3.0, ..f }.at(1.0, -10.0), f.at(1.0, -10.0));
        assert_eq!(f.at(f32::INFINITY, G).phase, FlightPhase::Landed);
        // Overflowing or NaN arcs fall back to the resting place.
        for kind in [FlightKind::InAir, FlightKind::Coming, FlightKind::Going] {
            let huge = FlagFlight { initial_velocity: f32::MAX, flight_end: 1e30, ..flight(kind) };
            let s = huge.at(1e20, G);
            assert!(s.position.is_finite(), "{kind:?} {s:?}");
            assert_eq!(s.position, huge.resting_place());
            let s = flight(kind).at(0.5, f32::NAN);
            assert_eq!(s.position, flight(kind).resting_place());
        }
    }
}
