//! The built-in `bzflag` protocol's answer (`MsgQueryGame` + `MsgQueryPlayers`, from a query session of the BZFlag
//! engine) in the result shape shared by every query protocol. (The engine prints it as `bzfquery` does:
//! [`crate::bzflag::server_info`].)

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;

use super::result::{Answer, CountField, FieldValue, QueryResult, TextField};
use crate::bzflag::consts::{GameType, PlayerType};
use crate::bzflag::event::QueryPlayer;
use crate::bzflag::msg::{QueryGameInfo, TeamInfo};
use crate::bzflag::server_info::{option_words, style_word};

/// The answer in the result shape shared by every query protocol, as a scan reports it; printed, like every
/// protocol's, by [`QueryResult::write_json`].
///
/// Rules and each player's own fields come in alphabetical order (as earlier versions printed them).
pub fn answer(g: &QueryGameInfo, teams: &[TeamInfo], players: &[QueryPlayer]) -> Answer {
    let playing: u32 = g.team_sizes.iter().take(5).map(|&x| x as u32).sum();
    let bots = players.iter().filter(|p| p.player_type == PlayerType::Computer).count();
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
    use crate::bzflag::consts::{GameOptions, Team};

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
