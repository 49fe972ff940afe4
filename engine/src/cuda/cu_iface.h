/*
** cuda/cu_iface.h -- between the C side of the backend (cuda/table.c) and
** its kernels (cuda/kernels.cu, compiled by nvcc as C++). Plain data only:
** the .cu files include no core header, so nvcc never parses the engine's
** C11. Each launcher enqueues on stream and returns a cudaError_t (0: the
** launch went); the C side applies the launch-error rule (cuda/cuda.h).
*/
#ifndef EMBER_CUDA_CU_IFACE_H
#define EMBER_CUDA_CU_IFACE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { EMCU_MAX_DIMS = 16, EMCU_MAX_OPS = 5 };

/* An em_iter's geometry (core/iter.h): dim 0 innermost, byte strides. */
typedef struct emcu_geom {
  int nops, ndim;
  int64_t numel;
  int64_t shape[EMCU_MAX_DIMS];
  int64_t strides[EMCU_MAX_DIMS][EMCU_MAX_OPS];
  char *data[EMCU_MAX_OPS];
} emcu_geom;

/* dtype codes: em_dtype's values (ember.h): bool, u8, i8, i16, i32, i64,
** f16, bf16, f32, f64, complex64, complex128 = 0..11 */

/* operand 0 (dst) = operand 1 (src) cast with docs/dtypes.md's rules */
int emcu_copy(const emcu_geom *g, int dst, int src, void *stream);
/* every element of operand 0 = the elsize bytes (up to 16) of value */
int emcu_fill(const emcu_geom *g, int elsize, const uint64_t value[2], void *stream);
/* operand 0 (contiguous, dtype dt) = a range: kind 0 arange (integer: istart
** + istep * i; float: fstart + fstep * i), 1 linspace, 2 logspace */
typedef struct emcu_range {
  double fstart, fstep, lstart, lend, lstep, lbase;
  int64_t istart, istep, steps, halfway;
  int kind;
} emcu_range;
int emcu_range_fill(const emcu_geom *g, int dt, const emcu_range *r, void *stream);

