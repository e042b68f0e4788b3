//! Addresses and CIDR blocks, as `server.trusted_proxies` lists them: the settings check
//! them when they load, the HTTP edge guard matches peers against them.

use std::net::IpAddr;

/// An address or a CIDR block (`10.0.0.7`, `10.0.0.0/8`, `::1/128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// Parses `ip` or `ip/prefix`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let (ip, prefix) = match text.trim().split_once('/') {
            Some((ip, p)) => (ip, Some(p)),
            None => (text.trim(), None),
        };
        let addr: IpAddr = ip.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max)?,
            None => max,
        };
        Some(IpNet { addr, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::IpNet;
    use std::net::IpAddr;

    #[test]
    fn blocks_parse_and_contain_their_addresses() {
        for bad in ["", "10.0.0.0/33", "::1/129", "host", "10.0.0.0/x"] {
            assert_eq!(IpNet::parse(bad), None, "{bad}");
        }
        let v4 = IpNet::parse("10.0.0.0/8");
        assert!(v4.is_some_and(|n| n.contains(IpAddr::from([10, 1, 2, 3]))));
        assert!(v4.is_some_and(|n| !n.contains(IpAddr::from([11, 0, 0, 1]))));
        let v6 = IpNet::parse("fd00::/8");
        assert!(v6.is_some_and(|n| n.contains(IpAddr::from([0xfd00, 0, 0, 0, 0, 0, 0, 1]))));
        assert!(v6.is_some_and(|n| !n.contains(IpAddr::from([10, 0, 0, 1]))));
        let host = IpNet::parse("::1");
        assert!(host.is_some_and(|n| n.contains(IpAddr::from([0, 0, 0, 0, 0, 0, 0, 1]))));
    }
}
