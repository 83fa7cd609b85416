//! Free loopback ports for servers that listen on TCP and UDP with the same number (bzfs does).

use std::net::{Ipv4Addr, TcpListener, UdpSocket};

/// bzfs drops UDP from source ports "< 1024" but compares the raw network-order `u16`: on a little-endian
/// host that rejects every port whose *low* byte is 0..=3 (e.g. 1024, 51200). Avoid them everywhere.
pub fn port_is_usable_for_bzflag_udp(port: u16) -> bool {
    port >= 1024 && (port & 0xff) > 3
}

/// A loopback port that was free for both TCP and UDP a moment ago (the kernel picks it, so parallel test
/// processes rarely collide; [`super::Bzfs`] retries with a new port if the server still fails to bind).
#[track_caller]
pub fn free_port() -> u16 {
    for _ in 0..1000 {
        let Ok(tcp) = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)) else { continue };
        let Ok(port) = tcp.local_addr().map(|a| a.port()) else { continue };
        if !port_is_usable_for_bzflag_udp(port) {
            continue;
        }
        if UdpSocket::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            return port; // both sockets are dropped here, freeing the port for the server
        }
    }
    panic!("no free loopback port usable for both TCP and UDP after 1000 tries");
}

/// A UDP socket on 127.0.0.1 whose port bzfs will not ignore.
pub fn bzflag_udp_socket() -> std::io::Result<UdpSocket> {
    for _ in 0..100 {
        let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        if port_is_usable_for_bzflag_udp(sock.local_addr()?.port()) {
            return Ok(sock);
        }
    }
    Err(std::io::Error::other("no usable UDP source port after 100 tries"))
}
