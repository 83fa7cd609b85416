//! SRB2 2.2.x packets: header and checksum, `PT_ASKINFO`, `PT_SERVERINFO` (every 2.2 layout), `PT_PLAYERINFO`.
//!
//! Read from STJr/SRB2 (`d_clisrv.h` / `netcode/protocol.h`, `SV_SendServerInfo`, `SV_SendPlayerInfo`,
//! `PutFileNeeded`, `NetbufferChecksum`) at every 2.2 release tag. Little-endian, packed structs.
//!
//! `PT_SERVERINFO` layouts, by the byte that starts the body:
//! * 2.2.0: no marker; `version` (202) first, numeric game type, `isdedicated`, `adminplayer`, no application.
//! * otherwise `255`, then `packetversion`: 2 (2.2.1-2.2.2; no `refusereason`, `isdedicated`), 3 (2.2.3-2.2.9;
//!   `refusereason` added), 4 (2.2.10-2.2.13; `flags` instead of `isdedicated`, a folder byte per file),
//!   5 (2.2.15; `httpsource[256]` before the file list). Newer versions are read as 5.

use bzhead_wire::text::{until_nul, utf8_or_latin1};
use bzhead_wire::{DecodeError, DecodeResult, Reader, ResultExt};

/// `PT_ASKINFO`.
pub const PT_ASKINFO: u8 = 12;
/// `PT_SERVERINFO`.
pub const PT_SERVERINFO: u8 = 13;
/// `PT_PLAYERINFO`.
pub const PT_PLAYERINFO: u8 = 14;
/// `VERSION` of every 2.2 release (2.2 = 202).
pub const VERSION_22: u8 = 202;
/// Size of one `plrinfo` record.
pub const PLAYER_RECORD: usize = 36;
/// `MAXPLAYERS`: records in a `PT_PLAYERINFO`.
pub const MAX_PLAYERS: usize = 32;
/// `flags` bit: dedicated server.
pub const SV_DEDICATED: u8 = 0x40;
/// `flags` bit: the file list did not fit.
pub const SV_LOTSOFADDONS: u8 = 0x20;
/// `MAX_WADPATH`: longest file name (written without NUL when it fills the limit).
const MAX_WADPATH: usize = 512;
/// Most file entries decoded.
const MAX_FILES: usize = 255;

/// SRB2's packet checksum: `0x1234567 + Σ byte[i]·(i−3)` over bytes 4.. (each byte after the checksum weighted by
/// its 1-based position), modulo 2^32.
pub fn checksum(packet: &[u8]) -> u32 {
    packet.iter().skip(4).zip(1u32..).fold(0x0123_4567u32, |c, (&b, i)| c.wrapping_add(u32::from(b).wrapping_mul(i)))
}

/// A datagram with header `type` and `body`, checksummed.
pub fn packet(packet_type: u8, body: &[u8]) -> Vec<u8> {
    let mut p = vec![0, 0, 0, 0, 0, 0, packet_type, 0];
    p.extend_from_slice(body);
    let c = checksum(&p);
    p[..4].copy_from_slice(&c.to_le_bytes());
    p
}

/// `PT_ASKINFO`: version 202 and a `time` the server copies into its `PT_SERVERINFO`.
pub fn askinfo(time: u32) -> Vec<u8> {
    let mut body = vec![VERSION_22];
    body.extend_from_slice(&time.to_le_bytes());
    packet(PT_ASKINFO, &body)
}

/// A checked datagram: its type and body, or `None` if it is too short or its checksum is wrong (the game drops
/// those silently too).
pub fn open(data: &[u8]) -> Option<(u8, &[u8])> {
    let stored = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
    if stored != checksum(data) || data.len() < 8 {
        return None;
    }
    Some((*data.get(6)?, data.get(8..)?))
}

/// One file of the server's add-on list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// File name.
    pub name: String,
    /// Size in bytes.
    pub size: u32,
    /// Status byte: low nibble 1; high nibble 1 = the server will not send it, 0 = on request or too large.
    pub status: u8,
    /// 2.2.10+: a folder add-on.
    pub folder: Option<bool>,
    /// MD5 of the file.
    pub md5: [u8; 16],
}

