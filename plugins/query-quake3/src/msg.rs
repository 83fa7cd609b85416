//! Quake III family out-of-band messages: requests, reply classification and parsers. Pure functions.
//!
//! Facts from ioquake3 (`SVC_Info`, `SVC_Status`, `Q_IsColorString`), Warsow 2.1 (`sv_oob.c`:
//! `SV_LongInfoString`, `SV_ShortInfoString`, `Q_GrabCharFromColorString`) and dpmaster 2.2, checked against the
//! OpenArena and dpmaster captures in `testdata/`.

use bzhead_wire::text::{atoi, utf8_or_latin1};
use bzhead_wire::{DecodeError, DecodeResult, Reader};
use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Out-of-band prefix of every message.
pub const OOB: &[u8; 4] = b"\xff\xff\xff\xff";

/// Most key/value pairs kept from one info string.
pub const MAX_PAIRS: usize = 1024;
/// Most player lines kept from one status reply.
pub const MAX_PLAYERS: usize = 1024;

fn oob(cmd: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(4 + cmd.len());
    v.extend_from_slice(OOB);
    v.extend_from_slice(cmd.as_bytes());
    v
}

/// `<OOB><command> <argument>`, built in one allocation.
pub fn oob_with(command: &str, argument: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(4 + command.len() + 1 + argument.len());
    v.extend_from_slice(OOB);
    v.extend_from_slice(command.as_bytes());
    v.push(b' ');
    v.extend_from_slice(argument.as_bytes());
    v
}

/// `<OOB><command> <argument>` written into `buf` (no allocation), or `None` when it does not fit.
pub fn oob_with_into<'b>(buf: &'b mut [u8], command: &str, argument: &str) -> Option<&'b [u8]> {
    let n = 4 + command.len() + 1 + argument.len();
    let out = buf.get_mut(..n)?;
    let (oob, rest) = out.split_at_mut(4);
    oob.copy_from_slice(OOB);
    let (cmd, rest) = rest.split_at_mut(command.len());
    cmd.copy_from_slice(command.as_bytes());
    let (space, arg) = rest.split_at_mut(1);
    space.copy_from_slice(b" ");
    arg.copy_from_slice(argument.as_bytes());
    Some(out)
}

/// `getinfo <challenge>`.
pub fn getinfo(challenge: &str) -> Vec<u8> {
    oob_with("getinfo", challenge)
}

/// `getstatus <challenge>`.
pub fn getstatus(challenge: &str) -> Vec<u8> {
    oob_with("getstatus", challenge)
}

/// Warsow's short query `info <protocol> full empty` (the server stays silent unless `full`/`empty` allow its
/// state, so both are always sent).
pub fn warsow_info(protocol: &str) -> Vec<u8> {
    oob(&format!("info {protocol} full empty"))
}

/// `getservers <game> <protocol> <filters...>` or `getserversExt ...`.
pub fn getservers(ext: bool, game: &str, protocol: &str, filters: &[String]) -> Vec<u8> {
    let mut cmd = String::from(if ext { "getserversExt" } else { "getservers" });
    for part in [game, protocol].into_iter().chain(filters.iter().map(String::as_str)) {
        if !part.is_empty() {
            cmd.push(' ');
            cmd.push_str(part);
        }
    }
    oob(&cmd)
}

/// A challenge is echoed verbatim in a key/value string: it must be printable ASCII without separators (dpmaster
/// forbids `\ / ; " %` and spaces, ioq3 ignores arguments over 128 bytes).
pub fn valid_challenge(c: &str) -> bool {
    !c.is_empty() && c.len() <= 128 && c.bytes().all(|b| b.is_ascii_graphic() && !b"\\/;\"%".contains(&b))
}

