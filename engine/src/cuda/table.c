/*
** cuda/table.c -- the CUDA device's kernel table (docs/cuda.md): every
** family, every entry, as meta/meta.c is for meta. Plain C; the kernels
** themselves are in cuda/kernels.cu (reached through cuda/cu_iface.h).
**
** Layer one implements the copy family (casts, fill, transfers to and from
** the host, element reads and writes), the creation family (zero, arange,
** linspace/logspace), the elementwise kernels of cu_iface.h and where, the
** matrix products (cuda/blas.c), the reduce family (reductions over dims,
** logsumexp, the lane ops, the comparisons).
** Every other entry refuses with EM_MSG_DEVICE_UNSUPPORTED: at once where
** the entry returns em_status; through the launch-error rule where it
** returns void or a count (cuda/cuda.h: the next op on cuda, or the next
** synchronisation, raises it). COMPILED ONLY until a GPU runs
** tools/cuda-check.sh.
*/
#include "core/kernels.h"
#include "core/kern_copy.h"
#include "core/kern_cplx.h"
#include "core/kern_creation.h"
#include "core/kern_ew.h"
#include "core/kern_index.h"
#include "core/kern_linalg.h"
#include "core/kern_nn.h"
#include "core/kern_optim.h"
#include "core/kern_random.h"
#include "core/kern_reduce.h"
#include "core/kern_sort.h"
#include "core/errmsg.h"

#ifdef EMBER_HAVE_CUDA

#include "cuda/cu_iface.h"
#include "cuda/cuda.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

_Static_assert((int)EMCU_MAX_DIMS == (int)EM_MAX_DIMS, "cu_iface.h: EMCU_MAX_DIMS is EM_MAX_DIMS");
_Static_assert(EM_BOOL == 0 && EM_UINT8 == 1 && EM_INT64 == 5 && EM_FLOAT16 == 6 &&
                   EM_BFLOAT16 == 7 && EM_FLOAT32 == 8 && EM_FLOAT64 == 9 &&
                   EM_COMPLEX64 == 10 && EM_COMPLEX128 == 11,
               "cu_iface.h: the dtype codes are em_dtype's");

static em_status unsupported(const char *op) {
  char d[32];
  em_device dev = {EM_CUDA, emcu_device()};
  return em_fail(EM_E_RUNTIME, EM_MSG_DEVICE_UNSUPPORTED, op, em_device_str(dev, d, sizeof d));
}
/* an entry without a status: the launch-error rule */
#define UNSUPPORTED_VOID(entry) emcu_note(EM_MSG_DEVICE_UNSUPPORTED, entry, "cuda")

static void *stream(void) { return emcu_stream(emcu_device()); }

/* The iterator's geometry for the kernels; 0 when it has too many operands. */
static int geom(const em_iter *it, emcu_geom *g) {
  if (it->nops > EMCU_MAX_OPS) return 0;
  memset(g, 0, sizeof *g);
  g->nops = it->nops;
  g->ndim = it->ndim;
  g->numel = it->numel;
  for (int d = 0; d < it->ndim; d++) {
    g->shape[d] = it->shape[d];
    for (int k = 0; k < it->nops; k++) g->strides[d][k] = it->strides[d][k];
  }
  for (int k = 0; k < it->nops; k++) g->data[k] = it->data[k];
  return 1;
}

/* A launcher's cudaError_t under the launch-error rule. */
static void launched(const char *what, int err) {
  if (err != 0) {
    (void)cudaGetLastError();
    emcu_note("%s: CUDA error: %s", what, cudaGetErrorString((cudaError_t)err));
  }
}

/* A launcher's cudaError_t as an entry's status. */
static em_status cu_status(const char *op, const char *what, int err) {
  if (err == 0) return EM_OK;
  (void)cudaGetLastError();
  return emcu_fail(op, what, err);
}

/* -- copy ------------------------------------------------------------------ */

static void cu_copy(const em_iter *it, em_dtype dst, em_dtype src) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("copy_"); return; }
  launched("copy_", emcu_copy(&g, (int)dst, (int)src, stream()));
}

static void cu_fill(const em_iter *it, em_dtype dt, const void *value) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("fill_"); return; }
  uint64_t bytes[2] = {0, 0}; /* EM_MAX_ELEM_BYTES: complex128 */
  memcpy(bytes, value, em_dtype_size(dt));
  launched("fill_", emcu_fill(&g, (int)em_dtype_size(dt), bytes, stream()));
}

/* dst = src, one of them here and the other on the CPU, both contiguous
** (ops/copy.c). Into the device from pinned memory: asynchronous on the
** current stream; from pageable memory cudaMemcpyAsync returns once the
** source is staged. Out of the device: synchronises (the values are read
** next). */
static em_status cu_transfer(em_tensor *dst, const em_tensor *src) {
  int to_device = em_tensor_device(dst).type == EM_CUDA;
  em_device dev = to_device ? em_tensor_device(dst) : em_tensor_device(src);
  em_status st = emcu_ready("copy_", dev);
  if (st != EM_OK) return st;
  size_t n = (size_t)em_tensor_numel(dst) * em_dtype_size(em_tensor_dtype(dst));
  if (n == 0) return EM_OK;
  cudaStream_t s = (cudaStream_t)emcu_stream(dev.index);
  cudaError_t e = cudaMemcpyAsync(em_tensor_data(dst), em_tensor_data(src), n,
                                  to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess && (!to_device || !em_storage_is_pinned(em_tensor_storage(src))))
    e = cudaStreamSynchronize(s);
  return e == cudaSuccess ? EM_OK : emcu_fail("copy_", "cudaMemcpyAsync", e);
}

