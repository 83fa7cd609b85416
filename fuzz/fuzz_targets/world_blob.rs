//! The world: a blob (envelope + zlib) or a raw database, parsed, modelled and queried.
#![no_main]

use bzhead::bzflag::world::{parse_blob, Envelope, Mask, WorldDb, WorldModel};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Half the inputs are taken as a database and wrapped, so the fuzzer reaches the sections past the envelope.
    let db = match data.split_first() {
        Some((b, rest)) if b & 1 == 1 => WorldDb::parse(rest).ok(),
        _ => parse_blob(data).ok(),
    };
    if let Some(db) = db {
        let _ = parse_blob(&Envelope::wrap(&db.to_bytes()));
        if let Ok(m) = WorldModel::build(&db) {
            use glam::Vec3;
            let _ = m.segment(Vec3::new(-50.0, -50.0, 1.0), Vec3::new(50.0, 50.0, 5.0), Mask::Shots);
            let _ = m.ground(Vec3::new(0.0, 0.0, 50.0));
        }
    }
});
