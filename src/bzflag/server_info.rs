//! Presenting the answer of a BZFlag query (`MsgQueryGame` + `MsgQueryPlayers`) as `bzfquery` prints it. The same
//! answer in the result shape shared with the query plugins is `crate::query::bzflag` (the query host's, which
//! sits below the engine).

use super::consts::{GameOptions, Team};
use super::event::QueryPlayer;
use super::msg::{QueryGameInfo, TeamInfo};

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

/// The game style word `bzfquery` prints (`ClassicCTF`, ...).
pub fn style_word(t: u16) -> String {
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
