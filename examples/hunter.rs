//! Hunters: the library's [`Hunter`] (source: `src/bot/brains/hunter.rs`) on a server, printing what they do
//! and their kills per minute at the end.
//!
//! ```sh
//! cargo run --release --example hunter -- 127.0.0.1:5154 [COUNT] [SECONDS]
//! ```
//!
//! A hunter finds the nearest enemies, leads its shots along their predicted lines and arcs (checking the real
//! path of the shot through the world before it pulls the trigger), banks shots off walls when there is no
//! clear line, dodges shots aimed at it, and drives along planned paths around obstacles.

use std::time::{Duration, Instant};

use bzhead::bot::brains::Hunter;
use bzhead::bot::{BotConfig, BotEvent, BotHost, HostConfig, HostEvent};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(server) = args.first() else {
        eprintln!("usage: hunter HOST:PORT [COUNT] [SECONDS]");
        std::process::exit(2);
    };
    let count: u64 = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(2);
    let seconds: u64 = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(120);
    let addr = bzhead::reactor::resolve(server, 5154).unwrap_or_else(|e| {
        eprintln!("hunter: {e}");
        std::process::exit(3);
    });
    let mut host = BotHost::new(HostConfig::default()).expect("an event loop");
    let ids: Vec<_> = (0..count)
        .map(|i| {
            let config = BotConfig { callsign: format!("hunter{}", i + 1), seed: i + 1, ..BotConfig::default() };
            host.add_bot(addr, config, Box::new(Hunter::new(i + 1)))
        })
        .collect();
    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end {
        host.turn(Some(Duration::from_millis(200))).expect("the event loop");
        while let Some(e) = host.poll_event() {
            if let HostEvent::Bot { bot, event: e @ (BotEvent::Killed { .. } | BotEvent::Died { .. }), .. } = e {
                let name = host.status(bot).map(|s| s.callsign).unwrap_or_default();
                println!("{name}: {e:?}");
            }
        }
    }
    host.leave_all();
    let _ = host.run_until(Instant::now() + Duration::from_secs(3));
    for id in ids {
        if let Some(s) = host.status(id) {
            let per_min = f64::from(s.stats.kills) * 60.0 / seconds as f64;
            println!(
                "{}: {} kills ({per_min:.1}/min), {} deaths, {} shots",
                s.callsign, s.stats.kills, s.stats.deaths, s.stats.shots
            );
        }
    }
}
