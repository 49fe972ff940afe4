/* test_meta_index.c -- the index family of the kernel table
** (core/kern_index.h): every entry filled for cpu and meta, and the public
** ops on meta tensors: the CPU's sizes, strides and dtype, on meta; the
** ops whose result's shape depends on values refuse; mixed devices are an
** error. (tests/lua/meta_index_spec.lua covers every op from Lua.) */
#include "ctest.h"
#include "core/kern_index.h"
#include "core/kernels.h"

/* A tensor of the sizes on dev: float32 zeros, int64 ones (a valid
** position), or bool true. */
static em_tensor *make(em_device dev, em_dtype dt, int ndim, const int64_t *sizes) {
  em_tensor *t = NULL;
  em_scalar one = {EM_SCALAR_INT, 1, 1.0}, zero = {EM_SCALAR_INT, 0, 0.0};
  if (em_full(ndim, sizes, dt == EM_FLOAT32 ? zero : one, dt, dev, &t) != EM_OK) return NULL;
  return t;
}

static int same_meta(const em_tensor *c, const em_tensor *m) {
  if (!c || !m || em_tensor_device(m).type != EM_META) return 0;
  if (em_tensor_dtype(c) != em_tensor_dtype(m) || em_tensor_ndim(c) != em_tensor_ndim(m))
    return 0;
  for (int i = 0; i < em_tensor_ndim(c); i++)
    if (em_tensor_sizes(c)[i] != em_tensor_sizes(m)[i] ||
        em_tensor_strides(c)[i] != em_tensor_strides(m)[i])
      return 0;
  return 1;
}

/* One op on both devices: f builds the result from tensors made on dev. */
typedef em_status (*op_fn)(em_device dev, em_tensor **out);

static void check_like_cpu(op_fn f, const char *name) {
  em_tensor *c = NULL, *m = NULL;
  CHECK_OK(f(em_cpu(), &c));
  CHECK_OK(f(em_meta(), &m));
  if (!same_meta(c, m)) printf("  %s: the meta result differs from the CPU's\n", name);
  CHECK(same_meta(c, m));
  em_tensor_release(c);
  em_tensor_release(m);
}

static const int64_t S45[2] = {4, 5}, S3[1] = {3}, S42[2] = {4, 2}, S25[2] = {2, 5};

static em_status op_index_select(em_device dev, em_tensor **out) {
  em_tensor *x = make(dev, EM_FLOAT32, 2, S45), *i = make(dev, EM_INT64, 1, S3), *xt = NULL;
  em_status st = em_transpose(x, 1, 2, &xt);
  if (st == EM_OK) st = em_index_select(xt, 2, i, out);  /* the strided path */
  em_tensor_release(xt);
  em_tensor_release(x);
  em_tensor_release(i);
  return st;
}
static em_status op_gather(em_device dev, em_tensor **out) {
  em_tensor *x = make(dev, EM_FLOAT32, 2, S45), *i = make(dev, EM_INT64, 2, S42);
  em_status st = em_gather(x, 2, i, out);
  em_tensor_release(x);
  em_tensor_release(i);
  return st;
}
static em_status op_scatter_reduce(em_device dev, em_tensor **out) {
  em_tensor *x = make(dev, EM_FLOAT32, 2, S45), *i = make(dev, EM_INT64, 2, S25),
            *s = make(dev, EM_FLOAT32, 2, S25);
  em_status st = em_scatter_reduce_(x, 1, i, s, EM_SCATTER_MEAN, 0);
  if (st == EM_OK) { *out = x; x = NULL; }
  em_tensor_release(x);
  em_tensor_release(i);
  em_tensor_release(s);
  return st;
}
static em_status op_where(em_device dev, em_tensor **out) {
  int64_t s41[2] = {4, 1}, s5[1] = {5};
  em_tensor *c = make(dev, EM_BOOL, 2, s41), *a = make(dev, EM_FLOAT32, 2, S45),
            *b = make(dev, EM_INT64, 1, s5);
  em_status st = em_where(c, a, b, EM_FLOAT32, out);
  em_tensor_release(c);
  em_tensor_release(a);
  em_tensor_release(b);
  return st;
}
static em_status op_index_tensors(em_device dev, em_tensor **out) {
  int64_t s456[3] = {4, 5, 6}, s21[2] = {2, 1};
  em_tensor *x = make(dev, EM_FLOAT32, 3, s456), *i = make(dev, EM_INT64, 2, s21),
            *j = make(dev, EM_INT64, 1, S3);
  em_index_item items[3];
  memset(items, 0, sizeof items);
  items[0].kind = EM_INDEX_TENSOR, items[0].tensor = i;
  items[1].kind = EM_INDEX_FULL;
  items[2].kind = EM_INDEX_TENSOR, items[2].tensor = j;
  em_status st = em_index_get(x, 3, items, out);
  em_tensor_release(x);
  em_tensor_release(i);
  em_tensor_release(j);
  return st;
}
static em_status op_cat(em_device dev, em_tensor **out) {
  int64_t s23[2] = {2, 3}, s21[2] = {2, 1};
  em_tensor *a = make(dev, EM_FLOAT32, 2, s23), *b = make(dev, EM_INT64, 2, s21);
  const em_tensor *ts[2] = {a, b};
  em_status st = em_cat(2, ts, 2, out);
  em_tensor_release(a);
  em_tensor_release(b);
  return st;
}
static em_status op_roll(em_device dev, em_tensor **out) {
  em_tensor *x = make(dev, EM_FLOAT32, 2, S45);
  int64_t shifts[2] = {1, -2}, dims[2] = {1, 2};
  em_status st = em_roll(x, 2, shifts, 2, dims, out);
  em_tensor_release(x);
  return st;
}

