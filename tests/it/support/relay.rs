//! Relays on loopback that stand between a client and a real server: they delay each direction by a fixed time,
//! drop every Nth UDP datagram, and can forge datagrams of their own.
//!
//! * [`UdpRelay`]: one front socket that clients talk to; one upstream socket per client (connected to the server),
//!   so that the server sees a distinct source per client, like the real network.
//! * [`GameRelay`]: a BZFlag server's TCP and UDP on one port number (as `bzfs` has them): TCP connections are
//!   relayed byte for byte after the delay (a user-space relay cannot drop TCP segments: it delays them), UDP goes
//!   through a [`UdpRelay`] on the same port.
//!
//! Loss is deterministic, so that a test never depends on luck: with `drop_every: Some(n)` one datagram in n of
//! each direction is dropped (10 % for n = 10), starting with the (`drop_phase` + 1)th: with phase 0 the first
//! request to every server is always lost and only a retry can get an answer.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::{free_port, port_is_usable_for_bzflag_udp};

/// What a relay does to the traffic.
#[derive(Debug, Clone, Copy)]
pub struct Impair {
    /// Added to every datagram and every TCP chunk, in each direction.
    pub delay: Duration,
    /// Drop one UDP datagram in n of each direction ...
    pub drop_every: Option<u64>,
    /// ... the (phase+1)th, (phase+n+1)th, ...: 0 drops the first datagram of each direction.
    pub drop_phase: u64,
}

impl Impair {
    /// Nothing: a transparent relay.
    pub const NONE: Impair = Impair { delay: Duration::ZERO, drop_every: None, drop_phase: 0 };
}

/// Counts of one relay.
#[derive(Debug, Default)]
pub struct RelayStats {
    /// Client → server datagrams forwarded.
    pub up: AtomicU64,
    /// Client → server datagrams dropped.
    pub up_dropped: AtomicU64,
    /// Server → client datagrams forwarded.
    pub down: AtomicU64,
    /// Server → client datagrams dropped.
    pub down_dropped: AtomicU64,
    /// TCP connections relayed.
    pub connections: AtomicU64,
    /// TCP bytes relayed (both directions).
    pub tcp_bytes: AtomicU64,
}

impl RelayStats {
    /// `(up, up_dropped, down, down_dropped)`.
    pub fn datagrams(&self) -> (u64, u64, u64, u64) {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        (l(&self.up), l(&self.up_dropped), l(&self.down), l(&self.down_dropped))
    }
}

/// Hooks that see the traffic of a [`UdpRelay`] (both on the relay's threads) and may send datagrams of their own
/// through the front socket (the server's address as the client sees it) or any socket they own.
pub trait Hooks: Send {
    /// A request from `client`, before it is forwarded (or dropped).
    fn on_request(&mut self, _data: &[u8], _client: SocketAddr, _front: &UdpSocket) {}
    /// A reply to `client`, before it is forwarded (or dropped).
    fn on_reply(&mut self, _data: &[u8], _client: SocketAddr, _front: &UdpSocket) {}
}

type Job = Box<dyn FnOnce() + Send>;

/// A thread that runs each job `delay` after it was queued (in order: the delay is the same for all).
fn delay_line(delay: Duration, stop: Arc<AtomicBool>) -> (Sender<(Instant, Job)>, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<(Instant, Job)>();
    let t = thread::spawn(move || loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok((queued, job)) => {
                let due = queued + delay;
                let now = Instant::now();
                if due > now {
                    thread::sleep(due - now);
                }
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                job();
            }
            Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::Relaxed) => {}
            Err(_) => return,
        }
    });
    (tx, t)
}

impl Impair {
    fn drops(&self, n: u64) -> bool {
        self.drop_every.is_some_and(|e| e > 0 && n % e == self.drop_phase % e)
    }
}

/// A UDP socket on 127.0.0.1 whose port bzfs does not ignore.
fn upstream_socket(server: SocketAddr) -> io::Result<UdpSocket> {
    for _ in 0..100 {
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        if port_is_usable_for_bzflag_udp(s.local_addr()?.port()) {
            s.connect(server)?;
            return Ok(s);
        }
    }
    Err(io::Error::other("no usable UDP port"))
}

