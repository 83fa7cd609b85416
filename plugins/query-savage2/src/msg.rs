//! The Savage 2 info request and reply.
//!
//! No server could be run; the layout combines the two real replies in `testdata/`, the seed page, the Savage2
//! Launcher's decoder and both gamedigs (which all disagree somewhere; see `query-protocols.md` §3):
//!
//! | bytes | meaning |
//! |---|---|
//! | 0-3 | u32 LE "sequence": `9a de 97 f1` in both replies and the seed request |
//! | 4 | flags, `01` |
//! | 5-6 | u16 LE client id |
//! | 7 | command: `01` info request, `02` info reply |
//! | 8-11 | i32 LE: the request's value, echoed (semantics unverified) |
//! | 12.. | name (cstr, K2 colour codes), players u8, max players u8, match time, map, next map, location (cstrs), min players u8, one flag byte (the one other decoders miss), races, version (cstrs), password u8 |
//! | rest | `00` + `ff`×8 in both replies; nobody decodes it: ignored |

use bzhead_wire::text::lossy;
use bzhead_wire::{DecodeError, DecodeResult, Reader, ResultExt};

/// The sequence value of the seed request and both real replies.
pub const SEQUENCE: u32 = 0xF197_DE9A;
/// Packet flags of a normal (unreliable) packet.
pub const FLAG_NORMAL: u8 = 0x01;
/// Info request command.
pub const CMD_INFO_REQUEST: u8 = 0x01;
/// Info reply command.
pub const CMD_INFO: u8 = 0x02;

/// The 12-byte info request: header, command `01`, and `echo` (expected back in bytes 8-11 of the reply).
pub fn info_request(echo: i32) -> [u8; 12] {
    let mut r = [0u8; 12];
    r[..4].copy_from_slice(&SEQUENCE.to_le_bytes());
    r[4] = FLAG_NORMAL;
    // client id 0 (bytes 5-6), as the Savage2 Launcher sends
    r[7] = CMD_INFO_REQUEST;
    r[8..].copy_from_slice(&echo.to_le_bytes());
    r
}

/// A decoded info reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    /// Bytes 0-3.
    pub sequence: u32,
    /// Byte 4.
    pub flags: u8,
    /// Bytes 5-6.
    pub client_id: u16,
    /// Bytes 8-11.
    pub echo: i32,
    /// Server name with colour codes.
    pub name: String,
    /// Players connected.
    pub players: u8,
    /// Player slots.
    pub max_players: u8,
    /// Match time (`00:03:19`) or a state (`Waiting`).
    pub match_time: String,
    /// Current map.
    pub map: String,
    /// Next map.
    pub next_map: String,
    /// Location text.
    pub location: String,
    /// Minimum players per team.
    pub min_players: u8,
    /// The flag byte after min players (seed page: "stats", Launcher: "sandbox"); 0 in both replies.
    pub extra_flag: u8,
    /// Races (`HvB`: humans versus beasts).
    pub races: String,
    /// Game version.
    pub version: String,
    /// Password required.
    pub password: bool,
    /// Bytes after the password flag (nine in the real replies).
    pub trailing: usize,
}

/// Decodes an info reply.
pub fn parse_info(data: &[u8]) -> DecodeResult<Info> {
    let mut r = Reader::new(data);
    let sequence = r.u32_le().context("sequence")?;
    let flags = r.u8().context("flags")?;
    let client_id = r.u16_le().context("client id")?;
    let at = r.position();
    if r.u8().context("command")? != CMD_INFO {
        return Err(DecodeError::invalid("not an info reply (02)", at).context("command"));
    }
    let echo = r.i32_le().context("echo")?;
    let text = |r: &mut Reader<'_>, f: &'static str| r.cstr().context(f).map(|b| lossy(b).into_owned());
    Ok(Info {
        sequence,
        flags,
        client_id,
        echo,
        name: text(&mut r, "name")?,
        players: r.u8().context("players")?,
        max_players: r.u8().context("max players")?,
        match_time: text(&mut r, "match time")?,
        map: text(&mut r, "map")?,
        next_map: text(&mut r, "next map")?,
        location: text(&mut r, "location")?,
        min_players: r.u8().context("min players")?,
        extra_flag: r.u8().context("flag byte")?,
        races: text(&mut r, "races")?,
        version: text(&mut r, "version")?,
        password: r.u8().context("password")? != 0,
        trailing: r.remaining(),
    })
}

/// Whether `data` looks like an info reply at all (header + command), before decoding it.
pub fn is_info_reply(data: &[u8]) -> bool {
    data.get(7) == Some(&CMD_INFO) && data.len() >= 12
}

/// K2 colour codes removed (best effort; only letter codes were seen): `^` + a letter, `^` + three digits (K2's
/// RGB form), `^*` (reset); `^^` is a literal caret.
pub fn strip_colours(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c == '^' {
            let next = chars.get(i + 1).copied();
            let three_digits = (1..=3).all(|k| chars.get(i + k).is_some_and(char::is_ascii_digit));
            match next {
                _ if three_digits => {
                    i += 4;
                    continue;
                }
                Some(n) if n.is_ascii_alphabetic() || n == '*' => {
                    i += 2;
                    continue;
                }
                Some('^') => {
                    out.push('^');
                    i += 2;
                    continue;
                }
                _ => {}
            }
        }
        if !c.is_control() {
            out.push(c);
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_layout() {
        let r = info_request(0x29);
        assert_eq!(r, [0x9a, 0xde, 0x97, 0xf1, 0x01, 0x00, 0x00, 0x01, 0x29, 0, 0, 0]);
    }

    #[test]
    fn colours() {
        assert_eq!(strip_colours("^gEro's ^yCTF RPS ^rCharge"), "Ero's CTF RPS Charge");
        assert_eq!(strip_colours("^900red^*x ^^ 5^"), "redx ^ 5^");
    }
}
