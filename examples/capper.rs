//! Capture the flag: the library's [`Capper`] (source: `src/bot/brains/capper.rs`) and [`Defender`] on each
//! team, with the capper wrapped in a bot of our own that cheers in the chat when it captures: composing a
//! brain with a little behaviour of your own.
//!
//! ```sh
//! bzfs -c -mp 0,4,4,0,0,4 &        # a CTF server, red against green
//! cargo run --release --example capper -- 127.0.0.1:5154
//! ```

use std::time::Duration;

use bzhead::bot::brains::{Capper, Defender};
use bzhead::bot::{Bot, BotConfig, BotHost, Control, HostConfig, HostEvent, View};
use bzhead::bzflag::consts::Team;
use bzhead::bzflag::event::Event;

/// A capper that says so when it captures.
struct CheeringCapper {
    inner: Capper,
    cheer: bool,
}

impl Bot for CheeringCapper {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        self.inner.tick(view, control);
        if std::mem::take(&mut self.cheer) {
            control.say("flag captured!");
        }
    }

    fn on_event(&mut self, view: &View<'_>, event: &Event) {
        if let Event::Capture { player, .. } = event {
            self.cheer |= *player == view.me.id;
        }
        self.inner.on_event(view, event);
    }
}

fn main() {
    let Some(server) = std::env::args().nth(1) else {
        eprintln!("usage: capper HOST:PORT");
        std::process::exit(2);
    };
    let addr = bzhead::reactor::resolve(&server, 5154).unwrap_or_else(|e| {
        eprintln!("capper: {e}");
        std::process::exit(3);
    });
    let mut host = BotHost::new(HostConfig::default()).expect("an event loop");
    for (i, team) in [Team::Red, Team::Green].into_iter().enumerate() {
        let seed = i as u64 * 10;
        let name = team.name();
        let capper = CheeringCapper { inner: Capper::new(seed + 1), cheer: false };
        host.add_bot(
            addr,
            BotConfig { callsign: format!("{name}-capper"), team, seed: seed + 1, ..BotConfig::default() },
            Box::new(capper),
        );
        let defender = Defender::new(seed + 2);
        host.add_bot(
            addr,
            BotConfig { callsign: format!("{name}-defender"), team, seed: seed + 2, ..BotConfig::default() },
            Box::new(defender),
        );
    }
    loop {
        host.turn(Some(Duration::from_secs(1))).expect("the event loop");
        while let Some(e) = host.poll_event() {
            match e {
                HostEvent::Game { event: Event::Capture { callsign, team, .. }, .. } => {
                    println!("{callsign} captured a flag on the {} base", team.name())
                }
                HostEvent::Game { event: Event::Kill { victim_callsign, killer_callsign, .. }, .. } => {
                    println!("{victim_callsign} destroyed by {killer_callsign}")
                }
                HostEvent::Bot { bot, event, .. } => {
                    let name = host.status(bot).map(|s| s.callsign).unwrap_or_default();
                    println!("{name}: {event:?}");
                }
                _ => {}
            }
        }
    }
}
