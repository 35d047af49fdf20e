//! Unsigned integers of any size, with just what exact float arithmetic needs: building one
//! from digits, multiplying by small numbers and powers of 5, shifts, adding, subtracting,
//! comparing, reading bits and printing in decimal. The numbers stay small — the largest an
//! 80-bit float needs is about 40,000 bits (`5^16445` for its smallest subnormal) — so the
//! schoolbook algorithms are enough, and a dependency for them (`num-bigint`, `rug`) would
//! be more code than this.

use std::cmp::Ordering;

/// A natural number: 32-bit limbs, least significant first, without zero limbs at the top.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Big(Vec<u32>);

impl Big {
    pub fn from_u128(mut n: u128) -> Big {
        let mut limbs = Vec::new();
        while n != 0 {
            limbs.push(n as u32);
            n >>= 32;
        }
        Big(limbs)
    }

    pub fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    /// How many bits it takes: 0 for zero.
    pub fn bits(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(&top) => self.0.len() as u64 * 32 - u64::from(top.leading_zeros()),
        }
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    /// `self * by + add`.
    pub fn mul_add_small(&mut self, by: u32, add: u32) {
        let mut carry = u64::from(add);
        for limb in &mut self.0 {
            let n = u64::from(*limb) * u64::from(by) + carry;
            *limb = n as u32;
            carry = n >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
        self.trim();
    }

    /// `self * 5^n`.
    pub fn mul_pow5(&mut self, mut n: u64) {
        const FIVE_13: u32 = 1_220_703_125; // the largest power of 5 below 2^32
        while n >= 13 {
            self.mul_add_small(FIVE_13, 0);
            n -= 13;
        }
        self.mul_add_small(5u32.pow(n as u32), 0);
    }

    /// `self * 2^n`.
    pub fn shl(&self, n: u64) -> Big {
        if self.is_zero() {
            return Big::default();
        }
        let (limbs, bits) = ((n / 32) as usize, (n % 32) as u32);
        let mut out = vec![0; limbs];
        out.reserve(self.0.len() + 1);
        let mut carry = 0u32;
        for &limb in &self.0 {
            out.push(if bits == 0 {
                limb
            } else {
                (limb << bits) | carry
            });
            carry = if bits == 0 { 0 } else { limb >> (32 - bits) };
        }
        out.push(carry);
        let mut out = Big(out);
        out.trim();
        out
    }

    /// `self / 2`, rounded down.
    pub fn halve(&mut self) {
        let mut carry = 0;
        for limb in self.0.iter_mut().rev() {
            let next = *limb & 1;
            *limb = (*limb >> 1) | (carry << 31);
            carry = next;
        }
        self.trim();
    }

    pub fn add(&self, other: &Big) -> Big {
        let (long, short) = if self.0.len() >= other.0.len() {
            (self, other)
        } else {
            (other, self)
        };
        let mut out = Vec::with_capacity(long.0.len() + 1);
        let mut carry = 0u64;
        for (i, &limb) in long.0.iter().enumerate() {
            let n = u64::from(limb) + u64::from(short.0.get(i).copied().unwrap_or(0)) + carry;
            out.push(n as u32);
            carry = n >> 32;
        }
        if carry != 0 {
            out.push(carry as u32);
        }
        Big(out)
    }

    /// `self - other`, which must not be negative.
    pub fn sub_assign(&mut self, other: &Big) {
        debug_assert!(*self >= *other);
        let mut borrow = 0i64;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let n = i64::from(*limb) - i64::from(other.0.get(i).copied().unwrap_or(0)) - borrow;
            borrow = i64::from(n < 0);
            *limb = n.rem_euclid(1 << 32) as u32;
            if i >= other.0.len() && borrow == 0 {
                break;
            }
        }
        self.trim();
    }

    /// Bit `i` (0: the lowest); 0 past the top.
    pub fn bit(&self, i: u64) -> bool {
        let limb = self.0.get((i / 32) as usize).copied().unwrap_or(0);
        limb >> (i % 32) & 1 == 1
    }

    /// The bits from `from` up, as a number: they must fit in 128 bits.
    pub fn bits_from(&self, from: u64) -> u128 {
        debug_assert!(self.bits() <= from + 128);
        (from..self.bits().max(from))
            .rev()
            .fold(0, |n, i| n << 1 | u128::from(self.bit(i)))
    }

    /// Whether any bit below bit `i` is set.
    pub fn any_below(&self, i: u64) -> bool {
        let (whole, rest) = ((i / 32) as usize, i % 32);
        let limbs = &self.0[..whole.min(self.0.len())];
        limbs.iter().any(|&l| l != 0)
            || (rest != 0
                && self
                    .0
                    .get(whole)
                    .is_some_and(|&l| l & ((1 << rest) - 1) != 0))
    }

    /// In decimal, without leading zeros ("0" for zero).
    pub fn to_decimal(&self) -> String {
        const CHUNK: u64 = 1_000_000_000;
        let mut n = self.clone();
        let mut chunks = Vec::new(); // 9 digits each, lowest first
        while !n.is_zero() {
            let mut rest = 0u64;
            for limb in n.0.iter_mut().rev() {
                let cur = rest << 32 | u64::from(*limb);
                *limb = (cur / CHUNK) as u32;
                rest = cur % CHUNK;
            }
            n.trim();
            chunks.push(rest);
        }
        let mut out = chunks.pop().unwrap_or(0).to_string();
        for chunk in chunks.iter().rev() {
            out.push_str(&format!("{chunk:09}"));
        }
        out
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Big) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Big) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(n: u128) -> Big {
        Big::from_u128(n)
    }

    #[test]
    fn arithmetic_agrees_with_u128() {
        let samples = [
            0u128,
            1,
            7,
            0xffff_ffff,
            1 << 32,
            12_345_678_901_234_567_890,
            u64::MAX as u128,
        ];
        for &a in &samples {
            for &b in &samples {
                assert_eq!(big(a).add(&big(b)), big(a + b));
                assert_eq!(big(a).cmp(&big(b)), a.cmp(&b));
                if a >= b {
                    let mut d = big(a);
                    d.sub_assign(&big(b));
                    assert_eq!(d, big(a - b));
                }
            }
            assert_eq!(big(a).shl(37), big(a << 37));
            assert_eq!(big(a).shl(64).bits_from(64), a);
            let mut h = big(a);
            h.halve();
            assert_eq!(h, big(a / 2));
            let mut m = big(a);
            m.mul_add_small(1_000_000_007, 3);
            assert_eq!(m, big(a * 1_000_000_007 + 3));
            assert_eq!(big(a).to_decimal(), a.to_string());
            assert_eq!(big(a).bits(), u64::from(128 - a.leading_zeros()));
        }
        let mut p = big(3);
        p.mul_pow5(27);
        assert_eq!(p, big(3 * 5u128.pow(27)));
    }

    #[test]
    fn bits_past_the_top_and_below_a_position() {
        let n = big(0b1011_0000).shl(100);
        assert!(n.bit(104) && !n.bit(103) && !n.bit(1000));
        assert!(!n.any_below(104) && n.any_below(105));
        assert_eq!(n.bits_from(104), 0b1011);
        assert_eq!(n.bits_from(500), 0);
        let mut p = big(1);
        p.mul_pow5(100);
        // 5^100, as Python prints it.
        assert_eq!(
            p.to_decimal(),
            "7888609052210118054117285652827862296732064351090230047702789306640625"
        );
    }
}
