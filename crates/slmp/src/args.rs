//! The text forms a user gives the sender (CLI flags, C and Python
//! arguments): a window and a peer address. Parsed here once so every
//! front end accepts and refuses the same strings.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use crate::{WindowMode, MAX_WINDOW, UDP_PORT};

/// `auto` (AIMD) or a fixed packet count in 1..=[`MAX_WINDOW`].
pub fn parse_window(s: &str) -> Result<WindowMode, String> {
    if s == "auto" {
        return Ok(WindowMode::default());
    }
    match s.parse::<u32>() {
        Ok(n) if (1..=MAX_WINDOW).contains(&n) => Ok(WindowMode::Fixed(n)),
        _ => Err(format!(
            "window `{s}`: expected `auto` or a packet count in 1..={MAX_WINDOW}"
        )),
    }
}

/// ADDR, ADDR:PORT, [V6]:PORT or HOST[:PORT]; the port defaults to SLMP's.
pub fn resolve_peer(to: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = to.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(ip) = to.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, UDP_PORT));
    }
    let with_port = if to.contains(':') {
        to.to_string()
    } else {
        format!("{to}:{UDP_PORT}")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| format!("peer `{to}`: not an address or resolvable host[:port] ({e})"))?
        .next()
        .ok_or_else(|| format!("peer `{to}`: the name resolved to no address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows() {
        assert_eq!(parse_window("auto"), Ok(WindowMode::default()));
        assert_eq!(parse_window("512"), Ok(WindowMode::Fixed(512)));
        assert!(parse_window("0").is_err());
        assert!(parse_window("65537").is_err());
        assert!(parse_window("x").is_err());
    }

    #[test]
    fn peers() {
        assert_eq!(
            resolve_peer("10.0.0.1").unwrap(),
            "10.0.0.1:9330".parse().unwrap()
        );
        assert_eq!(
            resolve_peer("10.0.0.1:7").unwrap(),
            "10.0.0.1:7".parse().unwrap()
        );
        assert_eq!(
            resolve_peer("[::1]").unwrap(),
            "[::1]:9330".parse().unwrap()
        );
        assert!(resolve_peer("no such host.invalid").is_err());
    }
}