/* One element, for item() and printing: synchronises with the current stream. */
static em_status cu_rw(const char *op, void *dst, const void *src, size_t n, int to_device) {
  em_device dev = {EM_CUDA, emcu_device()};
  em_status st = emcu_ready(op, dev);
  if (st != EM_OK) return st;
  cudaStream_t s = (cudaStream_t)emcu_stream(dev.index);
  cudaError_t e = cudaMemcpyAsync(dst, src, n,
                                  to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  return e == cudaSuccess ? EM_OK : emcu_fail(op, "cudaMemcpyAsync", e);
}
static em_status cu_read(const char *op, const void *p, size_t elsize, void *out) {
  return cu_rw(op, out, p, elsize, 0);
}
static em_status cu_write(const char *op, void *p, size_t elsize, const void *in) {
  return cu_rw(op, p, in, elsize, 1);
}

const em_copy_kernels em_cuda_copy_kernels = {
    .copy = cu_copy,
    .fill = cu_fill,
    .transfer = cu_transfer,
    .read = cu_read,
    .write = cu_write,
};

/* -- ew -------------------------------------------------------------------- */

#define EW_NAME(OP, M, OUTC, ...) #OP,
static const char *const ew_names[EM_EW_NKERNELS] = {
    EM_EW_BINARY_KERNELS(EW_NAME, _) EM_EW_UNARY_KERNELS(EW_NAME, _)
    EM_EW_TERNARY_KERNELS(EW_NAME, _)};
#undef EW_NAME

/* em_ew_kernel -> the kernels' op, -1 for the ones layer one lacks */
static int ew_op(em_ew_kernel k) {
  switch (k) {
    case EM_K_add: return EMCU_ADD;
    case EM_K_mul: return EMCU_MUL;
    case EM_K_div: return EMCU_DIV;
    case EM_K_maximum: return EMCU_MAXIMUM;
    case EM_K_minimum: return EMCU_MINIMUM;
    case EM_K_eq: return EMCU_EQ;
    case EM_K_ne: return EMCU_NE;
    case EM_K_lt: return EMCU_LT;
    case EM_K_le: return EMCU_LE;
    case EM_K_gt: return EMCU_GT;
    case EM_K_ge: return EMCU_GE;
    case EM_K_land: return EMCU_LAND;
    case EM_K_lor: return EMCU_LOR;
    case EM_K_lxor: return EMCU_LXOR;
    case EM_K_band: return EMCU_BAND;
    case EM_K_bor: return EMCU_BOR;
    case EM_K_bxor: return EMCU_BXOR;
    case EM_K_neg: return EMCU_NEG;
    case EM_K_abs: return EMCU_ABS;
    case EM_K_sqrt: return EMCU_SQRT;
    case EM_K_rsqrt: return EMCU_RSQRT;
    case EM_K_square: return EMCU_SQUARE;
    case EM_K_reciprocal: return EMCU_RECIPROCAL;
    case EM_K_exp: return EMCU_EXP;
    case EM_K_log: return EMCU_LOG;
    case EM_K_sin: return EMCU_SIN;
    case EM_K_cos: return EMCU_COS;
    case EM_K_tanh: return EMCU_TANH;
    case EM_K_sigmoid: return EMCU_SIGMOID;
    case EM_K_relu: return EMCU_RELU;
    case EM_K_isnan: return EMCU_ISNAN;
    case EM_K_lnot: return EMCU_LNOT;
    case EM_K_bnot: return EMCU_BNOT;
    case EM_K_clamp: return EMCU_CLAMP;
    case EM_K_lerp: return EMCU_LERP;
    case EM_K_divtrunc: return EMCU_DIVTRUNC;
    case EM_K_divfloor: return EMCU_DIVFLOOR;
    case EM_K_remainder: return EMCU_REMAINDER;
    case EM_K_fmod: return EMCU_FMOD;
    case EM_K_pow: return EMCU_POW;
    case EM_K_atan2: return EMCU_ATAN2;
    case EM_K_lshift: return EMCU_LSHIFT;
    case EM_K_rshift: return EMCU_RSHIFT;
    case EM_K_sign: return EMCU_SIGN;
    case EM_K_exp2: return EMCU_EXP2;
    case EM_K_expm1: return EMCU_EXPM1;
    case EM_K_log2: return EMCU_LOG2;
    case EM_K_log10: return EMCU_LOG10;
    case EM_K_log1p: return EMCU_LOG1P;
    case EM_K_tan: return EMCU_TAN;
    case EM_K_asin: return EMCU_ASIN;
    case EM_K_acos: return EMCU_ACOS;
    case EM_K_atan: return EMCU_ATAN;
    case EM_K_sinh: return EMCU_SINH;
    case EM_K_cosh: return EMCU_COSH;
    case EM_K_gelu: return EMCU_GELU;
    case EM_K_silu: return EMCU_SILU;
    case EM_K_softplus: return EMCU_SOFTPLUS;
    case EM_K_erf: return EMCU_ERF;
    case EM_K_erfc: return EMCU_ERFC;
    case EM_K_floor: return EMCU_FLOOR;
    case EM_K_ceil: return EMCU_CEIL;
    case EM_K_round: return EMCU_ROUND;
    case EM_K_trunc: return EMCU_TRUNC;
    case EM_K_frac: return EMCU_FRAC;
    case EM_K_nan_to_num: return EMCU_NAN_TO_NUM;
    case EM_K_isinf: return EMCU_ISINF;
    case EM_K_isfinite: return EMCU_ISFINITE;
    case EM_K_xlogy: return EMCU_XLOGY;
    case EM_K_xlog1py: return EMCU_XLOG1PY;
    case EM_K_hypot: return EMCU_HYPOT;
    case EM_K_copysign: return EMCU_COPYSIGN;
    case EM_K_nextafter: return EMCU_NEXTAFTER;
    case EM_K_gcd: return EMCU_GCD;
    case EM_K_lcm: return EMCU_LCM;
    case EM_K_heaviside: return EMCU_HEAVISIDE;
    case EM_K_erfinv: return EMCU_ERFINV;
    case EM_K_lgamma: return EMCU_LGAMMA;
    case EM_K_digamma: return EMCU_DIGAMMA;
    case EM_K_polygamma: return EMCU_POLYGAMMA;
    case EM_K_i0: return EMCU_I0;
    case EM_K_i0e: return EMCU_I0E;
    case EM_K_i1: return EMCU_I1;
    case EM_K_i1e: return EMCU_I1E;
    case EM_K_ndtr: return EMCU_NDTR;
    case EM_K_ndtri: return EMCU_NDTRI;
    case EM_K_log_ndtr: return EMCU_LOG_NDTR;
    case EM_K_sinc: return EMCU_SINC;
    case EM_K_entr: return EMCU_ENTR;
    case EM_K_logit: return EMCU_LOGIT;
    case EM_K_asinh: return EMCU_ASINH;
    case EM_K_acosh: return EMCU_ACOSH;
    case EM_K_atanh: return EMCU_ATANH;
    case EM_K_gammainc: return EMCU_GAMMAINC;
    case EM_K_gammaincc: return EMCU_GAMMAINCC;
    case EM_K_erfcx: return EMCU_ERFCX;
    case EM_K_bessel_j0: return EMCU_BESSEL_J0;
    case EM_K_bessel_j1: return EMCU_BESSEL_J1;
    case EM_K_bessel_y0: return EMCU_BESSEL_Y0;
    case EM_K_bessel_y1: return EMCU_BESSEL_Y1;
    case EM_K_bessel_k0: return EMCU_BESSEL_K0;
    case EM_K_bessel_k1: return EMCU_BESSEL_K1;
    case EM_K_bessel_k0e: return EMCU_BESSEL_K0E;
    case EM_K_bessel_k1e: return EMCU_BESSEL_K1E;
    case EM_K_airy_ai: return EMCU_AIRY_AI;
    case EM_K_spherical_j0: return EMCU_SPHERICAL_J0;
    case EM_K_cheb_t: return EMCU_CHEB_T;
    case EM_K_cheb_u: return EMCU_CHEB_U;
    case EM_K_cheb_v: return EMCU_CHEB_V;
    case EM_K_cheb_w: return EMCU_CHEB_W;
    case EM_K_scheb_t: return EMCU_SCHEB_T;
    case EM_K_scheb_u: return EMCU_SCHEB_U;
    case EM_K_scheb_v: return EMCU_SCHEB_V;
    case EM_K_scheb_w: return EMCU_SCHEB_W;
    case EM_K_hermite_h: return EMCU_HERMITE_H;
    case EM_K_hermite_he: return EMCU_HERMITE_HE;
    case EM_K_laguerre_l: return EMCU_LAGUERRE_L;
    case EM_K_legendre_p: return EMCU_LEGENDRE_P;
    case EM_K_logaddexp: return EMCU_LOGADDEXP;
    case EM_K_logaddexp2: return EMCU_LOGADDEXP2;
    case EM_K_zeta: return EMCU_ZETA;
    default: return -1;
  }
}

static void cu_ew_run(em_ew_kernel kernel, em_dtype dt, const em_iter *it, const em_kctx *k) {
  int op = ew_op(kernel);
  emcu_geom g;
  if (op < 0 || !geom(it, &g)) {
    UNSUPPORTED_VOID(ew_names[kernel]);
    return;
  }
  emcu_params p = {k ? k->ai : 1, k ? k->af : 1.0, k ? k->flags : 0, k ? k->p0 : 0,
                   k ? k->p1 : 0, k ? k->p2 : 0, k ? k->i0 : 0};
  launched(ew_names[kernel], emcu_ew(op, (int)dt, &g, &p, stream()));
}

/* the integer-division check: a device flag read back (this
** synchronises; the op must refuse before it writes) */
typedef struct zero_ctx {
  emcu_geom g;
  int es;
} zero_ctx;
static int run_any_zero(const void *vc, int *flag, void *s) {
  const zero_ctx *c = vc;
  return emcu_any_zero(&c->g, c->es, flag, s);
}
static em_status cu_flag(const char *op, int (*run)(const void *, int *, void *), const void *ctx,
                         int *set);
static int cu_any_zero(const em_iter *it, em_dtype dt) {
  zero_ctx c;
  if (it->numel == 0) return 0;
  if (!geom(it, &c.g)) { UNSUPPORTED_VOID("integer division"); return 0; }
  c.es = (int)em_dtype_size(dt);
  int found = 0;
  if (cu_flag("integer division", run_any_zero, &c, &found) != EM_OK) {
    emcu_note("integer division: the check for zeros failed on %s", "cuda");
    return 0;
  }
  return found;
}

const em_ew_kernels em_cuda_ew_kernels = {
    .run = cu_ew_run,
    .any_zero = cu_any_zero,
};

/* -- creation ------------------------------------------------------------- */

static void cu_zero(em_tensor *t) {
  em_storage *s = em_tensor_storage(t);
  if (em_storage_nbytes(s) == 0) return;
  launched("zeros", (int)cudaMemsetAsync(em_storage_data(s), 0, em_storage_nbytes(s),
                                         (cudaStream_t)stream()));
}
static void range(const char *what, const em_iter *it, em_dtype dt, const em_range *r, int kind) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID(what); return; }
  emcu_range cr = {r->fstart, r->fstep, r->lstart, r->lend, r->lstep, r->lbase,
                   r->istart, r->istep, r->steps, r->halfway, kind};
  launched(what, emcu_range_fill(&g, (int)dt, &cr, stream()));
}
static void cu_arange(const em_iter *it, em_dtype dt, const em_range *r) {
  range("arange", it, dt, r, 0);
}
static void cu_linspace(const em_iter *it, em_dtype dt, const em_range *r) {
  range(r->log ? "logspace" : "linspace", it, dt, r, r->log ? 2 : 1);
}

const em_creation_kernels em_cuda_creation_kernels = {
    .zero = cu_zero,
    .arange = cu_arange,
    .linspace = cu_linspace,
};

/* -- index: where, index positions and their bounds checks, gather,
** index_select's blocks, scatter (atomic reductions), masked_fill, t[key]
** reads, writes and accumulation, the mask counts and compactions
** (masked_select, masked_scatter_, nonzero, t[mask]) on CUB's scans
** (cuda/scan.cu), repeat_interleave ------------------------------------------ */

static void cu_where(const em_iter *it, em_dtype dt) {
  emcu_geom g;
  /* the kernel moves elements of at most 8 bytes (no complex where on cuda
  ** yet: the engine's autograd formulas take it on the CPU) */
  if (!geom(it, &g) || em_dtype_kindof(dt) == EM_KIND_COMPLEX) { UNSUPPORTED_VOID("where"); return; }
  emcu_params p;
  memset(&p, 0, sizeof p);
  launched("where", emcu_ew(EMCU_WHERE, (int)dt, &g, &p, stream()));
}

/* The checks that answer with the first bad element (index positions,
** probabilities, class ids, BCE inputs): run launches a kernel that
** atomic-mins the lowest bad position of n into *first and then stores that
** element's value (8 bytes: int64 or double) at value; both come back to the
** host (this synchronises: the op must answer before it goes on). 1 with
** the value in *out when one was found; 0 when none was, or when the check
** could not run (then noted under the launch-error rule, naming what). */
typedef int (*first_bad_launch)(const void *ctx, unsigned long long *first, void *value, void *stream);
static int first_bad(const char *what, int64_t n, first_bad_launch run, const void *ctx, void *out) {
  if (n == 0) return 0;
  em_device dev = {EM_CUDA, emcu_device()};
  struct { unsigned long long first; char value[8]; } h = {~0ull, {0}}, *d = NULL;
  if (emcu_alloc(dev, sizeof h, (void **)&d) != EM_OK) {
    emcu_note("%s: out of memory on %s for the check", what, "cuda");
    return 0;
  }
  cudaStream_t s = (cudaStream_t)stream();
  int err = (int)cudaMemcpyAsync(d, &h, sizeof h, cudaMemcpyHostToDevice, s);
  if (err == 0) err = run(ctx, &d->first, d->value, s);
  if (err == 0) err = (int)cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s);
  if (err == 0) err = (int)cudaStreamSynchronize(s);
  emcu_free(dev, d, sizeof h);
  if (err != 0) { launched(what, err); return 0; }
  if (h.first >= (unsigned long long)n) return 0;
  memcpy(out, h.value, 8);
  return 1;
}

