//! The C ABI of cuda/*.cu. Every function returns 0 or a CUDA error code, with a message in
//! the caller's buffer; points cross as blst's layouts (affine in, Jacobian out), scalars as
//! blst's Montgomery form, which blstrs' types are `repr(transparent)` over.

use std::ffi::c_void;

pub type Handle = *mut c_void;

macro_rules! curve_fns {
    (
        $upload:ident,
        $free:ident,
        $resident:ident,
        $resident_dev:ident,
        $host:ident,
        $sum:ident,
        $sum_host:ident,
        $split:ident,
        $aff:ty,
        $proj:ty
    ) => {
        extern "C" {
            pub fn $upload(dev: i32, host: *const $aff, n: usize, handle: *mut Handle, msg: *mut u8, cap: usize) -> i32;
            pub fn $free(handle: Handle);
            pub fn $resident(
                handle: Handle,
                off: usize,
                scalars: *const blst::blst_fr,
                n: usize,
                out: *mut $proj,
                msg: *mut u8,
                cap: usize,
            ) -> i32;
            pub fn $resident_dev(
                handle: Handle,
                off: usize,
                d_scalars: *const c_void,
                n: usize,
                out: *mut $proj,
                msg: *mut u8,
                cap: usize,
            ) -> i32;
            pub fn $host(
                dev: i32,
                bases: *const $aff,
                scalars: *const blst::blst_fr,
                n: usize,
                out: *mut $proj,
                msg: *mut u8,
                cap: usize,
            ) -> i32;
            pub fn $sum(handle: Handle, bitmap: *const u32, nwords: usize, out: *mut $proj, msg: *mut u8, cap: usize) -> i32;
            pub fn $sum_host(
                dev: i32,
                bases: *const $aff,
                n: usize,
                bitmap: *const u32,
                nwords: usize,
                chunk: usize,
                out: *mut $proj,
                msg: *mut u8,
                cap: usize,
            ) -> i32;
            /// The 0/1/general split of an MSM over the first `n` resident bases whose
            /// scalars are in device memory (cuda/witness_split.cuh): `w[sel[k]]`, or `w[k]`
            /// when `sel` is null.
            pub fn $split(
                handle: Handle,
                w: *const c_void,
                sel: *const u32,
                n: usize,
                one: *const u32,
                mode: i32,
                ones_out: *mut $proj,
                gen_bases: *mut Handle,
                gen_scalars: *mut *mut c_void,
                n_general: *mut usize,
                msg: *mut u8,
                cap: usize,
            ) -> i32;
        }
    };
}

curve_fns!(
    cuzk_g1_upload,
    cuzk_g1_free,
    cuzk_g1_msm_resident,
    cuzk_g1_msm_resident_dev,
    cuzk_g1_msm_host,
    cuzk_g1_sum_bitmap,
    cuzk_g1_sum_bitmap_host,
    cuzk_g1_witness_split,
    blst::blst_p1_affine,
    blst::blst_p1
);
curve_fns!(
    cuzk_g2_upload,
    cuzk_g2_free,
    cuzk_g2_msm_resident,
    cuzk_g2_msm_resident_dev,
    cuzk_g2_msm_host,
    cuzk_g2_sum_bitmap,
    cuzk_g2_sum_bitmap_host,
    cuzk_g2_witness_split,
    blst::blst_p2_affine,
    blst::blst_p2
);

/// Stages reported by `cuzk_quotient`, in its order.
pub const QUOTIENT_STAGES: [&str; 10] = [
    "quotient: upload a, b, c",
    "quotient: a intt",
    "quotient: a coset ntt",
    "quotient: b intt",
    "quotient: b coset ntt",
    "quotient: c intt",
    "quotient: a*b",
    "quotient: coset intt",
    "quotient: (-c)/z + bit reversal",
    "quotient: download h (0 when h stays on the device)",
];

/// One matrix as `cuzk_pce_upload` reads it.
#[repr(C)]
pub struct CsrHost {
    pub row_ptr: *const u32,
    pub cols: *const u32,
    pub coeff: *const u16,
    pub rows: usize,
    pub nnz: usize,
}

/// Stages reported by `cuzk_matvec_quotient`, in its order (the mat-vec's five, then the
/// quotient's transforms on the device-made a, b, c).
pub const MATVEC_QUOTIENT_STAGES: [&str; 13] = [
    "mat-vec: upload witness",
    "mat-vec: value kinds",
    "mat-vec: A",
    "mat-vec: B",
    "mat-vec: C",
    "quotient: a intt",
    "quotient: a coset ntt",
    "quotient: b intt",
    "quotient: b coset ntt",
    "quotient: c intt",
    "quotient: a*b",
    "quotient: coset intt",
    "quotient: (-c)/z + bit reversal",
];
/// How many of [`MATVEC_QUOTIENT_STAGES`] belong to the mat-vec.
pub const MATVEC_STAGES: usize = 5;

