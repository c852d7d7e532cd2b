// The Groth16 quotient's transforms, shared by the upload path (ntt.cu) and the device
// mat-vec path (matvec.cu): a, b and c already in device memory, H left in a.
#pragma once
#include <cstdint>

struct fr_raw { uint32_t v[8]; };

// Owns a cudaMalloc'd buffer unless released (the quotient hands h over to the H MSM).
struct cuzk_owned_buf {
    void *p = nullptr;
    explicit cuzk_owned_buf(size_t bytes) { CUDA_OK(cudaMalloc(&p, bytes)); }
    ~cuzk_owned_buf() { if (p) cudaFree(p); }
    cuzk_owned_buf(const cuzk_owned_buf &) = delete;
    cuzk_owned_buf &operator=(const cuzk_owned_buf &) = delete;
    void *release() { void *q = p; p = nullptr; return q; }
};

// Stages recorded by cuzk_quotient_stages, each followed by one event.
#define CUZK_Q_CORE_STAGES 8

// a, b, c: n = 2^lg_n values each on the device (zero-padded). Records one event after each
// of its stages into ev[k], ev[k+1], ... and advances k.
void cuzk_quotient_stages(const gpu_t &gpu, stream_t &s, fr_t *a, fr_t *b, fr_t *c, uint32_t lg_n,
                          const fr_raw &zinv, cudaEvent_t *ev, int &k);

// Stage times (ms) between consecutive events ev[0..count].
void cuzk_event_times(cudaEvent_t *ev, int count, double *ms);
