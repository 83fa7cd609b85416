use super::*;

fn view() -> (Reactor, WebView) {
    let reactor = Reactor::new().expect("reactor");
    let servers = vec![("a:5154".to_string(), "127.0.0.1:5154".parse().unwrap())];
    (reactor, WebView::new(&servers, Instant::now()))
}

#[test]
fn the_state_of_a_server_not_joined_yet_has_the_whole_shape() {
    let (reactor, mut v) = view();
    let s = v.api_state(&reactor, 0, Instant::now());
    for key in ["v", "server", "world", "time", "teams", "players", "flags", "shots"] {
        assert!(s.get(key).is_some(), "{key} missing: {s}");
    }
    assert_eq!(s["v"], 1);
    assert_eq!(s["status"], "connecting");
    assert!(s["players"].as_array().unwrap().is_empty());
}

#[test]
fn feed_lines_are_kept_bounded_and_carry_text_not_markup() {
    let (mut reactor, mut v) = view();
    for i in 0..(FEED_LEN + 10) {
        let ev = Event::Chat {
            from: 1,
            from_callsign: "<b>x</b>".into(),
            to: 255,
            to_name: "all".into(),
            action: false,
            text: format!("<script>{i}</script>"),
        };
        v.on_event(&mut reactor, 0, Instant::now(), &ev);
    }
    assert_eq!(v.servers[0].feed.len(), FEED_LEN);
    // The page puts it in with textContent; the JSON keeps it as the text it is.
    let last = v.servers[0].feed.back().unwrap();
    assert_eq!(last["kind"], "chat");
    assert!(last["text"].as_str().unwrap().contains("<script>"));
}

#[test]
fn numbers_on_the_wire_are_rounded_and_finite() {
    assert_eq!(round2(1.23456), 1.23);
    assert_eq!(round3(f32::NAN), 0.0);
    assert_eq!(v3([f32::INFINITY, 1.0, -0.004]), [0.0, 1.0, -0.0]);
}
