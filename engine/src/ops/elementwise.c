/*
** ops/elementwise.c -- the elementwise ops: the one dispatcher
** (em_elementwise) that types, shapes, allocates and records them, and
** runs the device's kernel (core/kern_ew.h).
**
** What holds:
** - Types follow PyTorch: the result type is em_result_type of the inputs,
**   then the op's rule (true division and transcendental functions turn
**   integers into the default float, comparisons/tests give bool, logical
**   ops read their inputs as bool). Inputs are converted to the compute
**   dtype before the kernel runs, so each kernel reads one dtype.
** - Integer division by zero is an error found before anything is written
**   (on devices with values).
** - An op/dtype pair outside its kernel's kind mask is a clean error,
**   raised the same on every device (meta included).
*/
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/kern_ew.h"
#include "core/kernels.h"
#include "ops/autocast.h"
#include "core/errmsg.h"
#include "autograd/autograd.h"
#include "ops/complex.h"

/* The kind masks of the kernel lists, by kernel (em_ew_kernel). */
#define EW_MASK(OP, M, OUTC, ...) EM_EW_##M,
static const unsigned char kernel_masks[EM_EW_NKERNELS] = {
    EM_EW_BINARY_KERNELS(EW_MASK, _) EM_EW_UNARY_KERNELS(EW_MASK, _)
    EM_EW_TERNARY_KERNELS(EW_MASK, _)};
#undef EW_MASK

static int kernel_supports(em_ew_kernel k, em_dtype dt) {
  em_dtype_kind kind = em_dtype_kindof(dt);
  /* complex: no bit, so no real kernel takes it (ops/complex.c runs those) */
  int bit = kind == EM_KIND_BOOL ? 1 : kind == EM_KIND_INT ? 2 : kind == EM_KIND_FLOAT ? 4 : 0;
  return (kernel_masks[k] & bit) != 0;
}

/* -- Zero scan for integer division ---------------------------------------- */

static em_status has_zero(const em_tensor *t, em_device dev, int *found) {
  em_iter it;
  const em_tensor *ops[1] = {t};
  *found = 0;
  em_status st = em_iter_build(&it, "div", 1, ops, t->ndim, t->sizes, false);
  if (st != EM_OK || it.numel == 0) return st;
  *found = em_kernels_for(dev)->ew->any_zero(&it, t->dtype);
  return EM_OK;
}

/* -- The op table ----------------------------------------------------------- */

typedef enum {
  R_SAME,    /* compute and result in result_type */
  R_FLOAT,   /* integers and bool become the default float */
  R_CMP,     /* compute in result_type, result bool */
  R_LOGICAL, /* inputs read as bool, result bool */
  R_TEST,    /* compute in the input's dtype, result bool */
  R_LERP     /* all tensor operands share one floating dtype */
} type_rule;

typedef struct {
  const char *name;
  int arity;
  type_rule rule;
  em_ew_kernel kernel;
} op_info;

