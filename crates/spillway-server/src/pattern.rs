//! Redis's glob patterns (`KEYS`, `SCAN ... MATCH`): `*` any run of bytes, `?` one byte,
//! `[abc]`, `[^abc]` and `[a-z]` one byte of (or not of) a set, `\x` the byte `x` itself.
//! Edge cases follow Redis's `stringmatchlen`: an unclosed `[` takes the rest of the pattern as
//! its set, a range may be written backwards (`[z-a]`), a trailing `\` is itself.

/// Runs of `*` followed by more pattern past which Redis's matcher gives up (it recurses once
/// per run, and answers "no match" deeper than this): a pattern with more never matches.
const MAX_STARS: usize = 1000;

/// Whether `text` matches `pattern`.
pub fn matches(pattern: &[u8], text: &[u8]) -> bool {
    if inner_star_runs(pattern) > MAX_STARS {
        return false;
    }
    // Greedy with backtracking to the last `*`: every other token matches exactly one byte,
    // so the last star is the only choice worth revisiting (O(pattern × text) at worst).
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if pattern.get(p) == Some(&b'*') {
            p += 1;
            star = Some((p, t));
            continue;
        }
        match one(pattern, p, text[t]) {
            Some((true, next)) => {
                p = next;
                t += 1;
            }
            _ => match star {
                // Let the star take one more byte and try again from there.
                Some((sp, st)) => {
                    star = Some((sp, st + 1));
                    p = sp;
                    t = st + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// How many runs of `*` in `pattern` have more of the pattern after them: every match of the
/// whole pattern passes each of them (a trailing run matches the rest at once).
fn inner_star_runs(pattern: &[u8]) -> usize {
    let (mut p, mut runs) = (0, 0);
    while p < pattern.len() {
        if pattern[p] == b'*' {
            while pattern.get(p) == Some(&b'*') {
                p += 1;
            }
            runs += usize::from(p < pattern.len());
            continue;
        }
        // Past one byte's token: `one` says where the next starts, whatever the byte.
        p = one(pattern, p, 0).map_or(pattern.len(), |(_, next)| next);
    }
    runs
}

/// Match byte `c` against the token at `pattern[p]` (not a star): whether it matches, and
/// where the next token starts; `None` at the pattern's end.
fn one(pattern: &[u8], p: usize, c: u8) -> Option<(bool, usize)> {
    match *pattern.get(p)? {
        b'?' => Some((true, p + 1)),
        b'[' => Some(class(pattern, p + 1, c)),
        b'\\' if p + 1 < pattern.len() => Some((pattern[p + 1] == c, p + 2)),
        literal => Some((literal == c, p + 1)),
    }
}

/// A set starting after its `[`: whether `c` is in it (or, with `^`, not), and where the
/// token after its `]` starts.
fn class(pattern: &[u8], mut p: usize, c: u8) -> (bool, usize) {
    let negate = pattern.get(p) == Some(&b'^');
    if negate {
        p += 1;
    }
    let mut found = false;
    loop {
        match pattern.get(p) {
            None => break,
            Some(b']') => {
                p += 1;
                break;
            }
            Some(b'\\') if p + 1 < pattern.len() => {
                found |= pattern[p + 1] == c;
                p += 2;
            }
            Some(&lo) if pattern.get(p + 1) == Some(&b'-') && p + 2 < pattern.len() => {
                let hi = pattern[p + 2];
                found |= (lo.min(hi)..=lo.max(hi)).contains(&c);
                p += 3;
            }
            Some(&b) => {
                found |= b == c;
                p += 1;
            }
        }
    }
    (found != negate, p)
}

/// The bytes every match starts with: the pattern up to its first special character (for
/// ordered stores, which can scan just that prefix).
pub fn literal_prefix(pattern: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut p = 0;
    while let Some(&c) = pattern.get(p) {
        match c {
            b'*' | b'?' | b'[' => break,
            b'\\' if p + 1 < pattern.len() => {
                out.push(pattern[p + 1]);
                p += 2;
            }
            _ => {
                out.push(c);
                p += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Redis gives up past 1000 runs of `*` with more pattern after them (its
    /// "Regression for pattern matching very long nested loops" test): so do we.
    #[test]
    fn more_than_a_thousand_inner_star_runs_never_match() {
        let text = vec![b'a'; 5000];
        let runs = |n: usize| "*?".repeat(n).into_bytes();
        assert!(matches(&runs(1000), &text));
        assert!(!matches(&runs(1001), &text));
        let trailing: Vec<u8> = [runs(999), b"a*".to_vec()].concat();
        assert!(matches(&trailing, &text), "a trailing run is not counted");
        assert!(matches(b"[*]*", b"*xyz"), "a star in a set is a byte");
        assert_eq!(inner_star_runs(b"a**b*c***"), 2);
        assert_eq!(inner_star_runs(b"\\*x\\*"), 0, "escaped stars are bytes");
        assert_eq!(inner_star_runs(b"\\\\*x\\\\*"), 1);
    }

    #[test]
    fn redis_examples() {
        let yes = |p: &str, t: &str| assert!(matches(p.as_bytes(), t.as_bytes()), "{p} ~ {t}");
        let no = |p: &str, t: &str| assert!(!matches(p.as_bytes(), t.as_bytes()), "{p} !~ {t}");
        yes("*", "");
        yes("*", "anything");
        yes("h?llo", "hello");
        no("h?llo", "hllo");
        yes("h*llo", "hllo");
        yes("h*llo", "heeeello");
        yes("h[ae]llo", "hallo");
        no("h[ae]llo", "hillo");
        yes("h[^e]llo", "hallo");
        no("h[^e]llo", "hello");
        yes("h[a-b]llo", "hbllo");
        yes("h[b-a]llo", "hallo");
        yes("h\\*llo", "h*llo");
        no("h\\*llo", "hello");
        yes("user:*:name", "user:42:name");
        no("user:*:name", "user:42:names");
        yes("*a*b*c*", "xxaxxbxxcxx");
        no("*a*b*c*", "xxaxxcxxbxx");
        yes("a\\", "a\\");
        yes("[a", "a"); // an unclosed set takes the rest of the pattern
        yes("[\\]]", "]");
        yes("", "");
        no("", "a");
        no("?", "");
    }

    #[test]
    fn prefixes_stop_at_the_first_special_character() {
        assert_eq!(literal_prefix(b"user:*"), b"user:");
        assert_eq!(literal_prefix(b"a\\*b?c"), b"a*b");
        assert_eq!(literal_prefix(b"[ab]"), b"");
        assert_eq!(literal_prefix(b"plain"), b"plain");
    }

    /// A slow matcher that tries every split for `*`, over patterns of literals, `?` and `*`.
    fn reference(p: &[u8], t: &[u8]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some((b'*', rest)) => (0..=t.len()).any(|i| reference(rest, &t[i..])),
            Some((b'?', rest)) => !t.is_empty() && reference(rest, &t[1..]),
            Some((c, rest)) => t.first() == Some(c) && reference(rest, &t[1..]),
        }
    }

    proptest! {
        #[test]
        fn stars_and_marks_agree_with_trying_every_split(
            p in proptest::collection::vec(prop_oneof![Just(b'*'), Just(b'?'), Just(b'a'), Just(b'b')], 0..8),
            t in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b')], 0..10),
        ) {
            prop_assert_eq!(matches(&p, &t), reference(&p, &t));
            // Every match starts with the literal prefix.
            if matches(&p, &t) {
                prop_assert!(t.starts_with(&literal_prefix(&p)));
            }
        }
    }
}