/// What a datagram is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply<'a> {
    /// `infoResponse\n` + info string.
    Info(&'a [u8]),
    /// `statusResponse\n` + info string + `\n` + player lines.
    Status(&'a [u8]),
    /// Warsow `info\n` + short info.
    ShortInfo(&'a [u8]),
    /// `getserversResponse` (or `Ext`) + entries.
    Servers {
        /// `getserversExtResponse`.
        ext: bool,
        /// The entries.
        body: &'a [u8],
    },
}

/// Classifies an out-of-band datagram.
pub fn classify(data: &[u8]) -> Option<Reply<'_>> {
    let rest = data.strip_prefix(OOB)?;
    // Longest names first: "info\n" is a prefix of nothing else but "infoResponse" starts with "info".
    if let Some(b) = rest.strip_prefix(b"infoResponse") {
        return Some(Reply::Info(b.strip_prefix(b"\n").unwrap_or(b)));
    }
    if let Some(b) = rest.strip_prefix(b"statusResponse") {
        return Some(Reply::Status(b.strip_prefix(b"\n").unwrap_or(b)));
    }
    if let Some(b) = rest.strip_prefix(b"getserversExtResponse") {
        return Some(Reply::Servers { ext: true, body: b });
    }
    if let Some(b) = rest.strip_prefix(b"getserversResponse") {
        return Some(Reply::Servers { ext: false, body: b });
    }
    if let Some(b) = rest.strip_prefix(b"info\n") {
        return Some(Reply::ShortInfo(b));
    }
    None
}

/// One key/value pair of an info string, borrowed from the datagram when it is UTF-8.
pub type Pair<'a> = (Cow<'a, str>, Cow<'a, str>);

/// The key/value pairs of an info string `\\key\\value\\key\\value...` (ioq3 `Info_NextPair`): the leading `\\`
/// is optional, a key without a value gets "", empty keys are skipped. Generic over `&str` and `&[u8]` splitting.
fn pairs_of<'a, T: Copy + 'a>(
    mut parts: impl Iterator<Item = T> + 'a,
    is_empty: impl Fn(T) -> bool + 'a,
    nothing: T,
) -> impl Iterator<Item = (T, T)> + 'a {
    std::iter::from_fn(move || loop {
        let k = parts.next()?;
        let v = parts.next().unwrap_or(nothing);
        if !is_empty(k) {
            return Some((k, v));
        }
    })
    .take(MAX_PAIRS)
}

