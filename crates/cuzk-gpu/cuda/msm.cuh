// MSM entry points for one curve group, included once per group inside a namespace that
// defines point_t, bucket_t, affine_t, scalar_t, with CUZK_FN(name) naming the exported
// symbol. Bases live in device memory behind an opaque handle, uploaded once; scalars
// travel per call.

struct bases_t {
    int dev;
    size_t n;
    affine_t::mem_t *d;
};

// Copies n bases to the device on a stream of their own, waited for. Uploads run outside the
// device lock, beside the calls under it; on sppark's default stream (which those calls use)
// a call queued behind a whole section's upload: on the H100 a 4 GB witness upload took 3.2 s
// behind the re-uploads of sections a device budget had evicted (RESULTS, 2026-12-07).
static void CUZK_FN(copy_on_own_stream)(affine_t::mem_t *d, const affine_t *host, size_t n)
{
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    struct destroy { cudaStream_t s; ~destroy() { (void)cudaStreamDestroy(s); } } guard{s};
    typedef affine_t::mem_t dev_point_t;
    if (sizeof(dev_point_t) == sizeof(affine_t))
        CUDA_OK(cudaMemcpyAsync(d, host, n * sizeof(dev_point_t), cudaMemcpyHostToDevice, s));
    else
        CUDA_OK(cudaMemcpy2DAsync(d, sizeof(dev_point_t), host, sizeof(affine_t), std::min(sizeof(dev_point_t), sizeof(affine_t)), n,
                                  cudaMemcpyHostToDevice, s));
    CUDA_OK(cudaStreamSynchronize(s));
}

extern "C" int CUZK_FN(upload)(int dev, const affine_t *host, size_t n, void **handle, CUZK_ERR_ARGS)
{
    CUZK_TRY
    const gpu_t &gpu = select_gpu(dev);
    gpu.select();
    affine_t::mem_t *d = nullptr;
    CUDA_OK(cudaMalloc(&d, (n ? n : 1) * sizeof(affine_t::mem_t)));
    try {
        if (n) CUZK_FN(copy_on_own_stream)(d, host, n);
    } catch (...) {
        cudaFree(d);
        throw;
    }
    *handle = new bases_t{dev, n, d};
    CUZK_CATCH
}

extern "C" void CUZK_FN(free)(void *handle)
{
    auto *b = static_cast<bases_t *>(handle);
    if (!b) return;
    select_gpu(b->dev).select();
    cudaFree(b->d);
    delete b;
}

// sum over i of scalars[i]·bases[off + i] for n resident bases from `off` (a piece of a long
// MSM, so that the device lock can change hands between pieces); `scalars` is a host
// pointer or a dev_ptr_t (sppark picks the transfer from its type). dev_ptr_t<affine_t> for
// the bases (not of mem_t): sppark then forwards to its host-pointer overload with a null host
// pointer and the device bases, instead of recursing.
template<typename scalars_t>
static void CUZK_FN(resident_msm)(void *handle, size_t off, scalars_t scalars, size_t n, point_t *out)
{
    auto *b = static_cast<bases_t *>(handle);
    if (off > b->n || n > b->n - off) throw cuda_error{-1, std::string("scalars past the resident bases")};
    const gpu_t &gpu = select_gpu(b->dev);
    gpu.select();
    msm_t<bucket_t, point_t, affine_t, scalar_t> msm{nullptr, n, sizeof(affine_t), b->dev};
    dev_ptr_t<affine_t> pts{reinterpret_cast<affine_t *>(b->d + off), n};
    cuzk_throw_if(msm.invoke(*out, pts, n, scalars, true, sizeof(affine_t)), "MSM failed");
}

extern "C" int CUZK_FN(msm_resident)(void *handle, size_t off, const scalar_t *scalars, size_t n, point_t *out, CUZK_ERR_ARGS)
{
    CUZK_TRY
    CUZK_FN(resident_msm)(handle, off, scalars, n, out);
    CUZK_CATCH
}

// The same with the scalars already in device memory (H, left there by the quotient):
// d_scalars[off..off + n] against bases[off..off + n].
extern "C" int CUZK_FN(msm_resident_dev)(void *handle, size_t off, const void *d_scalars, size_t n, point_t *out, CUZK_ERR_ARGS)
{
    CUZK_TRY
    dev_ptr_t<scalar_t> sc{static_cast<scalar_t *>(const_cast<void *>(d_scalars)) + off, n};
    CUZK_FN(resident_msm)(handle, off, sc, n, out);
    CUZK_CATCH
}

// The same with bases from host memory (the few bases of general scalars).
extern "C" int CUZK_FN(msm_host)(int dev, const affine_t *bases, const scalar_t *scalars, size_t n, point_t *out, CUZK_ERR_ARGS)
{
    CUZK_TRY
    const gpu_t &gpu = select_gpu(dev);
    gpu.select();
    msm_t<bucket_t, point_t, affine_t, scalar_t> msm{nullptr, n, sizeof(affine_t), dev};
    cuzk_throw_if(msm.invoke(*out, bases, n, scalars, true, sizeof(affine_t)), "MSM failed");
    CUZK_CATCH
}

