//! Merge operators on the command line: `--op` and `--separator` as engine operators,
//! operands typed as text, counters printed as numbers, and a stored operator's name in the
//! flags that choose it.
//!
//! Only the engine's built-ins ([`spillway::operators`]) are known here: a store records its
//! operator's name, and [`spillway::operators::by_name`] gives the operator back for every
//! command that opens it.

use std::sync::Arc;

use clap::ValueEnum;
use spillway::operators::Append;
use spillway::MergeOperator;

use crate::error::CliError;
use crate::escape;

/// The name a store of counters records (`merge --op add`, `load --op add`).
pub const COUNTERS: &str = "spillway.u64add";

/// `merge --op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Op {
    /// Counters (spillway.u64add): OPERAND is a decimal integer, added to the value (an
    /// 8-byte u64, little-endian; absent is 0); a negative one subtracts.
    Add,
    /// Lists (spillway.append): OPERAND's bytes are appended to the value, after
    /// --separator if one is given.
    Append,
    /// Keep the greatest (spillway.max) of the value and OPERAND, comparing bytes.
    Max,
    /// Keep the least (spillway.min) of the value and OPERAND, comparing bytes.
    Min,
}

impl Op {
    /// The engine's operator for `--op self [--separator sep]`; a separator belongs to
    /// `append` only.
    pub fn operator(self, separator: Option<&[u8]>) -> Result<Arc<dyn MergeOperator>, CliError> {
        match (self, separator) {
            (Op::Append, sep) => Ok(Arc::new(Append::with_separator(sep.unwrap_or_default()))),
            (_, Some(_)) => Err(CliError::Usage(
                "--separator goes with --op append only".into(),
            )),
            (op, None) => Ok(spillway::operators::by_short_name(op.short_name())
                .expect("every --op is a built-in's short name")),
        }
    }

    /// The engine's short name of this operator (`spillway::operators::SHORT_NAMES`).
    fn short_name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Append => "append",
            Op::Max => "max",
            Op::Min => "min",
        }
    }

    /// The operand `bytes` stand for: for `add`, the 8 bytes of the decimal number they
    /// spell; for the others, themselves.
    pub fn operand(self, bytes: Vec<u8>) -> Result<Vec<u8>, CliError> {
        match self {
            Op::Add => parse_increment(&String::from_utf8_lossy(&bytes))
                .map(|n| n.to_le_bytes().to_vec())
                .map_err(CliError::Usage),
            Op::Append | Op::Max | Op::Min => Ok(bytes),
        }
    }
}

/// A decimal increment, from `i64::MIN` to `u64::MAX`: a negative one as its two's
/// complement, which the wrapping add of `spillway.u64add` makes a subtraction.
pub fn parse_increment(text: &str) -> Result<u64, String> {
    let bad = |why: &str| {
        format!(
            "invalid operand `{text}` for --op add: {why} (a decimal integer from {} to {}; a \
             negative one subtracts)",
            i64::MIN,
            u64::MAX
        )
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad("it is empty"));
    }
    let n: i128 = t.parse().map_err(|_| bad("not a decimal integer"))?;
    if let Ok(n) = u64::try_from(n) {
        Ok(n)
    } else if let Ok(n) = i64::try_from(n) {
        Ok(n as u64)
    } else {
        Err(bad("out of range"))
    }
}

/// A counter's value as `get` and `scan` print it: its decimal number if `value` is one (8
/// bytes), else `None` (the raw bytes are printed then).
pub fn counter(value: &[u8]) -> Option<String> {
    let bytes: [u8; 8] = value.try_into().ok()?;
    Some(u64::from_le_bytes(bytes).to_string())
}

/// The flags that choose operator `name`, for messages: `--op add`, or `--op append
/// --separator ','`. `None` for an operator the command line does not make.
pub fn flags_for(name: &str) -> Option<String> {
    let op = spillway::operators::by_name(name)?;
    let short = spillway::operators::SHORT_NAMES
        .iter()
        .find(|(_, full)| *full == op.name());
    let flags = match short {
        Some((short, _)) => format!("--op {short}"),
        None => {
            let other = op.name();
            let hex = other.strip_prefix("spillway.append:")?;
            let sep: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
                .collect::<Option<_>>()?;
            let mut shown = Vec::new();
            escape::escape_into(&sep, &mut shown);
            let shown = String::from_utf8_lossy(&shown).replace('\'', "'\\''");
            format!("--op append --separator '{shown}'")
        }
    };
    Some(flags)
}

/// `name` for a message: `` `spillway.u64add` (--op add) ``.
pub fn describe(name: &str) -> String {
    match flags_for(name) {
        Some(flags) => format!("`{name}` ({flags})"),
        None => format!("`{name}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increments_parse_as_u64_or_negative_i64() {
        assert_eq!(parse_increment("0"), Ok(0));
        assert_eq!(parse_increment("42"), Ok(42));
        assert_eq!(parse_increment("+7"), Ok(7));
        assert_eq!(parse_increment("-3"), Ok(3u64.wrapping_neg()));
        assert_eq!(parse_increment(&u64::MAX.to_string()), Ok(u64::MAX));
        assert_eq!(parse_increment(&i64::MIN.to_string()), Ok(1 << 63));
        for bad in [
            "",
            "abc",
            "1.5",
            "0x10",
            "18446744073709551616",
            "-9223372036854775809",
        ] {
            let err = parse_increment(bad).unwrap_err();
            assert!(
                err.contains("for --op add") && err.contains("decimal"),
                "{err}"
            );
        }
        assert_eq!(Op::Add.operand(b"5".to_vec()).unwrap(), 5u64.to_le_bytes());
        assert_eq!(Op::Append.operand(b"-5".to_vec()).unwrap(), b"-5");
        assert!(Op::Add.operand(vec![0xff]).is_err());
    }

    #[test]
    fn ops_are_the_engine_s_operators_and_flags_name_them_back() {
        for (op, sep, name, flags) in [
            (Op::Add, None, COUNTERS, "--op add"),
            (Op::Append, None, "spillway.append", "--op append"),
            (
                Op::Append,
                Some(&b","[..]),
                "spillway.append:2c",
                "--op append --separator ','",
            ),
            (
                Op::Append,
                Some(&b"\n"[..]),
                "spillway.append:0a",
                "--op append --separator '\\n'",
            ),
            (Op::Max, None, "spillway.max", "--op max"),
            (Op::Min, None, "spillway.min", "--op min"),
        ] {
            let operator = op.operator(sep).unwrap();
            assert_eq!(operator.name(), name);
            assert_eq!(flags_for(name).as_deref(), Some(flags), "{name}");
        }
        // An empty separator is no separator.
        assert_eq!(
            Op::Append.operator(Some(b"")).unwrap().name(),
            "spillway.append"
        );
        assert!(Op::Add.operator(Some(b",")).is_err());
        assert_eq!(flags_for("someone.else"), None);
        assert_eq!(describe("someone.else"), "`someone.else`");
        assert_eq!(describe(COUNTERS), "`spillway.u64add` (--op add)");
    }

    #[test]
    fn counters_print_as_numbers() {
        assert_eq!(counter(&7u64.to_le_bytes()).as_deref(), Some("7"));
        assert_eq!(counter(b"seven"), None);
    }
}