static const op_info op_table[EM_OP_COUNT] = {
    [EM_OP_ADD] = {"add", 2, R_SAME, EM_K_add},
    [EM_OP_SUB] = {"sub", 2, R_SAME, EM_K_add},
    [EM_OP_MUL] = {"mul", 2, R_SAME, EM_K_mul},
    [EM_OP_DIV] = {"div", 2, R_FLOAT, EM_K_div},
    [EM_OP_REMAINDER] = {"remainder", 2, R_SAME, EM_K_remainder},
    [EM_OP_FMOD] = {"fmod", 2, R_SAME, EM_K_fmod},
    [EM_OP_POW] = {"pow", 2, R_SAME, EM_K_pow},
    [EM_OP_ATAN2] = {"atan2", 2, R_FLOAT, EM_K_atan2},
    [EM_OP_MAXIMUM] = {"maximum", 2, R_SAME, EM_K_maximum},
    [EM_OP_MINIMUM] = {"minimum", 2, R_SAME, EM_K_minimum},
    [EM_OP_EQ] = {"eq", 2, R_CMP, EM_K_eq},
    [EM_OP_NE] = {"ne", 2, R_CMP, EM_K_ne},
    [EM_OP_LT] = {"lt", 2, R_CMP, EM_K_lt},
    [EM_OP_LE] = {"le", 2, R_CMP, EM_K_le},
    [EM_OP_GT] = {"gt", 2, R_CMP, EM_K_gt},
    [EM_OP_GE] = {"ge", 2, R_CMP, EM_K_ge},
    [EM_OP_LOGICAL_AND] = {"logical_and", 2, R_LOGICAL, EM_K_land},
    [EM_OP_LOGICAL_OR] = {"logical_or", 2, R_LOGICAL, EM_K_lor},
    [EM_OP_LOGICAL_XOR] = {"logical_xor", 2, R_LOGICAL, EM_K_lxor},
    [EM_OP_BITWISE_AND] = {"bitwise_and", 2, R_SAME, EM_K_band},
    [EM_OP_BITWISE_OR] = {"bitwise_or", 2, R_SAME, EM_K_bor},
    [EM_OP_BITWISE_XOR] = {"bitwise_xor", 2, R_SAME, EM_K_bxor},
    [EM_OP_LSHIFT] = {"bitwise_left_shift", 2, R_SAME, EM_K_lshift},
    [EM_OP_RSHIFT] = {"bitwise_right_shift", 2, R_SAME, EM_K_rshift},
    [EM_OP_NEG] = {"neg", 1, R_SAME, EM_K_neg},
    [EM_OP_ABS] = {"abs", 1, R_SAME, EM_K_abs},
    [EM_OP_SIGN] = {"sign", 1, R_SAME, EM_K_sign},
    [EM_OP_SQRT] = {"sqrt", 1, R_FLOAT, EM_K_sqrt},
    [EM_OP_RSQRT] = {"rsqrt", 1, R_FLOAT, EM_K_rsqrt},
    [EM_OP_SQUARE] = {"square", 1, R_SAME, EM_K_square},
    [EM_OP_RECIPROCAL] = {"reciprocal", 1, R_FLOAT, EM_K_reciprocal},
    [EM_OP_EXP] = {"exp", 1, R_FLOAT, EM_K_exp},
    [EM_OP_EXP2] = {"exp2", 1, R_FLOAT, EM_K_exp2},
    [EM_OP_EXPM1] = {"expm1", 1, R_FLOAT, EM_K_expm1},
    [EM_OP_LOG] = {"log", 1, R_FLOAT, EM_K_log},
    [EM_OP_LOG2] = {"log2", 1, R_FLOAT, EM_K_log2},
    [EM_OP_LOG10] = {"log10", 1, R_FLOAT, EM_K_log10},
    [EM_OP_LOG1P] = {"log1p", 1, R_FLOAT, EM_K_log1p},
    [EM_OP_SIN] = {"sin", 1, R_FLOAT, EM_K_sin},
    [EM_OP_COS] = {"cos", 1, R_FLOAT, EM_K_cos},
    [EM_OP_TAN] = {"tan", 1, R_FLOAT, EM_K_tan},
    [EM_OP_ASIN] = {"asin", 1, R_FLOAT, EM_K_asin},
    [EM_OP_ACOS] = {"acos", 1, R_FLOAT, EM_K_acos},
    [EM_OP_ATAN] = {"atan", 1, R_FLOAT, EM_K_atan},
    [EM_OP_SINH] = {"sinh", 1, R_FLOAT, EM_K_sinh},
    [EM_OP_COSH] = {"cosh", 1, R_FLOAT, EM_K_cosh},
    [EM_OP_TANH] = {"tanh", 1, R_FLOAT, EM_K_tanh},
    [EM_OP_SIGMOID] = {"sigmoid", 1, R_FLOAT, EM_K_sigmoid},
    [EM_OP_RELU] = {"relu", 1, R_SAME, EM_K_relu},
    [EM_OP_GELU] = {"gelu", 1, R_SAME, EM_K_gelu},
    [EM_OP_SILU] = {"silu", 1, R_SAME, EM_K_silu},
    [EM_OP_SOFTPLUS] = {"softplus", 1, R_SAME, EM_K_softplus},
    [EM_OP_ERF] = {"erf", 1, R_FLOAT, EM_K_erf},
    [EM_OP_FLOOR] = {"floor", 1, R_SAME, EM_K_floor},
    [EM_OP_CEIL] = {"ceil", 1, R_SAME, EM_K_ceil},
    [EM_OP_ROUND] = {"round", 1, R_SAME, EM_K_round},
    [EM_OP_TRUNC] = {"trunc", 1, R_SAME, EM_K_trunc},
    [EM_OP_FRAC] = {"frac", 1, R_SAME, EM_K_frac},
    [EM_OP_NAN_TO_NUM] = {"nan_to_num", 1, R_SAME, EM_K_nan_to_num},
    [EM_OP_ISNAN] = {"isnan", 1, R_TEST, EM_K_isnan},
    [EM_OP_ISINF] = {"isinf", 1, R_TEST, EM_K_isinf},
    [EM_OP_ISFINITE] = {"isfinite", 1, R_TEST, EM_K_isfinite},
    [EM_OP_LOGICAL_NOT] = {"logical_not", 1, R_LOGICAL, EM_K_lnot},
    [EM_OP_BITWISE_NOT] = {"bitwise_not", 1, R_SAME, EM_K_bnot},
    [EM_OP_LERP] = {"lerp", 3, R_LERP, EM_K_lerp},
    [EM_OP_CLAMP] = {"clamp", 3, R_SAME, EM_K_clamp},
    [EM_OP_XLOGY] = {"xlogy", 2, R_FLOAT, EM_K_xlogy},
    [EM_OP_XLOG1PY] = {"xlog1py", 2, R_FLOAT, EM_K_xlog1py},
    [EM_OP_LOGADDEXP] = {"logaddexp", 2, R_FLOAT, EM_K_logaddexp},
    [EM_OP_LOGADDEXP2] = {"logaddexp2", 2, R_FLOAT, EM_K_logaddexp2},
    [EM_OP_HYPOT] = {"hypot", 2, R_SAME, EM_K_hypot},
    [EM_OP_COPYSIGN] = {"copysign", 2, R_FLOAT, EM_K_copysign},
    [EM_OP_NEXTAFTER] = {"nextafter", 2, R_SAME, EM_K_nextafter},
    [EM_OP_GCD] = {"gcd", 2, R_SAME, EM_K_gcd},
    [EM_OP_LCM] = {"lcm", 2, R_SAME, EM_K_lcm},
    [EM_OP_HEAVISIDE] = {"heaviside", 2, R_SAME, EM_K_heaviside},
    [EM_OP_ZETA] = {"zeta", 2, R_FLOAT, EM_K_zeta},
    [EM_OP_ERFC] = {"erfc", 1, R_FLOAT, EM_K_erfc},
    [EM_OP_ERFINV] = {"erfinv", 1, R_FLOAT, EM_K_erfinv},
    [EM_OP_LGAMMA] = {"lgamma", 1, R_FLOAT, EM_K_lgamma},
    [EM_OP_DIGAMMA] = {"digamma", 1, R_FLOAT, EM_K_digamma},
    [EM_OP_POLYGAMMA] = {"polygamma", 1, R_FLOAT, EM_K_polygamma},
    [EM_OP_I0] = {"i0", 1, R_FLOAT, EM_K_i0},
    [EM_OP_I0E] = {"i0e", 1, R_FLOAT, EM_K_i0e},
    [EM_OP_I1] = {"i1", 1, R_FLOAT, EM_K_i1},
    [EM_OP_I1E] = {"i1e", 1, R_FLOAT, EM_K_i1e},
    [EM_OP_NDTR] = {"ndtr", 1, R_FLOAT, EM_K_ndtr},
    [EM_OP_NDTRI] = {"ndtri", 1, R_FLOAT, EM_K_ndtri},
    [EM_OP_LOG_NDTR] = {"log_ndtr", 1, R_FLOAT, EM_K_log_ndtr},
    [EM_OP_SINC] = {"sinc", 1, R_FLOAT, EM_K_sinc},
    [EM_OP_ENTR] = {"entr", 1, R_FLOAT, EM_K_entr},
    [EM_OP_LOGIT] = {"logit", 1, R_FLOAT, EM_K_logit},
    [EM_OP_ASINH] = {"asinh", 1, R_FLOAT, EM_K_asinh},
    [EM_OP_ACOSH] = {"acosh", 1, R_FLOAT, EM_K_acosh},
    [EM_OP_ATANH] = {"atanh", 1, R_FLOAT, EM_K_atanh},
    [EM_OP_GAMMAINC] = {"special_gammainc", 2, R_FLOAT, EM_K_gammainc},
    [EM_OP_GAMMAINCC] = {"special_gammaincc", 2, R_FLOAT, EM_K_gammaincc},
    [EM_OP_ERFCX] = {"special_erfcx", 1, R_FLOAT, EM_K_erfcx},
    [EM_OP_BESSEL_J0] = {"special_bessel_j0", 1, R_FLOAT, EM_K_bessel_j0},
    [EM_OP_BESSEL_J1] = {"special_bessel_j1", 1, R_FLOAT, EM_K_bessel_j1},
    [EM_OP_BESSEL_Y0] = {"special_bessel_y0", 1, R_FLOAT, EM_K_bessel_y0},
    [EM_OP_BESSEL_Y1] = {"special_bessel_y1", 1, R_FLOAT, EM_K_bessel_y1},
    [EM_OP_BESSEL_K0] = {"special_modified_bessel_k0", 1, R_FLOAT, EM_K_bessel_k0},
    [EM_OP_BESSEL_K1] = {"special_modified_bessel_k1", 1, R_FLOAT, EM_K_bessel_k1},
    [EM_OP_BESSEL_K0E] = {"special_scaled_modified_bessel_k0", 1, R_FLOAT, EM_K_bessel_k0e},
    [EM_OP_BESSEL_K1E] = {"special_scaled_modified_bessel_k1", 1, R_FLOAT, EM_K_bessel_k1e},
    [EM_OP_AIRY_AI] = {"special_airy_ai", 1, R_FLOAT, EM_K_airy_ai},
    [EM_OP_SPHERICAL_J0] = {"special_spherical_bessel_j0", 1, R_FLOAT, EM_K_spherical_j0},
    [EM_OP_CHEB_T] = {"special_chebyshev_polynomial_t", 2, R_FLOAT, EM_K_cheb_t},
    [EM_OP_CHEB_U] = {"special_chebyshev_polynomial_u", 2, R_FLOAT, EM_K_cheb_u},
    [EM_OP_CHEB_V] = {"special_chebyshev_polynomial_v", 2, R_FLOAT, EM_K_cheb_v},
    [EM_OP_CHEB_W] = {"special_chebyshev_polynomial_w", 2, R_FLOAT, EM_K_cheb_w},
    [EM_OP_SCHEB_T] = {"special_shifted_chebyshev_polynomial_t", 2, R_FLOAT, EM_K_scheb_t},
    [EM_OP_SCHEB_U] = {"special_shifted_chebyshev_polynomial_u", 2, R_FLOAT, EM_K_scheb_u},
    [EM_OP_SCHEB_V] = {"special_shifted_chebyshev_polynomial_v", 2, R_FLOAT, EM_K_scheb_v},
    [EM_OP_SCHEB_W] = {"special_shifted_chebyshev_polynomial_w", 2, R_FLOAT, EM_K_scheb_w},
    [EM_OP_HERMITE_H] = {"special_hermite_polynomial_h", 2, R_FLOAT, EM_K_hermite_h},
    [EM_OP_HERMITE_HE] = {"special_hermite_polynomial_he", 2, R_FLOAT, EM_K_hermite_he},
    [EM_OP_LAGUERRE_L] = {"special_laguerre_polynomial_l", 2, R_FLOAT, EM_K_laguerre_l},
    [EM_OP_LEGENDRE_P] = {"special_legendre_polynomial_p", 2, R_FLOAT, EM_K_legendre_p},
};

