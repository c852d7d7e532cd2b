//! SHA-256 witness on machine words: the aux assignments that bellperson's `sha256` gadget
//! allocates, in the order it allocates them, computed without building a single linear
//! combination. A 32-bit word carries three masks — its value, which of its bits are
//! constants, and which of its variable bits are negated views (`Boolean::Not`) of the bit the
//! circuit allocated — so an XOR of two words is three mask operations plus one store per
//! allocated bit, and the gadget's case analysis (constant operands allocate nothing, a
//! negated operand flips the result's view) is reproduced bit for bit. Exactness is tested
//! against the gadget itself on random inputs mixing constant, allocated and negated bits.

use blstrs::Scalar;
use ff::Field;

/// One bit as the circuit sees it: a constant, an allocated bit, or the negation of one.
/// `value` is the bit's logical value (for a negation: the negated one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bit {
    /// The bit's logical value.
    pub value: bool,
    /// Whether the bit is a constant (`Boolean::Constant`), which the circuit never allocates.
    pub constant: bool,
    /// Whether the bit is a negated view (`Boolean::Not`) of an allocated bit; always false
    /// for a constant.
    pub negated: bool,
}

impl Bit {
    /// A constant bit (`Boolean::Constant`).
    pub const fn constant(value: bool) -> Bit {
        Bit { value, constant: true, negated: false }
    }

    /// An allocated bit (`Boolean::Is`).
    pub const fn var(value: bool) -> Bit {
        Bit { value, constant: false, negated: false }
    }

    fn not(self) -> Bit {
        Bit { value: !self.value, constant: self.constant, negated: !self.constant && !self.negated }
    }
}

/// Where allocated values go: the aux assignments, in order.
pub type Aux = Vec<Scalar>;

#[inline]
fn push(aux: &mut Aux, b: bool) {
    aux.push(if b { Scalar::ONE } else { Scalar::ZERO });
}

/// Pushes bit `i` of `vals` for every set bit `i` of `mask`, lowest first.
#[inline]
fn push_masked(aux: &mut Aux, mask: u32, vals: u32) {
    if mask == u32::MAX {
        aux.extend((0..32).map(|i| if (vals >> i) & 1 == 1 { Scalar::ONE } else { Scalar::ZERO }));
        return;
    }
    let mut m = mask;
    while m != 0 {
        let i = m.trailing_zeros();
        push(aux, (vals >> i) & 1 == 1);
        m &= m - 1;
    }
}

/// A `UInt32` of the gadget: bit `i` of each mask is the word's bit `i` (least significant
/// first, as the gadget stores them). `neg` is zero on constant bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word {
    value: u32,
    cons: u32,
    neg: u32,
}

impl Word {
    /// A word of 32 constant bits (`UInt32::constant`).
    pub fn constant(value: u32) -> Word {
        Word { value, cons: u32::MAX, neg: 0 }
    }

    /// The word's logical value.
    pub fn value(&self) -> u32 {
        self.value
    }

    fn bit(&self, i: u32) -> Bit {
        let c = (self.cons >> i) & 1 == 1;
        Bit { value: (self.value >> i) & 1 == 1, constant: c, negated: !c && (self.neg >> i) & 1 == 1 }
    }

    fn set(&mut self, i: u32, b: Bit) {
        let m = 1u32 << i;
        self.value = (self.value & !m) | ((b.value as u32) << i);
        self.cons = (self.cons & !m) | ((b.constant as u32) << i);
        self.neg = (self.neg & !m) | (((b.negated && !b.constant) as u32) << i);
    }

    /// `UInt32::from_bits_be`: 32 bits, most significant first.
    pub fn from_bits_be(bits: &[Bit]) -> Word {
        assert_eq!(bits.len(), 32);
        let mut w = Word { value: 0, cons: 0, neg: 0 };
        for (j, b) in bits.iter().enumerate() {
            w.set(31 - j as u32, *b);
        }
        w
    }

