/*
** autograd.h -- engine-private interface of the autograd recorder
** (autograd.c: metadata, graph and backward engine; autograd/formulas.c:
** the one table of derivative formulas).
**
** How an op file records: its public entry point pauses grad mode (so the
** engine ops it calls inside do not record themselves), computes, resumes,
** and when grad mode was on and an input requires grad, calls em_ag_record
** with its inputs, outputs and parameters. The EM_AG_* macros below do that
** for the common shapes of entry point.
*/
#ifndef EMBER_AUTOGRAD_H
#define EMBER_AUTOGRAD_H

#include "core/core.h"

/* The one list of differentiable ops: X(KIND, "PyTorchNodeName").
** The formulas are in autograd/formulas.c, one case per kind, written with
** engine ops (so create_graph records the backward for higher order). */
#define EM_FOR_EACH_GRAD_OP(X)                                   \
  X(EW, "ElementwiseBackward0") /* name chosen per em_ew_op */   \
  X(IDENTITY, "CloneBackward0") /* clone/alias/to: name given */ \
  X(GATHER, "IndexBackward0")   /* out = in.flat[pos]; name given */ \
  X(PUTPOS, "PutBackward0")     /* backward of GATHER */         \
  X(STRIDED, "AsStridedBackward0") /* a non-overlapping view of a contiguous in: \
                                   p.i[0] offset, p.list strides; name given */ \
  X(RESHAPE, "ViewBackward0")   /* same elements, other shape */ \
  X(REDUCE, "SumBackward1")     /* em_reduce; name per op */     \
  X(VAR, "VarBackward0")                                         \
  X(NORM, "NormBackward1")                                       \
  X(LOGSUMEXP, "LogsumexpBackward0")                             \
  X(MAXDIM, "MaxBackward0")                                      \
  X(SOFTMAX, "SoftmaxBackward0")                                 \
  X(CUMULATIVE, "CumsumBackward0")                               \
  X(MM, "MmBackward0")                                           \
  X(BMM, "BmmBackward0")                                         \
  X(MATMUL, "MatmulBackward0") /* any matmul shapes */           \
  X(ADDMM, "AddmmBackward0")   /* addmm/addmv/baddbmm */         \
  X(LINEAR, "LinearBackward0")                                   \
  X(CAT, "CatBackward0")                                         \
  X(STACK, "StackBackward0")                                     \
  X(WHERE, "WhereBackward0")                                     \
  X(COPYSLICES, "CopySlices")  /* in-place write into a view */  \
  X(OVERWRITE, "CopyBackwards") /* copy_/fill_ over a tensor */  \
  X(INDEXPUT, "IndexPutBackward0") /* in-place writes at positions */ \
  X(CUSTOM, "CustomBackward")   /* em_autograd_record: a host's formula */ \
  X(NN, "NnBackward0")          /* the nn ops: p.op an em_ag_nn_op, name given */ \
  X(COMPLEX, "ConjBackward0")   /* ops/complex.c, fft.c: p.op an em_ag_cx_op, name given */

typedef enum em_ag_kind {
#define EM_AG_ENUM(k, n) EM_AG_##k,
  EM_FOR_EACH_GRAD_OP(EM_AG_ENUM)
#undef EM_AG_ENUM
  EM_AG_NKINDS
} em_ag_kind;

/* The complex ops of ops/complex.c and ops/fft.c (kind COMPLEX). */
typedef enum em_ag_cx_op {
  EM_AG_CX_CONJ, EM_AG_CX_ANGLE, EM_AG_CX_AS_REAL, EM_AG_CX_AS_COMPLEX, EM_AG_CX_NEW,
  EM_AG_CX_FFT /* i[0] the dim (1-based), i[1] forward, d[0] the scale */
} em_ag_cx_op;

