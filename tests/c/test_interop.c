/* test_interop.c -- DLPack deleters run exactly once (export and import,
** success and failure), from_blob-style wraps of foreign memory, and the
** .npy / ember-format codecs on damaged input (every truncation). */
#include <dlpack/dlpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ctest.h"
#include "core/core.h"

/* -- DLPack export --------------------------------------------------------- */

TEST(export_keeps_storage_until_consumer_deletes) {
  int64_t sizes[2] = {3, 4};
  em_tensor *t, *row;
  CHECK_OK(em_zeros(2, sizes, EM_FLOAT32, em_cpu(), &t));
  int64_t rs[1] = {4}, rst[1] = {1};
  CHECK_OK(em_as_strided(t, 1, rs, rst, 4, &row));  /* row 2 */
  em_storage *s = em_tensor_storage(t);
  DLManagedTensor *m;
  CHECK_OK(em_to_dlpack(row, &m));
  CHECK(em_storage_refcount(s) == 3);
  CHECK(m->dl_tensor.ndim == 1 && m->dl_tensor.shape[0] == 4 && m->dl_tensor.strides[0] == 1);
  CHECK(m->dl_tensor.dtype.code == kDLFloat && m->dl_tensor.dtype.bits == 32 &&
        m->dl_tensor.dtype.lanes == 1);
  CHECK(m->dl_tensor.device.device_type == kDLCPU);
  CHECK(m->dl_tensor.data == (char *)em_storage_data(s) + 4 * sizeof(float));
  size_t live = em_memory_live_bytes();
  em_tensor_release(row);
  em_tensor_release(t);
  CHECK(em_storage_refcount(s) == 1);            /* only the capsule holds it */
  CHECK(em_memory_live_bytes() == live);
  ((float *)m->dl_tensor.data)[3] = 7.0f;         /* still valid memory */
  m->deleter(m);
  CHECK(em_memory_live_bytes() == live - 12 * sizeof(float));
}

/* -- DLPack import ---------------------------------------------------------- */

typedef struct {
  DLManagedTensor m;
  int64_t shape[3], strides[3];
  double data[12];
  int *deleted;
} producer;

static void producer_deleter(DLManagedTensor *self) {
  producer *p = self->manager_ctx;
  (*p->deleted)++;
  free(p);
}

static producer *make_producer(int *deleted) {
  producer *p = calloc(1, sizeof *p);
  for (int i = 0; i < 12; i++) p->data[i] = i;
  p->shape[0] = 3; p->shape[1] = 4;
  p->strides[0] = 4; p->strides[1] = 1;
  p->m.dl_tensor.data = p->data;
  p->m.dl_tensor.device.device_type = kDLCPU;
  p->m.dl_tensor.ndim = 2;
  p->m.dl_tensor.dtype.code = kDLFloat;
  p->m.dl_tensor.dtype.bits = 64;
  p->m.dl_tensor.dtype.lanes = 1;
  p->m.dl_tensor.shape = p->shape;
  p->m.dl_tensor.strides = p->strides;
  p->m.manager_ctx = p;
  p->m.deleter = producer_deleter;
  p->deleted = deleted;
  return p;
}

TEST(import_calls_producer_deleter_once_after_last_view) {
  int deleted = 0;
  producer *p = make_producer(&deleted);
  em_tensor *t, *view;
  CHECK_OK(em_from_dlpack(&p->m, &t));
  CHECK(em_tensor_data(t) == (void *)p->data);   /* no copy */
  CHECK(em_tensor_numel(t) == 12 && em_tensor_dtype(t) == EM_FLOAT64);
  int64_t vs[1] = {3}, vst[1] = {4};
  CHECK_OK(em_as_strided(t, 1, vs, vst, 2, &view)); /* column 3 */
  double x;
  CHECK_OK(em_get_f64(view, 2, &x));
  CHECK(x == 10.0);
  em_tensor_release(t);
  CHECK(deleted == 0);
  em_tensor_release(view);
  CHECK(deleted == 1);
}

TEST(import_byte_offset_and_compact_strides) {
  int deleted = 0;
  producer *p = make_producer(&deleted);
  p->m.dl_tensor.strides = NULL;                  /* compact row-major */
  p->m.dl_tensor.byte_offset = 4 * sizeof(double);
  p->shape[0] = 2;
  em_tensor *t;
  CHECK_OK(em_from_dlpack(&p->m, &t));
  CHECK(em_tensor_strides(t)[0] == 4 && em_tensor_strides(t)[1] == 1);
  double x;
  CHECK_OK(em_get_f64(t, 0, &x));
  CHECK(x == 4.0);
  em_tensor_release(t);
  CHECK(deleted == 1);
}

