//! Command-line front ends kept out of `main.rs` (which only dispatches to them).

pub mod bot;
pub mod monitor;
pub mod query;
pub mod web;

/// Ctrl-C, SIGTERM and SIGHUP: each sends its number on the returned channel and wakes the reactor through `waker`,
/// so the command can leave cleanly (MsgExit) instead of dropping its connections; a second signal exits at once
/// with 128 + its number. Without signal handling (it cannot be set up), the channel stays silent.
pub fn leave_on_signals(waker: std::sync::Arc<mio::Waker>) -> std::sync::mpsc::Receiver<i32> {
    let (tx, rx) = std::sync::mpsc::channel::<i32>();
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ]) {
        std::thread::spawn(move || {
            let mut seen = 0;
            for sig in signals.forever() {
                seen += 1;
                if seen > 1 {
                    std::process::exit(128 + sig);
                }
                let _ = tx.send(sig);
                let _ = waker.wake();
            }
        });
    }
    rx
}
