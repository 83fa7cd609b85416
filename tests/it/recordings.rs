//! BZFlag `.rec` recordings with the real programs: one match recorded by `bzfs` itself (`-recdir`, an admin's
//! `/record start` and `/record save` through `bzadmin`) and by `bzhead observe --rec` at once, with bzhead's bots
//! playing CTF; `bzhead replay` of both gives the same kills, captures and chat; stock `bzfs -replay` plays
//! bzhead's file to a `bzadmin` viewer, who sees the match's kills.

use std::process::{Child, Stdio};
use std::thread;
use std::time::Duration;

use serde_json::Value;

use crate::support::{bzhead, run_bzhead, Bzadmin, Bzfs, OutputBuf, TempDir};

/// A child process killed (SIGKILL) on drop.
struct Proc(Child, OutputBuf);

impl Proc {
    fn start(args: &[&str]) -> Proc {
        let mut cmd = bzhead(args);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start bzhead");
        let out = OutputBuf::new();
        out.attach("bzhead-stdout", child.stdout.take().expect("stdout"));
        out.attach("bzhead-stderr", child.stderr.take().expect("stderr"));
        Proc(child, out)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lines of `bzhead replay FILE` between the chat lines `mark start` and `mark end` that tell a kill, a
/// capture or a chat line, in order.
fn match_lines(file: &std::path::Path) -> Vec<String> {
    let out = run_bzhead(["replay".as_ref(), file.as_os_str()], Duration::from_secs(30));
    assert!(out.success(), "{}", out.describe());
    let lines: Vec<&str> = out.stdout.lines().collect();
    let start = lines.iter().position(|l| l.ends_with("admin: mark start"));
    let end = lines.iter().position(|l| l.ends_with("admin: mark end"));
    let (Some(start), Some(end)) = (start, end) else { panic!("no marks in {}:\n{}", file.display(), out.stdout) };
    lines[start..=end]
        .iter()
        .filter(|l| l.contains(" destroyed by ") || l.contains("captured") || l.starts_with("    "))
        .map(|l| l.to_string())
        .collect()
}

/// The first match report in `text` (JSON lines).
fn summary_of(text: &str) -> Value {
    let line = text
        .lines()
        .find(|l| l.contains("\"type\":\"match_summary\""))
        .unwrap_or_else(|| panic!("no report in {text}"));
    serde_json::from_str(line).expect("a JSON report")
}

/// Two reports of the same match: equal counts, team scores in the same order, times within a second (the live
/// observer's clock starts at its connect, the recording's at its first state block).
fn same_report(live: &Value, recorded: &Value) {
    let schema = crate::schemas::Schema::load("summary");
    schema.check(live);
    schema.check(recorded);
    let players = |v: &Value| v["players"].as_array().cloned().unwrap_or_default();
    let (a, b) = (players(live), players(recorded));
    assert_eq!(a.len(), b.len(), "live {live:#}\nrecorded {recorded:#}");
    assert!(a.len() >= 4, "{live:#}");
    for (p, q) in a.iter().zip(&b) {
        for k in [
            "id",
            "callsign",
            "team",
            "kills",
            "deaths",
            "team_kills",
            "suicides",
            "captures",
            "flag_grabs",
            "shots",
            "hits",
        ] {
            assert_eq!(p[k], q[k], "{k} of {}: live {p:#}\nrecorded {q:#}", p["callsign"]);
        }
        for k in ["flag_hold_s", "team_s"] {
            let (x, y) = (p[k].as_object().cloned().unwrap_or_default(), q[k].as_object().cloned().unwrap_or_default());
            assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>(), "{k}: {p:#} {q:#}");
            for (team, secs) in &x {
                let d = secs.as_f64().unwrap_or(0.0) - y[team].as_f64().unwrap_or(0.0);
                assert!(d.abs() <= 1.0, "{k}.{team}: live {p:#}\nrecorded {q:#}");
            }
        }
    }
    let scores = |v: &Value| -> Vec<(Value, Value, Value)> {
        v["team_scores"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| (s["team"].clone(), s["wins"].clone(), s["losses"].clone()))
            .collect()
    };
    assert_eq!(scores(live), scores(recorded));
    assert!(
        a.iter().map(|p| p["kills"].as_u64().unwrap_or(0) + p["team_kills"].as_u64().unwrap_or(0)).sum::<u64>() >= 1,
        "{live:#}"
    );
}

#[test]
fn bzfs_and_observe_rec_record_the_same_match_and_stock_bzfs_replays_ours() {
    let dir = TempDir::new("recordings");
    let recdir = dir.join("recs");
    std::fs::create_dir_all(&recdir).expect("recdir");
    let recdir_arg = format!("{}/", recdir.display());
    let bzfs = Bzfs::builder().ctf().ricochet().args(["-ms", "3", "-passwd", "adm", "-recdir", &recdir_arg]).start();
    let server = bzfs.addr().to_string();
    let ours = dir.join("ours.rec");
    let observer = Proc::start(&["observe", "--rec", ours.to_str().expect("path"), &server]);
    assert!(observer.1.wait_for("joined the game as player", Duration::from_secs(10)), "{}", observer.1.text());
    // A second observer reports the match live and records it too: its report and its recording's agree.
    let ours2 = dir.join("ours2.rec");
    let reporter = Proc::start(&[
        "observe",
        "--callsign",
        "reporter",
        "--json",
        "--summary",
        "--rec",
        ours2.to_str().expect("path"),
        &server,
    ]);
    assert!(reporter.1.wait_for("\"type\":\"accept\"", Duration::from_secs(10)), "{}", reporter.1.text());
    let _bots = Proc::start(&["bot", "hunter", "--count", "4", "--team", "red,green", "--quiet", &server]);
    let mut admin = Bzadmin::join("admin", bzfs.addr());
    admin.send_line("/password adm");
    admin.send_line("/record start");
    assert!(admin.wait_for_output("Recording started", Duration::from_secs(10)), "{}", admin.output());
    admin.say("mark start");
    // Play until two kills (hunters find each other within seconds), at most 60 s.
    let kills = admin.output_buf().wait_for_count("destroyed by", 2, Duration::from_secs(60));
    assert!(kills, "fewer than 2 kills in 60 s:\n{}", admin.output());
    admin.say("mark end");
    thread::sleep(Duration::from_millis(500));
    admin.send_line("/record save theirs.rec");
    assert!(admin.wait_for_output("Record buffer saved", Duration::from_secs(10)), "{}", admin.output());
    // Our recorder is killed, not stopped: what it wrote must load as it is.
    drop(observer);
    // A signal makes the observer leave cleanly and report.
    let term = std::process::Command::new("kill").args(["-TERM", &reporter.0.id().to_string()]).status();
    assert!(term.is_ok_and(|s| s.success()), "cannot signal the reporter");
    assert!(reporter.1.wait_for("\"type\":\"match_summary\"", Duration::from_secs(30)), "{}", reporter.1.text());
    let live = summary_of(&reporter.1.text());
    let out = run_bzhead(["replay".as_ref(), "--summary".as_ref(), ours2.as_os_str()], Duration::from_secs(30));
    assert!(out.success(), "{}", out.describe());
    let recorded = summary_of(&out.stdout);
    same_report(&live, &recorded);
    let theirs = recdir.join("theirs.rec");

    let a = match_lines(&theirs);
    let b = match_lines(&ours);
    assert!(a.iter().filter(|l| l.contains(" destroyed by ")).count() >= 2, "{a:#?}");
    assert_eq!(a, b, "bzfs's recording and ours tell the match differently");

    // Stock bzfs plays our file to a viewer.
    let playdir = dir.join("play");
    std::fs::create_dir_all(&playdir).expect("playdir");
    std::fs::copy(&ours, playdir.join("ours.rec")).expect("copy");
    let play_arg = format!("{}/", playdir.display());
    let player = Bzfs::builder().args(["-replay", "-passwd", "adm", "-recdir", &play_arg]).start();
    let viewer = Bzadmin::join("viewer", player.addr());
    let mut radmin = Bzadmin::join("radmin", player.addr());
    radmin.send_line("/password adm");
    radmin.send_line("/replay load ours.rec");
    assert!(radmin.wait_for_output("Loaded file:", Duration::from_secs(10)), "{}", radmin.output());
    radmin.send_line("/replay play");
    // Played in real time: wait until the viewer has seen as many kills as the whole file holds.
    let file_kills = run_bzhead(["replay".as_ref(), ours.as_os_str()], Duration::from_secs(30))
        .stdout
        .lines()
        .filter(|l| l.contains(" destroyed by "))
        .count();
    let all_seen = viewer.output_buf().wait_for_count("destroyed by", file_kills, Duration::from_secs(90));
    let log = player.log();
    assert!(all_seen, "the viewer did not see the {file_kills} kills:\n{}\n{log}", viewer.output());
    for bad in ["ERROR", "Could not", "No valid data"] {
        assert!(!log.contains(bad) && !radmin.output().contains(bad), "{bad}:\n{log}\n{}", radmin.output());
    }
    let seen: Vec<String> = viewer
        .output()
        .lines()
        .filter(|l| l.contains(" destroyed by ") || l.contains("captured"))
        .map(|l| l.trim().to_string())
        .collect();
    let ours_kills: Vec<String> = b
        .iter()
        .filter(|l| l.contains(" destroyed by ") || l.contains("captured"))
        .map(|l| l.trim().to_string())
        .collect();
    // The viewer sees the whole file, marks and all: the match's kills are a contiguous part of what it saw.
    assert!(
        seen.windows(ours_kills.len()).any(|w| w == ours_kills.as_slice()),
        "the viewer saw {seen:#?}, the match had {ours_kills:#?}"
    );
}

/// A real recording of bzfs 2.4.26 (`-c`, 14 bzhead bots on four teams, `/record start` then `/record save` 35 s
/// later) replays without a warning, with its kills, grabs and every player; its report counts the same kills.
#[test]
fn a_real_bzfs_recording_replays_without_a_warning() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/recordings/bzfs-2.4.26-ctf-14-bots.rec");
    let out = run_bzhead(
        ["replay".as_ref(), "--json".as_ref(), "--show".as_ref(), "all".as_ref(), file.as_os_str()],
        Duration::from_secs(30),
    );
    assert!(out.success(), "{}", out.describe());
    let lines: Vec<Value> = out.stdout.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    let count = |t: &str| lines.iter().filter(|v| v["type"] == t).count();
    assert_eq!(count("warning"), 0, "{}", out.stdout);
    assert_eq!(count("kill"), 6);
    assert_eq!(count("join"), 16);
    assert_eq!(count("grab"), 2);
    assert!(count("update") > 1000);
    let out = run_bzhead(["replay".as_ref(), "--summary".as_ref(), file.as_os_str()], Duration::from_secs(30));
    let report = summary_of(&out.stdout);
    crate::schemas::Schema::load("summary").check(&report);
    let players = report["players"].as_array().cloned().unwrap_or_default();
    let deaths: u64 = players.iter().map(|p| p["deaths"].as_u64().unwrap_or(0)).sum();
    assert_eq!(players.len(), 14, "{report:#}");
    assert_eq!(deaths, 6, "{report:#}");
}
