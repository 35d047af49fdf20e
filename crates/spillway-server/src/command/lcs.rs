//! `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`: the longest common
//! subsequence of two strings, its length, or where its runs of matching bytes are.
//!
//! Answers are Redis 7.0's byte for byte, including which of several longest subsequences
//! (Redis's dynamic programming walked back from the end, going up where the cell above holds
//! more, else left) and the order of the matches (from the end). So is the limit: Redis keeps a
//! table of `(m+1)*(n+1)` 32-bit lengths and refuses to when it would pass its
//! `proto-max-bulk-len` (512 MiB), with its error; so do we, at the same size. (Its other
//! refusal, `String too long for LCS` at 4 GiB, cannot happen here: a value is at most 16 MiB.)
//!
//! Our table is smaller: the walk back only needs to know, where two bytes differ, whether
//! the cell above holds more than the one to the left. So the lengths are computed a row at a
//! time (two rows of `n+1`), and only that one bit per cell is kept: `m*n/8` bytes, 16 MiB at
//! Redis's limit where Redis takes 512 MiB. `LEN` keeps none. The time is Redis's, `O(m*n)`
//! (up to 134 million cells, a few tenths of a second), which is why the table runs it off
//! the event loop.

use super::context::Ctx;
use super::set::c_str;
use super::strings::REDIS_MAX_LEN;
use super::{integer, not_an_integer, Fail};
use crate::resp::Reply;

type Result = super::CmdResult;

/// What is asked: the length alone, or the matches, or (neither) the subsequence.
#[derive(Clone, Copy, Default, Debug)]
struct Options {
    len: bool,
    idx: bool,
    with_match_len: bool,
    /// Matches shorter than this are left out of `IDX`'s answer.
    min_match_len: u64,
}

/// A run of bytes that match: from `a.0` to `a.1` in the first string, `b.0` to `b.1` in the
/// second (inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Match {
    pub a: (usize, usize),
    pub b: (usize, usize),
}

impl Match {
    pub fn len(&self) -> usize {
        self.a.1 - self.a.0 + 1
    }
}

/// What [`lcs`] computes.
#[derive(Debug, PartialEq, Eq)]
pub struct Lcs {
    pub len: usize,
    /// The subsequence, unless only its length was asked for.
    pub string: Option<Vec<u8>>,
    /// Its runs, from the last to the first, those shorter than asked for left out.
    pub matches: Vec<Match>,
}

/// Whether Redis refuses strings of `a` and `b` bytes: its table would pass its limit.
pub fn too_big(a: usize, b: usize) -> bool {
    (a as u64 + 1) * (b as u64 + 1) * 4 > REDIS_MAX_LEN
}

/// The table of the walk back: bit `j-1` of row `i-1` is set where `a[i-1] != b[j-1]` and
/// LCS(i-1, j) > LCS(i, j-1), so that the walk goes up there rather than left.
struct Ups {
    words: Vec<u64>,
    /// Words a row.
    stride: usize,
}

impl Ups {
    fn up(&self, i: usize, j: usize) -> bool {
        let word = self.words[(i - 1) * self.stride + (j - 1) / 64];
        word >> ((j - 1) % 64) & 1 == 1
    }
}

/// The length of the longest common subsequence of `a` and `b`, and, if `walk`, the table to
/// walk it back by.
fn fill(a: &[u8], b: &[u8], walk: bool) -> (usize, Option<Ups>) {
    let n = b.len();
    let stride = n.div_ceil(64);
    let mut words = Vec::with_capacity(if walk { a.len() * stride } else { 0 });
    // LCS(i-1, ·) and LCS(i, ·), as lengths up to n: u32, as Redis's.
    let (mut above, mut row) = (vec![0u32; n + 1], vec![0u32; n + 1]);
    for &x in a {
        let mut word = 0u64;
        for j in 1..=n {
            row[j] = if x == b[j - 1] {
                above[j - 1] + 1
            } else {
                let (up, left) = (above[j], row[j - 1]);
                word |= u64::from(up > left) << ((j - 1) % 64);
                up.max(left)
            };
            if j % 64 == 0 || j == n {
                if walk {
                    words.push(word);
                }
                word = 0;
            }
        }
        std::mem::swap(&mut above, &mut row);
    }
    let ups = walk.then_some(Ups { words, stride });
    (above[n] as usize, ups)
}

