//! Keyed hashing of keys that come off the wire (flow tuples): every flow table a mechanism or a
//! queue discipline keeps is a [`KeyedMap`] hashed with SipHash-1-3 under a 128-bit [`HashKey`]
//! the driver chooses — derived from the scenario seed in the simulator ([`HashKey::from_seed`]),
//! random in the live gateway, tap and WAN emulator ([`HashKey::random`]). Without the key, nobody
//! can choose tuples that fall into one bucket, so a flood of crafted tuples costs the data plane
//! what random ones cost (`crates/core/benches/flood.rs`). This is what Linux does for the same
//! reason: its flow dissector hashes a packet's tuple with SipHash under a random boot-time key
//! (`__flow_hash_from_keys`, net/core/flow_dissector.c), and its flow queuing disciplines perturb
//! their hash (sch_fq_codel's `perturbation`, sch_sfq's `perturb_period`). SipHash-1-3 is also
//! what Rust's own `HashMap` uses against hash flooding.
//!
//! No result depends on the order of a keyed table: where the gateway walks one (evicting idle
//! flows), it walks them in insertion order, so the same scenario and seed give the same results
//! whatever the key.

use siphasher::sip::SipHasher13;
use std::hash::BuildHasher;

/// A 128-bit SipHash key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HashKey(pub u64, pub u64);

impl std::fmt::Debug for HashKey {
    // Never print the key itself (a log line would hand it to whoever reads the logs).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HashKey(..)")
    }
}

impl HashKey {
    /// The key for a seed: the simulator's, from the scenario seed (deterministic).
    pub fn from_seed(seed: u64) -> HashKey {
        use rand::RngCore;
        let mut r = crate::rng::stream(seed, "flow-hash", 0);
        HashKey(r.next_u64(), r.next_u64())
    }

    /// A key drawn from a random stream without consuming it (the stream's later draws are the
    /// same with or without this call).
    pub fn from_rng(rng: &crate::rng::Rng) -> HashKey {
        use rand::RngCore;
        let mut r = rng.clone();
        r.jump();
        HashKey(r.next_u64(), r.next_u64())
    }

    /// A key from the operating system's randomness (the live boxes): `std`'s `RandomState` draws
    /// its keys from it, and hashing a constant under two fresh ones gives 128 unpredictable bits.
    pub fn random() -> HashKey {
        let a = std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64);
        let b = std::collections::hash_map::RandomState::new().hash_one(0xf00d_u64);
        HashKey(a, b)
    }

    /// An independent key for one of several tables (`label`, `index`), so tables never share a
    /// key and learning about one table's layout tells nothing about another's.
    pub fn derive(&self, label: &str, index: u64) -> HashKey {
        use std::hash::Hasher;
        let mut h = SipHasher13::new_with_keys(self.0, self.1);
        h.write(label.as_bytes());
        h.write_u64(index);
        let a = h.finish();
        h.write_u8(1);
        HashKey(a, h.finish())
    }
}

impl Default for HashKey {
    /// A fixed key, for tables whose owner has not been given one yet: the driver keys them
    /// before the first packet (a queue discipline with `QueueDisc::set_hash_key`, a mechanism
    /// with `AckMechanism::set_hash_key`, the gateway and the tap through their constructors).
    fn default() -> HashKey {
        HashKey::from_seed(0)
    }
}

/// The [`BuildHasher`] of keyed tables: SipHash-1-3 under a [`HashKey`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Keyed(HashKey);

impl Keyed {
    pub fn new(key: HashKey) -> Keyed {
        Keyed(key)
    }
}

impl BuildHasher for Keyed {
    type Hasher = SipHasher13;
    #[inline]
    fn build_hasher(&self) -> SipHasher13 {
        SipHasher13::new_with_keys(self.0 .0, self.0 .1)
    }
}

/// A hash map keyed with [`Keyed`].
pub type KeyedMap<K, V> = std::collections::HashMap<K, V, Keyed>;
/// An insertion-ordered map keyed with [`Keyed`] (for tables walked in part at a time).
pub type KeyedIndexMap<K, V> = indexmap::IndexMap<K, V, Keyed>;

/// An empty [`KeyedMap`] under `key`.
pub fn map<K, V>(key: HashKey) -> KeyedMap<K, V> {
    std::collections::HashMap::with_hasher(Keyed(key))
}

/// An empty [`KeyedIndexMap`] under `key`.
pub fn index_map<K, V>(key: HashKey) -> KeyedIndexMap<K, V> {
    indexmap::IndexMap::with_hasher(Keyed(key))
}

/// Rebuild `m` under `key` (its entries kept, in its order for an index map).
pub fn rekey<K: std::hash::Hash + Eq, V>(m: &mut KeyedMap<K, V>, key: HashKey) {
    let old = std::mem::replace(m, map(key));
    m.extend(old);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn keys_differ_by_seed_and_label_and_hashes_by_key() {
        let (a, b) = (HashKey::from_seed(1), HashKey::from_seed(2));
        assert_ne!(a, b);
        assert_eq!(a, HashKey::from_seed(1), "deterministic");
        assert_ne!(a.derive("x", 0), a.derive("x", 1));
        assert_ne!(a.derive("x", 0), a.derive("y", 0));
        let k = (1u32, 2u16);
        assert_ne!(Keyed(a).hash_one(k), Keyed(b).hash_one(k));
        assert_ne!(HashKey::random(), HashKey::random());
        assert_eq!(format!("{a:?}"), "HashKey(..)");
    }

    #[test]
    fn a_key_from_a_stream_leaves_the_stream_as_it_was() {
        use rand::RngCore;
        let r = crate::rng::stream(7, "x", 0);
        let mut r1 = r.clone();
        let k = HashKey::from_rng(&r);
        let mut r2 = r.clone();
        assert_eq!(r1.next_u64(), r2.next_u64());
        assert_eq!(k, HashKey::from_rng(&r));
    }
}