/* Parameters an op hands to its node (what the formula needs beyond the
** tensors). */
typedef struct em_ag_params {
  const char *name;     /* node name; NULL: the kind's default */
  int op;               /* em_ew_op / em_reduce_op / flags per kind */
  em_ew_opts ew;        /* EW: the options */
  em_scalar sc[3];      /* EW: scalar operands (input i with tensor NULL) */
  int64_t i[4];         /* small integer parameters (dim, keepdim, ...) */
  double d[3];          /* real parameters (p, correction, beta, alpha) */
  int nlist;            /* a dim list (reductions) */
  int64_t list[EM_MAX_DIMS];
  int save_in;          /* bit i: save input i */
  int save_out;         /* bit k: save output k */
  const em_tensor *extra;  /* one more tensor to save (positions, indices) */
  const em_tensor *pre[3]; /* in-place: input i as it was before the op */
  const em_tensor *more[3]; /* further tensors to save (slots EM_AG_SV_PRE(n, j));
                               for ops that are not in place (the nn ops) */
} em_ag_params;

/* The nn ops of ops/conv.c, nn.c, norm.c and loss.c (kind NN; formulas in
** autograd/formulas.c). The *_BWD ops are backward kernels recorded as ops
** of their own (when a backward is itself recorded: create_graph). */
typedef enum em_ag_nn_op {
  EM_AG_NN_CONV, EM_AG_NN_CONV_BWD_INPUT, EM_AG_NN_CONV_BWD_WEIGHT,
  EM_AG_NN_MAXPOOL, EM_AG_NN_MAXPOOL_BWD, EM_AG_NN_AVGPOOL, EM_AG_NN_AVGPOOL_BWD,
  EM_AG_NN_EMBEDDING, EM_AG_NN_EMBEDDING_BWD, EM_AG_NN_LAYERNORM, EM_AG_NN_BATCHNORM,
  EM_AG_NN_DROPOUT, EM_AG_NN_NLL, EM_AG_NN_NLL_BWD, EM_AG_NN_CE, EM_AG_NN_MSE,
  EM_AG_NN_L1, EM_AG_NN_BCE, EM_AG_NN_BCEL,
  EM_AG_NN_SDPA,
  EM_AG_NN_RNN  /* ops/rnn.c: i[0] the mode, i[1] reverse; extra lengths, pre[0] workspace */
} em_ag_nn_op;

/* d loss / d log_softmax(input) of cross_entropy for grad_out (ops/loss.c):
** the gradient before log_softmax's backward, linear in grad_out. */
em_status em_nn_cross_entropy_logp_grad(const em_tensor *grad_out, const em_tensor *input,
                                        const em_tensor *target, const em_tensor *weight,
                                        em_reduction reduction, int64_t ignore_index,
                                        double label_smoothing, em_tensor **out);

/* Grad mode (thread-local). pause turns it off and returns the old mode. */
int em_ag_pause(void);
void em_ag_resume(int on);
/* 1 when any of the n tensors (NULL entries skipped) requires grad. */
int em_ag_any(int n, const em_tensor *const *ts);

/* Records a node for outputs out[0..nout) of an op on in[0..nin) (NULL
** entries are scalars or absent operands). Outputs that are floating get
** the node as grad_fn and requires_grad. On failure the caller releases
** the outputs. In-place ops pass the written tensor as both in[0] and
** out[0]; its old history becomes the node's first edge. */
em_status em_ag_record(em_ag_kind kind, int nin, const em_tensor *const *in, int nout,
                       em_tensor *const *out, const em_ag_params *p);

/* Gather-like ops: positions (1-based, int64, out's shape) into in read
** row-major; a position of numel + 1 reads zero. */
/* Marks out, a view of src (its storage, not src itself), as made in
** no_grad mode when src requires grad and grad mode was off (on = 0), or
** when src is such a view. */
static inline void em_ag_mark_nograd_view(int on, const em_tensor *src, em_tensor *out) {
  if (out && out != src && out->storage == src->storage &&
      (src->nograd_view || (!on && src->requires_grad)))
    out->nograd_view = true;
  if (out && out != src && out->storage == src->storage && src->multi_view) out->multi_view = true;
}

/* Renames out's grad_fn (a static name) when it is a node of its own, not
** src's: one op recording under several PyTorch names (t/transpose). */
void em_ag_rename(const em_tensor *src, const em_tensor *out, const char *name);
em_status em_ag_record_gather(const char *name, const em_tensor *in,
                              const em_tensor *pos, em_tensor *out);
