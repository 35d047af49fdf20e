//! YCSB's scrambled zipfian key choice (Gray et al., "Quickly generating billion-record
//! synthetic databases"): rank r is drawn with probability ∝ 1/r^θ, θ = 0.99, then hashed to a
//! record index so that the popular records are scattered over the load order, as in YCSB.

use crate::workload::{mix64, SplitMix64};

pub const THETA: f64 = 0.99;

pub struct Zipf {
    n: u64,
    zetan: f64,
    alpha: f64,
    eta: f64,
    half_pow_theta: f64,
}

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

impl Zipf {
    /// A generator over `0..n` (`n ≥ 2`). Building it sums `n` terms once.
    pub fn new(n: u64) -> Zipf {
        assert!(n >= 2, "zipfian needs at least two items");
        let zetan = zeta(n, THETA);
        let zeta2 = zeta(2, THETA);
        Zipf {
            n,
            zetan,
            alpha: 1.0 / (1.0 - THETA),
            eta: (1.0 - (2.0 / n as f64).powf(1.0 - THETA)) / (1.0 - zeta2 / zetan),
            half_pow_theta: 0.5f64.powf(THETA),
        }
    }

    fn rank(&self, rng: &mut SplitMix64) -> u64 {
        let u = rng.unit();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1;
        }
        ((self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(self.n - 1)
    }

    /// A record index in `0..n`.
    pub fn next(&self, rng: &mut SplitMix64) -> u64 {
        mix64(self.rank(rng)) % self.n
    }
}

/// How a phase picks which loaded record to touch.
pub enum KeyChoice {
    Uniform(u64),
    Zipfian(Zipf),
}

impl KeyChoice {
    pub fn next(&self, rng: &mut SplitMix64) -> u64 {
        match self {
            KeyChoice::Uniform(n) => rng.below(*n),
            KeyChoice::Zipfian(z) => z.next(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipfian_is_skewed_and_in_range() {
        let z = Zipf::new(10_000);
        let mut rng = SplitMix64::new(1);
        let mut counts = vec![0u32; 10_000];
        for _ in 0..200_000 {
            counts[z.next(&mut rng) as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        // Under θ = 0.99 over 10k items the hottest item takes about 10% of draws, and the
        // top 1% of items about half of them; uniform would give 0.01% and 1%.
        let top1: u32 = counts[..100].iter().sum();
        assert!(counts[0] > 10_000, "hottest {}", counts[0]);
        assert!(top1 > 80_000, "top 1% took {top1}");
    }
}