/* The elementwise ops the kernels have (a subset of core/kern_ew.h's
** lists; the C side maps em_ew_kernel to these and refuses the rest). */
enum {
  EMCU_ADD, EMCU_MUL, EMCU_DIV, EMCU_MAXIMUM, EMCU_MINIMUM,
  EMCU_EQ, EMCU_NE, EMCU_LT, EMCU_LE, EMCU_GT, EMCU_GE,
  EMCU_LAND, EMCU_LOR, EMCU_LXOR, EMCU_BAND, EMCU_BOR, EMCU_BXOR,
  EMCU_NEG, EMCU_ABS, EMCU_SQRT, EMCU_RSQRT, EMCU_SQUARE, EMCU_RECIPROCAL,
  EMCU_EXP, EMCU_LOG, EMCU_SIN, EMCU_COS, EMCU_TANH, EMCU_SIGMOID, EMCU_RELU,
  EMCU_ISNAN, EMCU_LNOT, EMCU_BNOT,
  EMCU_CLAMP, EMCU_LERP,
  EMCU_WHERE,
  /* layer two: the rest of core/kern_ew.h's lists */
  EMCU_DIVTRUNC, EMCU_DIVFLOOR, EMCU_REMAINDER, EMCU_FMOD, EMCU_POW, EMCU_ATAN2,
  EMCU_LSHIFT, EMCU_RSHIFT, EMCU_SIGN, EMCU_EXP2, EMCU_EXPM1, EMCU_LOG2, EMCU_LOG10,
  EMCU_LOG1P, EMCU_TAN, EMCU_ASIN, EMCU_ACOS, EMCU_ATAN, EMCU_SINH, EMCU_COSH, EMCU_GELU,
  EMCU_SILU, EMCU_SOFTPLUS, EMCU_ERF, EMCU_ERFC, EMCU_FLOOR, EMCU_CEIL, EMCU_ROUND,
  EMCU_TRUNC, EMCU_FRAC, EMCU_NAN_TO_NUM, EMCU_ISINF, EMCU_ISFINITE, EMCU_XLOGY,
  EMCU_XLOG1PY, EMCU_HYPOT, EMCU_COPYSIGN, EMCU_NEXTAFTER, EMCU_GCD, EMCU_LCM,
  EMCU_HEAVISIDE,
  /* the special functions on core/special_impl.h's series (in double):
  ** polygamma's order in i0, logit's eps in p0 (flags 1: given) */
  EMCU_ERFINV, EMCU_LGAMMA, EMCU_DIGAMMA, EMCU_POLYGAMMA, EMCU_I0, EMCU_I0E, EMCU_I1,
  EMCU_I1E, EMCU_NDTR, EMCU_NDTRI, EMCU_LOG_NDTR, EMCU_SINC, EMCU_ENTR, EMCU_LOGIT,
  EMCU_LOGADDEXP, EMCU_LOGADDEXP2, EMCU_ZETA,
  EMCU_ASINH, EMCU_ACOSH, EMCU_ATANH,
  EMCU_GAMMAINC, EMCU_GAMMAINCC, EMCU_ERFCX, EMCU_BESSEL_J0, EMCU_BESSEL_J1, EMCU_BESSEL_Y0,
  EMCU_BESSEL_Y1,
  EMCU_BESSEL_K0, EMCU_BESSEL_K1, EMCU_BESSEL_K0E, EMCU_BESSEL_K1E, EMCU_AIRY_AI, EMCU_SPHERICAL_J0,
  EMCU_CHEB_T, EMCU_CHEB_U, EMCU_CHEB_V, EMCU_CHEB_W, EMCU_SCHEB_T, EMCU_SCHEB_U,
  EMCU_SCHEB_V, EMCU_SCHEB_W, EMCU_HERMITE_H, EMCU_HERMITE_HE, EMCU_LAGUERRE_L, EMCU_LEGENDRE_P
};
typedef struct emcu_params {
  int64_t ai;   /* alpha (integer dtypes) */
  double af;    /* alpha (floating dtypes) */
  int flags;    /* clamp: 1 has min, 2 has max */
  double p0, p1, p2; /* softplus beta/threshold; nan_to_num nan/posinf/neginf */
  int64_t i0;   /* round: decimals; gelu: the tanh approximation */
} emcu_params;
/* *flag (device int, zeroed by the caller) = 1 where operand 0 (integer,
** elsize bytes) has a zero: the integer division's check */
int emcu_any_zero(const emcu_geom *g, int elsize, int *flag, void *stream);
/* operands: 0 the output, then the inputs (arity from op), all of dtype dt
** but the bool outputs of the comparisons (and where's bool condition,
** operand 1). */
int emcu_ew(int op, int dt, const emcu_geom *g, const emcu_params *p, void *stream);

/* A reduction over some dims of one input (core/kern_reduce.h's reduce
** entry): kind is em_red_kind's value, dt the input's dtype. Output o (0..
** nout-1, the accumulator's row-major order) reads the count inputs at
** in + (o over oshape/ostride) + (j over rshape/rstride), dims innermost
** first, strides in bytes; it writes width values at acc + o * width
** (double, or int64 when acc_int), finished (mean divided, var/std, norm's
** root) as the CPU's entry leaves them. */
typedef struct emcu_red {
  int kind, dt, width, acc_int, take_sqrt;
  int ondim, rndim;
  int64_t nout, count;
  int64_t oshape[EMCU_MAX_DIMS], ostride[EMCU_MAX_DIMS];
  int64_t rshape[EMCU_MAX_DIMS], rstride[EMCU_MAX_DIMS];
  const char *in;
  void *acc;
  double p, correction;
} emcu_red;
/* parts: emcu_reduce_parts(r) (1: a block per output; more: that many
** blocks per output, with scratch of nout * parts * EMCU_RSTATE_BYTES on
** the device for their states) */
enum { EMCU_RSTATE_BYTES = 32 };
int64_t emcu_reduce_parts(const emcu_red *r);
int emcu_reduce(const emcu_red *r, int64_t parts, void *scratch, void *stream);
/* logsumexp over r's geometry (kind ignored, width 1, double outputs):
** shift[o] = the max of output o's inputs (0 where infinite), acc[o] =
** log(sum(exp(x - shift))) + shift. */
int emcu_logsumexp(const emcu_red *r, double *shift, void *stream);

