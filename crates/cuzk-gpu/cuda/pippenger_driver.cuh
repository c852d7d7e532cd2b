// cuzk's own Pippenger driver for G1 over sppark's MSM kernels (issue 24, stages 1 and 2):
// the window width and the number of point chunks are parameters instead of sppark's fixed
// policy (window ≤ 18, 2^(lg n − w − 6) chunks), each phase is timed with CUDA events, and
// the buckets are reduced by our own kernel (many segments per window, where sppark's
// integrate runs 256 threads per window, which made windows above 18 bits slow) and combined
// on the host by our own code. It owns the schedule, the bucket reduction and the
// combination; the digit breakdown, sort and accumulation kernels and the field and curve
// arithmetic stay sppark's. Included inside the G1 namespace after msm.cuh (bases_t,
// point_t, bucket_t, affine_t, scalar_t).
#include <chrono>
#include <thread>

// The window layout for `wbits`: nwins signed windows over the scalar's 255 bits, the top
// one `top` bits wide (sppark's sort spreads its few buckets over the point index's low
// bits, w − top of them).
struct window_plan_t {
    uint32_t wbits, nwins, top;
    explicit window_plan_t(uint32_t w) : wbits(w)
    {
        nwins = (scalar_t::bit_length() - 1) / w + 1;
        top = scalar_t::bit_length() - w * (nwins - 1);
    }
    size_t row() const { return size_t(1) << (wbits - 1); } // buckets per window
    uint32_t spread(uint32_t y) const { return y == nwins - 1 ? wbits - top : 0; }
};

// The window sizes the driver accepts: from sppark's narrowest (10) to what its sort handles
// (2 × 13 bucket bits).
static const uint32_t CUZK_MSM_MIN_WINDOW = 10, CUZK_MSM_MAX_WINDOW = 26;

// Phases the driver times, summed over chunks (milliseconds).
enum { PH_DIGITS, PH_ACCUMULATE, PH_SEGMENTS, PH_HOST, PH_COUNT };

// Threads per block of segment_sums (three XYZZ points per thread in registers).
#define CUZK_SEGMENT_THREADS 128
// Segments per window: 2^11, or one per bucket for narrower windows.
static uint32_t log_segments(uint32_t wbits) { return std::min<uint32_t>(wbits - 1, 11); }

// Each window's 2^(w−1) buckets cut into 2^log_nseg segments of i0 = 2^(w−1−log_nseg), one
// thread per segment: walking down its segment it keeps the running sum acc and adds acc to
// res at every local index that is a multiple of 2^s (s = `top_spread` in the top window,
// whose buckets come in groups of 2^s by weight, else 0), giving the pair (res, acc) that
// window_sum combines. Pairs are written window by window, 2 per segment.
__launch_bounds__(CUZK_SEGMENT_THREADS) __global__ void CUZK_FN(segment_sums)(const bucket_t::mem_t *buckets, bucket_t::mem_t *pairs,
                                                                              uint32_t nwins, uint32_t wbits, uint32_t log_nseg,
                                                                              uint32_t top_spread)
{
    const uint32_t log_i0 = wbits - 1 - log_nseg;
    const size_t total = size_t(nwins) << log_nseg;
    for (size_t g = blockIdx.x * size_t(blockDim.x) + threadIdx.x; g < total; g += size_t(gridDim.x) * blockDim.x) {
        const uint32_t y = uint32_t(g >> log_nseg);
        const size_t mask = y == nwins - 1 ? (size_t(1) << top_spread) - 1 : 0;
        const bucket_t::mem_t *seg = buckets + (size_t(y) << (wbits - 1)) + ((g - (size_t(y) << log_nseg)) << log_i0);
        size_t i = (size_t(1) << log_i0) - 1;
        bucket_t acc = seg[i], res;
        if (i & mask) res.inf();
        else res = acc;
        while (i--) {
            bucket_t b = seg[i];
            acc.add(b);
            if ((i & mask) == 0) res.add(acc);
        }
        pairs[2 * g] = res;
        pairs[2 * g + 1] = acc;
    }
}

