//! The x87 80-bit extended float, which is what Redis's `long double` is on x86-64: a 64-bit
//! mantissa, exponents down to subnormals of `2^-16445` and up to about `1.19e4932`. Rust has
//! no such type, so each step Redis takes is done here exactly and rounded as the hardware
//! and glibc round: `strtold` (the nearest value, ties to even), the sum (the same), and
//! `printf("%.17Lf")` (the exact binary value rounded to 17 decimals, ties to even).

use std::cmp::Ordering;

use super::big::Big;

/// The smallest exponent: `mantissa × 2^MIN_EXP` with `mantissa = 1` is the smallest
/// subnormal, with `mantissa = 2^63` the smallest normal number.
const MIN_EXP: i64 = -16445;
/// The largest exponent of a 64-bit mantissa: `(2^64 - 1) × 2^MAX_EXP` is the largest value.
const MAX_EXP: i64 = 16320;
/// The bits of the mantissa.
const MANTISSA: u64 = 64;

/// A finite value or an infinity, as the x87 holds it (its NaNs are never kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extended {
    /// `±mantissa × 2^exponent`; a zero mantissa is a (signed) zero.
    Finite {
        negative: bool,
        mantissa: u64,
        exponent: i64,
    },
    Infinite {
        negative: bool,
    },
}

use Extended::{Finite, Infinite};

impl Extended {
    /// `±q × 2^e` rounded to the nearest value (ties to the even mantissa): to 64 bits, or to
    /// fewer among subnormals; an infinity past the largest value. The result is normalized
    /// (the mantissa's top bit set, or the exponent the smallest), so that equal values are
    /// equal.
    fn round(negative: bool, q: &Big, e: i64) -> Extended {
        if q.is_zero() {
            return Finite {
                negative,
                mantissa: 0,
                exponent: 0,
            };
        }
        // The exponent of the lowest bit kept.
        let low = (e + q.bits() as i64 - MANTISSA as i64).max(MIN_EXP);
        if low > MAX_EXP {
            return Infinite { negative };
        }
        let dropped = low - e;
        if dropped <= 0 {
            // Exact: the mantissa shifted up as far as it goes.
            let mantissa = (q.bits_from(0) as u64) << dropped.unsigned_abs();
            return Finite {
                negative,
                mantissa,
                exponent: low,
            };
        }
        let dropped = dropped as u64;
        let mut mantissa = q.bits_from(dropped) as u64;
        let half = q.bit(dropped - 1);
        let more = q.any_below(dropped - 1);
        let mut exponent = low;
        if half && (more || mantissa & 1 == 1) {
            mantissa = match mantissa.checked_add(1) {
                Some(m) => m,
                None => {
                    exponent += 1;
                    1 << 63
                }
            };
            if exponent > MAX_EXP {
                return Infinite { negative };
            }
        }
        Finite {
            negative,
            mantissa,
            exponent,
        }
    }

    /// `±num / den × 2^e` (`den` not zero), rounded as [`round`](Self::round) does.
    fn round_ratio(negative: bool, num: &Big, den: &Big, e: i64) -> Extended {
        if num.is_zero() {
            return Extended::round(negative, num, e);
        }
        // Scale so that the quotient has 66 or 67 bits: 64, the rounding bit, and one more
        // below it, under which the remainder's bit (`sticky`) goes.
        let shift = den.bits() as i64 - num.bits() as i64 + 66;
        let (mut num, mut den) = match shift {
            s if s >= 0 => (num.shl(s as u64), den.shl(67)),
            s => (num.clone(), den.shl((67 - s) as u64)),
        };
        let mut q: u128 = 0;
        for bit in (0..=67).rev() {
            if num >= den {
                num.sub_assign(&den);
                q |= 1 << bit;
            }
            den.halve();
        }
        let sticky = u128::from(!num.is_zero());
        Extended::round(negative, &Big::from_u128(q << 1 | sticky), e - shift - 1)
    }