    /// `UInt32::into_bits_be`.
    pub fn bits_be(&self) -> impl Iterator<Item = Bit> + '_ {
        (0..32).rev().map(move |i| self.bit(i))
    }

    fn rotr(&self, by: u32) -> Word {
        Word { value: self.value.rotate_right(by), cons: self.cons.rotate_right(by), neg: self.neg.rotate_right(by) }
    }

    fn shr(&self, by: u32) -> Word {
        Word { value: self.value >> by, cons: (self.cons >> by) | !(u32::MAX >> by), neg: self.neg >> by }
    }

    /// `UInt32::xor`: a constant operand passes the other bit through (negated when the
    /// constant is one); two variable bits allocate their underlying bits' XOR, viewed
    /// negated when exactly one of them was.
    fn xor(&self, aux: &mut Aux, o: &Word) -> Word {
        let alloc = !self.cons & !o.cons;
        push_masked(aux, alloc, (self.value ^ self.neg) ^ (o.value ^ o.neg));
        let cons = self.cons & o.cons;
        let neg = (self.neg ^ o.neg ^ (self.cons & self.value) ^ (o.cons & o.value)) & !cons;
        Word { value: self.value ^ o.value, cons, neg }
    }

    /// `UInt32::addmany`: constant if every bit of every operand is; else the sum's bits,
    /// as many as the largest possible sum needs, of which the low 32 are the result.
    fn addmany(aux: &mut Aux, ops: &[Word]) -> Word {
        assert!((2..=10).contains(&ops.len()));
        let sum: u64 = ops.iter().map(|w| u64::from(w.value)).sum();
        if ops.iter().all(|w| w.cons == u32::MAX) {
            return Word::constant(sum as u32);
        }
        let max = ops.len() as u64 * u64::from(u32::MAX);
        let nbits = 64 - max.leading_zeros();
        push_masked(aux, u32::MAX, sum as u32);
        for i in 32..nbits {
            push(aux, (sum >> i) & 1 == 1);
        }
        Word { value: sum as u32, cons: 0, neg: 0 }
    }

    /// `UInt32::sha256_ch`, bit by bit unless no bit is constant.
    fn ch(aux: &mut Aux, a: &Word, b: &Word, c: &Word) -> Word {
        let value = (a.value & b.value) ^ (!a.value & c.value);
        if a.cons | b.cons | c.cons == 0 {
            push_masked(aux, u32::MAX, value);
            return Word { value, cons: 0, neg: 0 };
        }
        let mut out = Word { value: 0, cons: 0, neg: 0 };
        for i in 0..32 {
            out.set(i, ch_bit(aux, a.bit(i), b.bit(i), c.bit(i)));
        }
        out
    }

    /// `UInt32::sha256_maj`: in the general case each bit allocates maj, then b AND c.
    fn maj(aux: &mut Aux, a: &Word, b: &Word, c: &Word) -> Word {
        let value = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value);
        if a.cons | b.cons | c.cons == 0 {
            let bc = b.value & c.value;
            aux.reserve(64);
            for i in 0..32 {
                push(aux, (value >> i) & 1 == 1);
                push(aux, (bc >> i) & 1 == 1);
            }
            return Word { value, cons: 0, neg: 0 };
        }
        let mut out = Word { value: 0, cons: 0, neg: 0 };
        for i in 0..32 {
            out.set(i, maj_bit(aux, a.bit(i), b.bit(i), c.bit(i)));
        }
        out
    }
}

/// `Boolean::and`.
fn and(aux: &mut Aux, a: Bit, b: Bit) -> Bit {
    match (a.constant, b.constant) {
        (true, _) if !a.value => Bit::constant(false),
        (_, true) if !b.value => Bit::constant(false),
        (true, _) => b,
        (_, true) => a,
        _ => {
            let v = a.value & b.value;
            push(aux, v);
            Bit::var(v)
        }
    }
}

/// `Boolean::sha256_ch`, its special cases in the gadget's order.
fn ch_bit(aux: &mut Aux, a: Bit, b: Bit, c: Bit) -> Bit {
    let v = (a.value & b.value) ^ (!a.value & c.value);
    let is = |x: Bit, val: bool| x.constant && x.value == val;
    if a.constant && b.constant && c.constant {
        Bit::constant(v)
    } else if is(a, false) {
        c
    } else if is(b, false) {
        and(aux, a.not(), c)
    } else if is(c, false) {
        and(aux, a, b)
    } else if is(c, true) {
        and(aux, a, b.not()).not()
    } else if is(b, true) {
        and(aux, a.not(), c.not()).not()
    } else {
        push(aux, v);
        Bit::var(v)
    }
}