// One window's sum Σ_x ((x >> s) + 1)·B_x from segment_sums' output: nseg pairs (res_k, acc_k)
// for segments of i0 buckets, res_k = Σ_{x in k} (((x − k·i0) >> s) + 1)·B_x and acc_k the
// segment's plain sum, so the window's sum is Σ res_k + Σ ((k·i0) >> s)·acc_k. The second
// sum is a running sum over k: with i0 ≥ 2^s the weight is k·2^a (sum k·acc_k, then a
// doublings); with i0 < 2^s it is k >> b (the running total counted every 2^b segments).
static point_t CUZK_FN(window_sum)(const bucket_t *pairs, size_t nseg, uint32_t log_i0, uint32_t s)
{
    int a = int(log_i0) - int(s);
    uint32_t b = a < 0 ? uint32_t(-a) : 0;
    bucket_t res, run, tot;
    res.inf();
    run.inf();
    tot.inf();
    for (size_t k = nseg; k-- > 0;) {
        res.add(pairs[2 * k]);
        if (k == 0) break;
        run.add(pairs[2 * k + 1]);
        if ((k & ((size_t(1) << b) - 1)) == 0) tot.add(run);
    }
    point_t weighted = tot;
    for (int i = 0; i < a; i++) weighted.dbl();
    point_t sum = res;
    sum.add(weighted);
    return sum;
}

// Σ_y 2^(w·y)·S_y over the windows' sums, computed a thread per window, Horner's rule after.
static point_t CUZK_FN(combine_windows)(const window_plan_t &plan, const std::vector<bucket_t> &pairs, size_t nseg, uint32_t log_i0)
{
    std::vector<point_t> sums(plan.nwins);
    std::vector<std::thread> workers;
    for (uint32_t y = 0; y < plan.nwins; y++)
        workers.emplace_back([&, y] { sums[y] = CUZK_FN(window_sum)(&pairs[y * 2 * nseg], nseg, log_i0, plan.spread(y)); });
    for (auto &t : workers) t.join();
    point_t out = sums[plan.nwins - 1];
    for (uint32_t y = plan.nwins - 1; y-- > 0;) {
        for (uint32_t i = 0; i < plan.wbits; i++) out.dbl();
        out.add(sums[y]);
    }
    return out;
}

// Device memory for one chunk of `stride` points: buckets (then the ±1 partial sums, then
// the segment pairs), histograms, the sort's two temporary rows and the digits, in one
// allocation.
static_assert(sizeof(bucket_t) == sizeof(bucket_t::mem_t), "buckets are downloaded into host buckets as they are");

struct pippenger_mem_t {
    dev_ptr_t<uint8_t> blob;
    bucket_t::mem_t *buckets, *ones, *pairs;
    vec2d_t<uint32_t> hist, digits;
    vec2d_t<uint2> temps;

    static size_t bytes(const window_plan_t &p, size_t stride, size_t nones)
    {
        size_t nb = p.nwins * p.row();
        return (nb + nones + npairs(p)) * sizeof(bucket_t::mem_t) + nb * sizeof(uint32_t) + 2 * stride * sizeof(uint2) +
               p.nwins * stride * sizeof(uint32_t);
    }
    static size_t npairs(const window_plan_t &p) { return (size_t(p.nwins) << log_segments(p.wbits)) * 2; }
    pippenger_mem_t(const window_plan_t &p, size_t stride, size_t nones) : blob{bytes(p, stride, nones)}
    {
        size_t nb = p.nwins * p.row();
        uint8_t *at = &blob[0];
        buckets = reinterpret_cast<bucket_t::mem_t *>(at);
        ones = buckets + nb;
        pairs = ones + nones;
        at += (nb + nones + npairs(p)) * sizeof(bucket_t::mem_t);
        hist = vec2d_t<uint32_t>(reinterpret_cast<uint32_t *>(at), (uint32_t)p.row());
        at += nb * sizeof(uint32_t);
        temps = vec2d_t<uint2>(reinterpret_cast<uint2 *>(at), (uint32_t)stride);
        at += 2 * stride * sizeof(uint2);
        digits = vec2d_t<uint32_t>(reinterpret_cast<uint32_t *>(at), (uint32_t)stride);
    }
};