/* The index positions (normalize, key_offsets), the first bad one met in
** row-major order reported. */
typedef struct positions_ctx {
  emcu_geom g;
  int idx_dt, mode;
  int64_t size, stride;
} positions_ctx;
static int run_positions(const void *vc, unsigned long long *first, void *value, void *s) {
  const positions_ctx *c = vc;
  return emcu_index_positions(&c->g, c->idx_dt, c->size, c->stride, c->mode, first, value, s);
}
static void positions(const char *op, const em_iter *it, em_dtype idx_dt, int64_t size,
                      int64_t stride, int mode, em_index_bad *bad) {
  bad->found = 0;
  if (it->numel == 0) return;
  positions_ctx c = {.idx_dt = (int)idx_dt, .mode = mode, .size = size, .stride = stride};
  if (!geom(it, &c.g)) { UNSUPPORTED_VOID(op); return; }
  int64_t v;
  if (first_bad(op, it->numel, run_positions, &c, &v)) {
    bad->found = EM_BAD_VALUE;
    bad->value = v;
  }
}
static void cu_normalize(const em_iter *it, em_dtype idx_dt, int64_t size,
                           em_index_bad *bad) {
  positions("index", it, idx_dt, size, 1, 0, bad);
}
static void cu_gather(const em_iter *it, em_dtype dt, int64_t stride) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("gather"); return; }
  launched("gather", emcu_gather(&g, (int)em_dtype_size(dt), stride, stream()));
}
static void cu_select_blocks(em_tensor *out, const em_tensor *src, const em_tensor *idx,
                               int axis) {
  int nd = src->ndim;
  int64_t len = out->sizes[axis], outer = 1, inner = (int64_t)em_dtype_size(src->dtype);
  for (int i = axis + 1; i < nd; i++) inner *= src->sizes[i];
  for (int i = 0; i < axis; i++) outer *= src->sizes[i];
  launched("index_select",
           emcu_select_blocks(em_tensor_data(out), em_tensor_data(src), em_tensor_data(idx), outer,
                              len, inner, src->sizes[axis] * inner, stream()));
}
static void cu_scatter(const em_iter *it, em_dtype dt, em_scatter_mode r,
                         const em_scatter_params *p) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("scatter"); return; }
  int mode = r == EM_SCATTER_MEAN ? (int)EM_SCATTER_SUM : (int)r;
  launched("scatter", emcu_scatter(&g, (int)dt, mode, p->stride, p->alpha_f, p->alpha_i, stream()));
}
static void cu_scatter_mean_div(const em_iter *it, em_dtype dt) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("scatter_reduce"); return; }
  launched("scatter_reduce", emcu_mean_div(&g, (int)dt, stream()));
}
static void cu_key_accumulate(const em_iter *it, em_dtype dt) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("index_put_"); return; }
  launched("index_put_", emcu_key_accumulate(&g, (int)dt, stream()));
}
static void cu_masked_fill(const em_iter *it, em_dtype dt, const void *value) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("masked_fill"); return; }
  uint64_t v = 0;
  memcpy(&v, value, em_dtype_size(dt));
  launched("masked_fill", emcu_masked_fill(&g, (int)em_dtype_size(dt), v, stream()));
}
/* The inclusive running count of a contiguous mask (n > 0 bools) in
** device scratch (*mem, *bytes: give it back with emcu_free): CUB's scan,
** its temporary storage behind the counts. */
static em_status mask_scan(const char *op, const em_tensor *mask, int64_t n, void **mem,
                           size_t *bytes, int64_t **prefix) {
  size_t tb = 0;
  int err = emcu_mask_prefix(NULL, NULL, n, NULL, &tb, NULL);
  if (err != 0) return cu_status(op, "scan", err);
  size_t head = ((size_t)n * sizeof(int64_t) + 255) & ~(size_t)255;
  em_device dev = {EM_CUDA, emcu_device()};
  *bytes = head + tb;
  em_status st = emcu_alloc(dev, *bytes, mem);
  if (st != EM_OK) return st;
  *prefix = *mem;
  err = emcu_mask_prefix(em_tensor_data(mask), *prefix, n, (char *)*mem + head, &tb, stream());
  if (err != 0) {
    emcu_free(dev, *mem, *bytes);
    return cu_status(op, "scan", err);
  }
  return EM_OK;
}
static void scan_done(void *mem, size_t bytes) {
  em_device dev = {EM_CUDA, emcu_device()};
  emcu_free(dev, mem, bytes); /* stream-ordered: reused after the kernels */
}
/* one int64 of the device, read back (synchronises) */
static em_status read_i64(const char *op, const int64_t *d, int64_t *out) {
  cudaStream_t s = (cudaStream_t)stream();
  int err = (int)cudaMemcpyAsync(out, d, sizeof *out, cudaMemcpyDeviceToHost, s);
  if (err == 0) err = (int)cudaStreamSynchronize(s);
  return cu_status(op, "read back", err);
}

static em_status cu_mask_count(const char *op, const em_tensor *mask, em_tensor *runs,
                                 int64_t *count) {
  int64_t n = em_tensor_numel(mask);
  *count = 0;
  if (n == 0) {
    if (runs)
      return cu_status(op, "memset", (int)cudaMemsetAsync(em_tensor_data(runs), 0, sizeof(int64_t),
                                                          (cudaStream_t)stream()));
    return EM_OK;
  }
  void *mem;
  size_t bytes;
  int64_t *prefix;
  em_status st = mask_scan(op, mask, n, &mem, &bytes, &prefix);
  if (st != EM_OK) return st;
  if (runs) {
    int64_t nruns = (n + EM_MASK_RUN - 1) / EM_MASK_RUN;
    st = cu_status(op, "runs", emcu_runs_from_prefix(em_tensor_data(runs), prefix, n, EM_MASK_RUN,
                                                     nruns, stream()));
  }
  if (st == EM_OK) st = read_i64(op, prefix + n - 1, count);
  scan_done(mem, bytes);
  return st;
}
static void cu_masked_compact(em_tensor *out, const em_tensor *src, const em_tensor *mask,
                                const em_tensor *runs, int nouter, const int64_t *sizes,
                                const int64_t *strides) {
  int64_t n = em_tensor_numel(mask), nruns = (n + EM_MASK_RUN - 1) / EM_MASK_RUN;
  if (n == 0) return;
  void *mem;
  size_t bytes;
  int64_t *prefix;
  if (mask_scan("masked_select", mask, n, &mem, &bytes, &prefix) != EM_OK) {
    emcu_note("masked_select: out of memory on %s for the mask's counts", "cuda");
    return;
  }
  launched("masked_select",
           emcu_masked_compact(em_tensor_data(out), em_tensor_data(src), em_tensor_data(mask), prefix,
                               n, nouter, sizes, strides, (const int64_t *)em_tensor_data(runs) + nruns,
                               (int)em_dtype_size(src->dtype), stream()));
  scan_done(mem, bytes);
}
static em_status cu_mask_prefix(const char *op, em_tensor *prefix, const em_tensor *mask,
                                  int sizes_result, int64_t *count) {
  (void)sizes_result;
  int64_t n = em_tensor_numel(mask);
  *count = 0;
  if (n == 0) return EM_OK;
  size_t tb = 0;
  int err = emcu_mask_prefix(NULL, NULL, n, NULL, &tb, NULL);
  if (err != 0) return cu_status(op, "scan", err);
  em_device dev = {EM_CUDA, emcu_device()};
  void *temp = NULL;
  em_status st = emcu_alloc(dev, tb ? tb : 1, &temp);
  if (st != EM_OK) return st;
  int64_t *p = em_tensor_data(prefix);
  st = cu_status(op, "scan", emcu_mask_prefix(em_tensor_data(mask), p, n, temp, &tb, stream()));
  emcu_free(dev, temp, tb ? tb : 1);
  if (st == EM_OK) st = read_i64(op, p + n - 1, count);
  return st;
}
static void cu_masked_select(const em_iter *it, em_dtype dt, em_tensor *out) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("masked_select"); return; }
  launched("masked_select", emcu_masked_select(&g, (int)em_dtype_size(dt), em_tensor_data(out), stream()));
}
static void cu_masked_scatter(const em_iter *it, em_dtype dt, const em_tensor *src) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("masked_scatter_"); return; }
  launched("masked_scatter_",
           emcu_masked_scatter(&g, (int)em_dtype_size(dt), em_tensor_data(src), stream()));
}
static void cu_nonzero(em_tensor *out, const em_tensor *mask) {
  int64_t n = em_tensor_numel(mask);
  if (n == 0 || mask->ndim == 0 || em_tensor_numel(out) == 0) return;
  void *mem;
  size_t bytes;
  int64_t *prefix;
  if (mask_scan("nonzero", mask, n, &mem, &bytes, &prefix) != EM_OK) {
    emcu_note("nonzero: out of memory on %s for the mask's counts", "cuda");
    return;
  }
  launched("nonzero", emcu_nonzero(em_tensor_data(out), em_tensor_data(mask), prefix, n, mask->ndim,
                                   mask->sizes, stream()));
  scan_done(mem, bytes);
}
/* the repeats come to the host: their sum sizes the result */
static em_status cu_repeat_total(const char *op, const em_tensor *repeats, int64_t n,
                                   int64_t *total, em_index_bad *bad) {
  int one = em_tensor_numel(repeats) == 1;
  int64_t m = one ? 1 : n, sum = 0;
  bad->found = 0;
  *total = 0;
  if (n == 0) return EM_OK;
  int64_t *h = malloc((size_t)m * sizeof *h);
  if (!h) return em_fail(EM_E_NOMEM, "%s: out of host memory for %lld repeats", op, (long long)m);
  cudaStream_t s = (cudaStream_t)stream();
  int err = (int)cudaMemcpyAsync(h, em_tensor_data(repeats), (size_t)m * sizeof *h,
                                 cudaMemcpyDeviceToHost, s);
  if (err == 0) err = (int)cudaStreamSynchronize(s);
  if (err != 0) {
    free(h);
    return cu_status(op, "read back", err);
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t ri = h[one ? 0 : i];
    if (ri < 0) {
      bad->found = EM_BAD_VALUE;
      bad->value = ri;
      break;
    }
    if (__builtin_add_overflow(sum, ri, &sum)) {
      bad->found = EM_BAD_OVERFLOW;
      break;
    }
  }
  free(h);
  *total = sum;
  return EM_OK;
}
static void cu_repeat_positions(em_tensor *out, const em_tensor *repeats, int64_t n) {
  int64_t total = em_tensor_numel(out);
  if (total == 0 || n == 0) return;
  if (em_tensor_numel(repeats) == 1) {
    launched("repeat_interleave", emcu_repeat_positions(em_tensor_data(out), em_tensor_data(repeats),
                                                        NULL, n, 1, total, stream()));
    return;
  }
  size_t tb = 0;
  int err = emcu_exclusive_sum(NULL, NULL, n, NULL, &tb, NULL);
  if (err != 0) { launched("repeat_interleave", err); return; }
  size_t head = ((size_t)n * sizeof(int64_t) + 255) & ~(size_t)255, bytes = head + tb;
  em_device dev = {EM_CUDA, emcu_device()};
  void *mem = NULL;
  if (emcu_alloc(dev, bytes, &mem) != EM_OK) {
    emcu_note("repeat_interleave: out of memory on %s for the starts", "cuda");
    return;
  }
  err = emcu_exclusive_sum(em_tensor_data(repeats), mem, n, (char *)mem + head, &tb, stream());
  if (err == 0)
    err = emcu_repeat_positions(em_tensor_data(out), em_tensor_data(repeats), mem, n, 0, total, stream());
  launched("repeat_interleave", err);
  emcu_free(dev, mem, bytes);
}
static void cu_key_offsets(const em_iter *it, em_dtype idx_dt, int64_t size,
                             int64_t stride, int add, em_index_bad *bad) {
  positions("index", it, idx_dt, size, stride, add ? 2 : 1, bad);
}
static void cu_key_mask_offsets(em_tensor *offsets, const em_tensor *mask, int k,
                                  const int64_t *sizes, const int64_t *strides,
                                  const em_tensor *runs) {
  (void)runs;
  int64_t n = em_tensor_numel(mask);
  if (n == 0 || k < 1) return;
  void *mem;
  size_t bytes;
  int64_t *prefix;
  if (mask_scan("index", mask, n, &mem, &bytes, &prefix) != EM_OK) {
    emcu_note("index: out of memory on %s for the mask's counts", "cuda");
    return;
  }
  launched("index", emcu_mask_offsets(em_tensor_data(offsets), em_tensor_data(mask), prefix, n, k,
                                      sizes, strides, stream()));
  scan_done(mem, bytes);
}
static void key_copy(const char *what, const em_tensor *view, const em_tensor *other,
                     const em_tensor *offsets, const em_key_layout *l, int put) {
  emcu_key k;
  memset(&k, 0, sizeof k);
  k.nouter = l->nouter;
  k.ninner = l->ninner;
  k.elsize = (int)em_dtype_size(view->dtype);
  k.put = put;
  k.nb = l->nb;
  k.ob = l->ob;
  for (int d = 0; d < l->nouter + l->ninner; d++) {
    k.sizes[d] = l->sizes[d];
    k.vstrides[d] = l->vstrides[d];
    k.ostrides[d] = l->ostrides[d];
  }
  launched(what, emcu_key_copy(em_tensor_data(view), em_tensor_data(other),
                               em_tensor_data(offsets), &k, stream()));
}
static void cu_key_gather(const em_tensor *view, em_tensor *out, const em_tensor *offsets,
                            const em_key_layout *l) {
  key_copy("index", view, out, offsets, l, 0);
}
static void cu_key_put(em_tensor *view, const em_tensor *value, const em_tensor *offsets,
                         const em_key_layout *l) {
  key_copy("index_put_", view, value, offsets, l, 1);
}

