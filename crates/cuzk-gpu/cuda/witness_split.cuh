// The 0/1/general split of an MSM whose scalars are the witness already on the device (issue
// 23: the host stops selecting, splitting and gathering): the k-th scalar is w[sel[k]] (a
// density's selection, an index list kept on the device per circuit) or w[k]. The
// scalars equal to one are summed over their resident bases by the bitmap kernel; the general
// ones (neither 0 nor 1) and their bases are gathered into fresh device buffers for an MSM
// the caller runs. Included inside a curve's namespace after msm.cuh (bases_t, affine_t,
// launch_bitmap_sum); it knows nothing of Groth16.

// Scalars are read as 8 little-endian 32-bit limbs of blst's Montgomery form (zero is all
// zero limbs; one is the form of 1, passed in by the caller).
struct witness_one_t {
    uint32_t limb[8];
};

// Words (of 32 scalars) per block of classify_words and gather_general: one tile.
#define CUZK_SPLIT_TILE 1024

__device__ __forceinline__ const uint4 *CUZK_FN(scalar_at)(const uint4 *w, const uint32_t *sel, size_t k)
{
    return w + 2 * (sel ? size_t(sel[k]) : k);
}

// One tile per block, one warp per 32 words: lane j reads scalar 32q + j of the warp's word q
// (coalesced), and the warp's ballots make word q's ones and general bits, kept by lane q.
// Writes ones[wi], general[wi], rank[wi] (the general scalars before word wi in its tile) and
// tile_total[tile]. Words past n are zero.
__launch_bounds__(CUZK_SPLIT_TILE) __global__ void CUZK_FN(classify_words)(const uint4 *w, const uint32_t *sel, size_t n,
                                                                           witness_one_t one, uint32_t *ones, uint32_t *general,
                                                                           uint32_t *rank, uint32_t *tile_total)
{
    __shared__ uint32_t warp_total[CUZK_SPLIT_TILE / 32];
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const size_t first_word = size_t(blockIdx.x) * CUZK_SPLIT_TILE + size_t(warp) * 32;
    uint32_t my_ones = 0, my_general = 0;
    for (uint32_t q = 0; q < 32; q++) {
        const size_t k = (first_word + q) * 32 + lane;
        bool is_one = false, is_general = false;
        if (k < n) {
            const uint4 *p = CUZK_FN(scalar_at)(w, sel, k);
            uint4 lo = p[0], hi = p[1];
            bool zero = (lo.x | lo.y | lo.z | lo.w | hi.x | hi.y | hi.z | hi.w) == 0;
            is_one = lo.x == one.limb[0] && lo.y == one.limb[1] && lo.z == one.limb[2] && lo.w == one.limb[3] && hi.x == one.limb[4] &&
                     hi.y == one.limb[5] && hi.z == one.limb[6] && hi.w == one.limb[7];
            is_general = !zero && !is_one;
        }
        uint32_t o = __ballot_sync(0xffffffffu, is_one), g = __ballot_sync(0xffffffffu, is_general);
        if (lane == q) {
            my_ones = o;
            my_general = g;
        }
    }
    const size_t wi = first_word + lane;
    ones[wi] = my_ones;
    general[wi] = my_general;
    // Exclusive scan of the general counts over the tile's 1024 words: within the warp by
    // shuffles, then over the warps' totals.
    const uint32_t count = __popc(my_general);
    uint32_t incl = count;
    for (uint32_t d = 1; d < 32; d *= 2) {
        uint32_t v = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += v;
    }
    if (lane == 31) warp_total[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        uint32_t t = warp_total[lane], ti = t;
        for (uint32_t d = 1; d < 32; d *= 2) {
            uint32_t v = __shfl_up_sync(0xffffffffu, ti, d);
            if (lane >= d) ti += v;
        }
        warp_total[lane] = ti - t; // exclusive
        if (lane == 31) tile_total[blockIdx.x] = ti;
    }
    __syncthreads();
    rank[wi] = warp_total[warp] + incl - count;
}

// For every general scalar k (in order): its base bases[k] and its scalar to slot
// tile_start[tile] + rank[word] + (its place in the word).
__launch_bounds__(CUZK_SPLIT_TILE) __global__ void CUZK_FN(gather_general)(const affine_t::mem_t *bases, const uint4 *w, const uint32_t *sel,
                                                                           size_t n, const uint32_t *general,
                                                                           const uint32_t *rank, const size_t *tile_start,
                                                                           affine_t::mem_t *out_bases, uint4 *out_scalars)
{
    const size_t wi = size_t(blockIdx.x) * CUZK_SPLIT_TILE + threadIdx.x;
    uint32_t g = general[wi];
    size_t dst = tile_start[blockIdx.x] + rank[wi];
    while (g) {
        const size_t k = wi * 32 + (__ffs(g) - 1);
        g &= g - 1;
        if (k >= n) break;
        out_bases[dst] = bases[k];
        const uint4 *p = CUZK_FN(scalar_at)(w, sel, k);
        out_scalars[2 * dst] = p[0];
        out_scalars[2 * dst + 1] = p[1];
        dst++;
    }
}

