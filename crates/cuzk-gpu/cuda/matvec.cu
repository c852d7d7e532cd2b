// The sparse mat-vec on the device: a circuit's A, B, C (compressed rows, 32-bit columns,
// 16-bit coefficient indices into one table) kept resident, the witness uploaded once per
// proof, a = A·w, b = B·w, c = C·w computed one thread per row — witness values 0 and 1 read
// from a one-byte kind per value, coefficients ±1 without a multiply — and either downloaded
// or handed straight to the quotient's transforms, so a, b and c never cross the bus.
#include <cuda.h>
#include <ff/bls12-381.hpp>
#include <util/rusterror.h>
#include <util/gpu_t.cuh>
#include "common.cuh"
#include "quotient.cuh"

// One matrix as the host holds it.
struct cuzk_csr_host {
    const uint32_t *row_ptr;
    const uint32_t *cols;
    const uint16_t *coeff;
    size_t rows;
    size_t nnz;
};

// The resident matrices of one circuit topology.
struct cuzk_pce_dev {
    int dev = 0;
    size_t num_inputs = 0, num_aux = 0, rows = 0;
    uint32_t *row_ptr[3] = {nullptr, nullptr, nullptr};
    uint32_t *cols[3] = {nullptr, nullptr, nullptr};
    uint16_t *coeff[3] = {nullptr, nullptr, nullptr};
    fr_t *coeffs = nullptr;
    ~cuzk_pce_dev()
    {
        select_gpu(dev).select();
        for (int i = 0; i < 3; i++) {
            cudaFree(row_ptr[i]);
            cudaFree(cols[i]);
            cudaFree(coeff[i]);
        }
        cudaFree(coeffs);
    }
};

template <typename T> static T *cuzk_upload(const T *host, size_t n)
{
    T *d = nullptr;
    CUDA_OK(cudaMalloc(&d, (n ? n : 1) * sizeof(T)));
    if (n) {
        cudaError_t e = cudaMemcpy(d, host, n * sizeof(T), cudaMemcpyHostToDevice);
        if (e != cudaSuccess) {
            cudaFree(d);
            CUDA_OK(e);
        }
    }
    return d;
}

extern "C" int cuzk_pce_upload(int dev, const cuzk_csr_host *m, const fr_t *coeffs, size_t ncoeffs, size_t num_inputs,
                               size_t num_aux, void **handle, CUZK_ERR_ARGS)
{
    CUZK_TRY
    select_gpu(dev).select();
    auto *p = new cuzk_pce_dev;
    p->dev = dev;
    p->num_inputs = num_inputs;
    p->num_aux = num_aux;
    p->rows = m[0].rows;
    try {
        for (int i = 0; i < 3; i++) {
            if (m[i].rows != p->rows) throw cuda_error{-1, std::string("matrices of unequal height")};
            p->row_ptr[i] = cuzk_upload(m[i].row_ptr, m[i].rows + 1);
            p->cols[i] = cuzk_upload(m[i].cols, m[i].nnz);
            p->coeff[i] = cuzk_upload(m[i].coeff, m[i].nnz);
        }
        p->coeffs = cuzk_upload(coeffs, ncoeffs);
    } catch (...) {
        delete p;
        throw;
    }
    *handle = p;
    CUZK_CATCH
}

extern "C" void cuzk_pce_free(void *handle)
{
    delete static_cast<cuzk_pce_dev *>(handle);
}

// Kind of each witness value: 0, 1 (compared limb by limb with `one`, the coefficient table's
// first entry, which is 1 by contract) or anything else.
__global__ void cuzk_kinds_kernel(const fr_raw *w, uint8_t *kinds, size_t n, const fr_raw *one_p)
{
    const fr_raw one = *one_p;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += stride) {
        const fr_raw v = w[i];
        uint32_t z = 0, o = 0;
        for (int j = 0; j < 8; j++) {
            z |= v.v[j];
            o |= v.v[j] ^ one.v[j];
        }
        kinds[i] = z == 0 ? 0 : (o == 0 ? 1 : 2);
    }
}

// out[r] = Σ coeffs[cidx[e]]·w[cols[e]] over row r's entries, for r < rows; 0 up to n.
__global__ void cuzk_spmv_kernel(const uint32_t *__restrict__ row_ptr, const uint32_t *__restrict__ cols,
                                 const uint16_t *__restrict__ cidx, const fr_t *__restrict__ coeffs,
                                 const fr_t *__restrict__ w, const uint8_t *__restrict__ kinds, fr_t *out,
                                 size_t rows, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t r = threadIdx.x + (size_t)blockIdx.x * blockDim.x; r < n; r += stride) {
        fr_t acc;
        acc.zero();
        if (r < rows) {
            uint32_t hi = row_ptr[r + 1];
            for (uint32_t e = row_ptr[r]; e < hi; e++) {
                uint32_t col = cols[e];
                uint8_t k = kinds[col];
                if (k == 0) continue;
                uint16_t ci = cidx[e];
                if (k == 1) {
                    acc += coeffs[ci];
                    continue;
                }
                fr_t v = w[col];
                if (ci == 0)
                    acc += v;
                else if (ci == 1)
                    acc -= v;
                else
                    acc += v * coeffs[ci];
            }
        }
        out[r] = acc;
    }
}

// Stages of the mat-vec, each followed by one event.
#define CUZK_MV_STAGES 5
// 0 upload witness, 1 kinds, 2 A, 3 B, 4 C.

// A device buffer this call may own (freed on return when it does).
struct cuzk_maybe_owned {
    void *p = nullptr;
    ~cuzk_maybe_owned() { if (p) cudaFree(p); }
};

