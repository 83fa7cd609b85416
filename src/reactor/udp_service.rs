//! UDP services on the reactor: a sans-IO engine that answers datagrams (a master server, see [`crate::master`]) on
//! one or more bound sockets, on the same `Poll` as the sessions, the scans and the HTTP side.
//!
//! [`Reactor::add_udp_service`] binds the sockets (an IPv6 one is IPv6-only, so that `0.0.0.0:P` and `[::]:P` can
//! both be given) and registers them. Each turn a ready socket is read until `WouldBlock` or [`UDP_SERVICE_BUDGET`]
//! datagrams (then it waits in the reactor's backlog for the next turn, so that a flood cannot starve the other
//! sources); every datagram goes to the engine at once with the socket's index, and the engine's replies are sent
//! right after it, from the socket it names. A reply the kernel cannot take now waits in a queue of at most
//! [`MAX_UDP_SERVICE_QUEUE`] datagrams per socket (older ones are dropped and counted), with `WRITABLE` interest only
//! while it is not empty. The engine's deadline is part of the poll timeout.

use std::any::Any;
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use mio::net::UdpSocket;
use mio::{Interest, Token};
use slab::Slab;
use tracing::debug;

use super::{Reactor, Source};

/// Datagrams read from one service socket per turn before the other sources get their turn.
pub const UDP_SERVICE_BUDGET: usize = 256;
/// Most replies waiting for one service socket while the kernel buffer is full; older ones are dropped.
pub const MAX_UDP_SERVICE_QUEUE: usize = 1024;
/// Receive buffer asked for a service socket (bursts of registrations and list requests).
pub const UDP_SERVICE_RECV_BUFFER: usize = 4 << 20;

/// A datagram an engine wants sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpTransmit {
    /// The index of the service socket to send it from (the one the request came to).
    pub socket: usize,
    /// Where to.
    pub to: SocketAddr,
    /// The payload.
    pub bytes: Vec<u8>,
}

/// A sans-IO engine the reactor serves on UDP sockets (see the module documentation).
pub trait UdpService: Any {
    /// A datagram from `from` came to the service's socket `socket`.
    fn handle_datagram(&mut self, now: Instant, socket: usize, from: SocketAddr, data: &[u8]);
    /// The next datagram to send; drained after every input.
    fn poll_transmit(&mut self) -> Option<UdpTransmit>;
    /// When [`UdpService::handle_timeout`] is due.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Its deadline passed.
    fn handle_timeout(&mut self, now: Instant);
}

/// A send-only service: datagrams its owner hands it ([`Outbox::push`], then [`Reactor::flush_udp_service`]) go
/// out from its socket, on the poll like every other socket (e.g. the DDNet master's challenges to registering
/// servers). What comes in is ignored. At most [`MAX_UDP_SERVICE_QUEUE`] datagrams wait in it.
#[derive(Debug, Default)]
pub struct Outbox {
    queue: VecDeque<UdpTransmit>,
}

impl Outbox {
    /// Queues `bytes` to `to` from the service's first socket; false when the queue is full.
    pub fn push(&mut self, to: SocketAddr, bytes: &[u8]) -> bool {
        if self.queue.len() >= MAX_UDP_SERVICE_QUEUE {
            return false;
        }
        self.queue.push_back(UdpTransmit { socket: 0, to, bytes: bytes.to_vec() });
        true
    }
}

impl UdpService for Outbox {
    fn handle_datagram(&mut self, _now: Instant, _socket: usize, _from: SocketAddr, _data: &[u8]) {}
    fn poll_transmit(&mut self) -> Option<UdpTransmit> {
        self.queue.pop_front()
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant) {}
}

/// Identifies a UDP service on a reactor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UdpServiceId(pub usize);

struct ServiceSock {
    sock: UdpSocket,
    token: Token,
    queue: VecDeque<(SocketAddr, Vec<u8>)>,
    writable_interest: bool,
}

pub(super) struct Service {
    engine: Box<dyn UdpService>,
    socks: Vec<ServiceSock>,
    /// Replies dropped because a socket's queue was full, or that the kernel refused.
    dropped: u64,
}

/// The reactor's UDP services.
#[derive(Default)]
pub(super) struct UdpServices {
    services: Slab<Service>,
}

fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    if let Err(e) = s.set_recv_buffer_size(UDP_SERVICE_RECV_BUFFER) {
        debug!(error = %e, "udp service receive buffer");
    }
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    Ok(UdpSocket::from_std(s.into()))
}

impl Reactor {
    /// Serves `engine` on UDP sockets bound to `addrs` (port 0: any free port); returns its id and the bound
    /// addresses, in the order given (the socket indexes the engine sees).
    pub fn add_udp_service(
        &mut self,
        addrs: &[SocketAddr],
        engine: Box<dyn UdpService>,
    ) -> io::Result<(UdpServiceId, Vec<SocketAddr>)> {
        let mut socks = Vec::new();
        let mut local = Vec::new();
        for a in addrs {
            let sock = bind(*a).map_err(|e| io::Error::new(e.kind(), format!("{a}: {e}")))?;
            local.push(sock.local_addr()?);
            socks.push(sock);
        }
        let entry = self.udp_services.services.vacant_entry();
        let id = entry.key();
        let mut registered = Vec::new();
        for (i, mut sock) in socks.into_iter().enumerate() {
            let token = Token(self.sources.insert(Source::UdpService(id, i)));
            if let Err(e) = self.poll.registry().register(&mut sock, token, Interest::READABLE) {
                self.sources.remove(token.0);
                for s in &mut registered {
                    let s: &mut ServiceSock = s;
                    let _ = self.poll.registry().deregister(&mut s.sock);
                    self.sources.remove(s.token.0);
                }
                return Err(e);
            }
            registered.push(ServiceSock { sock, token, queue: VecDeque::new(), writable_interest: false });
        }
        entry.insert(Service { engine, socks: registered, dropped: 0 });
        Ok((UdpServiceId(id), local))
    }