TEST(import_failures_leave_ownership_with_caller) {
  int deleted = 0;
  producer *p = make_producer(&deleted);
  em_tensor *t = NULL;
  p->m.dl_tensor.device.device_type = kDLCUDA;
  CHECK_ERR(em_from_dlpack(&p->m, &t), "unsupported device cuda:0");
  p->m.dl_tensor.device.device_type = kDLCPU;
  p->m.dl_tensor.dtype.lanes = 4;
  CHECK_ERR(em_from_dlpack(&p->m, &t), "unsupported dtype (code 2, bits 64, lanes 4)");
  p->m.dl_tensor.dtype.lanes = 1;
  p->m.dl_tensor.dtype.code = kDLOpaqueHandle;  /* complex is supported (issue 19) */
  CHECK_ERR(em_from_dlpack(&p->m, &t), "unsupported dtype");
  p->m.dl_tensor.dtype.code = kDLFloat;
  p->strides[1] = -1;
  CHECK_ERR(em_from_dlpack(&p->m, &t), "negative strides [4, -1] are not supported");
  p->strides[1] = 1;
  p->m.dl_tensor.ndim = 17;
  CHECK_ERR(em_from_dlpack(&p->m, &t), "17 dimensions");
  p->m.dl_tensor.ndim = 2;
  p->m.dl_tensor.byte_offset = 3;
  CHECK_ERR(em_from_dlpack(&p->m, &t), "is not aligned for float64");
  p->m.dl_tensor.byte_offset = 0;
  p->shape[0] = -3;
  CHECK_ERR(em_from_dlpack(&p->m, &t), "negative dimension");
  p->shape[0] = 3;
  CHECK_ERR(em_from_dlpack(NULL, &t), "NULL DLManagedTensor");
  CHECK(t == NULL);
  CHECK(deleted == 0);
  p->m.deleter(&p->m);                            /* still ours to release */
  CHECK(deleted == 1);
}

TEST(export_import_round_trip_every_dtype) {
  for (int d = 0; d < EM_NUM_DTYPES; d++) {
    int64_t sizes[2] = {2, 3};
    em_tensor *t, *u;
    em_scalar one = {EM_SCALAR_INT, 1, 1};
    CHECK_OK(em_full(2, sizes, one, (em_dtype)d, em_cpu(), &t));
    DLManagedTensor *m;
    CHECK_OK(em_to_dlpack(t, &m));
    CHECK_OK(em_from_dlpack(m, &u));
    CHECK(em_tensor_dtype(u) == (em_dtype)d);
    CHECK(em_tensor_data(u) == em_tensor_data(t));
    CHECK(em_storage_refcount(em_tensor_storage(t)) == 2); /* t + the capsule */
    em_tensor_release(u);                         /* runs the export deleter */
    CHECK(em_storage_refcount(em_tensor_storage(t)) == 1);
    em_tensor_release(t);
  }
}

/* -- from_blob-style wraps --------------------------------------------------- */

static int blob_deleted;
static void blob_deleter(void *ctx, void *data, size_t nbytes) {
  blob_deleted++;
  CHECK(ctx == data && nbytes == 6 * sizeof(int32_t));
}

TEST(wrap_strided_views_of_a_host_buffer) {
  int32_t buf[6] = {0, 1, 2, 3, 4, 5};
  blob_deleted = 0;
  em_storage *s;
  CHECK_OK(em_storage_wrap(buf, sizeof buf, em_cpu(), blob_deleter, buf, &s));
  int64_t sizes[2] = {3, 2}, strides[2] = {1, 3};  /* the transpose of 2x3 */
  em_tensor *t;
  CHECK_OK(em_tensor_new(s, 0, 2, sizes, strides, EM_INT32, &t));
  int64_t v;
  CHECK_OK(em_get_i64(t, 1, &v));                 /* element (1, 2) = buf[3] */
  CHECK(v == 3);
  em_scalar nine = {EM_SCALAR_INT, 9, 9};
  CHECK_OK(em_set_flat(t, 5, nine));              /* element (3, 2) = buf[5] */
  CHECK(buf[5] == 9);
  int64_t big[2] = {3, 3};
  em_tensor *bad = NULL;
  CHECK_ERR(em_tensor_new(s, 0, 2, big, strides, EM_INT32, &bad), "reaches outside the storage");
  CHECK_ERR(em_tensor_new(s, 1, 2, sizes, strides, EM_INT64, &bad), "reaches outside");
  CHECK(bad == NULL);
  em_storage_release(s);
  CHECK(blob_deleted == 0);
  em_tensor_release(t);
  CHECK(blob_deleted == 1);
}

