//! Datagrams of a query socket in batches: one `recvmmsg` or `sendmmsg` system call for up to [`BATCH`] datagrams on
//! Linux, one `recv_from` or `send_to` per datagram elsewhere (same interface, same results).
//!
//! A scan sends a burst of requests and gets a burst of replies: batching saves a system call's entry and exit per
//! datagram (the network stack's own work per datagram stays) and, since a short batch means the socket is empty,
//! the last empty read of every wake-up. Receive slots are as large as the largest UDP payload, so no datagram is ever
//! cut short; a datagram the kernel still reports truncated (`MSG_TRUNC`) is flagged and dropped by the caller, never
//! parsed.
//!
//! On Linux each datagram also comes with the time the kernel received it (`SO_TIMESTAMPNS`), so that a reply read
//! some milliseconds after it arrived (the reactor lets replies wait while a rate-limited scan has nothing to start,
//! see `super`) still gives an honest ping, and the batch says how many datagrams the kernel dropped for a full
//! receive buffer (`SO_RXQ_OVFL`), so that the reactor can stop letting them wait.
//!
//! The only `unsafe` of the reactor is here: the two system calls, each in one function, over arrays this module
//! builds right before the call, the all-zero `mmsghdr` those arrays start from (its fields are not all public on
//! every libc), the walk over the control messages the kernel wrote, and the two `setsockopt` calls that ask for them.

use std::io;
use std::net::SocketAddr;
use std::time::SystemTime;

use mio::net::UdpSocket;

/// Most datagrams per system call.
pub(super) const BATCH: usize = 32;
/// Bytes per receive slot: the largest UDP payload (65,507 bytes over IPv4, 65,527 over IPv6 without jumbograms).
pub(super) const SLOT: usize = 1 << 16;

/// Room for the control messages of one datagram: a receive time (`timespec`) and a drop count (`u32`), each with
/// its header, in 8-byte words (so that the headers are aligned).
#[cfg(target_os = "linux")]
const CTRL_WORDS: usize = 16;

/// Receive slots for [`BATCH`] datagrams (2 MiB of address space; only the pages datagrams land in are touched).
pub(super) struct RecvBatch {
    buf: Box<[u8]>,
    got: [Received; BATCH],
    /// Control-message room per slot.
    #[cfg(target_os = "linux")]
    ctrl: [[u64; CTRL_WORDS]; BATCH],
    /// Datagrams the kernel dropped on the socket of the last read for a full receive buffer, since it was opened,
    /// as that read said (`SO_RXQ_OVFL`: only once some were dropped; `None` otherwise).
    pub(super) overflow: Option<u32>,
}

/// One received datagram: source, length, whether the kernel had to cut it, and when the kernel received it.
#[derive(Clone, Copy)]
struct Received {
    from: SocketAddr,
    len: usize,
    truncated: bool,
    /// The kernel's receive time (`SO_TIMESTAMPNS`, the system clock), when it gave one.
    stamp: Option<SystemTime>,
}

/// Asks the kernel for each datagram's receive time and for the count of datagrams dropped for a full receive
/// buffer, with every datagram read from `sock` ([`RecvBatch::received_at`], [`RecvBatch::overflow`]). Returns whether
/// receive times are on (never elsewhere than Linux).
#[cfg(target_os = "linux")]
pub(super) fn ask_receive_info(sock: &UdpSocket) -> bool {
    use std::os::fd::AsRawFd;
    let set = |opt: libc::c_int| {
        let on: libc::c_int = 1;
        // SAFETY: `setsockopt` reads `size_of::<c_int>()` bytes from a pointer to a live local `c_int`; the file
        // descriptor is the socket's own, open for the duration of the call.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&on as *const libc::c_int).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            ) == 0
        }
    };
    // The drop count is a help, not a need: its absence only means no early warning.
    let _ = set(libc::SO_RXQ_OVFL);
    set(libc::SO_TIMESTAMPNS)
}

