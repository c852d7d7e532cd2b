// NTTs and the Groth16 quotient on the device. The quotient keeps a, b and c in device
// memory through every step (five transforms, two pointwise kernels, one bit reversal) and
// returns H; each step is timed with CUDA events.
#include <cuda.h>
#include <ff/bls12-381.hpp>
#include <ntt/ntt.cuh>

// NTT::bit_rev is private; a subclass reaches it.
struct cuzk_ntt_t : NTT {
    static void bitrev(fr_t *d, uint32_t lg, stream_t &s) { NTT::bit_rev(d, d, lg, s); }
};
#include "common.cuh"
#include "quotient.cuh"

extern "C" int cuzk_device_count(int *count, CUZK_ERR_ARGS)
{
    CUZK_TRY
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        throw cuda_error{-(int)e, std::string(cudaGetErrorString(e))};
    }
    *count = n;
    CUZK_CATCH
}

extern "C" int cuzk_device_name(int dev, char *name, size_t name_cap, size_t *mem, CUZK_ERR_ARGS)
{
    CUZK_TRY
    cudaDeviceProp p;
    CUDA_OK(cudaGetDeviceProperties(&p, dev));
    std::snprintf(name, name_cap, "%s (sm_%d%d, %d SMs)", p.name, p.major, p.minor, p.multiProcessorCount);
    *mem = p.totalGlobalMem;
    CUZK_CATCH
}

// kind: 0 forward, 1 inverse, 2 coset forward, 3 coset inverse (natural order in and out).
extern "C" int cuzk_ntt(int dev, fr_t *inout, uint32_t lg_n, int kind, CUZK_ERR_ARGS)
{
    CUZK_TRY
    const gpu_t &gpu = select_gpu(dev);
    auto dir = (kind == 1 || kind == 3) ? NTT::Direction::inverse : NTT::Direction::forward;
    auto type = kind >= 2 ? NTT::Type::coset : NTT::Type::standard;
    cuzk_throw_if(NTT::Base(gpu, inout, lg_n, NTT::InputOutputOrder::NN, dir, type), "NTT failed");
    CUZK_CATCH
}

__global__ void cuzk_mul_kernel(fr_t *a, const fr_t *b, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += stride)
        a[i] = a[i] * b[i];
}

__global__ void cuzk_sub_scale_kernel(fr_t *a, const fr_t *c, fr_raw zinv_raw, size_t n)
{
    fr_t zinv = *reinterpret_cast<const fr_t *>(&zinv_raw);
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += stride)
        a[i] = (a[i] - c[i]) * zinv;
}

// Stage times (ms) written to `ms`, in this order.
#define CUZK_Q_STAGES 10
// 0 upload, 1 a:intt, 2 a:coset-ntt, 3 b:intt, 4 b:coset-ntt, 5 c:intt, 6 a·b, 7 coset-intt,
// 8 (−c)/z + bit reversal, 9 download.

extern "C" void cuzk_device_free(int dev, void *p)
{
    if (!p) return;
    select_gpu(dev).select();
    cudaFree(p);
}

// Free device bytes now (cudaMemGetInfo), for tests that leave the device short of memory on
// purpose; and a plain device allocation of `bytes` (freed with cuzk_device_free): such tests'
// filler, and the device copy of a witness uploaded piece by piece (cuzk_copy_to_device).
extern "C" int cuzk_device_free_bytes(int dev, size_t *free_bytes, CUZK_ERR_ARGS)
{
    CUZK_TRY
    select_gpu(dev).select();
    size_t total = 0;
    CUDA_OK(cudaMemGetInfo(free_bytes, &total));
    CUZK_CATCH
}

extern "C" int cuzk_device_alloc(int dev, size_t bytes, void **p, CUZK_ERR_ARGS)
{
    CUZK_TRY
    select_gpu(dev).select();
    CUDA_OK(cudaMalloc(p, bytes));
    CUZK_CATCH
}

// `bytes` from host `src` to device `dst` (an allocation of this device), waited for.
extern "C" int cuzk_copy_to_device(int dev, void *dst, const void *src, size_t bytes, CUZK_ERR_ARGS)
{
    CUZK_TRY
    const gpu_t &gpu = select_gpu(dev);
    gpu.select();
    stream_t &s = gpu;
    CUDA_OK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CUZK_CATCH
}

// Page-locked host memory for staging uploads (DMA at full link speed, truly asynchronous).
extern "C" int cuzk_host_alloc(int dev, size_t bytes, void **p, CUZK_ERR_ARGS)
{
    CUZK_TRY
    select_gpu(dev).select();
    CUDA_OK(cudaMallocHost(p, bytes));
    CUZK_CATCH
}