// The bitmap-sum kernel over npoints device points, adding into d_ret's partial sums when
// `accumulate` (else overwriting them); d_map holds the map as the kernel reads it, 32 words
// per 1024 points, zero-padded.
static void CUZK_FN(launch_bitmap_sum)(const gpu_t &gpu, bucket_t::mem_t *d_ret, const affine_t::mem_t *d_pts, size_t npoints,
                                        const uint32_t *d_map, bool accumulate)
{
    void (*kern)(bucket_t::mem_t *, const affine_t::mem_t *, uint32_t, const uint32_t *, bool, uint32_t) =
        batch_addition<bucket_t, affine_t::mem_t>;
    gpu.launch_coop(kern, {(int)gpu.sm_count(), BATCH_ADD_BLOCK_SIZE}, d_ret, d_pts, (uint32_t)npoints, d_map, accumulate, 0u);
}

// The words the kernel reads for npoints: 32 per 1024 points, at least 32.
static size_t CUZK_FN(padded_words)(size_t npoints) { return std::max<size_t>(((npoints + 1023) / 1024) * 32, 32); }

// Words [from, from + padded_words(npoints)) of the caller's map (nwords long), zero past it.
static std::vector<uint32_t> CUZK_FN(padded_map)(const uint32_t *bitmap, size_t nwords, size_t from, size_t npoints)
{
    std::vector<uint32_t> map(CUZK_FN(padded_words)(npoints), 0);
    if (from < nwords) std::memcpy(map.data(), bitmap + from, std::min(nwords - from, map.size()) * sizeof(uint32_t));
    return map;
}

static size_t CUZK_FN(partial_sums)(const gpu_t &gpu) { return gpu.sm_count() * BATCH_ADD_BLOCK_SIZE / WARP_SZ; }

// The total of the kernel's partial sums in d_ret.
static void CUZK_FN(total)(const gpu_t &gpu, const bucket_t::mem_t *d_ret, point_t *out)
{
    std::vector<bucket_t> ret(CUZK_FN(partial_sums)(gpu));
    gpu.DtoH(ret.data(), d_ret, ret.size());
    gpu.sync();
    bucket_t sum = sum_up(ret);
    *out = sum;
}

// Sum of the resident bases whose bit is set in `bitmap` (32-bit words, bit i = base i):
// the 0/1 part of a split MSM, as batched additions on the device.
extern "C" int CUZK_FN(sum_bitmap)(void *handle, const uint32_t *bitmap, size_t nwords, point_t *out, CUZK_ERR_ARGS)
{
    CUZK_TRY
    auto *b = static_cast<bases_t *>(handle);
    const gpu_t &gpu = select_gpu(b->dev);
    gpu.select();
    std::vector<uint32_t> map = CUZK_FN(padded_map)(bitmap, nwords, 0, b->n);
    dev_ptr_t<uint32_t> d_map{map.size()};
    gpu.HtoD(&d_map[0], map.data(), map.size());
    dev_ptr_t<bucket_t::mem_t> d_ret{CUZK_FN(partial_sums)(gpu)};
    CUZK_FN(launch_bitmap_sum)(gpu, &d_ret[0], b->d, b->n, &d_map[0], false);
    CUZK_FN(total)(gpu, &d_ret[0], out);
    CUZK_CATCH
}

// The same over n bases in host memory that are not resident (a section a device budget
// streams): they go up in chunks of `chunk` points (rounded up to a multiple of 1024, so each
// chunk's map starts on a word), each summed into the same partial sums, so device memory
// stays bounded whatever n is.
extern "C" int CUZK_FN(sum_bitmap_host)(int dev, const affine_t *bases, size_t n, const uint32_t *bitmap, size_t nwords, size_t chunk,
                                        point_t *out, CUZK_ERR_ARGS)
{
    CUZK_TRY
    if (n == 0) {
        out->inf();
        return 0;
    }
    const gpu_t &gpu = select_gpu(dev);
    gpu.select();
    chunk = std::min(n, std::max<size_t>((chunk + 1023) / 1024 * 1024, 1024));
    dev_ptr_t<affine_t::mem_t> d_pts{chunk};
    dev_ptr_t<uint32_t> d_map{CUZK_FN(padded_words)(chunk)};
    dev_ptr_t<bucket_t::mem_t> d_ret{CUZK_FN(partial_sums)(gpu)};
    for (size_t off = 0; off < n; off += chunk) {
        size_t len = std::min(chunk, n - off);
        std::vector<uint32_t> map = CUZK_FN(padded_map)(bitmap, nwords, off / 32, len);
        gpu.sync(); // the previous chunk's kernel has read its points and map
        gpu.HtoD(&d_map[0], map.data(), map.size());
        CUZK_FN(copy_on_own_stream)(&d_pts[0], bases + off, len);
        CUZK_FN(launch_bitmap_sum)(gpu, &d_ret[0], &d_pts[0], len, &d_map[0], off != 0);
    }
    CUZK_FN(total)(gpu, &d_ret[0], out);
    CUZK_CATCH
}
