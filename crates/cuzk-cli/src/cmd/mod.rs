//! One module per `cuzk` subcommand: its flags (clap derive) and a `run` that returns the exit
//! code. `main` only parses and dispatches; a command must not reach into another command's
//! module except for the helpers named there (`prove::prove_with`, `params::ensure_params`,
//! `daemon::runtime`).

pub mod bench;
pub mod client;
pub mod daemon;
pub mod demo;
pub mod doctor;
pub mod gen_c1;
pub mod params;
pub mod pce;
pub mod post;
pub mod prove;
pub mod selftest;
pub mod update;
pub mod verify;