extern "C" void cuzk_host_free(void *p)
{
    if (p) cudaFreeHost(p);
}

void cuzk_event_times(cudaEvent_t *ev, int count, double *ms)
{
    for (int i = 0; i < count; i++) {
        float t = 0;
        CUDA_OK(cudaEventElapsedTime(&t, ev[i], ev[i + 1]));
        ms[i] = t;
    }
}

void cuzk_quotient_stages(const gpu_t &gpu, stream_t &s, fr_t *a, fr_t *b, fr_t *c, uint32_t lg_n,
                          const fr_raw &zinv, cudaEvent_t *ev, int &k)
{
    size_t n = (size_t)1 << lg_n;
    using IO = NTT::InputOutputOrder;
    using D = NTT::Direction;
    using T = NTT::Type;
    fr_t *ab[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        NTT::Base_dev_ptr(s, ab[i], lg_n, IO::NR, D::inverse, T::standard);
        CUDA_OK(cudaEventRecord(ev[k++], s));
        NTT::Base_dev_ptr(s, ab[i], lg_n, IO::RN, D::forward, T::coset);
        CUDA_OK(cudaEventRecord(ev[k++], s));
    }
    NTT::Base_dev_ptr(s, c, lg_n, IO::NR, D::inverse, T::standard);
    CUDA_OK(cudaEventRecord(ev[k++], s));
    int grid = gpu.sm_count() * 8;
    cuzk_mul_kernel<<<grid, 256, 0, s>>>(a, b, n);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaEventRecord(ev[k++], s));
    NTT::Base_dev_ptr(s, a, lg_n, IO::NR, D::inverse, T::coset);
    CUDA_OK(cudaEventRecord(ev[k++], s));
    cuzk_sub_scale_kernel<<<grid, 256, 0, s>>>(a, c, zinv, n);
    CUDA_OK(cudaGetLastError());
    cuzk_ntt_t::bitrev(a, lg_n, s);
    CUDA_OK(cudaEventRecord(ev[k++], s));
}

// H = (a·b − c)/Z on the coset, as n − 1 values. With `keep` null, H is downloaded into `h`;
// otherwise it stays on the device and *keep receives its buffer (free with cuzk_device_free).
extern "C" int cuzk_quotient(int dev, const fr_t *a, size_t la, const fr_t *b, size_t lb, const fr_t *c, size_t lc,
                             uint32_t lg_n, const fr_raw *zinv, fr_t *h, void **keep, double *ms, CUZK_ERR_ARGS)
{
    CUZK_TRY
    const gpu_t &gpu = select_gpu(dev);
    gpu.select();
    size_t n = (size_t)1 << lg_n;
    if (la > n || lb > n || lc > n) throw cuda_error{-1, std::string("evaluations longer than the domain")};
    stream_t &s = gpu;
    cuzk_owned_buf owned_a{n * sizeof(fr_t)};
    dev_ptr_t<fr_t> da{static_cast<fr_t *>(owned_a.p), n}, db{n}, dc{n};
    cudaEvent_t ev[CUZK_Q_STAGES + 1];
    for (auto &e : ev) CUDA_OK(cudaEventCreate(&e));
    struct guard { cudaEvent_t *ev; ~guard() { for (int i = 0; i <= CUZK_Q_STAGES; i++) cudaEventDestroy(ev[i]); } } g{ev};
    int k = 0;
    CUDA_OK(cudaEventRecord(ev[k++], s));
    const fr_t *src[3] = {a, b, c};
    size_t len[3] = {la, lb, lc};
    fr_t *dst[3] = {&da[0], &db[0], &dc[0]};
    for (int i = 0; i < 3; i++) {
        CUDA_OK(cudaMemcpyAsync(dst[i], src[i], len[i] * sizeof(fr_t), cudaMemcpyHostToDevice, s));
        if (len[i] < n) CUDA_OK(cudaMemsetAsync(dst[i] + len[i], 0, (n - len[i]) * sizeof(fr_t), s));
    }
    CUDA_OK(cudaEventRecord(ev[k++], s));
    cuzk_quotient_stages(gpu, s, &da[0], &db[0], &dc[0], lg_n, *zinv, ev, k);
    if (!keep)
        CUDA_OK(cudaMemcpyAsync(h, &da[0], (n - 1) * sizeof(fr_t), cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaEventRecord(ev[k++], s));
    CUDA_OK(cudaStreamSynchronize(s));
    if (keep) *keep = owned_a.release();
    cuzk_event_times(ev, CUZK_Q_STAGES, ms);
    CUZK_CATCH
}