// out[k] = w[sel[k]] for k < n: the selected scalars, contiguous, for a plain MSM.
__global__ void CUZK_FN(gather_selected)(const uint4 *w, const uint32_t *sel, size_t n, uint4 *out)
{
    for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < n; k += size_t(gridDim.x) * blockDim.x) {
        const uint4 *p = w + 2 * size_t(sel[k]);
        out[2 * k] = p[0];
        out[2 * k + 1] = p[1];
    }
}

// Device memory freed on scope exit unless released.
struct CUZK_FN(owned_t) {
    void *p = nullptr;
    ~CUZK_FN(owned_t)() { if (p) (void)cudaFree(p); }
    void *release() { void *r = p; p = nullptr; return r; }
};

// Splits the MSM Σ_k s_k·bases[k] over the first n resident bases (s_k = w[sel[k]] when sel
// is not null, else w[k]; w, sel in device memory). mode 1 (split), or 0 (auto) with at most a third of
// the scalars general: *ones_out = Σ of the bases whose scalar is one, and the general scalars
// with their bases gathered into *gen_bases (a handle for CUZK_FN(free)) and *gen_scalars
// (device memory for cuzk_device_free), *n_general of them (both null when none). Otherwise
// (mode 2, plain, or auto with more general): *ones_out is infinity, *gen_bases null and
// *gen_scalars the n scalars gathered contiguous when sel is given (null when not: the
// caller reads w), *n_general = n, for an MSM over the resident bases themselves.
extern "C" int CUZK_FN(witness_split)(void *handle, const void *w, const uint32_t *sel, size_t n,
                                      const uint32_t *one, int mode, point_t *ones_out, void **gen_bases, void **gen_scalars,
                                      size_t *n_general, CUZK_ERR_ARGS)
{
    CUZK_TRY
    auto *b = static_cast<bases_t *>(handle);
    if (n > b->n) throw cuda_error{-1, std::string("split scalars past the resident bases")};
    *gen_bases = nullptr;
    *gen_scalars = nullptr;
    *n_general = 0;
    ones_out->inf();
    if (n == 0) return 0;
    const gpu_t &gpu = select_gpu(b->dev);
    gpu.select();
    const stream_t &st = gpu[0];
    const uint4 *w4 = static_cast<const uint4 *>(w);
    auto plain = [&]() {
        *n_general = n;
        if (!sel) return;
        CUZK_FN(owned_t) s;
        CUDA_OK(cudaMalloc(&s.p, n * 32));
        CUZK_FN(gather_selected)<<<gpu.sm_count() * 4, 256, 0, st>>>(w4, sel, n, static_cast<uint4 *>(s.p));
        CUDA_OK(cudaGetLastError());
        st.sync();
        *gen_scalars = s.release();
    };
    if (mode == 2) {
        plain();
        return 0;
    }
    const size_t tiles = (n + 32 * CUZK_SPLIT_TILE - 1) / (32 * CUZK_SPLIT_TILE);
    const size_t words = tiles * CUZK_SPLIT_TILE; // ≥ padded_words(n): the bitmap kernel reads zeros past n
    dev_ptr_t<uint32_t> d_words{3 * words + tiles};
    uint32_t *ones = &d_words[0], *general = ones + words, *rank = general + words, *tile_total = rank + words;
    witness_one_t o;
    std::memcpy(o.limb, one, sizeof(o.limb));
    CUZK_FN(classify_words)<<<tiles, CUZK_SPLIT_TILE, 0, st>>>(w4, sel, n, o, ones, general, rank, tile_total);
    CUDA_OK(cudaGetLastError());
    std::vector<uint32_t> totals(tiles);
    st.DtoH(totals.data(), tile_total, tiles);
    st.sync();
    std::vector<size_t> starts(tiles);
    size_t ng = 0;
    for (size_t t = 0; t < tiles; t++) {
        starts[t] = ng;
        ng += totals[t];
    }
    if (mode == 0 && ng > n / 3) {
        plain();
        return 0;
    }
    // The ones' sum over the resident bases.
    dev_ptr_t<bucket_t::mem_t> d_ret{CUZK_FN(partial_sums)(gpu)};
    CUZK_FN(launch_bitmap_sum)(gpu, &d_ret[0], b->d, n, ones, false);
    CUZK_FN(total)(gpu, &d_ret[0], ones_out);
    *n_general = ng;
    if (ng == 0) return 0;
    dev_ptr_t<size_t> d_starts{tiles};
    st.HtoD(&d_starts[0], starts.data(), tiles);
    CUZK_FN(owned_t) gb, gs;
    CUDA_OK(cudaMalloc(&gb.p, ng * sizeof(affine_t::mem_t)));
    CUDA_OK(cudaMalloc(&gs.p, ng * 32));
    CUZK_FN(gather_general)<<<tiles, CUZK_SPLIT_TILE, 0, st>>>(b->d, w4, sel, n, general, rank, &d_starts[0],
                                                               static_cast<affine_t::mem_t *>(gb.p), static_cast<uint4 *>(gs.p));
    CUDA_OK(cudaGetLastError());
    st.sync();
    *gen_bases = new bases_t{b->dev, ng, static_cast<affine_t::mem_t *>(gb.release())};
    *gen_scalars = gs.release();
    CUZK_CATCH
}