extern "C" {
    pub fn cuzk_pce_upload(
        dev: i32,
        m: *const CsrHost,
        coeffs: *const blst::blst_fr,
        ncoeffs: usize,
        num_inputs: usize,
        num_aux: usize,
        handle: *mut Handle,
        msg: *mut u8,
        cap: usize,
    ) -> i32;
    pub fn cuzk_pce_free(handle: Handle);
    pub fn cuzk_matvec(
        handle: Handle,
        w: *const blst::blst_fr,
        a: *mut blst::blst_fr,
        b: *mut blst::blst_fr,
        c: *mut blst::blst_fr,
        ms: *mut f64,
        msg: *mut u8,
        cap: usize,
    ) -> i32;
    pub fn cuzk_matvec_quotient(
        handle: Handle,
        d_w: *const blst::blst_fr,
        lg_n: u32,
        zinv: *const blst::blst_fr,
        keep: *mut *mut c_void,
        ms: *mut f64,
        msg: *mut u8,
        cap: usize,
    ) -> i32;
    pub fn cuzk_device_count(count: *mut i32, msg: *mut u8, cap: usize) -> i32;
    pub fn cuzk_device_name(dev: i32, name: *mut u8, name_cap: usize, mem: *mut usize, msg: *mut u8, cap: usize) -> i32;
    pub fn cuzk_device_free(dev: i32, p: *mut c_void);
    #[cfg(test)]
    pub fn cuzk_device_free_bytes(dev: i32, free_bytes: *mut usize, msg: *mut u8, cap: usize) -> i32;
    pub fn cuzk_device_alloc(dev: i32, bytes: usize, p: *mut *mut c_void, msg: *mut u8, cap: usize) -> i32;
    pub fn cuzk_copy_to_device(dev: i32, dst: *mut c_void, src: *const c_void, bytes: usize, msg: *mut u8, cap: usize) -> i32;
    pub fn cuzk_host_alloc(dev: i32, bytes: usize, p: *mut *mut c_void, msg: *mut u8, cap: usize) -> i32;
    pub fn cuzk_host_free(p: *mut c_void);
    /// cuzk's own Pippenger driver (cuda/pippenger_driver.cuh): `wbits`-bit windows, the
    /// points in `nchunks` chunks (0: as few as fit half the free device memory), the scalars
    /// in device memory or, with `scalars_on_host` ≠ 0, in host memory; `phase_ms` (or null)
    /// receives the times of [`MSM_PHASES`].
    pub fn cuzk_g1_msm_windowed(
        handle: Handle,
        off: usize,
        scalars: *const c_void,
        scalars_on_host: i32,
        n: usize,
        wbits: u32,
        nchunks: u32,
        out: *mut blst::blst_p1,
        phase_ms: *mut f32,
        msg: *mut u8,
        cap: usize,
    ) -> i32;
    pub fn cuzk_g1_msm_windowed_bytes(dev: i32, n: usize, wbits: u32, nchunks: u32) -> usize;
    /// The arithmetic ceilings (cuda/ceiling.cuh) over `n` host points: Fp and Fr
    /// multiplications per second, and for each of `nms` batch sizes XYZZ and batched-affine additions per second
    /// and the sum each way computed.
    pub fn cuzk_g1_ceilings(
        dev: i32,
        host_points: *const blst::blst_p1_affine,
        n: usize,
        rounds: u32,
        ms: *const u32,
        nms: usize,
        fp_mul_per_s: *mut f64,
        fr_mul_per_s: *mut f64,
        xyzz_per_s: *mut f64,
        affine_per_s: *mut f64,
        xyzz_sum: *mut blst::blst_p1,
        affine_sum: *mut blst::blst_p1,
        msg: *mut u8,
        cap: usize,
    ) -> i32;
    pub fn cuzk_ntt(dev: i32, inout: *mut blst::blst_fr, lg_n: u32, kind: i32, msg: *mut u8, cap: usize) -> i32;
    pub fn cuzk_quotient(
        dev: i32,
        a: *const blst::blst_fr,
        la: usize,
        b: *const blst::blst_fr,
        lb: usize,
        c: *const blst::blst_fr,
        lc: usize,
        lg_n: u32,
        zinv: *const blst::blst_fr,
        h: *mut blst::blst_fr,
        keep: *mut *mut c_void,
        ms: *mut f64,
        msg: *mut u8,
        cap: usize,
    ) -> i32;
}

pub use crate::MSM_PHASES;

#[cfg(test)]
mod tests {
    #[test]
    fn the_public_quotient_stage_names_are_the_ones_the_stage_log_writes() {
        for name in crate::QUOTIENT_TRANSFORM_STAGES.iter().chain(&crate::QUOTIENT_POINTWISE_STAGES) {
            assert!(super::QUOTIENT_STAGES.contains(name), "{name}");
            assert!(super::MATVEC_QUOTIENT_STAGES.contains(name), "{name}");
        }
    }
}
