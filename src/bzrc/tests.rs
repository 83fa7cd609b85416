use super::*;

/// A game of two red tanks and one green one beside a 4×20 box, as the reference's `orient.bzw`.
struct Fake {
    speeds: Vec<(usize, f64)>,
    shots_fired: usize,
}

impl Game for Fake {
    fn teams(&self) -> Vec<(String, usize)> {
        vec![("red".into(), 2), ("green".into(), 1)]
    }
    fn bases(&self) -> Vec<(String, [[f64; 2]; 4])> {
        vec![("red".into(), [[-340.0, 30.0], [-340.0, -30.0], [-400.0, -30.0], [-400.0, 30.0]])]
    }
    fn obstacles(&self) -> Vec<[[f64; 2]; 4]> {
        vec![[[-338.0, 10.0], [-338.0, -10.0], [-342.0, -10.0], [-342.0, 10.0]]]
    }
    fn flags(&self) -> Vec<Flag> {
        vec![Flag { color: "red".into(), holder: "none".into(), x: -370.0, y: 0.0 }]
    }
    fn shots(&self) -> Vec<[f64; 4]> {
        vec![[1.0, 2.0, 100.0, 0.0]]
    }
    fn my_tanks(&self, team: &str) -> Vec<MyTank> {
        let t = |i: usize, alive: bool| MyTank {
            callsign: format!("{team}{i}"),
            alive,
            shots_left: 1,
            reload: 0.0,
            flag: "-".into(),
            x: -362.7,
            y: 3.2,
            angle: -2.99839224667,
            vx: -0.0,
            vy: 0.0,
            angvel: 0.0,
        };
        vec![t(0, true), t(1, false)]
    }
    fn other_tanks(&self, _team: &str) -> Vec<OtherTank> {
        vec![OtherTank {
            callsign: "green0".into(),
            color: "green".into(),
            alive: true,
            flag: "-".into(),
            x: 370.0,
            y: 9.0,
            angle: 4.0,
        }]
    }
    fn constants(&self) -> Constants {
        Constants::default()
    }
    fn timer(&self) -> (f64, f64) {
        (6.943802, 300000.0)
    }
    fn score(&self, team: &str) -> f64 {
        if team == "red" {
            1.0
        } else {
            0.01
        }
    }
    fn occupancy(&self, x0: i32, y0: i32, cols: i32, rows: i32) -> Vec<bool> {
        (x0..x0 + cols)
            .flat_map(|x| (y0..y0 + rows).map(move |y| (-342..-338).contains(&x) && (-10..10).contains(&y)))
            .collect()
    }
    fn speed(&mut self, _team: &str, tank: usize, v: f64) {
        self.speeds.push((tank, v));
    }
    fn angvel(&mut self, _team: &str, _tank: usize, _w: f64) {}
    fn shoot(&mut self, _team: &str, _tank: usize) -> bool {
        self.shots_fired += 1;
        self.shots_fired == 1
    }
    fn taunt(&mut self, _team: &str, _text: &str) -> bool {
        true
    }
}

fn session(lines: &[&str]) -> (String, Fake, Outcome) {
    let mut game = Fake { speeds: Vec::new(), shots_fired: 0 };
    let mut agent = Agent::new("red", Noise::default(), 1);
    let mut out = String::new();
    let mut last = Outcome::Continue;
    for l in lines {
        last = agent.handle_line(l.as_bytes(), 0.802242040634, &mut game, &mut out);
    }
    (out, game, last)
}

#[test]
fn python_floats() {
    assert_eq!(py_float(0.802242040634), "0.802242040634");
    assert_eq!(py_float(150.0), "150.0");
    assert_eq!(py_float(-0.0), "-0.0");
    assert_eq!(py_float(std::f64::consts::FRAC_PI_4), "0.785398163397");
    assert_eq!(py_float(-999999.0), "-999999.0");
    assert_eq!(py_float(0.0141940116882), "0.0141940116882");
    assert_eq!(py_float(1.0e-5), "1e-05");
    assert_eq!(py_float(1.0e15), "1e+15");
    assert_eq!(py_num(800.0), "800");
    assert_eq!(py_num(4.32), "4.32");
    assert_eq!(py_num(0.5), "0.5");
}

#[test]
fn handshake_and_replies_as_the_captures() {
    let (out, game, _) = session(&["", "agent 1", "", "speed 0 1", "speed 0 abc", "angvel 0", "shoot 0", "shoot 0"]);
    assert_eq!(
        out,
        "ack 0.802242040634 speed 0 1.0\nok\n\
         ack 0.802242040634 speed 0 abc\nfail Invalid parameter(s)\nfail\n\
         ack 0.802242040634 angvel 0\nfail Invalid parameter(s)\nfail\n\
         ack 0.802242040634 shoot 0\nok\n\
         ack 0.802242040634 shoot 0\nfail\n"
    );
    assert_eq!(game.speeds, vec![(0, 1.0)]);
}

#[test]
fn bad_handshake_closes() {
    let (out, _, outcome) = session(&["hello"]);
    assert_eq!(out, "fail Unrecognized handshake\n");
    assert_eq!(outcome, Outcome::Close);
}

