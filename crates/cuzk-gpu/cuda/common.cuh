// cuzk's CUDA glue: error reporting shared by every translation unit. Each entry point
// catches sppark's exceptions and returns a CUDA error code (0 = success) with the message
// written into a caller-owned buffer, so no C++ exception ever crosses into Rust.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <cuda_runtime.h>

#define CUZK_ERR_ARGS char *msg, size_t cap

// Also clears CUDA's last error: a failed cudaMallocAsync leaves "out of memory" there, and the
// next call's first check after a kernel launch (cudaGetLastError) would report it again — so
// the out-of-memory retry, after evicting, failed on the stale error (H100, 2026-12-06).
static inline int cuzk_report(int code, const char *what, char *msg, size_t cap)
{
    (void)cudaGetLastError();
    if (msg && cap) {
        std::snprintf(msg, cap, "%s", what ? what : "unknown CUDA failure");
    }
    return code ? code : -1;
}

#define CUZK_TRY try {
#define CUZK_CATCH                                                   \
    } catch (const cuda_error &e) {                                  \
        return cuzk_report(e.code(), e.what(), msg, cap);            \
    } catch (const std::exception &e) {                              \
        return cuzk_report(-1, e.what(), msg, cap);                  \
    }                                                                \
    return 0;

// Turns an error sppark returned (rather than threw) into an exception, freeing its message.
static inline void cuzk_throw_if(RustError e, const char *what)
{
    if (!e.code) return;
    std::string s = e.message ? e.message : what;
    std::free(e.message);
    throw cuda_error{e.code, s};
}