const char *em_ew_op_name(em_ew_op op) {
  return (unsigned)op < EM_OP_COUNT ? op_table[op].name : "invalid op";
}
int em_ew_op_arity(em_ew_op op) {
  return (unsigned)op < EM_OP_COUNT ? op_table[op].arity : 0;
}

/* One constant, copied: building the struct field by field on every call
** (every operator call from Lua starts here) stalled on its own stores */
static const em_ew_opts ew_defaults = {
    .alpha = {EM_SCALAR_INT, 1, 1.0},
    .rounding = EM_ROUND_NONE,
    .beta = 1.0,
    .threshold = 20.0,
    .has_min = 1,
    .has_max = 1,
    .default_float = EM_FLOAT32,
};
em_ew_opts em_ew_defaults(void) { return ew_defaults; }

/* -- Helpers ----------------------------------------------------------------- */

/* A 0-d tensor of dtype dt holding v (converted with the cast rules). */
static em_status scalar_tensor(em_scalar v, em_dtype dt, em_device dev, em_tensor **out) {
  return em_full(0, NULL, v, dt, dev, out);
}

/* A new tensor of `shape` laid out as TensorIterator would lay it out for
** these inputs; contents uninitialised (every element is written next). */
static em_status alloc_like_inputs(int nin, const em_tensor *const *ins, int ndim,
                                   const int64_t *shape, em_dtype dt, em_device dev,
                                   em_tensor **out) {
  int64_t strides[EM_MAX_DIMS], numel;
  em_status st = em_numel_checked("elementwise", ndim, shape, &numel);
  if (st != EM_OK) return st;
  em_iter_output_strides(nin, ins, ndim, shape, strides);
  em_storage *s;
  st = em_storage_new((size_t)numel * em_dtype_size(dt), dev, &s);
  if (st != EM_OK) return st;
  st = em_tensor_alloc(s, 0, ndim, shape, strides, dt, out);
  em_storage_release(s);
  return st;
}

/* Gives an empty out tensor the result's shape with fresh storage (as
** PyTorch resizes an empty out=). Other views of its old storage keep it. */
static em_status resize_out(em_tensor *out, int nin, const em_tensor *const *ins,
                            int ndim, const int64_t *shape) {
  em_tensor *fresh;
  em_status st = alloc_like_inputs(nin, ins, ndim, shape, out->dtype,
                                   out->storage->device, &fresh);
  if (st != EM_OK) return st;
  em_storage *old = out->storage;
  out->storage = fresh->storage;
  em_storage_retain(out->storage);
  out->offset = 0;
  out->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    out->sizes[i] = fresh->sizes[i];
    out->strides[i] = fresh->strides[i];
  }
  em_storage_release(old);
  em_tensor_release(fresh);
  return EM_OK;
}

