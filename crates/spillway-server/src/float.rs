//! `INCRBYFLOAT`'s arithmetic. Redis adds in `long double` (64-bit mantissa) and prints 17
//! decimals with trailing zeros trimmed, so `0.1 + 0.2` is `0.3` there where `f64` gives
//! `0.30000000000000004`. Adding the two decimal strings exactly and rounding to 17 decimals
//! gives Redis's answers for every number it prints exactly; numbers beyond 38 digits (or
//! `inf`) fall back to `f64`.

/// `value + by` as Redis prints it, or `None` if either is not a number or the sum is not
/// finite.
pub fn add(value: &[u8], by: &[u8]) -> Option<String> {
    if let (Some(a), Some(b)) = (Decimal::parse(value), Decimal::parse(by)) {
        if let Some(sum) = a.checked_add(b) {
            return Some(sum.to_string());
        }
    }
    let sum = float(value)? + float(by)?;
    sum.is_finite().then(|| format!("{sum}"))
}

/// Whether `text` is a number Redis accepts (as `strtold` does, without spaces or NaN).
pub fn is_number(text: &[u8]) -> bool {
    float(text).is_some()
}

/// Whether `text` is a number beyond every finite one (`inf`, `-1e400`).
pub fn is_infinite(text: &[u8]) -> bool {
    float(text).is_some_and(f64::is_infinite)
}

/// `text` as a number (as [`is_number`] accepts it).
pub fn parse(text: &[u8]) -> Option<f64> {
    float(text)
}

fn float(text: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(text).ok()?;
    // Rust's parser takes no spaces either; Redis refuses NaN, and so do we.
    let v: f64 = text.parse().ok()?;
    (!v.is_nan()).then_some(v)
}

/// `mantissa / 10^scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Decimal {
    mantissa: i128,
    scale: u32,
}

/// Decimals kept before rounding: more than any input a client sends in practice, and
/// `10^MAX_SCALE` fits an `i128` with room for 10^10 before the point.
const MAX_SCALE: u32 = 28;
/// Decimals Redis prints (`%.17Lf`).
const PRINTED: u32 = 17;

impl Decimal {
    /// `[-+]digits[.digits][e[-+]digits]`, or `None` (also when too long to hold exactly).
    fn parse(text: &[u8]) -> Option<Decimal> {
        let (negative, rest) = match text.first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let (number, exponent) = match rest.iter().position(|&c| c == b'e' || c == b'E') {
            Some(i) => (
                &rest[..i],
                std::str::from_utf8(&rest[i + 1..])
                    .ok()?
                    .parse::<i32>()
                    .ok()?,
            ),
            None => (rest, 0),
        };
        let (whole, fraction) = match number.iter().position(|&c| c == b'.') {
            Some(i) => (&number[..i], &number[i + 1..]),
            None => (number, &number[..0]),
        };
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        let mut mantissa: i128 = 0;
        for &c in whole.iter().chain(fraction) {
            if !c.is_ascii_digit() {
                return None;
            }
            mantissa = mantissa
                .checked_mul(10)?
                .checked_add(i128::from(c - b'0'))?;
        }
        let mut scale = i64::try_from(fraction.len()).ok()? - i64::from(exponent);
        while scale < 0 {
            mantissa = mantissa.checked_mul(10)?;
            scale += 1;
        }
        let mut d = Decimal {
            mantissa: if negative { -mantissa } else { mantissa },
            scale: u32::try_from(scale).ok()?,
        };
        while d.scale > MAX_SCALE {
            if d.mantissa % 10 != 0 {
                return None; // more decimals than we keep: f64 will do
            }
            d.mantissa /= 10;
            d.scale -= 1;
        }
        Some(d)
    }

    fn checked_add(self, other: Decimal) -> Option<Decimal> {
        let scale = self.scale.max(other.scale);
        let widen = |d: Decimal| d.mantissa.checked_mul(10i128.checked_pow(scale - d.scale)?);
        Some(Decimal {
            mantissa: widen(self)?.checked_add(widen(other)?)?,
            scale,
        })
    }
}

impl std::fmt::Display for Decimal {
    /// Rounded to 17 decimals (half away from zero), trailing zeros and point dropped.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut m = self.mantissa;
        let mut scale = self.scale;
        if scale > PRINTED {
            let unit = 10i128.pow(scale - PRINTED);
            let rest = m % unit;
            m /= unit;
            if rest.abs() * 2 >= unit {
                m += rest.signum();
            }
            scale = PRINTED;
        }
        while scale > 0 && m % 10 == 0 {
            m /= 10;
            scale -= 1;
        }
        let digits = m.unsigned_abs().to_string();
        let sign = if m < 0 { "-" } else { "" };
        if scale == 0 {
            return write!(f, "{sign}{digits}");
        }
        let scale = scale as usize;
        let digits = format!("{digits:0>width$}", width = scale + 1);
        let (whole, fraction) = digits.split_at(digits.len() - scale);
        write!(f, "{sign}{whole}.{fraction}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(a: &str, b: &str) -> Option<String> {
        add(a.as_bytes(), b.as_bytes())
    }

    #[test]
    fn sums_print_as_redis_prints_them() {
        assert_eq!(sum("10.50", "0.1").as_deref(), Some("10.6"));
        assert_eq!(sum("0.1", "0.2").as_deref(), Some("0.3"));
        assert_eq!(sum("5.0e3", "2.0e2").as_deref(), Some("5200"));
        assert_eq!(sum("3", "-5").as_deref(), Some("-2"));
        assert_eq!(sum("0", "-0.0001").as_deref(), Some("-0.0001"));
        assert_eq!(sum("1", ".5").as_deref(), Some("1.5"));
        assert_eq!(sum("1", "5.").as_deref(), Some("6"));
        assert_eq!(sum("0", "0.000000000000000001").as_deref(), Some("0"));
        assert_eq!(
            sum("0", "0.000000000000000005").as_deref(),
            Some("0.00000000000000001")
        );
        assert_eq!(
            sum("-0", "-0.000000000000000005").as_deref(),
            Some("-0.00000000000000001")
        );
        assert_eq!(
            sum("1e30", "1").as_deref(),
            Some("1000000000000000000000000000001")
        );
    }

    #[test]
    fn what_is_not_a_finite_number_is_refused() {
        for bad in [
            "", "abc", " 1", "1 ", "1.2.3", "nan", "0x10", "1e", "--1", ".",
        ] {
            assert_eq!(sum(bad, "1"), None, "{bad:?}");
            assert_eq!(sum("1", bad), None, "{bad:?}");
        }
        assert_eq!(sum("inf", "1"), None);
        assert_eq!(sum("1.7e308", "1.7e308"), None);
        assert!(is_number(b"1e400") && is_number(b"-3.5"));
    }

    #[test]
    fn huge_numbers_fall_back_to_f64() {
        assert_eq!(
            sum("1e300", "1").as_deref(),
            Some(format!("{}", 1e300).as_str())
        );
    }
}