/// Word-at-a-time byte search: each byte of `w` that equals `b` gets its high bit set in the result; bits above
/// the first match may be set too (borrows), so only the lowest one is exact.
const fn matches_in(w: u64, b: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let x = w ^ (ONES * b as u64);
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The index of the first `b` in `s`, eight bytes at a time (fields of info strings are short, but the general
/// iterator search costs several instructions a byte).
pub fn find_byte(s: &[u8], b: u8) -> Option<usize> {
    let mut words = s.chunks_exact(8);
    let mut at = 0;
    for w in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(w);
        let m = matches_in(u64::from_le_bytes(bytes), b);
        if m != 0 {
            return Some(at + (m.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words.remainder().iter().position(|&c| c == b).map(|n| at + n)
}

/// The fields of `b` between `sep` bytes, as byte ranges (like `split`, which yields one empty field for empty
/// input: callers that want none skip it).
fn split_ranges(b: &[u8], sep: u8) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut start = 0;
    let mut finished = false;
    std::iter::from_fn(move || {
        if finished {
            return None;
        }
        let end = b.get(start..).and_then(|r| find_byte(r, sep)).map_or(b.len(), |n| start + n);
        let field = (start, end);
        if end >= b.len() {
            finished = true;
        }
        start = end + 1;
        Some(field)
    })
}

/// The raw key/value pairs of an info string, without decoding (see [`parse_infostring`]).
pub fn raw_pairs(b: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    let b = b.strip_prefix(b"\\").unwrap_or(b);
    let parts = split_ranges(b, b'\\')
        .take(if b.is_empty() { 0 } else { usize::MAX })
        .map(move |(s, e)| b.get(s..e).unwrap_or(&[]));
    pairs_of(parts, <[u8]>::is_empty, &[][..])
}

/// The pairs as [`raw_pairs`] splits them, of text (what [`parse_infostr`] makes in one pass; kept to test it).
#[cfg(test)]
fn str_pairs(s: &str) -> impl Iterator<Item = (&str, &str)> {
    let s = s.strip_prefix('\\').unwrap_or(s);
    // Split at the ASCII backslashes; `str::get` at those positions is O(1) (they are always character boundaries),
    // so the text is validated once, by the caller, not per field.
    let parts = split_ranges(s.as_bytes(), b'\\')
        .take(if s.is_empty() { 0 } else { usize::MAX })
        .map(move |(a, e)| s.get(a..e).unwrap_or(""));
    pairs_of(parts, str::is_empty, "")
}

/// The raw value of `key` in an info string, without decoding the rest (the pairs are the same split as bytes or
/// as text, so nothing is validated).
pub fn raw_get<'a>(b: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    raw_pairs(b).find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// Parses an info string `\\key\\value\\key\\value...` (ioq3 `Info_NextPair`) into pairs: the leading `\\` is
/// optional, a key without a value gets "", empty keys are skipped. Text is borrowed when the string is UTF-8 (checked
/// once for the whole string), else decoded as Latin-1.
pub fn parse_infostring(b: &[u8]) -> Vec<Pair<'_>> {
    match std::str::from_utf8(b) {
        Ok(s) => parse_infostr(s),
        Err(_) => raw_pairs(b).map(|(k, v)| (utf8_or_latin1(k), utf8_or_latin1(v))).collect(),
    }
}

/// [`parse_infostring`] of text already known to be UTF-8.
fn parse_infostr(s: &str) -> Vec<Pair<'_>> {
    // Exactly as many pairs as the separators allow: a fixed large reservation per reply made glibc consolidate its
    // free lists on every query.
    let mut v: Vec<Pair<'_>> = Vec::with_capacity(count_byte(s.as_bytes(), b'\\').div_ceil(2));
    // The pairs `str_pairs` yields, in one pass over the separators: fields alternate key and value, a pair with an
    // empty key is skipped (its value too), a last key without a value gets "", at most MAX_PAIRS pairs are kept.
    let s = s.strip_prefix('\\').unwrap_or(s);
    if s.is_empty() {
        return v;
    }
    let mut key: Option<&str> = None;
    let mut start = 0;
    for end in Seps::new(s.as_bytes(), b'\\').chain(std::iter::once(s.len())) {
        let field = s.get(start..end).unwrap_or("");
        start = end + 1;
        match key.take() {
            None => key = Some(field),
            Some("") => {}
            Some(k) => {
                if v.len() >= MAX_PAIRS {
                    return v;
                }
                v.push((Cow::Borrowed(k), Cow::Borrowed(field)));
            }
        }
    }
    if let Some(k) = key.filter(|k| !k.is_empty() && v.len() < MAX_PAIRS) {
        v.push((Cow::Borrowed(k), Cow::Borrowed("")));
    }
    v
}

/// The high bit of every byte of `w` that equals `b`, exactly (no borrow crosses bytes).
const fn exact_matches(w: u64, b: u8) -> u64 {
    const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = w ^ (0x0101_0101_0101_0101 * b as u64);
    !(((x & LOWS).wrapping_add(LOWS)) | x | LOWS)
}

/// The word of `b` at `at` (little-endian), or `None` past the last whole word.
fn word_at(b: &[u8], at: usize) -> Option<u64> {
    let w: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// How many bytes of `b` equal `c`, eight at a time.
fn count_byte(b: &[u8], c: u8) -> usize {
    let mut words = b.chunks_exact(8);
    let mut n = 0;
    for w in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(w);
        n += exact_matches(u64::from_le_bytes(bytes), c).count_ones() as usize;
    }
    n + words.remainder().iter().filter(|&&x| x == c).count()
}

/// The positions of the bytes equal to `sep` in `b`, in order, found eight bytes at a time.
struct Seps<'a> {
    b: &'a [u8],
    sep: u8,
    /// Where the word of `mask` starts, and where the next one does.
    base: usize,
    next: usize,
    /// High bits of the matches of the current word not yet yielded.
    mask: u64,
}

impl<'a> Seps<'a> {
    fn new(b: &'a [u8], sep: u8) -> Seps<'a> {
        Seps { b, sep, base: 0, next: 0, mask: 0 }
    }
}

impl Iterator for Seps<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            if self.next >= self.b.len() {
                return None;
            }
            self.base = self.next;
            self.mask = match word_at(self.b, self.next) {
                Some(w) => exact_matches(w, self.sep),
                None => {
                    let tail = self.b.get(self.next..).unwrap_or(&[]);
                    tail.iter().enumerate().filter(|&(_, &c)| c == self.sep).fold(0, |m, (i, _)| m | 0x80 << (8 * i))
                }
            };
            self.next += 8;
        }
        let at = self.base + (self.mask.trailing_zeros() / 8) as usize;
        self.mask &= self.mask - 1;
        Some(at)
    }
}

/// The value of `key` in `pairs` (the first one, as `Info_ValueForKey` finds it).
pub fn get<'a>(pairs: &'a [Pair<'_>], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_ref())
}

