//! Every message parser, both directions: parse, and what parses must re-encode and parse again. (Texts are
//! decoded as lossy UTF-8, which can grow invalid bytes, so the round trip is only required for UTF-8 bodies.)
#![no_main]

use bzhead::bzflag::msg::{ClientMsg, Message, ServerMsg};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((code, body)) = data.split_first_chunk::<2>() else { return };
    let code = u16::from_be_bytes(*code);
    let exact = std::str::from_utf8(body).is_ok();
    if let Ok(m) = ServerMsg::parse(code, body) {
        let again = ServerMsg::decode(&m.encode());
        assert!(!exact || again.is_ok(), "{m:?} does not parse back");
    }
    if let Ok(m) = ClientMsg::parse(code, body) {
        let again = ClientMsg::decode(&m.encode());
        assert!(!exact || again.is_ok(), "{m:?} does not parse back");
    }
});