/* The lane ops (core/kern_reduce.h): one whole dim of the input per lane.
** Operand 0 the output (values), 1 the int64 indices (max_dim,
** cumextreme; else unused), 2 the input; shape/stride: the other dims,
** innermost first, byte strides per operand; lstride: each operand's byte
** stride along the lane. */
enum { EMCU_LANE_MAX, EMCU_LANE_CUMEXT, EMCU_LANE_SOFTMAX, EMCU_LANE_CUM };
typedef struct emcu_lanes {
  int kind, flag; /* flag: is_min (MAX, CUMEXT), log (SOFTMAX), prod (CUM) */
  int dt, odt;    /* the input's dtype, the output's */
  int ndim;
  int64_t nlanes, len;
  int64_t shape[EMCU_MAX_DIMS];
  int64_t stride[EMCU_MAX_DIMS][3];
  int64_t lstride[3];
  char *data[3];
} emcu_lanes;
int emcu_lanes_run(const emcu_lanes *l, void *stream);

/* isclose: operand 0 (bool) = operands 1 and 2 (dtype dt) close (core/
** kern_reduce.h's rule); equal: *flag (device int, zeroed by the caller)
** set to 1 where operands 0 (dtype a) and 1 (dtype b) differ as numbers;
** all_true: *flag set to 1 where one of the n bools at p is false. */
int emcu_isclose(const emcu_geom *g, int dt, double rtol, double atol, int equal_nan,
                 void *stream);
int emcu_unequal(const emcu_geom *g, int a, int b, int *flag, void *stream);
int emcu_any_false(const char *p, int64_t n, int *flag, void *stream);

/* Random numbers (core/kern_random.h, the CPU's cpu/random.c): element i
** of the contiguous n elements at out (dtype dt) draws from lane i % lanes
** of Philox4x32-10 block offset + i / lanes under key, as the CPU's kernel,
** so the integer and uniform samples are bit for bit the CPU's (normal and
** exponential go through the device's log/sin/cos). kind is em_sampler's
** value; bits/scale: the uniform's mantissa bits and 2^-bits. */
typedef struct emcu_sample {
  int kind, dt, lanes, bits;
  double scale, a, b;
  int64_t low;
  uint64_t range, offset;
  uint32_t key[2];
} emcu_sample;
int emcu_sample_run(char *out, int64_t n, const emcu_sample *s, void *stream);
/* operand 0 (float64 uniforms) = 1.0 where below operand 1 (float64), else 0 */
int emcu_bernoulli_lt(const emcu_geom *g, void *stream);
/* *first (device, set to INT64_MAX by the caller) = the lowest position of
** operand 0 (float64) not in [0, 1]; then *value (device) = its value */
int emcu_prob_first_bad(const emcu_geom *g, unsigned long long *first, double *value,
                        void *stream);
/* perm (n int64) = Fisher-Yates from the top as the CPU's randperm;
** scratch: n int64 on the device (each step's partner) */
int emcu_randperm(int64_t *perm, int64_t *scratch, int64_t n, uint64_t offset,
                  const uint32_t key[2], void *stream);
/* multinomial over rows x cats probabilities P (contiguous float64, on the
** device). check: *code (device, set to ~0 by the caller) = 2 r for the
** first row r holding inf, NaN or a negative value, 2 r + 1 for the first
** one summing to <= 0 (the CPU's order). run: R (rows x n int64) = 1-based
** categories as cpu/random.c draws them: with replacement each row's
** cumulative sums in order (scratch: rows x cats + 2 rows doubles) and
** u53 at counter offset + r n + s; without, the keys p / Exp(1) at counter
** offset + r cats + j (scratch: rows x cats doubles), the n largest,
** ties to the lower index. */
int emcu_multinomial_check(const double *P, int64_t rows, int64_t cats,
                           unsigned long long *code, void *stream);