const em_index_kernels em_cuda_index_kernels = {
    .normalize = cu_normalize,
    .gather = cu_gather,
    .select_blocks = cu_select_blocks,
    .scatter = cu_scatter,
    .scatter_mean_div = cu_scatter_mean_div,
    .masked_fill = cu_masked_fill,
    .mask_count = cu_mask_count,
    .masked_compact = cu_masked_compact,
    .mask_prefix = cu_mask_prefix,
    .masked_select = cu_masked_select,
    .masked_scatter = cu_masked_scatter,
    .nonzero = cu_nonzero,
    .where = cu_where,
    .repeat_total = cu_repeat_total,
    .repeat_positions = cu_repeat_positions,
    .key_offsets = cu_key_offsets,
    .key_mask_offsets = cu_key_mask_offsets,
    .key_gather = cu_key_gather,
    .key_put = cu_key_put,
    .key_accumulate = cu_key_accumulate,
};

/* -- linalg: gemm on cuBLAS (cuda/blas.c), the decompositions on cuSOLVER
** (cuda/solver.c); lstsq (GELS) and eig (GEEV) run host-staged
** (ops/linalg_lapack.c) -- */

const em_linalg_kernels em_cuda_linalg_kernels = {
    .gemm = emcu_gemm,
    .lapack = emcu_lapack,
    .lapack_runs = emcu_lapack_runs,
};

/* -- random: the samplers, bernoulli with probabilities, randperm and
** multinomial (the CPU's Philox counters and algorithms, so the same
** numbers) -- */

_Static_assert(EM_LOSS_MSE == 0 && EM_LOSS_L1 == 1 && EM_LOSS_BCE == 2 && EM_LOSS_BCE_LOGITS == 3 &&
                   EM_REDUCTION_NONE == 0 && EM_REDUCTION_MEAN == 1 && EM_REDUCTION_SUM == 2,
               "cuda/nn.cu's loss kinds and reductions are core's");
_Static_assert(EM_SAMPLE_UNIFORM == 0 && EM_SAMPLE_NORMAL == 1 && EM_SAMPLE_EXPONENTIAL == 2 &&
                   EM_SAMPLE_RANDOM == 3 && EM_SAMPLE_BERNOULLI == 4,
               "cuda/kernels.cu's sampler kinds are em_sampler's");

static int uniform_bits(em_dtype dt) {
  switch (dt) {
    case EM_FLOAT16: return 11;
    case EM_BFLOAT16: return 8;
    case EM_FLOAT32: return 24;
    default: return 53;
  }
}

static void cu_sample(const em_iter *it, em_dtype dt, const em_sample *s) {
  if (it->numel == 0) return;
  emcu_sample c;
  memset(&c, 0, sizeof c);
  c.kind = (int)s->kind;
  c.dt = (int)dt;
  c.lanes = em_sample_lanes(s->kind, dt);
  if (s->kind == EM_SAMPLE_UNIFORM) {
    c.bits = uniform_bits(dt);
    c.scale = 1.0;
    for (int i = 0; i < c.bits; i++) c.scale *= 0.5;
  }
  c.a = s->a;
  c.b = s->b;
  c.low = s->low;
  c.range = s->range;
  c.offset = s->draw.offset;
  c.key[0] = s->draw.key[0];
  c.key[1] = s->draw.key[1];
  /* one contiguous tensor: element i lies i elements past data[0] */
  launched("sample", emcu_sample_run(it->data[0], it->numel, &c, stream()));
}
static int run_prob_check(const void *vc, unsigned long long *first, void *value, void *s) {
  return emcu_prob_first_bad(vc, first, value, s);
}
static int cu_prob_check(const em_iter *it, double *bad) {
  emcu_geom g;
  if (it->numel == 0) return 0;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("prob_check"); return 0; }
  return first_bad("bernoulli", it->numel, run_prob_check, &g, bad);
}
static void cu_bernoulli_lt(const em_iter *it) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("bernoulli_lt"); return; }
  launched("bernoulli_", emcu_bernoulli_lt(&g, stream()));
}
static void cu_randperm(em_tensor *perm, const em_draw *d) {
  int64_t n = em_tensor_numel(perm);
  if (n == 0) return;
  em_device dev = {EM_CUDA, emcu_device()};
  void *scratch = NULL;
  if (emcu_alloc(dev, (size_t)n * sizeof(int64_t), &scratch) != EM_OK) {
    emcu_note("randperm: out of memory on %s for %lld draws", "cuda", (long long)n);
    return;
  }
  launched("randperm", emcu_randperm(em_tensor_data(perm), scratch, n, d->offset, d->key, stream()));
  emcu_free(dev, scratch, (size_t)n * sizeof(int64_t)); /* stream-ordered reuse */
}
/* the first bad row's code (cuda/cu_iface.h), read back: this synchronises,
** as the CPU's check answers before anything is drawn */
static em_prob_check cu_multinomial_check(const em_tensor *probs) {
  int64_t rows = probs->ndim == 2 ? probs->sizes[0] : 1;
  int64_t cats = probs->sizes[probs->ndim - 1];
  em_device dev = {EM_CUDA, emcu_device()};
  void *code = NULL;
  unsigned long long host = ~0ull;
  if (emcu_alloc(dev, sizeof host, &code) != EM_OK) {
    emcu_note("multinomial: out of memory on %s for the check", "cuda");
    return EM_PROBS_OK;
  }
  cudaStream_t s = (cudaStream_t)stream();
  int err = (int)cudaMemsetAsync(code, 0xFF, sizeof host, s);
  if (err == 0) err = emcu_multinomial_check(em_tensor_data(probs), rows, cats, code, s);
  if (err == 0) err = (int)cudaMemcpyAsync(&host, code, sizeof host, cudaMemcpyDeviceToHost, s);
  if (err == 0) err = (int)cudaStreamSynchronize(s);
  emcu_free(dev, code, sizeof host);
  if (err != 0) {
    launched("multinomial", err);
    return EM_PROBS_OK;
  }
  if (host == ~0ull) return EM_PROBS_OK;
  return host % 2 ? EM_PROBS_ZERO_SUM : EM_PROBS_BAD_VALUE;
}
static em_status cu_multinomial(const em_tensor *probs, em_tensor *out, int replacement,
                                const em_draw *d) {
  int64_t rows = probs->ndim == 2 ? probs->sizes[0] : 1;
  int64_t cats = probs->sizes[probs->ndim - 1];
  int64_t n = out->sizes[out->ndim - 1];
  size_t bytes = (size_t)(rows * cats + (replacement ? 2 * rows : 0)) * sizeof(double);
  em_device dev = {EM_CUDA, emcu_device()};
  void *scratch = NULL;
  if (rows == 0 || n == 0) return EM_OK;
  if (emcu_alloc(dev, bytes, &scratch) != EM_OK)
    return em_fail(EM_E_NOMEM, "multinomial: out of memory on cuda for %lld x %lld values",
                   (long long)rows, (long long)cats);
  launched("multinomial", emcu_multinomial(em_tensor_data(probs), rows, cats, n, replacement,
                                           em_tensor_data(out), scratch, d->offset, d->key,
                                           stream()));
  emcu_free(dev, scratch, bytes); /* stream-ordered reuse */
  return EM_OK;
}

