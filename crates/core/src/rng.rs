//! Seeded random streams. Every random decision in ackshape draws from a stream derived
//! from the scenario seed and a stable label, so runs are reproducible.

use rand::SeedableRng;
pub use rand_xoshiro::Xoshiro256PlusPlus as Rng;

/// A stream for `(seed, label, index)`: independent of the order streams are created in.
pub fn stream(seed: u64, label: &str, index: u64) -> Rng {
    // FNV-1a over the label, mixed with seed and index through SplitMix64.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in label.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    let mut x = seed ^ h.rotate_left(17) ^ index.wrapping_mul(0x9E3779B97F4A7C15);
    let mut next = || {
        x = x.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    };
    let mut s = [0u8; 32];
    for c in s.chunks_mut(8) {
        c.copy_from_slice(&next().to_le_bytes());
    }
    Rng::from_seed(s)
}
