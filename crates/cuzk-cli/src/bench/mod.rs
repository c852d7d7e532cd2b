//! The benchmarks behind `cuzk bench`: old vs new synthesis ([`pce`]), one full-size
//! partition under random parameters ([`partition`]), old vs new path end to end and the
//! 0/1-split MSM ([`prove`]), the pipeline engine over N sectors ([`pipeline`]), warm PoSt
//! latency against filecoin-proofs' prover ([`post`]), WinningPoSt latency under PoRep load
//! ([`post_load`]), the daemon load test ([`daemon`]), a fresh against a pooled
//! partition-sized buffer ([`buffer_pool`]) and the MSM and quotient kernels of each
//! implementation side by side ([`kernels`]). They print and return figures; they prove nothing
//! a user keeps.

pub mod buffer_pool;
pub mod daemon;
pub mod kernels;
pub mod partition;
pub mod pce;
pub mod pipeline;
pub mod post;
pub mod post_load;
pub mod prove;
