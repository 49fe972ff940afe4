/*
** test_kernels.c -- every device's kernel table is complete: each family
** of EM_KERNEL_FAMILIES (core/kernels.h) is registered for every device
** built in, and every entry of every family table is set (but the nn and
** sort entries core/kern_nn.h and kern_sort.h let a device leave to the
** ops). A family table
** is a struct of function pointers only (checked by its size), so it is
** read as an array of them. A new device adds its line to `devices`.
*/
#include "ctest.h"
#include "core/kernels.h"
#include "core/kern_copy.h"
#include "core/kern_creation.h"
#include "core/kern_ew.h"
#include "core/kern_index.h"
#include "core/kern_linalg.h"
#include "core/kern_nn.h"
#include "core/kern_optim.h"
#include "core/kern_random.h"
#include "core/kern_reduce.h"
#include "core/kern_sort.h"
#include "core/kern_cplx.h"

typedef void (*fn)(void);

/* NULL entries of one table of `size` bytes (-1: not a whole number of
** function pointers, so not a table of entries only) */
static int null_entries(const void *table, size_t size) {
  if (size % sizeof(fn) != 0) return -1;
  const fn *e = table;
  int n = 0;
  for (size_t i = 0; i < size / sizeof(fn); i++) n += e[i] == NULL;
  return n;
}
/* The nn entries core/kern_nn.h lets a device leave NULL (the ops compose
** them: ops/attention_math.c, ops/rnn_math.c), each NULL one of them */
static int optional_nulls(const em_nn_kernels *nn) {
  return (nn->sdpa == NULL) + (nn->sdpa_backward == NULL) + (nn->rnn_forward == NULL) +
         (nn->rnn_backward == NULL);
}
/* and the sort family's unique-along-a-dim pair (ops/unique_math.c), and
** LAPACK (ops/linalg_lapack.c stages it through the host) */
static int optional_sort_nulls(const em_sort_kernels *s) {
  return (s->unique_dim_sort == NULL) + (s->unique_dim_write == NULL);
}
static int optional_linalg_nulls(const em_linalg_kernels *l) {
  return (l->lapack == NULL) + (l->lapack_runs == NULL);
}

/* optional: how many of the optional nn entries this device leaves NULL */
static void check_device(em_device dev, em_device_type type, const char *name, int optional) {
  const em_kernels *k = em_kernels_for(dev);
  CHECK(k != NULL);
  if (!k) return;
  CHECK(k->type == type);
  CHECK(strcmp(k->name, name) == 0);
  CHECK(k->alloc != NULL && k->free != NULL);
  int families = 0;
#define CHECK_FAMILY(f)                                                  \
  families++;                                                            \
  CHECK(k->f != NULL);                                                   \
  if (k->f) {                                                            \
    int nulls = null_entries(k->f, sizeof *k->f);                        \
    if (strcmp(#f, "nn") == 0) nulls -= optional_nulls(k->nn);           \
    if (strcmp(#f, "sort") == 0) nulls -= optional_sort_nulls(k->sort);  \
    if (strcmp(#f, "linalg") == 0) nulls -= optional_linalg_nulls(k->linalg); \
    if (nulls != 0) printf("  %s: family %s: %d entries missing\n", name, #f, nulls); \
    CHECK(nulls == 0);                                                   \
  }
  EM_KERNEL_FAMILIES(CHECK_FAMILY)
  CHECK(k->nn != NULL && k->sort != NULL &&
        optional_nulls(k->nn) + optional_sort_nulls(k->sort) +
                optional_linalg_nulls(k->linalg) == optional);
#undef CHECK_FAMILY
  CHECK(families == 11);
}

TEST(cpu_table_is_complete) { check_device(em_cpu(), EM_CPU, "cpu", 0); }
TEST(meta_table_is_complete) { check_device(em_meta(), EM_META, "meta", 0); }

#ifdef EMBER_HAVE_CUDA
/* the cuda table is data: its completeness is checked with or without a GPU */
TEST(cuda_table_is_complete) {
  em_device cuda = {EM_CUDA, 0};
  check_device(cuda, EM_CUDA, "cuda", 6); /* attention, the rnn loop, unique(dim=) composed */
  CHECK(em_cuda_kernels.check != NULL);
}
#endif

TEST(a_device_without_kernels_fails_cleanly) {
  em_device cuda = {EM_CUDA, 0};
  const em_kernels *k = (const em_kernels *)1;
  em_tensor *t = NULL;
  int64_t two = 2, zero = 0;
  if (!em_cuda_built()) {
    CHECK(em_kernels_for(cuda) == NULL);  /* this build has no CUDA backend */
    CHECK(em_kernels_check("add", cuda, &k) != EM_OK && k == NULL);
    CHECK(strstr(em_last_error(), "add: device cuda:0 is not available: ember was built without CUDA") != NULL);
    CHECK(em_empty(1, &two, EM_FLOAT32, cuda, &t) != EM_OK && t == NULL);
    CHECK(strstr(em_last_error(), "cuda:0") != NULL);
  } else if (!em_cuda_available()) {
    /* built with CUDA, run without a driver or device: every way in says why */
    CHECK(em_kernels_for(cuda) != NULL);
    CHECK(em_cuda_device_count() == 0);
    CHECK(em_kernels_check("add", cuda, &k) != EM_OK && k == NULL);
    CHECK(strstr(em_last_error(), "add: CUDA is not available (") == em_last_error());
    CHECK(em_empty(1, &two, EM_FLOAT32, cuda, &t) != EM_OK && t == NULL);
    CHECK(strstr(em_last_error(), "CUDA is not available (") == em_last_error());
    CHECK(em_empty(1, &zero, EM_FLOAT32, cuda, &t) != EM_OK && t == NULL);  /* even empty */
    CHECK(strstr(em_last_error(), "CUDA is not available (") == em_last_error());
  } else {
    CHECK(em_kernels_check("add", cuda, &k) == EM_OK && k != NULL);
    em_device far = {EM_CUDA, 63};
    CHECK(em_kernels_check("add", far, &k) != EM_OK);
    CHECK(strstr(em_last_error(), "add: device cuda:63 is not available") != NULL);
  }
}

TEST(meta_storage_has_a_size_and_no_data) {
  em_tensor *t = NULL;
  int64_t sizes[2] = {1000, 1000};
  size_t live = em_memory_live_bytes();
  CHECK(em_empty(2, sizes, EM_FLOAT64, em_meta(), &t) == EM_OK);
  if (!t) return;
  CHECK(em_storage_nbytes(em_tensor_storage(t)) == 8000000);
  CHECK(em_storage_data(em_tensor_storage(t)) == NULL);
  CHECK(em_tensor_data(t) == NULL);
  CHECK(em_memory_live_bytes() == live);  /* nothing allocated, nothing counted */
  CHECK(em_tensor_check_values("item", t) != EM_OK);
  CHECK(strcmp(em_last_error(), "item: a meta tensor has no data") == 0);
  double v;
  CHECK(em_get_f64(t, 0, &v) != EM_OK);
  em_tensor_release(t);
}

int main(void) {
  RUN(cpu_table_is_complete);
  RUN(meta_table_is_complete);
#ifdef EMBER_HAVE_CUDA
  RUN(cuda_table_is_complete);
#endif
  RUN(a_device_without_kernels_fails_cleanly);
  RUN(meta_storage_has_a_size_and_no_data);
  return CTEST_END();
}