/// One line of a status reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusPlayer<'a> {
    /// Score (frags).
    pub score: i64,
    /// Ping in ms (bots: 0 on ioq3).
    pub ping: i64,
    /// Name with colour codes.
    pub name: Cow<'a, str>,
    /// Warsow's fourth column: team number.
    pub team: Option<i64>,
}

/// Splits a status reply body into its info string and its player lines.
pub fn split_status(body: &[u8]) -> (&[u8], &[u8]) {
    match find_byte(body, b'\n') {
        Some(n) => (body.get(..n).unwrap_or(&[]), body.get(n + 1..).unwrap_or(&[])),
        None => (body, &[][..]),
    }
}

/// Parses a status reply body: the pairs, the players, and how many lines could not be read (skipped, like every
/// browser does).
pub fn parse_status(body: &[u8]) -> (Vec<Pair<'_>>, Vec<StatusPlayer<'_>>, usize) {
    // A body that is UTF-8 as a whole (nearly all) is checked once: its info string and player names are borrowed
    // from it without a check per field or name (its slices at ASCII separators are text too).
    let text = std::str::from_utf8(body).ok();
    let (info, lines) = split_status(body);
    let pairs = match text.and_then(|t| t.get(..info.len())) {
        Some(t) => parse_infostr(t),
        None => parse_infostring(info),
    };
    let lines_at = body.len() - lines.len();
    let lines_text = text.and_then(|t| t.get(lines_at..));
    let mut players = Vec::new();
    let mut bad = 0;
    let ends = Seps::new(lines, b'\n').chain(std::iter::once(lines.len()));
    let mut next_start = 0;
    for end in ends {
        let start = std::mem::replace(&mut next_start, end + 1);
        let mut end = end;
        if lines.get(start..end).is_some_and(|l| l.ends_with(b"\r")) {
            end -= 1;
        }
        let line = lines.get(start..end).unwrap_or(&[]);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if players.len() >= MAX_PLAYERS {
            bad += 1;
            continue;
        }
        match player_line(line, lines_text.and_then(|t| t.get(start..end))) {
            Some(p) => players.push(p),
            None => bad += 1,
        }
    }
    (pairs, players, bad)
}

/// `score ping "name"` (ioq3) or `frags ping "name" team` (Warsow). The name is quoted but not escaped: it runs to
/// the last quote of the line.
pub fn parse_player_line(line: &[u8]) -> Option<StatusPlayer<'_>> {
    player_line(line, None)
}

/// [`parse_player_line`], the name borrowed from `text` (the same line, known to be UTF-8) when given.
fn player_line<'a>(line: &'a [u8], text: Option<&'a str>) -> Option<StatusPlayer<'a>> {
    // `splitn(3, ' ')`: score, ping, and the rest (empty when there is no second space).
    let sp1 = find_byte(line, b' ')?;
    let score = line.get(..sp1)?;
    let after = line.get(sp1 + 1..)?;
    let (ping, rest_at) = match find_byte(after, b' ') {
        Some(n) => (after.get(..n)?, sp1 + 1 + n + 1),
        None => (after, line.len()),
    };
    if !is_int(score) || !is_int(ping) {
        return None;
    }
    let rest = line.get(rest_at..).unwrap_or(&[]);
    let rest_at = rest_at + (rest.len() - rest.trim_ascii_start().len());
    let rest = line.get(rest_at..).unwrap_or(&[]);
    let ((name_at, name_end), tail) = match rest.strip_prefix(b"\"") {
        Some(r) => {
            let close = r.iter().rposition(|&c| c == b'"')?;
            ((rest_at + 1, rest_at + 1 + close), r.get(close + 1..).unwrap_or(&[]))
        }
        None => ((rest_at, line.len()), &[][..]),
    };
    let tail = tail.trim_ascii();
    let team = if tail.is_empty() {
        None
    } else if is_int(tail) {
        Some(atoi(tail))
    } else {
        return None;
    };
    let name = match text.and_then(|t| t.get(name_at..name_end)) {
        Some(n) => Cow::Borrowed(n),
        None => utf8_or_latin1(line.get(name_at..name_end).unwrap_or(&[])),
    };
    Some(StatusPlayer { score: atoi(score), ping: atoi(ping), name, team })
}

