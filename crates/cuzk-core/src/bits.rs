//! Bitmaps as the prover and the PCE store them — 64 bits per `u64` word, bit i in word i/64 at
//! position i%64 (the density bitmaps: which variables appear in A or B): how many bits are set
//! and whether one is. This module knows words and bits only, not what the bits select.

/// Set bits in a bitmap.
pub fn popcount(bits: &[u64]) -> usize {
    bits.iter().map(|w| w.count_ones() as usize).sum()
}

/// Whether bit `i` is set (bits past the end are not).
pub fn bit(bits: &[u64], i: usize) -> bool {
    bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_reads_bits_across_words() {
        let bits = [0b1011u64, 1 << 63, 0];
        assert_eq!(popcount(&bits), 4);
        assert_eq!(popcount(&[]), 0);
        let set: Vec<usize> = (0..200).filter(|&i| bit(&bits, i)).collect();
        assert_eq!(set, vec![0, 1, 3, 127]);
        assert!(!bit(&bits, 1 << 20));
    }
}
