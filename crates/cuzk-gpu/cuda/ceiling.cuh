// Ceiling microbenchmarks for the G1 MSM (issue 24, design note stages 1 and 4a): how many Fp
// multiplications, XYZZ mixed additions (sppark's bucket step) and affine additions batched
// with Montgomery's inversion trick one device does per second over resident random points.
// They measure the ceilings the MSM's accumulation is judged against and decide whether
// batch-affine accumulation is worth building; they compute nothing the prover uses. Included
// in the G1 namespace after msm.cuh (affine_t, bucket_t, point_t).

// The coordinates of an affine point as stored (sppark keeps them private; same layout).
struct ceil_affine_mem_t {
    fp_t::mem_t x, y;
};

#define CUZK_CEIL_THREADS 128

// Point index of the r-th addition into accumulator `acc` (of m per thread): a scattered start
// and the points after it, so an accumulator never adds its own starting point (an affine
// addition of equal points would need the tangent).
__device__ __forceinline__ static uint32_t ceil_start(uint32_t acc, uint32_t n) { return uint32_t((uint64_t(acc) * 7919u) % n); }
__device__ __forceinline__ static uint32_t ceil_index(uint32_t start, uint32_t r, uint32_t n) { return (start + 1 + r) % n; }

// Four independent chains of `iters` multiplications by m; their product is returned so the
// work is kept.
template<typename F> __device__ __forceinline__ static F ceil_mul_chains(F a, F b, F c, F d, const F &m, uint32_t iters)
{
    for (uint32_t i = 0; i < iters; i++) {
        a = a * m;
        b = b * m;
        c = c * m;
        d = d * m;
    }
    return (a * b) * (c * d);
}

// Fp (12 limbs), from the points' coordinates.
__launch_bounds__(CUZK_CEIL_THREADS) __global__ void CUZK_FN(ceil_fp_mul)(const ceil_affine_mem_t *pts, uint32_t n, uint32_t iters,
                                                                          fp_t::mem_t *out)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t a = pts[t % n].x, b = pts[t % n].y, c = pts[(t + 1) % n].x, d = pts[(t + 1) % n].y, m = pts[(t + 2) % n].x;
    out[t] = ceil_mul_chains(a, b, c, d, m, iters);
}

// Fr (8 limbs; the NTT's butterfly multiplication), from small distinct values.
__launch_bounds__(CUZK_CEIL_THREADS) __global__ void CUZK_FN(ceil_fr_mul)(uint32_t iters, fr_t *out)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    const fr_t one = fr_t::one();
    fr_t b = one + one, c = b + one, d = c + one, m = d + one;
    for (uint32_t j = 0; j < t % 8; j++) m = m + one;
    out[t] = ceil_mul_chains(one, b, c, d, m, iters);
}

// Each thread's m XYZZ buckets, each adding `rounds` affine points to its start point (one
// bucket chain at a time, as sppark's accumulate runs); the thread's buckets summed into out.
__launch_bounds__(CUZK_CEIL_THREADS) __global__ void CUZK_FN(ceil_xyzz)(const affine_t::mem_t *pts, uint32_t n, uint32_t m,
                                                                        uint32_t rounds, bucket_t::mem_t *out)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    bucket_t total;
    total.inf();
    for (uint32_t j = 0; j < m; j++) {
        uint32_t s = ceil_start(t * m + j, n);
        bucket_t b;
        b = affine_t(pts[s]);
        for (uint32_t r = 0; r < rounds; r++) b.add(affine_t(pts[ceil_index(s, r, n)]));
        total.add(b);
    }
    out[t] = total;
}

// The same additions in affine coordinates: each round adds one point to each of the thread's
// m accumulators with one shared inversion (prefix products of the x differences forward, one
// reciprocal, then each difference's inverse backward): 6 multiplications per addition plus
// 1/m of an inversion. Accumulators and prefix products live in `acc` and `pre`, m per thread,
// accumulator-major so a warp's accesses are contiguous.
__launch_bounds__(CUZK_CEIL_THREADS) __global__ void CUZK_FN(ceil_affine)(const ceil_affine_mem_t *pts, uint32_t n, uint32_t m,
                                                                          uint32_t rounds, ceil_affine_mem_t *acc, fp_t::mem_t *pre,
                                                                          bucket_t::mem_t *out)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x, T = gridDim.x * blockDim.x;
    for (uint32_t j = 0; j < m; j++) acc[j * T + t] = pts[ceil_start(t * m + j, n)];
    for (uint32_t r = 0; r < rounds; r++) {
        fp_t prod = fp_t::one();
        for (uint32_t j = 0; j < m; j++) {
            fp_t ax = acc[j * T + t].x, px = pts[ceil_index(ceil_start(t * m + j, n), r, n)].x;
            pre[j * T + t] = prod;
            prod = prod * (px - ax);
        }
        fp_t inv = prod.reciprocal();
        for (uint32_t j = m; j-- > 0;) {
            const ceil_affine_mem_t &p = pts[ceil_index(ceil_start(t * m + j, n), r, n)];
            fp_t ax = acc[j * T + t].x, ay = acc[j * T + t].y, px = p.x, py = p.y;
            fp_t d = px - ax;
            fp_t dinv = inv * fp_t(pre[j * T + t]);
            inv = inv * d;
            fp_t lambda = (py - ay) * dinv;
            fp_t x3 = lambda * lambda - ax - px;
            fp_t y3 = lambda * (ax - x3) - ay;
            acc[j * T + t].x = x3;
            acc[j * T + t].y = y3;
        }
    }
    bucket_t total;
    total.inf();
    for (uint32_t j = 0; j < m; j++) {
        fp_t x = acc[j * T + t].x, y = acc[j * T + t].y;
        bucket_t b(x, y, false);
        total.add(b);
    }
    out[t] = total;
}

