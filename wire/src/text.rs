//! Text helpers: servers send bytes, not UTF-8, and numbers as text.

use std::borrow::Cow;

/// The bytes before the first NUL (all of them if there is none).
pub fn until_nul(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(n) => b.get(..n).unwrap_or(b),
        None => b,
    }
}

/// Lossy UTF-8: invalid sequences (a name cut in the middle of a character, Latin-1 bytes) become U+FFFD.
pub fn lossy(b: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// UTF-8 when the bytes are UTF-8, otherwise Latin-1 (every byte one character). Lossless, unlike [`lossy`]:
/// old Quake-engine games send names in their own 8-bit encodings.
pub fn utf8_or_latin1(b: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(b.iter().map(|&c| char::from(c)).collect()),
    }
}

/// A decimal integer, strictly: optional surrounding ASCII whitespace, an optional sign, at least one digit,
/// nothing else, no overflow.
pub fn parse_int(b: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(b).ok()?.trim_ascii();
    if s.is_empty() || s.starts_with('+') && s.get(1..).is_some_and(|r| r.starts_with(['-', '+'])) {
        return None;
    }
    s.parse::<i64>().ok()
}

/// A decimal integer the way C's `atoi`/`strtol` and the games' `str_toint` read it: leading whitespace, an
/// optional sign, then as many digits as there are; anything else (or nothing) gives 0. Saturates instead of
/// overflowing.
pub fn atoi(b: &[u8]) -> i64 {
    let mut it = b.iter().copied().skip_while(u8::is_ascii_whitespace).peekable();
    let neg = match it.peek() {
        Some(b'-') => {
            it.next();
            true
        }
        Some(b'+') => {
            it.next();
            false
        }
        _ => false,
    };
    let mut v: i64 = 0;
    for c in it.take_while(u8::is_ascii_digit) {
        let d = i64::from(c - b'0');
        v = if neg { v.saturating_mul(10).saturating_sub(d) } else { v.saturating_mul(10).saturating_add(d) };
    }
    v
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &c in b {
        s.push(char::from(D[usize::from(c >> 4)]));
        s.push(char::from(D[usize::from(c & 15)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints() {
        assert_eq!(parse_int(b"-1924373370"), Some(-1924373370));
        assert_eq!(parse_int(b" 15 "), Some(15));
        assert_eq!(parse_int(b""), None);
        assert_eq!(parse_int(b"1x"), None);
        assert_eq!(parse_int(b"99999999999999999999"), None);
        assert_eq!(atoi(b"-9999"), -9999);
        assert_eq!(atoi(b"  42abc"), 42);
        assert_eq!(atoi(b"abc"), 0);
        assert_eq!(atoi(b"-99999999999999999999999"), i64::MIN);
    }

    #[test]
    fn text() {
        assert_eq!(until_nul(b"ab\0cd"), b"ab");
        assert_eq!(lossy(b"a\xffb"), "a\u{fffd}b");
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
        assert_eq!(utf8_or_latin1(b"caf\xe9"), "café");
        assert_eq!(utf8_or_latin1("café".as_bytes()), "café");
    }
}
