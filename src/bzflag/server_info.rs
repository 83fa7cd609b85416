//! Presenting the answer of a BZFlag query (`MsgQueryGame` + `MsgQueryPlayers`), as `bzfquery` prints it or as
//! JSON in the result shape shared with the query plugins.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;

use super::consts::{GameOptions, GameType, Team};
use super::event::QueryPlayer;
use super::msg::{QueryGameInfo, TeamInfo};
use crate::query::result::{Answer, CountField, FieldValue, QueryResult, TextField};

/// The option words `bzfquery` prints, in its order.
pub fn option_words(options: u16) -> Vec<&'static str> {
    let o = GameOptions::from_bits_retain(options);
    let mut v = Vec::new();
    for (bit, word) in [
        (GameOptions::SUPER_FLAGS, "flags"),
        (GameOptions::JUMPING, "jumping"),
        (GameOptions::INERTIA, "inertia"),
        (GameOptions::RICOCHET, "ricochet"),
        (GameOptions::SHAKABLE, "shaking"),
        (GameOptions::ANTIDOTE, "antidote"),
        (GameOptions::HANDICAP, "handicap"),
        (GameOptions::NO_TEAM_KILLS, "no-team-kills"),
    ] {
        if o.contains(bit) {
            v.push(word);
        }
    }
    v
}

fn style_word(t: u16) -> String {
    match t {
        0 => "TeamFFA".into(),
        1 => "ClassicCTF".into(),
        2 => "OpenFFA".into(),
        3 => "RabbitChase".into(),
        o => format!("unknown ({o})"),
    }
}

fn team_title(t: Team) -> String {
    let n = t.name();
    let mut c = n.chars();
    c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
}

/// `maxTime` and `timeElapsed` are sent in tenths of a second (as `bzfquery` reads them).
fn tenths(v: u16) -> String {
    if v % 10 == 0 {
        format!("{}", v / 10)
    } else {
        format!("{:.1}", v as f32 / 10.0)
    }
}

/// The text `bzfquery` prints for the same answer (player types named correctly: tank, robot).
pub fn to_text(g: &QueryGameInfo, teams: &[TeamInfo], players: &[QueryPlayer]) -> String {
    let mut s = String::new();
    s += &format!("style: {}\n", style_word(g.game_type));
    s += "options:";
    for w in option_words(g.game_options) {
        s += " ";
        s += w;
    }
    s += "\n";
    s += &format!("maxPlayers: {}\nmaxShots: {}\n", g.max_players, g.max_shots);
    let ts = g.team_sizes;
    let tm = g.team_max;
    s += &format!(
        "team sizes: {} {} {} {} {} {} (rogue red green blue purple observer)\n",
        ts[0], ts[1], ts[2], ts[3], ts[4], ts[5]
    );
    s += &format!("max sizes:  {} {} {} {} {} {}\n", tm[0], tm[1], tm[2], tm[3], tm[4], tm[5]);
    if GameOptions::from_bits_retain(g.game_options).contains(GameOptions::SHAKABLE) {
        s += &format!("wins to shake bad flag: {}\n", g.shake_wins);
        s += &format!("time to shake bad flag: {}\n", tenths(g.shake_timeout));
    }
    s += &format!("max player score: {}\n", g.max_player_score);
    s += &format!("max team score: {}\n", g.max_team_score);
    s += &format!("max time: {}\n", tenths(g.max_time));
    s += &format!("time elapsed: {}\n\n", tenths(g.time_elapsed));
    for t in teams {
        s += &format!(
            "{} team: {} players, score: {} ({} wins, {} losses)\n",
            team_title(t.team),
            t.size,
            t.wins as i32 - t.losses as i32,
            t.wins,
            t.losses
        );
    }
    s += "\n";
    for p in players {
        let kind = match p.player_type {
            super::consts::PlayerType::Computer => "robot tank",
            _ => "tank",
        };
        let callsign = crate::text::for_terminal(&p.callsign);
        s += &format!("player {callsign} ({} team) is a {kind}:\n", team_title(p.team));
        s += &format!("  score: {} ({} wins, {} losses)\n", p.wins as i32 - p.losses as i32, p.wins, p.losses);
        s += &format!("  {}\n", crate::text::for_terminal(&p.motto));
    }
    s
}

