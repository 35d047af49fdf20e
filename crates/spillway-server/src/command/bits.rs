//! The bit commands over a string: `SETBIT`, `GETBIT`, `BITCOUNT`, `BITPOS`. A string is an
//! array of bits, bit 0 the highest of its first byte (as Redis numbers them), and past its
//! end an endless run of zeros.
//!
//! Errors, and the order they come in, are Redis 7.0's (`bitops.c`): `BITCOUNT` looks its key
//! up before it reads its arguments, so a missing key answers 0 whatever follows; `BITPOS`
//! reads its bit first, then the key. A bit offset is refused past Redis's 512 MiB
//! (`proto-max-bulk-len`: bit 2^32 on); `SETBIT` is refused too where the string would grow
//! past the store's largest value (16 MiB: bit 2^27 on), which Redis would make, with an error
//! that says so. `GETBIT` past that answers 0, as Redis does.
//!
//! `SETBIT` changes a value in place, so it keeps the key's expiry (as `APPEND`); it reads
//! through [`Ctx::get_with_expiry`], so its write is staged (see `context`).

use spillway::Expiry;

use super::context::Ctx;
use super::set::c_str;
use super::strings::{clamp, reversed_from_end, REDIS_MAX_LEN};
use super::{integer, not_an_integer};
use crate::resp::Reply;

type Result = super::CmdResult;

fn syntax_error() -> Reply {
    Reply::error("ERR syntax error")
}

/// A bit offset as Redis takes it (`getBitOffsetFromArgument`): an integer from 0, its byte
/// within Redis's longest string.
fn bit_offset(arg: &[u8]) -> std::result::Result<u64, Reply> {
    match integer(arg) {
        Some(n) if n >= 0 && (n as u64 >> 3) < REDIS_MAX_LEN => Ok(n as u64),
        _ => Err(Reply::error(
            "ERR bit offset is not an integer or out of range",
        )),
    }
}

/// The mask of bit `offset` within its byte.
fn mask(offset: u64) -> u8 {
    0x80 >> (offset & 7)
}

/// `SETBIT key offset value`: the bit's old value. The string grows with zeros to hold it.
pub fn setbit(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let offset = match bit_offset(&args[2]) {
        Ok(offset) => offset,
        Err(refused) => return Ok(refused),
    };
    let on = match integer(&args[3]) {
        Some(bit @ (0 | 1)) => bit == 1,
        _ => return Ok(Reply::error("ERR bit is not an integer or out of range")),
    };
    let key = &args[1];
    let old = ctx.get_with_expiry(key)?;
    let byte = (offset >> 3) as usize;
    if byte >= spillway::MAX_VALUE_LEN {
        return Ok(Reply::error(format!(
            "ERR bit offset is not an integer or out of range (a string holds {} bits here: \
             the store's largest value is {} bytes)",
            spillway::MAX_VALUE_LEN as u64 * 8,
            spillway::MAX_VALUE_LEN
        )));
    }
    let existed = old.is_some();
    let (mut value, expiry) = old.unwrap_or((Vec::new(), Expiry::Never));
    let grows = value.len() <= byte;
    if grows {
        value.resize(byte + 1, 0);
    }
    let was = value[byte] & mask(offset) != 0;
    // As Redis: nothing to write if the key was there, as long, with the bit as asked.
    if !existed || grows || was != on {
        value[byte] = match on {
            true => value[byte] | mask(offset),
            false => value[byte] & !mask(offset),
        };
        ctx.put_expiring(key, &value, expiry)?;
    }
    Ok(Reply::Integer(i64::from(was)))
}

/// `GETBIT key offset`: 0 past the string's end, or for a missing key.
pub fn getbit(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let offset = match bit_offset(&args[2]) {
        Ok(offset) => offset,
        Err(refused) => return Ok(refused),
    };
    let value = ctx.read(&args[1])?.unwrap_or_default();
    let byte = value.get((offset >> 3) as usize).copied().unwrap_or(0);
    Ok(Reply::Integer(i64::from(byte & mask(offset) != 0)))
}