/// Receive times are Linux's only here.
#[cfg(not(target_os = "linux"))]
pub(super) fn ask_receive_info(_sock: &UdpSocket) -> bool {
    false
}

impl RecvBatch {
    pub(super) fn new() -> RecvBatch {
        let none = Received { from: SocketAddr::from(([0, 0, 0, 0], 0)), len: 0, truncated: false, stamp: None };
        // Zeroed memory comes from fresh pages: nothing is touched until a datagram is written there.
        RecvBatch {
            buf: vec![0u8; BATCH * SLOT].into_boxed_slice(),
            got: [none; BATCH],
            #[cfg(target_os = "linux")]
            ctrl: [[0; CTRL_WORDS]; BATCH],
            overflow: None,
        }
    }

    /// When the kernel received datagram `i` of the last [`RecvBatch::recv`] (by the system clock), if it said.
    pub(super) fn received_at(&self, i: usize) -> Option<SystemTime> {
        self.got.get(i)?.stamp
    }

    /// Datagram `i` of the last [`RecvBatch::recv`]: source, payload, truncated.
    pub(super) fn get(&self, i: usize) -> Option<(SocketAddr, &[u8], bool)> {
        let r = self.got.get(i)?;
        let data = self.buf.get(i * SLOT..i * SLOT + r.len.min(SLOT))?;
        Some((r.from, data, r.truncated))
    }

    /// Reads up to [`BATCH`] datagrams that are already waiting; `Ok(n)` with `n >= 1`, or `WouldBlock` when there
    /// are none. Fewer than [`BATCH`] means the socket had no more at that moment.
    #[cfg(target_os = "linux")]
    pub(super) fn recv(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        let mut names: [libc::sockaddr_in6; BATCH] = [blank_sockaddr_in6(); BATCH];
        let mut iov: [libc::iovec; BATCH] = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
        for (v, slot) in iov.iter_mut().zip(self.buf.chunks_exact_mut(SLOT)) {
            *v = libc::iovec { iov_base: slot.as_mut_ptr().cast(), iov_len: slot.len() };
        }
        let mut hdrs: [libc::mmsghdr; BATCH] = [blank_mmsghdr(); BATCH];
        for (((h, v), name), ctrl) in hdrs.iter_mut().zip(iov.iter_mut()).zip(names.iter_mut()).zip(&mut self.ctrl) {
            h.msg_hdr.msg_name = (name as *mut libc::sockaddr_in6).cast();
            h.msg_hdr.msg_namelen = size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            h.msg_hdr.msg_iov = v;
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = ctrl.as_mut_ptr().cast();
            h.msg_hdr.msg_controllen = size_of::<[u64; CTRL_WORDS]>() as _;
        }
        // SAFETY: `hdrs` holds BATCH initialised headers; each points to one `iovec` of `iov` (a distinct SLOT-byte
        // range of `self.buf`), to one `sockaddr_in6` of `names` with its true size as `msg_namelen`, and to one
        // control buffer of `self.ctrl` with its true size as `msg_controllen`, so the kernel writes only inside
        // memory these locals and `self` own, all alive and not otherwise borrowed until the call returns.
        // `MSG_DONTWAIT` keeps the call from blocking; no timeout pointer is passed.
        let n = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                hdrs.as_mut_ptr(),
                BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = (n as usize).min(BATCH);
        self.overflow = None;
        for ((got, h), name) in self.got.iter_mut().zip(&hdrs).zip(&names).take(n) {
            let (stamp, overflow) = control_info(&h.msg_hdr);
            *got = Received {
                from: sockaddr_to_std(name, h.msg_hdr.msg_namelen),
                len: h.msg_len as usize,
                truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
                stamp,
            };
            self.overflow = overflow.max(self.overflow);
        }
        Ok(n)
    }

