//! Sorted-set scores: read as Redis reads them (C's `strtod`), kept as keys whose byte order
//! is their numeric order, and printed as `ZSCAN` prints them. (Replies print a score as
//! every double: `resp::format_double`, `%.17g`.)
//!
//! **Reading.** A score or weight (`ZADD`, `ZINCRBY`, `WEIGHTS`) is read as Redis's
//! `string2d`: the whole argument is one `strtod` number — decimal, hexadecimal (`0x1p-2`),
//! `inf` or `infinity` in any case, with a sign or not — not NaN, not out of range (`1e400`,
//! `1e-400`: `strtod`'s `ERANGE` to infinity or zero; a subnormal result is taken), and with no
//! space before it. A bound of a score range (`ZRANGEBYSCORE`, `ZCOUNT`) is read as Redis's
//! `zslParseRange` reads it, with plain `strtod`: spaces before it are skipped, a number out of
//! range is infinity or zero, the text ends at its first NUL, and an empty bound is 0 — `(`
//! alone is "above 0".
//!
//! **Keeping.** [`ordered`] turns a score into 8 big-endian bytes whose byte order is the
//! scores' order, for the score index (`encoding`): `-0.0` and `0.0`, which Redis holds equal,
//! are one key.

/// The score `score` as 8 bytes whose byte order is the numbers' order, `-inf` first and
/// `inf` last: the sign bit flipped for a positive number, every bit for a negative one. `-0.0`
/// is kept as `0.0` (Redis compares them equal; a small sorted set keeps both as 0). NaN is
/// never a score.
pub fn ordered(score: f64) -> [u8; 8] {
    let bits = normal(score).to_bits();
    let key = if bits >> 63 == 0 {
        bits | 1 << 63
    } else {
        !bits
    };
    key.to_be_bytes()
}

/// The score whose [`ordered`] key is `key`.
pub fn from_ordered(key: [u8; 8]) -> f64 {
    let key = u64::from_be_bytes(key);
    let bits = if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    };
    f64::from_bits(bits)
}

/// The first key past every key of scores up to `score` (its [`ordered`] key plus one).
pub fn ordered_after(score: f64) -> [u8; 8] {
    // The largest key, +inf's, is 0xfff0...: adding one never overflows.
    (u64::from_be_bytes(ordered(score)) + 1).to_be_bytes()
}

/// `score` with `-0.0` as `0.0`: what is stored.
pub fn normal(score: f64) -> f64 {
    if score == 0.0 {
        0.0
    } else {
        score
    }
}

/// A member's stored score (the value of its record: the `f64`'s bits, big-endian); `None`
/// if the value is not 8 bytes.
pub fn decode(value: &[u8]) -> Option<f64> {
    Some(f64::from_bits(u64::from_be_bytes(value.try_into().ok()?)))
}

/// A score as its member's record holds it.
pub fn encode(score: f64) -> [u8; 8] {
    normal(score).to_bits().to_be_bytes()
}

/// A score or weight as Redis's `string2d` reads it (see the module's doc), or `None`.
pub fn parse(text: &[u8]) -> Option<f64> {
    if text.first().is_none_or(|c| is_c_space(*c)) {
        return None;
    }
    match strtod(text)? {
        (_, Range::Over | Range::Under) => None,
        (value, Range::In) => Some(value),
    }
}

/// A bound of a score range (without its `(`) as `zslParseRange` reads it (see the module's
/// doc), or `None`.
pub fn parse_bound(text: &[u8]) -> Option<f64> {
    // A C string: it ends at its first NUL.
    let text = &text[..text.iter().position(|&c| c == 0).unwrap_or(text.len())];
    if text.is_empty() {
        return Some(0.0); // strtod reads nothing and stops at the end: taken, as 0
    }
    let start = text.iter().position(|&c| !is_c_space(c))?;
    strtod(&text[start..]).map(|(value, _)| value)
}

/// How a number read compares with the doubles' range (`strtod`'s `ERANGE`).
#[derive(Debug, PartialEq)]
enum Range {
    In,
    /// Beyond the largest double: read as infinity.
    Over,
    /// A non-zero number below the smallest double: read as zero.
    Under,
}

/// C's `isspace` in the C locale.
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `text`, all of it, as glibc's `strtod` reads a number (no leading spaces): the value and
/// whether it was out of range; `None` if `text` is not one number, or is NaN.
fn strtod(text: &[u8]) -> Option<(f64, Range)> {
    let (negative, body) = match text.first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    let (value, range) = if lower == b"inf" || lower == b"infinity" {
        (f64::INFINITY, Range::In)
    } else if lower.starts_with(b"0x") {
        hex(&lower[2..])?
    } else {
        decimal(body)?
    };
    Some((if negative { -value } else { value }, range))
}