int emcu_multinomial(const double *P, int64_t rows, int64_t cats, int64_t n, int replacement,
                     int64_t *R, double *scratch, uint64_t offset, const uint32_t key[2],
                     void *stream);

/* -- index family (core/kern_index.h) -- */
/* Operands 0 out (int64), 1 the index (idx_dt: int64 or int32). mode 0:
** out = the 0-based position of each 1-based one in [0, size); 1: out =
** that * stride; 2: out += that * stride. A bad position is skipped and
** the lowest row-major position of one goes to *first (device, set to
** ~0 by the caller), its value then to *value (device). */
int emcu_index_positions(const emcu_geom *g, int idx_dt, int64_t size, int64_t stride, int mode,
                         unsigned long long *first, int64_t *value, void *stream);
/* Operands 0 out, 1 src restrided, 2 index (int64): out = src[index] */
int emcu_gather(const emcu_geom *g, int elsize, int64_t stride, void *stream);
/* rows = outer * len rows of inner bytes: dst row r = src's block
** (r / len) * axis_bytes + idx[r % len] * inner */
int emcu_select_blocks(char *dst, const char *src, const int64_t *idx, int64_t outer, int64_t len,
                       int64_t inner, int64_t axis_bytes, void *stream);
/* Operands 0 dst restrided, 1 index (int64), 2 src (dt): dst[index] (mode)=
** src, mode em_scatter_mode's value; the reductions are atomic. */
int emcu_scatter(const emcu_geom *g, int dt, int mode, int64_t stride, double alpha_f,
                 int64_t alpha_i, void *stream);
/* Operands 0 dst (dt), 1 counts (int64): dst /= counts where counts > 1 */
int emcu_mean_div(const emcu_geom *g, int dt, void *stream);
/* Operands 0 dst, 1 mask (bool): dst = value's elsize bytes where mask */
int emcu_masked_fill(const emcu_geom *g, int elsize, uint64_t value, void *stream);
/* Operands 0 base, 1 value, 2 offsets (int64, elements): base[offsets] +=
** value, atomically (bool: or) */
int emcu_key_accumulate(const emcu_geom *g, int dt, void *stream);
/* t[key]'s copies (em_key_layout): strides in elements */
typedef struct emcu_key {
  int nouter, ninner, elsize, put;
  int64_t nb, ob;
  int64_t sizes[EMCU_MAX_DIMS], vstrides[EMCU_MAX_DIMS], ostrides[EMCU_MAX_DIMS];
} emcu_key;
int emcu_key_copy(char *view, char *other, const int64_t *offsets, const emcu_key *k, void *stream);

/* -- masks and repeats (cuda/scan.cu, on CUB's device scans) -- */
/* prefix (n int64) = the inclusive running count of mask (n bools), or
** out = the exclusive running sum of in (n int64); temp NULL: *temp_bytes
** gets the scratch the scan needs */
int emcu_mask_prefix(const bool *mask, int64_t *prefix, int64_t n, void *temp, size_t *temp_bytes,
                     void *stream);
int emcu_exclusive_sum(const int64_t *in, int64_t *out, int64_t n, void *temp, size_t *temp_bytes,
                       void *stream);
/* runs[r] = prefix[r * run - 1] (0 for r = 0), r = 0..nruns (the last: the
** total) */
int emcu_runs_from_prefix(int64_t *runs, const int64_t *prefix, int64_t n, int64_t run,
                          int64_t nruns, void *stream);
/* out[o * *count + prefix[i] - 1] = src[outer offset of o + i] where
** mask[i], for the outer positions (nouter dims, sizes and strides in
** elements); count: the total, on the device */
int emcu_masked_compact(char *out, const char *src, const bool *mask, const int64_t *prefix,
                        int64_t n, int nouter, const int64_t *sizes, const int64_t *strides,
                        const int64_t *count, int elsize, void *stream);
