/*
** meta/meta.c -- the meta device (PyTorch's): tensors with sizes, strides
** and dtype and no data. Its kernel table is the CPU's in shape: every
** family, every entry; each entry computes no values. The public ops above
** have already checked the arguments, typed and shaped the result, so a
** meta tensor's metadata is exactly what the CPU would produce. Entries
** that would read values refuse with EM_MSG_META_NO_DATA; those whose
** result's shape depends on values, with EM_MSG_META_DATA_DEPENDENT.
** This is the template for a new device (docs/architecture.md).
*/
#include "core/kernels.h"
#include "core/kern_copy.h"
#include "core/kern_ew.h"
#include "core/kern_index.h"
#include "core/kern_linalg.h"
#include "core/kern_random.h"
#include "core/kern_creation.h"
#include "core/kern_nn.h"
#include "core/kern_optim.h"
#include "core/kern_reduce.h"
#include "core/kern_sort.h"
#include "core/kern_cplx.h"
#include "core/errmsg.h"

/* -- Memory: a storage of nbytes that holds none -------------------------- */

static em_status meta_alloc(em_device dev, size_t nbytes, void **data) {
  *data = NULL;
  return EM_OK;
}
static void meta_free(em_device dev, void *data, size_t nbytes) {}

/* -- copy ------------------------------------------------------------------ */

static void meta_copy(const em_iter *it, em_dtype dst, em_dtype src) {}
static void meta_fill(const em_iter *it, em_dtype dt, const void *value) {}
/* Into meta: nothing to keep. Out of meta: there are no values. */
static em_status meta_transfer(em_tensor *dst, const em_tensor *src) {
  if (em_tensor_device(dst).type == EM_META) return EM_OK;
  return em_fail(EM_E_RUNTIME, EM_MSG_META_NO_DATA, "copy_");
}
static em_status meta_read(const char *op, const void *p, size_t elsize, void *out) {
  return em_fail(EM_E_RUNTIME, EM_MSG_META_NO_DATA, op);
}
static em_status meta_write(const char *op, void *p, size_t elsize, const void *in) {
  return em_fail(EM_E_RUNTIME, EM_MSG_META_NO_DATA, op);
}

const em_copy_kernels em_meta_copy_kernels = {
    .copy = meta_copy,
    .fill = meta_fill,
    .transfer = meta_transfer,
    .read = meta_read,
    .write = meta_write,
};

/* -- ew -------------------------------------------------------------------- */

static void meta_ew_run(em_ew_kernel kernel, em_dtype dt, const em_iter *it, const em_kctx *k) {}
/* integer division by zero cannot be seen without values (PyTorch's meta
** kernels do not check it either) */
static int meta_any_zero(const em_iter *it, em_dtype dt) {
  return 0;
}

const em_ew_kernels em_meta_ew_kernels = {
    .run = meta_ew_run,
    .any_zero = meta_any_zero,
};

/* -- index ----------------------------------------------------------------------
** Gathers, scatters and the masked writes give shapes only; the bounds
** checks of index values cannot run (PyTorch's meta kernels skip them too)
** and report nothing; the counts that size a result (nonzero,
** masked_select, repeat_interleave, a bool mask in t[key]) refuse. */

static void meta_normalize(const em_iter *it, em_dtype idx_dt, int64_t size,
                           em_index_bad *bad) {
  bad->found = 0;
}
static void meta_gather(const em_iter *it, em_dtype dt, int64_t stride) {}
static void meta_select_blocks(em_tensor *out, const em_tensor *src, const em_tensor *idx,
                               int axis) {}
static void meta_scatter(const em_iter *it, em_dtype dt, em_scatter_mode r,
                         const em_scatter_params *p) {}