TEST(wrap_refuses_null_data) {
  em_storage *s = NULL;
  CHECK_ERR(em_storage_wrap(NULL, 16, em_cpu(), blob_deleter, NULL, &s), "NULL data");
  CHECK(s == NULL);
}

/* -- codecs on damaged input --------------------------------------------------- */

TEST(npy_every_truncation_fails_cleanly) {
  int64_t sizes[2] = {3, 5};
  em_tensor *t;
  em_scalar v = {EM_SCALAR_FLOAT, 0, 1.25};
  CHECK_OK(em_full(2, sizes, v, EM_FLOAT64, em_cpu(), &t));
  void *buf;
  size_t len;
  CHECK_OK(em_npy_encode(t, &buf, &len));
  CHECK(len == 128 + 15 * 8);
  for (size_t n = 0; n < len; n++) {
    em_tensor *u = NULL;
    em_status st = em_npy_decode(buf, n, &u);
    CHECK(st != EM_OK && u == NULL && strncmp(em_last_error(), "load_npy: ", 10) == 0);
  }
  em_tensor *u;
  CHECK_OK(em_npy_decode(buf, len, &u));
  double x;
  CHECK_OK(em_get_f64(u, 14, &x));
  CHECK(x == 1.25);
  em_tensor_release(u);
  em_free(buf);
  em_tensor_release(t);
}

TEST(npz_garbage_fails_cleanly) {
  static const char *inputs[] = {"", "PK", "PK\5\6", "PK\5\6xxxxxxxxxxxxxxxxxxxxxxxxxx"};
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
    em_npz *z = NULL;
    CHECK(em_npz_load_buffer(inputs[i], strlen(inputs[i]), &z) != EM_OK && z == NULL);
  }
  /* an end record that points its directory past the end */
  unsigned char eocd[22] = {'P', 'K', 5, 6, 0, 0, 0, 0, 1, 0, 1, 0, 46, 0, 0, 0, 255, 255, 0, 0, 0, 0};
  em_npz *z = NULL;
  CHECK_ERR(em_npz_load_buffer(eocd, sizeof eocd, &z), "corrupt central directory");
}

TEST(ember_format_shares_storages_and_survives_truncation) {
  char path[] = "/tmp/ember_test_interop_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  int64_t sizes[2] = {4, 4};
  em_tensor *base, *col;
  CHECK_OK(em_zeros(2, sizes, EM_INT16, em_cpu(), &base));
  int64_t cs[1] = {4}, cst[1] = {4};
  CHECK_OK(em_as_strided(base, 1, cs, cst, 1, &col));
  const em_tensor *ts[2] = {base, col};
  CHECK_OK(em_save(path, 2, ts, "meta", 4));
  em_loaded *f;
  CHECK_OK(em_load(path, &f));
  CHECK(em_loaded_count(f) == 2);
  em_tensor *b2 = em_loaded_tensor(f, 0), *c2 = em_loaded_tensor(f, 1);
  CHECK(em_tensor_storage(b2) == em_tensor_storage(c2));
  CHECK(em_tensor_offset(c2) == 1 && em_tensor_strides(c2)[0] == 4);
  size_t ml;
  CHECK(memcmp(em_loaded_meta(f, &ml), "meta", 4) == 0 && ml == 4);
  em_loaded_free(f);
  /* the whole file in memory, then every prefix */
  FILE *fp = fopen(path, "rb");
  char buf[4096];
  size_t len = fread(buf, 1, sizeof buf, fp);
  fclose(fp);
  remove(path);
  CHECK(len > 100 && len < sizeof buf);
  for (size_t n = 0; n < len; n++) {
    em_loaded *g = NULL;
    CHECK(em_load_buffer(buf, n, &g) != EM_OK && g == NULL);
  }
  em_tensor_release(col);
  em_tensor_release(base);
}

int main(void) {
  RUN(export_keeps_storage_until_consumer_deletes);
  RUN(import_calls_producer_deleter_once_after_last_view);
  RUN(import_byte_offset_and_compact_strides);
  RUN(import_failures_leave_ownership_with_caller);
  RUN(export_import_round_trip_every_dtype);
  RUN(wrap_strided_views_of_a_host_buffer);
  RUN(wrap_refuses_null_data);
  RUN(npy_every_truncation_fails_cleanly);
  RUN(npz_garbage_fails_cleanly);
  RUN(ember_format_shares_storages_and_survives_truncation);
  return CTEST_END();
}