/* offsets[prefix[i] - 1] = the sum over the k dims of mask (sizes) of i's
** position times strides (elements), where mask[i] */
int emcu_mask_offsets(int64_t *offsets, const bool *mask, const int64_t *prefix, int64_t n, int k,
                      const int64_t *sizes, const int64_t *strides, void *stream);
/* row prefix[i] - 1 of out (n true rows of nd int64) = i's 1-based position */
int emcu_nonzero(int64_t *out, const bool *mask, const int64_t *prefix, int64_t n, int nd,
                 const int64_t *sizes, void *stream);
/* masked_select: operands 0 src, 1 mask, 2 prefix: out[prefix - 1] = src;
** masked_scatter: operands 0 dst, 1 mask, 2 prefix: dst = src[prefix - 1] */
int emcu_masked_select(const emcu_geom *g, int elsize, char *out, void *stream);
int emcu_masked_scatter(const emcu_geom *g, int elsize, const char *src, void *stream);
/* out = each 1..n repeated repeats times (one: repeats[0] for all; else
** starts the exclusive sums of repeats) */
int emcu_repeat_positions(int64_t *out, const int64_t *repeats, const int64_t *starts, int64_t n,
                          int one, int64_t total, void *stream);

/* -- sort family (cuda/sort.cu, on CUB's segmented radix sort) -- */
/* The lanes of t as for emcu_lanes (operand 0 values, 1 indices, 2 t; dt
** t's dtype), every lane sorted (stable; NaN after every number; -0 = 0).
** mode 0: the first k of each lane (descending with desc) into values and
** indices; 1: one entry per lane, the pick (kind em_pick_kind's value,
** k). scratch: emcu_sort_scratch(nlanes, len) bytes on the device; fails
** (cudaErrorInvalidValue) from 2^31 elements on (CUB's item count). */
size_t emcu_sort_scratch(int64_t nlanes, int64_t len);
int emcu_sort_lanes(const emcu_lanes *l, int64_t k, int desc, int pick, int pick_kind,
                    void *scratch, size_t scratch_bytes, void *stream);
/* unique over sorted (n elements of dt, contiguous): flags (n bools) =
** starts a new value (NaN equals nothing) */
int emcu_unique_flags(const char *sorted, int dt, int64_t n, bool *flags, void *stream);
/* from flags' inclusive count (group, n int64): values[group - 1] =
** sorted where flags; inverse (or NULL)[perm - 1] = group; counts (or NULL)
** [group - 1] += 1 */
int emcu_unique_write(const char *sorted, int elsize, const int64_t *perm, const bool *flags,
                      const int64_t *group, int64_t n, char *values, int64_t *inverse,
                      int64_t *counts, void *stream);

/* -- optimizers (cuda/optim.cu; core/kern_optim.h's operands) -- */
typedef struct emcu_optim {
  int kind;  /* 0 sgd, 1 adam, 2 rmsprop, 3 the others (which: other) */
  double lr, momentum, dampening, weight_decay, beta1, beta2, eps, step_size, bc2_sqrt, alpha;
  int nesterov, maximize, first, amsgrad, decoupled, centered, has_momentum;
  /* kind 3: em_optim_kind's order (Adagrad, Adadelta, Adamax, NAdam,
  ** RAdam, ASGD, Rprop) and core/kern_optim.h's scalars */
  int other, rectify;
  double rho, bc1, bc2, c1, c2, mu, etaminus, etaplus, step_min, step_max;
} emcu_optim;
enum { EMCU_OPT_ADAGRAD, EMCU_OPT_ADADELTA, EMCU_OPT_ADAMAX, EMCU_OPT_NADAM, EMCU_OPT_RADAM,
       EMCU_OPT_ASGD, EMCU_OPT_RPROP };
