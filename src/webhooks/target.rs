//! Which endpoints a webhook may be sent to: `http(s)` only, and only globally routable
//! addresses (judged by the IANA special-purpose address registries, [`V4_SPECIAL`] and
//! [`V6_SPECIAL`]) unless `webhooks.allow_private` says so.
//! Checked when an endpoint is registered and again before each delivery (a name may
//! resolve elsewhere later); a delivery then connects only to the addresses that were
//! checked ([`Target::pinned`]), so a name cannot resolve to an internal address between
//! the check and the connection.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A checked endpoint.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: reqwest::Url,
    /// The host and the addresses it was checked at (`None` with `allow_private`, where
    /// any address is allowed).
    pub pinned: Option<(String, Vec<SocketAddr>)>,
}

/// Checks `url`; the error says why it is refused.
pub async fn check(url: &str, allow_private: bool) -> Result<Target, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("only http and https URLs are allowed".into());
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("credentials in the URL are not allowed; use the signing secret".into());
    }
    let host = parsed
        .host_str()
        .ok_or("the URL has no host")?
        .trim_matches(|c| c == '[' || c == ']')
        .to_string();
    if allow_private {
        return Ok(Target {
            url: parsed,
            pinned: None,
        });
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| format!("{host} does not resolve: {e}"))?
        .collect();
    for addr in &addrs {
        if let Err(why) = globally_routable(addr.ip()) {
            let resolved = if host.parse::<IpAddr>().is_ok() {
                String::new()
            } else {
                format!("{host} resolves to {}; ", addr.ip())
            };
            return Err(format!(
                "{resolved}{why}, not globally routable; set webhooks.allow_private = true to \
                 allow internal targets"
            ));
        }
    }
    if addrs.is_empty() {
        return Err(format!("{host} resolves to no address"));
    }
    Ok(Target {
        url: parsed,
        pinned: Some((host, addrs)),
    })
}

/// How a registry entry judges the addresses in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// "Globally Reachable: True": allowed.
    Global,
    /// "Globally Reachable: False" or "N/A", or otherwise not routable on the internet:
    /// refused.
    Internal,
    /// The IPv6 address carries an IPv4 address, the 32 bits `shift` bits from the
    /// right end; that address is judged instead, by [`V4_SPECIAL`].
    Embeds { shift: u32 },
}

/// A registry entry: network, prefix length, name, verdict.
type Special = (IpAddr, u8, &'static str, Reach);

const fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

const fn v6(s: [u16; 8]) -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(
        s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7],
    ))
}

use Reach::{Embeds, Global, Internal};

/// Carries its IPv4 address in the last 32 bits (IPv4-compatible, IPv4-mapped, NAT64).
const LAST_32: Reach = Embeds { shift: 0 };
/// Carries its IPv4 address in bits 16..48 (6to4).
const BITS_16_48: Reach = Embeds { shift: 80 };

/// IPv4 addresses that are not globally routable, and the globally reachable exceptions
/// inside them: follows the IANA IPv4 Special-Purpose Address Registry (RFC 6890 and its
/// updates; every entry whose "Globally Reachable" is False or N/A is refused), plus
/// multicast 224.0.0.0/4 from the IANA IPv4 address space registry. The most specific
/// entry containing an address decides; an address in none is globally routable.
#[rustfmt::skip]
const V4_SPECIAL: &[Special] = &[
    (v4(0, 0, 0, 0),         8,   "\"this network\"",                Internal),
    (v4(0, 0, 0, 0),         32,  "\"this host on this network\"",   Internal),
    (v4(10, 0, 0, 0),        8,   "private-use",                     Internal),
    (v4(100, 64, 0, 0),      10,  "shared address space",            Internal),
    (v4(127, 0, 0, 0),       8,   "loopback",                        Internal),
    (v4(169, 254, 0, 0),     16,  "link local",                      Internal),
    (v4(172, 16, 0, 0),      12,  "private-use",                     Internal),
    (v4(192, 0, 0, 0),       24,  "IETF protocol assignments",       Internal),
    (v4(192, 0, 0, 0),       29,  "IPv4 service continuity prefix",  Internal),
    (v4(192, 0, 0, 8),       32,  "IPv4 dummy address",              Internal),
    (v4(192, 0, 0, 9),       32,  "Port Control Protocol anycast",   Global),
    (v4(192, 0, 0, 10),      32,  "TURN anycast",                    Global),
    (v4(192, 0, 0, 170),     32,  "NAT64/DNS64 discovery",           Internal),
    (v4(192, 0, 0, 171),     32,  "NAT64/DNS64 discovery",           Internal),
    (v4(192, 0, 2, 0),       24,  "documentation (TEST-NET-1)",      Internal),
    (v4(192, 31, 196, 0),    24,  "AS112-v4",                        Global),
    (v4(192, 52, 193, 0),    24,  "AMT",                             Global),
    (v4(192, 88, 99, 0),     24,  "deprecated 6to4 relay anycast",   Internal),
    (v4(192, 168, 0, 0),     16,  "private-use",                     Internal),
    (v4(192, 175, 48, 0),    24,  "direct delegation AS112 service", Global),
    (v4(198, 18, 0, 0),      15,  "benchmarking",                    Internal),
    (v4(198, 51, 100, 0),    24,  "documentation (TEST-NET-2)",      Internal),
    (v4(203, 0, 113, 0),     24,  "documentation (TEST-NET-3)",      Internal),
    (v4(224, 0, 0, 0),       4,   "multicast",                       Internal),
    (v4(240, 0, 0, 0),       4,   "reserved",                        Internal),
    (v4(255, 255, 255, 255), 32,  "limited broadcast",               Internal),
];