/// A UDP relay in front of `server`. See the module documentation.
pub struct UdpRelay {
    addr: SocketAddr,
    stats: Arc<RelayStats>,
    stop: Arc<AtomicBool>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl UdpRelay {
    /// A relay on a fresh loopback port.
    pub fn spawn(server: SocketAddr, impair: Impair, hooks: Option<Box<dyn Hooks>>) -> UdpRelay {
        let front = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the relay");
        UdpRelay::on(front, server, impair, hooks)
    }

    /// A relay on `front`.
    pub fn on(front: UdpSocket, server: SocketAddr, impair: Impair, hooks: Option<Box<dyn Hooks>>) -> UdpRelay {
        let addr = front.local_addr().expect("relay address");
        front.set_read_timeout(Some(Duration::from_millis(20))).expect("timeout");
        let front = Arc::new(front);
        let stats = Arc::new(RelayStats::default());
        let stop = Arc::new(AtomicBool::new(false));
        let threads = Arc::new(Mutex::new(Vec::new()));
        let hooks: Option<Arc<Mutex<Box<dyn Hooks>>>> = hooks.map(|h| Arc::new(Mutex::new(h)));
        let (up_tx, up_t) = delay_line(impair.delay, stop.clone());
        let (down_tx, down_t) = delay_line(impair.delay, stop.clone());
        threads.lock().unwrap().extend([up_t, down_t]);
        let (stats2, stop2, threads2) = (stats.clone(), stop.clone(), threads.clone());
        let reader = thread::spawn(move || {
            let mut upstreams: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
            let mut buf = vec![0u8; 65536];
            let mut n_up = 0u64;
            let n_down = Arc::new(AtomicU64::new(0));
            while !stop2.load(Ordering::Relaxed) {
                let Ok((n, client)) = front.recv_from(&mut buf) else { continue };
                let data = buf[..n].to_vec();
                if let Some(h) = &hooks {
                    if let Ok(mut h) = h.lock() {
                        h.on_request(&data, client, &front);
                    }
                }
                let k = n_up;
                n_up += 1;
                if impair.drops(k) {
                    stats2.up_dropped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let up = match upstreams.get(&client) {
                    Some(u) => u.clone(),
                    None => {
                        let Ok(u) = upstream_socket(server) else { continue };
                        let u = Arc::new(u);
                        u.set_read_timeout(Some(Duration::from_millis(20))).ok();
                        upstreams.insert(client, u.clone());
                        // Replies from the server for this client.
                        let (u2, front2, stats3, stop3, tx) =
                            (u.clone(), front.clone(), stats2.clone(), stop2.clone(), down_tx.clone());
                        let (hooks2, n_down2) = (hooks.clone(), n_down.clone());
                        let t = thread::spawn(move || {
                            let mut buf = vec![0u8; 65536];
                            while !stop3.load(Ordering::Relaxed) {
                                let Ok(n) = u2.recv(&mut buf) else { continue };
                                let data = buf[..n].to_vec();
                                if let Some(h) = &hooks2 {
                                    if let Ok(mut h) = h.lock() {
                                        h.on_reply(&data, client, &front2);
                                    }
                                }
                                if impair.drops(n_down2.fetch_add(1, Ordering::Relaxed)) {
                                    stats3.down_dropped.fetch_add(1, Ordering::Relaxed);
                                    continue;
                                }
                                stats3.down.fetch_add(1, Ordering::Relaxed);
                                let f = front2.clone();
                                let _ = tx.send((
                                    Instant::now(),
                                    Box::new(move || {
                                        let _ = f.send_to(&data, client);
                                    }),
                                ));
                            }
                        });
                        threads2.lock().unwrap().push(t);
                        u
                    }
                };
                stats2.up.fetch_add(1, Ordering::Relaxed);
                let _ = up_tx.send((
                    Instant::now(),
                    Box::new(move || {
                        let _ = up.send(&data);
                    }),
                ));
            }
        });
        threads.lock().unwrap().push(reader);
        UdpRelay { addr, stats, stop, threads }
    }

    /// Where clients send.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stats(&self) -> &RelayStats {
        &self.stats
    }
}

impl Drop for UdpRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let threads: Vec<JoinHandle<()>> = self.threads.lock().map(|mut t| t.drain(..).collect()).unwrap_or_default();
        for t in threads {
            let _ = t.join();
        }
    }
}

