//! Teeworlds / DDNet connless info messages: request builders and reply parsers. Pure functions, no state.
//!
//! Facts from DDNet 16.4 / HEAD (`CServer::CacheServerInfo`, `CNetBase::UnpackPacket`, `CClient::ProcessServerInfo`)
//! and Teeworlds 0.7.5 (`CServer::GenerateServerInfo`, `CNetBase::SendPacketConnless`), checked against the
//! captures in `testdata/`.

use crate::varint;
use bzhead_wire::text::{atoi, lossy, parse_int};
use bzhead_wire::{DecodeError, DecodeErrorKind, DecodeResult, Reader, ResultExt};

/// Connless info request.
pub const GETINFO: &[u8; 8] = b"\xff\xff\xff\xffgie3";
/// Vanilla info reply.
pub const INFO: &[u8; 8] = b"\xff\xff\xff\xffinf3";
/// DDNet extended info reply, first datagram.
pub const INFO_EXTENDED: &[u8; 8] = b"\xff\xff\xff\xffiext";
/// DDNet extended info reply, further datagrams.
pub const INFO_EXTENDED_MORE: &[u8; 8] = b"\xff\xff\xff\xffiex+";
/// 64-player legacy info request.
pub const GETINFO_64_LEGACY: &[u8; 8] = b"\xff\xff\xff\xfffstd";
/// 64-player legacy info reply.
pub const INFO_64_LEGACY: &[u8; 8] = b"\xff\xff\xff\xffdtsf";

/// Most client records kept for one server (DDNet HEAD has 128 slots; leave room).
pub const MAX_CLIENTS: usize = 256;

/// 0.7 packet flags (in the top six bits of the first byte).
const FLAG7_CONTROL: u8 = 1;
const FLAG7_CONNLESS: u8 = 8;
/// 0.7 packet version (low two bits of the first byte).
const VERSION7: u8 = 1;
/// 0.7 control message carrying a token.
const CTRL7_TOKEN: u8 = 5;
/// 0.7 token requests carry the control byte plus this much data (`NET_TOKENREQUEST_DATASIZE`, our token first,
/// then zeros): 0.7.5 answers only when the data after the 7-byte header is at least 512 bytes (anti-amplification).
const TOKEN_REQUEST_DATA: usize = 512;
/// "No token" in 0.7.
pub const TOKEN7_NONE: [u8; 4] = [0xff; 4];

/// The DDNet extended request: header `x e T1 T2 0 0`, then `gie3` and the low token byte. The server answers with
/// the 24-bit token `T0 | T1 << 16 | T2 << 8` (DDNet `CServer::PumpNetwork`), which is just `token` here.
pub fn xe_request(token: u32) -> [u8; 15] {
    let t = token.to_be_bytes(); // [0, token>>16, token>>8, token]
    let mut r = [0u8; 15];
    r[0] = b'x';
    r[1] = b'e';
    r[2] = t[1];
    r[3] = t[2];
    r[6..14].copy_from_slice(GETINFO);
    r[14] = t[3];
    r
}

/// A 0.6 request with the plain `ff`×6 header: `magic` is [`GETINFO`] or [`GETINFO_64_LEGACY`].
pub fn plain_request(magic: &[u8; 8], token: u8) -> [u8; 15] {
    let mut r = [0xffu8; 15];
    r[6..14].copy_from_slice(magic);
    r[14] = token;
    r
}

/// The 0.7 token request as the real client sends it: header `04 00 00 ff ff ff ff`, control byte `05`, then 512
/// bytes starting with our token (520 bytes in all).
pub fn token_request7(client_token: [u8; 4]) -> Vec<u8> {
    let mut r = Vec::with_capacity(3 + 4 + 1 + TOKEN_REQUEST_DATA);
    r.extend_from_slice(&[FLAG7_CONTROL << 2, 0, 0]);
    r.extend_from_slice(&TOKEN7_NONE);
    r.push(CTRL7_TOKEN);
    r.extend_from_slice(&client_token);
    r.resize(3 + 4 + 1 + TOKEN_REQUEST_DATA, 0);
    r
}

/// The 0.7 connless info request: `21 <server token> <client token> gie3 <varint browser token>`. Never pass -1 as
/// the browser token (0.7.5 then skips resetting its packer).
pub fn info_request7(server_token: [u8; 4], client_token: [u8; 4], browser_token: i32) -> Vec<u8> {
    let mut r = Vec::with_capacity(9 + 8 + 5);
    r.push((FLAG7_CONNLESS << 2) | VERSION7);
    r.extend_from_slice(&server_token);
    r.extend_from_slice(&client_token);
    r.extend_from_slice(GETINFO);
    varint::put(&mut r, browser_token);
    r
}

