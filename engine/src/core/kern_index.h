/*
** kern_index.h -- the index family of the kernel table (core/kernels.h):
** selecting and indexing. The ops are in ops/gather_scatter.c (gather,
** scatter*, index_select, index_add_/copy_/fill_, take, put_),
** ops/masked.c (masked_*, nonzero, where), ops/index.c (t[key]) and
** ops/shape.c (repeat_interleave).
**
** What the ops guarantee to every entry: operands are on this device,
** shapes and dtypes are checked, results and temporaries are allocated.
** The values of index tensors, masks and repeats live on the device, so
** only an entry reads them: the bounds checks are entries that report the
** first bad value (the op words the message), and the counts that size a
** result are entries that a device without values refuses.
**
** Indexed operands are "restrided" by the op (PyTorch's TensorIterator
** trick): the iteration shape is the index's, the indexed dim of the
** indexed operand has stride 0, and the entry adds index * stride (bytes)
** to the pointer the iterator hands it.
*/
#ifndef EMBER_KERN_INDEX_H
#define EMBER_KERN_INDEX_H

#include "core/iter.h"

/* The first invalid value a check met; found is 0 when all were valid. */
typedef struct em_index_bad {
  int found;      /* 0, or one of em_index_bad_kind */
  int64_t value;  /* the value (the first in row-major order) */
} em_index_bad;
enum em_index_bad_kind { EM_BAD_VALUE = 1, EM_BAD_OVERFLOW = 2 };

/* A scatter pass: the indexed dim's stride and index_add_'s alpha. */
typedef struct em_scatter_params {
  int64_t stride;   /* bytes between positions along the indexed dim */
  double alpha_f;   /* SUM's scale of src, floating dtypes */
  int64_t alpha_i;  /* the same, integer dtypes */
} em_scatter_params;

/* The dims of t[key]'s copies (key_gather, key_put): nouter outer dims,
** then B (the advanced dims, one dim of nb positions whose offsets the op
** gives), then ninner inner dims; sizes, and the strides (elements) of the
** view and of the other side (the result or the value) on the outer and
** inner dims, in that order; ob is the other side's stride along B. */
typedef struct em_key_layout {
  int nouter, ninner;             /* nouter + ninner <= EM_MAX_DIMS */
  int64_t nb, ob;
  int64_t sizes[EM_MAX_DIMS];
  int64_t vstrides[EM_MAX_DIMS];
  int64_t ostrides[EM_MAX_DIMS];
} em_key_layout;

/* masked_select of a contiguous source and mask cuts the mask into runs of
** this many elements: each run's count, then each run compacted into its
** place. The op allocates the runs tensor of ceil(n / EM_MASK_RUN) + 1
** int64 elements. */
enum { EM_MASK_RUN = 1 << 18 };

