//! INCRBYFLOAT against Redis on many random pairs: Redis adds in the x87's 80-bit long double
//! and prints 17 decimals, which `float.rs` emulates exactly; any difference in reading,
//! rounding or printing shows up here as a different reply. The numbers are of every kind
//! `strtold` reads: short and long decimals, exponents near both ends of the range, exact
//! binary fractions whose 18th decimal is a tie, hexadecimal floats, and sums that cancel.

use super::{request, Conn, Redis, Spillway};

/// A small deterministic generator (SplitMix64): the same cases on every run.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn digits(&mut self, n: u64) -> String {
        (0..n)
            .map(|_| char::from(b'0' + self.below(10) as u8))
            .collect()
    }

    fn sign(&mut self) -> &'static str {
        ["", "-", "+", ""][self.below(4) as usize]
    }

    /// A number as a client might send it, of one of several kinds.
    fn number(&mut self) -> String {
        match self.below(8) {
            // Short decimals: prices, scores.
            0 | 1 => {
                let whole = self.below(100_000);
                let decimals = self.below(6) as usize + 1;
                let fraction = self.digits(decimals as u64);
                format!("{}{whole}.{fraction}", self.sign())
            }
            // Long decimals, past what 64 bits hold.
            2 => {
                let (whole, fraction) = (self.below(22), self.below(30));
                let (whole, fraction) = (self.digits(whole.max(1)), self.digits(fraction));
                format!("{}{whole}.{fraction}", self.sign())
            }
            // With an exponent, small or near the ends of the range.
            3 => {
                let exponent = match self.below(3) {
                    0 => self.below(40) as i64 - 20,
                    1 => self.below(600) as i64 - 300,
                    _ => 4900 + self.below(40) as i64,
                };
                let exponent = if self.below(2) == 0 {
                    exponent
                } else {
                    -exponent
                };
                let (lead, more) = (self.below(9) + 1, self.below(20));
                format!("{}{lead}.{}e{exponent}", self.sign(), self.digits(more))
            }
            // Exact binary fractions k / 2^n, written out in full: ties at the 18th decimal
            // and beyond.
            4 | 5 => {
                let n = self.below(27) as u32 + 1;
                let k = u128::from(self.below(1 << 12) | 1) * 5u128.pow(n);
                let whole = self.below(1000);
                let text = format!("{k:0>width$}", width = n as usize + 1);
                let (int, frac) = text.split_at(text.len() - n as usize);
                let int: u128 = int.parse::<u128>().unwrap() + u128::from(whole);
                format!("{}{int}.{frac}", self.sign())
            }
            // Hexadecimal floats.
            6 => {
                let hex: String = (0..self.below(20) + 1)
                    .map(|_| char::from_digit(self.below(16) as u32, 16).unwrap())
                    .collect();
                let exponent = self.below(200) as i64 - 100;
                format!("{}0x{hex}p{exponent}", self.sign())
            }
            // Integers, up to past 2^64.
            _ => {
                let n = self.below(25) + 1;
                format!("{}{}", self.sign(), self.digits(n))
            }
        }
    }
}

/// Each pair on both servers: `SET k a`, `INCRBYFLOAT k b`; and every `b` added to a counter
/// too, so that sums go on from sums (with their rounding) as a counter's do.
#[test]
#[ignore = "needs redis-server (Debian package): .ci/run runs it"]
fn random_sums_as_redis() {
    const PAIRS: usize = 20_000;
    let mut random = Random(31);
    let pairs: Vec<(String, String)> = (0..PAIRS)
        .map(|_| (random.number(), random.number()))
        .collect();
    let counters: Vec<String> = (0..PAIRS / 10).map(|i| format!("counter{i}")).collect();
    let mut script: Vec<[&str; 3]> = Vec::new();
    for (i, (a, b)) in pairs.iter().enumerate() {
        script.push(["SET", "k", a]);
        script.push(["INCRBYFLOAT", "k", b]);
        // A counter per 10 pairs: one that a huge sum made huge is not one for long.
        script.push(["INCRBYFLOAT", &counters[i / 10], b]);
    }
    let (redis, spillway) = (Redis::start(), Spillway::start());
    let mut differences = Vec::new();
    let mut conns = [redis.addr, spillway.addr].map(|a| Conn::open(a).unwrap());
    for chunk in script.chunks(3000) {
        let input: Vec<u8> = chunk.iter().flat_map(|args| request(args)).collect();
        for conn in &mut conns {
            conn.send(&input);
        }
        for args in chunk {
            let [want, got] = [0, 1].map(|i| conns[i].reply().unwrap());
            if want != got {
                differences.push(format!(
                    "{args:?}\n    redis:    {want}\n    spillway: {got}"
                ));
            }
        }
    }
    super::report(&differences, script.len());
}