/// Which 0.6-family reply a datagram is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind06 {
    /// `inf3`.
    Vanilla,
    /// `iext`.
    Extended,
    /// `iex+`.
    ExtendedMore,
    /// `dtsf`.
    Legacy64,
}

/// Splits a 0.6-family connless datagram into its kind and body. The header is `ff`×6 (what every server sends) or
/// `x e` + 4 bytes (accepted too); anything else is not a 0.6 info reply.
pub fn classify06(data: &[u8]) -> Option<(Kind06, &[u8])> {
    let header = data.get(..6)?;
    if header != [0xff; 6] && !header.starts_with(b"xe") {
        return None;
    }
    let magic = data.get(6..14)?;
    let body = data.get(14..)?;
    let kind = match magic {
        m if m == INFO => Kind06::Vanilla,
        m if m == INFO_EXTENDED => Kind06::Extended,
        m if m == INFO_EXTENDED_MORE => Kind06::ExtendedMore,
        m if m == INFO_64_LEGACY => Kind06::Legacy64,
        _ => return None,
    };
    Some((kind, body))
}

/// The token at the start of a 0.6-family body (a decimal string), if it is one.
pub fn token06(body: &[u8]) -> Option<i64> {
    let mut r = Reader::new(body);
    parse_int(r.cstr().ok()?)
}

/// One client of an info reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    /// Name (lossy UTF-8; the server cuts it at 15 bytes, possibly mid-character).
    pub name: String,
    /// Clan.
    pub clan: String,
    /// ISO 3166-1 numeric country, -1 for none.
    pub country: i64,
    /// Score (DDNet: minus the best time in seconds, -9999 for none; 0.7: -1 for none on time-score servers).
    pub score: i64,
    /// 0.6: 1 for a player, 0 for a spectator. 0.7: flags (1 spectator, 2 bot).
    pub flags: i64,
}

/// The server part of an info reply, any format.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerInfo {
    /// The echoed token.
    pub token: i64,
    /// Game version string.
    pub version: String,
    /// Server name.
    pub name: String,
    /// 0.7 only: `sv_hostname`.
    pub hostname: Option<String>,
    /// Map name.
    pub map: String,
    /// DDNet extended only: map CRC (sent as a signed decimal).
    pub map_crc: Option<i64>,
    /// DDNet extended only: map size in bytes.
    pub map_size: Option<i64>,
    /// Game type.
    pub game_type: String,
    /// Flags: 1 password, 2 time score (0.7 and DDNet's 0.7 rendition).
    pub flags: i64,
    /// 0.7 only: skill level 0-2.
    pub skill_level: Option<i64>,
    /// Players in the game (not spectators).
    pub num_players: i64,
    /// Player slots.
    pub max_players: i64,
    /// Connected clients.
    pub num_clients: i64,
    /// Client slots.
    pub max_clients: i64,
}

/// Maps a reader error to the field being read (for error texts); keeps the position.
fn num(r: &mut Reader<'_>, field: &'static str) -> DecodeResult<i64> {
    let at = r.position();
    let s = r.cstr().context(field)?;
    parse_int(s).ok_or_else(|| DecodeError::invalid("not a decimal integer", at).context(field))
}

/// Longest text field kept, in bytes (real ones are far shorter: names 16, server names up to 128). Longer ones are
/// cut: a hostile server's 64 pages of huge names would otherwise pass the host's per-call budget.
pub const MAX_FIELD: usize = 256;

fn text(r: &mut Reader<'_>, field: &'static str) -> DecodeResult<String> {
    let b = r.cstr().context(field)?;
    Ok(lossy(b.get(..MAX_FIELD).unwrap_or(b)).into_owned())
}

fn counters(r: &mut Reader<'_>, info: &mut ServerInfo, varints: bool) -> DecodeResult<()> {
    let at = r.position();
    let get = |r: &mut Reader<'_>, f: &'static str| -> DecodeResult<i64> {
        if varints {
            varint::read(r).context(f).map(i64::from)
        } else {
            num(r, f)
        }
    };
    info.num_players = get(r, "num players")?;
    info.max_players = get(r, "max players")?;
    info.num_clients = get(r, "num clients")?;
    info.max_clients = get(r, "max clients")?;
    let limit = 4096;
    if [info.num_players, info.max_players, info.num_clients, info.max_clients]
        .iter()
        .any(|&v| !(0..=limit).contains(&v))
    {
        return Err(DecodeError::invalid("negative or absurd player count", at).context("player counts"));
    }
    Ok(())
}

