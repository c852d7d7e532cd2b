//! The locks of the CUDA backend: [`DeviceLock`] is `cuzk-core`'s
//! ([`cuzk_core::device_lock`]), re-exported here where the backend's users have always found
//! it. It survives a panic: a `std::sync::Mutex` whose holder panicked is poisoned, and every
//! later `lock().unwrap()` panics too, so one panic on a device would disable that GPU until
//! the process restarts; [`DeviceLock`] never answers with poison: the next caller gets the
//! guard after `reset` has put the guarded state back into a known-good shape (for the CUDA
//! backend: resident bases and matrices forgotten, so they are uploaded again). It is also
//! priority-ordered: when several threads wait, the one whose job has the highest
//! [`cuzk_core::priority::Priority`] goes next (equal priorities in arrival order, each
//! waiter overtaken a bounded number of times), so an urgent job's device calls go before a
//! running lower-priority partition's remaining ones. It is compiled with or without CUDA;
//! its tests (order, overtake bound, panic recovery) live with it in `cuzk-core`.

pub use cuzk_core::device_lock::{DeviceGuard, DeviceLock, DEFAULT_MAX_OVERTAKES};
