/*
** fuzz_viewops.c -- libFuzzer target: a view-op sequence interpreter, the C
** twin of tests/lua/property_spec.lua. The input picks a float64 base
** tensor (holding 1..n), then a program: each op takes a tensor from a pool
** of up to 8 live tensors, applies a view op (narrow, select, transpose, t,
** permute, movedim, view, reshape, flatten, unflatten, squeeze, unsqueeze,
** expand, unfold, diagonal, as_strided, alias, split, unbind, index_get) or
** a copy/write (clone, contiguous, flip, fill_, copy_) with parameters from
** the input, and puts the result back in the pool.
**
** Invariants checked after every op (a violation traps):
** - a failure returns a status with a message and writes no output;
** - every tensor in the pool addresses only elements inside its storage,
**   and em_get_f64 reads the element that sizes/strides/offset address;
** - each storage's refcount equals the number of distinct tensors over it,
**   each tensor's refcount the number of pool entries holding it
**   (views take exactly one reference, releases give it back);
** - after the pool is released, em_memory_live_bytes is back to its start.
*/
#include "fuzz_common.h"

enum { POOL = 8 };

typedef struct pool {
  em_tensor *t[POOL];
  int n;
} pool;

static void pool_put(pool *p, em_tensor *t, uint8_t slot) {
  if (p->n < POOL) {
    p->t[p->n++] = t;
    return;
  }
  int i = 1 + slot % (POOL - 1); /* slot 0 (the base) stays */
  em_tensor_release(p->t[i]);
  p->t[i] = t;
}

static void check_pool(const pool *p) {
  for (int i = 0; i < p->n; i++) {
    const em_tensor *t = p->t[i];
    FUZZ_ASSERT(fz_in_bounds(t));
    FUZZ_ASSERT(fz_reads_agree(t, 32));
    /* a storage is held at least once per distinct tensor object over it;
    ** a tensor (em_contiguous may hand back its argument) at least once per
    ** pool entry -- more when views keep their base alive (autograd's view
    ** link, as PyTorch's _base); the exact count is checked at the end, when
    ** every byte must be back */
    int users = 0, holds = 0;
    for (int j = 0; j < p->n; j++) {
      holds += p->t[j] == t;
      if (em_tensor_storage(p->t[j]) != em_tensor_storage(t)) continue;
      int first = 1;
      for (int k = 0; k < j; k++) first &= p->t[k] != p->t[j];
      users += first;
    }
    FUZZ_ASSERT(em_storage_refcount(em_tensor_storage(t)) >= users);
    FUZZ_ASSERT(em_tensor_refcount(t) >= holds);
  }
}