    /// The engine of a service, as its own type (`None` when it is gone or of another type).
    pub fn udp_service<T: UdpService>(&mut self, id: UdpServiceId) -> Option<&mut T> {
        let s = self.udp_services.services.get_mut(id.0)?;
        let any: &mut dyn Any = s.engine.as_mut();
        any.downcast_mut::<T>()
    }

    /// Sends what a service's engine has to send now (after the owner handed it something to send, outside a
    /// datagram or a deadline of its own: an [`Outbox`]).
    pub fn flush_udp_service(&mut self, id: UdpServiceId) {
        let registry = self.poll.registry();
        if let Some(s) = self.udp_services.services.get_mut(id.0) {
            flush_out(registry, s);
        }
    }

    /// Replies a service dropped (a socket's queue full, or refused by the kernel).
    pub fn udp_service_dropped(&self, id: UdpServiceId) -> u64 {
        self.udp_services.services.get(id.0).map_or(0, |s| s.dropped)
    }

    /// Closes a service's sockets and hands its engine back.
    pub fn remove_udp_service(&mut self, id: UdpServiceId) -> Option<Box<dyn UdpService>> {
        let mut s = self.udp_services.services.try_remove(id.0)?;
        for k in &mut s.socks {
            let _ = self.poll.registry().deregister(&mut k.sock);
            self.sources.try_remove(k.token.0);
        }
        Some(s.engine)
    }

    /// The earliest deadline of the services.
    pub(super) fn udp_services_deadline(&self) -> Option<Instant> {
        self.udp_services.services.iter().filter_map(|(_, s)| s.engine.poll_timeout()).min()
    }

    /// Fires the services' due deadlines.
    pub(super) fn fire_udp_service_timers(&mut self, now: Instant) {
        let registry = self.poll.registry();
        for (_, s) in &mut self.udp_services.services {
            if s.engine.poll_timeout().is_some_and(|t| t <= now) {
                s.engine.handle_timeout(now);
                flush_out(registry, s);
            }
        }
    }

    /// A service socket is ready: reads (within the budget) and sends what waits.
    pub(super) fn on_udp_service_ready(&mut self, id: usize, i: usize, now: Instant, readable: bool, writable: bool) {
        let registry = self.poll.registry();
        let Some(s) = self.udp_services.services.get_mut(id) else { return };
        if writable {
            if let Some(k) = s.socks.get_mut(i) {
                send_queued(k, &mut s.dropped);
            }
            update_interest(registry, s, i);
        }
        if !readable {
            return;
        }
        for n in 0.. {
            let Some(k) = s.socks.get(i) else { return };
            if n >= UDP_SERVICE_BUDGET {
                self.backlog.push(k.token);
                break;
            }
            match k.sock.recv_from(&mut self.buf) {
                Ok((len, from)) => {
                    let data = self.buf.get(..len).unwrap_or_default();
                    s.engine.handle_datagram(now, i, from, data);
                    flush_out(registry, s);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // ICMP errors of earlier sends surface here; they are not fatal.
                Err(e) => debug!(error = %e, "udp service recv"),
            }
        }
    }
}

/// Sends the engine's replies (queueing what the kernel cannot take now).
fn flush_out(registry: &mio::Registry, s: &mut Service) {
    let mut touched = [false; 4];
    while let Some(t) = s.engine.poll_transmit() {
        let Some(k) = s.socks.get_mut(t.socket) else {
            s.dropped += 1;
            continue;
        };
        if let Some(flag) = touched.get_mut(t.socket) {
            *flag = true;
        }
        if k.queue.is_empty() {
            match k.sock.send_to(&t.bytes, t.to) {
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    debug!(error = %e, to = %t.to, "udp service send");
                    s.dropped += 1;
                    continue;
                }
            }
        }
        if k.queue.len() >= MAX_UDP_SERVICE_QUEUE {
            k.queue.pop_front();
            s.dropped += 1;
        }
        k.queue.push_back((t.to, t.bytes));
    }
    for i in 0..s.socks.len() {
        if touched.get(i).copied().unwrap_or(true) {
            update_interest(registry, s, i);
        }
    }
}

fn send_queued(k: &mut ServiceSock, dropped: &mut u64) {
    while let Some((to, bytes)) = k.queue.front() {
        match k.sock.send_to(bytes, *to) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => {
                debug!(error = %e, "udp service send");
                *dropped += 1;
            }
        }
        k.queue.pop_front();
    }
}

/// `WRITABLE` interest while replies wait.
fn update_interest(registry: &mio::Registry, s: &mut Service, i: usize) {
    let Some(k) = s.socks.get_mut(i) else { return };
    let want = !k.queue.is_empty();
    if want != k.writable_interest {
        let interest = if want { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
        if registry.reregister(&mut k.sock, k.token, interest).is_ok() {
            k.writable_interest = want;
        }
    }
}
