// sppark's host-side field code (blst_t.hpp) calls blst's internal Montgomery routines, which
// the blst crate's build keeps local to its archive. sppark instantiates them only for the
// BLS12-381 base field P (and its quadratic extension), so blst's exported Fp/Fp2 routines
// compute the same thing; these forwarders bind the internal names to them.
#include <cstdint>

extern "C" {
void blst_fp_mul(void *ret, const void *a, const void *b);
void blst_fp_sqr(void *ret, const void *a);
void blst_fp2_mul(void *ret, const void *a, const void *b);
void blst_fp2_sqr(void *ret, const void *a);

void mul_mont_384(uint64_t *ret, const uint64_t *a, const uint64_t *b, const uint64_t *, uint64_t)
{   blst_fp_mul(ret, a, b);   }
void sqr_mont_384(uint64_t *ret, const uint64_t *a, const uint64_t *, uint64_t)
{   blst_fp_sqr(ret, a);   }
void mul_mont_384x(uint64_t *ret, const uint64_t *a, const uint64_t *b, const uint64_t *, uint64_t)
{   blst_fp2_mul(ret, a, b);   }
void sqr_mont_384x(uint64_t *ret, const uint64_t *a, const uint64_t *, uint64_t)
{   blst_fp2_sqr(ret, a);   }
}