static int read_sizes(fz_reader *r, int64_t *sz) {
  int n = fz_u8(r) % 5;
  for (int i = 0; i < n; i++) {
    uint8_t b = fz_u8(r);
    sz[i] = b == 0xff ? -1 : b == 0xfe ? INT64_MAX / 2 : (int64_t)(b % 7);
  }
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_reader r = {data, size};
  size_t live0 = em_memory_live_bytes();
  static int trace = -1; /* FUZZ_TRACE=1: print each op (to read a crash) */
  if (trace < 0) trace = getenv("FUZZ_TRACE") != NULL;
  int nd = fz_u8(&r) % 5;
  int64_t sizes[4];
  for (int d = 0; d < nd; d++) sizes[d] = 1 + fz_u8(&r) % 4;
  em_tensor *base;
  if (em_zeros(nd, sizes, EM_FLOAT64, em_cpu(), &base) != EM_OK) return 0;
  for (int64_t i = 0; i < em_tensor_numel(base); i++) {
    em_scalar s = {EM_SCALAR_FLOAT, 0, (double)(i + 1)};
    em_set_flat(base, i, s);
  }
  pool p = {{base}, 1};

  for (int step = 0; step < 64 && fz_more(&r); step++) {
    uint8_t op = fz_u8(&r) % 26;
    em_tensor *t = p.t[fz_u8(&r) % p.n];
    em_tensor *out = NULL;
    em_status s = EM_OK;
    int64_t a = fz_small(&r), b = fz_small(&r), c = fz_small(&r);
    int64_t v[EM_MAX_DIMS], w[EM_MAX_DIMS];
    int k;
    switch (op) {
      case 0: s = em_narrow(t, a, b, c, &out); break;
      case 1: s = em_select(t, a, b, &out); break;
      case 2: s = em_transpose(t, a, b, &out); break;
      case 3: s = em_t(t, &out); break;
      case 4: s = em_reverse_dims(t, &out); break;
      case 5: s = em_mT(t, &out); break;
      case 6:
        k = read_sizes(&r, v);
        s = em_permute(t, k, v, &out);
        break;
      case 7:
        k = read_sizes(&r, v);
        for (int i = 0; i < k; i++) w[i] = fz_small(&r);
        s = em_movedim(t, k, v, w, &out);
        break;
      case 8:
        k = read_sizes(&r, v);
        s = em_view(t, k, v, &out);
        break;
      case 9:
        k = read_sizes(&r, v);
        s = em_reshape(t, k, v, &out);
        break;
      case 10: s = em_flatten(t, a, b, &out); break;
      case 11:
        k = read_sizes(&r, v);
        s = em_unflatten(t, a, k, v, &out);
        break;
      case 12:
        if (a & 1) {
          s = em_squeeze(t, 0, NULL, &out);
        } else {
          k = read_sizes(&r, v);
          s = em_squeeze(t, k, v, &out);
        }
        break;
      case 13: s = em_unsqueeze(t, a, &out); break;
      case 14:
        k = read_sizes(&r, v);
        s = em_expand(t, k, v, &out);
        break;
      case 15: s = em_unfold(t, a, b, c, &out); break;
      case 16: s = em_diagonal(t, a, b, c, &out); break;
      case 17:
        k = read_sizes(&r, v);
        for (int i = 0; i < k; i++) w[i] = fz_small(&r);
        s = em_as_strided(t, k, v, w, a, &out);
        break;
      case 18: s = em_alias(t, &out); break;
      case 19: s = em_clone(t, &out); break;
      case 20: s = em_contiguous(t, &out); break;
      case 21:
        k = read_sizes(&r, v);
        s = em_flip(t, k, v, &out);
        break;
      case 22: { /* fill_ through a view: ok, or refused for overlap */
        em_scalar f = {EM_SCALAR_FLOAT, 0, (double)a * 0.5};
        s = em_fill_(t, f);
        break;
      }
      case 23: /* copy_ from another pool tensor (broadcast, overlap) */
        s = em_copy_(t, p.t[fz_u8(&r) % p.n]);
        break;
      case 24: { /* split into views, keep one */
        int64_t dsz = 0, cnt = 0;
        int axis;
        if (em_wrap_dim("split", a, em_tensor_ndim(t), &axis) == EM_OK &&
            em_tensor_ndim(t) > 0)
          dsz = em_tensor_sizes(t)[axis];
        s = em_split_sizes(dsz, b, &cnt, NULL);
        if (s == EM_OK && cnt > 0 && cnt <= 16 && em_tensor_ndim(t) > 0) {
          int64_t parts[16];
          em_tensor *outs[16];
          FUZZ_ASSERT(em_split_sizes(dsz, b, &cnt, parts) == EM_OK);
          s = em_split_with_sizes(t, a, cnt, parts, outs);
          if (s == EM_OK) {
            for (int64_t i = 1; i < cnt; i++) {
              FUZZ_ASSERT(fz_in_bounds(outs[i]));
              em_tensor_release(outs[i]);
            }
            out = outs[0];
          }
        }
        break;
      }
      case 25: { /* a basic index expression: int, range, newaxis */
        em_index_item items[3];
        int n = (int)(c & 3) % 3 + 1;
        for (int i = 0; i < n; i++) {
          memset(&items[i], 0, sizeof items[i]);
          items[i].kind = (em_index_kind)(fz_u8(&r) % 5);
          items[i].first = fz_small(&r);
          items[i].last = fz_small(&r);
          items[i].step = 1 + (fz_u8(&r) % 3);
        }
        s = em_index_get(t, n, items, &out);
        break;
      }
    }
    if (trace) {
      fprintf(stderr, "step %d: op %d -> %s", step, op, s == EM_OK ? "ok" : em_last_error());
      if (out)
        for (int d = 0; d < em_tensor_ndim(out); d++)
          fprintf(stderr, " %lld", (long long)em_tensor_sizes(out)[d]);
      fprintf(stderr, "\n");
    }
    if (s != EM_OK) {
      FUZZ_ASSERT(fz_error_ok());
      FUZZ_ASSERT(out == NULL || op == 24);
      if (op == 24 && out) pool_put(&p, out, fz_u8(&r));
    } else if (out) {
      pool_put(&p, out, fz_u8(&r));
    }
    check_pool(&p);
  }
  for (int i = 0; i < p.n; i++) em_tensor_release(p.t[i]);
  FUZZ_ASSERT(em_memory_live_bytes() == live0);
  return 0;
}