/// Whether a range counts bytes or bits (`BYTE | BIT`, Redis 7.0).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Unit {
    Byte,
    Bit,
}

/// `BYTE` or `BIT` in any case (read as C reads it, up to a NUL, as Redis's `strcasecmp`).
fn unit(arg: &[u8]) -> Option<Unit> {
    match c_str(arg).to_ascii_uppercase().as_slice() {
        b"BYTE" => Some(Unit::Byte),
        b"BIT" => Some(Unit::Bit),
        _ => None,
    }
}

/// The range `start` to `end` in `unit`s of a string of `len` bytes, clamped (see
/// [`clamp`]), as bit positions; `None` if empty.
fn bit_range(start: i64, end: i64, unit: Unit, len: usize) -> Option<(u64, u64)> {
    let len = len as u64;
    match unit {
        Unit::Byte => clamp(start, end, len).map(|(s, e)| (s * 8, e * 8 + 7)),
        Unit::Bit => clamp(start, end, len * 8),
    }
}

/// `BITCOUNT key [start end [BYTE | BIT]]`: the bits set in the range (all the string's
/// without one).
pub fn bitcount(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let Some(value) = ctx.read(&args[1])? else {
        return Ok(Reply::Integer(0));
    };
    let range = match args.len() {
        2 => bit_range(0, -1, Unit::Byte, value.len()),
        4 | 5 => {
            let (Some(start), Some(end)) = (integer(&args[2]), integer(&args[3])) else {
                return Ok(not_an_integer());
            };
            if reversed_from_end(start, end) {
                return Ok(Reply::Integer(0));
            }
            let unit = match args.get(4).map(|a| unit(a)) {
                None => Unit::Byte,
                Some(Some(unit)) => unit,
                Some(None) => return Ok(syntax_error()),
            };
            bit_range(start, end, unit, value.len())
        }
        _ => return Ok(syntax_error()),
    };
    let ones = range.map_or(0, |(first, last)| count_ones(&value, first, last));
    Ok(Reply::Integer(ones as i64))
}

/// `BITPOS key bit [start [end [BYTE | BIT]]]`: the first bit that is `bit` in the range, or
/// -1. As Redis: a missing key is all zeros (0 for a clear bit, -1 for a set one); a clear bit
/// not found in a range without an end is the first past the string (its zeros go on), and
/// -1 in one with an end. Unlike `BITCOUNT`, a range with both ends negative and reversed is
/// clamped like any other (Redis has no early answer for it here).
pub fn bitpos(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let bit = match integer(&args[2]) {
        Some(bit @ (0 | 1)) => bit == 1,
        Some(_) => return Ok(Reply::error("ERR The bit argument must be 1 or 0.")),
        None => return Ok(not_an_integer()),
    };
    let Some(value) = ctx.read(&args[1])? else {
        return Ok(Reply::Integer(if bit { -1 } else { 0 }));
    };
    let (range, end_given) = match args.len() {
        3 => (bit_range(0, -1, Unit::Byte, value.len()), false),
        4..=6 => {
            let Some(start) = integer(&args[3]) else {
                return Ok(not_an_integer());
            };
            // Redis reads the unit before the end.
            let unit = match args.get(5).map(|a| unit(a)) {
                None => Unit::Byte,
                Some(Some(unit)) => unit,
                Some(None) => return Ok(syntax_error()),
            };
            let end = match args.get(4).map(|a| integer(a)) {
                None => -1, // the string's end, in either unit
                Some(Some(end)) => end,
                Some(None) => return Ok(not_an_integer()),
            };
            (bit_range(start, end, unit, value.len()), args.len() > 4)
        }
        _ => return Ok(syntax_error()),
    };
    let Some((first, last)) = range else {
        return Ok(Reply::Integer(-1));
    };
    let found = match first_bit(&value, bit, first, last) {
        Some(at) => at as i64,
        None if bit || end_given => -1,
        // The zeros past the range's last byte (the string's, without an end) go on.
        None => ((last / 8 + 1) * 8) as i64,
    };
    Ok(Reply::Integer(found))
}