static void meta_iter_dt(const em_iter *it, em_dtype dt) {}
static void meta_masked_fill(const em_iter *it, em_dtype dt, const void *value) {}
static em_status meta_mask_count(const char *op, const em_tensor *mask, em_tensor *runs,
                                 int64_t *count) {
  return em_fail(EM_E_RUNTIME, EM_MSG_META_DATA_DEPENDENT, op);
}
static void meta_masked_compact(em_tensor *out, const em_tensor *src, const em_tensor *mask,
                                const em_tensor *runs, int nouter, const int64_t *sizes,
                                const int64_t *strides) {}
/* masked_scatter_'s count only feeds its source-length check: answered 0 */
static em_status meta_mask_prefix(const char *op, em_tensor *prefix, const em_tensor *mask,
                                  int sizes_result, int64_t *count) {
  *count = 0;
  if (sizes_result) return em_fail(EM_E_RUNTIME, EM_MSG_META_DATA_DEPENDENT, op);
  return EM_OK;
}
static void meta_masked_select(const em_iter *it, em_dtype dt, em_tensor *out) {}
static void meta_masked_scatter(const em_iter *it, em_dtype dt, const em_tensor *src) {}
static void meta_nonzero(em_tensor *out, const em_tensor *mask) {}
static em_status meta_repeat_total(const char *op, const em_tensor *repeats, int64_t n,
                                   int64_t *total, em_index_bad *bad) {
  return em_fail(EM_E_RUNTIME, EM_MSG_META_DATA_DEPENDENT, op);
}
static void meta_repeat_positions(em_tensor *out, const em_tensor *repeats, int64_t n) {}
static void meta_key_offsets(const em_iter *it, em_dtype idx_dt, int64_t size,
                             int64_t stride, int add, em_index_bad *bad) {
  bad->found = 0;
}
static void meta_key_mask_offsets(em_tensor *offsets, const em_tensor *mask, int k,
                                  const int64_t *sizes, const int64_t *strides,
                                  const em_tensor *runs) {}
static void meta_key_gather(const em_tensor *view, em_tensor *out, const em_tensor *offsets,
                            const em_key_layout *l) {}
static void meta_key_put(em_tensor *view, const em_tensor *value, const em_tensor *offsets,
                         const em_key_layout *l) {}

const em_index_kernels em_meta_index_kernels = {
    .normalize = meta_normalize,
    .gather = meta_gather,
    .select_blocks = meta_select_blocks,
    .scatter = meta_scatter,
    .scatter_mean_div = meta_iter_dt,
    .masked_fill = meta_masked_fill,
    .mask_count = meta_mask_count,
    .masked_compact = meta_masked_compact,
    .mask_prefix = meta_mask_prefix,
    .masked_select = meta_masked_select,
    .masked_scatter = meta_masked_scatter,
    .nonzero = meta_nonzero,
    .where = meta_iter_dt,
    .repeat_total = meta_repeat_total,
    .repeat_positions = meta_repeat_positions,
    .key_offsets = meta_key_offsets,
    .key_mask_offsets = meta_key_mask_offsets,
    .key_gather = meta_key_gather,
    .key_put = meta_key_put,
    .key_accumulate = meta_iter_dt,
};

/* -- linalg --------------------------------------------------------------- */

static void meta_gemm(const em_iter *it, em_dtype dt, const em_gemm *g) {}

/* no values: info (and rank) read 0, as for a success */
static em_status meta_lapack(const em_lapack_job *j) {
  if (j->info) memset(j->info, 0, (size_t)j->batch * sizeof *j->info);
  if (j->rank) memset(j->rank, 0, (size_t)j->batch * sizeof *j->rank);
  return EM_OK;
}

const em_linalg_kernels em_meta_linalg_kernels = {
    .gemm = meta_gemm,
    .lapack = meta_lapack,
    .lapack_runs = em_lapack_runs_all,
};

/* -- random ----------------------------------------------------------------
** No values to draw. The ops reserve no counters for a meta tensor either
** (ops/random.c): the CPU generator is left as it is, as in PyTorch. */