const em_random_kernels em_cuda_random_kernels = {
    .sample = cu_sample,
    .prob_check = cu_prob_check,
    .bernoulli_lt = cu_bernoulli_lt,
    .randperm = cu_randperm,
    .multinomial_check = cu_multinomial_check,
    .multinomial = cu_multinomial,
};

/* -- nn: conv2d (cuDNN, else im2col + cuBLAS), pooling, the id check, layer and batch
** norm, the losses (cuda/nn.cu); attention and the recurrent loops are
** layer two */

/* conv2d: im2col + cuBLAS, cpu/conv.c's driver with device buffers: per
** chunk of the batch (col under 2^24 elements) and group, FWD col =
** im2col(x), out_g = W_g @ col; BWD_INPUT col = W_g^T @ go_g, col2im;
** BWD_WEIGHT col = im2col(x), gW_g += go_g @ col^T. */
static em_status cu_conv2d(const char *op, em_conv_pass pass, const em_tensor *a,
                             const em_tensor *b, const em_tensor *bias, em_tensor *out,
                             const em_conv2d_geo *g) {
  if (!(g->N > 0 && g->L > 0 && (g->K > 0 || pass == EM_CONV_FORWARD))) return EM_OK;
  if (g->K > 0) { /* cuDNN first (cuda/cudnn.c), unless it is off or declines */
    int taken = 0;
    em_status st = emcu_cudnn_conv2d(op, (int)pass, a, b, bias, out, g, &taken);
    if (taken) return st;
  }
  em_dtype dt = a->dtype;
  int f64 = dt == EM_FLOAT64;
  size_t es = em_dtype_size(dt);
  emcu_conv c;
  c.N = g->N, c.C = g->C, c.H = g->H, c.W = g->W, c.O = g->O, c.Cg = g->Cg, c.kH = g->kH;
  c.kW = g->kW, c.oH = g->oH, c.oW = g->oW, c.groups = g->groups, c.Og = g->Og, c.K = g->K, c.L = g->L;
  for (int i = 0; i < 2; i++) c.s[i] = g->s[i], c.p[i] = g->p[i], c.d[i] = g->d[i];
  int64_t per = g->K * g->L, nb = per > 0 ? ((int64_t)1 << 24) / per : g->N;
  if (nb < 1) nb = 1;
  if (nb > g->N) nb = g->N;
  while (nb > 1 && nb * g->L > INT32_MAX) nb--;
  em_device dev = {EM_CUDA, emcu_device()};
  size_t colb = (size_t)(g->K * nb * g->L) * es + 256, bufb = (size_t)(g->O * nb * g->L) * es + 256;
  void *col = NULL, *buf = NULL;
  em_status st = emcu_alloc(dev, colb, &col);
  if (st == EM_OK) st = emcu_alloc(dev, bufb, &buf);
  if (st != EM_OK) {
    if (col) emcu_free(dev, col, colb);
    return st;
  }
  char *A = em_tensor_data(a), *B = em_tensor_data(b), *R = em_tensor_data(out);
  void *s = stream();
  int err = 0;
  for (int64_t n0 = 0; n0 < g->N && err == 0; n0 += nb) {
    int64_t cnt = g->N - n0 < nb ? g->N - n0 : nb, NL = cnt * g->L;
    if (pass != EM_CONV_FORWARD) err = emcu_conv_reorder(f64, A, buf, NULL, &c, n0, cnt, 1, s);
    for (int64_t gr = 0; gr < g->groups && err == 0; gr++) {
      char *bufg = (char *)buf + (size_t)(gr * g->Og * NL) * es;
      size_t wg = (size_t)(gr * g->Og * g->K) * es;
      if (pass == EM_CONV_FORWARD && g->K == 0) {
        err = (int)cudaMemsetAsync(bufg, 0, (size_t)(g->Og * NL) * es, (cudaStream_t)s);
      } else if (pass == EM_CONV_FORWARD) {
        err = emcu_im2col(f64, A, col, &c, n0, cnt, gr * g->Cg, 1, s);
        if (err == 0 && emcu_nn_gemm(dt, 0, 0, g->Og, NL, g->K, B + wg, g->K, col, NL, 0.0, bufg, NL) != 0)
          err = -1;
      } else if (pass == EM_CONV_BACKWARD_INPUT) {
        if (emcu_nn_gemm(dt, 1, 0, g->K, NL, g->Og, B + wg, g->K, bufg, NL, 0.0, col, NL) != 0) err = -1;
        if (err == 0) err = emcu_im2col(f64, R, col, &c, n0, cnt, gr * g->Cg, 0, s);
      } else {
        err = emcu_im2col(f64, B, col, &c, n0, cnt, gr * g->Cg, 1, s);
        if (err == 0 && emcu_nn_gemm(dt, 0, 1, g->Og, g->K, NL, bufg, NL, col, NL, 1.0, R + wg, g->K) != 0)
          err = -1;
      }
    }
    if (err == 0 && pass == EM_CONV_FORWARD)
      err = emcu_conv_reorder(f64, R, buf, bias ? em_tensor_data(bias) : NULL, &c, n0, cnt, 0, s);
  }
  emcu_free(dev, col, colb);
  emcu_free(dev, buf, bufb);
  if (err == -1) return em_fail(EM_E_RUNTIME, "%s: cuBLAS failed (the next cuda call names why)", op);
  return cu_status(op, "conv2d", err);
}
static void pool_geom(emcu_pool *p, const em_pool2d_geo *g) {
  memset(p, 0, sizeof *p);
  p->planes = g->planes;
  p->H = g->H;
  p->W = g->W;
  p->oH = g->oH;
  p->oW = g->oW;
  for (int i = 0; i < 2; i++) {
    p->k[i] = g->k[i];
    p->s[i] = g->s[i];
    p->p[i] = g->p[i];
    p->d[i] = g->d[i];
  }
  p->count_include_pad = g->count_include_pad;
  p->divisor_override = g->divisor_override;
}
#define NN_DATA(t) ((t) ? em_tensor_data(t) : NULL)
static void cu_max_pool2d(const em_tensor *x, em_tensor *y, em_tensor *indices,
                            const em_pool2d_geo *g) {
  emcu_pool p;
  pool_geom(&p, g);
  launched("max_pool2d", emcu_max_pool2d(x->dtype == EM_FLOAT64, em_tensor_data(x), em_tensor_data(y),
                                         NN_DATA(indices), &p, stream()));
}
static void cu_max_pool2d_backward(const em_tensor *grad_out, const em_tensor *indices,
                                     em_tensor *grad_input) {
  const int64_t *in = grad_input->sizes;
  launched("max_pool2d_backward",
           emcu_max_pool2d_backward(grad_out->dtype == EM_FLOAT64, em_tensor_data(grad_out),
                                    em_tensor_data(indices), em_tensor_data(grad_input), in[0] * in[1],
                                    in[2] * in[3], grad_out->sizes[2] * grad_out->sizes[3], stream()));
}
static void cu_avg_pool2d(const em_tensor *x, em_tensor *y, const em_pool2d_geo *g) {
  emcu_pool p;
  pool_geom(&p, g);
  launched("avg_pool2d", emcu_avg_pool2d(x->dtype == EM_FLOAT64, em_tensor_data(x), em_tensor_data(y), &p,
                                         0, stream()));
}
static void cu_avg_pool2d_backward(const em_tensor *grad_out, em_tensor *grad_input,
                                     const em_pool2d_geo *g) {
  emcu_pool p;
  pool_geom(&p, g);
  launched("avg_pool2d_backward", emcu_avg_pool2d(grad_out->dtype == EM_FLOAT64, em_tensor_data(grad_out),
                                                  em_tensor_data(grad_input), &p, 1, stream()));
}
/* the first bad id comes back to the host (this synchronises: the op
** raises before anything reads the ids) */
typedef struct bad_id_ctx {
  const int64_t *ids;
  int64_t n, num, ignore;
  int has_ignore;
} bad_id_ctx;
static int run_bad_id(const void *vc, unsigned long long *first, void *value, void *s) {
  const bad_id_ctx *c = vc;
  return emcu_bad_id(c->ids, c->n, c->num, c->has_ignore, c->ignore, first, value, s);
}
static int cu_bad_id(const em_tensor *ids, int64_t num, int has_ignore, int64_t ignore,
                       int64_t *bad) {
  bad_id_ctx c = {em_tensor_data(ids), em_tensor_numel(ids), num, ignore, has_ignore};
  return first_bad("the id check", c.n, run_bad_id, &c, bad);
}
static void cu_layer_norm(const em_tensor *x, const em_tensor *w, const em_tensor *b,
                            em_tensor *y, em_tensor *mean, em_tensor *rstd, int64_t M,
                            int64_t D, double eps) {
  launched("layer_norm", emcu_layer_norm(x->dtype == EM_FLOAT64, em_tensor_data(x), NN_DATA(w), NN_DATA(b),
                                         em_tensor_data(y), em_tensor_data(mean), em_tensor_data(rstd), M, D,
                                         eps, stream()));
}
static void cu_layer_norm_backward(const em_tensor *grad_out, const em_tensor *x,
                                     const em_tensor *mean, const em_tensor *rstd,
                                     const em_tensor *w, em_tensor *gx, em_tensor *gw,
                                     em_tensor *gb, int64_t M, int64_t D) {
  launched("layer_norm_backward",
           emcu_layer_norm_backward(x->dtype == EM_FLOAT64, em_tensor_data(grad_out), em_tensor_data(x),
                                    em_tensor_data(mean), em_tensor_data(rstd), NN_DATA(w), NN_DATA(gx),
                                    NN_DATA(gw), NN_DATA(gb), M, D, stream()));
}
static em_status cu_batch_norm(const char *op, const em_tensor *x, const em_tensor *w,
                                 const em_tensor *b, em_tensor *running_mean,
                                 em_tensor *running_var, em_tensor *y, em_tensor *save_mean,
                                 em_tensor *save_invstd, const em_batch_norm_params *p) {
  em_device dev = {EM_CUDA, emcu_device()};
  size_t bytes = (size_t)(2 * p->C + 1) * sizeof(double);
  void *stats = NULL;
  em_status st = emcu_alloc(dev, bytes, &stats);
  if (st != EM_OK) return st;
  st = cu_status(op, "batch_norm",
                 emcu_batch_norm(x->dtype == EM_FLOAT64, em_tensor_data(x), NN_DATA(w), NN_DATA(b),
                                 NN_DATA(running_mean), NN_DATA(running_var), em_tensor_data(y),
                                 em_tensor_data(save_mean), em_tensor_data(save_invstd), stats, p->N, p->C,
                                 p->S, p->training, p->momentum, p->eps, stream()));
  emcu_free(dev, stats, bytes);
  return st;
}
static void cu_batch_norm_backward(const em_tensor *grad_out, const em_tensor *x,
                                     const em_tensor *w, const em_tensor *mean,
                                     const em_tensor *invstd, em_tensor *gx, em_tensor *gw,
                                     em_tensor *gb, const em_batch_norm_params *p) {
  launched("batch_norm_backward",
           emcu_batch_norm_backward(x->dtype == EM_FLOAT64, em_tensor_data(grad_out), em_tensor_data(x),
                                    NN_DATA(w), em_tensor_data(mean), em_tensor_data(invstd), NN_DATA(gx),
                                    NN_DATA(gw), NN_DATA(gb), p->N, p->C, p->S, p->training, stream()));
}
static em_status cu_class_loss(const char *op, const em_tensor *x, const em_tensor *target,
                                 const em_tensor *w, const em_tensor *grad_out, em_tensor *out,
                                 em_tensor *total_weight, const em_class_loss_params *p) {
  emcu_cls c;
  memset(&c, 0, sizeof c);
  c.N = p->N, c.C = p->C, c.S = p->S, c.ignore = p->ignore_index;
  c.prob = p->prob, c.logsm = p->logsm, c.reduction = (int)p->reduction, c.ls = p->label_smoothing;
  em_device dev = {EM_CUDA, emcu_device()};
  size_t bytes = (size_t)(2 * p->N * p->S + 2) * sizeof(double);
  void *scratch = NULL;
  em_status st = emcu_alloc(dev, bytes, &scratch);
  if (st != EM_OK) return st;
  st = cu_status(op, "loss",
                 emcu_class_loss(x->dtype == EM_FLOAT64, em_tensor_data(x), em_tensor_data(target), NN_DATA(w),
                                 NN_DATA(grad_out), em_tensor_data(out), NN_DATA(total_weight), &c, scratch,
                                 stream()));
  emcu_free(dev, scratch, bytes);
  return st;
}
/* binary_cross_entropy's input check: the first value outside [0, 1] */
typedef struct outside_ctx {
  const void *x;
  int64_t n;
  int f64;
} outside_ctx;
static int run_outside(const void *vc, unsigned long long *first, void *value, void *s) {
  const outside_ctx *c = vc;
  return emcu_outside_unit(c->f64, c->x, c->n, first, value, s);
}
static int cu_outside_unit(const em_tensor *x, double *v) {
  outside_ctx c = {em_tensor_data(x), em_tensor_numel(x), x->dtype == EM_FLOAT64};
  return first_bad("binary_cross_entropy", c.n, run_outside, &c, v);
}
static void cu_pointwise_loss(em_pointwise_loss kind, em_reduction reduction,
                                const em_tensor *x, const em_tensor *t, const em_tensor *w,
                                const em_tensor *pw, const em_tensor *grad_out, em_tensor *out) {
  launched("loss", emcu_pointwise_loss(x->dtype == EM_FLOAT64, (int)kind, (int)reduction, em_tensor_numel(out),
                                       em_tensor_data(x), em_tensor_data(t), NN_DATA(w), NN_DATA(pw),
                                       NN_DATA(grad_out), em_tensor_data(out), stream()));
}