/// The answer in the result shape shared by every query protocol, as a scan reports it; printed, like every
/// protocol's, by [`QueryResult::write_json`].
///
/// Rules and each player's own fields come in alphabetical order (as earlier versions printed them).
pub fn answer(g: &QueryGameInfo, teams: &[TeamInfo], players: &[QueryPlayer]) -> Answer {
    let playing: u32 = g.team_sizes.iter().take(5).map(|&x| x as u32).sum();
    let bots = players.iter().filter(|p| p.player_type == super::consts::PlayerType::Computer).count();
    let mut a = Answer::with_capacity(256 + 64 * players.len(), 11 + 6 * players.len(), players.len());
    a.set_text(TextField::GameType, Some(GameType::from_u16(g.game_type).name()));
    a.set_text(TextField::Version, Some("BZFS0221"));
    a.set_count(CountField::Players, Some(i64::from(playing)));
    a.set_count(CountField::MaxPlayers, Some(i64::from(g.max_players)));
    a.set_count(CountField::Bots, i64::try_from(bots).ok());
    a.set_password(Some(false));
    a.set_player_list_known(true);
    for p in players {
        let (team, kind) = (value(&p.team), value(&p.player_type));
        let score = i64::from(p.wins) - i64::from(p.losses);
        a.push_player(
            &p.callsign,
            FieldValue::Int(score),
            FieldValue::from(&team),
            FieldValue::Null,
            [
                ("id", FieldValue::Int(i64::from(p.id))),
                ("losses", FieldValue::Int(i64::from(p.losses))),
                ("motto", FieldValue::Str(&p.motto)),
                ("tks", FieldValue::Int(i64::from(p.team_kills))),
                ("type", FieldValue::from(&kind)),
                ("wins", FieldValue::Int(i64::from(p.wins))),
            ],
        );
    }
    let tenths = |v: u16| value(&(f32::from(v) / 10.0));
    let style = style_word(g.game_type);
    let options = value(&option_words(g.game_options));
    let (max_time, elapsed, shake_timeout) = (tenths(g.max_time), tenths(g.time_elapsed), tenths(g.shake_timeout));
    a.set_rule("max_player_score", FieldValue::Int(i64::from(g.max_player_score)));
    a.set_rule("max_shots", FieldValue::Int(i64::from(g.max_shots)));
    a.set_rule("max_team_score", FieldValue::Int(i64::from(g.max_team_score)));
    a.set_rule("max_time_s", FieldValue::Json(&max_time));
    a.set_rule("options", FieldValue::Json(&options));
    a.set_rule("shake_timeout_s", FieldValue::Json(&shake_timeout));
    a.set_rule("shake_wins", FieldValue::Int(i64::from(g.shake_wins)));
    a.set_rule("style", FieldValue::Str(&style));
    a.set_rule("time_elapsed_s", FieldValue::Json(&elapsed));
    a.set_raw("game", FieldValue::Json(&value(g)));
    a.set_raw("teams", FieldValue::Json(&value(teams)));
    a
}

/// A value that is not a plain integer or text, kept as the JSON value `serde_json` makes of it.
fn value<T: serde::Serialize + ?Sized>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The answer of the server at `addr` as a query result, `elapsed` its round trip (printed to a tenth of a
/// millisecond).
pub fn result(
    addr: SocketAddr,
    g: &QueryGameInfo,
    teams: &[TeamInfo],
    players: &[QueryPlayer],
    elapsed: Duration,
) -> QueryResult {
    QueryResult {
        index: 0,
        protocol: "bzflag".to_owned(),
        address: addr,
        ping_ms: Some((elapsed.as_secs_f64() * 1000.0 * 10.0).round() / 10.0),
        outcome: Ok(answer(g, teams, players)),
    }
}

/// The answer as one JSON value in the result shape shared by every query protocol ([`result`] as a value).
pub fn to_json(
    addr: SocketAddr,
    g: &QueryGameInfo,
    teams: &[TeamInfo],
    players: &[QueryPlayer],
    elapsed: Duration,
) -> Value {
    result(addr, g, teams, players, elapsed).to_json()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bzflag::consts::PlayerType;

    fn sample() -> (QueryGameInfo, Vec<TeamInfo>, Vec<QueryPlayer>) {
        let g = QueryGameInfo {
            game_type: 1,
            game_options: (GameOptions::SUPER_FLAGS | GameOptions::JUMPING).bits(),
            max_players: 20,
            max_shots: 3,
            team_sizes: [0, 1, 1, 0, 0, 2],
            max_time: 3005,
            time_elapsed: 20,
            ..QueryGameInfo::default()
        };
        let teams = vec![TeamInfo { team: Team::Red, size: 1, wins: 4, losses: 1 }];
        let player = |id, callsign: &str, team, player_type| QueryPlayer {
            id,
            callsign: callsign.into(),
            motto: "\"quoted\"".into(),
            team,
            player_type,
            wins: 2,
            losses: 5,
            team_kills: 1,
        };
        let players =
            vec![player(0, "alice", Team::Red, PlayerType::Tank), player(1, "bot", Team::Green, PlayerType::Computer)];
        (g, teams, players)
    }

    #[test]
    fn one_shape_for_query_and_scan() {
        let (g, teams, players) = sample();
        let addr: SocketAddr = "127.0.0.1:5154".parse().unwrap();
        let r = result(addr, &g, &teams, &players, Duration::from_micros(1234));
        let line = r.to_json_line();
        // The shape's keys in their documented order, the rules and player fields alphabetical.
        assert!(line.starts_with(r#"{"v":1,"protocol":"bzflag","address":"127.0.0.1:5154","ok":true,"ping_ms":1.2,"name":null,"map":null,"game_type":"#), "{line}");
        assert!(
            line.contains(r#""players":2,"max_players":20,"bots":1,"password":false,"version":"BZFS0221""#),
            "{line}"
        );
        assert!(line.contains(r#"{"name":"alice","score":-3,"team":"red","ping":null,"id":0,"losses":5,"motto":"\"quoted\"","tks":1,"type":"#), "{line}");
        assert!(line.contains(r#""rules":{"max_player_score":0,"max_shots":3,"max_team_score":0,"max_time_s":300.5,"options":["flags","jumping"],"#), "{line}");
        assert!(line.contains(r#""style":"ClassicCTF","time_elapsed_s":2.0"#), "{line}");
        assert_eq!(line, serde_json::to_string(&r).unwrap());
        // What a scan reports is the same answer, and reads back from its JSON unchanged.
        let a = answer(&g, &teams, &players);
        assert_eq!(r.outcome.as_ref().unwrap(), &a);
        assert_eq!(Answer::from_shape(&to_json(addr, &g, &teams, &players, Duration::ZERO)), a);
    }
}