/* The node of an EM_AG_INPLACE write (kind INDEXPUT). */
em_status em_ag_record_inplace(const char *name, em_tensor *t, const em_tensor *src,
                               const em_tensor *pos, int accumulate, double alpha);
/* values = t gathered along dim at 1-based indices (max/min/sort/topk/...;
** indices without the dim unless keepdim). */
em_status em_ag_record_indexed(const char *name, const em_tensor *t, int64_t dim,
                               int keepdim, const em_tensor *indices, em_tensor *values);
/* int64 1..numel in t's shape (contiguous). */
em_status em_ag_arange_like(const em_tensor *t, em_tensor **out);

/* Views of floating tensors remember their base in grad mode, whether or
** not it requires grad: a later in-place write of a value that requires
** grad into the view must reach the base. */
static inline int em_ag_diff_dtype(em_dtype dt) {
  em_dtype_kind k = em_dtype_kindof(dt);
  return k == EM_KIND_FLOAT || k == EM_KIND_COMPLEX;
}
static inline int em_ag_viewable(const em_tensor *t) { return em_ag_diff_dtype(t->dtype); }
/* Marks out as a view of src (of src's base when src is a view), so an
** in-place op on out rebases the base's history (CopySlices). */
em_status em_ag_set_base(em_tensor *out, const em_tensor *src);
/* t takes over the history of v, an out-of-place view of t with t's new
** geometry (the in-place view ops) */
em_status em_ag_take_history(em_tensor *t, const em_tensor *v);
/* Positions (as em_ag_record_gather's) of view v's elements in base b. */
em_status em_ag_view_positions(const em_tensor *b, const em_tensor *v, em_tensor **pos);
/* v, a view of the contiguous b, touches each of its elements at most once
** (non-negative strides that do not overlap, inside b): its gradient is a
** strided copy into zeros of b's shape, with no positions (STRIDED) */
int em_ag_strided_view(const em_tensor *b, const em_tensor *v);
em_status em_ag_record_strided(const char *name, const em_tensor *b, em_tensor *v);

/* What an elementwise op saves (bits of inputs, of outputs) and its node's
** name (autograd/formulas.c). */
void em_ag_ew_saves(em_ew_op op, int *save_in, int *save_out);
const char *em_ag_ew_name(em_ew_op op, int tensor_exponent);

/* Whether an in-place write into t may go ahead: errors for leaves that
** require grad (in grad mode) and for views of such leaves. */
em_status em_ag_check_inplace(const char *op, const em_tensor *t);

/* -- Entry-point helpers ------------------------------------------------ */

/* A gather-like single-output op on SRC: EXPR computes it from ag_src_
** into ag_dst_; when recording, EXPR runs again on an arange of SRC's shape
** to find where each output element came from (a view of a contiguous SRC
** computes that from the view's strides instead: O(output), not O(input)). */
#define EM_AG_GATHER(NAME, SRC, OUT, EXPR)                                  \
  do {                                                                      \
    const em_tensor *ag_src_ = (SRC);                                       \
    em_tensor **ag_dst_ = (OUT);                                            \
    int ag_on_ = em_ag_pause();                                             \
    em_status ag_st_ = (EXPR);                                              \
    if (ag_st_ == EM_OK) em_ag_mark_nograd_view(ag_on_, (SRC), *(OUT));     \
    if (ag_st_ == EM_OK && ag_on_ && *(OUT) != (SRC) &&                     \
        (*(OUT))->storage == (SRC)->storage && em_ag_viewable(SRC))         \
      ag_st_ = em_ag_set_base(*(OUT), (SRC));                               \
    if (ag_st_ == EM_OK && ag_on_ && (SRC)->requires_grad &&                \
        *(OUT) != (SRC)) {                                                  \
      em_tensor *ag_res_ = *(OUT), *ag_pos_ = NULL, *ag_ar_ = NULL;         \
      if (ag_res_->storage == (SRC)->storage && em_tensor_is_contiguous(SRC)) { \
        if (em_ag_strided_view((SRC), ag_res_)) {                           \
          ag_st_ = em_ag_record_strided((NAME), (SRC), ag_res_);            \
          goto ag_done_;                                                    \
        }                                                                   \
        ag_st_ = em_ag_view_positions((SRC), ag_res_, &ag_pos_);            \
      } else {                                                              \
        ag_st_ = em_ag_arange_like((SRC), &ag_ar_);                         \
        if (ag_st_ == EM_OK) {                                              \
          ag_src_ = ag_ar_;                                                 \
          ag_dst_ = &ag_pos_;                                               \
          ag_st_ = (EXPR);                                                  \
        }                                                                   \
      }                                                                     \
      if (ag_st_ == EM_OK)                                                  \
        ag_st_ = em_ag_record_gather((NAME), (SRC), ag_pos_, ag_res_);      \
    ag_done_:                                                               \
      em_tensor_release(ag_ar_);                                            \
      em_tensor_release(ag_pos_);                                           \
      if (ag_st_ != EM_OK) {                                                \
        em_tensor_release(ag_res_);                                         \
        *(OUT) = NULL;                                                      \
      }                                                                     \
    }                                                                       \
    em_ag_resume(ag_on_);                                                   \
    return ag_st_;                                                          \
  } while (0)

