//! Mutations of client bytes for the fuzz tests (proptest): truncation, a flipped byte,
//! spliced garbage, a little-endian u64 length made huge, a run of digits spliced in (a
//! number made enormous in text). One set for every reader, so each reader meets them all.

use proptest::prelude::*;

/// Proptest's settings: `default` cases, or `PROPTEST_CASES`.
pub fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

#[derive(Debug, Clone)]
pub enum Mutation {
    Truncate(usize),
    Flip(usize, u8),
    Splice(usize, Vec<u8>),
    /// A u64 little-endian length or count at this offset set to a huge value.
    HugeLength(usize),
    /// Digits spliced in here: a number in text made enormous.
    Digits(usize),
}

/// Mutations of an input of about `len` bytes (see [`fit`] for other lengths).
pub fn mutation(len: usize) -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0..len).prop_map(Mutation::Truncate),
        (0..len, any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (0..len, proptest::collection::vec(any::<u8>(), 1..64)).prop_map(|(i, v)| Mutation::Splice(i, v)),
        (0..len.saturating_sub(8)).prop_map(Mutation::HugeLength),
        (0..len).prop_map(Mutation::Digits),
    ]
}

/// `m` with its offsets brought inside an input of `len` bytes (at least 9).
pub fn fit(m: Mutation, len: usize) -> Mutation {
    match m {
        Mutation::Truncate(n) => Mutation::Truncate(n % len),
        Mutation::Flip(i, b) => Mutation::Flip(i % len, b),
        Mutation::Splice(i, v) => Mutation::Splice(i % len, v),
        Mutation::HugeLength(i) => Mutation::HugeLength(i % (len - 8)),
        Mutation::Digits(i) => Mutation::Digits(i % len),
    }
}

/// `b` mutated by `m` (offsets inside `b`: see [`fit`]).
pub fn apply(mut b: Vec<u8>, m: &Mutation) -> Vec<u8> {
    match m {
        Mutation::Truncate(n) => b.truncate(*n),
        Mutation::Flip(i, v) => b[*i] ^= v | 1,
        Mutation::Splice(i, v) => {
            b.splice(*i..*i, v.iter().cloned());
        }
        Mutation::HugeLength(i) => b[*i..*i + 8].copy_from_slice(&(u64::MAX / 3).to_le_bytes()),
        Mutation::Digits(i) => {
            b.splice(*i..*i, b"99999999999999999999".iter().cloned());
        }
    }
    b
}
