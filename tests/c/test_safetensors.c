/* test_safetensors.c -- the .safetensors C API's ownership rules: a mapped
** load makes every tensor a view of one storage over the mapping, which
** outlives the result and goes with the last view; a failed load or save
** hands out nothing; saving writes the reference layout for any strides. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ctest.h"
#include "core/core.h"

static char path[64];

static em_scalar I(int64_t v) { return (em_scalar){EM_SCALAR_INT, v, 0}; }

static void tmp_path(void) {
  snprintf(path, sizeof path, "/tmp/test_safetensors_%d.safetensors", (int)getpid());
}

static size_t read_file(const char *p, unsigned char *buf, size_t cap) {
  FILE *f = fopen(p, "rb");
  if (!f) return 0;
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

/* Three tensors: a float32 matrix, its transpose (not contiguous) and an int16 vector. */
static void save_three(void) {
  int64_t sizes[2] = {2, 3};
  em_tensor *a, *t, *v;
  CHECK_OK(em_arange(I(0), I(6), I(1), EM_FLOAT32, em_cpu(), &a));
  em_tensor *m;
  CHECK_OK(em_view(a, 2, sizes, &m));
  CHECK_OK(em_transpose(m, 1, 2, &t));
  CHECK_OK(em_arange(I(-2), I(2), I(1), EM_INT16, em_cpu(), &v));
  const char *names[] = {"m", "t", "v"};
  const em_tensor *ts[] = {m, t, v};
  const char *keys[] = {"format"}, *vals[] = {"pt"};
  CHECK_OK(em_safetensors_save(path, 3, names, ts, 1, keys, vals));
  em_tensor_release(a);
  em_tensor_release(m);
  em_tensor_release(t);
  em_tensor_release(v);
}

TEST(mapped_tensors_share_one_storage_that_outlives_the_result) {
  save_three();
  em_safetensors *f = NULL;
  CHECK_OK(em_safetensors_load(path, EM_NPY_MMAP_COPY, &f));
  if (!f) return;
  CHECK(em_safetensors_count(f) == 3);
  /* data order: F32 (m, t by name), then I16 */
  CHECK(strcmp(em_safetensors_name(f, 0), "m") == 0);
  CHECK(strcmp(em_safetensors_name(f, 1), "t") == 0);
  CHECK(strcmp(em_safetensors_name(f, 2), "v") == 0);
  CHECK(em_safetensors_name(f, 3) == NULL && em_safetensors_tensor(f, -1) == NULL);
  CHECK(em_safetensors_meta_count(f) == 1);
  CHECK(strcmp(em_safetensors_meta_key(f, 0), "format") == 0);
  CHECK(strcmp(em_safetensors_meta_value(f, 0), "pt") == 0);
  em_storage *s = em_tensor_storage(em_safetensors_tensor(f, 0));
  for (int64_t i = 0; i < 3; i++) CHECK(em_tensor_storage(em_safetensors_tensor(f, i)) == s);
  CHECK(em_storage_refcount(s) == 3);
  em_tensor *t = em_safetensors_tensor(f, 1);
  em_tensor_retain(t);
  em_safetensors_free(f);
  CHECK(em_storage_refcount(s) == 1);
  /* the transpose was written as its contiguous copy: t = [[0,3],[1,4],[2,5]] */
  CHECK(em_tensor_ndim(t) == 2 && em_tensor_sizes(t)[0] == 3 && em_tensor_sizes(t)[1] == 2);
  double x;
  CHECK_OK(em_get_f64(t, 1, &x));
  CHECK(x == 3.0);
  CHECK_OK(em_get_f64(t, 4, &x));
  CHECK(x == 2.0);
  /* copy-on-write: a write stays in memory */
  CHECK_OK(em_set_flat(t, 0, I(99)));
  em_tensor_release(t);  /* unmaps */
  em_safetensors *g = NULL;
  CHECK_OK(em_safetensors_load(path, EM_NPY_READ, &g));
  if (g) {
    CHECK_OK(em_get_f64(em_safetensors_tensor(g, 1), 0, &x));
    CHECK(x == 0.0);
    /* copies: one storage each */
    CHECK(em_tensor_storage(em_safetensors_tensor(g, 0)) !=
          em_tensor_storage(em_safetensors_tensor(g, 1)));
    em_safetensors_free(g);
  }
  unlink(path);
}

TEST(saved_bytes_follow_the_reference_layout) {
  save_three();
  unsigned char buf[1024];
  size_t n = read_file(path, buf, sizeof buf);
  static const char header[] =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"m\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"t\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[24,48]},"
      "\"v\":{\"dtype\":\"I16\",\"shape\":[4],\"data_offsets\":[48,56]}}";
  size_t hl = strlen(header), padded = (hl + 7) / 8 * 8;
  CHECK(n == 8 + padded + 56);
  CHECK(buf[0] == padded && buf[1] == 0 && buf[7] == 0);
  CHECK(memcmp(buf + 8, header, hl) == 0);
  for (size_t i = hl; i < padded; i++) CHECK(buf[8 + i] == ' ');
  float tr[6];
  memcpy(tr, buf + 8 + padded + 24, sizeof tr);
  CHECK(tr[0] == 0 && tr[1] == 3 && tr[2] == 1 && tr[3] == 4 && tr[4] == 2 && tr[5] == 5);
  int16_t v[4];
  memcpy(v, buf + 8 + padded + 48, sizeof v);
  CHECK(v[0] == -2 && v[3] == 1);
  /* every truncation fails, handing out nothing */
  for (size_t k = 0; k < n; k++) {
    em_safetensors *f = NULL;
    CHECK(em_safetensors_decode(buf, k, &f) != EM_OK && f == NULL);
    CHECK(strncmp(em_last_error(), "load_safetensors: ", 18) == 0);
  }
  unlink(path);
}

TEST(failed_saves_write_nothing) {
  em_tensor *a, *meta;
  int64_t two = 2;
  CHECK_OK(em_zeros(1, &two, EM_FLOAT32, em_cpu(), &a));
  CHECK_OK(em_zeros(1, &two, EM_FLOAT32, em_meta(), &meta));
  const char *dup[] = {"x", "x"};
  const em_tensor *aa[] = {a, a};
  CHECK_ERR(em_safetensors_save(path, 2, dup, aa, 0, NULL, NULL), "two tensors named 'x'");
  const char *mk[] = {"k", "k"}, *mv[] = {"1", "2"};
  CHECK_ERR(em_safetensors_save(path, 1, dup, aa, 2, mk, mv), "two metadata entries with key 'k'");
  const char *mname[] = {"__metadata__"};
  CHECK_ERR(em_safetensors_save(path, 1, mname, aa, 0, NULL, NULL), "cannot be named '__metadata__'");
  const em_tensor *mt[] = {meta};
  CHECK_ERR(em_safetensors_save(path, 1, dup, mt, 0, NULL, NULL),
            "save_safetensors: tensor 'x': a meta tensor has no data");
  CHECK_ERR(em_safetensors_save(path, -1, dup, aa, 0, NULL, NULL), "-1 tensors");
  CHECK(access(path, F_OK) != 0);
  em_tensor_release(a);
  em_tensor_release(meta);
}

int main(void) {
  tmp_path();
  RUN(mapped_tensors_share_one_storage_that_outlives_the_result);
  RUN(saved_bytes_follow_the_reference_layout);
  RUN(failed_saves_write_nothing);
  return CTEST_END();
}