/// A decoded `PT_SERVERINFO`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerInfo {
    /// `None` for the 2.2.0 layout.
    pub packet_version: Option<u8>,
    /// Application name (`SRB2`), absent in 2.2.0.
    pub application: Option<String>,
    /// `VERSION` (202).
    pub version: u8,
    /// `SUBVERSION` (15 for 2.2.15).
    pub subversion: u8,
    /// Connected nodes (2.2.15: excluding the dedicated host and bots).
    pub players: u8,
    /// Player slots (2.2.15: minus bots).
    pub max_players: u8,
    /// 0 joinable, 1 joins disabled, 2 full, 3 banned (PACKETVERSION 3+).
    pub refuse_reason: Option<u8>,
    /// Game type name (2.2.0: from its number).
    pub game_type: String,
    /// 2.2.0: the game type number.
    pub game_type_number: Option<u8>,
    /// Modified game (add-ons loaded).
    pub modified: bool,
    /// Cheats enabled.
    pub cheats: bool,
    /// Dedicated server.
    pub dedicated: bool,
    /// PACKETVERSION 4+: the file list was truncated (`SV_LOTSOFADDONS`).
    pub lots_of_addons: Option<bool>,
    /// 2.2.0: the admin player number.
    pub admin_player: Option<i8>,
    /// Files announced.
    pub file_count: u8,
    /// The request's `time`, echoed.
    pub time: u32,
    /// Level time in tics (35 per second).
    pub level_time: u32,
    /// Server name (may hold SRB2 text colour bytes 0x80-0x8F).
    pub name: String,
    /// Map lump name (`MAP01`).
    pub map: String,
    /// Map title, upper-cased by the server.
    pub map_title: String,
    /// MD5 of the map.
    pub map_md5: [u8; 16],
    /// Act number.
    pub act: u8,
    /// The level has "Zone" in its title.
    pub zone: bool,
    /// PACKETVERSION 5+: HTTP download mirror.
    pub http_source: Option<String>,
    /// Decoded files.
    pub files: Vec<FileEntry>,
    /// The file list ended in the middle of an entry (kept: what was whole).
    pub files_cut: bool,
}

fn text(b: &[u8]) -> String {
    utf8_or_latin1(until_nul(b)).into_owned()
}

/// 2.2.0's `Gametype_Names`.
fn game_type_name(n: u8) -> Option<&'static str> {
    ["Co-op", "Competition", "Race", "Match", "Team Match", "Tag", "Hide & Seek", "CTF"].get(usize::from(n)).copied()
}

/// Decodes a `PT_SERVERINFO` body (after the 8-byte header).
pub fn parse_serverinfo(body: &[u8]) -> DecodeResult<ServerInfo> {
    let mut r = Reader::new(body);
    let first = r.u8().context("version or 255")?;
    let (packet_version, application, version) = if first == 255 {
        let pv = r.u8().context("packetversion")?;
        if pv < 2 {
            return Err(DecodeError::invalid("below 2 (the first 255-marked layout)", 1).context("packetversion"));
        }
        let app = text(r.take(16).context("application")?);
        (Some(pv), Some(app), r.u8().context("version")?)
    } else {
        (None, None, first)
    };
    let pv = packet_version.unwrap_or(0);
    let subversion = r.u8().context("subversion")?;
    let players = r.u8().context("numberofplayer")?;
    let max_players = r.u8().context("maxplayer")?;
    let refuse_reason = if pv >= 3 { Some(r.u8().context("refusereason")?) } else { None };
    let (game_type, game_type_number) = if packet_version.is_some() {
        (text(r.take(24).context("gametypename")?), None)
    } else {
        let n = r.u8().context("gametype")?;
        (game_type_name(n).map_or_else(|| n.to_string(), str::to_owned), Some(n))
    };
    let modified = r.u8().context("modifiedgame")? != 0;
    let cheats = r.u8().context("cheatsenabled")? != 0;
    let flags = r.u8().context("flags or isdedicated")?;
    let (dedicated, lots_of_addons) =
        if pv >= 4 { (flags & SV_DEDICATED != 0, Some(flags & SV_LOTSOFADDONS != 0)) } else { (flags != 0, None) };
    let file_count = r.u8().context("fileneedednum")?;
    let admin_player = if packet_version.is_none() { Some(r.u8().context("adminplayer")? as i8) } else { None };
    let time = r.u32_le().context("time")?;
    let level_time = r.u32_le().context("leveltime")?;
    let name = text(r.take(32).context("servername")?);
    let map = text(r.take(8).context("mapname")?);
    let map_title = text(r.take(33).context("maptitle")?);
    let map_md5 = r.array::<16>().context("mapmd5")?;
    let act = r.u8().context("actnum")?;
    let zone = r.u8().context("iszone")? != 0;
    let http_source = if pv >= 5 { Some(text(r.take(256).context("httpsource")?)) } else { None };
    let mut info = ServerInfo {
        packet_version,
        application,
        version,
        subversion,
        players,
        max_players,
        refuse_reason,
        game_type,
        game_type_number,
        modified,
        cheats,
        dedicated,
        lots_of_addons,
        admin_player,
        file_count,
        time,
        level_time,
        name,
        map,
        map_title,
        map_md5,
        act,
        zone,
        http_source,
        files: Vec::new(),
        files_cut: false,
    };
    // The file list: a damaged one does not make the server info unreadable.
    for _ in 0..usize::from(file_count).min(MAX_FILES) {
        match file_entry(&mut r, pv >= 4) {
            Ok(f) => info.files.push(f),
            Err(_) => {
                info.files_cut = true;
                break;
            }
        }
    }
    Ok(info)
}