/// `digits[.digits][e[+-]digits]` (at least one digit before the exponent), correctly rounded.
fn decimal(text: &[u8]) -> Option<(f64, Range)> {
    let mantissa_end = text
        .iter()
        .position(|&c| c == b'e' || c == b'E')
        .unwrap_or(text.len());
    let (mantissa, exponent) = text.split_at(mantissa_end);
    let mut digits = 0;
    let mut nonzero = false;
    let mut points = 0;
    for &c in mantissa {
        match c {
            b'0'..=b'9' => {
                digits += 1;
                nonzero |= c != b'0';
            }
            b'.' => points += 1,
            _ => return None,
        }
    }
    if digits == 0 || points > 1 {
        return None;
    }
    if let Some(exp) = exponent.get(1..) {
        let exp = exp
            .strip_prefix(b"+")
            .or(exp.strip_prefix(b"-"))
            .unwrap_or(exp);
        if exp.is_empty() || !exp.iter().all(u8::is_ascii_digit) {
            return None;
        }
    }
    // Checked above: ASCII, and a syntax Rust's parser reads (correctly rounded, as glibc's).
    let value: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    let range = match value {
        v if v.is_infinite() => Range::Over,
        0.0 if nonzero => Range::Under,
        _ => Range::In,
    };
    Some((value, range))
}

/// A hexadecimal number after its `0x`: `hexdigits[.hexdigits][p[+-]digits]`, lower case.
/// Exact up to 16 significant hex digits (more than a double holds); past those, the rest
/// only rounds as if they were zeros.
fn hex(text: &[u8]) -> Option<(f64, Range)> {
    let mantissa_end = text.iter().position(|&c| c == b'p').unwrap_or(text.len());
    let (mantissa, exponent) = text.split_at(mantissa_end);
    let mut bits: u64 = 0;
    let mut exp2: i64 = 0;
    let (mut digits, mut points, mut seen_point) = (0, 0, false);
    for &c in mantissa {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'.' => {
                points += 1;
                seen_point = true;
                continue;
            }
            _ => return None,
        };
        digits += 1;
        if bits >> 60 == 0 {
            bits = bits << 4 | u64::from(d);
            if seen_point {
                exp2 -= 4;
            }
        } else if !seen_point {
            exp2 += 4; // a digit past the 16 kept: it only scales
        }
    }
    if digits == 0 || points > 1 {
        return None;
    }
    if let Some(exp) = exponent.get(1..) {
        let (negative, digits) = match exp.first() {
            Some(b'-') => (true, &exp[1..]),
            Some(b'+') => (false, &exp[1..]),
            _ => (false, exp),
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let mut e: i64 = 0;
        for &c in digits {
            e = (e * 10 + i64::from(c - b'0')).min(1 << 20); // far past any double
        }
        exp2 += if negative { -e } else { e };
    }
    let value = scale(bits as f64, exp2);
    let range = match value {
        v if v.is_infinite() => Range::Over,
        0.0 if bits != 0 => Range::Under,
        _ => Range::In,
    };
    Some((value, range))
}

/// `x * 2^exp`, by steps that stay within the doubles' exponents.
fn scale(mut x: f64, mut exp: i64) -> f64 {
    while exp > 1000 {
        x *= 2f64.powi(1000);
        exp -= 1000;
    }
    while exp < -1000 {
        x *= 2f64.powi(-1000);
        exp += 1000;
    }
    x * 2f64.powi(exp as i32)
}