/// `Boolean::sha256_maj`, its special cases in the gadget's order.
fn maj_bit(aux: &mut Aux, a: Bit, b: Bit, c: Bit) -> Bit {
    let v = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value);
    let is = |x: Bit, val: bool| x.constant && x.value == val;
    if a.constant && b.constant && c.constant {
        Bit::constant(v)
    } else if is(a, false) {
        and(aux, b, c)
    } else if is(b, false) {
        and(aux, a, c)
    } else if is(c, false) {
        and(aux, a, b)
    } else if is(c, true) {
        and(aux, a.not(), b.not()).not()
    } else if is(b, true) {
        and(aux, a.not(), c.not()).not()
    } else if is(a, true) {
        and(aux, b.not(), c.not()).not()
    } else {
        push(aux, v);
        and(aux, b, c);
        Bit::var(v)
    }
}

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
    0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
    0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
    0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
    0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
    0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// A sum the gadget defers until its value is needed (its `Maybe`).
enum Lazy {
    Now(Word),
    Later(Vec<Word>),
}

impl Lazy {
    fn get(self, aux: &mut Aux, more: &[Word]) -> Word {
        match self {
            Lazy::Now(w) => w,
            Lazy::Later(mut v) => {
                v.extend_from_slice(more);
                Word::addmany(aux, &v)
            }
        }
    }
}

/// `sha256_compression_function`: one 512-bit block on the state `cur`.
pub fn compress(aux: &mut Aux, block: &[Bit], cur: &[Word; 8]) -> [Word; 8] {
    assert_eq!(block.len(), 512);
    let mut w: Vec<Word> = block.chunks(32).map(Word::from_bits_be).collect();
    w.reserve(48);
    for i in 16..64 {
        let s0 = w[i - 15].rotr(7).xor(aux, &w[i - 15].rotr(18)).xor(aux, &w[i - 15].shr(3));
        let s1 = w[i - 2].rotr(17).xor(aux, &w[i - 2].rotr(19)).xor(aux, &w[i - 2].shr(10));
        let t = Word::addmany(aux, &[w[i - 16], s0, w[i - 7], s1]);
        w.push(t);
    }
    let mut a = Lazy::Now(cur[0]);
    let (mut b, mut c, mut d) = (cur[1], cur[2], cur[3]);
    let mut e = Lazy::Now(cur[4]);
    let (mut f, mut g, mut h) = (cur[5], cur[6], cur[7]);
    for (i, wi) in w.iter().enumerate() {
        let new_e = e.get(aux, &[]);
        let s1 = new_e.rotr(6).xor(aux, &new_e.rotr(11)).xor(aux, &new_e.rotr(25));
        let ch = Word::ch(aux, &new_e, &f, &g);
        let temp1 = [h, s1, ch, Word::constant(ROUND_CONSTANTS[i]), *wi];
        let new_a = a.get(aux, &[]);
        let s0 = new_a.rotr(2).xor(aux, &new_a.rotr(13)).xor(aux, &new_a.rotr(22));
        let maj = Word::maj(aux, &new_a, &b, &c);
        h = g;
        g = f;
        f = new_e;
        e = Lazy::Later(temp1.iter().copied().chain(Some(d)).collect());
        d = c;
        c = b;
        b = new_a;
        a = Lazy::Later(temp1.iter().copied().chain([s0, maj]).collect());
    }
    let h0 = a.get(aux, &[cur[0]]);
    let h1 = Word::addmany(aux, &[cur[1], b]);
    let h2 = Word::addmany(aux, &[cur[2], c]);
    let h3 = Word::addmany(aux, &[cur[3], d]);
    let h4 = e.get(aux, &[cur[4]]);
    let h5 = Word::addmany(aux, &[cur[5], f]);
    let h6 = Word::addmany(aux, &[cur[6], g]);
    let h7 = Word::addmany(aux, &[cur[7], h]);
    [h0, h1, h2, h3, h4, h5, h6, h7]
}