/// IPv6 addresses that are not globally routable, the globally reachable exceptions
/// inside them, and the forms that embed an IPv4 address: follows the IANA IPv6
/// Special-Purpose Address Registry (every entry whose "Globally Reachable" is False or
/// N/A is refused, except that the IPv4-compatible, IPv4-mapped, NAT64 and 6to4 forms are
/// judged by the IPv4 address they carry; Teredo is refused outright), plus the blocks of
/// the IANA IPv6 address space registry outside global unicast 2000::/3 (reserved by the
/// IETF, unique local, link-local, the deprecated site-local fec0::/10, multicast). The
/// most specific entry containing an address decides; an address in none is globally
/// routable.
#[rustfmt::skip]
const V6_SPECIAL: &[Special] = &[
    (v6([0, 0, 0, 0, 0, 0, 0, 0]),              8,   "reserved by the IETF",            Internal),
    (v6([0, 0, 0, 0, 0, 0, 0, 0]),              96,  "IPv4-compatible",                 LAST_32),
    (v6([0, 0, 0, 0, 0, 0, 0, 0]),              128, "unspecified",                     Internal),
    (v6([0, 0, 0, 0, 0, 0, 0, 1]),              128, "loopback",                        Internal),
    (v6([0, 0, 0, 0, 0, 0xffff, 0, 0]),         96,  "IPv4-mapped",                     LAST_32),
    (v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0]),      96,  "IPv4-IPv6 translation",           LAST_32),
    (v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0]),      48,  "local-use IPv4/IPv6 translation", Internal),
    (v6([0x100, 0, 0, 0, 0, 0, 0, 0]),          8,   "reserved by the IETF",            Internal),
    (v6([0x100, 0, 0, 0, 0, 0, 0, 0]),          64,  "discard-only",                    Internal),
    (v6([0x100, 0, 0, 1, 0, 0, 0, 0]),          64,  "dummy IPv6 prefix",               Internal),
    (v6([0x200, 0, 0, 0, 0, 0, 0, 0]),          7,   "reserved by the IETF",            Internal),
    (v6([0x400, 0, 0, 0, 0, 0, 0, 0]),          6,   "reserved by the IETF",            Internal),
    (v6([0x800, 0, 0, 0, 0, 0, 0, 0]),          5,   "reserved by the IETF",            Internal),
    (v6([0x1000, 0, 0, 0, 0, 0, 0, 0]),         4,   "reserved by the IETF",            Internal),
    (v6([0x2001, 0, 0, 0, 0, 0, 0, 0]),         23,  "IETF protocol assignments",       Internal),
    (v6([0x2001, 0, 0, 0, 0, 0, 0, 0]),         32,  "Teredo",                          Internal),
    (v6([0x2001, 1, 0, 0, 0, 0, 0, 1]),         128, "Port Control Protocol anycast",   Global),
    (v6([0x2001, 1, 0, 0, 0, 0, 0, 2]),         128, "TURN anycast",                    Global),
    (v6([0x2001, 2, 0, 0, 0, 0, 0, 0]),         48,  "benchmarking",                    Internal),
    (v6([0x2001, 3, 0, 0, 0, 0, 0, 0]),         32,  "AMT",                             Global),
    (v6([0x2001, 4, 0x112, 0, 0, 0, 0, 0]),     48,  "AS112-v6",                        Global),
    (v6([0x2001, 0x10, 0, 0, 0, 0, 0, 0]),      28,  "deprecated ORCHID",               Internal),
    (v6([0x2001, 0x20, 0, 0, 0, 0, 0, 0]),      28,  "ORCHIDv2",                        Global),
    (v6([0x2001, 0x30, 0, 0, 0, 0, 0, 0]),      28,  "drone remote ID entity tags",     Global),
    (v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0]),     32,  "documentation",                   Internal),
    (v6([0x2002, 0, 0, 0, 0, 0, 0, 0]),         16,  "6to4",                            BITS_16_48),
    (v6([0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0]), 48,  "direct delegation AS112 service", Global),
    (v6([0x3fff, 0, 0, 0, 0, 0, 0, 0]),         20,  "documentation",                   Internal),
    (v6([0x4000, 0, 0, 0, 0, 0, 0, 0]),         3,   "reserved by the IETF",            Internal),
    (v6([0x5f00, 0, 0, 0, 0, 0, 0, 0]),         16,  "segment routing (SRv6) SIDs",     Internal),
    (v6([0x6000, 0, 0, 0, 0, 0, 0, 0]),         3,   "reserved by the IETF",            Internal),
    (v6([0x8000, 0, 0, 0, 0, 0, 0, 0]),         3,   "reserved by the IETF",            Internal),
    (v6([0xa000, 0, 0, 0, 0, 0, 0, 0]),         3,   "reserved by the IETF",            Internal),
    (v6([0xc000, 0, 0, 0, 0, 0, 0, 0]),         3,   "reserved by the IETF",            Internal),
    (v6([0xe000, 0, 0, 0, 0, 0, 0, 0]),         4,   "reserved by the IETF",            Internal),
    (v6([0xf000, 0, 0, 0, 0, 0, 0, 0]),         5,   "reserved by the IETF",            Internal),
    (v6([0xf800, 0, 0, 0, 0, 0, 0, 0]),         6,   "reserved by the IETF",            Internal),
    (v6([0xfc00, 0, 0, 0, 0, 0, 0, 0]),         7,   "unique-local",                    Internal),
    (v6([0xfe00, 0, 0, 0, 0, 0, 0, 0]),         9,   "reserved by the IETF",            Internal),
    (v6([0xfe80, 0, 0, 0, 0, 0, 0, 0]),         10,  "link-local unicast",              Internal),
    (v6([0xfec0, 0, 0, 0, 0, 0, 0, 0]),         10,  "deprecated site-local",           Internal),
    (v6([0xff00, 0, 0, 0, 0, 0, 0, 0]),         8,   "multicast",                       Internal),
];

