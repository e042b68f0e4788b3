//! PostgreSQL's own text forms of binary values whose types have no JSON counterpart:
//! intervals (as ISO 8601 durations), times with a zone, network addresses, MAC addresses,
//! bit strings, the single-byte `"char"`, and the simple geometric types. Each decoder reads
//! the type's binary wire format and returns `None` on malformed bytes (reported as an
//! unsupported value, never a panic).

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use tokio_postgres::types::Type;

/// The text form of a value of `ty`, if the type is one of this module's.
pub fn decode(ty: &Type, raw: &[u8]) -> Option<String> {
    match *ty {
        Type::INTERVAL => interval(raw),
        Type::TIMETZ => timetz(raw),
        Type::INET | Type::CIDR => inet(raw, *ty == Type::CIDR),
        Type::MACADDR | Type::MACADDR8 => Some(mac(raw)),
        Type::BIT | Type::VARBIT => bits(raw),
        Type::CHAR => raw.first().map(|b| char::from(*b).to_string()),
        Type::POINT => {
            let [x, y] = floats::<2>(raw)?;
            Some(point(x, y))
        }
        Type::LSEG => {
            let [a, b, c, d] = floats::<4>(raw)?;
            Some(format!("[{},{}]", point(a, b), point(c, d)))
        }
        Type::BOX => {
            let [a, b, c, d] = floats::<4>(raw)?;
            Some(format!("{},{}", point(a, b), point(c, d)))
        }
        Type::CIRCLE => {
            let [x, y, r] = floats::<3>(raw)?;
            Some(format!("<{},{}>", point(x, y), r))
        }
        _ => None,
    }
}

fn be<const N: usize>(raw: &[u8], at: usize) -> Option<[u8; N]> {
    raw.get(at..at + N)?.try_into().ok()
}

fn floats<const N: usize>(raw: &[u8]) -> Option<[f64; N]> {
    if raw.len() != N * 8 {
        return None;
    }
    let mut out = [0.0; N];
    for (i, v) in out.iter_mut().enumerate() {
        *v = f64::from_be_bytes(be::<8>(raw, i * 8)?);
    }
    Some(out)
}

fn point(x: f64, y: f64) -> String {
    format!("({x},{y})")
}

/// `interval`: microseconds (i64), days (i32), months (i32), written as PostgreSQL's
/// `iso_8601` interval style writes it (`P1Y2M3DT4H5M6.5S`, each part with its own sign).
fn interval(raw: &[u8]) -> Option<String> {
    if raw.len() != 16 {
        return None;
    }
    let micros = i64::from_be_bytes(be::<8>(raw, 0)?);
    let days = i32::from_be_bytes(be::<4>(raw, 8)?);
    let months = i32::from_be_bytes(be::<4>(raw, 12)?);
    if micros == 0 && days == 0 && months == 0 {
        return Some("PT0S".to_string());
    }
    let mut s = String::from("P");
    let (years, months) = (months / 12, months % 12);
    for (n, unit) in [(years, 'Y'), (months, 'M'), (days, 'D')] {
        if n != 0 {
            let _ = write!(s, "{n}{unit}");
        }
    }
    if micros != 0 {
        s.push('T');
        let hours = micros / 3_600_000_000;
        let minutes = (micros % 3_600_000_000) / 60_000_000;
        let rest = micros % 60_000_000;
        for (n, unit) in [(hours, 'H'), (minutes, 'M')] {
            if n != 0 {
                let _ = write!(s, "{n}{unit}");
            }
        }
        if rest != 0 {
            let sign = if rest < 0 { "-" } else { "" };
            let rest = rest.unsigned_abs();
            let (secs, frac) = (rest / 1_000_000, rest % 1_000_000);
            if frac == 0 {
                let _ = write!(s, "{sign}{secs}S");
            } else {
                let digits = format!("{frac:06}");
                let _ = write!(s, "{sign}{secs}.{}S", digits.trim_end_matches('0'));
            }
        }
    }
    Some(s)
}