static void meta_sample(const em_iter *it, em_dtype dt, const em_sample *s) {}
/* probabilities cannot be seen without values (PyTorch's meta kernels do
** not check them either) */
static int meta_prob_check(const em_iter *it, double *bad) {
  return 0;
}
static void meta_bernoulli_lt(const em_iter *it) { (void)it; }
static void meta_randperm(em_tensor *perm, const em_draw *d) {}
static em_prob_check meta_multinomial_check(const em_tensor *probs) {
  return EM_PROBS_OK;
}
/* the result's shape is known from the arguments: [n] or [rows, n] */
static em_status meta_multinomial(const em_tensor *probs, em_tensor *out, int replacement,
                                  const em_draw *d) {
  return EM_OK;
}

const em_random_kernels em_meta_random_kernels = {
    .sample = meta_sample,
    .prob_check = meta_prob_check,
    .bernoulli_lt = meta_bernoulli_lt,
    .randperm = meta_randperm,
    .multinomial_check = meta_multinomial_check,
    .multinomial = meta_multinomial,
};

/* -- creation ------------------------------------------------------------- */

static void meta_zero(em_tensor *t) { (void)t; }
static void meta_range(const em_iter *it, em_dtype dt, const em_range *r) {}

const em_creation_kernels em_meta_creation_kernels = {
    .zero = meta_zero,
    .arange = meta_range,
    .linspace = meta_range,
};

/* -- nn -------------------------------------------------------------------- */

/* The ops have shaped and allocated every output; there is nothing to
** compute. The checks that read ids or inputs (bad_id, outside_unit) find
** nothing without values, as PyTorch's meta kernels do not check them. */

static em_status meta_conv2d(const char *op, em_conv_pass pass, const em_tensor *a,
                             const em_tensor *b, const em_tensor *bias, em_tensor *out,
                             const em_conv2d_geo *g) {
  return EM_OK;
}
static void meta_max_pool2d(const em_tensor *x, em_tensor *y, em_tensor *indices,
                            const em_pool2d_geo *g) {}
static void meta_max_pool2d_backward(const em_tensor *grad_out, const em_tensor *indices,
                                     em_tensor *grad_input) {}
static void meta_avg_pool2d(const em_tensor *x, em_tensor *y, const em_pool2d_geo *g) {}
static void meta_avg_pool2d_backward(const em_tensor *grad_out, em_tensor *grad_input,
                                     const em_pool2d_geo *g) {}
static int meta_bad_id(const em_tensor *ids, int64_t num, int has_ignore, int64_t ignore,
                       int64_t *bad) {
  return 0;
}
static void meta_layer_norm(const em_tensor *x, const em_tensor *w, const em_tensor *b,
                            em_tensor *y, em_tensor *mean, em_tensor *rstd, int64_t M,
                            int64_t D, double eps) {
  (void)M;
  (void)D;
}
static void meta_layer_norm_backward(const em_tensor *grad_out, const em_tensor *x,
                                     const em_tensor *mean, const em_tensor *rstd,
                                     const em_tensor *w, em_tensor *gx, em_tensor *gw,
                                     em_tensor *gb, int64_t M, int64_t D) {
  (void)M;
  (void)D;
}
static em_status meta_batch_norm(const char *op, const em_tensor *x, const em_tensor *w,
                                 const em_tensor *b, em_tensor *running_mean,
                                 em_tensor *running_var, em_tensor *y, em_tensor *save_mean,
                                 em_tensor *save_invstd, const em_batch_norm_params *p) {
  return EM_OK;
}
static void meta_batch_norm_backward(const em_tensor *grad_out, const em_tensor *x,
                                     const em_tensor *w, const em_tensor *mean,
                                     const em_tensor *invstd, em_tensor *gx, em_tensor *gw,
                                     em_tensor *gb, const em_batch_norm_params *p) {}