/// A BZFlag server's TCP and UDP relayed on one port number. See the module documentation.
pub struct GameRelay {
    port: u16,
    udp: Option<UdpRelay>,
    stats: Arc<RelayStats>,
    stop: Arc<AtomicBool>,
    sockets: Arc<Mutex<Vec<TcpStream>>>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl GameRelay {
    /// A relay for the server at `server` (TCP and UDP on its port) on a fresh loopback port.
    pub fn spawn(server: SocketAddr, impair: Impair) -> GameRelay {
        let (listener, front) = (0..100)
            .find_map(|_| {
                let port = free_port();
                let l = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).ok()?;
                let u = UdpSocket::bind((Ipv4Addr::LOCALHOST, port)).ok()?;
                Some((l, u))
            })
            .expect("a loopback port free for TCP and UDP");
        let port = listener.local_addr().expect("addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let udp = UdpRelay::on(front, server, impair, None);
        let stats = Arc::new(RelayStats::default());
        let stop = Arc::new(AtomicBool::new(false));
        let sockets: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let threads: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let (stats2, stop2, sockets2, threads2) = (stats.clone(), stop.clone(), sockets.clone(), threads.clone());
        let acceptor = thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                let client = match listener.accept() {
                    Ok((c, _)) => c,
                    Err(_) => {
                        thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                };
                let Ok(upstream) = TcpStream::connect(server) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                stats2.connections.fetch_add(1, Ordering::Relaxed);
                let _ = client.set_nonblocking(false);
                for s in [&client, &upstream] {
                    let _ = s.set_nodelay(true);
                    let _ = s.set_read_timeout(Some(Duration::from_millis(50)));
                }
                if let Ok(mut list) = sockets2.lock() {
                    list.extend([client.try_clone(), upstream.try_clone()].into_iter().flatten());
                }
                for (from, to) in
                    [(client.try_clone(), upstream.try_clone()), (upstream.try_clone(), client.try_clone())]
                {
                    let (Ok(from), Ok(to)) = (from, to) else { continue };
                    let t = pump(from, to, impair.delay, stop2.clone(), stats2.clone());
                    threads2.lock().unwrap().push(t);
                }
            }
        });
        threads.lock().unwrap().push(acceptor);
        GameRelay { port, udp: Some(udp), stats, stop, sockets, threads }
    }

    /// `127.0.0.1:PORT`, TCP and UDP.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// TCP counts.
    pub fn tcp_stats(&self) -> &RelayStats {
        &self.stats
    }

    /// UDP counts.
    pub fn udp_stats(&self) -> &RelayStats {
        self.udp.as_ref().expect("udp relay").stats()
    }
}

/// Copies `from` to `to`, each chunk `delay` after it arrived; a close is passed on after the data before it.
fn pump(
    mut from: TcpStream,
    to: TcpStream,
    delay: Duration,
    stop: Arc<AtomicBool>,
    stats: Arc<RelayStats>,
) -> JoinHandle<()> {
    thread::spawn(move || {
        let (tx, line) = delay_line(delay, stop.clone());
        let to = Arc::new(Mutex::new(to));
        let mut buf = vec![0u8; 65536];
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let closed = match from.read(&mut buf) {
                Ok(0) => true,
                Ok(n) => {
                    stats.tcp_bytes.fetch_add(n as u64, Ordering::Relaxed);
                    let data = buf[..n].to_vec();
                    let to = to.clone();
                    let _ = tx.send((
                        Instant::now(),
                        Box::new(move || {
                            if let Ok(mut t) = to.lock() {
                                let _ = t.write_all(&data);
                            }
                        }),
                    ));
                    false
                }
                Err(e) => !(is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted),
            };
            if closed {
                let to = to.clone();
                let _ = tx.send((
                    Instant::now(),
                    Box::new(move || {
                        if let Ok(t) = to.lock() {
                            let _ = t.shutdown(Shutdown::Write);
                        }
                    }),
                ));
                break;
            }
        }
        drop(tx);
        let _ = line.join();
    })
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

impl Drop for GameRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Ok(list) = self.sockets.lock() {
            for s in list.iter() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        let threads: Vec<JoinHandle<()>> = self.threads.lock().map(|mut t| t.drain(..).collect()).unwrap_or_default();
        for t in threads {
            let _ = t.join();
        }
        self.udp.take();
    }
}