/// The bits set from bit `first` to bit `last` of `value`, inclusive (both within it).
pub fn count_ones(value: &[u8], first: u64, last: u64) -> u64 {
    let (head, tail) = ((first / 8) as usize, (last / 8) as usize);
    let head_mask = 0xffu8 >> (first % 8);
    let tail_mask = 0xffu8 << (7 - last % 8);
    if head == tail {
        return u64::from((value[head] & head_mask & tail_mask).count_ones());
    }
    let middle = &value[head + 1..tail];
    let words = middle.chunks_exact(8);
    let rest = words.remainder();
    let mut ones: u64 = words
        .map(|w| u64::from(u64::from_ne_bytes(w.try_into().unwrap()).count_ones()))
        .sum();
    ones += rest.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
    ones + u64::from((value[head] & head_mask).count_ones())
        + u64::from((value[tail] & tail_mask).count_ones())
}

/// The first bit from bit `first` to bit `last` of `value` (inclusive, both within it) that
/// is `bit`.
pub fn first_bit(value: &[u8], bit: bool, first: u64, last: u64) -> Option<u64> {
    let (head, tail) = ((first / 8) as usize, (last / 8) as usize);
    // Each byte as the bits that are `bit` (set), those outside the range cleared.
    let looked_for = |i: usize| {
        let mut b = if bit { value[i] } else { !value[i] };
        if i == head {
            b &= 0xff >> (first % 8);
        }
        if i == tail {
            b &= 0xff << (7 - last % 8);
        }
        b
    };
    let none = if bit { 0x00 } else { 0xff };
    let at = |i: usize| Some(i as u64 * 8 + u64::from(looked_for(i).leading_zeros()));
    if looked_for(head) != 0 {
        return at(head);
    }
    if head == tail {
        return None;
    }
    let skipped = value[head + 1..tail].iter().position(|&b| b != none);
    match skipped {
        Some(k) => at(head + 1 + k),
        None if looked_for(tail) != 0 => at(tail),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::tests::{engine, run};
    use super::super::Session;
    use super::*;

    /// Bit `i` of `value`, the plain way.
    fn bit_at(value: &[u8], i: u64) -> bool {
        value[(i / 8) as usize] >> (7 - i % 8) & 1 == 1
    }

    #[test]
    fn ranges_of_bytes_and_bits_become_bit_positions() {
        assert_eq!(bit_range(0, -1, Unit::Byte, 3), Some((0, 23)));
        assert_eq!(bit_range(1, 1, Unit::Byte, 3), Some((8, 15)));
        assert_eq!(bit_range(5, 30, Unit::Bit, 3), Some((5, 23)));
        assert_eq!(bit_range(-3, -1, Unit::Bit, 3), Some((21, 23)));
        assert_eq!(bit_range(0, -1, Unit::Bit, 0), None);
        assert_eq!(bit_range(24, 30, Unit::Bit, 3), None);
    }

    #[test]
    fn bits_are_counted_within_a_range_of_bits() {
        let v = [0b1010_1010, 0xff, 0x00, 0b0000_0001];
        assert_eq!(count_ones(&v, 0, 31), 4 + 8 + 1);
        assert_eq!(count_ones(&v, 0, 0), 1);
        assert_eq!(count_ones(&v, 1, 1), 0);
        assert_eq!(count_ones(&v, 1, 6), 3);
        assert_eq!(count_ones(&v, 7, 8), 1);
        assert_eq!(count_ones(&v, 12, 30), 4);
        assert_eq!(count_ones(&v, 31, 31), 1);
    }

    #[test]
    fn the_first_bit_is_found_within_a_range_of_bits() {
        let v = [0b0001_0000, 0x00, 0xff, 0b1111_1110];
        assert_eq!(first_bit(&v, true, 0, 31), Some(3));
        assert_eq!(first_bit(&v, true, 4, 31), Some(16));
        assert_eq!(first_bit(&v, true, 4, 15), None);
        assert_eq!(first_bit(&v, false, 0, 31), Some(0));
        assert_eq!(first_bit(&v, false, 16, 30), None);
        assert_eq!(first_bit(&v, false, 16, 31), Some(31));
        assert_eq!(first_bit(&v, false, 3, 3), None);
        assert_eq!(first_bit(&v, true, 3, 3), Some(3));
    }

    #[test]
    fn setbit_refuses_past_the_stores_largest_value_and_getbit_reads_zeros_there() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let last = spillway::MAX_VALUE_LEN as u64 * 8 - 1;
        let (last, past) = (last.to_string(), (last + 1).to_string());
        let out = run(
            &e,
            &mut s,
            &[
                &["SETBIT", "k", &past, "1"],
                &["EXISTS", "k"],
                &["GETBIT", "k", &past],
                &["SETBIT", "k", &last, "1"],
                &["STRLEN", "k"],
                &["GETBIT", "k", &last],
                &["GETBIT", "k", &past],
                &["SETBIT", "k", &past, "0"],
                &["SETBIT", "k", "4294967296", "1"],
                &["BITCOUNT", "k"],
                &["BITPOS", "k", "1"],
            ],
        );
        let Reply::Error(ours) = &out[0] else {
            panic!("{:?}", out[0])
        };
        assert!(ours.starts_with("ERR bit offset is not an integer or out of range ("));
        assert!(ours.contains("the store's largest value"), "{ours}");
        assert_eq!(out[1], Reply::Integer(0), "no key made");
        assert_eq!(out[2], Reply::Integer(0));
        assert_eq!(out[3], Reply::Integer(0));
        assert_eq!(out[4], Reply::Integer(spillway::MAX_VALUE_LEN as i64));
        assert_eq!(out[5..7], [Reply::Integer(1), Reply::Integer(0)]);
        assert_eq!(out[7], out[0]);
        assert_eq!(
            out[8],
            Reply::error("ERR bit offset is not an integer or out of range"),
            "Redis's own, past its limit"
        );
        assert_eq!(out[9], Reply::Integer(1));
        assert_eq!(out[10], Reply::Integer(last.parse().unwrap()));
    }

    #[test]
    fn setbit_keeps_the_expiry_and_writes_only_a_change() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "@", "EX", "100"],
                &["SETBIT", "k", "1", "1"],
                &["SETBIT", "k", "1", "1"],
                &["SETBIT", "k", "9", "1"],
                &["TTL", "k"],
                &["GET", "k"],
            ],
        );
        assert_eq!(out[1..4], [1, 1, 0].map(Reply::Integer));
        assert_eq!(out[4], Reply::Integer(100));
        assert_eq!(out[5], Reply::bulk(&b"@@"[..]));
        // SETBIT k 1 1 changed nothing: the engine was not written for it.
        let writes = e.db().stats().write_groups;
        run(&e, &mut s, &[&["SETBIT", "k", "1", "1"]]);
        assert_eq!(e.db().stats().write_groups, writes);
        run(&e, &mut s, &[&["SETBIT", "k", "1", "0"]]);
        assert_eq!(e.db().stats().write_groups, writes + 1);
    }

    proptest! {
        #[test]
        fn counts_and_positions_are_those_of_every_bit_read_alone(
            value in prop::collection::vec(any::<u8>(), 1..40),
            a in any::<u64>(),
            b in any::<u64>(),
            bit in any::<bool>(),
        ) {
            let bits = value.len() as u64 * 8;
            let (first, last) = ((a % bits).min(b % bits), (a % bits).max(b % bits));
            let plain: Vec<u64> = (first..=last).collect();
            let ones = plain.iter().filter(|&&i| bit_at(&value, i)).count() as u64;
            prop_assert_eq!(count_ones(&value, first, last), ones);
            let found = plain.iter().copied().find(|&i| bit_at(&value, i) == bit);
            prop_assert_eq!(first_bit(&value, bit, first, last), found);
        }
    }
}