static int same_shape(const em_tensor *t, int ndim, const int64_t *shape) {
  if (t->ndim != ndim) return 0;
  for (int i = 0; i < ndim; i++)
    if (t->sizes[i] != shape[i]) return 0;
  return 1;
}

/* -- The small same-shape path ---------------------------------------------
** Per-call cost (docs/performance.md): for operands of one shape that are
** all contiguous, the iteration is one flat run of numel elements in every
** operand's memory order, which is what em_iter_build would find after
** ordering and coalescing. Below EW_FLAT_MAX elements em_iter_run_parallel
** runs serially anyway, so the kernel is called once, directly. */
enum { EW_FLAT_MAX = 16384 };

static int ew_same_shapes(int n, const em_tensor *const *ts) {
  for (int i = 1; i < n; i++)
    if (!same_shape(ts[i], ts[0]->ndim, ts[0]->sizes)) return 0;
  return 1;
}

/* ops[0] is the written tensor; every operand has ops[0]'s shape and is
** contiguous (so flat position p is the same element in each) */
static int ew_flat(int nops, const em_tensor *const *ops) {
  if (em_tensor_numel(ops[0]) >= EW_FLAT_MAX) return 0;
  for (int i = 0; i < nops; i++) {
    if (i > 0 && !same_shape(ops[i], ops[0]->ndim, ops[0]->sizes)) return 0;
    if (!em_tensor_is_contiguous(ops[i])) return 0;
  }
  return 1;
}

/* The iteration of ew_flat's case without em_iter_build: one dim of n
** elements, each operand stepping by its element size. */
static void ew_iter_flat(em_iter *it, int nops, const em_tensor *const *ops) {
  it->nops = nops;
  it->ndim = 1;
  it->numel = it->shape[0] = em_tensor_numel(ops[0]);
  for (int i = 0; i < nops; i++) {
    it->data[i] = em_tensor_data(ops[i]);
    it->strides[0][i] = (int64_t)em_dtype_size(ops[i]->dtype);
  }
}

/* -- em_elementwise ------------------------------------------------------- */

/* add/sub's scale of the second operand (sub negates it) in the kernel state */
static void ew_alpha(em_ew_op op, em_scalar alpha, em_kctx *k) {
  k->ai = alpha.kind == EM_SCALAR_FLOAT ? 0 : alpha.i;
  k->af = alpha.kind == EM_SCALAR_FLOAT ? alpha.f : (double)alpha.i;
  if (op == EM_OP_SUB) {
    k->ai = (int64_t)(0 - (uint64_t)k->ai);
    k->af = -k->af;
  }
}

/* The per-call case of `a + b` from a script: add/sub/mul/div of two small
** float tensors of one dtype and one shape, both contiguous with exactly
** the contiguous strides, no out, default options, nothing for autograd to
** record. Everything the general path decides is then known: the result
** type is the operands' dtype, there is no broadcasting, no cast, no
** overlap, no error to raise, and the result is allocated by the same
** routine and computed by the same kernel over the flat range (ew_flat's
** path). Skipping the general path's setup saves about 1,200 instructions
** of a 1-element add. Returns 0 (touching nothing) when the case does not
** apply; then the general path runs. */
static int ew_small_binary(em_ew_op op, int n, const em_operand *in,
                           const em_ew_opts *opts, em_tensor *out,
                           em_tensor **result, em_status *st) {
  if (out || !result || n != 2) return 0;
  if (op != EM_OP_ADD && op != EM_OP_SUB && op != EM_OP_MUL && op != EM_OP_DIV) return 0;
  em_scalar alpha = {EM_SCALAR_INT, 1, 1.0};
  if (opts) {
    if (opts->rounding != EM_ROUND_NONE) return 0;
    if (op == EM_OP_ADD || op == EM_OP_SUB) alpha = opts->alpha;
  }
  const em_tensor *a = in[0].tensor, *b = in[1].tensor;
  if (!a || !b || a->dtype != b->dtype) return 0;
  if (a->dtype != EM_FLOAT32 && a->dtype != EM_FLOAT64) return 0;
  if (alpha.kind == EM_SCALAR_BOOL) return 0;  /* the general path's error */
  if (a->storage->device.type != EM_CPU || b->storage->device.type != EM_CPU) return 0;
  em_ew_kernel kern = op_table[op].kernel;
  if (a->ndim != b->ndim) return 0;
  int64_t strides[EM_MAX_DIMS], numel = 1;
  em_contiguous_strides(a->ndim, a->sizes, strides);
  for (int i = 0; i < a->ndim; i++) {
    if (a->sizes[i] != b->sizes[i] || a->strides[i] != strides[i] ||
        b->strides[i] != strides[i])
      return 0;
    numel *= a->sizes[i];
    if (numel >= EW_FLAT_MAX) return 0;
  }
  const em_tensor *ins[2] = {a, b};
  int on = em_ag_pause();
  int any = on && em_ag_any(2, ins);  /* as em_elementwise: stale views catch up */
  em_ag_resume(on);
  if (any) return 0;
  /* the result: contiguous, as em_iter_output_strides makes it for operands
  ** with exactly the contiguous strides (test_math checks both agree) */
  em_tensor *target = NULL;
  em_storage *s;
  *st = em_storage_new((size_t)numel * em_dtype_size(a->dtype), a->storage->device, &s);
  if (*st == EM_OK) {
    *st = em_tensor_alloc(s, 0, a->ndim, a->sizes, strides, a->dtype, &target);
    em_storage_release(s);
  }
  if (*st == EM_OK) {
    em_kctx k;
    memset(&k, 0, sizeof k);
    if (op == EM_OP_ADD || op == EM_OP_SUB) ew_alpha(op, alpha, &k);
    const em_tensor *ops[3] = {target, a, b};
    em_iter it;
    ew_iter_flat(&it, 3, ops);
    em_kernels_for(a->storage->device)->ew->run(kern, a->dtype, &it, &k);
    *result = target;
  }
  return 1;
}


