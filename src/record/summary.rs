//! Match reports (`replay FILE --summary`, `observe --summary`): the numbers of a match summed up from the events
//! an observer (or a replay) reports, one JSON document per match (`docs/schemas/summary.schema.json`).
//!
//! A match ends at `MsgScoreOver` (a game over) or where the events end. Counts come from the events: a kill
//! counts for the killer unless it is a suicide (killer = victim) or a team kill (same team, not rogue), and as a
//! death for the victim in every case; a hit is a kill by a shot (shot id ≥ 0) of another player. Times are
//! seconds with one decimal: how long each player held each team flag (grab to drop, capture, transfer or
//! leave) and spent on each team (from when the match shows them to their leave or the end). Team scores over
//! time are the teams' counts each time they change, timed from the match's start.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::Serialize;

use crate::bzflag::consts::{player, Team};
use crate::bzflag::event::Event;
use crate::bzflag::session::team_of_flag;

/// One player's numbers in a match.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PlayerSummary {
    /// Player id (ids are reused: a player who left and came back is listed twice).
    pub id: u8,
    /// Callsign.
    pub callsign: String,
    /// Team (the last one).
    pub team: &'static str,
    /// Kills of opponents.
    pub kills: u32,
    /// Deaths (every cause).
    pub deaths: u32,
    /// Kills of team mates.
    pub team_kills: u32,
    /// Deaths by their own hand.
    pub suicides: u32,
    /// Team flags brought home.
    pub captures: u32,
    /// Flags picked up.
    pub flag_grabs: u32,
    /// Shots fired (as relayed to the observer).
    pub shots: u32,
    /// Kills by a shot of another player.
    pub hits: u32,
    /// Seconds holding each team's flag, by team.
    pub flag_hold_s: BTreeMap<&'static str, f64>,
    /// Seconds on each team.
    pub team_s: BTreeMap<&'static str, f64>,
}

/// A team's counts at a moment.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TeamScore {
    /// Seconds from the match's start.
    pub t: f64,
    /// Team.
    pub team: &'static str,
    /// Wins.
    pub wins: u16,
    /// Losses.
    pub losses: u16,
    /// Wins − losses.
    pub score: i32,
}

/// One match.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MatchSummary {
    /// Document version.
    pub v: u32,
    /// Always "match_summary".
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// 1 for the first match of the input, then 2, ...
    #[serde(rename = "match")]
    pub number: u32,
    /// Seconds the match lasted (first to last event of it).
    pub duration_s: f64,
    /// "game_over" or "end" (the input ended).
    pub ended_by: &'static str,
    /// The winning team of a game over.
    pub winner: Option<&'static str>,
    /// Players (observers left out), in order of appearance.
    pub players: Vec<PlayerSummary>,
    /// Each team's counts at the end.
    pub teams: Vec<TeamScore>,
    /// Each change of a team's counts, in order.
    pub team_scores: Vec<TeamScore>,
}

#[derive(Debug)]
struct Live {
    row: usize,
    team: Team,
    since: Duration,
    holding: Option<(Team, Duration)>,
}

/// Sums a match up from events; [`Summarizer::event`] returns a finished match at a game over,
/// [`Summarizer::finish`] the match in progress.
#[derive(Debug, Default)]
pub struct Summarizer {
    number: u32,
    start: Option<Duration>,
    last: Duration,
    players: Vec<PlayerSummary>,
    live: HashMap<u8, Live>,
    teams: BTreeMap<u16, TeamScore>,
    team_scores: Vec<TeamScore>,
}

/// Most rows of one match (ids are reused by joins and leaves; a flood of them stops being listed there).
const MAX_ROWS: usize = 4096;
/// Most team score changes kept per match.
const MAX_TEAM_SCORES: usize = 100_000;

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

impl Summarizer {
    /// An empty summary.
    pub fn new() -> Summarizer {
        Summarizer::default()
    }

    fn row(&mut self, id: u8) -> Option<&mut PlayerSummary> {
        let r = self.live.get(&id)?.row;
        self.players.get_mut(r)
    }

