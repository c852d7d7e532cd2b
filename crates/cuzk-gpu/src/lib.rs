//! `cuzk-gpu` will own the CUDA backend on sppark (G1/G2 MSM, NTT, device-resident SRS,
//! pinned buffers, device selection) behind `cuzk-core`'s backend traits, and will always
//! build without CUDA, answering "built without cuda". It must not know about circuits or
//! pipelines. No code yet: the CUDA issue builds it.
