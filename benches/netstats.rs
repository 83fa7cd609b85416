//! Cost of the per-player network diagnostics (`bzhead::bzflag::netstats`): feeding one player update to the
//! tracker, and a snapshot of every player's figures (what `observe --netstats` prints and the web view reads
//! each frame). `cargo bench --bench netstats`.
//!
//! Inputs: the player updates of `testdata/recordings/two-hunters.rec` (30 s of a real game of two hunter bots,
//! replayed through the session engine), with the times they arrived; for the snapshot, 20 players whose windows
//! are full.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bzhead::bzflag::consts::PlayerStatus;
use bzhead::bzflag::event::Event;
use bzhead::bzflag::msg::PlayerUpdate;
use bzhead::bzflag::netstats::{NetStats, DR_WINDOW};
use bzhead::record::{parse_records, replay};
use divan::counter::ItemsCount;
use divan::Bencher;

const RECORDING: &[u8] = include_bytes!("../testdata/recordings/two-hunters.rec");

fn main() {
    println!("netstats-info: recording.updates={}", updates().len());
    divan::Divan::from_args().main();
}

/// The recording's accepted player updates with their arrival offsets.
fn updates() -> Vec<(Duration, PlayerUpdate)> {
    let (meta, records) = parse_records(RECORDING).expect("the recording parses");
    replay(&meta, &records)
        .into_iter()
        .filter_map(|(t, e)| match e {
            Event::Update(u) => Some((t, u)),
            _ => None,
        })
        .collect()
}

/// Every update of the recording into a fresh tracker (per update).
#[divan::bench]
fn on_update_recorded_game(b: Bencher) {
    let ups = updates();
    let base = Instant::now();
    b.counter(ItemsCount::new(ups.len())).bench(|| {
        let mut n = NetStats::new();
        for (t, u) in &ups {
            n.on_update(base + *t, black_box(u));
        }
        n
    });
}

/// 20 players driving a line each, every window full.
fn twenty_busy_players(base: Instant) -> NetStats {
    let mut n = NetStats::new();
    for id in 0..20u8 {
        n.on_join(id);
        for k in 0..(DR_WINDOW as i32 * 2) {
            let t = k as f32 * 0.05;
            let u = PlayerUpdate {
                small: true,
                timestamp: t,
                id,
                order: k + 1,
                status: PlayerStatus::ALIVE,
                pos: [t * 10.0 + f32::from(id), (k % 3) as f32 * 0.05, 0.0],
                vel: [10.0, 0.0, 0.0],
                azimuth: 0.0,
                ang_vel: 0.0,
                jump_jets: 0.0,
                phydrv: -1,
                user_inputs: (0.0, 0.0),
                sounds: 0,
            };
            n.on_update(base + Duration::from_millis(k as u64 * 50), &u);
        }
    }
    n
}

/// A snapshot of 20 players with full windows (sorting 256 errors each).
#[divan::bench]
fn snapshot_twenty_players(b: Bencher) {
    let base = Instant::now();
    let n = twenty_busy_players(base);
    let now = base + Duration::from_secs(26);
    b.counter(ItemsCount::new(20usize)).bench(|| black_box(&n).snapshot(now));
}