fn file_entry(r: &mut Reader<'_>, has_folder: bool) -> DecodeResult<FileEntry> {
    let status = r.u8().context("file status")?;
    let folder = if has_folder { Some(r.u8().context("file folder")? != 0) } else { None };
    let size = r.u32_le().context("file size")?;
    // WRITESTRINGN: up to MAX_WADPATH bytes, NUL only if shorter.
    let rest = r.rest();
    let n = rest.iter().take(MAX_WADPATH).position(|&b| b == 0);
    let name = match n {
        Some(n) => {
            let name = text(r.take(n).context("file name")?);
            r.skip(1).context("file name NUL")?;
            name
        }
        None => text(r.take(MAX_WADPATH).context("file name")?),
    };
    let md5 = r.array::<16>().context("file md5")?;
    Ok(FileEntry { name, size, status, folder, md5 })
}

/// One player of a `PT_PLAYERINFO`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayerInfo {
    /// Player slot number.
    pub slot: u8,
    /// Name.
    pub name: String,
    /// 255 spectator (or no team), 0 playing in a non-team mode, 1 red, 2 blue.
    pub team: u8,
    /// Skin number.
    pub skin: u8,
    /// 0x20 "it" (tag), 0x40 has a flag, 0x80 super.
    pub data: u8,
    /// Score.
    pub score: u32,
    /// Seconds in the server.
    pub time_in_server: u16,
}

/// Decodes a `PT_PLAYERINFO` body: 36-byte records, empty slots (`num` 255: only that byte is meaningful, the rest
/// is stale buffer contents) skipped. Returns the players and the count of leftover bytes (0 when well-formed).
pub fn parse_playerinfo(body: &[u8]) -> (Vec<PlayerInfo>, usize) {
    let mut players = Vec::new();
    let mut chunks = body.chunks_exact(PLAYER_RECORD);
    for rec in chunks.by_ref().take(MAX_PLAYERS * 4) {
        let mut r = Reader::new(rec);
        let (Ok(slot), Ok(name), Ok(_addr), Ok(team), Ok(skin), Ok(data), Ok(score), Ok(time)) =
            (r.u8(), r.take(22), r.take(4), r.u8(), r.u8(), r.u8(), r.u32_le(), r.u16_le())
        else {
            continue;
        };
        if slot == 255 {
            continue;
        }
        players.push(PlayerInfo { slot, name: text(name), team, skin, data, score, time_in_server: time });
    }
    (players, chunks.remainder().len())
}

/// SRB2 text colour bytes (U+0080..U+008F after Latin-1 decoding) and other control characters removed.
pub fn strip_colours(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn askinfo_matches_the_synthetic_capture() {
        assert_eq!(askinfo(0x1122_3344), include_bytes!("../testdata/srb2-2.2-askinfo-SYNTHETIC.req.bin"));
        let p = askinfo(7);
        assert_eq!(open(&p), Some((PT_ASKINFO, &p[8..])));
        let mut bad = p.clone();
        bad[9] ^= 1;
        assert_eq!(open(&bad), None);
        assert_eq!(open(&p[..3]), None);
    }

    #[test]
    fn colour_bytes() {
        assert_eq!(strip_colours("\u{82}Yellow\u{80} server"), "Yellow server");
        assert_eq!(text(b"\x82Caf\xe9\0junk"), "\u{82}Café");
    }
}