fn is_int(b: &[u8]) -> bool {
    let d = b.strip_prefix(b"-").unwrap_or(b);
    !d.is_empty() && d.len() <= 18 && d.iter().all(u8::is_ascii_digit)
}

/// Parses Warsow's short info `\\n\\<name>\\m\\<map>\\u\\<humans>/<max>\\...EOT`: pairs separated by double
/// backslashes, values space-padded (trimmed here).
pub fn parse_short_info(body: &[u8]) -> DecodeResult<Vec<Pair<'_>>> {
    let mut parts: Vec<&[u8]> = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.windows(2).position(|w| w == b"\\\\") {
        parts.push(rest.get(..i).unwrap_or(&[]));
        rest = rest.get(i + 2..).unwrap_or(&[]);
    }
    parts.push(rest);
    if parts.first().is_some_and(|p| p.is_empty()) {
        parts.remove(0);
    }
    match parts.last() {
        Some(l) if l.trim_ascii().starts_with(b"EOT") => {
            parts.pop();
        }
        _ => return Err(DecodeError::invalid("no EOT terminator", body.len()).context("short info")),
    }
    if parts.len() % 2 != 0 {
        return Err(DecodeError::invalid("odd number of fields", 0).context("short info"));
    }
    Ok(parts
        .chunks(2)
        .take(MAX_PAIRS)
        .filter_map(|kv| match kv {
            [k, v] => Some((utf8_or_latin1(k.trim_ascii()), utf8_or_latin1(v.trim_ascii()))),
            _ => None,
        })
        .collect())
}

/// One datagram of a master server's list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServersPage {
    /// Addresses in order (invalid ones, with address or port 0, left out).
    pub entries: Vec<SocketAddr>,
    /// Entries left out as invalid.
    pub invalid: usize,
    /// The list ended here (`\EOT\0\0\0`, or `\EOF\0\0\0` as some other masters send).
    pub eot: bool,
    /// Parsing stopped at this offset on a byte that starts no entry.
    pub garbage_at: Option<usize>,
}

/// Parses the entries of a `getserversResponse` / `getserversExtResponse` body: `\` + 4-byte IPv4 + big-endian port,
/// `/` + 16-byte IPv6 + port, until `\EOT\0\0\0` or the end of the datagram. Entries are fixed-width (a port or
/// address byte may itself be `\`).
pub fn parse_servers(body: &[u8]) -> ServersPage {
    let mut page = ServersPage::default();
    // Some masters put a newline after the command.
    let body = body.strip_prefix(b"\n").unwrap_or(body);
    let mut r = Reader::new(body);
    while let Some(sep) = r.peek() {
        let at = r.position();
        match sep {
            b'\\' => {
                let rest = r.rest().get(1..).unwrap_or(&[]);
                if rest.starts_with(b"EOT") || rest.starts_with(b"EOF") {
                    // `\EOT\0\0\0`; a shortened terminator still ends the list.
                    if rest.len() < 6 || rest.get(3..6) == Some(&[0, 0, 0]) {
                        page.eot = true;
                        break;
                    }
                }
                let Ok(e) = r.take(7) else {
                    page.garbage_at = Some(at);
                    break;
                };
                let ip = Ipv4Addr::new(e[1], e[2], e[3], e[4]);
                let port = u16::from_be_bytes([e[5], e[6]]);
                if port == 0 || ip.is_unspecified() {
                    page.invalid += 1;
                } else {
                    page.entries.push(SocketAddr::new(IpAddr::V4(ip), port));
                }
            }
            b'/' => {
                let Ok(e) = r.take(19) else {
                    page.garbage_at = Some(at);
                    break;
                };
                let mut o = [0u8; 16];
                o.copy_from_slice(e.get(1..17).unwrap_or(&[0; 16]));
                let ip = Ipv6Addr::from(o);
                let port = u16::from_be_bytes([e[17], e[18]]);
                if port == 0 || ip.is_unspecified() {
                    page.invalid += 1;
                } else {
                    page.entries.push(SocketAddr::new(IpAddr::V6(ip), port));
                }
            }
            _ => {
                page.garbage_at = Some(at);
                break;
            }
        }
    }
    page
}