// a, b, c (n values each, n ≥ rows; zero past rows) from the witness w (inputs, then aux,
// contiguous): in host memory, copied here, or already on the device (w_on_device; the
// upload stage then records no time).
static void cuzk_matvec_stages(const cuzk_pce_dev &p, const gpu_t &gpu, stream_t &s, const fr_t *w, bool w_on_device,
                               fr_t *out[3], size_t n, cudaEvent_t *ev, int &k)
{
    size_t width = p.num_inputs + p.num_aux;
    cuzk_maybe_owned own;
    const fr_t *dw = w;
    if (!w_on_device) {
        CUDA_OK(cudaMalloc(&own.p, width * sizeof(fr_t)));
        CUDA_OK(cudaMemcpyAsync(own.p, w, width * sizeof(fr_t), cudaMemcpyHostToDevice, s));
        dw = static_cast<const fr_t *>(own.p);
    }
    dev_ptr_t<uint8_t> dk{width};
    CUDA_OK(cudaEventRecord(ev[k++], s));
    int grid = gpu.sm_count() * 8;
    cuzk_kinds_kernel<<<grid, 256, 0, s>>>(reinterpret_cast<const fr_raw *>(dw), &dk[0], width,
                                             reinterpret_cast<const fr_raw *>(p.coeffs));
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaEventRecord(ev[k++], s));
    for (int i = 0; i < 3; i++) {
        cuzk_spmv_kernel<<<grid, 256, 0, s>>>(p.row_ptr[i], p.cols[i], p.coeff[i], p.coeffs, dw, &dk[0], out[i],
                                                p.rows, n);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaEventRecord(ev[k++], s));
    }
    // dk (and dw when owned) are freed on return: wait for the kernels that read them.
    CUDA_OK(cudaStreamSynchronize(s));
}

struct cuzk_events {
    cudaEvent_t ev[32];
    int count;
    explicit cuzk_events(int n) : count(n)
    {
        for (int i = 0; i < count; i++) CUDA_OK(cudaEventCreate(&ev[i]));
    }
    ~cuzk_events()
    {
        for (int i = 0; i < count; i++) cudaEventDestroy(ev[i]);
    }
};

// a, b, c downloaded into host buffers of `rows` values each; ms gets CUZK_MV_STAGES + 1
// times (the last is the download).
extern "C" int cuzk_matvec(void *handle, const fr_t *w, fr_t *a, fr_t *b, fr_t *c, double *ms, CUZK_ERR_ARGS)
{
    CUZK_TRY
    const cuzk_pce_dev &p = *static_cast<const cuzk_pce_dev *>(handle);
    const gpu_t &gpu = select_gpu(p.dev);
    gpu.select();
    stream_t &s = gpu;
    size_t n = p.rows;
    dev_ptr_t<fr_t> da{n}, db{n}, dc{n};
    cuzk_events e{CUZK_MV_STAGES + 2};
    int k = 0;
    CUDA_OK(cudaEventRecord(e.ev[k++], s));
    fr_t *out[3] = {&da[0], &db[0], &dc[0]};
    cuzk_matvec_stages(p, gpu, s, w, false, out, n, e.ev, k);
    fr_t *host[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        CUDA_OK(cudaMemcpyAsync(host[i], out[i], n * sizeof(fr_t), cudaMemcpyDeviceToHost, s));
    CUDA_OK(cudaEventRecord(e.ev[k++], s));
    CUDA_OK(cudaStreamSynchronize(s));
    cuzk_event_times(e.ev, CUZK_MV_STAGES + 1, ms);
    CUZK_CATCH
}

// The mat-vec straight into the quotient: H (2^lg_n values, the top one to be ignored) stays
// on the device and *keep receives its buffer (free with cuzk_device_free). d_w is the witness
// already in device memory of this device (uploaded in pieces by the caller, so that no single
// call holds the device for the whole copy). ms gets CUZK_MV_STAGES + CUZK_Q_CORE_STAGES times.
extern "C" int cuzk_matvec_quotient(void *handle, const fr_t *d_w, uint32_t lg_n, const fr_raw *zinv, void **keep,
                                    double *ms, CUZK_ERR_ARGS)
{
    CUZK_TRY
    const cuzk_pce_dev &p = *static_cast<const cuzk_pce_dev *>(handle);
    const gpu_t &gpu = select_gpu(p.dev);
    gpu.select();
    stream_t &s = gpu;
    size_t n = (size_t)1 << lg_n;
    if (p.rows > n) throw cuda_error{-1, std::string("more constraints than the domain holds")};
    cuzk_owned_buf owned_a{n * sizeof(fr_t)};
    dev_ptr_t<fr_t> db{n}, dc{n};
    cuzk_events e{CUZK_MV_STAGES + CUZK_Q_CORE_STAGES + 1};
    int k = 0;
    CUDA_OK(cudaEventRecord(e.ev[k++], s));
    fr_t *out[3] = {static_cast<fr_t *>(owned_a.p), &db[0], &dc[0]};
    cuzk_matvec_stages(p, gpu, s, d_w, true, out, n, e.ev, k);
    cuzk_quotient_stages(gpu, s, out[0], out[1], out[2], lg_n, *zinv, e.ev, k);
    CUDA_OK(cudaStreamSynchronize(s));
    *keep = owned_a.release();
    cuzk_event_times(e.ev, CUZK_MV_STAGES + CUZK_Q_CORE_STAGES, ms);
    CUZK_CATCH
}
