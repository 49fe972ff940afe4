/*
** cuda/cuda.h -- what the CUDA backend's C files share (the table in
** cuda/table.c, the runtime in cuda/runtime.c). No CUDA header here: the
** stream is a void * (a cudaStream_t), so the table stays plain C.
*/
#ifndef EMBER_CUDA_CUDA_H
#define EMBER_CUDA_CUDA_H

#include "core/core.h"
#include "core/kern_linalg.h"

/* The kernel table's check entry: em_cuda_check for dev (op NULL: no prefix). */
em_status emcu_ready(const char *op, em_device dev);
/* The kernel table's memory: the device's caching allocator, on the current stream. */
em_status emcu_alloc(em_device dev, size_t nbytes, void **data);
void emcu_free(em_device dev, void *data, size_t nbytes);
/* The device of the op at hand on this thread (set by emcu_ready). */
int emcu_device(void);
/* The current stream of device on this thread, as a cudaStream_t. */
void *emcu_stream(int device);
/* The launch-error rule (docs/cuda.md): an entry that returns void and
** cannot go on records its error here; the first one recorded on this
** thread is raised by the next em_cuda_check (the next op on a cuda
** tensor, a synchronisation, a copy to the host). */
void emcu_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The toolkit's libraries the backend opens itself (cuBLAS, cuFFT, cuDNN):
** the first of names (NULL-ended) that dlopen loads, or NULL with why set
** to "cannot load <lib> (<dlerror>)". */
void *emcu_dlopen_first(const char *const *names, const char *lib, char *why, size_t nwhy);
/* After a launch: cudaGetLastError, noted with what when it is an error.
** Returns 0 when the launch went, else -1. */
int emcu_launched(const char *what);
/* 1 when the host memory at p is page-locked (pinned by CUDA). */
int emcu_is_pinned_ptr(const void *p);
/* Sets device as the thread's current CUDA device: EM_OK or the error, naming op. */
em_status emcu_set_device(const char *op, int device);
/* The linalg family's gemm on cuBLAS (cuda/blas.c). */
struct em_iter;
struct em_gemm;
void emcu_gemm(const struct em_iter *it, em_dtype dt, const struct em_gemm *g);
/* row-major C = op(A) op(B) + beta C (float32/float64) on cuBLAS: 0, or -1 after a note */
int emcu_nn_gemm(em_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
                 int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc);
/* The complex family's FFT entries on cuFFT (cuda/fft.c; core/kern_cplx.h's contract). */
em_status emcu_fft(em_dtype dt, void *data, int64_t outer, int64_t n, int64_t inner, int forward,
                   double fct);
em_status emcu_rfft(em_dtype dt, const void *in, void *out, int64_t outer, int64_t n, int64_t inner,
                    double fct);
/* One conv2d pass on cuDNN (cuda/cudnn.c). *taken = 0 when cuDNN is off,
** cannot be loaded or declines the problem (nothing written: the caller
** runs its own driver); else 1, and the pass's status is returned. */
struct em_conv2d_geo;
em_status emcu_cudnn_conv2d(const char *op, int pass, const em_tensor *a, const em_tensor *b,
                            const em_tensor *bias, em_tensor *out, const struct em_conv2d_geo *g,
                            int *taken);
/* This thread's cuBLAS handle of device dev on its current stream (NULL
** after a note: em_cuda_check raises it), and a symbol of the libcublas
** that cuda/blas.c opened (NULL when it cannot be loaded). */
void *emcu_cublas_handle(int dev);
void *emcu_cublas_sym(const char *name);
/* The linalg family's LAPACK entry on cuSOLVER (cuda/solver.c), and the
** routines it runs (all but GELS and GEEV). */
em_status emcu_lapack(const em_lapack_job *j);
bool emcu_lapack_runs(em_lapack_op op);
/* cudaError_t code -> em_fail naming op and what. */
em_status emcu_fail(const char *op, const char *what, int cuda_error);

#endif