/* A single-output op with NIN tensor inputs IN (an array): runs CALL with
** grad mode paused, then records KIND with params P (a pointer). */
#define EM_AG_CALL(KIND, NIN, IN, OUT, P, CALL)                             \
  do {                                                                      \
    int ag_on_ = em_ag_pause();                                             \
    em_status ag_st_ = (CALL);                                              \
    em_ag_resume(ag_on_);                                                   \
    if (ag_st_ == EM_OK && (IN)[0]) em_ag_mark_nograd_view(ag_on_, (IN)[0], *(OUT)); \
    if (ag_st_ == EM_OK && ag_on_ && (IN)[0] && em_ag_viewable((IN)[0]) &&  \
        *(OUT) != (IN)[0] && (*(OUT))->storage == (IN)[0]->storage)         \
      ag_st_ = em_ag_set_base(*(OUT), (IN)[0]);                             \
    if (ag_st_ == EM_OK && ag_on_ && em_ag_any((NIN), (IN)) &&              \
        !ag_same_((NIN), (IN), *(OUT))) {                                   \
      ag_st_ = em_ag_record((KIND), (NIN), (IN), 1, (OUT), (P));            \
      if (ag_st_ != EM_OK) {                                                \
        em_tensor_release(*(OUT));                                          \
        *(OUT) = NULL;                                                      \
      }                                                                     \
    }                                                                       \
    return ag_st_;                                                          \
  } while (0)

/* An in-place write into T at positions (1-based flat, found by POS_EXPR
** from ag_ar_, an arange of T's shape, into ag_pos_) of the values SRC
** (NULL: a scalar) -- index_put_, masked_fill_, scatter_, index_add_, ...
** ACC: the values add to T (T keeps its gradient); ALPHA scales SRC's. */
#define EM_AG_INPLACE(OP, NAME, T, SRC, ACC, ALPHA, CALL, POS_EXPR)          \
  do {                                                                      \
    int ag_on_ = em_ag_pause();                                             \
    em_status ag_st_ = EM_OK;                                               \
    const em_tensor *ag_s_ = (SRC);                                         \
    int ag_any_ = ag_on_ && ((T)->requires_grad || (ag_s_ && ag_s_->requires_grad)); \
    if (ag_any_ || (ag_on_ && (T)->nograd_view))                            \
      ag_st_ = em_ag_check_inplace((OP), (T));                              \
    if (ag_st_ == EM_OK) ag_st_ = (CALL);                                   \
    em_tensor *ag_ar_ = NULL, *ag_pos_ = NULL;                              \
    if (ag_st_ == EM_OK && ag_any_) ag_st_ = em_ag_arange_like((T), &ag_ar_); \
    if (ag_st_ == EM_OK && ag_any_) ag_st_ = (POS_EXPR);                    \
    em_ag_resume(ag_on_);                                                   \
    if (ag_st_ == EM_OK && ag_any_)                                         \
      ag_st_ = em_ag_record_inplace((NAME), (T), ag_s_, ag_pos_, (ACC), (ALPHA)); \
    em_tensor_release(ag_ar_);                                              \
    em_tensor_release(ag_pos_);                                             \
    return ag_st_;                                                          \
  } while (0)