static em_status meta_class_loss(const char *op, const em_tensor *x, const em_tensor *target,
                                 const em_tensor *w, const em_tensor *grad_out, em_tensor *out,
                                 em_tensor *total_weight, const em_class_loss_params *p) {
  return EM_OK;
}
static int meta_outside_unit(const em_tensor *x, double *v) {
  return 0;
}
static void meta_pointwise_loss(em_pointwise_loss kind, em_reduction reduction,
                                const em_tensor *x, const em_tensor *t, const em_tensor *w,
                                const em_tensor *pw, const em_tensor *grad_out, em_tensor *out) {}
static em_status meta_rnn_forward(const char *op, const em_rnn_geo *g, const em_rnn_args *a,
                                  em_tensor *out, em_tensor *hn, em_tensor *cn, em_tensor *ws) {
  return EM_OK;
}
static em_status meta_rnn_backward(const char *op, const em_rnn_geo *g, const em_rnn_args *a,
                                   const em_tensor *ws, const em_tensor *g_out,
                                   const em_tensor *g_hn, const em_tensor *g_cn,
                                   const em_rnn_grads *gr) {
  return EM_OK;
}

static em_status meta_sdpa(const char *op, const em_tensor *q, const em_tensor *k,
                           const em_tensor *v, const em_tensor *mask, em_tensor *out,
                           em_tensor *lse, const em_sdpa_params *p) {
  return EM_OK;
}
static em_status meta_sdpa_backward(const char *op, const em_tensor *grad_out,
                                    const em_tensor *q, const em_tensor *k, const em_tensor *v,
                                    const em_tensor *mask, const em_tensor *out,
                                    const em_tensor *lse, em_tensor *gq, em_tensor *gk,
                                    em_tensor *gv, const em_sdpa_params *p) {
  return EM_OK;
}

const em_nn_kernels em_meta_nn_kernels = {
    .conv2d = meta_conv2d,
    .max_pool2d = meta_max_pool2d,
    .max_pool2d_backward = meta_max_pool2d_backward,
    .avg_pool2d = meta_avg_pool2d,
    .avg_pool2d_backward = meta_avg_pool2d_backward,
    .bad_id = meta_bad_id,
    .layer_norm = meta_layer_norm,
    .layer_norm_backward = meta_layer_norm_backward,
    .batch_norm = meta_batch_norm,
    .batch_norm_backward = meta_batch_norm_backward,
    .class_loss = meta_class_loss,
    .outside_unit = meta_outside_unit,
    .rnn_forward = meta_rnn_forward,
    .rnn_backward = meta_rnn_backward,
    .pointwise_loss = meta_pointwise_loss,
    .sdpa = meta_sdpa,
    .sdpa_backward = meta_sdpa_backward,
};

/* -- optim ----------------------------------------------------------------- */

/* A step on meta parameters is its checks (and the state it makes). */
static void meta_optim_step(const em_iter *it, em_dtype dt, const em_optim_params *p) {}
static void meta_optim_multi(int family, em_dtype dt, int n, const em_iter *its,
                             const em_optim_params *ps) {}

const em_optim_kernels em_meta_optim_kernels = {
    .sgd = meta_optim_step,
    .adam = meta_optim_step,
    .rmsprop = meta_optim_step,
    .other = meta_optim_step,
    .multi = meta_optim_multi,
};

/* -- reduce ---------------------------------------------------------------- */
/* The results' shapes and dtypes are the op's; the values are none. */

static em_status meta_reduce(const char *op, em_red_kind k, em_tensor *acc,
                             const em_tensor *t, const em_red_params *p) {
  return EM_OK;
}
static em_status meta_logsumexp(const char *op, em_tensor *acc, em_tensor *shift,
                                const em_tensor *t) {
  return EM_OK;
}
/* max_dim and cumextreme */
static em_status meta_lanes_indexed(const char *op, em_tensor *values, em_tensor *indices,
                                    const em_tensor *t, int axis, int is_min) {
  return EM_OK;
}
/* softmax (log) and cumulative (prod) */
static em_status meta_lanes(const char *op, em_tensor *out, const em_tensor *t, int axis,
                            int flag) {
  return EM_OK;
}
/* equal and allclose answer with a value */
static em_status meta_equal(const em_iter *it, em_dtype a, em_dtype b, int *equal) {
  return em_fail(EM_E_RUNTIME, EM_MSG_META_NO_DATA, "equal");
}
static void meta_isclose(const em_iter *it, em_dtype dt, const em_close_params *p) {}
static em_status meta_all_true(const char *op, const em_tensor *t, int *result) {
  return em_fail(EM_E_RUNTIME, EM_MSG_META_NO_DATA, op);
}