/// The longest common subsequence of `a` and `b` as Redis's `LCS` finds it: only its length
/// if `len_only`; else the subsequence and its runs of at least `min_match_len` bytes (0: all),
/// from the last.
pub fn lcs(a: &[u8], b: &[u8], len_only: bool, min_match_len: u64) -> Lcs {
    let (len, ups) = fill(a, b, !len_only);
    let Some(ups) = ups else {
        return Lcs {
            len,
            string: None,
            matches: Vec::new(),
        };
    };
    let mut string = vec![0u8; len];
    let mut matches = Vec::new();
    let mut left = len; // bytes of the subsequence not yet found
    let mut run: Option<Match> = None;
    let (mut i, mut j) = (a.len(), b.len());
    // Redis's walk (`lcsCommand`), step by step: a run grows backwards while the bytes match
    // diagonally, and is done at the first mismatch or at either string's start.
    while i > 0 && j > 0 {
        let mut done = false;
        if a[i - 1] == b[j - 1] {
            left -= 1;
            string[left] = a[i - 1];
            match &mut run {
                None => {
                    run = Some(Match {
                        a: (i - 1, i - 1),
                        b: (j - 1, j - 1),
                    })
                }
                Some(m) if m.a.0 == i && m.b.0 == j => {
                    m.a.0 -= 1;
                    m.b.0 -= 1;
                }
                // Not reached (a mismatch comes between two runs), but Redis's walk has it: the
                // run is done, and this match starts none.
                Some(_) => done = true,
            }
            done |= run.is_some_and(|m| m.a.0 == 0 || m.b.0 == 0);
            i -= 1;
            j -= 1;
        } else {
            if ups.up(i, j) {
                i -= 1;
            } else {
                j -= 1;
            }
            done = run.is_some();
        }
        if done {
            let m = run.take().expect("a run is done only once begun");
            if min_match_len == 0 || m.len() as u64 >= min_match_len {
                matches.push(m);
            }
        }
    }
    Lcs {
        len,
        string: Some(string),
        matches,
    }
}

/// The strings at `args[1]` and `args[2]`, read at one point in time (as Redis, single-threaded,
/// reads them), a missing key's empty. A key of another type is Redis's LCS error, not
/// WRONGTYPE.
fn read_pair(ctx: &mut Ctx, args: &[Vec<u8>]) -> super::CmdResult<(Vec<u8>, Vec<u8>)> {
    match ctx.read_strings(&args[1..3]) {
        Ok(values) => {
            let [a, b] = <[_; 2]>::try_from(values).expect("a value for each key");
            Ok((a.unwrap_or_default(), b.unwrap_or_default()))
        }
        Err(Fail::Reply(Reply::Error(e))) if e.starts_with("WRONGTYPE") => Err(Fail::Reply(
            Reply::error("ERR The specified keys must contain string values"),
        )),
        Err(other) => Err(other),
    }
}