static em_status elementwise_nograd(em_ew_op op, int n, const em_operand *inputs,
                                    const em_ew_opts *opts, em_tensor *out,
                                    em_tensor **result) {
  if ((unsigned)op >= EM_OP_COUNT)
    return em_fail(EM_E_VALUE, "elementwise: invalid op %d", (int)op);
  const op_info *oi = &op_table[op];
  em_ew_opts o = opts ? *opts : em_ew_defaults();
  const char *name = o.name ? o.name : oi->name;
  if (n != oi->arity)
    return em_fail(EM_E_VALUE, "%s: expected %d operands, got %d", name, oi->arity, n);
  if (em_dtype_kindof(o.default_float) != EM_KIND_FLOAT) o.default_float = EM_FLOAT32;

  /* present operands: clamp may lack a bound */
  int present[3] = {1, n > 1, n > 2};
  if (op == EM_OP_CLAMP) {
    present[1] = o.has_min;
    present[2] = o.has_max;
    if (!o.has_min && !o.has_max)
      return em_fail(EM_E_VALUE, "%s: at least one of 'min' or 'max' must not be nil", name);
  }
  em_operand ops[3];
  const em_tensor *tens[4];
  int nops = 0, ntens = 0;
  for (int i = 0; i < n; i++) {
    if (!present[i]) continue;
    ops[nops++] = inputs[i];
    if (inputs[i].tensor) tens[ntens++] = inputs[i].tensor;
  }
  if (ntens == 0)
    return em_fail(EM_E_VALUE, "%s: expected at least one tensor operand", name);

  /* devices: all tensors (and out) on one device, the one with the kernels */
  em_device dev = tens[0]->storage->device;
  for (int i = 0; i <= ntens; i++) {
    const em_tensor *t = i < ntens ? tens[i] : out;
    em_status dst = t ? em_same_device_check(name, dev, t->storage->device) : EM_OK;
    if (dst != EM_OK) return dst;
  }
  const em_kernels *kt;
  em_status kst = em_kernels_check(name, dev, &kt);
  if (kst != EM_OK) return kst;

  if (op == EM_OP_SUB) { /* PyTorch's sub_check: any bool operand (complex too) */
    int nbool = 0;
    for (int i = 0; i < nops; i++)
      nbool += ops[i].tensor ? ops[i].tensor->dtype == EM_BOOL
                             : ops[i].scalar.kind == EM_SCALAR_BOOL;
    if (nbool == 2)
      return em_fail(EM_E_TYPE, "%s: subtraction, the `-` operator, with two bool tensors "
                     "is not supported; use logical_xor() instead", name);
    if (nbool)
      return em_fail(EM_E_TYPE, "%s: subtraction, the `-` operator, with a bool tensor is "
                     "not supported; to invert a mask use logical_not() instead", name);
  }
  /* -- types */
  em_dtype rt = em_result_type(nops, ops, o.default_float);
  if (op == EM_OP_CLAMP && rt == EM_BOOL && o.has_min != o.has_max &&
      inputs[o.has_min ? 1 : 2].tensor) {
    /* PyTorch 1.13 clamps bool by one bool tensor bound (clamp_min/max's
    ** tensor kernels are maximum/minimum, which take bool); a bool number
    ** bound or two bounds stay refused (clamp's kernel has no bool) */
    em_operand mm[2] = {inputs[0], inputs[o.has_min ? 1 : 2]};
    em_ew_opts mo = em_ew_defaults();
    mo.name = name;
    mo.default_float = o.default_float;
    return elementwise_nograd(o.has_min ? EM_OP_MAXIMUM : EM_OP_MINIMUM, 2, mm, &mo, out,
                              result);
  }
  if (op == EM_OP_POW && n == 2 && inputs[0].tensor && !inputs[1].tensor &&
      (rt == EM_FLOAT32 || rt == EM_FLOAT64 || rt == EM_BFLOAT16)) {
    /* PyTorch's pow_tensor_scalar_kernel: exponents 0.5, -0.5, -1 are
    ** sqrt, rsqrt and reciprocal for these dtypes (so (-inf) ^ 0.5 is NaN
    ** and (-0) ^ -0.5 is -inf, where C's pow gives inf) */
    em_scalar e = inputs[1].scalar;
    double v = e.kind == EM_SCALAR_FLOAT ? e.f : e.kind == EM_SCALAR_INT ? (double)e.i : 2.0;
    em_ew_op u = v == 0.5 ? EM_OP_SQRT : v == -0.5 ? EM_OP_RSQRT : v == -1 ? EM_OP_RECIPROCAL
                                                                          : EM_OP_COUNT;
    if (u != EM_OP_COUNT && em_dtype_kindof(inputs[0].tensor->dtype) != EM_KIND_INT) {
      em_ew_opts uo = em_ew_defaults();
      uo.name = name;
      uo.default_float = o.default_float;
      return elementwise_nograd(u, 1, inputs, &uo, out, result);
    }
  }
  if (op == EM_OP_DIV && o.rounding == EM_ROUND_TRUNC && (rt == EM_FLOAT16 || rt == EM_BFLOAT16)) {
    /* PyTorch truncates the quotient rounded to the half type (the float
    ** quotient truncated first can round to another integer): a true
    ** division into the half type, then trunc */
    em_ew_opts q = o;
    q.rounding = EM_ROUND_NONE;
    em_tensor *quot = NULL;
    em_status st = elementwise_nograd(EM_OP_DIV, n, inputs, &q, NULL, &quot);
    if (st != EM_OK) return st;
    em_operand t1[1] = {{quot, {EM_SCALAR_INT, 0, 0}}};
    em_ew_opts to = em_ew_defaults();
    to.name = name;
    st = elementwise_nograd(EM_OP_TRUNC, 1, t1, &to, out, result);
    em_tensor_release(quot);
    return st;
  }
  if (em_dtype_kindof(rt) == EM_KIND_COMPLEX &&
      (op == EM_OP_LOGICAL_NOT || op == EM_OP_LOGICAL_AND || op == EM_OP_LOGICAL_OR ||
       op == EM_OP_LOGICAL_XOR)) {
    /* a complex operand is true where it is nonzero, as PyTorch's */
    em_operand b[3];
    em_tensor *owned[3] = {NULL, NULL, NULL};
    em_status st = EM_OK;
    for (int i = 0; i < n && st == EM_OK; i++) {
      b[i] = inputs[i];
      if (inputs[i].tensor && em_dtype_kindof(inputs[i].tensor->dtype) == EM_KIND_COMPLEX) {
        em_operand ne[2] = {inputs[i], {0}};
        ne[1].scalar.kind = EM_SCALAR_INT;
        st = elementwise_nograd(EM_OP_NE, 2, ne, NULL, NULL, &owned[i]);
        b[i].tensor = owned[i];
      }
    }
    if (st == EM_OK) st = elementwise_nograd(op, n, b, opts, out, result);
    for (int i = 0; i < 3; i++) em_tensor_release(owned[i]);
    return st;
  }
  if (em_dtype_kindof(rt) == EM_KIND_COMPLEX)
    return em_complex_ew(op, name, nops, ops, rt, o.alpha, o.rounding != EM_ROUND_NONE, out,
                         result);
  em_dtype compute, outdt;
  int kernel = oi->kernel;
  if (op == EM_OP_DIV && o.rounding != EM_ROUND_NONE)
    kernel = o.rounding == EM_ROUND_TRUNC ? EM_K_divtrunc : EM_K_divfloor;
  switch (oi->rule) {
    case R_FLOAT:
      compute = (op == EM_OP_DIV && o.rounding != EM_ROUND_NONE) ? rt
                : em_dtype_kindof(rt) == EM_KIND_FLOAT ? rt : o.default_float;
      outdt = compute;
      break;
    case R_CMP: compute = rt; outdt = EM_BOOL; break;
    case R_LOGICAL: compute = EM_BOOL; outdt = EM_BOOL; break;
    case R_TEST: compute = rt; outdt = EM_BOOL; break;
    case R_LERP: {
      em_dtype d0 = ops[0].tensor ? ops[0].tensor->dtype : rt;
      static const char *const what[3] = {"self", "end", "weight"};
      for (int i = 1; i < 3; i++)
        if (ops[i].tensor && ops[i].tensor->dtype != d0)
          return em_fail(EM_E_TYPE, "%s: expected dtype %s for `%s` but got dtype %s",
                         name, em_dtype_name(d0), what[i],
                         em_dtype_name(ops[i].tensor->dtype));
      compute = outdt = d0;
      break;
    }
    default: compute = outdt = rt; break;
  }
  if ((op == EM_OP_LOGADDEXP || op == EM_OP_LOGADDEXP2 || op == EM_OP_GAMMAINC ||
       op == EM_OP_GAMMAINCC) && em_dtype_kindof(rt) != EM_KIND_FLOAT)
    /* PyTorch has no integer or bool kernels for these (its "logaddexp_cpu"
    ** not implemented for 'Long'): integer operands are refused, not
    ** promoted to the default float; one float operand promotes the rest */
    return em_fail(EM_E_TYPE, EM_MSG_DTYPE_NOT_IMPLEMENTED, name, em_dtype_name(rt));
  if (op == EM_OP_SQUARE && compute == EM_BOOL) compute = outdt = EM_INT64;
  if (op == EM_OP_NEG && compute == EM_BOOL)
    return em_fail(EM_E_TYPE, "%s: negation, the `-` operator, on a bool tensor is not "
                   "supported; to invert a mask use logical_not() instead", name);
  if (op == EM_OP_ROUND && o.decimals != 0 && em_dtype_kindof(compute) != EM_KIND_FLOAT)
    return em_fail(EM_E_TYPE, "%s: decimals are not supported for %s tensors", name,
                   em_dtype_name(compute));
  if (!kernel_supports(kernel, compute))
    return em_fail(EM_E_TYPE, EM_MSG_DTYPE_NOT_IMPLEMENTED, name, em_dtype_name(compute));

  /* -- kernel state */
  em_kctx k;
  memset(&k, 0, sizeof k);
  if (op == EM_OP_ADD || op == EM_OP_SUB) {
    if (o.alpha.kind == EM_SCALAR_FLOAT && em_dtype_kindof(compute) != EM_KIND_FLOAT)
      return em_fail(EM_E_TYPE, "%s: for integral input tensors, argument alpha must not "
                     "be a floating point number", name);
    if (o.alpha.kind == EM_SCALAR_BOOL && compute != EM_BOOL)
      return em_fail(EM_E_TYPE, "%s: boolean alpha only supported for boolean results", name);
    ew_alpha(op, o.alpha, &k);
  }
  if (op == EM_OP_SOFTPLUS) { k.p0 = o.beta; k.p1 = o.threshold; }
  if (op == EM_OP_GELU) k.i0 = o.gelu_tanh != 0;
  if (op == EM_OP_ROUND) k.i0 = o.decimals;
  if (op == EM_OP_NAN_TO_NUM) {
    k.p0 = o.has_nan ? o.nan : 0.0;
    k.p1 = o.has_posinf ? o.posinf : em_dtype_float_max(compute);
    k.p2 = o.has_neginf ? o.neginf : -em_dtype_float_max(compute);
  }
  if (op == EM_OP_CLAMP) k.flags = (o.has_min ? 1 : 0) | (o.has_max ? 2 : 0);
  if (op == EM_OP_POLYGAMMA) {
    if (o.polygamma_n < 0)
      return em_fail(EM_E_VALUE, "%s: polygamma(n, x) does not support negative n (got %lld)",
                     name, (long long)o.polygamma_n);
    k.i0 = o.polygamma_n;
  }
  if (op == EM_OP_LOGIT && o.has_eps) {
    k.flags = 1;
    k.p0 = o.eps;
  }
  if (op == EM_OP_POW && em_dtype_kindof(compute) != EM_KIND_FLOAT && !ops[1].tensor &&
      ((ops[1].scalar.kind == EM_SCALAR_INT && ops[1].scalar.i < 0)))
    return em_fail(EM_E_VALUE, "%s: integers to negative integer powers are not allowed", name);

  /* -- shape (tensors of one shape need no broadcasting rule: the common
  **    case of a per-call op, so the general routine is skipped) */
  int ndim;
  int64_t shape[EM_MAX_DIMS];
  em_status st = EM_OK;
  if (ew_same_shapes(ntens, tens)) {
    ndim = tens[0]->ndim;
    for (int i = 0; i < ndim; i++) shape[i] = tens[0]->sizes[i];
  } else {
    st = em_broadcast_shapes(name, ntens, tens, &ndim, shape);
    if (st != EM_OK) return st;
  }

  /* -- out checks */
  int inplace = out && inputs[0].tensor == out;
  if (out) {
    if (!em_can_cast(outdt, out->dtype))
      return em_fail(EM_E_TYPE, "%s: result type %s can't be cast to the desired output "
                     "type %s", name, em_dtype_pt_name(outdt), em_dtype_pt_name(out->dtype));
    if (!same_shape(out, ndim, shape)) {
      char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
      if (inplace || em_tensor_numel(out) != 0)
        return em_fail(EM_E_VALUE, "%s: output with shape %s doesn't match the broadcast "
                       "shape %s%s", name, em_fmt_shape(b1, sizeof b1, out->ndim, out->sizes),
                       em_fmt_shape(b2, sizeof b2, ndim, shape),
                       inplace ? "" : " (only an empty out tensor is resized)");
      st = resize_out(out, ntens, tens, ndim, shape);
      if (st != EM_OK) return st;
    }
    st = em_check_writable(name, out);
    if (st != EM_OK) return st;
  }

  /* -- operands in the compute dtype; snapshots of inputs that partly
  **    overlap out (same layout is fine: each element is read before it is
  **    written, by the same step) */
  em_tensor *owned[3] = {NULL, NULL, NULL};
  const em_tensor *in[3];
  em_tensor *target = NULL;
  for (int i = 0; i < nops && st == EM_OK; i++) {
    const em_tensor *t = ops[i].tensor;
    if (!t) {
      st = scalar_tensor(ops[i].scalar, compute, dev, &owned[i]);
    } else if (t->dtype != compute) {
      st = em_to(t, compute, dev, 1, &owned[i]);
    } else if (out && em_may_overlap(out, t) && !em_same_layout(out, t)) {
      st = em_clone(t, &owned[i]);
    }
    in[i] = owned[i] ? owned[i] : t;
  }
  /* clamp without one bound: the kernel ignores that operand; pass the
  ** other bound (a scalar bound keeps the loop on its hoisted path) */
  const em_tensor *kin[3];
  if (op == EM_OP_CLAMP) {
    int j = 0;
    kin[0] = in[j++];
    kin[1] = o.has_min ? in[j++] : NULL;
    kin[2] = o.has_max ? in[j++] : kin[1];
    if (!kin[1]) kin[1] = kin[2];
  } else {
    for (int i = 0; i < nops; i++) kin[i] = in[i];
  }
  int nk = oi->arity;

  /* integer division by zero is an error, as in PyTorch (ZeroDivisionError);
  ** it is found before anything is written */
  int64_t result_numel = 1;
  for (int i = 0; st == EM_OK && i < ndim; i++) result_numel *= shape[i];
  if (st == EM_OK && result_numel > 0 && em_dtype_kindof(compute) != EM_KIND_FLOAT &&
      (op == EM_OP_REMAINDER || op == EM_OP_FMOD ||
       (op == EM_OP_DIV && o.rounding != EM_ROUND_NONE))) {
    /* (an empty result divides nothing: no error, as PyTorch) */
    int zero = 0;
    st = has_zero(kin[1], dev, &zero);
    if (st == EM_OK && zero)
      st = em_fail(EM_E_VALUE, "%s: integer division by zero (ZeroDivisionError)", name);
  }

  /* -- target: out itself when it has the result dtype, else a temporary */
  if (st == EM_OK) {
    if (out && out->dtype == outdt) {
      target = out;
      em_tensor_retain(target);
    } else {
      st = alloc_like_inputs(ntens, tens, ndim, shape, outdt, dev, &target);
    }
  }
  if (st == EM_OK) {
    const em_tensor *itops[4] = {target, kin[0], nk > 1 ? kin[1] : NULL,
                                 nk > 2 ? kin[2] : NULL};
    em_iter it;
    if (ew_flat(nk + 1, itops)) ew_iter_flat(&it, nk + 1, itops);
    else st = em_iter_build(&it, name, nk + 1, itops, ndim, shape, false);
    if (st == EM_OK) kt->ew->run(kernel, compute, &it, &k);
    if (st == EM_OK && target == out) em_storage_bump_version(out->storage);
  }
  if (st == EM_OK && out && target != out) st = em_copy_(out, target);
  for (int i = 0; i < 3; i++) em_tensor_release(owned[i]);
  if (st != EM_OK) {
    em_tensor_release(target);
    return st;
  }
  if (out) {
    em_tensor_release(target);
    if (result) {
      em_tensor_retain(out);
      *result = out;
    }
  } else {
    *result = target;
  }
  return EM_OK;
}