/// `timetz`: microseconds since midnight (i64) and the zone in seconds *west* of UTC (i32).
fn timetz(raw: &[u8]) -> Option<String> {
    if raw.len() != 12 {
        return None;
    }
    let micros = u64::try_from(i64::from_be_bytes(be::<8>(raw, 0)?)).ok()?;
    let west = i32::from_be_bytes(be::<4>(raw, 8)?);
    let (secs, frac) = (micros / 1_000_000, micros % 1_000_000);
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        let digits = format!("{frac:06}");
        let _ = write!(s, ".{}", digits.trim_end_matches('0'));
    }
    let east = west.checked_neg()?;
    let sign = if east < 0 { '-' } else { '+' };
    let east = east.unsigned_abs();
    let _ = write!(s, "{sign}{:02}", east / 3600);
    if east % 3600 != 0 {
        let _ = write!(s, ":{:02}", east / 60 % 60);
    }
    Some(s)
}

/// `inet` / `cidr`: family (2 = IPv4, 3 = IPv6), netmask bits, is-cidr, length, address.
fn inet(raw: &[u8], cidr: bool) -> Option<String> {
    let (&family, rest) = raw.split_first()?;
    let (&bits, rest) = rest.split_first()?;
    let rest = rest.get(2..)?;
    let (addr, full) = match family {
        2 => (Ipv4Addr::from(be::<4>(rest, 0)?).to_string(), 32),
        3 => (Ipv6Addr::from(be::<16>(rest, 0)?).to_string(), 128),
        _ => return None,
    };
    Some(if cidr || bits != full {
        format!("{addr}/{bits}")
    } else {
        addr
    })
}

fn mac(raw: &[u8]) -> String {
    raw.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// `bit` / `varbit`: the bit length (i32), then the bits, most significant first.
fn bits(raw: &[u8]) -> Option<String> {
    let len = usize::try_from(i32::from_be_bytes(be::<4>(raw, 0)?)).ok()?;
    let bytes = raw.get(4..)?;
    if bytes.len() * 8 < len {
        return None;
    }
    Some(
        (0..len)
            .map(|i| {
                if bytes[i / 8] & (0x80 >> (i % 8)) != 0 {
                    '1'
                } else {
                    '0'
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval_bytes(micros: i64, days: i32, months: i32) -> Vec<u8> {
        let mut v = micros.to_be_bytes().to_vec();
        v.extend(days.to_be_bytes());
        v.extend(months.to_be_bytes());
        v
    }

    #[test]
    fn intervals_as_iso_8601() {
        let cases = [
            ((0, 0, 0), "PT0S"),
            ((0, 3, 14), "P1Y2M3D"),
            ((3_723_500_000, 0, 0), "PT1H2M3.5S"),
            ((-1_000_000, -1, 0), "P-1DT-1S"),
            ((86_400_000_000, 0, 0), "PT24H"),
        ];
        for ((us, d, m), want) in cases {
            assert_eq!(interval(&interval_bytes(us, d, m)).as_deref(), Some(want));
        }
        assert_eq!(interval(&[0; 3]), None);
    }

    #[test]
    fn addresses_times_and_bits() {
        assert_eq!(
            inet(&[2, 32, 0, 4, 10, 0, 0, 1], false).as_deref(),
            Some("10.0.0.1")
        );
        assert_eq!(
            inet(&[2, 8, 1, 4, 10, 0, 0, 0], true).as_deref(),
            Some("10.0.0.0/8")
        );
        assert_eq!(inet(&[9, 8], false), None);
        let mut tz = (13 * 3_600_000_000_i64).to_be_bytes().to_vec();
        tz.extend((-3600_i32).to_be_bytes());
        assert_eq!(timetz(&tz).as_deref(), Some("13:00:00+01"));
        assert_eq!(bits(&[0, 0, 0, 3, 0b1010_0000]).as_deref(), Some("101"));
        assert_eq!(bits(&[0, 0, 0, 9, 0xff]), None);
        assert_eq!(mac(&[8, 0, 0x2b, 1, 2, 3]), "08:00:2b:01:02:03");
    }
}