/// Parses 0.6 client records (5 strings each, 6 with DDNet's reserved string) until the body ends.
fn clients06(r: &mut Reader<'_>, extended: bool, out: &mut Vec<Client>) -> DecodeResult<()> {
    while !r.is_empty() {
        if out.len() >= MAX_CLIENTS {
            let got = out.len() + 1;
            return Err(r.error(DecodeErrorKind::TooLong { field: "client records", max: MAX_CLIENTS, got }));
        }
        let name = text(r, "client name")?;
        let clan = text(r, "client clan")?;
        let country = atoi(r.cstr().context("client country")?);
        let score = atoi(r.cstr().context("client score")?);
        let flags = atoi(r.cstr().context("client is-player")?);
        if extended {
            r.cstr().context("client reserved")?;
        }
        out.push(Client { name, clan, country, score, flags });
    }
    Ok(())
}

/// A parsed `inf3`, `iext` or `dtsf` datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info06 {
    /// Server part.
    pub server: ServerInfo,
    /// `dtsf` only: index of the first client in this datagram.
    pub offset: Option<i64>,
    /// The client records of this datagram.
    pub clients: Vec<Client>,
}

/// Parses the body of an `inf3` (vanilla), `iext` (DDNet extended) or `dtsf` (64-player legacy) reply.
pub fn parse_info06(kind: Kind06, body: &[u8]) -> DecodeResult<Info06> {
    let mut r = Reader::new(body);
    let mut s = ServerInfo { token: num(&mut r, "token")?, ..ServerInfo::default() };
    s.version = text(&mut r, "version")?;
    s.name = text(&mut r, "name")?;
    s.map = text(&mut r, "map")?;
    if kind == Kind06::Extended {
        s.map_crc = Some(num(&mut r, "map crc")?);
        s.map_size = Some(num(&mut r, "map size")?);
    }
    s.game_type = text(&mut r, "game type")?;
    s.flags = num(&mut r, "flags")?;
    counters(&mut r, &mut s, false)?;
    let mut offset = None;
    match kind {
        Kind06::Extended => {
            r.cstr().context("reserved")?;
        }
        Kind06::Legacy64 => {
            // An unterminated varint in the middle of the NUL-separated list.
            let at = r.position();
            let o = varint::read(&mut r).context("offset")?;
            if !(0..MAX_CLIENTS as i32).contains(&o) {
                return Err(DecodeError::invalid("client offset out of range", at).context("offset"));
            }
            offset = Some(i64::from(o));
        }
        Kind06::Vanilla | Kind06::ExtendedMore => {}
    }
    let mut clients = Vec::new();
    clients06(&mut r, kind == Kind06::Extended, &mut clients)?;
    Ok(Info06 { server: s, offset, clients })
}

/// A parsed `iex+` datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtendedMore {
    /// The echoed 24-bit token.
    pub token: i64,
    /// Packet number, 1..63 (the `iext` datagram is number 0).
    pub packet_no: u32,
    /// Its client records.
    pub clients: Vec<Client>,
}

/// Parses the body of an `iex+` reply.
pub fn parse_extended_more(body: &[u8]) -> DecodeResult<ExtendedMore> {
    let mut r = Reader::new(body);
    let token = num(&mut r, "token")?;
    let at = r.position();
    let packet_no = num(&mut r, "packet number")?;
    // DDNet's client accepts 1..=63 (0 is the main packet, 64 bits of bookkeeping).
    let packet_no = u32::try_from(packet_no)
        .ok()
        .filter(|n| (1..64).contains(n))
        .ok_or_else(|| DecodeError::invalid("not in 1..63", at).context("packet number"))?;
    r.cstr().context("reserved")?;
    let mut clients = Vec::new();
    clients06(&mut r, true, &mut clients)?;
    Ok(ExtendedMore { token, packet_no, clients })
}

/// If a DDNet vanilla-info name ends in ` [clients/max]` (added when the server has more than 16 slots), the two
/// numbers.
pub fn name_suffix(name: &str) -> Option<(i64, i64)> {
    let inner = name.strip_suffix(']')?;
    let open = inner.rfind(" [")?;
    let (a, b) = inner.get(open + 2..)?.split_once('/')?;
    Some((parse_int(a.as_bytes())?, parse_int(b.as_bytes())?))
}