const em_reduce_kernels em_meta_reduce_kernels = {
    .reduce = meta_reduce,
    .logsumexp = meta_logsumexp,
    .max_dim = meta_lanes_indexed,
    .cumextreme = meta_lanes_indexed,
    .softmax = meta_lanes,
    .cumulative = meta_lanes,
    .equal = meta_equal,
    .isclose = meta_isclose,
    .all_true = meta_all_true,
};

/* -- sort ------------------------------------------------------------------ */
/* sort, topk, kthvalue and median have the op's shapes; unique's size is
** the number of distinct values, which only values tell. */

static em_status meta_sort(const char *op, em_tensor *values, em_tensor *indices,
                           const em_tensor *t, int axis, int64_t k, int descending) {
  return EM_OK;
}
static em_status meta_pick(const char *op, em_tensor *values, em_tensor *indices,
                           const em_tensor *t, int axis, em_pick_kind kind, int64_t k) {
  return EM_OK;
}
/* unique_count and unique_dim_sort */
static em_status meta_unique_count(const em_tensor *sorted, int64_t *n) {
  return em_fail(EM_E_RUNTIME, EM_MSG_META_DATA_DEPENDENT, "unique");
}
static em_status meta_unique_dim_sort(const em_tensor *slices, em_tensor *order, int64_t *n) {
  return em_fail(EM_E_RUNTIME, EM_MSG_META_DATA_DEPENDENT, "unique");
}
/* unique_write and unique_dim_write (never reached: the counts refuse) */
static em_status meta_unique_write(const em_tensor *sorted, const em_tensor *order,
                                   em_tensor *values, em_tensor *inverse, em_tensor *counts) {
  return em_fail(EM_E_RUNTIME, EM_MSG_META_DATA_DEPENDENT, "unique");
}

const em_sort_kernels em_meta_sort_kernels = {
    .sort = meta_sort,
    .pick = meta_pick,
    .unique_count = meta_unique_count,
    .unique_write = meta_unique_write,
    .unique_dim_sort = meta_unique_dim_sort,
    .unique_dim_write = meta_unique_write,
};

/* -- The table --------------------------------------------------------------- */

/* complex: no values to compute */
static void meta_cx_ew(em_cx_op op, em_dtype dt, const em_iter *it, double alpha) {}
static em_status meta_fft(em_dtype dt, void *data, int64_t outer, int64_t n, int64_t inner,
                          int forward, double fct) {
  return EM_OK;
}
static em_status meta_rfft(em_dtype dt, const void *in, void *out, int64_t outer, int64_t n,
                           int64_t inner, double fct) {
  return EM_OK;
}
const em_cplx_kernels em_meta_cplx_kernels = {
    .ew = meta_cx_ew,
    .fft = meta_fft,
    .rfft = meta_rfft,
};

const em_kernels em_meta_kernels = {
    .name = "meta",
    .type = EM_META,
    .alloc = meta_alloc,
    .free = meta_free,

    .copy = &em_meta_copy_kernels,

    .ew = &em_meta_ew_kernels,

    .index = &em_meta_index_kernels,
    .linalg = &em_meta_linalg_kernels,
    .random = &em_meta_random_kernels,
    .creation = &em_meta_creation_kernels,
    .nn = &em_meta_nn_kernels,
    .optim = &em_meta_optim_kernels,
    .reduce = &em_meta_reduce_kernels,
    .sort = &em_meta_sort_kernels,
    .cplx = &em_meta_cplx_kernels,
};