const em_nn_kernels em_cuda_nn_kernels = {
    .conv2d = cu_conv2d,
    .max_pool2d = cu_max_pool2d,
    .max_pool2d_backward = cu_max_pool2d_backward,
    .avg_pool2d = cu_avg_pool2d,
    .avg_pool2d_backward = cu_avg_pool2d_backward,
    .bad_id = cu_bad_id,
    .layer_norm = cu_layer_norm,
    .layer_norm_backward = cu_layer_norm_backward,
    .batch_norm = cu_batch_norm,
    .batch_norm_backward = cu_batch_norm_backward,
    .class_loss = cu_class_loss,
    .outside_unit = cu_outside_unit,
    .pointwise_loss = cu_pointwise_loss,
    /* sdpa, sdpa_backward, rnn_forward, rnn_backward: none; the ops
    ** compose them (ops/attention_math.c, ops/rnn_math.c) */
};

/* -- optim: SGD, Adam/AdamW and RMSprop fused (cuda/optim.cu); the .other
** optimizers (Adagrad ... Rprop) are layer two ----------------------------- */

/* p as the kernels' scalars for family kind (0 sgd, 1 adam, 2 rmsprop, 3 other) */
static void optim_scalars(int kind, const em_optim_params *p, emcu_optim *out) {
  emcu_optim o;
  memset(&o, 0, sizeof o);
  o.kind = kind;
  o.lr = p->lr;
  o.momentum = p->momentum;
  o.dampening = p->dampening;
  o.weight_decay = p->weight_decay;
  o.beta1 = p->beta1;
  o.beta2 = p->beta2;
  o.eps = p->eps;
  o.step_size = p->step_size;
  o.bc2_sqrt = p->bc2_sqrt;
  o.alpha = p->alpha;
  o.nesterov = p->nesterov;
  o.maximize = p->maximize;
  o.first = p->first;
  o.amsgrad = p->amsgrad;
  o.decoupled = p->decoupled;
  o.centered = p->centered;
  o.has_momentum = p->has_momentum;
  o.other = p->kind;
  o.rectify = p->rectify;
  o.rho = p->rho;
  o.bc1 = p->bc1;
  o.bc2 = p->bc2;
  o.c1 = p->c1;
  o.c2 = p->c2;
  o.mu = p->mu;
  o.etaminus = p->etaminus;
  o.etaplus = p->etaplus;
  o.step_min = p->step_min;
  o.step_max = p->step_max;
  *out = o;
}

static void optim_run(const char *what, int kind, const em_iter *it, em_dtype dt,
                      const em_optim_params *p) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID(what); return; }
  emcu_optim o;
  optim_scalars(kind, p, &o);
  launched(what, emcu_optim_step(&g, (int)dt, &o, stream()));
}
static void cu_sgd(const em_iter *it, em_dtype dt, const em_optim_params *p) {
  optim_run("SGD.step", 0, it, dt, p);
}
static void cu_adam(const em_iter *it, em_dtype dt, const em_optim_params *p) {
  optim_run("Adam.step", 1, it, dt, p);
}
static void cu_rmsprop(const em_iter *it, em_dtype dt, const em_optim_params *p) {
  optim_run("RMSprop.step", 2, it, dt, p);
}
_Static_assert((int)EM_OPTIM_ADAGRAD == (int)EMCU_OPT_ADAGRAD &&
                   (int)EM_OPTIM_ADADELTA == (int)EMCU_OPT_ADADELTA &&
                   (int)EM_OPTIM_ADAMAX == (int)EMCU_OPT_ADAMAX &&
                   (int)EM_OPTIM_NADAM == (int)EMCU_OPT_NADAM &&
                   (int)EM_OPTIM_RADAM == (int)EMCU_OPT_RADAM &&
                   (int)EM_OPTIM_ASGD == (int)EMCU_OPT_ASGD &&
                   (int)EM_OPTIM_RPROP == (int)EMCU_OPT_RPROP,
               "cu_iface.h: EMCU_OPT_* in em_optim_kind's order");
/* Adagrad ... Rprop: p->kind is em_optim_kind, in EMCU_OPT_*'s order */
static void cu_optim_other(const em_iter *it, em_dtype dt, const em_optim_params *p) {
  static const char *const names[] = {"Adagrad.step", "Adadelta.step", "Adamax.step",
                                      "NAdam.step",   "RAdam.step",    "ASGD.step",
                                      "Rprop.step"};
  optim_run(p->kind >= 0 && p->kind <= EMCU_OPT_RPROP ? names[p->kind] : "optim_step", 3, it,
            dt, p);
}