typedef struct em_index_kernels {
  /* -- Index values -------------------------------------------------------- */

  /* Operands of it: 0 out (int64), 1 the index (dtype idx_dt: int64 or
  ** int32), same shape, out contiguous (so the iteration is row-major).
  ** out = the 0-based positions in [0, size) of the 1-based positions
  ** (negative ones from the end). A value outside is reported in *bad
  ** (found = EM_BAD_VALUE); out is then partly written. A device without
  ** values reports nothing (the bounds check cannot run there). */
  void (*normalize)(const em_iter *it, em_dtype idx_dt, int64_t size, em_index_bad *bad);

  /* -- Gather and scatter (dtype dt, every dtype) ----------------------------- */

  /* Operands: 0 out, 1 src restrided, 2 the normalised index (int64).
  ** out = src[index]; stride is src's along the indexed dim, in bytes. */
  void (*gather)(const em_iter *it, em_dtype dt, int64_t stride);
  /* out (contiguous) = src.index_select(axis, idx) for a contiguous src of
  ** ndim >= 1: every selected slice is one block of bytes. idx: 1-d,
  ** contiguous, normalised int64 of out->sizes[axis] positions. */
  void (*select_blocks)(em_tensor *out, const em_tensor *src, const em_tensor *idx, int axis);
  /* Operands: 0 dst restrided, 1 the normalised index (int64), 2 src.
  ** dst[index] (r)= src: NONE assigns, SUM adds alpha * src, MEAN adds src
  ** (scatter_mean_div finishes it), PROD multiplies, AMAX/AMIN keep the
  ** larger/smaller (NaN wins). Integers wrap; src has dst's dtype. */
  void (*scatter)(const em_iter *it, em_dtype dt, em_scatter_mode r,
                  const em_scatter_params *p);
  /* Operands: 0 dst, 1 counts (int64). dst /= counts where counts > 1
  ** (floor division for integers): scatter_reduce's "mean". */
  void (*scatter_mean_div)(const em_iter *it, em_dtype dt);

  /* -- Masks (bool) ------------------------------------------------------------ */

  /* Operands: 0 dst, 1 mask. dst = the element bytes at value where mask. */
  void (*masked_fill)(const em_iter *it, em_dtype dt, const void *value);
  /* *count = the true elements of mask (contiguous). With runs (int64,
  ** contiguous, ceil(n / EM_MASK_RUN) + 1 elements), runs[r] = the count
  ** before run r, runs[last] = *count. The count sizes a result (nonzero,
  ** masked_select, a mask in t[key]): a device without values refuses. */
  em_status (*mask_count)(const char *op, const em_tensor *mask, em_tensor *runs,
                          int64_t *count);
  /* out (contiguous) = src's elements where mask, in order, for every
  ** position of nouter outer dims (sizes, strides: src's, in elements; none
  ** for masked_select): out[o, :] = the elements where mask of the run of
  ** numel(mask) contiguous elements at src + (o's offset). mask contiguous,
  ** runs from mask_count; out holds (outer positions) x runs' total. */
  void (*masked_compact)(em_tensor *out, const em_tensor *src, const em_tensor *mask,
                         const em_tensor *runs, int nouter, const int64_t *sizes,
                         const int64_t *strides);
  /* prefix (int64) = the inclusive running count of true elements of mask
  ** in row-major order, *count = their total; both contiguous, one shape.
  ** sizes_result: the count is a result's length (masked_select), which a
  ** device without values refuses; else it only feeds a check
  ** (masked_scatter_'s source length) and such a device answers 0. */
  em_status (*mask_prefix)(const char *op, em_tensor *prefix, const em_tensor *mask,
                           int sizes_result, int64_t *count);
  /* Operands: 0 src, 1 mask, 2 prefix (from mask_prefix), one shape.
  ** out (1-d, contiguous) [prefix - 1] = src where mask. */
  void (*masked_select)(const em_iter *it, em_dtype dt, em_tensor *out);
  /* Operands: 0 dst, 1 mask, 2 prefix. dst = src [prefix - 1] where mask;
  ** src contiguous with at least the count of elements. */
  void (*masked_scatter)(const em_iter *it, em_dtype dt, const em_tensor *src);
  /* out (int64 [count, ndim], contiguous) = the 1-based positions of the
  ** true elements of mask (contiguous, ndim dims), in row-major order. */
  void (*nonzero)(em_tensor *out, const em_tensor *mask);
  /* Operands: 0 out, 1 cond (bool), 2 a, 3 b. out = cond ? a : b. */
  void (*where)(const em_iter *it, em_dtype dt);

  /* -- repeat_interleave ------------------------------------------------------- */

  /* *total = the sum of n repeats (int64, contiguous, n elements, or one
  ** that serves all n). A negative repeat is reported (EM_BAD_VALUE), as is
  ** a sum past int64 (EM_BAD_OVERFLOW). The total sizes the result: a
  ** device without values refuses. */
  em_status (*repeat_total)(const char *op, const em_tensor *repeats, int64_t n,
                            int64_t *total, em_index_bad *bad);
  /* out (int64, 1-d, contiguous, the total) = each position 1..n repeated
  ** its repeats' times, in order (repeats as for repeat_total, checked). */
  void (*repeat_positions)(em_tensor *out, const em_tensor *repeats, int64_t n);

  /* -- t[key]: advanced indexing (ops/index.c) ------------------------------------ */

  /* Operands: 0 offsets (int64), 1 an index (dtype idx_dt: int64 or int32).
  ** offsets = (0-based position of the index in [0, size)) * stride
  ** (elements), or += when add; a position outside is skipped and the
  ** first reported. A device without values reports nothing. */
  void (*key_offsets)(const em_iter *it, em_dtype idx_dt, int64_t size, int64_t stride,
                      int add, em_index_bad *bad);
  /* offsets (int64, contiguous, runs' total) = for each true element of
  ** mask (contiguous, in row-major order), the sum of its position along
  ** each of k dims (sizes: the dims of mask, which has their product of
  ** elements) times strides (elements); runs from mask_count. */
  void (*key_mask_offsets)(em_tensor *offsets, const em_tensor *mask, int k,
                           const int64_t *sizes, const int64_t *strides,
                           const em_tensor *runs);
  /* The copies between a view of t (storage and offset; its shape is
  ** not read) and the result of a read or the value of a write, over the
  ** dims [outer..., B, inner...] of em_key_layout: B's nb positions are at
  ** offsets (int64, contiguous, checked) from the view's first element.
  ** key_gather: out[o, b, i] = view[o, i] at offsets[b]; key_put: the
  ** reverse, from value (t's dtype, not overlapping t). Rows (o, b) are
  ** split among threads: with repeated offsets one of the writes wins. */
  void (*key_gather)(const em_tensor *view, em_tensor *out, const em_tensor *offsets,
                     const em_key_layout *l);
  void (*key_put)(em_tensor *view, const em_tensor *value, const em_tensor *offsets,
                  const em_key_layout *l);
  /* Operands: 0 base, 1 value, 2 offsets. base[offsets] += value (bool:
  ** or; integers wrap), one element after another. */
  void (*key_accumulate)(const em_iter *it, em_dtype dt);
} em_index_kernels;

extern const em_index_kernels em_cpu_index_kernels, em_meta_index_kernels;

#endif