// Signed digits of `num` scalars for every window, then each window's digits sorted by
// bucket (two windows per cooperative launch, as sppark runs its sort).
static void CUZK_FN(make_digits)(const gpu_t &gpu, const stream_t &st, const window_plan_t &p, pippenger_mem_t &m, const scalar_t *d_scalars,
                                 size_t num)
{
    uint32_t grid = gpu.sm_count() / 3; // sppark's measured sweet spot for its sort, a power of 2
    while (grid & (grid - 1)) grid &= grid - 1;
    breakdown<<<2 * grid, 1024, sizeof(scalar_t) * 1024, st>>>(m.digits, d_scalars, num, p.nwins, p.wbits, true);
    CUDA_OK(cudaGetLastError());
    const size_t shared = sizeof(uint32_t) << DIGIT_BITS;
    auto bucket_bits = [&](uint32_t y) { return y == p.nwins - 1 ? p.top - 1 : p.wbits - 1; };
    for (uint32_t y = 0; y < p.nwins; y += 2) {
        uint32_t pair = std::min<uint32_t>(2, p.nwins - y);
        st.launch_coop(sort, {{grid, pair}, SORT_BLOCKDIM, shared}, m.digits, num, y, m.temps, m.hist, p.wbits - 1, bucket_bits(y),
                       pair == 2 ? bucket_bits(y + 1) : 0u);
    }
}

// The chunk count for n points when the caller leaves it to the driver (0): the fewest, in
// powers of two, whose working memory (and the chunk's staged scalars) takes at most half the
// device's free memory, so an MSM beside a full resident set runs in more chunks instead of
// failing or evicting.
static uint32_t CUZK_FN(auto_chunks)(const window_plan_t &plan, size_t n, size_t nones, bool staged)
{
    size_t free_b = 0, total_b = 0;
    CUDA_OK(cudaMemGetInfo(&free_b, &total_b));
    uint32_t c = 1;
    for (; c < 64; c *= 2) {
        size_t stride = ((n + c - 1) / c + WARP_SZ - 1) / WARP_SZ * WARP_SZ;
        size_t need = pippenger_mem_t::bytes(plan, stride, nones) + (staged ? stride * sizeof(scalar_t) : 0);
        if (need <= free_b / 2) break;
    }
    return c;
}

