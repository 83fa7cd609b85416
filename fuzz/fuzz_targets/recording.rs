//! Recording files: parsed, and what parses replayed through the engine.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut file = b"BZHREC01".to_vec();
    file.extend_from_slice(data);
    if let Ok((meta, records)) = bzhead::record::parse_records(&file) {
        let _ = bzhead::record::replay(&meta, &records);
    }
});