    /// What glibc's `strtold` makes of all of `text`, as Redis's `string2ld` takes it: `None`
    /// where Redis refuses the text — not wholly a number, NaN, a finite number too large
    /// (it would be infinite) or too small (it would be zero), or 5 KiB long or longer.
    /// `inf` and `infinity` are infinite numbers; hexadecimal floats (`0x1.8p3`) are numbers.
    pub fn parse(text: &[u8]) -> Option<Extended> {
        if text.is_empty() || text.len() >= 5 * 1024 {
            return None;
        }
        let (negative, rest) = match text[0] {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let lower = rest.to_ascii_lowercase();
        if lower == b"inf" || lower == b"infinity" {
            return Some(Infinite { negative });
        }
        let value = match lower.strip_prefix(b"0x") {
            Some(hex) => parse_hex(negative, hex)?,
            None => parse_decimal(negative, rest)?,
        };
        match value {
            // Out of range: strtold says ERANGE, and Redis refuses it.
            Infinite { .. } => None,
            Finite { mantissa: 0, .. } if !zero_digits(rest) => None,
            finite => Some(finite),
        }
    }

    /// `self + other`, rounded as the x87 rounds; `None` for NaN (`inf + -inf`).
    pub fn add(self, other: Extended) -> Option<Extended> {
        let (a, b) = match (self, other) {
            (Infinite { negative: x }, Infinite { negative: y }) if x != y => return None,
            (inf @ Infinite { .. }, _) | (_, inf @ Infinite { .. }) => return Some(inf),
            (Finite { mantissa: 0, .. }, Finite { mantissa: 0, .. }) => {
                // -0 + -0 is -0; any other sum of zeros +0.
                let negative = self.is_negative() && other.is_negative();
                return Some(Finite {
                    negative,
                    mantissa: 0,
                    exponent: 0,
                });
            }
            (Finite { mantissa: 0, .. }, x) | (x, Finite { mantissa: 0, .. }) => return Some(x),
            (a, b) => (a, b),
        };
        let (
            Finite {
                negative: na,
                mantissa: ma,
                exponent: ea,
            },
            Finite {
                negative: nb,
                mantissa: mb,
                exponent: eb,
            },
        ) = (a, b)
        else {
            unreachable!("infinities are handled above")
        };
        // Both are normalized: one whose exponent is 67 below the other's is below a quarter
        // of the other's unit in the last place (its half below a power of two), and cannot
        // move the rounded sum off it.
        if ea - eb >= 67 {
            return Some(a);
        }
        if eb - ea >= 67 {
            return Some(b);
        }
        // Both on the smaller exponent, as integers: exact.
        let e = ea.min(eb);
        let x = Big::from_u128(u128::from(ma)).shl((ea - e) as u64);
        let y = Big::from_u128(u128::from(mb)).shl((eb - e) as u64);
        if na == nb {
            return Some(Extended::round(na, &x.add(&y), e));
        }
        Some(match x.cmp(&y) {
            // An exact zero is +0 when rounding to nearest.
            Ordering::Equal => Finite {
                negative: false,
                mantissa: 0,
                exponent: 0,
            },
            Ordering::Greater => {
                let mut d = x;
                d.sub_assign(&y);
                Extended::round(na, &d, e)
            }
            Ordering::Less => {
                let mut d = y;
                d.sub_assign(&x);
                Extended::round(nb, &d, e)
            }
        })
    }

    fn is_negative(self) -> bool {
        match self {
            Finite { negative, .. } | Infinite { negative } => negative,
        }
    }

    /// As Redis's `ld2string(.., LD_STR_HUMAN)` prints it: `printf("%.17Lf")`, then the
    /// trailing zeros of the fraction dropped (and its point, if nothing is left of it), and
    /// `-0` as `0`. `None` for an infinity.
    pub fn to_human(self) -> Option<String> {
        let Finite {
            negative,
            mantissa,
            exponent,
        } = self
        else {
            return None;
        };
        const DECIMALS: u32 = 17;
        const SCALE: u128 = 10u128.pow(DECIMALS);
        let (whole, fraction) = if exponent >= 0 {
            let whole = Big::from_u128(u128::from(mantissa)).shl(exponent as u64);
            (whole.to_decimal(), 0)
        } else {
            let k = exponent.unsigned_abs();
            let (whole, bits) = if k >= 64 {
                (0, mantissa)
            } else {
                (mantissa >> k, mantissa & ((1 << k) - 1))
            };
            // The fraction is bits / 2^k: its 17 decimals are bits × 10^17 / 2^k (bits × 10^17
            // < 2^121), rounded to nearest, ties to even, as glibc's printf rounds.
            let scaled = u128::from(bits) * SCALE;
            let mut digits = if k >= 128 { 0 } else { scaled >> k };
            let rest = if k >= 128 {
                scaled
            } else {
                scaled & ((1 << k) - 1)
            };
            // The half of 2^k, against the rest: past 2^127 the rest (< 2^121) is below it.
            let up = match (k <= 127).then(|| rest.cmp(&(1 << (k - 1)))) {
                Some(Ordering::Greater) => true,
                Some(Ordering::Equal) => digits & 1 == 1,
                _ => false,
            };
            digits += u128::from(up);
            let whole = u128::from(whole) + digits / SCALE; // a carry into the whole part
            (whole.to_string(), digits % SCALE)
        };
        let mut out = String::new();
        if negative {
            out.push('-');
        }
        out.push_str(&whole);
        if fraction != 0 {
            let decimals = format!("{fraction:017}");
            out.push('.');
            out.push_str(decimals.trim_end_matches('0'));
        }
        if out == "-0" {
            out = "0".into();
        }
        Some(out)
    }
}

/// Whether the digits of a number (before any exponent) are all zeros: a zero read from them
/// is a zero, not a number too small.
fn zero_digits(text: &[u8]) -> bool {
    let lower = text.to_ascii_lowercase();
    let (digits, exponent) = match lower.strip_prefix(b"0x") {
        Some(hex) => (hex, b'p'),
        None => (&lower[..], b'e'),
    };
    let end = digits
        .iter()
        .position(|&c| c == exponent)
        .unwrap_or(digits.len());
    digits[..end].iter().all(|&c| c == b'0' || c == b'.')
}

/// The digits of `text` up to `stop` (its exponent's letter) with at most one point among
/// them, in base `radix`: their value as an integer, how many came after the point, and the
/// rest of the text (the exponent and what follows); `None` if there is no digit.
fn digits(text: &[u8], radix: u32, stop: u8) -> Option<(Big, u64, &[u8])> {
    // Digits go into `n` a chunk at a time: 9 decimal or 7 hexadecimal digits fit a limb.
    let per_chunk = if radix == 10 { 9 } else { 7 };
    let mut n = Big::default();
    let (mut chunk, mut in_chunk) = (0u32, 0);
    let (mut count, mut after_point, mut point) = (0, 0u64, false);
    let mut i = 0;
    while let Some(&c) = text.get(i) {
        match (c as char).to_digit(radix) {
            Some(d) => {
                chunk = chunk * radix + d;
                in_chunk += 1;
                if in_chunk == per_chunk {
                    n.mul_add_small(radix.pow(in_chunk), chunk);
                    (chunk, in_chunk) = (0, 0);
                }
                count += 1;
                after_point += u64::from(point);
            }
            None if c == b'.' && !point => point = true,
            None => break,
        }
        i += 1;
    }
    n.mul_add_small(radix.pow(in_chunk), chunk);
    let rest = &text[i..];
    let rest_ok = rest.is_empty() || rest[0].to_ascii_lowercase() == stop;
    (count > 0 && rest_ok).then_some((n, after_point, rest))
}

/// An exponent after its letter: `[-+]digits`, the whole rest of the text. Beyond ±10^9 it
/// is held at that: the value is out of range either way.
fn exponent(rest: &[u8]) -> Option<i64> {
    let Some((_, text)) = rest.split_first() else {
        return Some(0);
    };
    let (sign, digits) = match text.first() {
        Some(b'-') => (-1, &text[1..]),
        Some(b'+') => (1, &text[1..]),
        _ => (1, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits.iter().fold(0i64, |n, &d| {
        (n * 10 + i64::from(d - b'0')).min(1_000_000_000)
    });
    Some(sign * n)
}

/// `digits[.digits][e[-+]digits]`, rounded to the nearest value.
fn parse_decimal(negative: bool, text: &[u8]) -> Option<Extended> {
    let (n, after_point, rest) = digits(text, 10, b'e')?;
    let e10 = exponent(rest)? - after_point as i64;
    if n.is_zero() {
        return Some(Extended::round(negative, &n, 0));
    }
    // The value is below 10^magnitude and at least a tenth of it.
    let magnitude = significant_digits(&n) + e10;
    if magnitude > 4936 {
        return Some(Infinite { negative }); // at least 10^4934: past the largest
    }
    if magnitude < -4951 {
        // Below 10^-4952, under half the smallest subnormal (3.6e-4951): zero.
        return Some(Extended::round(negative, &Big::default(), 0));
    }
    // n × 10^e10 = n × 5^e10 × 2^e10.
    Some(if e10 >= 0 {
        let mut n = n;
        n.mul_pow5(e10 as u64);
        Extended::round(negative, &n, e10)
    } else {
        let mut den = Big::from_u128(1);
        den.mul_pow5(e10.unsigned_abs());
        Extended::round_ratio(negative, &n, &den, e10)
    })
}

/// `hexdigits[.hexdigits][p[-+]digits]` (after `0x`): exact but for the rounding.
fn parse_hex(negative: bool, text: &[u8]) -> Option<Extended> {
    let (n, after_point, rest) = digits(text, 16, b'p')?;
    let e2 = exponent(rest)? - 4 * after_point as i64;
    Some(Extended::round(negative, &n, e2))
}

/// At least as many as the decimal digits of `n` (not zero), and at most two more: all a
/// range check needs.
fn significant_digits(n: &Big) -> i64 {
    (n.bits() as f64 * std::f64::consts::LOG10_2).ceil() as i64 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Option<Extended> {
        Extended::parse(text.as_bytes())
    }

    /// `±mantissa × 2^exponent`, normalized.
    fn finite(negative: bool, mantissa: u64, exponent: i64) -> Option<Extended> {
        let mantissa = Big::from_u128(u128::from(mantissa));
        Some(Extended::round(negative, &mantissa, exponent))
    }

    #[test]
    fn exact_numbers_parse_to_themselves() {
        assert_eq!(parse("1"), finite(false, 1, 0));
        assert_eq!(parse("-2.5"), finite(true, 5, -1));
        assert_eq!(parse("0x1.8p3"), finite(false, 0x18, -1));
        assert_eq!(parse("0x1p-16445"), finite(false, 1, MIN_EXP));
        assert_eq!(parse("-0"), finite(true, 0, 0));
        assert_eq!(parse("0e999999999999"), finite(false, 0, 0));
        assert_eq!(parse("-inf"), Some(Infinite { negative: true }));
    }

    #[test]
    fn inexact_numbers_round_to_nearest_even() {
        // 0.1 = 0xc.ccc...p-7: the 64-bit mantissa 0xcccccccccccccccd (rounded up).
        assert_eq!(parse("0.1"), finite(false, 0xcccc_cccc_cccc_cccd, -67));
        // 2^64 + 1 is a tie between 2^64 and 2^64 + 2: the even mantissa, 2^63 × 2.
        assert_eq!(parse("18446744073709551617"), finite(false, 1 << 63, 1));
        assert_eq!(
            parse("18446744073709551619"),
            finite(false, (1 << 63) + 2, 1)
        );
        // Half the smallest subnormal is a tie with zero: zero, which Redis refuses.
        assert_eq!(parse("0x1p-16446"), None);
        assert_eq!(parse("0x1.8p-16446"), finite(false, 1, MIN_EXP));
        assert_eq!(parse("0x1.ffffffffffffffffp0"), finite(false, 1 << 63, -62));
    }

    #[test]
    fn what_strtold_would_not_take_whole_is_refused() {
        for bad in [
            "", "-", "+", ".", "e5", ".e5", "1e", "1e+", "0x", "0xg", "0x.p1", "0x1p", "nan",
            "inf ", " 1", "1 ", "1\0", "1.2.3", "--1", "1_0", "infin", "1e5000", "1e-5000",
            "-1e-4951",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        assert!(parse(&"1".repeat(4000)).is_some());
        assert_eq!(parse(&format!("1.{}", "0".repeat(5118))), None, "5 KiB");
        assert!(parse(&format!("1.{}", "0".repeat(5117))).is_some());
    }

    #[test]
    fn sums_round_and_overflow_as_the_x87() {
        let sum = |a: &str, b: &str| parse(a).unwrap().add(parse(b).unwrap());
        assert_eq!(sum("1", "-1"), finite(false, 0, 0));
        assert_eq!(sum("-0", "-0"), finite(true, 0, 0));
        assert_eq!(sum("inf", "-inf"), None);
        assert_eq!(
            sum("0x1.fffffffffffffffep16383", "0x1p16320"),
            Some(Infinite { negative: false })
        );
        // 1 + 2^-64 is a tie: back to 1. 1 + 2^-64 + 2^-100 is past it: up.
        assert_eq!(sum("1", "0x1p-64"), finite(false, 1 << 63, -63));
        let up = sum("1", "0x1.000000001p-64").unwrap();
        assert_eq!(
            up,
            Finite {
                negative: false,
                mantissa: (1 << 63) + 1,
                exponent: -63
            }
        );
    }

    #[test]
    fn printing_rounds_the_exact_value_to_seventeen_decimals() {
        let human = |text: &str| parse(text).unwrap().to_human().unwrap();
        assert_eq!(human("0.1"), "0.1");
        assert_eq!(human("2.5"), "2.5");
        assert_eq!(human("-0"), "0");
        assert_eq!(human("-0.000000000000000001"), "0");
        // 2^-18 = 0.000003814697265625 exactly: a tie at the 18th decimal, to even.
        assert_eq!(human("0x1p-18"), "0.00000381469726562");
        assert_eq!(human("0x3p-18"), "0.00001144409179688");
        assert_eq!(human("0x1p64"), "18446744073709551616");
        assert_eq!(human("0x1p-16445"), "0");
        assert_eq!(human("0.999999999999999999"), "1");
    }
}
