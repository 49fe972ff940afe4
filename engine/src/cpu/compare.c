/*
** cpu/compare.c -- the comparisons of the reduce family (core/kern_reduce.h):
** equal, isclose and the test behind allclose. Values are read as int64
** when the dtypes are integers (exact) and as double otherwise.
*/
#include "core/kern_reduce.h"
#include "cpu/lanes.h"
#include "cpu/reduce.h"

#include <math.h>

typedef struct cmpctx {
  em_load_d_fn lda, ldb;
  em_load_i_fn lia, lib;
  bool ints;
  double rtol, atol;
  int equal_nan;
  int64_t unequal;
} cmpctx;

static void equal_loop(char **d, const int64_t *st, int64_t n, void *vctx) {
  cmpctx *c = vctx;
  for (int64_t i = 0; i < n && !c->unequal; i++) {
    const char *a = d[0] + i * st[0], *b = d[1] + i * st[1];
    if (c->ints ? c->lia(a) != c->lib(b) : !(c->lda(a) == c->ldb(b))) c->unequal = 1;
  }
}

em_status em_cpu_equal(const em_iter *it, em_dtype a, em_dtype b, int *equal) {
  cmpctx c = {em_load_d(a), em_load_d(b), em_load_i(a), em_load_i(b),
              em_dtype_kindof(a) != EM_KIND_FLOAT && em_dtype_kindof(b) != EM_KIND_FLOAT,
              0, 0, 0, 0};
  em_iter_run(it, equal_loop, &c);
  *equal = !c.unequal;
  return EM_OK;
}

static inline bool close1(const cmpctx *c, double x, double y) {
  if (x == y) return true;  /* equal infinities too */
  if (x != x || y != y) return c->equal_nan && x != x && y != y;
  if (isinf(x) || isinf(y)) return false;
  return fabs(x - y) <= c->atol + c->rtol * fabs(y);
}

/* data[0] bool out, data[1] a, data[2] b */
/* |x - y| exactly (in uint64), then as a double: the difference of two
** int64 past 2^53 is not lost in their rounding to doubles */
static double int_absdiff(int64_t x, int64_t y) {
  uint64_t d = x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
  return (double)d;
}

static void isclose_loop(char **d, const int64_t *st, int64_t n, void *vctx) {
  cmpctx *c = vctx;
  for (int64_t i = 0; i < n; i++) {
    const char *a = d[1] + i * st[1], *b = d[2] + i * st[2];
    bool r = c->ints ? (c->lia(a) == c->lib(b) ||
                        int_absdiff(c->lia(a), c->lib(b)) <=
                            c->atol + c->rtol * fabs((double)c->lib(b)))
                     : close1(c, c->lda(a), c->ldb(b));
    *(bool *)(d[0] + i * st[0]) = r;
  }
}

void em_cpu_isclose(const em_iter *it, em_dtype dt, const em_close_params *p) {
  if (it->numel <= 0) return;
  cmpctx c = {em_load_d(dt), em_load_d(dt), em_load_i(dt), em_load_i(dt),
              em_dtype_kindof(dt) != EM_KIND_FLOAT, p->rtol, p->atol, p->equal_nan, 0};
  em_iter_run(it, isclose_loop, &c);
}

em_status em_cpu_all_true(const char *op, const em_tensor *t, int *result) {
  (void)op;
  const bool *p = em_tensor_data(t);
  int64_t n = em_tensor_numel(t);
  int r = 1;
  for (int64_t i = 0; i < n && r; i++) r = p[i];
  *result = r;
  return EM_OK;
}
