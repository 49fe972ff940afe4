/* test_meta_reduce.c -- the reduce and sort families of the kernel table
** (core/kern_reduce.h, core/kern_sort.h): the public ops on meta tensors give the CPU's sizes,
** strides and dtypes without values, or the meta errors where the answer
** needs values (tests/lua/meta_reduce_spec.lua goes through every op). */
#include <stdlib.h>

#include "ctest.h"
#include "core/kernels.h"
#include "core/kern_reduce.h"
#include "core/kern_sort.h"

/* a [3, 4, 5] float32 tensor on dev, seen transposed to [5, 4, 3] */
static em_tensor *input(em_device dev) {
  int64_t sizes[3] = {3, 4, 5};
  em_tensor *t = NULL, *v = NULL;
  if (em_empty(3, sizes, EM_FLOAT32, dev, &t) != EM_OK) return NULL;
  if (dev.type == EM_CPU) em_fill_(t, (em_scalar){EM_SCALAR_FLOAT, 0, 1.5});
  em_transpose(t, 1, 3, &v);
  em_tensor_release(t);
  return v;
}

/* a and b agree on sizes, strides and dtype; b is on meta */
static int same_meta(const em_tensor *a, const em_tensor *b) {
  if (!a || !b || em_tensor_device(b).type != EM_META) return 0;
  if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->sizes[i] != b->sizes[i] || a->strides[i] != b->strides[i]) return 0;
  return 1;
}

TEST(ops_on_meta_have_the_cpu_metadata) {
  em_tensor *x[2] = {input(em_cpu()), input(em_meta())};
  CHECK(x[0] && x[1]);
  if (!x[0] || !x[1]) return;
  int64_t dims[2] = {1, 3};
  em_tensor *r[2][12] = {{NULL}};
  for (int d = 0; d < 2; d++) {
    CHECK_OK(em_reduce(EM_REDUCE_SUM, x[d], 2, dims, 1, EM_FLOAT64, &r[d][0]));
    CHECK_OK(em_reduce(EM_REDUCE_ANY, x[d], 0, NULL, 0, -1, &r[d][1]));
    CHECK_OK(em_var_mean(x[d], 1, dims, 1, 0, 1, &r[d][2], &r[d][3]));
    CHECK_OK(em_logsumexp(x[d], 1, dims + 1, 0, &r[d][4]));
    CHECK_OK(em_max_dim(x[d], 2, 1, 0, &r[d][5], &r[d][6]));
    CHECK_OK(em_softmax(x[d], -1, 1, -1, &r[d][7]));
    CHECK_OK(em_cumulative(x[d], 1, 0, EM_INT32, &r[d][8]));
    CHECK_OK(em_topk(x[d], 2, 1, 1, &r[d][9], &r[d][10]));
    CHECK_OK(em_median(x[d], 0, 0, 0, 0, &r[d][11], NULL));
  }
  for (int k = 0; k < 12; k++) {
    CHECK(same_meta(r[0][k], r[1][k]));
    em_tensor_release(r[0][k]);
    em_tensor_release(r[1][k]);
  }
  em_tensor_release(x[0]);
  em_tensor_release(x[1]);
}

TEST(answers_that_need_values_refuse_on_meta) {
  em_tensor *m = input(em_meta()), *c = input(em_cpu());
  em_tensor *v = NULL;
  int r = -1;
  CHECK_ERR(em_unique(m, &v, NULL, NULL), "unique: not supported on the meta device");
  CHECK_ERR(em_unique_dim(m, 2, &v, NULL, NULL), "unique: not supported on the meta device");
  CHECK_ERR(em_equal(m, m, &r), "equal: a meta tensor has no data");
  CHECK_ERR(em_allclose(m, m, 1e-5, 1e-8, 0, &r), "allclose: a meta tensor has no data");
  CHECK_ERR(em_equal(m, c, &r), "equal: expected all tensors to be on the same device, but "
                                "found at least two devices, meta and cpu");
  CHECK(v == NULL && r == -1);
  em_tensor_release(m);
  em_tensor_release(c);
}

int main(void) {
  RUN(ops_on_meta_have_the_cpu_metadata);
  RUN(answers_that_need_values_refuse_on_meta);
  return CTEST_END();
}