/// A score as `ZSCAN` prints it, as Redis 7.0 does for a small sorted set (a listpack, which
/// keeps a whole score of at most 2^62 as an integer): `3`, `100000000000000000`,
/// `0.10000000000000001`, `inf`. (A large one, a skiplist, prints `%.17g`: `1e+17`; the two
/// differ only for whole scores from 10^17 to 2^62.)
pub fn scan_text(score: f64) -> String {
    const LIMIT: f64 = (i64::MAX / 2) as f64; // 2^62, as Redis's double2ll compares
    if score.fract() == 0.0 && (-LIMIT..=LIMIT).contains(&score) {
        return (score as i64).to_string();
    }
    crate::resp::format_double(score)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn scores_read_as_redis_reads_them() {
        let ok = |t: &str, v: f64| assert_eq!(parse(t.as_bytes()), Some(v), "{t:?}");
        ok("1", 1.0);
        ok("-1.5", -1.5);
        ok("+.5", 0.5);
        ok("5.", 5.0);
        ok("1e3", 1000.0);
        ok("1E+3", 1000.0);
        ok("inf", f64::INFINITY);
        ok("+inf", f64::INFINITY);
        ok("-INF", f64::NEG_INFINITY);
        ok("Infinity", f64::INFINITY);
        ok("0x10", 16.0);
        ok("0X1P-2", 0.25);
        ok("-0x.8p1", -1.0);
        ok("0x1.8", 1.5);
        ok("4e-324", 5e-324); // subnormal: ERANGE, but not zero
        ok("0e-999", 0.0);
        for bad in [
            "", " 1", "1 ", "nan", "-nan", "NaN", "1e400", "-1e400", "1e-400", "0x", "1e", "e1",
            ".", "-", "1.2.3", "infinit", "0x1p", "1_0", "1\0",
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn range_bounds_read_as_strtod_reads_them() {
        let ok = |t: &[u8], v: f64| assert_eq!(parse_bound(t), Some(v), "{t:?}");
        ok(b"", 0.0);
        ok(b" 2", 2.0);
        ok(b"\t-inf", f64::NEG_INFINITY);
        ok(b"1e400", f64::INFINITY);
        ok(b"1e-400", 0.0);
        ok(b"3\0junk", 3.0);
        ok(b"0x2", 2.0);
        for bad in [&b" "[..], b"2 ", b"x", b"nan", b"(1", b"-"] {
            assert_eq!(parse_bound(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn zscan_prints_whole_scores_as_integers_up_to_2_pow_62() {
        assert_eq!(scan_text(3.0), "3");
        assert_eq!(scan_text(-0.0), "0");
        assert_eq!(scan_text(1e17), "100000000000000000");
        assert_eq!(scan_text(123456789012345678.0), "123456789012345680");
        assert_eq!(scan_text(4611686018427387904.0), "4611686018427387904");
        assert_eq!(scan_text(9223372036854775808.0), "9.2233720368547758e+18");
        assert_eq!(scan_text(0.1), "0.10000000000000001");
        assert_eq!(scan_text(f64::INFINITY), "inf");
        assert_eq!(scan_text(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn ordered_keys_of_the_edges() {
        let order = [
            f64::NEG_INFINITY,
            -f64::MAX,
            -1.0,
            -f64::MIN_POSITIVE,
            -5e-324,
            0.0,
            5e-324,
            f64::MIN_POSITIVE,
            1.0,
            f64::MAX,
            f64::INFINITY,
        ];
        for pair in order.windows(2) {
            assert!(ordered(pair[0]) < ordered(pair[1]), "{pair:?}");
            assert!(ordered_after(pair[0]) <= ordered(pair[1]), "{pair:?}");
        }
        for s in order {
            assert_eq!(from_ordered(ordered(s)), s);
            assert_eq!(decode(&encode(s)), Some(s));
        }
        assert_eq!(ordered(-0.0), ordered(0.0));
        assert_eq!(from_ordered(ordered(-0.0)).to_bits(), 0.0f64.to_bits());
        assert_eq!(encode(-0.0), encode(0.0));
    }

    /// Any double but NaN, with the infinities and zeros often.
    fn score() -> impl Strategy<Value = f64> {
        prop_oneof![
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
            1 => Just(0.0),
            1 => Just(-0.0),
            4 => any::<u64>().prop_map(f64::from_bits).prop_filter("not NaN", |f| !f.is_nan()),
            4 => any::<i32>().prop_map(f64::from),
        ]
    }

    proptest! {
        #[test]
        fn byte_order_is_numeric_order(a in score(), b in score()) {
            let (ka, kb) = (ordered(a), ordered(b));
            prop_assert_eq!(ka.cmp(&kb), a.partial_cmp(&b).unwrap());
            prop_assert_eq!(from_ordered(ka), normal(a));
            // Every key of a score above `a` is at or past `ordered_after(a)`.
            prop_assert_eq!(b > a, ordered_after(a) <= kb);
        }

        #[test]
        fn printed_scores_read_back(s in score()) {
            let text = crate::resp::format_double(s);
            prop_assert_eq!(parse(text.as_bytes()).map(f64::to_bits), Some(s.to_bits()));
            prop_assert_eq!(parse(scan_text(s).as_bytes()), Some(normal(s)));
        }
    }
}
