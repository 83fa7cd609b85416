//! The BZFlag session engine on an arbitrary server byte stream (after a good hello), cut at arbitrary points.
#![no_main]

use std::time::{Duration, Instant};

use bzhead::bzflag::session::{Session, SessionConfig};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let now = Instant::now();
    let mut s = Session::new(SessionConfig { full_join: false, ..SessionConfig::default() });
    s.handle_connected(now);
    s.handle_tcp(now, b"BZFS0221\x00");
    // The first byte picks a chunk size, so that reassembly at every boundary is exercised.
    let (step, rest) = match data.split_first() {
        Some((b, r)) => (usize::from(*b % 64) + 1, r),
        None => (1, data),
    };
    for (i, chunk) in rest.chunks(step).enumerate() {
        let t = now + Duration::from_millis(i as u64);
        s.handle_tcp(t, chunk);
        s.handle_udp(t, chunk);
        while s.poll_transmit().is_some() {}
        while s.poll_world_request().is_some() {}
        while s.poll_event().is_some() {}
    }
});