/// True when `s` is printable ASCII without a `^`: nothing for the colour strippers to do.
fn plain_printable(s: &str) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = s.as_bytes().chunks_exact(8);
    for w in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(w);
        let w = u64::from_le_bytes(bytes);
        // Below 0x20, 0x7f and above (DEL, high bit, 0x7f + 1 carries into the high bit), or a caret: exact per word
        // (any such byte sets some high bit; none is set without one).
        let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
        let high = (w.wrapping_add(ONES)) & HIGHS | w & HIGHS;
        if below_space | high | matches_in(w, b'^') != 0 {
            return false;
        }
    }
    words.remainder().iter().all(|&b| (0x20..0x7f).contains(&b) && b != b'^')
}

/// ioquake3's colour codes removed: `^` followed by an ASCII letter or digit (`Q_IsColorString`), plus control
/// characters. Borrowed when there is nothing to remove.
pub fn strip_q3(s: &str) -> Cow<'_, str> {
    if plain_printable(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '^' && it.peek().is_some_and(char::is_ascii_alphanumeric) {
            it.next();
        } else if !c.is_control() {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Warsow's colour codes removed: `^0`..`^9`; `^^` is a literal `^` (`Q_GrabCharFromColorString`). Borrowed when
/// there is nothing to remove.
pub fn strip_warsow(s: &str) -> Cow<'_, str> {
    if plain_printable(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match (c, it.peek()) {
            ('^', Some(d)) if d.is_ascii_digit() => {
                it.next();
            }
            ('^', Some('^')) => {
                it.next();
                out.push('^');
            }
            (c, _) if !c.is_control() => out.push(c),
            _ => {}
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_built_in_place_match_the_allocated_ones() {
        let mut buf = [0u8; 32];
        assert_eq!(oob_with_into(&mut buf, "getstatus", "bzh0123").unwrap(), getstatus("bzh0123"));
        assert_eq!(oob_with_into(&mut buf, "getinfo", "").unwrap(), getinfo(""));
        assert!(oob_with_into(&mut buf, "getstatus", "0123456789abcdefghij").is_none());
    }

    #[test]
    fn requests_match_the_captures() {
        assert_eq!(getinfo("xxx_chal"), include_bytes!("../testdata/bots4-getinfo.req.bin"));
        assert_eq!(getstatus("yyy_chal"), include_bytes!("../testdata/bots4-getstatus.req.bin"));
        let f = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            getservers(false, "Quake3Arena", "71", &f("empty full")),
            include_bytes!("../testdata/dpmaster/getservers-Quake3Arena-71-empty-full.req.bin")
        );
        assert_eq!(
            getservers(true, "Quake3Arena", "71", &f("empty full ipv6")),
            include_bytes!("../testdata/dpmaster/getserversExt-Quake3Arena-71-ipv6-only.req.bin")
        );
        assert_eq!(
            getservers(false, "Warsow", "22", &f("full empty")),
            include_bytes!("../testdata/dpmaster/getservers-Warsow-22-full-empty.req.bin")
        );
        assert_eq!(
            getservers(true, "Warsow", "22", &[]),
            include_bytes!("../testdata/dpmaster/getserversExt-Warsow-22.req.bin")
        );
        assert_eq!(getservers(false, "", "71", &[]), include_bytes!("../testdata/dpmaster/getservers-71.req.bin"));
        assert_eq!(warsow_info("71"), include_bytes!("../testdata/bots4-info-warsow-style.req.bin"));
    }

    #[test]
    fn infostrings() {
        let p = parse_infostring(b"\\a\\1\\b\\\\c");
        let want: Vec<Pair<'_>> = vec![("a".into(), "1".into()), ("b".into(), "".into()), ("c".into(), "".into())];
        assert_eq!(p, want);
        assert_eq!(raw_get(b"\\x\\1\\challenge\\abc", b"challenge"), Some(&b"abc"[..]));
        assert_eq!(parse_infostring(b""), vec![]);
        assert_eq!(parse_infostring(b"\\\\\\"), vec![]);
        assert_eq!(get(&parse_infostring(b"k\\v"), "k"), Some("v"));
    }

    #[test]
    fn separators_are_found_at_every_offset() {
        for len in 0..40 {
            for bits in [0u64, 1, 0x5555_5555_5555, 0xffff_ffff_ffff, 0x8421_0842_1084, 0x1_0000_0001] {
                let b: Vec<u8> =
                    (0..len).map(|i| if bits >> (i % 48) & 1 == 1 { b'\\' } else { b'a' + (i % 7) as u8 }).collect();
                let want: Vec<usize> = (0..len).filter(|&i| b[i] == b'\\').collect();
                assert_eq!(Seps::new(&b, b'\\').collect::<Vec<_>>(), want);
                assert_eq!(count_byte(&b, b'\\'), want.len());
            }
        }
        let b = [0x5c, 0xdc, 0x5d, 0x5b, 0x00, 0xff, 0x5c, 0x1c, 0x5c];
        assert_eq!(Seps::new(&b, b'\\').collect::<Vec<_>>(), [0, 6, 8]);
    }

    #[test]
    fn the_one_pass_parser_agrees_with_the_pair_iterator() {
        let many = "\\k\\v".repeat(MAX_PAIRS + 3);
        for s in ["", "\\", "\\\\", "a", "a\\", "\\a\\1\\b", "\\\\x\\y\\z", "k\\v\\\\\\k2\\v2\\", "é\\ü", &many] {
            let want: Vec<Pair<'_>> = str_pairs(s).map(|(k, v)| (Cow::Borrowed(k), Cow::Borrowed(v))).collect();
            assert_eq!(parse_infostr(s), want, "{s:?}");
        }
    }

    #[test]
    fn player_lines() {
        let p = parse_player_line(b"2 0 \"Kyonshi\"").unwrap();
        assert_eq!((p.score, p.ping, p.name.as_ref(), p.team), (2, 0, "Kyonshi", None));
        let p = parse_player_line(b"-3 48 \"a \"quoted\" ^1name\" 2").unwrap();
        assert_eq!((p.score, p.name.as_ref(), p.team), (-3, "a \"quoted\" ^1name", Some(2)));
        assert!(parse_player_line(b"x 0 \"n\"").is_none());
        assert!(parse_player_line(b"1 2 \"unterminated").is_none());
        assert!(parse_player_line(b"1 2 \"n\" team").is_none());
        assert_eq!(parse_player_line(b"1 2 bare").unwrap().name, "bare");
    }

    #[test]
    fn short_info() {
        let b = b"\\\\n\\\\My ^2Server\\\\m\\\\  wdm1\\\\u\\\\ 3/16\\\\g\\\\    ca\\\\s\\\\1\\\\b\\\\ 2\\\\EOT";
        let p = parse_short_info(b).unwrap();
        assert_eq!(get(&p, "n"), Some("My ^2Server"));
        assert_eq!(get(&p, "m"), Some("wdm1"));
        assert_eq!(get(&p, "u"), Some("3/16"));
        assert_eq!(get(&p, "g"), Some("ca"));
        assert_eq!(get(&p, "b"), Some("2"));
        assert!(parse_short_info(b"\\\\n\\\\x").is_err());
    }

    #[test]
    fn colours() {
        assert_eq!(strip_q3("^1Red^7White^^x^"), "RedWhite^^");
        assert_eq!(strip_q3("a\u{1}b^"), "ab^");
        assert_eq!(strip_warsow("^1Red^^7^x"), "Red^7^x");
        assert!(matches!(strip_q3("plain name"), Cow::Borrowed("plain name")));
        assert_eq!(strip_q3("tab\tand del\u{7f}"), "taband del");
        assert_eq!(strip_warsow("c1\u{85}x"), "c1x");
    }

    #[test]
    fn server_entries() {
        let mut b = vec![b'\\', 1, 2, 3, 4, 0x6d, 0x38];
        b.extend_from_slice(&[b'\\', 5, 6, 7, 8, 0x5c, 0x5c]); // port bytes that look like separators
        b.push(b'/');
        b.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x6d, 0x38]);
        b.extend_from_slice(&[b'\\', 9, 9, 9, 9, 0, 0]); // port 0: invalid
        b.extend_from_slice(b"\\EOT\0\0\0");
        let p = parse_servers(&b);
        assert!(p.eot);
        assert_eq!(p.invalid, 1);
        assert_eq!(
            p.entries,
            vec![
                "1.2.3.4:27960".parse().unwrap(),
                "5.6.7.8:23644".parse().unwrap(),
                "[2001:db8::1]:27960".parse().unwrap()
            ]
        );
        let p = parse_servers(b"\\1\\2");
        assert_eq!(p.garbage_at, Some(0));
        assert!(parse_servers(b"\\EOT").eot);
        assert_eq!(parse_servers(b"x").garbage_at, Some(0));
    }
}