_Static_assert((int)EM_OPTF_SGD == 0 && (int)EM_OPTF_ADAM == 1 && (int)EM_OPTF_RMSPROP == 2 &&
                   (int)EM_OPTF_OTHER == 3,
               "emcu_optim.kind numbers the families as em_optim_family");
/* n contiguous updates in one launch (emcu_optim_multi): the items and the
** block table are packed on the host, copied to a device buffer of the
** caching allocator (the copy from pageable memory has read the host
** buffer when it returns), the kernel enqueued, the buffer given back
** (stream-ordered: reused only after the kernel). */
static void cu_optim_multi(int family, em_dtype dt, int n, const em_iter *its,
                           const em_optim_params *ps) {
  const char *what = "optimizer step";
  int64_t blocks = 0;
  for (int i = 0; i < n; i++) blocks += (its[i].numel + EMCU_MT_CHUNK - 1) / EMCU_MT_CHUNK;
  if (blocks == 0) return;
  if (blocks > INT32_MAX) { UNSUPPORTED_VOID(what); return; }
  size_t items_b = (size_t)n * sizeof(emcu_mt_item);
  size_t start_at = (items_b + 15) / 16 * 16;
  size_t item_at = start_at + (size_t)blocks * sizeof(int64_t);
  size_t bytes = item_at + (size_t)blocks * sizeof(int);
  char *host = malloc(bytes);
  if (!host) {
    emcu_note("%s: out of memory packing %d parameters", what, n);
    return;
  }
  emcu_mt_item *items = (emcu_mt_item *)host;
  int64_t *start = (int64_t *)(host + start_at);
  int *item = (int *)(host + item_at);
  int64_t b = 0;
  for (int i = 0; i < n; i++) {
    memset(&items[i], 0, sizeof items[i]);
    for (int k = 0; k < its[i].nops && k < EMCU_MAX_OPS; k++) items[i].q[k] = its[i].data[k];
    for (int k = its[i].nops; k < EMCU_MAX_OPS; k++) items[i].q[k] = its[i].data[0];
    items[i].numel = its[i].numel;
    optim_scalars(family, &ps[i], &items[i].o);
    for (int64_t s0 = 0; s0 < its[i].numel; s0 += EMCU_MT_CHUNK, b++) {
      start[b] = s0;
      item[b] = i;
    }
  }
  em_device dev = {EM_CUDA, emcu_device()};
  void *d = NULL;
  if (emcu_alloc(dev, bytes, &d) != EM_OK) {
    emcu_note("%s: out of memory for the table of %d parameters", what, n);
    free(host);
    return;
  }
  int e = (int)cudaMemcpyAsync(d, host, bytes, cudaMemcpyHostToDevice, (cudaStream_t)stream());
  free(host);
  if (e == 0)
    e = emcu_optim_multi((int)dt, (const emcu_mt_item *)d, (const int *)((char *)d + item_at),
                         (const int64_t *)((char *)d + start_at), blocks, stream());
  launched(what, e);
  emcu_free(dev, d, bytes);
}

const em_optim_kernels em_cuda_optim_kernels = {
    .sgd = cu_sgd,
    .adam = cu_adam,
    .rmsprop = cu_rmsprop,
    .other = cu_optim_other,
    .multi = cu_optim_multi,
};

/* -- reduce: the reductions over dims and logsumexp (a block per output),
** the lane ops (max_dim and softmax a block per lane; the scans a thread
** per lane, or a block per lane for few long ones) and the comparisons
** (cuda/kernels.cu)
** ------------------------------------------------------------------------------ */

_Static_assert(EM_RED_SUM == 0 && EM_RED_PROD == 1 && EM_RED_MEAN == 2 && EM_RED_AMAX == 3 &&
                   EM_RED_AMIN == 4 && EM_RED_ALL == 5 && EM_RED_ANY == 6 && EM_RED_NANSUM == 7 &&
                   EM_RED_NANMEAN == 8 && EM_RED_COUNT_NONZERO == 9 && EM_RED_VAR == 10 && EM_RED_NORM == 11,
               "cuda/kernels.cu's reduction kinds are em_red_kind's");

/* A reduction's geometry (cu_iface.h emcu_red) from t and its
** accumulator (t's dims with the reduced ones of size 1), dims innermost
** first, as the kernels walk them. */
static void red_geom(emcu_red *r, const em_tensor *acc, const em_tensor *t) {
  memset(r, 0, sizeof *r);
  r->dt = (int)t->dtype;
  r->count = 1;
  r->nout = 1;
  int64_t es = (int64_t)em_dtype_size(t->dtype);
  for (int d = t->ndim - 1; d >= 0; d--) {
    int64_t n = t->sizes[d];
    if (n == 1) continue;
    if (acc->sizes[d] == 1) {
      r->rshape[r->rndim] = n;
      r->rstride[r->rndim++] = t->strides[d] * es;
      r->count *= n;
    } else {
      r->oshape[r->ondim] = n;
      r->ostride[r->ondim++] = t->strides[d] * es;
      r->nout *= n;
    }
  }
  if (r->count == 0) r->rndim = 0; /* a reduced dim of size 0: the identity, finished */
  r->in = em_tensor_data(t);
  r->acc = em_tensor_data(acc);
}

static em_status cu_reduce(const char *op, em_red_kind k, em_tensor *acc,
                             const em_tensor *t, const em_red_params *p) {
  emcu_red r;
  red_geom(&r, acc, t);
  r.kind = (int)k;
  r.width = em_red_acc_width(k);
  r.acc_int = acc->dtype == EM_INT64;
  r.take_sqrt = p->take_sqrt;
  r.p = p->p;
  r.correction = p->correction;
  int64_t parts = emcu_reduce_parts(&r);
  if (parts <= 1) return cu_status(op, "reduce", emcu_reduce(&r, 1, NULL, stream()));
  em_device dev = {EM_CUDA, emcu_device()};
  size_t bytes = (size_t)(r.nout * parts) * EMCU_RSTATE_BYTES;
  void *scratch = NULL;
  em_status st = emcu_alloc(dev, bytes, &scratch);
  if (st != EM_OK) return st;
  st = cu_status(op, "reduce", emcu_reduce(&r, parts, scratch, stream()));
  emcu_free(dev, scratch, bytes); /* stream-ordered reuse */
  return st;
}
static em_status cu_logsumexp(const char *op, em_tensor *acc, em_tensor *shift,
                                const em_tensor *t) {
  emcu_red r;
  red_geom(&r, acc, t);
  r.width = 1;
  return cu_status(op, "logsumexp", emcu_logsumexp(&r, em_tensor_data(shift), stream()));
}

/* The lane ops: every dim of t but axis is a lane position (outputs agree
** with t on those dims); t of ndim 0 is one lane of length 1. */
static em_status cu_run_lanes(const char *op, int kind, int flag, em_tensor *out,
                                em_tensor *indices, const em_tensor *t, int axis) {
  emcu_lanes l;
  memset(&l, 0, sizeof l);
  l.kind = kind;
  l.flag = flag;
  l.dt = (int)t->dtype;
  l.odt = (int)out->dtype;
  l.nlanes = 1;
  l.len = t->ndim > 0 ? t->sizes[axis] : 1;
  const em_tensor *ts[3] = {out, indices, t};
  for (int k = 0; k < 3; k++) {
    if (!ts[k]) continue;
    l.data[k] = em_tensor_data(ts[k]);
    if (t->ndim > 0) l.lstride[k] = ts[k]->strides[axis] * (int64_t)em_dtype_size(ts[k]->dtype);
  }
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (d == axis || t->sizes[d] == 1) continue;
    l.shape[l.ndim] = t->sizes[d];
    for (int k = 0; k < 3; k++)
      if (ts[k]) l.stride[l.ndim][k] = ts[k]->strides[d] * (int64_t)em_dtype_size(ts[k]->dtype);
    l.nlanes *= t->sizes[d];
    l.ndim++;
  }
  if (t->ndim > 0 && t->sizes[axis] == 0) l.nlanes = 0;
  return cu_status(op, "lane op", emcu_lanes_run(&l, stream()));
}
static em_status cu_max_dim(const char *op, em_tensor *values, em_tensor *indices,
                              const em_tensor *t, int axis, int is_min) {
  return cu_run_lanes(op, EMCU_LANE_MAX, is_min, values, indices, t, axis);
}
static em_status cu_cumextreme(const char *op, em_tensor *values, em_tensor *indices,
                                 const em_tensor *t, int axis, int is_min) {
  return cu_run_lanes(op, EMCU_LANE_CUMEXT, is_min, values, indices, t, axis);
}
static em_status cu_softmax(const char *op, em_tensor *out, const em_tensor *t, int axis,
                              int log) {
  return cu_run_lanes(op, EMCU_LANE_SOFTMAX, log, out, NULL, t, axis);
}
static em_status cu_cumulative(const char *op, em_tensor *out, const em_tensor *t, int axis,
                                 int prod) {
  return cu_run_lanes(op, EMCU_LANE_CUM, prod, out, NULL, t, axis);
}