/// The address as a number, and its width in bits.
fn bits(ip: IpAddr) -> (u128, u32) {
    match ip {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
        IpAddr::V6(v6) => (u128::from(v6), 128),
    }
}

/// The most specific entry of [`V4_SPECIAL`] or [`V6_SPECIAL`] containing `ip`.
fn special(ip: IpAddr) -> Option<&'static Special> {
    let table = if ip.is_ipv4() { V4_SPECIAL } else { V6_SPECIAL };
    let (ip_bits, width) = bits(ip);
    table
        .iter()
        .filter(|(net, len, ..)| {
            let (net_bits, _) = bits(*net);
            // The bits the prefix does not fix are shifted out (all of them for /0).
            (ip_bits ^ net_bits)
                .checked_shr(width.saturating_sub(u32::from(*len)))
                .unwrap_or(0)
                == 0
        })
        .max_by_key(|(_, len, ..)| *len)
}

/// `Ok` when `ip` is globally routable by the IANA special-purpose address registries
/// ([`V4_SPECIAL`], [`V6_SPECIAL`]); an IPv6 address embedding an IPv4 one is judged by
/// the IPv4 address. `Err` names the entry that refuses it, e.g. "198.18.0.1 is in
/// 198.18.0.0/15 (benchmarking)".
fn globally_routable(ip: IpAddr) -> Result<(), String> {
    let Some(&(net, len, name, reach)) = special(ip) else {
        return Ok(());
    };
    match (reach, ip) {
        (Global, _) => Ok(()),
        (Embeds { shift }, IpAddr::V6(v6)) => {
            let carried = (u128::from(v6) >> shift) & u128::from(u32::MAX);
            let v4 = Ipv4Addr::from(carried as u32);
            globally_routable(IpAddr::V4(v4))
                .map_err(|why| format!("{ip} is in {net}/{len} ({name}) and embeds {v4}; {why}"))
        }
        // Embeds in the IPv4 table would be a mistake in it: refused.
        (Internal | Embeds { .. }, _) => Err(format!("{ip} is in {net}/{len} ({name})")),
    }
}

