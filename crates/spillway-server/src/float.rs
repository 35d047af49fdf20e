//! `INCRBYFLOAT`'s arithmetic, as Redis 7.0 does it on x86-64: both numbers read by
//! `strtold` into `long double` (the x87's 80-bit float, 64-bit mantissa), added there, and
//! the sum printed with `%.17Lf`, trailing zeros trimmed. So `0.1 + 0.2` is `0.3` (the
//! 80-bit sum is within 17 decimals of it) where `f64` gives `0.30000000000000004`, and
//! `0.000003814697265625` (2^-18, exact in binary) prints `0.00000381469726562`, its tie at
//! the 18th decimal rounded to even. Rust has no 80-bit float: `extended` emulates each of
//! those steps exactly on integers (`big`), so that every finite sum is Redis's to the digit.

mod big;
mod extended;

use extended::Extended;

/// `value + by` as Redis prints it, or `None` if either is not a number or the sum is not
/// finite.
pub fn add(value: &[u8], by: &[u8]) -> Option<String> {
    let sum = Extended::parse(value)?.add(Extended::parse(by)?)?;
    sum.to_human()
}

/// Whether `text` is a number Redis accepts (as its `string2ld`: all of it a number for
/// `strtold`, finite and in range, or an infinity; not NaN, no spaces, under 5 KiB).
pub fn is_number(text: &[u8]) -> bool {
    Extended::parse(text).is_some()
}

/// Whether `text` is a number Redis takes as infinite (`inf`, `-Infinity`): HINCRBYFLOAT
/// refuses such an increment. A finite number past the range is no number at all (`1e5000`:
/// `strtold` says ERANGE, and Redis refuses it as not a float).
pub fn is_infinite(text: &[u8]) -> bool {
    matches!(Extended::parse(text), Some(Extended::Infinite { .. }))
}

/// `text` as an `f64` (a blocking command's timeout): Rust's parser, which takes no spaces
/// either; NaN refused, as Redis refuses it.
pub fn parse(text: &[u8]) -> Option<f64> {
    let v: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    (!v.is_nan()).then_some(v)
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
    }

    /// Sums whose answers were taken from redis-server 7.0.15 on x86-64
    /// (`SET k a`, `INCRBYFLOAT k b`).
    #[test]
    fn sums_as_the_real_redis_answered_them() {
        let table: &[(&str, &str, &str)] = &[
            // Ties at the 18th decimal (2^-18 and its multiples): to even.
            ("0", "0.000003814697265625", "0.00000381469726562"),
            ("0", "0.000011444091796875", "0.00001144409179688"),
            ("0", "0.000019073486328125", "0.00001907348632812"),
            ("0", "-0.000003814697265625", "-0.00000381469726562"),
            ("0", "5e-18", "0"),
            ("0", "-5e-18", "0"),
            ("0", "6e-18", "0.00000000000000001"),
            ("0", "1e-17", "0.00000000000000001"),
            ("-0", "-0", "0"),
            ("-0.000000000000000001", "-0", "0"),
            // strtold's other forms.
            ("0", "0x10", "16"),
            ("0", "0x1p-3", "0.125"),
            ("1", "0x1.8P+1", "4"),
            ("1", "0x.8", "1.5"),
            ("1", "0x1.", "2"),
            ("0", "1.e5", "100000"),
            ("1", "+.5", "1.5"),
            // The range's ends: the smallest subnormal rounds up from 3e-4951 and from
            // 0x1.8p-16446 (1.5 times half of it).
            ("1", "3e-4951", "1"),
            ("1", "0x1p-16445", "1"),
            ("1", "0x1.8p-16446", "1"),
            ("0", &"1".repeat(4932), ""),
        ];
        for &(a, b, want) in table {
            if want.is_empty() {
                continue;
            }
            assert_eq!(sum(a, b).as_deref(), Some(want), "{a} + {b}");
        }
        // Their long results: the exact binary value, all its digits.
        let big = sum("0", "1e4932").unwrap();
        assert!(
            big.starts_with("10000000000000000000060189493879638913238377742545331147737850413525330194866087224075333277794331")
                && big.len() == 4933,
            "{big}"
        );
        let ones = sum("0", &"1".repeat(4932)).unwrap();
        assert!(ones.starts_with("11111111111111111111446719466520585982463675400613781985"));
        let tenth = sum("0", &format!("0.{}", "1".repeat(5100))).unwrap();
        assert_eq!(tenth, "0.11111111111111111");
    }

    #[test]
    fn what_is_not_a_finite_number_is_refused() {
        for bad in [
            "", "abc", " 1", "1 ", "1.2.3", "nan", "0x", "1e", "--1", ".", "1e5000", "1e-5000",
            "1e-4951", "\0", "2\0abc",
        ] {
            assert_eq!(sum(bad, "1"), None, "{bad:?}");
            assert_eq!(sum("1", bad), None, "{bad:?}");
            assert!(!is_number(bad.as_bytes()), "{bad:?}");
        }
        assert_eq!(sum("inf", "1"), None);
        assert_eq!(sum("infinity", "-INF"), None);
        assert_eq!(
            sum(
                "1.18973149535723176502e+4932",
                "1.18973149535723176502e+4932"
            ),
            None
        );
        assert!(is_number(b"1e400") && is_number(b"-3.5") && is_number(b"inf"));
        assert!(is_infinite(b"inf") && is_infinite(b"-Infinity") && is_infinite(b"+INF"));
        assert!(!is_infinite(b"1e5000") && !is_infinite(b"1e400") && !is_infinite(b"nan"));
        assert!(is_number(b"1.18973149535723176502e+4932"));
        assert!(
            !is_number(b"1.18973149535723176508e+4932"),
            "past the largest"
        );
        assert!(
            !is_number(format!("1.{}", "0".repeat(5118)).as_bytes()),
            "5 KiB"
        );
    }
}