// Σ of the threads' totals, on the host.
static point_t CUZK_FN(ceil_total)(const gpu_t &gpu, const bucket_t::mem_t *d_out, size_t threads)
{
    std::vector<bucket_t> h(threads);
    gpu.DtoH(h.data(), d_out, threads);
    gpu.sync();
    bucket_t sum = sum_up(h);
    return point_t(sum);
}

// Elapsed milliseconds of what `launch` queues on the default stream.
template<typename F> static float CUZK_FN(ceil_time)(const gpu_t &gpu, F launch)
{
    cudaEvent_t a, b;
    CUDA_OK(cudaEventCreate(&a));
    CUDA_OK(cudaEventCreate(&b));
    const cudaStream_t st = gpu;
    CUDA_OK(cudaEventRecord(a, st));
    launch();
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaEventRecord(b, st));
    CUDA_OK(cudaEventSynchronize(b));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, a, b));
    (void)cudaEventDestroy(a);
    (void)cudaEventDestroy(b);
    return ms;
}

// Runs the ceilings over n host points uploaded here: `fp_mul_per_s` and `fr_mul_per_s`
// receive Fp and Fr multiplications per second; for each batch size ms[i], xyzz_per_s[i] and affine_per_s[i]
// the additions per second of each way and xyzz_sum[i], affine_sum[i] the sums both ways
// computed (equal when the affine formulas are right; the caller compares them). Each kernel
// runs once untimed first.
extern "C" int CUZK_FN(ceilings)(int dev, const affine_t *host_points, size_t n, uint32_t rounds, const uint32_t *ms, size_t nms,
                                 double *fp_mul_per_s, double *fr_mul_per_s, double *xyzz_per_s, double *affine_per_s, point_t *xyzz_sum, point_t *affine_sum,
                                 CUZK_ERR_ARGS)
{
    CUZK_TRY
    if (n < 4 || n >= (size_t(1) << 31)) throw cuda_error{-1, std::string("the ceilings need 4 to 2^31 points")};
    const gpu_t &gpu = select_gpu(dev);
    gpu.select();
    const uint32_t blocks = gpu.sm_count() * 4, threads = blocks * CUZK_CEIL_THREADS;
    const cudaStream_t st = gpu;
    dev_ptr_t<affine_t::mem_t> d_pts{n};
    gpu.HtoD(&d_pts[0], host_points, n);
    const auto *cpts = reinterpret_cast<const ceil_affine_mem_t *>(&d_pts[0]);
    dev_ptr_t<bucket_t::mem_t> d_out{threads};
    {
        const uint32_t iters = 1 << 14;
        dev_ptr_t<fp_t::mem_t> d_f{threads};
        auto run = [&] { CUZK_FN(ceil_fp_mul)<<<blocks, CUZK_CEIL_THREADS, 0, st>>>(cpts, (uint32_t)n, iters, &d_f[0]); };
        CUZK_FN(ceil_time)(gpu, run);
        *fp_mul_per_s = 4.0 * threads * iters / (CUZK_FN(ceil_time)(gpu, run) / 1e3);
        dev_ptr_t<fr_t> d_r{threads};
        auto run_fr = [&] { CUZK_FN(ceil_fr_mul)<<<blocks, CUZK_CEIL_THREADS, 0, st>>>(iters, &d_r[0]); };
        CUZK_FN(ceil_time)(gpu, run_fr);
        *fr_mul_per_s = 4.0 * threads * iters / (CUZK_FN(ceil_time)(gpu, run_fr) / 1e3);
    }
    for (size_t i = 0; i < nms; i++) {
        const uint32_t m = std::max<uint32_t>(1, ms[i]);
        const double adds = double(threads) * m * rounds;
        auto xyzz = [&] { CUZK_FN(ceil_xyzz)<<<blocks, CUZK_CEIL_THREADS, 0, st>>>(&d_pts[0], (uint32_t)n, m, rounds, &d_out[0]); };
        CUZK_FN(ceil_time)(gpu, xyzz);
        xyzz_per_s[i] = adds / (CUZK_FN(ceil_time)(gpu, xyzz) / 1e3);
        xyzz_sum[i] = CUZK_FN(ceil_total)(gpu, &d_out[0], threads);
        dev_ptr_t<ceil_affine_mem_t> d_acc{size_t(threads) * m};
        dev_ptr_t<fp_t::mem_t> d_pre{size_t(threads) * m};
        auto affine = [&] {
            CUZK_FN(ceil_affine)<<<blocks, CUZK_CEIL_THREADS, 0, st>>>(cpts, (uint32_t)n, m, rounds, &d_acc[0], &d_pre[0], &d_out[0]);
        };
        CUZK_FN(ceil_time)(gpu, affine);
        affine_per_s[i] = adds / (CUZK_FN(ceil_time)(gpu, affine) / 1e3);
        affine_sum[i] = CUZK_FN(ceil_total)(gpu, &d_out[0], threads);
    }
    CUZK_CATCH
}
