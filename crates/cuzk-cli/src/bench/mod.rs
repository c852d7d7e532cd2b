//! The benchmarks behind `cuzk bench`: old vs new synthesis ([`pce`]), one full-size
//! partition under random parameters ([`partition`]), old vs new path end to end and the
//! 0/1-split MSM ([`prove`]). They print and return figures; they prove nothing a user keeps.

pub mod partition;
pub mod pce;
pub mod prove;