/// bellperson's `sha256` gadget: pads `input` (a whole number of bytes) and returns the 256
/// digest bits, most significant first, as the gadget's `Boolean`s would be.
pub fn sha256(aux: &mut Aux, input: &[Bit]) -> Vec<Bit> {
    assert!(input.len() % 8 == 0);
    let mut padded = Vec::with_capacity(input.len() + 576);
    padded.extend_from_slice(input);
    let len = input.len() as u64;
    padded.push(Bit::constant(true));
    while (padded.len() + 64) % 512 != 0 {
        padded.push(Bit::constant(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::constant((len >> i) & 1 == 1)));
    let mut cur = IV.map(Word::constant);
    for block in padded.chunks(512) {
        cur = compress(aux, block, &cur);
    }
    cur.iter().flat_map(|w| w.bits_be().collect::<Vec<_>>()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WitnessCs;
    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use bellperson::ConstraintSystem;
    use rand::{Rng, SeedableRng};

    /// Random input bits: constants, allocated bits and negated allocated bits; returns the
    /// native description and the gadget's `Boolean`s (allocated in `cs`).
    fn random_input(rng: &mut impl Rng, cs: &mut WitnessCs, bits: usize, p_const: f64) -> (Vec<Bit>, Vec<Boolean>) {
        (0..bits)
            .map(|_| {
                let v: bool = rng.gen();
                if rng.gen_bool(p_const) {
                    (Bit::constant(v), Boolean::constant(v))
                } else if rng.gen_bool(0.3) {
                    let a = AllocatedBit::alloc(&mut *cs, Some(!v)).unwrap();
                    (Bit { value: v, constant: false, negated: true }, Boolean::Not(a))
                } else {
                    let a = AllocatedBit::alloc(&mut *cs, Some(v)).unwrap();
                    (Bit::var(v), Boolean::Is(a))
                }
            })
            .unzip()
    }

    fn view(b: &Boolean) -> Bit {
        match b {
            Boolean::Constant(v) => Bit::constant(*v),
            Boolean::Is(a) => Bit::var(a.get_value().unwrap()),
            Boolean::Not(a) => Bit { value: !a.get_value().unwrap(), constant: false, negated: true },
        }
    }

    #[test]
    fn native_sha256_allocates_what_the_gadget_allocates() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        // Lengths across block boundaries; constant shares from none to all, so that every
        // special case of xor / ch / maj / addmany is taken.
        for (case, &(bytes, p_const)) in
            [(0, 0.0), (1, 0.5), (32, 0.0), (55, 0.2), (56, 0.9), (64, 0.05), (64, 1.0), (100, 0.5), (128, 0.0), (200, 0.97)]
                .iter()
                .enumerate()
        {
            let mut cs = WitnessCs::new();
            let (native_in, gadget_in) = random_input(&mut rng, &mut cs, bytes * 8, p_const);
            let start = cs.aux.len();
            let out = bellperson::gadgets::sha256::sha256(cs.namespace(|| "sha"), &gadget_in).unwrap();
            let mut aux = Vec::new();
            let native_out = sha256(&mut aux, &native_in);
            assert_eq!(aux.len(), cs.aux.len() - start, "case {case}: allocation count");
            assert!(aux == cs.aux[start..], "case {case}: allocated values differ");
            assert_eq!(native_out, out.iter().map(view).collect::<Vec<_>>(), "case {case}: digest bits differ");
        }
    }

    #[test]
    fn native_digest_is_sha256() {
        use sha2::Digest;
        let msg = b"cuzk native sha256 witness, two blocks of input to hash here.......";
        let bits: Vec<Bit> = msg.iter().flat_map(|&byte| (0..8).rev().map(move |i| Bit::var((byte >> i) & 1 == 1))).collect();
        let out = sha256(&mut Vec::new(), &bits);
        let bytes: Vec<u8> = out.chunks(8).map(|c| c.iter().fold(0u8, |acc, b| (acc << 1) | b.value as u8)).collect();
        assert_eq!(bytes, sha2::Sha256::digest(msg).to_vec());
    }
}