/* The public entry: the kernel above with grad mode paused, then the node
** for backward (autograd.h). In-place ops check that the written tensor may
** be written (not a leaf that requires grad) and keep the old value when the
** formula needs it; out= is not differentiable, as in PyTorch. */
/* autocast's pointwise fp32 list (cuda's; autocast.h) */
static int ac_pointwise(em_ew_op op) {
  switch (op) {
    case EM_OP_EXP: case EM_OP_EXPM1: case EM_OP_LOG: case EM_OP_LOG2: case EM_OP_LOG10:
    case EM_OP_LOG1P: case EM_OP_RECIPROCAL: case EM_OP_RSQRT: case EM_OP_SINH:
    case EM_OP_COSH: case EM_OP_TAN: case EM_OP_ASIN: case EM_OP_ACOS: case EM_OP_ERFINV:
    case EM_OP_POW: case EM_OP_SOFTPLUS:
      return 1;
    default:
      return 0;
  }
}

/* em_elementwise over inputs with their tensors replaced by ts (autocast's
** casts), into a new result */
static em_status ew_recast(em_ew_op op, int n, const em_operand *inputs, const em_tensor **ts,
                          const em_ew_opts *opts, em_tensor **result) {
  em_operand cast[3];
  for (int i = 0; i < n; i++) cast[i] = inputs[i], cast[i].tensor = ts[i];
  return em_elementwise(op, n, cast, opts, NULL, result);
}