#[test]
fn errors_as_the_captures() {
    let (out, game, _) = session(&[
        "agent 1",
        "speed 0 5",
        "shoot 99",
        "foo",
        "accelx 0 1",
        "mytanks extra",
        "occgrid 5",
        "occgrid x",
        "speed 0 nan",
        "\u{0}\u{ff}garbage \t\r",
    ]);
    let expect = "ack 0.802242040634 speed 0 5.0\nok\n\
        ack 0.802242040634 shoot 99\nfail Invalid tank ID: 99\n\
        fail invalid command\n\
        fail invalid command\n\
        ack 0.802242040634 mytanks extra\nfail Invalid parameter(s)\n\
        ack 0.802242040634 occgrid 5\nfail Invalid parameter(s)\n\
        ack 0.802242040634 occgrid x\nfail Invalid parameter(s)\n\
        ack 0.802242040634 speed 0 nan\nfail Invalid parameter(s)\nfail\n\
        fail invalid command\n";
    assert_eq!(out, expect);
    // Clamped to [-1, 1].
    assert_eq!(game.speeds, vec![(0, 1.0)]);
}

#[test]
fn lists() {
    let (out, _, _) = session(&["agent 1", "mytanks", "constants", "scores", "timer", "quit"]);
    assert!(out.contains(
        "begin\nmytank 0 red0 alive 1 0 -                            -362 3 -2.99839224667 -0.0 0.0 0\n\
         mytank 1 red1 dead 1 0 -"
    ));
    assert!(out.contains("constant tankangvel 0.785398163397\nconstant tanklength 6\nconstant tankradius 4.32\n"));
    assert!(out.contains("constant truepositive 1\nconstant truenegative 1\nend\n"));
    assert!(out.contains("begin\nscore red green 0.99\nscore green red -0.99\nend\n"));
    assert!(out.contains("ack 0.802242040634 timer\ntimer 6.943802 300000\n"));
    assert!(out.ends_with("ack 0.802242040634 quit\nok\n"));
    assert_eq!(out.lines().filter(|l| l.starts_with("constant ")).count(), 18);
}

#[test]
fn occgrid_columns_are_x() {
    let (out, _, _) = session(&["agent 1", "occgrid 0", "occgrid 1"]);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("ack 0.802242040634 occgrid"));
    assert_eq!(lines.next(), Some("begin"));
    // Tank at (-362.7, 3.2): the window starts at floor(-387.7) and floor(-21.8).
    assert_eq!(lines.next(), Some("at -388,-22"));
    assert_eq!(lines.next(), Some("size 50x50"));
    let rows: Vec<&str> = lines.by_ref().take(50).collect();
    assert!(rows.iter().all(|r| r.len() == 50));
    let ones: Vec<usize> = rows.iter().enumerate().filter(|(_, r)| r.contains('1')).map(|(i, _)| i).collect();
    // x = -342..-338 are lines 46..50; y = -10..10 are characters 12..32.
    assert_eq!(ones, vec![46, 47, 48, 49]);
    assert_eq!(&rows[46][12..32], "11111111111111111111");
    assert_eq!(rows[46].matches('1').count(), 20);
    assert_eq!(lines.next(), Some("end"));
    // A dead tank: ack and fail (both client libraries read this; see docs/bzrc.md).
    assert_eq!(lines.next(), Some("ack 0.802242040634 occgrid"));
    assert_eq!(lines.next(), Some("fail"));
}

#[test]
fn occgrid_noise_follows_the_probabilities() {
    let mut game = Fake { speeds: Vec::new(), shots_fired: 0 };
    let noise = Noise { true_negative: 0.8, ..Noise::default() };
    let mut agent = Agent::new("red", noise, 7);
    let mut out = String::new();
    agent.handle_line(b"agent 1", 0.0, &mut game, &mut out);
    for _ in 0..20 {
        agent.handle_line(b"occgrid 0", 0.0, &mut game, &mut out);
    }
    let cells: Vec<char> = out.lines().filter(|l| l.len() == 50).flat_map(|l| l.chars()).collect();
    let ones = cells.iter().filter(|c| **c == '1').count() as f64 / cells.len() as f64;
    // 80 of 2,500 cells are occupied (always 1); 2,420 free ones read 1 with p = 0.2: about 22.6 %.
    assert!((0.20..0.25).contains(&ones), "{ones}");
}

#[test]
fn noise_moves_other_tanks_not_mine() {
    let mut game = Fake { speeds: Vec::new(), shots_fired: 0 };
    let noise = Noise { pos: 5.0, ang: 0.1, ..Noise::default() };
    let mut agent = Agent::new("red", noise, 7);
    let mut out = String::new();
    agent.handle_line(b"agent 1", 0.0, &mut game, &mut out);
    let mut xs = Vec::new();
    for _ in 0..200 {
        out.clear();
        agent.handle_line(b"othertanks", 0.0, &mut game, &mut out);
        let line = out.lines().find(|l| l.starts_with("othertank ")).unwrap_or_default().to_string();
        xs.push(line.split_whitespace().nth(5).and_then(|x| x.parse::<f64>().ok()).unwrap_or(f64::NAN));
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
    assert!((mean - 370.0).abs() < 1.5, "{mean}");
    assert!((4.0..6.0).contains(&sd), "{sd}");
    out.clear();
    agent.handle_line(b"mytanks", 0.0, &mut game, &mut out);
    assert!(out.contains(" -362 3 "));
}

#[test]
fn help_has_no_ack() {
    let (out, _, _) = session(&["agent 1", "help", "help shoot"]);
    assert!(out.starts_with(":angvel [tankid] [angular_velocity]\n:bases\n"));
    assert!(out.ends_with(":timer\n:shoot [tankid]\n"));
    assert!(!out.contains("ack"));
}