    /// Reads up to [`BATCH`] datagrams that are already waiting (one `recv_from` each).
    #[cfg(not(target_os = "linux"))]
    pub(super) fn recv(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        let mut n = 0;
        for (got, slot) in self.got.iter_mut().zip(self.buf.chunks_exact_mut(SLOT)) {
            match sock.recv_from(slot) {
                Ok((len, from)) => {
                    // A datagram that filled the whole slot may have been longer: the system does not say.
                    *got = Received { from, len, truncated: len >= SLOT, stamp: None };
                    n += 1;
                }
                // Keep what arrived; an error comes back on the next call.
                Err(_) if n > 0 => break,
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

/// Sends the datagrams of `msgs` in order, in one system call; returns how many the kernel took (at least one), or
/// the error of the first datagram (`WouldBlock` when the send buffer is full). Every destination must be of the
/// socket's family.
#[cfg(target_os = "linux")]
pub(super) fn send_batch(sock: &UdpSocket, msgs: &[(SocketAddr, &[u8])]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let msgs = msgs.get(..msgs.len().min(BATCH)).unwrap_or(&[]);
    if msgs.is_empty() {
        return Ok(0);
    }
    let mut names: [libc::sockaddr_in6; BATCH] = [blank_sockaddr_in6(); BATCH];
    let mut iov: [libc::iovec; BATCH] = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
    let mut hdrs: [libc::mmsghdr; BATCH] = [blank_mmsghdr(); BATCH];
    for (((h, v), name), (to, data)) in hdrs.iter_mut().zip(iov.iter_mut()).zip(names.iter_mut()).zip(msgs) {
        // The kernel only reads through `iov_base` for a send.
        *v = libc::iovec { iov_base: data.as_ptr().cast_mut().cast(), iov_len: data.len() };
        h.msg_hdr.msg_namelen = std_to_sockaddr(to, name);
        h.msg_hdr.msg_name = (name as *mut libc::sockaddr_in6).cast();
        h.msg_hdr.msg_iov = v;
        h.msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: the first `msgs.len()` headers of `hdrs` are initialised; each points to one `iovec` of `iov`
    // describing a payload borrowed from `msgs` (alive for the call, only read by the kernel) and to one address of
    // `names` with its true length. Nothing is written outside these locals. `MSG_DONTWAIT`: never blocks.
    let n =
        unsafe { libc::sendmmsg(sock.as_raw_fd(), hdrs.as_mut_ptr(), msgs.len() as libc::c_uint, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize).min(msgs.len()))
}

/// Sends the datagrams of `msgs` in order (one `send_to` each); returns how many went out, or the error of the first.
#[cfg(not(target_os = "linux"))]
pub(super) fn send_batch(sock: &UdpSocket, msgs: &[(SocketAddr, &[u8])]) -> io::Result<usize> {
    let mut n = 0;
    for (to, data) in msgs.iter().take(BATCH) {
        match sock.send_to(data, *to) {
            Ok(_) => n += 1,
            Err(e) if n == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(n)
}

/// The receive time (`SCM_TIMESTAMPNS`) and the drop count (`SO_RXQ_OVFL`) among the control messages the kernel
/// wrote for one received datagram.
#[cfg(target_os = "linux")]
fn control_info(hdr: &libc::msghdr) -> (Option<SystemTime>, Option<u32>) {
    let (mut stamp, mut overflow) = (None, None);
    // SAFETY: `hdr` is a header `recvmmsg` just filled: `msg_control` points to its slot's control buffer in the
    // `RecvBatch` (alive, not otherwise borrowed while `hdr` is read) and `msg_controllen` is what the kernel wrote
    // there, at most that buffer's size. `CMSG_FIRSTHDR` and `CMSG_NXTHDR` only return headers that lie within
    // `msg_controllen` (or null); a message's data is read only when its `cmsg_len` says it holds the whole value,
    // and with `read_unaligned`, which asks nothing of the alignment.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            let (level, kind, len) = ((*c).cmsg_level, (*c).cmsg_type, (*c).cmsg_len as usize);
            let data = libc::CMSG_DATA(c);
            if level == libc::SOL_SOCKET
                && kind == libc::SCM_TIMESTAMPNS
                && len >= libc::CMSG_LEN(size_of::<libc::timespec>() as libc::c_uint) as usize
            {
                let ts = std::ptr::read_unaligned(data.cast::<libc::timespec>());
                if let (Ok(s), Ok(ns)) = (u64::try_from(ts.tv_sec), u32::try_from(ts.tv_nsec)) {
                    stamp = SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(s, ns.min(999_999_999)));
                }
            } else if level == libc::SOL_SOCKET
                && kind == libc::SO_RXQ_OVFL
                && len >= libc::CMSG_LEN(size_of::<u32>() as libc::c_uint) as usize
            {
                overflow = Some(std::ptr::read_unaligned(data.cast::<u32>()));
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    (stamp, overflow)
}

#[cfg(target_os = "linux")]
const fn blank_sockaddr_in6() -> libc::sockaddr_in6 {
    libc::sockaddr_in6 {
        sin6_family: 0,
        sin6_port: 0,
        sin6_flowinfo: 0,
        sin6_addr: libc::in6_addr { s6_addr: [0; 16] },
        sin6_scope_id: 0,
    }
}

#[cfg(target_os = "linux")]
fn blank_mmsghdr() -> libc::mmsghdr {
    // SAFETY: `mmsghdr` is a plain C struct of integers and raw pointers, for which all-zero bytes are a valid
    // value (null pointers, zero lengths); its private padding fields (musl) leave no other way to build one.
    unsafe { std::mem::zeroed() }
}

/// Writes `a` into `name` as the C address of its family; returns its length.
#[cfg(target_os = "linux")]
fn std_to_sockaddr(a: &SocketAddr, name: &mut libc::sockaddr_in6) -> libc::socklen_t {
    match a {
        SocketAddr::V4(v4) => {
            // A `sockaddr_in` is a prefix of this `sockaddr_in6`'s storage: family, port, then the address where
            // `sin6_flowinfo` sits; the length passed says which one it is.
            name.sin6_family = libc::AF_INET as libc::sa_family_t;
            name.sin6_port = v4.port().to_be();
            name.sin6_flowinfo = u32::from_ne_bytes(v4.ip().octets());
            size_of::<libc::sockaddr_in>() as libc::socklen_t
        }
        SocketAddr::V6(v6) => {
            name.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            name.sin6_port = v6.port().to_be();
            name.sin6_flowinfo = v6.flowinfo().to_be();
            name.sin6_addr = libc::in6_addr { s6_addr: v6.ip().octets() };
            name.sin6_scope_id = v6.scope_id();
            size_of::<libc::sockaddr_in6>() as libc::socklen_t
        }
    }
}

/// Reads the source address the kernel wrote into `name` (a `sockaddr_in` or a `sockaddr_in6`, by family).
#[cfg(target_os = "linux")]
fn sockaddr_to_std(name: &libc::sockaddr_in6, len: libc::socklen_t) -> SocketAddr {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV6};
    match i32::from(name.sin6_family) {
        // The `sockaddr_in` layout over the same bytes: the IPv4 address sits where `sin6_flowinfo` is.
        libc::AF_INET if len as usize >= size_of::<libc::sockaddr_in>() => {
            SocketAddr::from((Ipv4Addr::from(name.sin6_flowinfo.to_ne_bytes()), u16::from_be(name.sin6_port)))
        }
        libc::AF_INET6 => SocketAddr::V6(SocketAddrV6::new(
            Ipv6Addr::from(name.sin6_addr.s6_addr),
            u16::from_be(name.sin6_port),
            u32::from_be(name.sin6_flowinfo),
            name.sin6_scope_id,
        )),
        // Not an IP source (cannot happen on an IP socket): unmatched, so counted as unsolicited and dropped.
        _ => SocketAddr::from(([0, 0, 0, 0], 0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn socket(addr: &str) -> UdpSocket {
        UdpSocket::bind(addr.parse().unwrap()).unwrap()
    }

    /// Waits (bounded) until `sock` has something to read; mio sockets are non-blocking.
    fn recv_some(b: &mut RecvBatch, sock: &UdpSocket) -> usize {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match b.recv(sock) {
                Ok(n) => return n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(e) => panic!("recv: {e}"),
            }
        }
    }

    #[test]
    fn a_batch_goes_out_and_comes_back_in_order_with_sources() {
        for (any, local) in [("127.0.0.1:0", "127.0.0.1"), ("[::1]:0", "::1")] {
            let Ok(a) = UdpSocket::bind(any.parse().unwrap()) else { continue }; // no IPv6 here
            let b = socket(any);
            let to = b.local_addr().unwrap();
            assert_eq!(to.ip().to_string(), local);
            let payloads: Vec<Vec<u8>> = (0..BATCH + 3).map(|i| vec![i as u8; 1 + i * 40]).collect();
            let msgs: Vec<(SocketAddr, &[u8])> = payloads.iter().map(|p| (to, p.as_slice())).collect();
            let mut sent = 0;
            while sent < msgs.len() {
                sent += send_batch(&a, &msgs[sent..]).unwrap();
            }
            let mut batch = RecvBatch::new();
            let mut got = Vec::new();
            while got.len() < payloads.len() {
                let n = recv_some(&mut batch, &b);
                for i in 0..n {
                    let (from, data, truncated) = batch.get(i).unwrap();
                    assert_eq!(from, a.local_addr().unwrap());
                    assert!(!truncated);
                    got.push(data.to_vec());
                }
            }
            assert_eq!(got, payloads);
            assert_eq!(batch.recv(&b).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn each_datagram_has_the_kernels_receive_time_and_drops_are_counted() {
        let a = socket("127.0.0.1:0");
        let b = socket("127.0.0.1:0");
        assert!(ask_receive_info(&b));
        let before = SystemTime::now();
        assert_eq!(send_batch(&a, &[(b.local_addr().unwrap(), b"ping")]).unwrap(), 1);
        let mut batch = RecvBatch::new();
        assert_eq!(recv_some(&mut batch, &b), 1);
        let after = SystemTime::now();
        let at = batch.received_at(0).expect("a receive time");
        assert!(before <= at && at <= after, "{before:?} <= {at:?} <= {after:?}");
        // A receive buffer too small for what comes: the kernel drops some and says how many.
        let s = socket2::SockRef::from(&b);
        s.set_recv_buffer_size(4096).unwrap();
        let to = b.local_addr().unwrap();
        let big = [0u8; 1000];
        for _ in 0..64 {
            let _ = send_batch(&a, &[(to, &big)]);
        }
        let mut read = 0;
        while let Ok(n) = batch.recv(&b) {
            read += n;
        }
        assert!(read < 64, "{read} datagrams read, none dropped");
        // The count comes with the datagrams queued after the drops.
        assert_eq!(send_batch(&a, &[(to, b"last")]).unwrap(), 1);
        assert_eq!(recv_some(&mut batch, &b), 1);
        assert!(batch.overflow.is_some_and(|d| d > 0 && d as usize <= 64 - read), "{:?}, {read} read", batch.overflow);
    }

    #[test]
    fn the_largest_datagram_arrives_whole() {
        let a = socket("127.0.0.1:0");
        let b = socket("127.0.0.1:0");
        let big = vec![7u8; 65_507];
        assert_eq!(send_batch(&a, &[(b.local_addr().unwrap(), &big)]).unwrap(), 1);
        let mut batch = RecvBatch::new();
        assert_eq!(recv_some(&mut batch, &b), 1);
        let (_, data, truncated) = batch.get(0).unwrap();
        assert!(!truncated);
        assert_eq!(data, big.as_slice());
    }
}
