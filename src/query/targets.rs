//! Server addresses as users write them: `HOST[:PORT]`, `[IPv6]:PORT`, bare IPv6, and list files.

use std::fmt;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// Why an address could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddrError {
    /// What was given.
    pub input: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for AddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.input, self.reason)
    }
}

impl std::error::Error for AddrError {}

/// Splits `HOST[:PORT]` into the host and the port (`default_port` when none is given). IPv6 addresses take brackets
/// when a port follows (`[::1]:27960`); a bare IPv6 address (`::1`) takes the default port.
pub fn split_host_port(s: &str, default_port: u16) -> Result<(String, u16), AddrError> {
    let err = |reason: &str| AddrError { input: s.to_owned(), reason: reason.to_owned() };
    let s_trim = s.trim();
    if s_trim.is_empty() {
        return Err(err("empty address"));
    }
    if let Some(rest) = s_trim.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else { return Err(err("missing ']'")) };
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse::<u16>().map_err(|_| err("bad port"))?,
            None if after.is_empty() => default_port,
            None => return Err(err("unexpected text after ']'")),
        };
        return Ok((host.to_owned(), port));
    }
    if s_trim.parse::<IpAddr>().is_ok() {
        return Ok((s_trim.to_owned(), default_port));
    }
    match s_trim.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => {
            let port = port.parse::<u16>().map_err(|_| err("bad port"))?;
            if host.is_empty() {
                return Err(err("empty host"));
            }
            Ok((host.to_owned(), port))
        }
        Some(_) => Err(err("IPv6 addresses with a port need brackets: [ADDR]:PORT")),
        None => Ok((s_trim.to_owned(), default_port)),
    }
}

/// A literal address (no name lookup).
pub fn parse_addr(s: &str, default_port: u16) -> Result<SocketAddr, AddrError> {
    // The common case of a long list, `1.2.3.4:27960` or `[::1]:27960`, without splitting and copying.
    if let Ok(a) = s.trim().parse::<SocketAddr>() {
        return Ok(a);
    }
    let (host, port) = split_host_port(s, default_port)?;
    let ip: IpAddr =
        host.parse().map_err(|_| AddrError { input: s.to_owned(), reason: "not an IP address".to_owned() })?;
    Ok(SocketAddr::new(ip, port))
}

/// An address, looking names up (blocking, through the system resolver); IPv4 first.
pub fn resolve(s: &str, default_port: u16) -> Result<SocketAddr, AddrError> {
    if let Ok(a) = parse_addr(s, default_port) {
        return Ok(a);
    }
    let (host, port) = split_host_port(s, default_port)?;
    let addrs: Vec<SocketAddr> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| AddrError { input: s.to_owned(), reason: format!("cannot resolve: {e}") })?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| AddrError { input: s.to_owned(), reason: "the name has no address".to_owned() })
}

/// The entries of a list file: one `ADDR[:PORT]` per line; blank lines and `#` comments (whole-line or trailing)
/// are skipped. Returns `(line number, entry text)`.
pub fn list_entries(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let line = line.split('#').next().unwrap_or("").trim();
            (!line.is_empty()).then_some((i + 1, line))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_forms() {
        assert_eq!(parse_addr("1.2.3.4", 8303).unwrap(), "1.2.3.4:8303".parse().unwrap());
        assert_eq!(parse_addr("1.2.3.4:1", 8303).unwrap(), "1.2.3.4:1".parse().unwrap());
        assert_eq!(parse_addr("::1", 5).unwrap(), "[::1]:5".parse().unwrap());
        assert_eq!(parse_addr("[::1]", 5).unwrap(), "[::1]:5".parse().unwrap());
        assert_eq!(parse_addr("[::1]:7", 5).unwrap(), "[::1]:7".parse().unwrap());
        assert!(parse_addr("1.2.3.4:99999", 1).is_err());
        assert!(parse_addr("[::1", 1).is_err());
        assert!(parse_addr("", 1).is_err());
        assert!(parse_addr(":5", 1).is_err());
        assert_eq!(split_host_port("example.org", 3).unwrap(), ("example.org".into(), 3));
        assert_eq!(resolve("127.0.0.1:9", 1).unwrap(), "127.0.0.1:9".parse().unwrap());
    }

    #[test]
    fn list_files_skip_comments() {
        let t = "# servers\n1.2.3.4\n\n  5.6.7.8:9  # trailing\n#x\n";
        assert_eq!(list_entries(t), vec![(2, "1.2.3.4"), (4, "5.6.7.8:9")]);
    }
}