    fn stop_holding(&mut self, id: u8, t: Duration) {
        if let Some(l) = self.live.get_mut(&id) {
            if let Some((team, since)) = l.holding.take() {
                let row = l.row;
                if let Some(p) = self.players.get_mut(row) {
                    *p.flag_hold_s.entry(team.name()).or_default() += t.saturating_sub(since).as_secs_f64();
                }
            }
        }
    }

    fn start_holding(&mut self, id: u8, abbv: crate::bzflag::msg::Abbv, t: Duration) {
        if let (Some(team), Some(l)) = (team_of_flag(abbv), self.live.get_mut(&id)) {
            l.holding = Some((team, t));
        }
    }

    fn leave(&mut self, id: u8, t: Duration) {
        self.stop_holding(id, t);
        if let Some(l) = self.live.remove(&id) {
            if let Some(p) = self.players.get_mut(l.row) {
                *p.team_s.entry(l.team.name()).or_default() += t.saturating_sub(l.since).as_secs_f64();
            }
        }
    }

    /// Takes one event at `t`; a game over ends the match and returns it.
    pub fn event(&mut self, t: Duration, e: &Event) -> Option<MatchSummary> {
        let start = *self.start.get_or_insert(t);
        self.last = t;
        match e {
            Event::Join { id, callsign, team, .. } if *team != Team::Observer => {
                let same =
                    self.live.get(id).and_then(|l| self.players.get(l.row)).is_some_and(|p| &p.callsign == callsign);
                if !same {
                    self.leave(*id, t);
                    if self.players.len() < MAX_ROWS {
                        self.players.push(PlayerSummary {
                            id: *id,
                            callsign: callsign.clone(),
                            team: team.name(),
                            kills: 0,
                            deaths: 0,
                            team_kills: 0,
                            suicides: 0,
                            captures: 0,
                            flag_grabs: 0,
                            shots: 0,
                            hits: 0,
                            flag_hold_s: BTreeMap::new(),
                            team_s: BTreeMap::new(),
                        });
                        let row = self.players.len() - 1;
                        self.live.insert(*id, Live { row, team: *team, since: t, holding: None });
                    }
                }
            }
            Event::Leave { id, .. } => self.leave(*id, t),
            Event::Kill { victim, killer, shot_id, .. } => {
                let team_of = |id: &u8| self.live.get(id).map(|l| l.team);
                let (vt, kt) = (team_of(victim), team_of(killer));
                if let Some(p) = self.row(*victim) {
                    p.deaths += 1;
                }
                self.stop_holding(*victim, t);
                if killer == victim {
                    if let Some(p) = self.row(*killer) {
                        p.suicides += 1;
                    }
                } else if *killer != player::SERVER {
                    let team_kill = vt.is_some() && vt == kt && vt != Some(Team::Rogue);
                    if let Some(p) = self.row(*killer) {
                        if team_kill {
                            p.team_kills += 1;
                        } else {
                            p.kills += 1;
                        }
                        if *shot_id >= 0 {
                            p.hits += 1;
                        }
                    }
                }
            }
            Event::Capture { player, .. } => {
                self.stop_holding(*player, t);
                if let Some(p) = self.row(*player) {
                    p.captures += 1;
                }
            }
            Event::Grab { player, flag, .. } => {
                if let Some(p) = self.row(*player) {
                    p.flag_grabs += 1;
                }
                self.stop_holding(*player, t);
                self.start_holding(*player, flag.abbv, t);
            }
            Event::Drop { player, .. } => self.stop_holding(*player, t),
            Event::Transfer { from, to, flag } => {
                self.stop_holding(*from, t);
                self.stop_holding(*to, t);
                self.start_holding(*to, flag.abbv, t);
            }
            Event::ShotBegin(f) => {
                if let Some(p) = self.row(f.shooter) {
                    p.shots += 1;
                }
            }
            Event::Team(info) if info.team != Team::Observer => {
                let s = TeamScore {
                    t: secs(t.saturating_sub(start)),
                    team: info.team.name(),
                    wins: info.wins,
                    losses: info.losses,
                    score: i32::from(info.wins) - i32::from(info.losses),
                };
                let changed =
                    self.teams.get(&info.team.to_u16()).is_none_or(|o| (o.wins, o.losses) != (s.wins, s.losses));
                if changed {
                    if self.team_scores.len() < MAX_TEAM_SCORES {
                        self.team_scores.push(s.clone());
                    }
                    self.teams.insert(info.team.to_u16(), s);
                }
            }
            Event::GameOver { team, .. } => {
                let winner = (!matches!(team, Team::NoTeam | Team::Other(_))).then(|| team.name());
                return Some(self.close("game_over", winner));
            }
            _ => {}
        }
        None
    }

