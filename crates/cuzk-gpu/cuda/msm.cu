// G1 and G2 MSMs (and the split of MSMs over the device witness) in one translation unit (sppark's non-template sort kernel may be defined
// only once per device link): Jacobian results, XYZZ buckets, affine bases in blst's layout;
// G1 also has cuzk's own Pippenger driver over sppark's kernels (pippenger_driver.cuh) and
// the arithmetic ceilings its accumulation is judged against (ceiling.cuh).
#include <cuda.h>
#include <vector>
#include <ff/bls12-381-fp2.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>
#define SPPARK_DONT_INSTANTIATE_TEMPLATES
#include <msm/pippenger.cuh>
#include "common.cuh"

namespace cuzk_g1 {
typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;
#define CUZK_FN(name) cuzk_g1_##name
#include "msm.cuh"
#include "witness_split.cuh"
#include "pippenger_driver.cuh"
#include "ceiling.cuh"
#undef CUZK_FN
}

namespace cuzk_g2 {
typedef jacobian_t<fp2_t> point_t;
typedef xyzz_t<fp2_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;
#define CUZK_FN(name) cuzk_g2_##name
#include "msm.cuh"
#include "witness_split.cuh"
#undef CUZK_FN
}