int emcu_optim_step(const emcu_geom *g, int dt, const emcu_optim *o, void *stream);
/* Many contiguous parameters of one dtype in one launch (cuda/optim.cu):
** items (device memory) are the parameters, each operand's first element
** (q[k]; an absent slot is the parameter's) and its scalars; block b (of
** blocks) updates elements [start[b], start[b] + EMCU_MT_CHUNK) of
** items[item[b]]. */
enum { EMCU_MT_CHUNK = 4096 };
typedef struct emcu_mt_item {
  char *q[EMCU_MAX_OPS];
  int64_t numel;
  emcu_optim o;
} emcu_mt_item;
int emcu_optim_multi(int dt, const emcu_mt_item *items, const int *item, const int64_t *start,
                     int64_t blocks, void *stream);

/* -- nn (cuda/nn.cu; core/kern_nn.h's entries, dense row-major float32
** (f64 0) or float64 (f64 1) operands) -- */
typedef struct emcu_pool {
  int64_t planes, H, W, oH, oW;
  int64_t k[2], s[2], p[2], d[2];
  int count_include_pad;
  int64_t divisor_override;
} emcu_pool;
int emcu_max_pool2d(int f64, const void *x, void *y, int64_t *indices, const emcu_pool *g,
                    void *stream);
/* grad_input (zeroed, planes x HW) += grad_out (planes x oHW) at indices,
** atomically (windows overlap) */
int emcu_max_pool2d_backward(int f64, const void *grad_out, const int64_t *indices,
                             void *grad_input, int64_t planes, int64_t HW, int64_t oHW,
                             void *stream);
/* bwd 0: y = the window means of x; bwd 1: x is grad_out, y grad_input
** (zeroed), atomically */
int emcu_avg_pool2d(int f64, const void *x, void *y, const emcu_pool *g, int bwd, void *stream);
/* *first (device, ~0 by the caller) = the lowest position of an id
** outside 1..num that is not the ignored one; *value its id */
int emcu_bad_id(const int64_t *ids, int64_t n, int64_t num, int has_ignore, int64_t ignore,
                unsigned long long *first, int64_t *value, void *stream);
/* layer norm over rows of D (w, b, gx, gw, gb may be NULL) */
int emcu_layer_norm(int f64, const void *x, const void *w, const void *b, void *y, void *mean,
                    void *rstd, int64_t M, int64_t D, double eps, void *stream);
int emcu_layer_norm_backward(int f64, const void *grad_out, const void *x, const void *mean,
                             const void *rstd, const void *w, void *gx, void *gw, void *gb,
                             int64_t M, int64_t D, void *stream);

/* conv2d's column matrix (cpu/conv.c's layout): col [K, nb * L], row
** k = (c, i, j) of channel c0 + c, column n * L + l of sample n0 + n */
typedef struct emcu_conv {
  int64_t N, C, H, W, O, Cg, kH, kW, oH, oW, groups, Og, K, L;
  int64_t s[2], p[2], d[2];
} emcu_conv;
/* to_col 1: col = the image's windows (0 outside); 0: image += col
** (atomically: windows overlap) */
int emcu_im2col(int f64, void *img, void *col, const emcu_conv *g, int64_t n0, int64_t nb, int64_t c0,
                int to_col, void *stream);
/* [N, O, L] rows n0.. <-> buf [O, nb * L]: to_buf gathers; else out = buf
** (+ bias[o]) */
int emcu_conv_reorder(int f64, void *nol, void *buf, const void *bias, const emcu_conv *g, int64_t n0,
                      int64_t nb, int to_buf, void *stream);

/* batch norm over x [N, C, S]: stats (2 C doubles of device scratch) get
** each channel's mean and inverse std; running_mean/var (or NULL) move in
** training; save_mean/save_invstd (x's dtype) get them too; then y */
int emcu_batch_norm(int f64, const void *x, const void *w, const void *b, void *running_mean,
                    void *running_var, void *y, void *save_mean, void *save_invstd, double *stats,
                    int64_t N, int64_t C, int64_t S, int training, double momentum, double eps,
                    void *stream);
int emcu_batch_norm_backward(int f64, const void *grad_out, const void *x, const void *w,
                             const void *mean, const void *invstd, void *gx, void *gw, void *gb,
                             int64_t N, int64_t C, int64_t S, int training, void *stream);