#[cfg(test)]
mod tests {
    use super::{bits, check, globally_routable, special, Embeds, V4_SPECIAL, V6_SPECIAL};
    use std::net::IpAddr;

    /// An address and the registry entry that refuses it (for an IPv6 address carrying an
    /// IPv4 one, the entry refusing the IPv4 address), or `None` when it is globally
    /// routable.
    const JUDGED: &[(&str, Option<&str>)] = &[
        // IPv4
        ("0.0.0.0", Some("0.0.0.0/32")),
        ("0.0.0.1", Some("0.0.0.0/8")),
        ("0.255.255.255", Some("0.0.0.0/8")),
        ("1.0.0.0", None),
        ("9.255.255.255", None),
        ("10.1.2.3", Some("10.0.0.0/8")),
        ("11.0.0.0", None),
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("100.63.255.255", None),
        ("100.64.0.1", Some("100.64.0.0/10")),
        ("100.127.255.255", Some("100.64.0.0/10")),
        ("100.128.0.0", None),
        ("126.255.255.255", None),
        ("127.0.0.1", Some("127.0.0.0/8")),
        ("127.255.255.254", Some("127.0.0.0/8")),
        ("128.0.0.0", None),
        ("169.253.255.255", None),
        ("169.254.169.254", Some("169.254.0.0/16")),
        ("169.255.0.0", None),
        ("172.15.255.255", None),
        ("172.16.0.1", Some("172.16.0.0/12")),
        ("172.31.255.255", Some("172.16.0.0/12")),
        ("172.32.0.0", None),
        ("191.255.255.255", None),
        ("192.0.0.0", Some("192.0.0.0/29")),
        ("192.0.0.7", Some("192.0.0.0/29")),
        ("192.0.0.8", Some("192.0.0.8/32")),
        ("192.0.0.9", None),
        ("192.0.0.10", None),
        ("192.0.0.11", Some("192.0.0.0/24")),
        ("192.0.0.170", Some("192.0.0.170/32")),
        ("192.0.0.171", Some("192.0.0.171/32")),
        ("192.0.0.255", Some("192.0.0.0/24")),
        ("192.0.1.0", None),
        ("192.0.2.1", Some("192.0.2.0/24")),
        ("192.0.3.0", None),
        ("192.31.196.1", None),
        ("192.52.193.1", None),
        ("192.88.98.255", None),
        ("192.88.99.1", Some("192.88.99.0/24")),
        ("192.88.100.0", None),
        ("192.167.255.255", None),
        ("192.168.1.1", Some("192.168.0.0/16")),
        ("192.169.0.0", None),
        ("192.175.48.1", None),
        ("198.17.255.255", None),
        ("198.18.0.1", Some("198.18.0.0/15")),
        ("198.19.255.255", Some("198.18.0.0/15")),
        ("198.20.0.0", None),
        ("198.51.100.7", Some("198.51.100.0/24")),
        ("198.51.101.0", None),
        ("203.0.112.255", None),
        ("203.0.113.9", Some("203.0.113.0/24")),
        ("203.0.114.0", None),
        ("223.255.255.255", None),
        ("224.0.0.1", Some("224.0.0.0/4")),
        ("239.255.255.250", Some("224.0.0.0/4")),
        ("240.0.0.1", Some("240.0.0.0/4")),
        ("255.255.255.254", Some("240.0.0.0/4")),
        ("255.255.255.255", Some("255.255.255.255/32")),
        // IPv6 outside 2000::/3, and the IPv4 address forms
        ("::", Some("::/128")),
        ("::1", Some("::1/128")),
        ("::2", Some("0.0.0.0/8")),
        ("::127.0.0.1", Some("127.0.0.0/8")),
        ("::8.8.8.8", None),
        ("::1:0:0:0", Some("::/8")),
        ("ff::1", Some("::/8")),
        ("::ffff:127.0.0.1", Some("127.0.0.0/8")),
        ("::ffff:169.254.169.254", Some("169.254.0.0/16")),
        ("::ffff:8.8.8.8", None),
        ("::ffff:0:8.8.8.8", Some("::/8")),
        ("64:ff9b::7f00:1", Some("127.0.0.0/8")),
        ("64:ff9b::a9fe:a9fe", Some("169.254.0.0/16")),
        ("64:ff9b::192.0.0.170", Some("192.0.0.170/32")),
        ("64:ff9b::8.8.8.8", None),
        ("64:ff9b:1::8.8.8.8", Some("64:ff9b:1::/48")),
        ("64:ff9b:2::8.8.8.8", Some("::/8")),
        ("100::1", Some("100::/64")),
        ("100:0:0:1::1", Some("100:0:0:1::/64")),
        ("100:0:0:2::1", Some("100::/8")),
        ("200::1", Some("200::/7")),
        ("400::1", Some("400::/6")),
        ("800::1", Some("800::/5")),
        ("1000::1", Some("1000::/4")),
        ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("1000::/4")),
        ("2000::", None),
        // 2001::/23 and the global exceptions in it
        ("2001::1", Some("2001::/32")),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Some("2001::/32")),
        ("2001:1::1", None),
        ("2001:1::2", None),
        ("2001:1::4", Some("2001::/23")),
        ("2001:2::1", Some("2001:2::/48")),
        ("2001:2:1::1", Some("2001::/23")),
        ("2001:3::1", None),
        ("2001:3:ffff::1", None),
        ("2001:4::1", Some("2001::/23")),
        ("2001:4:112::1", None),
        ("2001:4:113::1", Some("2001::/23")),
        ("2001:10::1", Some("2001:10::/28")),
        ("2001:20::1", None),
        ("2001:2f:ffff::1", None),
        ("2001:30::1", None),
        ("2001:3f:ffff::1", None),
        ("2001:40::1", Some("2001::/23")),
        ("2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", Some("2001::/23")),
        ("2001:200::", None),
        ("2001:4860:4860::8888", None),
        ("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", None),
        ("2001:db8::1", Some("2001:db8::/32")),
        ("2001:db9::", None),
        // 6to4 carries the IPv4 address in bits 16..48
        ("2002:7f00:1::", Some("127.0.0.0/8")),
        ("2002:a00:1::1", Some("10.0.0.0/8")),
        ("2002:c000:2ab::1", Some("192.0.2.0/24")),
        ("2002:c000:9::", None),
        ("2002:808:808::1", None),
        ("2003::", None),
        ("2606:4700::1111", None),
        ("2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", None),
        ("2620:4f:8000::1", None),
        ("2620:4f:8001::", None),
        ("3ffe:ffff::1", None),
        ("3fff::1", Some("3fff::/20")),
        ("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", Some("3fff::/20")),
        ("3fff:1000::", None),
        ("4000::1", Some("4000::/3")),
        ("5f00::1", Some("5f00::/16")),
        ("6000::1", Some("6000::/3")),
        ("8000::1", Some("8000::/3")),
        ("a000::1", Some("a000::/3")),
        ("c000::1", Some("c000::/3")),
        ("e000::1", Some("e000::/4")),
        ("f000::1", Some("f000::/5")),
        ("f800::1", Some("f800::/6")),
        ("fc00::1", Some("fc00::/7")),
        ("fd00::1", Some("fc00::/7")),
        ("fe00::1", Some("fe00::/9")),
        ("fe80::1", Some("fe80::/10")),
        ("febf:ffff::1", Some("fe80::/10")),
        ("fec0::1", Some("fec0::/10")),
        ("ff02::1", Some("ff00::/8")),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Some("ff00::/8")),
    ];

    #[test]
    fn every_registry_entry_is_judged_as_iana_says() {
        for &(addr, refused_by) in JUDGED {
            let ip: IpAddr = addr.parse().unwrap();
            match (globally_routable(ip), refused_by) {
                (Ok(()), None) => {}
                (Err(why), Some(entry)) => {
                    // The innermost judgement names the entry: "a.b.c.d is in net/len (name)".
                    let last = why.rsplit(" is in ").next().unwrap();
                    assert!(last.starts_with(&format!("{entry} (")), "{addr}: {why}");
                    assert!(why.starts_with(&format!("{ip} is in ")), "{addr}: {why}");
                }
                (got, _) => panic!("{addr}: expected refused by {refused_by:?}, got {got:?}"),
            }
        }
        // Every entry of both tables is the deciding one for some address above.
        let decided: Vec<_> = JUDGED
            .iter()
            .filter_map(|(addr, _)| special(addr.parse().unwrap()))
            .collect();
        for entry in V4_SPECIAL.iter().chain(V6_SPECIAL) {
            assert!(decided.contains(&entry), "no test address in {entry:?}");
        }
    }

    #[test]
    fn the_tables_are_well_formed() {
        for (table, v4) in [(V4_SPECIAL, true), (V6_SPECIAL, false)] {
            for (i, &(net, len, name, reach)) in table.iter().enumerate() {
                assert_eq!(net.is_ipv4(), v4, "{net}/{len}");
                let (net_bits, width) = bits(net);
                assert!(u32::from(len) <= width, "{net}/{len}");
                let host_bits = net_bits.checked_shl(u32::from(len)).unwrap_or(0)
                    & (u128::MAX >> (128 - width));
                assert_eq!(host_bits, 0, "{net}/{len} has host bits set");
                assert!(!name.is_empty());
                if let Embeds { shift } = reach {
                    assert!(!v4 && shift + 32 <= 128 - u32::from(len), "{net}/{len}");
                }
                assert!(
                    !table[..i].iter().any(|e| e.0 == net && e.1 == len),
                    "{net}/{len} twice"
                );
            }
        }
    }

    #[tokio::test]
    async fn only_public_http_endpoints_without_the_setting() {
        for (url, allowed) in [
            ("http://127.0.0.1:9/hook", false),
            ("http://[::1]:9/hook", false),
            ("http://10.1.2.3/hook", false),
            ("http://192.168.1.1/hook", false),
            ("http://169.254.169.254/latest", false),
            ("http://[fd00::1]/hook", false),
            ("http://[::ffff:127.0.0.1]/hook", false),
            ("http://[::127.0.0.1]/hook", false),
            ("http://[64:ff9b::7f00:1]/hook", false),
            ("http://[64:ff9b::a9fe:a9fe]/latest", false),
            ("http://[2002:7f00:1::]/hook", false),
            ("http://[fec0::1]/hook", false),
            ("http://[ff02::1]/hook", false),
            ("http://0.0.0.1/hook", false),
            ("http://198.18.0.1/hook", false),
            ("http://192.0.0.170/hook", false),
            ("http://240.0.0.1/hook", false),
            ("http://224.0.0.1/hook", false),
            ("ftp://8.8.8.8/hook", false),
            ("http://user:pw@8.8.8.8/hook", false),
            ("https://8.8.8.8/hook", true),
            ("https://1.1.1.1/hook", true),
            ("https://[2606:4700::1111]/hook", true),
            ("https://[2001:4860:4860::8888]/hook", true),
            ("https://192.0.0.9/hook", true),
        ] {
            assert_eq!(check(url, false).await.is_ok(), allowed, "{url}");
        }
        assert!(check("http://127.0.0.1:9/hook", true).await.is_ok());
        assert!(check("http://[64:ff9b::7f00:1]/hook", true).await.is_ok());
        assert!(check("mailto:x@example.com", true).await.is_err());
    }

    #[tokio::test]
    async fn the_refusal_names_the_registry_entry() {
        for (url, why) in [
            (
                "http://198.18.0.1/hook",
                "198.18.0.1 is in 198.18.0.0/15 (benchmarking), not globally routable; \
                 set webhooks.allow_private = true to allow internal targets",
            ),
            (
                "http://[64:ff9b::a9fe:a9fe]/latest",
                "64:ff9b::a9fe:a9fe is in 64:ff9b::/96 (IPv4-IPv6 translation) and embeds \
                 169.254.169.254; 169.254.169.254 is in 169.254.0.0/16 (link local), not \
                 globally routable; set webhooks.allow_private = true to allow internal targets",
            ),
            (
                "http://[::127.0.0.1]:8080/",
                "::7f00:1 is in ::/96 (IPv4-compatible) and embeds 127.0.0.1; 127.0.0.1 is in \
                 127.0.0.0/8 (loopback), not globally routable; set webhooks.allow_private = \
                 true to allow internal targets",
            ),
        ] {
            assert_eq!(check(url, false).await.unwrap_err(), why, "{url}");
        }
    }
}
