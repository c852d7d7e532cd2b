//! Compiles cuzk's CUDA sources (cuda/*.cu) with nvcc when feature `cuda` is on: sm_90 by
//! default (`CUZK_CUDA_ARCH=89` etc. to change), static cudart, no device debug code. The CUDA
//! toolkit comes from `CUDA_HOME` (what `cargo xtask cuda-setup` installs); without the feature
//! nothing is compiled and the crate answers "built without cuda".

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=cuda");
    println!("cargo:rerun-if-env-changed=CUZK_CUDA_ARCH");
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    if env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let sppark = env::var("DEP_SPPARK_ROOT").expect("sppark did not export its source root (DEP_SPPARK_ROOT)");
    let blst = env::var("DEP_BLST_C_SRC").expect("blst did not export its C sources (DEP_BLST_C_SRC)");
    let arch = env::var("CUZK_CUDA_ARCH").unwrap_or_else(|_| "90".into());
    let mut b = cc::Build::new();
    b.cuda(true)
        .cudart("static")
        .debug(false)
        .opt_level(3)
        .include(&sppark)
        .include(&blst)
        .flag("-std=c++17")
        .flag("-DFEATURE_BLS12_381")
        .flag("-DTAKE_RESPONSIBILITY_FOR_ERROR_MESSAGE")
        .flag(format!("-gencode=arch=compute_{arch},code=sm_{arch}"))
        .flag(format!("-gencode=arch=compute_{arch},code=compute_{arch}"))
        .flag("-Xcompiler=-Wno-unused-function")
        .flag("-Xcompiler=-Wno-subobject-linkage");
    for f in ["cuda/msm.cu", "cuda/ntt.cu", "cuda/matvec.cu"] {
        b.file(f);
    }
    b.compile("cuzk_cuda");
    cc::Build::new().cpp(true).file("cuda/blst_shim.cpp").opt_level(3).compile("cuzk_blst_shim");
    if let Some(home) = env::var_os("CUDA_HOME").map(PathBuf::from) {
        for lib in ["lib", "lib64"] {
            let p = home.join(lib);
            if p.is_dir() {
                println!("cargo:rustc-link-search=native={}", p.display());
            }
        }
    }
    println!("cargo:rustc-link-lib=static=cudart_static");
    for l in ["dl", "rt", "pthread", "stdc++"] {
        println!("cargo:rustc-link-lib={l}");
    }
}
