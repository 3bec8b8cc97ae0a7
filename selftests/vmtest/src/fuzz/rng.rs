// SPDX-License-Identifier: GPL-2.0

//! The fuzzer's random numbers: SplitMix64, so that a seed replays a run
//! exactly (each worker, thread and kill cycle derives its own stream from
//! the run's seed and its place in the run).

/// A SplitMix64 generator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The stream of child `n` of `seed` (a worker, a thread, a cycle).
    pub fn derive(seed: u64, n: u64) -> Rng {
        let mut r = Rng(seed ^ n.wrapping_mul(0xd1b5_4a32_d192_ed03));
        r.next();
        r
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    /// An index into a collection of `n` items (0 when empty).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `pct` percent.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }

    /// One item of a non-empty slice, or `None`.
    pub fn pick<'a, T>(&mut self, s: &'a [T]) -> Option<&'a T> {
        if s.is_empty() {
            None
        } else {
            s.get(self.index(s.len()))
        }
    }

    /// A "boundary" 32-bit value: 0, 1, all ones, a sign bit, a power of
    /// two and its neighbours, or anything.
    pub fn edgy_u32(&mut self) -> u32 {
        match self.below(8) {
            0 => 0,
            1 => 1,
            2 => u32::MAX,
            3 => 0x8000_0000,
            4 => 1u32 << self.below(32),
            5 => (1u32 << self.below(32)).wrapping_sub(1),
            6 => (1u32 << self.below(32)).wrapping_add(1),
            _ => self.next() as u32,
        }
    }

    /// As [`Rng::edgy_u32`], 64 bits wide.
    pub fn edgy_u64(&mut self) -> u64 {
        match self.below(8) {
            0 => 0,
            1 => 1,
            2 => u64::MAX,
            3 => 1 << 63,
            4 => 1u64 << self.below(64),
            5 => (1u64 << self.below(64)).wrapping_sub(1),
            6 => (1u64 << self.below(64)).wrapping_add(1),
            _ => self.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn a_seed_replays() {
        let a: Vec<u64> = (0..8).map(|_| Rng::new(7).next()).collect();
        let mut r = Rng::new(7);
        let b: Vec<u64> = (0..8).map(|_| r.next()).collect();
        assert!(a.iter().all(|&x| x == a[0]));
        assert_eq!(b[0], a[0]);
        assert_ne!(b[0], b[1]);
        let mut d = Rng::derive(7, 1);
        assert_ne!(d.next(), Rng::derive(7, 2).next());
    }
}