TEST(meta_results_have_the_cpu_metadata) {
  check_like_cpu(op_index_select, "index_select");
  check_like_cpu(op_gather, "gather");
  check_like_cpu(op_scatter_reduce, "scatter_reduce_");
  check_like_cpu(op_where, "where");
  check_like_cpu(op_index_tensors, "index with tensors");
  check_like_cpu(op_cat, "cat");
  check_like_cpu(op_roll, "roll");
}

TEST(data_dependent_shapes_refuse_on_meta) {
  em_tensor *x = make(em_meta(), EM_FLOAT32, 2, S45), *m = make(em_meta(), EM_BOOL, 2, S45),
            *r = make(em_meta(), EM_INT64, 1, S3), *out = NULL;
  const char *dd = "not supported on the meta device: the result's shape depends on the values";
  CHECK_ERR(em_nonzero(x, &out), dd);
  CHECK_ERR(em_masked_select(x, m, &out), dd);
  CHECK_ERR(em_repeat_interleave(NULL, r, 0, &out), dd);
  em_index_item item;
  memset(&item, 0, sizeof item);
  item.kind = EM_INDEX_TENSOR, item.tensor = m;
  CHECK_ERR(em_index_get(x, 1, &item, &out), "index: not supported on the meta device");
  /* masked_scatter_'s count only feeds a check: shapes only */
  int64_t s20[1] = {20};
  em_tensor *src = make(em_meta(), EM_FLOAT32, 1, s20);
  CHECK_OK(em_masked_scatter_(x, m, src));
  em_tensor_release(src);
  em_tensor_release(x);
  em_tensor_release(m);
  em_tensor_release(r);
}

TEST(mixed_devices_are_an_error) {
  em_tensor *x = make(em_meta(), EM_FLOAT32, 2, S45), *i = make(em_cpu(), EM_INT64, 1, S3),
            *c = make(em_cpu(), EM_FLOAT32, 2, S45), *out = NULL;
  const char *mm = "expected all tensors to be on the same device, but found at least two "
                   "devices, meta and cpu";
  CHECK_ERR(em_index_select(x, 1, i, &out), mm);
  CHECK_ERR(em_take(x, i, &out), mm);
  const em_tensor *ts[2] = {x, c};
  CHECK_ERR(em_cat(2, ts, 1, &out), mm);
  em_index_item item;
  memset(&item, 0, sizeof item);
  item.kind = EM_INDEX_TENSOR, item.tensor = i;
  CHECK_ERR(em_index_get(x, 1, &item, &out), mm);
  em_tensor_release(x);
  em_tensor_release(i);
  em_tensor_release(c);
}

int main(void) {
  RUN(meta_results_have_the_cpu_metadata);
  RUN(data_dependent_shapes_refuse_on_meta);
  RUN(mixed_devices_are_an_error);
  return CTEST_END();
}