/// The options after the keys, as Redis parses them (each word in any case, read as a C
/// string; a later `MINMATCHLEN` wins, a negative one is 0), or Redis's error.
fn parse(args: &[Vec<u8>]) -> std::result::Result<Options, Reply> {
    let mut o = Options::default();
    let mut i = 3;
    while i < args.len() {
        let word = c_str(&args[i]).to_ascii_uppercase();
        match (word.as_slice(), args.get(i + 1)) {
            (b"IDX", _) => o.idx = true,
            (b"LEN", _) => o.len = true,
            (b"WITHMATCHLEN", _) => o.with_match_len = true,
            (b"MINMATCHLEN", Some(n)) => {
                o.min_match_len = integer(n).ok_or_else(not_an_integer)?.max(0) as u64;
                i += 1;
            }
            _ => return Err(Reply::error("ERR syntax error")),
        }
        i += 1;
    }
    if o.idx && o.len {
        return Err(Reply::error(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    Ok(o)
}

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`. Missing keys are empty
/// strings. Without options the subsequence; `LEN` its length; `IDX` a map of `matches` (each
/// the two ranges, and its length with `WITHMATCHLEN`) and `len`.
pub fn lcs_command(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (a, b) = read_pair(ctx, args)?;
    let o = match parse(args) {
        Ok(o) => o,
        Err(refused) => return Ok(refused),
    };
    if too_big(a.len(), b.len()) {
        return Ok(Reply::error(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let found = lcs(&a, &b, o.len && !o.idx, o.min_match_len);
    if !o.idx {
        return Ok(match found.string {
            Some(string) if !o.len => Reply::Bulk(string),
            _ => Reply::Integer(found.len as i64),
        });
    }
    let range = |(from, to): (usize, usize)| {
        Reply::Array(vec![Reply::Integer(from as i64), Reply::Integer(to as i64)])
    };
    let matches = found.matches.iter().map(|m| {
        let mut parts = vec![range(m.a), range(m.b)];
        if o.with_match_len {
            parts.push(Reply::Integer(m.len() as i64));
        }
        Reply::Array(parts)
    });
    Ok(Reply::Map(vec![
        (Reply::bulk("matches"), Reply::Array(matches.collect())),
        (Reply::bulk("len"), Reply::Integer(found.len as i64)),
    ]))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::tests::{engine, run};
    use super::super::Session;
    use super::*;

    /// Redis's `lcsCommand` as it is written: the whole table of lengths, walked back.
    fn redis_lcs(a: &[u8], b: &[u8], min: u64) -> Lcs {
        let (m, n) = (a.len(), b.len());
        let mut t = vec![vec![0u32; n + 1]; m + 1];
        for i in 1..=m {
            for j in 1..=n {
                t[i][j] = if a[i - 1] == b[j - 1] {
                    t[i - 1][j - 1] + 1
                } else {
                    t[i - 1][j].max(t[i][j - 1])
                };
            }
        }
        let len = t[m][n] as usize;
        let (mut string, mut matches) = (vec![0; len], Vec::new());
        let (mut idx, mut i, mut j) = (len, m, n);
        let unset = m; // Redis marks "no run" with alen
        let (mut a0, mut a1, mut b0, mut b1) = (unset, 0, 0, 0);
        while i > 0 && j > 0 {
            let mut emit = false;
            if a[i - 1] == b[j - 1] {
                string[idx - 1] = a[i - 1];
                if a0 == unset {
                    (a0, a1, b0, b1) = (i - 1, i - 1, j - 1, j - 1);
                } else if a0 == i && b0 == j {
                    a0 -= 1;
                    b0 -= 1;
                } else {
                    emit = true;
                }
                if a0 == 0 || b0 == 0 {
                    emit = true;
                }
                idx -= 1;
                i -= 1;
                j -= 1;
            } else {
                if t[i - 1][j] > t[i][j - 1] {
                    i -= 1;
                } else {
                    j -= 1;
                }
                if a0 != unset {
                    emit = true;
                }
            }
            if emit {
                let match_len = (a1 - a0 + 1) as u64;
                if min == 0 || match_len >= min {
                    matches.push(Match {
                        a: (a0, a1),
                        b: (b0, b1),
                    });
                }
                a0 = unset;
            }
        }
        Lcs {
            len,
            string: Some(string),
            matches,
        }
    }

    #[test]
    fn redis_documented_example() {
        let found = lcs(b"ohmytext", b"mynewtext", false, 0);
        assert_eq!(found.string.as_deref(), Some(&b"mytext"[..]));
        assert_eq!(found.len, 6);
        let m = |a, b| Match { a, b };
        assert_eq!(found.matches, [m((4, 7), (5, 8)), m((2, 3), (0, 1))]);
        let long = lcs(b"ohmytext", b"mynewtext", false, 4);
        assert_eq!(long.matches, [m((4, 7), (5, 8))]);
        assert_eq!(lcs(b"ohmytext", b"mynewtext", true, 0).string, None);
        assert_eq!(lcs(b"", b"abc", false, 0).len, 0);
    }

    #[test]
    fn idx_answers_a_map_of_matches_and_len() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["MSET", "a", "ohmytext", "b", "mynewtext"],
                &["LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"],
                &["LCS", "a", "b", "LEN"],
                &["LCS", "a", "nokey"],
            ],
        );
        let pair = |x, y| Reply::Array(vec![Reply::Integer(x), Reply::Integer(y)]);
        let first = Reply::Array(vec![pair(4, 7), pair(5, 8), Reply::Integer(4)]);
        assert_eq!(
            out[1],
            Reply::Map(vec![
                (Reply::bulk("matches"), Reply::Array(vec![first])),
                (Reply::bulk("len"), Reply::Integer(6)),
            ])
        );
        assert_eq!(out[2], Reply::Integer(6));
        assert_eq!(out[3], Reply::bulk(""));
    }

    #[test]
    fn the_limit_is_redis_table_against_its_bulk_limit() {
        // (7+1) * (2^24-1+1) * 4 bytes is 512 MiB exactly: Redis takes it; one byte more not.
        assert!(!too_big(7, (1 << 24) - 1));
        assert!(too_big(7, 1 << 24));
        assert!(too_big(20_000, 20_000));
        assert!(!too_big(0, spillway::MAX_VALUE_LEN));
    }

    #[test]
    fn option_words_follow_redis() {
        let args = |rest: &[&str]| -> Vec<Vec<u8>> {
            ["LCS", "a", "b"]
                .iter()
                .chain(rest)
                .map(|a| a.as_bytes().to_vec())
                .collect()
        };
        let o = parse(&args(&["idx", "MinMatchLen", "-5", "withmatchlen"])).unwrap();
        assert!(o.idx && o.with_match_len && !o.len && o.min_match_len == 0);
        let o = parse(&args(&["MINMATCHLEN", "2", "MINMATCHLEN", "3"])).unwrap();
        assert_eq!(o.min_match_len, 3);
        assert!(parse(&args(&["MINMATCHLEN"])).is_err());
        assert!(parse(&args(&["MINMATCHLEN", "x"])).is_err());
        assert!(parse(&args(&["LEN", "IDX"])).is_err());
        assert!(parse(&args(&["NOPE"])).is_err());
    }

    proptest! {
        #[test]
        fn answers_are_those_of_redis_whole_table(
            a in prop::collection::vec(0u8..4, 0..70),
            b in prop::collection::vec(0u8..4, 0..140),
            min in 0u64..4,
        ) {
            prop_assert_eq!(lcs(&a, &b, false, min), redis_lcs(&a, &b, min));
            prop_assert_eq!(lcs(&a, &b, true, min).len, redis_lcs(&a, &b, min).len);
        }
    }
}