/* A device flag (an int, zeroed), set by a kernel and read back (this
** synchronises, as the CPU's answer is needed now). */
typedef int (*flag_launch)(const void *ctx, int *flag, void *stream);
static em_status cu_flag(const char *op, int (*run)(const void *, int *, void *), const void *ctx,
                         int *set) {
  em_device dev = {EM_CUDA, emcu_device()};
  void *d = NULL;
  em_status st = emcu_alloc(dev, sizeof(int), &d);
  if (st != EM_OK) return st;
  void *s = stream();
  int host = 0;
  int err = (int)cudaMemsetAsync(d, 0, sizeof(int), (cudaStream_t)s);
  if (err == 0) err = run(ctx, (int *)d, s);
  if (err == 0) err = (int)cudaMemcpyAsync(&host, d, sizeof(int), cudaMemcpyDeviceToHost, (cudaStream_t)s);
  if (err == 0) err = (int)cudaStreamSynchronize((cudaStream_t)s);
  emcu_free(dev, d, sizeof(int));
  if (err != 0) return cu_status(op, "comparison", err);
  *set = host;
  return EM_OK;
}
typedef struct unequal_ctx {
  emcu_geom g;
  int a, b;
} unequal_ctx;
static int run_unequal(const void *vc, int *flag, void *s) {
  const unequal_ctx *c = vc;
  return emcu_unequal(&c->g, c->a, c->b, flag, s);
}
static em_status cu_equal(const em_iter *it, em_dtype a, em_dtype b, int *equal) {
  unequal_ctx c;
  if (!geom(it, &c.g)) return unsupported("equal");
  c.a = (int)a;
  c.b = (int)b;
  int ne = 0;
  em_status st = cu_flag("equal", run_unequal, &c, &ne);
  if (st == EM_OK) *equal = !ne;
  return st;
}
static void cu_isclose(const em_iter *it, em_dtype dt, const em_close_params *p) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("isclose"); return; }
  launched("isclose", emcu_isclose(&g, (int)dt, p->rtol, p->atol, p->equal_nan, stream()));
}
typedef struct any_false_ctx {
  const char *p;
  int64_t n;
} any_false_ctx;
static int run_any_false(const void *vc, int *flag, void *s) {
  const any_false_ctx *c = vc;
  return emcu_any_false(c->p, c->n, flag, s);
}
static em_status cu_all_true(const char *op, const em_tensor *t, int *result) {
  any_false_ctx c = {em_tensor_data(t), em_tensor_numel(t)};
  int any_false = 0;
  em_status st = cu_flag(op, run_any_false, &c, &any_false);
  if (st == EM_OK) *result = !any_false;
  return st;
}

const em_reduce_kernels em_cuda_reduce_kernels = {
    .reduce = cu_reduce,
    .logsumexp = cu_logsumexp,
    .max_dim = cu_max_dim,
    .cumextreme = cu_cumextreme,
    .softmax = cu_softmax,
    .cumulative = cu_cumulative,
    .equal = cu_equal,
    .isclose = cu_isclose,
    .all_true = cu_all_true,
};

/* -- sort: sort, topk, kthvalue/median/nanmedian and unique on CUB's
** segmented radix sort (cuda/sort.cu); unique over slices (dim=) is layer two */

/* The lanes of t for the sort kernels (cu_run_lanes' geometry). */
static void sort_lanes(emcu_lanes *l, em_tensor *values, em_tensor *indices, const em_tensor *t,
                       int axis) {
  memset(l, 0, sizeof *l);
  l->dt = l->odt = (int)t->dtype;
  l->nlanes = 1;
  l->len = t->ndim > 0 ? t->sizes[axis] : 1;
  const em_tensor *ts[3] = {values, indices, t};
  for (int k = 0; k < 3; k++) {
    l->data[k] = em_tensor_data(ts[k]);
    if (t->ndim > 0) l->lstride[k] = ts[k]->strides[axis] * (int64_t)em_dtype_size(ts[k]->dtype);
  }
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (d == axis || t->sizes[d] == 1) continue;
    l->shape[l->ndim] = t->sizes[d];
    for (int k = 0; k < 3; k++)
      l->stride[l->ndim][k] = ts[k]->strides[d] * (int64_t)em_dtype_size(ts[k]->dtype);
    l->nlanes *= t->sizes[d];
    l->ndim++;
  }
  if (t->ndim > 0 && t->sizes[axis] == 0) l->nlanes = 0;
}
static em_status run_sort(const char *op, em_tensor *values, em_tensor *indices, const em_tensor *t,
                          int axis, int64_t k, int desc, int pick, int kind) {
  emcu_lanes l;
  sort_lanes(&l, values, indices, t, axis);
  int64_t total = l.nlanes * l.len;
  if (total == 0) return EM_OK;
  if (total >= ((int64_t)1 << 31))
    return em_fail(EM_E_VALUE, "%s: cuda sorts fewer than 2^31 elements at once, got %lld", op,
                   (long long)total);
  size_t bytes = emcu_sort_scratch(l.nlanes, l.len);
  em_device dev = {EM_CUDA, emcu_device()};
  void *scratch = NULL;
  em_status st = emcu_alloc(dev, bytes, &scratch);
  if (st != EM_OK) return st;
  st = cu_status(op, "sort", emcu_sort_lanes(&l, k, desc, pick, kind, scratch, bytes, stream()));
  emcu_free(dev, scratch, bytes);
  return st;
}
static em_status cu_sort(const char *op, em_tensor *values, em_tensor *indices,
                           const em_tensor *t, int axis, int64_t k, int descending) {
  return run_sort(op, values, indices, t, axis, k, descending, 0, 0);
}
static em_status cu_pick(const char *op, em_tensor *values, em_tensor *indices,
                           const em_tensor *t, int axis, em_pick_kind kind, int64_t k) {
  return run_sort(op, values, indices, t, axis, k, 0, 1, (int)kind);
}
/* unique: the neighbours that start a new value, and their running count */
static em_status unique_groups(const char *op, const em_tensor *sorted, void **mem, size_t *bytes,
                               bool **flags, int64_t **group, int64_t *n) {
  int64_t m = em_tensor_numel(sorted);
  em_device dev = {EM_CUDA, emcu_device()};
  size_t tb = 0;
  int err = emcu_mask_prefix(NULL, NULL, m, NULL, &tb, NULL);
  if (err != 0) return cu_status(op, "scan", err);
  size_t g = ((size_t)m * sizeof(int64_t) + 255) & ~(size_t)255;
  size_t f = ((size_t)m + 255) & ~(size_t)255;
  *bytes = g + f + tb;
  em_status st = emcu_alloc(dev, *bytes, mem);
  if (st != EM_OK) return st;
  *group = *mem;
  *flags = (bool *)((char *)*mem + g);
  err = emcu_unique_flags(em_tensor_data(sorted), (int)sorted->dtype, m, *flags, stream());
  if (err == 0) err = emcu_mask_prefix(*flags, *group, m, (char *)*mem + g + f, &tb, stream());
  st = cu_status(op, "unique", err);
  if (st == EM_OK) st = read_i64(op, *group + m - 1, n);
  if (st != EM_OK) emcu_free(dev, *mem, *bytes);
  return st;
}
static em_status cu_unique_count(const em_tensor *sorted, int64_t *n) {
  *n = 0;
  if (em_tensor_numel(sorted) == 0) return EM_OK;
  void *mem;
  size_t bytes;
  bool *flags;
  int64_t *group;
  em_status st = unique_groups("unique", sorted, &mem, &bytes, &flags, &group, n);
  if (st == EM_OK) scan_done(mem, bytes);
  return st;
}
static em_status cu_unique_write(const em_tensor *sorted, const em_tensor *perm,
                                   em_tensor *values, em_tensor *inverse, em_tensor *counts) {
  int64_t m = em_tensor_numel(sorted), n = 0;
  if (m == 0) return EM_OK;
  void *mem;
  size_t bytes;
  bool *flags;
  int64_t *group;
  em_status st = unique_groups("unique", sorted, &mem, &bytes, &flags, &group, &n);
  if (st != EM_OK) return st;
  st = cu_status("unique", "unique",
                 emcu_unique_write(em_tensor_data(sorted), (int)em_dtype_size(sorted->dtype),
                                   em_tensor_data(perm), flags, group, m, em_tensor_data(values),
                                   inverse ? em_tensor_data(inverse) : NULL,
                                   counts ? em_tensor_data(counts) : NULL, stream()));
  scan_done(mem, bytes);
  return st;
}
const em_sort_kernels em_cuda_sort_kernels = {
    .sort = cu_sort,
    .pick = cu_pick,
    .unique_count = cu_unique_count,
    .unique_write = cu_unique_write,
    /* unique_dim_sort, unique_dim_write: none; ops/unique_math.c composes
    ** unique(dim=) from the sort, index and scan kernels */
};


/* -- The table --------------------------------------------------------------- */

/* -- cplx: complex loops (cuda/complex.cu) and the FFT (cuda/fft.c) -------- */

_Static_assert((int)EMCU_CX_ADD == (int)EM_CX_ADD && (int)EMCU_CX_NE == (int)EM_CX_NE &&
                   (int)EMCU_CX_ABS == (int)EM_CX_ABS && (int)EMCU_CX_TANH == (int)EM_CX_TANH &&
                   (int)EMCU_CX_ATANH == (int)EM_CX_ATANH &&
                   (int)EMCU_CX_COUNT == (int)EM_CX_COUNT,
               "cu_iface.h: the complex op codes are em_cx_op's");

static void cu_cplx_ew(em_cx_op op, em_dtype dt, const em_iter *it, double alpha) {
  emcu_geom g;
  if (!geom(it, &g)) { UNSUPPORTED_VOID("complex elementwise"); return; }
  launched("complex elementwise", emcu_cx_ew((int)op, (int)dt, &g, alpha, stream()));
}

const em_cplx_kernels em_cuda_cplx_kernels = {
    .ew = cu_cplx_ew,
    .fft = emcu_fft, /* cuda/fft.c */
    .rfft = emcu_rfft,
};

const em_kernels em_cuda_kernels = {
    .name = "cuda",
    .type = EM_CUDA,
    .alloc = emcu_alloc,
    .free = emcu_free,
    .check = emcu_ready,

    .copy = &em_cuda_copy_kernels,
    .ew = &em_cuda_ew_kernels,
    .index = &em_cuda_index_kernels,
    .linalg = &em_cuda_linalg_kernels,
    .random = &em_cuda_random_kernels,
    .creation = &em_cuda_creation_kernels,
    .nn = &em_cuda_nn_kernels,
    .optim = &em_cuda_optim_kernels,
    .cplx = &em_cuda_cplx_kernels,
    .reduce = &em_cuda_reduce_kernels,
    .sort = &em_cuda_sort_kernels,
};

#else
/* a build without CUDA has no cuda table: em_kernels_for(cuda) is NULL */
typedef int em_cuda_table_not_built;
#endif