    fn close(&mut self, ended_by: &'static str, winner: Option<&'static str>) -> MatchSummary {
        let t = self.last;
        let ids: Vec<u8> = self.live.keys().copied().collect();
        // Close every open interval at the end, then keep the players on for the next match.
        let mut carry = Vec::new();
        for id in ids {
            let team = self.live.get(&id).map(|l| l.team);
            let callsign = self.row(id).map(|p| p.callsign.clone());
            self.leave(id, t);
            if let (Some(team), Some(callsign)) = (team, callsign) {
                carry.push((id, team, callsign));
            }
        }
        for p in &mut self.players {
            for v in p.flag_hold_s.values_mut().chain(p.team_s.values_mut()) {
                *v = (*v * 10.0).round() / 10.0;
            }
        }
        self.number += 1;
        let start = self.start.unwrap_or(t);
        let out = MatchSummary {
            v: 1,
            kind: "match_summary",
            number: self.number,
            duration_s: secs(t.saturating_sub(start)),
            ended_by,
            winner,
            players: std::mem::take(&mut self.players),
            teams: self.teams.values().cloned().collect(),
            team_scores: std::mem::take(&mut self.team_scores),
        };
        let number = self.number;
        let teams = std::mem::take(&mut self.teams);
        *self = Summarizer { number, start: Some(t), last: t, teams, ..Summarizer::default() };
        for (id, team, callsign) in carry {
            let join = Event::Join {
                id,
                callsign,
                team,
                player_type: crate::bzflag::consts::PlayerType::Tank,
                motto: String::new(),
                wins: 0,
                losses: 0,
                team_kills: 0,
            };
            self.event(t, &join);
        }
        out
    }

    /// The match in progress, if anything happened in it (a player seen, a team's score).
    pub fn finish(&mut self) -> Option<MatchSummary> {
        (!self.players.is_empty() || !self.team_scores.is_empty()).then(|| self.close("end", None))
    }
}

/// A match as one JSON line.
pub fn json(m: &MatchSummary) -> String {
    serde_json::to_string(m).unwrap_or_else(|e| format!("{{\"v\":1,\"type\":\"error\",\"error\":\"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bzflag::consts::PlayerType;

    fn join(id: u8, name: &str, team: Team) -> Event {
        Event::Join {
            id,
            callsign: name.into(),
            team,
            player_type: PlayerType::Tank,
            motto: String::new(),
            wins: 0,
            losses: 0,
            team_kills: 0,
        }
    }

    fn kill(victim: u8, killer: u8, shot_id: i16) -> Event {
        Event::Kill {
            victim,
            victim_callsign: String::new(),
            killer,
            killer_callsign: String::new(),
            reason: "shot",
            reason_code: 1,
            shot_id,
            flag: Default::default(),
            phydrv: None,
        }
    }

    #[test]
    fn kills_team_kills_suicides_and_time_are_counted() {
        let mut s = Summarizer::new();
        let t = Duration::from_secs;
        s.event(t(0), &join(0, "a", Team::Red));
        s.event(t(0), &join(1, "b", Team::Green));
        s.event(t(0), &join(2, "c", Team::Red));
        s.event(t(0), &join(3, "obs", Team::Observer));
        s.event(t(1), &kill(1, 0, 3));
        s.event(t(2), &kill(2, 0, 4));
        s.event(t(3), &kill(0, 0, -1));
        s.event(t(4), &Event::Leave { id: 2, callsign: "c".into() });
        let m = s.finish().expect("a match");
        assert_eq!(m.players.len(), 3);
        let a = &m.players[0];
        assert_eq!((a.kills, a.team_kills, a.suicides, a.deaths, a.hits), (1, 1, 1, 1, 2));
        assert_eq!(m.players[1].deaths, 1);
        assert_eq!(m.players[2].team_s.get("red"), Some(&4.0));
        assert_eq!(a.team_s.get("red"), Some(&4.0));
        assert_eq!(m.ended_by, "end");
    }
}
