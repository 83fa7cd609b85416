//! Real headless Chromium (Debian's `/usr/bin/chromium`) driven over the DevTools protocol: open a page, evaluate
//! JavaScript in it until a condition holds, take a screenshot. The browser is killed and its profile removed on
//! drop.
//!
//! `--dump-dom` and `--screenshot` cannot serve a live page: they fire on the load event (before the stream has
//! said anything), and `--virtual-time-budget` never ends while a Server-Sent Events stream is open. So the test
//! talks to the browser itself, with a WebSocket client (`tungstenite`, a dev-dependency) on a blocking socket.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

use crate::support::{require_program, TempDir};

/// Debian's Chromium.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// A headless browser with one page.
pub struct Browser {
    child: Child,
    ws: WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    _profile: TempDir,
}

impl Browser {
    /// Starts Chromium (window `width` x `height`) and opens `url` in a new page.
    pub fn open(url: &str, width: u32, height: u32) -> Browser {
        require_program(CHROMIUM);
        let profile = TempDir::new("chromium-profile");
        let mut child = Command::new(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
                &format!("--user-data-dir={}", profile.path().display()),
                &format!("--window-size={width},{height}"),
                "about:blank",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID" on stderr.
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(i) = line.find("ws://") {
                    let _ = tx.send(line[i..].trim().to_string());
                }
            }
        });
        let ws_url = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(u) => u,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not print its DevTools address within 60 s");
            }
        };
        let hostport = ws_url.trim_start_matches("ws://").split('/').next().unwrap_or("").to_string();
        let stream = TcpStream::connect(&hostport).expect("connect to DevTools");
        stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        let (ws, _) = tungstenite::client(ws_url.as_str(), stream).expect("DevTools handshake");
        let mut b = Browser { child, ws, session: String::new(), next_id: 0, _profile: profile };
        let target = b.call(None, "Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().expect("targetId").to_string();
        let attached = b.call(None, "Target.attachToTarget", json!({"targetId": target_id, "flatten": true}));
        b.session = attached["sessionId"].as_str().expect("sessionId").to_string();
        let s = b.session.clone();
        b.call(Some(&s), "Page.enable", json!({}));
        b.call(Some(&s), "Page.navigate", json!({"url": url}));
        b
    }

    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        self.ws.send(Message::text(msg.to_string())).expect("send to DevTools");
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let m = self.ws.read().expect("read from DevTools");
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(t.as_str()).expect("DevTools JSON");
            if v["id"].as_u64() == Some(id) {
                if let Some(e) = v.get("error") {
                    panic!("DevTools {method}: {e}");
                }
                return v["result"].clone();
            }
        }
        panic!("DevTools {method}: no answer within 60 s");
    }

    /// Evaluates a JavaScript expression in the page and returns its value (JSON).
    pub fn eval(&mut self, expr: &str) -> Value {
        let s = self.session.clone();
        let r = self.call(Some(&s), "Runtime.evaluate", json!({"expression": expr, "returnByValue": true}));
        r["result"]["value"].clone()
    }

    /// Evaluates `expr` until `ok` accepts its value or `limit` passes; returns the last value and whether it was
    /// accepted.
    pub fn wait_for(&mut self, expr: &str, limit: Duration, mut ok: impl FnMut(&Value) -> bool) -> (Value, bool) {
        let start = Instant::now();
        loop {
            let v = self.eval(expr);
            if ok(&v) {
                return (v, true);
            }
            if start.elapsed() > limit {
                return (v, false);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A PNG screenshot of the page.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let s = self.session.clone();
        let r = self.call(Some(&s), "Page.captureScreenshot", json!({"format": "png"}));
        base64_decode(r["data"].as_str().expect("screenshot data"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Standard base64 (with padding), as DevTools sends binary data.
pub fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes() {
        let Some(v) = val(c) else { continue };
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

#[test]
fn base64_decodes() {
    assert_eq!(base64_decode("aGVsbG8gd29ybGQ="), b"hello world");
    assert_eq!(base64_decode("AAEC/w=="), [0, 1, 2, 255]);
}