/* PyTorch's node for a clamp: clamp_min/clamp_max (ClampMin/MaxBackward0,
** 1 with a tensor bound) or clamp (ClampBackward1, 0 with a tensor bound). */
static const char *clamp_node_name(const em_ew_opts *o, const em_operand *in, int n) {
  int tensor_bound = (n > 1 && o->has_min && in[1].tensor) ||
                     (n > 2 && o->has_max && in[2].tensor);
  if (o->name && !strncmp(o->name, "clamp_min", 9))
    return tensor_bound ? "ClampMinBackward1" : "ClampMinBackward0";
  if (o->name && !strncmp(o->name, "clamp_max", 9))
    return tensor_bound ? "ClampMaxBackward1" : "ClampMaxBackward0";
  return tensor_bound ? "ClampBackward0" : "ClampBackward1";
}

em_status em_elementwise(em_ew_op op, int n, const em_operand *inputs,
                         const em_ew_opts *opts, em_tensor *out,
                         em_tensor **result) {
  /* autocast: a new result only (out= and in-place calls keep their dtype,
  ** as PyTorch's autocast leaves them alone) */
  if (em_ac_any && !out && inputs && n >= 1 && n <= 3 && ac_pointwise(op)) {
    const em_tensor *ac[3] = {NULL, NULL, NULL};
    for (int i = 0; i < n; i++) ac[i] = inputs[i].tensor;
    EM_AUTOCAST(EM_AC_POINTWISE, n, ac, ew_recast(op, n, inputs, ac, opts, result));
  }
  em_status fast_st;
  if (inputs && ew_small_binary(op, n, inputs, opts, out, result, &fast_st)) return fast_st;
  if ((unsigned)op >= EM_OP_COUNT || !inputs || n != op_table[op].arity || n > 3)
    return elementwise_nograd(op, n, inputs, opts, out, result);
  em_ew_opts o = opts ? *opts : em_ew_defaults();
  const char *name = o.name ? o.name : op_table[op].name;
  const em_tensor *ins[3] = {NULL, NULL, NULL};
  for (int i = 0; i < n; i++) ins[i] = inputs[i].tensor;
  if (op == EM_OP_CLAMP && n == 3) {  /* an absent bound is no operand */
    if (!o.has_min) ins[1] = NULL;
    if (!o.has_max) ins[2] = NULL;
  }
  if (out && out != ins[0]) { /* out=, not in place: asked before the pause */
    em_status chk = em_check_out(name, out);
    if (chk != EM_OK) return chk;
  }
  int on = em_ag_pause();
  /* the Bessel and Airy functions and the orthogonal polynomials are not
  ** differentiable: their results do not require grad (PyTorch's) */
  int nodiff = op >= EM_OP_BESSEL_J0 && op <= EM_OP_LEGENDRE_P;
  int any = on && !nodiff && em_ag_any(n, ins);
  int inplace = out && inputs[0].tensor == out;
  int save_in = 0, save_out = 0;
  em_ag_ew_saves(op, &save_in, &save_out);
  em_status st = EM_OK;
  em_tensor *pre = NULL, *pre_other[3] = {NULL, NULL, NULL};
  if (on && inplace) st = em_ag_check_inplace(name, out);
  if (st == EM_OK && any && out && !inplace)
    st = em_fail(EM_E_VALUE, EM_MSG_OUT_NOT_DIFFERENTIABLE, name);
  if (st == EM_OK && any && inplace && (save_in & 1)) {
    em_ag_resume(on);  /* recorded: the old value keeps its history */
    st = em_clone(out, &pre);
    em_ag_pause();
  }
  /* another operand over the written storage (y:mul_(y[1]), y:mul_(y:t())):
  ** the formula needs its value before the write, so it is saved as a
  ** clone (PyTorch refuses such calls; the forward here reads a snapshot) */
  for (int i = 1; st == EM_OK && any && inplace && i < n; i++)
    if ((save_in & (1 << i)) && ins[i] && ins[i] != out && ins[i]->storage == out->storage) {
      em_ag_resume(on);
      st = em_clone(ins[i], &pre_other[i]);
      em_ag_pause();
    }
  if (st == EM_OK) st = elementwise_nograd(op, n, inputs, opts, out, result);
  em_ag_resume(on);
  if (st == EM_OK && any) {
    em_ag_params p;
    memset(&p, 0, sizeof p);
    p.name = em_ag_ew_name(op, n > 1 && inputs[1].tensor != NULL);
    if (op == EM_OP_CLAMP) p.name = clamp_node_name(&o, inputs, n);
    if (op == EM_OP_LERP && n > 2 && inputs[2].tensor) p.name = "LerpBackward1";
    p.op = op;
    p.ew = o;
    for (int i = 0; i < n; i++) p.sc[i] = inputs[i].scalar;
    p.save_in = save_in;
    p.save_out = save_out;
    p.pre[0] = pre;
    for (int i = 1; i < n; i++) p.pre[i] = pre_other[i];
    em_tensor *res = out ? out : *result;
    st = em_ag_record(EM_AG_EW, n, ins, 1, &res, &p);
    if (st != EM_OK && !out) {
      em_tensor_release(*result);
      *result = NULL;
    }
    if (st != EM_OK && out && result) {
      em_tensor_release(*result);
      *result = NULL;
    }
  }
  em_tensor_release(pre);
  for (int i = 1; i < 3; i++) em_tensor_release(pre_other[i]);
  return st;
}

em_status em_binary(em_ew_op op, const em_tensor *a, const em_tensor *b,
                    em_tensor **result) {
  em_operand ops[2] = {{a, {EM_SCALAR_INT, 0, 0}}, {b, {EM_SCALAR_INT, 0, 0}}};
  return em_elementwise(op, 2, ops, NULL, NULL, result);
}

em_status em_unary(em_ew_op op, const em_tensor *x, em_tensor **result) {
  em_operand ops[1] = {{x, {EM_SCALAR_INT, 0, 0}}};
  return em_elementwise(op, 1, ops, NULL, NULL, result);
}