/// If `data` is a 0.7 token reply (`04 00 00 <client token> 05 <server token>`) to `client_token`, the server token.
pub fn token_reply7(data: &[u8], client_token: [u8; 4]) -> Option<[u8; 4]> {
    let mut r = Reader::new(data);
    let first = r.u8().ok()?;
    if (first >> 2) & FLAG7_CONTROL == 0 || (first >> 2) & FLAG7_CONNLESS != 0 {
        return None;
    }
    r.skip(2).ok()?;
    if r.array::<4>().ok()? != client_token || r.u8().ok()? != CTRL7_TOKEN {
        return None;
    }
    r.array::<4>().ok()
}

/// If `data` is a 0.7 connless datagram addressed to `client_token`, its payload (after the 9-byte header).
pub fn connless7(data: &[u8], client_token: [u8; 4]) -> Option<&[u8]> {
    let first = *data.first()?;
    if (first >> 2) & FLAG7_CONNLESS == 0 || first & 3 != VERSION7 {
        return None;
    }
    if data.get(1..5)? != client_token {
        return None;
    }
    data.get(9..)
}

/// A parsed 0.7 `inf3` payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info07 {
    /// Server part (`token` is the browser token).
    pub server: ServerInfo,
    /// All client records (0.7 sends them in one datagram).
    pub clients: Vec<Client>,
}

/// The browser token of a 0.7 payload starting with `inf3`, if it is one.
pub fn token07(payload: &[u8]) -> Option<i32> {
    let mut r = Reader::new(payload);
    r.expect(INFO).ok()?;
    varint::read(&mut r).ok()
}

/// Parses a 0.7 `inf3` payload (after the 9-byte connless header).
pub fn parse_info07(payload: &[u8]) -> DecodeResult<Info07> {
    let mut r = Reader::new(payload);
    r.expect(INFO).context("magic")?;
    let mut s = ServerInfo { token: i64::from(varint::read(&mut r).context("token")?), ..ServerInfo::default() };
    s.version = text(&mut r, "version")?;
    s.name = text(&mut r, "name")?;
    s.hostname = Some(text(&mut r, "hostname")?);
    s.map = text(&mut r, "map")?;
    s.game_type = text(&mut r, "game type")?;
    s.flags = i64::from(varint::read(&mut r).context("flags")?);
    s.skill_level = Some(i64::from(varint::read(&mut r).context("skill level")?));
    counters(&mut r, &mut s, true)?;
    let mut clients = Vec::new();
    while !r.is_empty() {
        if clients.len() >= MAX_CLIENTS {
            let got = clients.len() + 1;
            return Err(r.error(DecodeErrorKind::TooLong { field: "client records", max: MAX_CLIENTS, got }));
        }
        let name = text(&mut r, "client name")?;
        let clan = text(&mut r, "client clan")?;
        let country = i64::from(varint::read(&mut r).context("client country")?);
        let score = i64::from(varint::read(&mut r).context("client score")?);
        let flags = i64::from(varint::read(&mut r).context("client flags")?);
        clients.push(Client { name, clan, country, score, flags });
    }
    Ok(Info07 { server: s, clients })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_match_the_captures() {
        assert_eq!(xe_request(0x123456), *include_bytes!("../testdata/players60-ddnet-xe-gie3.req.bin"));
        assert_eq!(xe_request(258), *include_bytes!("../testdata/ratelimited-ddnet-xe-gie3.req.bin"));
        assert_eq!(plain_request(GETINFO, 42), *include_bytes!("../testdata/players60-06-gie3.req.bin"));
        assert_eq!(plain_request(GETINFO_64_LEGACY, 7), *include_bytes!("../testdata/players60-64legacy-fstd.req.bin"));
        let tok = [0x86, 0x88, 0xd2, 0x63];
        assert_eq!(token_request7(tok), include_bytes!("../testdata/empty-07-token-request.req.bin").to_vec());
        assert_eq!(
            info_request7([0x8a, 0x4d, 0x86, 0x2f], tok, 1234567),
            include_bytes!("../testdata/empty-07-gie3.req.bin").to_vec()
        );
        assert_eq!(
            token_request7([0x77, 0x1c, 0xb8, 0x74]),
            include_bytes!("../testdata/tw07/clients3-07-token-request.req.bin").to_vec()
        );
    }

    #[test]
    fn token_reply_and_suffix() {
        let rep = include_bytes!("../testdata/empty-07-token-request.resp.bin");
        assert_eq!(token_reply7(rep, [0x86, 0x88, 0xd2, 0x63]), Some([0x8a, 0x4d, 0x86, 0x2f]));
        assert_eq!(token_reply7(rep, [0x86, 0x88, 0xd2, 0x64]), None);
        assert_eq!(name_suffix("bzhead DDNet test [60/64]"), Some((60, 64)));
        assert_eq!(name_suffix("a [b]"), None);
        assert_eq!(name_suffix("plain"), None);
    }
}
