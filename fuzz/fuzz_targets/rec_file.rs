//! BZFlag `.rec` files: the reader (header, flag types, world, packets and their links) and what it reads replayed
//! through the engine as `bzfs -replay` plays it to a viewer.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((header, reader)) = bzhead::record::RecReader::new(data) {
        let (_, _) = bzhead::record::replay_rec(&header, reader, |_, _| {});
    }
});