// Σ scalars[i]·bases[off + i] over n resident bases with windows of `wbits` bits; the scalars
// are in device memory, or in host memory when `scalars_on_host` (each chunk's scalars
// uploaded before its digits). The points go in `nchunks` chunks (0: auto_chunks); each chunk
// is broken down, sorted, accumulated and reduced to segment pairs on the device while the
// host combines the previous chunk's pairs. phase_ms (PH_COUNT floats, may be null) receives
// each device phase's time summed over chunks and the host's combination time.
extern "C" int CUZK_FN(msm_windowed)(void *handle, size_t off, const void *scalars, int scalars_on_host, size_t n, uint32_t wbits,
                                     uint32_t nchunks, point_t *out, float *phase_ms, CUZK_ERR_ARGS)
{
    CUZK_TRY
    auto *b = static_cast<bases_t *>(handle);
    if (off > b->n || n > b->n - off) throw cuda_error{-1, std::string("scalars past the resident bases")};
    if (wbits < CUZK_MSM_MIN_WINDOW || wbits > CUZK_MSM_MAX_WINDOW)
        throw cuda_error{-1, "window of " + std::to_string(wbits) + " bits outside " + std::to_string(CUZK_MSM_MIN_WINDOW) + ".." +
                                 std::to_string(CUZK_MSM_MAX_WINDOW)};
    if (n >= (size_t(1) << 31)) throw cuda_error{-1, std::string("more than 2^31 points in one MSM")};
    float ms[PH_COUNT] = {0, 0, 0, 0};
    out->inf();
    if (n == 0) {
        if (phase_ms) std::memcpy(phase_ms, ms, sizeof(ms));
        return 0;
    }
    const gpu_t &gpu = select_gpu(b->dev);
    gpu.select();
    const window_plan_t plan(wbits);
    size_t nones = CUZK_FN(partial_sums)(gpu);
    if (nchunks == 0) nchunks = CUZK_FN(auto_chunks)(plan, n, nones, scalars_on_host);
    size_t stride = ((n + nchunks - 1) / nchunks + WARP_SZ - 1) / WARP_SZ * WARP_SZ;
    size_t chunks = (n + stride - 1) / stride;
    pippenger_mem_t m(plan, stride, nones);
    dev_ptr_t<scalar_t> staged{scalars_on_host ? stride : 0};
    const stream_t &st = gpu[0];
    const uint32_t log_nseg = log_segments(wbits), log_i0 = wbits - 1 - log_nseg;
    const size_t nseg = size_t(1) << log_nseg;
    std::vector<bucket_t> pairs(pippenger_mem_t::npairs(plan)), ones(nones);
    const uint32_t seg_blocks = std::min<size_t>((pairs.size() / 2 + CUZK_SEGMENT_THREADS - 1) / CUZK_SEGMENT_THREADS, 65535);
    std::vector<cudaEvent_t> ev(4 * chunks);
    for (auto &e : ev) CUDA_OK(cudaEventCreate(&e));
    struct destroy {
        std::vector<cudaEvent_t> &ev;
        ~destroy() { for (auto e : ev) (void)cudaEventDestroy(e); }
    } guard{ev};
    const auto *from_off = static_cast<const scalar_t *>(scalars) + off;
    auto *pts = b->d + off;
    point_t ones_sum;
    ones_sum.inf();
    for (size_t c = 0; c < chunks; c++) {
        size_t from = c * stride, num = std::min(stride, n - from);
        cudaEvent_t *e = &ev[4 * c];
        const scalar_t *chunk_scalars = from_off + from;
        if (scalars_on_host) {
            st.HtoD(&staged[0], chunk_scalars, num);
            chunk_scalars = &staged[0];
        }
        CUDA_OK(cudaEventRecord(e[0], st));
        CUZK_FN(make_digits)(gpu, st, plan, m, chunk_scalars, num);
        CUDA_OK(cudaEventRecord(e[1], st));
        batch_addition<bucket_t><<<gpu.sm_count(), BATCH_ADD_BLOCK_SIZE, 0, st>>>(m.ones, pts + from, num, m.digits[0], m.hist[0][0]);
        CUDA_OK(cudaGetLastError());
        st.launch_coop(accumulate<bucket_t, affine_t::mem_t>, {gpu.sm_count(), 0}, m.buckets, plan.nwins, wbits, pts + from, m.digits, m.hist,
                       2u);
        CUDA_OK(cudaEventRecord(e[2], st));
        CUZK_FN(segment_sums)<<<seg_blocks, CUZK_SEGMENT_THREADS, 0, st>>>(m.buckets, m.pairs, plan.nwins, wbits, log_nseg,
                                                                          plan.spread(plan.nwins - 1));
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaEventRecord(e[3], st));
        if (c > 0) { // the previous chunk's pairs, while this chunk runs
            auto t = std::chrono::steady_clock::now();
            out->add(CUZK_FN(combine_windows)(plan, pairs, nseg, log_i0));
            ms[PH_HOST] += std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t).count();
        }
        st.DtoH(pairs.data(), m.pairs, pairs.size());
        st.DtoH(ones.data(), m.ones, nones);
        st.sync();
        bucket_t o = sum_up(ones);
        ones_sum.add(point_t(o));
    }
    auto t = std::chrono::steady_clock::now();
    out->add(CUZK_FN(combine_windows)(plan, pairs, nseg, log_i0));
    out->add(ones_sum);
    ms[PH_HOST] += std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t).count();
    for (size_t c = 0; c < chunks; c++)
        for (int p = 0; p < 3; p++) {
            float x = 0;
            CUDA_OK(cudaEventElapsedTime(&x, ev[4 * c + p], ev[4 * c + p + 1]));
            ms[p] += x;
        }
    if (phase_ms) std::memcpy(phase_ms, ms, sizeof(ms));
    CUZK_CATCH
}

// The device bytes msm_windowed allocates for n points with device scalars in nchunks chunks
// (0 for a window it refuses or chunks it would choose itself), so benches can report them.
extern "C" size_t CUZK_FN(msm_windowed_bytes)(int dev, size_t n, uint32_t wbits, uint32_t nchunks)
{
    if (wbits < CUZK_MSM_MIN_WINDOW || wbits > CUZK_MSM_MAX_WINDOW || n == 0 || nchunks == 0) return 0;
    size_t stride = ((n + nchunks - 1) / nchunks + WARP_SZ - 1) / WARP_SZ * WARP_SZ;
    try {
        return pippenger_mem_t::bytes(window_plan_t(wbits), stride, CUZK_FN(partial_sums)(select_gpu(dev)));
    } catch (...) {
        return 0;
    }
}
