//! The smallest useful bot: a starting point for your own.
//!
//! It drives ahead, turns away from walls and buildings in front of it, and when an enemy is roughly ahead and in
//! sight it turns to face it and fires. Everything the protocol asks of a player (spawning, updates, reporting
//! hits on itself, flags, the server's checks) is done by the [`BotHost`]; a bot only reads its [`View`] and sets
//! its [`Control`].
//!
//! ```sh
//! cargo run --release --example minimal -- 127.0.0.1:5154 [COUNT]
//! ```

use std::time::Duration;

use bzhead::bot::{Bot, BotConfig, BotHost, Control, HostConfig, HostEvent, View};
use bzhead::bzflag::msg::wrap_angle;
use bzhead::Vec3;

/// Our bot's memory between ticks: which way it turns when something blocks the road.
struct Minimal {
    turn_left: bool,
}

impl Bot for Minimal {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        let me = &view.me;
        if !me.alive() {
            return; // the host asks the server to respawn us
        }
        let pos = me.pos();
        let heading = Vec3::new(me.azimuth().cos(), me.azimuth().sin(), 0.0);

        // An enemy within 200 units that we can see: face it and shoot when lined up.
        let eye = pos + Vec3::new(0.0, 0.0, view.phys.muzzle_height);
        let target = view
            .enemies()
            .into_iter()
            .find(|t| t.pose.pos.distance(pos) < 200.0 && view.world.line_of_sight(eye, t.centre(view.phys)));
        if let Some(t) = target {
            let to = t.pose.pos - pos;
            let error = wrap_angle(to.y.atan2(to.x) - me.azimuth());
            // Turn at the rate that closes the error in about one tick, so we do not overshoot.
            let per_tick = view.phys.tank_ang_vel * view.dt.max(1.0 / 30.0);
            control.drive(0.5, error / per_tick);
            control.fire = error.abs() < 0.03 && me.reload == 0.0;
            return;
        }

        // Nothing to shoot: drive on, turning while something is close ahead.
        let ahead = view.world.line_of_sight(eye, eye + heading * 15.0);
        if ahead {
            control.drive(1.0, 0.0);
        } else {
            control.drive(0.3, if self.turn_left { 1.0 } else { -1.0 });
        }
        if me.tank.vel.length() < 1.0 && control.speed > 0.5 {
            self.turn_left = !self.turn_left; // stuck: try the other way next time
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(server) = args.next() else {
        eprintln!("usage: minimal HOST:PORT [COUNT]");
        std::process::exit(2);
    };
    let count: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let addr = bzhead::reactor::resolve(&server, 5154).unwrap_or_else(|e| {
        eprintln!("minimal: {e}");
        std::process::exit(3);
    });
    let mut host = BotHost::new(HostConfig::default()).expect("an event loop");
    for i in 0..count {
        let config =
            BotConfig { callsign: format!("minimal{}", i + 1), seed: u64::from(i) + 1, ..BotConfig::default() };
        host.add_bot(addr, config, Box::new(Minimal { turn_left: i % 2 == 0 }));
    }
    loop {
        host.turn(Some(Duration::from_secs(1))).expect("the event loop");
        while let Some(event) = host.poll_event() {
            if let HostEvent::Bot { bot, event, .. } = event {
                println!("bot {}: {event:?}", bot.0);
            }
        }
    }
}