/* the losses (core/kern_nn.h): reduction 0 none, 1 mean, 2 sum */
typedef struct emcu_cls {
  int64_t N, C, S, ignore;
  int prob, logsm, reduction;
  double ls;
} emcu_cls;
/* class_loss: scratch 2 * N * S + 2 doubles on the device; go NULL:
** forward into out (and tw), else the gradient into out */
int emcu_class_loss(int f64, const void *x, const void *target, const void *w, const void *go,
                    void *out, void *tw, const emcu_cls *p, double *scratch, void *stream);
/* kind em_pointwise_loss's value; go NULL: the loss per element */
int emcu_pointwise_loss(int f64, int kind, int reduction, int64_t n, const void *x, const void *t,
                        const void *w, const void *pw, const void *go, void *out, void *stream);
/* *first (device, ~0) = the lowest position of x (n elements) outside
** [0, 1] (NaN too), *value its value */
int emcu_outside_unit(int f64, const void *x, int64_t n, unsigned long long *first, double *value,
                      void *stream);

/* The complex family (cuda/complex.cu): em_cx_op's values, in its order
** (core/kern_cplx.h; cuda/table.c asserts they agree). */
enum {
  EMCU_CX_ADD, EMCU_CX_SUB, EMCU_CX_MUL, EMCU_CX_DIV, EMCU_CX_POW, EMCU_CX_EQ, EMCU_CX_NE,
  EMCU_CX_NEG, EMCU_CX_ABS, EMCU_CX_ANGLE, EMCU_CX_CONJ, EMCU_CX_SQRT, EMCU_CX_RECIPROCAL,
  EMCU_CX_EXP, EMCU_CX_LOG, EMCU_CX_SIN, EMCU_CX_COS, EMCU_CX_TANH, EMCU_CX_SQUARE,
  EMCU_CX_ASIN, EMCU_CX_ACOS, EMCU_CX_ATAN, EMCU_CX_ASINH, EMCU_CX_ACOSH, EMCU_CX_ATANH,
  EMCU_CX_COUNT
};
/* operand 0 = op(operand 1[, operand 2]) of complex dtype dt (10 or 11);
** operand 0 is dt, its value dtype (ABS, ANGLE) or bool (EQ, NE); alpha
** multiplies operand 2 of ADD and SUB */
int emcu_cx_ew(int op, int dt, const emcu_geom *g, double alpha, void *stream);
/* n contiguous values of dtype dt (real or complex, float32/64 parts) at
** data, each part times fct */
int emcu_scale(int dt, void *data, int64_t n, double fct, void *stream);

/* The solvers' helpers (cuda/linalg.cu; cuda/solver.c). Matrices are
** column-major, batch element b at base + b * stride elements; dt is
** float32, float64, complex64 or complex128 (8, 9, 10, 11). */
/* n pivots between cuSOLVER's int64 and the ops' int32 (1-based both) */
int emcu_la_piv32to64(const int32_t *in, int64_t *out, int64_t n, void *stream);
int emcu_la_piv64to32(const int64_t *in, int32_t *out, int64_t n, void *stream);
/* the first cols columns of the rows x rows identity in each matrix
** (leading dimension lda, element stride sa) */
int emcu_la_eye(int dt, void *a, int64_t batch, int64_t rows, int64_t cols, int64_t lda,
                int64_t sa, void *stream);
/* the strict lower (zero_lower) or strict upper triangle of each n x n
** matrix (leading dimension lda, element stride sa) set to zero */
int emcu_la_zero_triangle(int dt, void *a, int64_t batch, int64_t n, int64_t lda, int64_t sa,
                          int zero_lower, void *stream);
/* c = v^H per element: c[q + r ldc] = conj(v[r + q ldv]) for r < rows,
** q < cols (v is rows x cols) */
int emcu_la_conj_transpose(int dt, const void *v, int64_t sv, int64_t ldv, int64_t rows,
                           int64_t cols, void *c, int64_t sc, int64_t ldc, int64_t batch,
                           void *stream);

#ifdef __cplusplus
}
#endif
#endif
