//! Teeworlds' variable-length integers (`CVariableInt`), read through the shared [`Reader`].

use bzhead_wire::{DecodeError, DecodeResult, Reader};

/// Reads a Teeworlds variable-length integer (`CVariableInt`): first byte `E S D D D D D D` (extend, sign, 6 data
/// bits), then up to four bytes `E D D D D D D D`; a negative value is stored as its bitwise NOT. At most five
/// bytes, as the games' unpacker reads; bits beyond 32 are dropped the same way. On failure `r` does not move.
pub fn read(r: &mut Reader<'_>) -> DecodeResult<i32> {
    let start = r.position();
    let mut c = r.clone();
    let first = c.u8()?;
    let sign = (first >> 6) & 1;
    let mut v = u32::from(first & 0x3f);
    let mut b = first;
    let mut shift = 6u32;
    let mut n = 1;
    while b & 0x80 != 0 {
        if n == 5 {
            return Err(DecodeError::invalid("variable-length integer longer than 5 bytes", start));
        }
        b = c.u8()?;
        v |= u32::from(b & 0x7f).wrapping_shl(shift);
        shift += 7;
        n += 1;
    }
    *r = c;
    let v = v as i32;
    Ok(if sign == 1 { !v } else { v })
}

/// Appends `v` as a Teeworlds variable-length integer (see [`read`]).
pub fn put(out: &mut Vec<u8>, v: i32) {
    let (sign, mut u) = if v < 0 { (0x40u8, !v as u32) } else { (0, v as u32) };
    let mut b = sign | (u & 0x3f) as u8;
    u >>= 6;
    while u != 0 {
        out.push(b | 0x80);
        b = (u & 0x7f) as u8;
        u >>= 7;
    }
    out.push(b);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(b: &[u8]) -> DecodeResult<i32> {
        read(&mut Reader::new(b))
    }

    #[test]
    fn varints_round_trip_and_match_the_captures() {
        for v in [0, 1, 63, 64, -1, -64, -65, 1234567, -9999, i32::MAX, i32::MIN, 276, 840] {
            let mut b = Vec::new();
            put(&mut b, v);
            assert!(b.len() <= 5);
            assert_eq!(get(&b).unwrap(), v, "{v}");
        }
        let mut b = Vec::new();
        put(&mut b, 1234567);
        assert_eq!(b, [0x87, 0xda, 0x96, 0x01]); // the browser token in the 0.7 captures
        assert_eq!(get(&[0x40]).unwrap(), -1);
        assert!(get(&[0x80]).is_err());
        assert!(get(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).is_err());
    }

    #[test]
    fn a_failed_read_does_not_move_the_reader() {
        let mut r = Reader::new(&[7, 0x80, 0x80]);
        assert_eq!(read(&mut r).unwrap(), 7);
        assert!(read(&mut r).unwrap_err().is_truncation());
        assert_eq!(r.position(), 1);
    }
}