/* An in-place op autograd has no formula for: an error when it would be
** recorded (a wrong gradient is never given). */
em_status em_ag_unsupported(const char *op, const em_tensor *t, const em_tensor *src);

static inline int ag_same_(int n, const em_tensor *const *in, const em_tensor *out) {
  for (int i = 0; i < n; i++)
    if (in[i] == out) return 1;
  return 0;
}

#endif

/* -- The graph (shared by autograd.c and autograd/formulas.c) ------------- */

typedef struct em_node em_node;

/* Where a gradient goes: output nr of node, or a leaf's .grad. */
typedef struct em_ag_edge {
  em_node *node;    /* one reference */
  int nr;
  em_tensor *leaf;  /* one reference */
} em_ag_edge;

/* Shape, dtype and device of an input or output, kept after the tensor is
** gone: the gradients made for it are made there. */
typedef struct em_ag_tmeta {
  int is_tensor;
  int ndim;
  em_dtype dtype;
  em_device device;
  int64_t sizes[EM_MAX_DIMS];
} em_ag_tmeta;

/* A saved tensor: a metadata-free alias of the data (so no cycle goes
** through it), the storage version when saved, and the history to give it
** back when the backward itself is recorded (create_graph). */
typedef struct em_ag_saved {
  em_tensor *data;
  uint64_t version;
  em_node *fn;      /* one reference, except for outputs (the node itself) */
  int nr;
  em_tensor *leaf;  /* one reference */
  int is_output;
} em_ag_saved;

/* Saved slots: inputs 0..nin-1, outputs nin.., then extra, then pre[0..2]. */
#define EM_AG_SV_OUT(n, k) ((n)->nin + (k))
#define EM_AG_SV_EXTRA(n) ((n)->nin + (n)->nout)
#define EM_AG_SV_PRE(n, i) ((n)->nin + (n)->nout + 1 + (i))

struct em_node {
  atomic_int refcount;
  em_ag_kind kind;
  const char *name;
  em_ag_params p;
  int nin, nout;
  em_ag_edge *next;       /* nin */
  em_ag_tmeta *in, *out;  /* nin, nout */
  int nsaved;
  em_ag_saved *saved;
  int has_saved, freed;
  em_tensor **retain;     /* nout weak pointers (retain_grad) */
  em_node *inner;         /* COPYSLICES: the in-place op's node */
  /* CUSTOM: the host's backward, its context, and the node's own name */
  em_autograd_backward_fn custom_fn;
  void *custom_ctx;
  void (*custom_free)(void *ctx);
  char *owned_name;
  int64_t base_geom[2 * EM_MAX_DIMS + 2]; /* COPYSLICES: view ndim, sizes,
                                             strides, offset - base offset */
  /* scratch of one backward run */
  uint64_t mark;
  int deps;
  em_tensor **buf;        /* nout */
  /* tensor hooks of non-leaf outputs (em_tensor_set_hook), run on buf[nr]
  ** before the node runs */
  struct em_ag_prehook *prehooks;
};

typedef struct em_ag_prehook {
  int nr;
  em_tensor_hook_fn fn;
  void *ctx;
  void (*free_ctx)(void *ctx);
  struct em_ag_prehook *next;
} em_ag_prehook;

void em_node_retain(em_node *n);
void em_node_release(em_node *n);

/* Unpacks saved slot k: a new reference, or an error when the data was
** freed by a backward or changed in place since. */
em_status em_ag_saved_get(em_node *n, int k, em_tensor **out);
/* Runs node n's formula: gout[nout] (floating outputs never NULL), fills
** gin[nin] with new references (NULL: no gradient). autograd/formulas.c. */
em_status em_ag_apply(em_node *n, em_tensor *const *gout, em_tensor **gin);
