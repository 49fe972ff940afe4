/*
** test_torch.c -- the PyTorch checkpoint reader and writer (io/torch.c):
** the pickle machine on hand-made pickles (values, the memo, cycles, deep
** nesting without recursion, every refusal), tensors over storages named by
** persistent ids, and em_torch_save read back with its sharing.
*/
#define _GNU_SOURCE /* memmem, mkstemps */
#include <stdlib.h>
#include <unistd.h>

#include "core/core.h"
#include "ctest.h"
#include "io/zip.h"

/* -- Archives in memory ------------------------------------------------------ */

typedef struct {
  const char *name;
  const void *data;
  size_t len;
} rec;

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc(n > 0 ? (size_t)n : 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* A torch.save-shaped archive "t/data.pkl" + records, in a malloc'd buffer. */
static char *make_archive(const void *pkl, size_t plen, const rec *recs, int n, size_t *len) {
  char path[] = "/tmp/ember_test_torch_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  em_zip_writer w;
  em_zipw_open(&w, "test", path, EM_ZIP_TORCH);
  em_zipw_add(&w, "t/", "data.pkl", pkl, plen, 0);
  for (int i = 0; i < n; i++) em_zipw_add(&w, "t/", recs[i].name, recs[i].data, recs[i].len, 0);
  em_zipw_add(&w, "t/", "version", "3\n", 2, 0);
  char *b = em_zipw_close(&w) == EM_OK ? slurp(path, len) : NULL;
  unlink(path);
  return b;
}

static em_status load_pickle(const char *pkl, size_t plen, em_pytree **out) {
  size_t len;
  char *b = make_archive(pkl, plen, NULL, 0, &len);
  em_status st = b ? em_torch_load_buffer(b, len, out) : EM_E_RUNTIME;
  free(b);
  return st;
}
#define PKL(s) s, sizeof(s) - 1

static em_pyvalue get(const em_pytree *t, int64_t node) {
  em_pyvalue v;
  em_pytree_get(t, node, &v);
  return v;
}

/* -- The machine ------------------------------------------------------------------ */

TEST(values_of_every_opcode_torch_writes) {
  /* {'a': [1, -2, 70000, 2**40, -2**63, 2**70, 2.5, None, True, False],
  **  'b': ('x', b'yz'), 0: {}} with the memo, MARK/SETITEMS and APPENDS */
  const char pkl[] =
      "\x80" "\x02" "}q\x00" "(X\x01" "\x00" "\x00" "\x00" "aq\x01" "]q\x02" "(K\x01" "J\xfe" "\xff" "\xff" "\xff" "Jp\x11" "\x01" "\x00" "\x8a" "\x06" "\x00" "\x00" "\x00" "\x00" "\x00" "\x01" "\x8a" "\x08" "\x00" "\x00" "\x00" "\x00" "\x00" "\x00" "\x00" "\x80" "\x8a" "\x09" "\x00" "\x00" "\x00" "\x00" "\x00" "\x00" "\x00" "\x00" "@G@\x04" "\x00" "\x00" "\x00" "\x00" "\x00" "\x00" "N\x88" "\x89" "eX\x01" "\x00" "\x00" "\x00" "bq\x03" "\x8c" "\x01" "xC\x02" "yz\x86" "q\x04" "K\x00" "}u.";
  em_pytree *t = NULL;
  CHECK_OK(load_pickle(pkl, sizeof pkl - 1, &t));
  if (!t) return;
  int64_t root = em_pytree_root(t);
  em_pyvalue d = get(t, root);
  CHECK(d.kind == EM_PY_DICT && d.n == 3);
  em_pyvalue k0 = get(t, em_pytree_item(t, root, 0));
  CHECK(k0.kind == EM_PY_STR && strcmp(k0.s, "a") == 0);
  int64_t list = em_pytree_item(t, root, 1);
  em_pyvalue l = get(t, list);
  CHECK(l.kind == EM_PY_LIST && l.n == 10);
  CHECK(get(t, em_pytree_item(t, list, 0)).i == 1);
  CHECK(get(t, em_pytree_item(t, list, 1)).i == -2);
  CHECK(get(t, em_pytree_item(t, list, 2)).i == 70000);
  CHECK(get(t, em_pytree_item(t, list, 3)).i == (int64_t)1 << 40);
  CHECK(get(t, em_pytree_item(t, list, 4)).i == INT64_MIN);
  em_pyvalue huge = get(t, em_pytree_item(t, list, 5));
  CHECK(huge.kind == EM_PY_FLOAT && huge.f == 1180591620717411303424.0);
  CHECK(get(t, em_pytree_item(t, list, 6)).f == 2.5);
  CHECK(get(t, em_pytree_item(t, list, 7)).kind == EM_PY_NONE);
  CHECK(get(t, em_pytree_item(t, list, 8)).i == 1 && get(t, em_pytree_item(t, list, 9)).i == 0);
  int64_t tup = em_pytree_item(t, root, 3);
  CHECK(get(t, tup).kind == EM_PY_TUPLE && get(t, tup).n == 2);
  em_pyvalue by = get(t, em_pytree_item(t, tup, 1));
  CHECK(by.kind == EM_PY_BYTES && by.len == 2 && memcmp(by.s, "yz", 2) == 0);
  CHECK(get(t, em_pytree_item(t, root, 4)).i == 0);
  CHECK(get(t, em_pytree_item(t, root, 5)).kind == EM_PY_DICT);
  CHECK(em_pytree_item(t, root, 6) == -1);
  em_pytree_free(t);
}

TEST(protocol_1_text_ints) {
  /* [True, False, 7, -2**63, 2**62, 10**30] as protocol 1 writes them */
  const char pkl[] = "](I01\x0a" "I00\x0a" "I7\x0a" "L-9223372036854775808L\x0a"
                     "L4611686018427387904L\x0a" "L1000000000000000000000000000000L\x0a" "e.";
  em_pytree *t = NULL;
  CHECK_OK(load_pickle(pkl, sizeof pkl - 1, &t));
  if (!t) return;
  int64_t l = em_pytree_root(t);
  CHECK(get(t, l).kind == EM_PY_LIST && get(t, l).n == 6);
  CHECK(get(t, em_pytree_item(t, l, 0)).kind == EM_PY_BOOL && get(t, em_pytree_item(t, l, 0)).i == 1);
  CHECK(get(t, em_pytree_item(t, l, 1)).kind == EM_PY_BOOL && get(t, em_pytree_item(t, l, 1)).i == 0);
  CHECK(get(t, em_pytree_item(t, l, 2)).kind == EM_PY_INT && get(t, em_pytree_item(t, l, 2)).i == 7);
  CHECK(get(t, em_pytree_item(t, l, 3)).i == INT64_MIN);
  CHECK(get(t, em_pytree_item(t, l, 4)).i == (int64_t)1 << 62);
  CHECK(get(t, em_pytree_item(t, l, 5)).kind == EM_PY_FLOAT && get(t, em_pytree_item(t, l, 5)).f == 1e30);
  em_pytree_free(t);
}

TEST(protocol_4_frames_memoize_and_stack_ops) {
  /* PROTO 4, FRAME, MEMOIZE, DUP, POP, POP_MARK, LIST, DICT, STACK_GLOBAL */
  const char pkl[] =
      "\x80" "\x04" "\x95" "\x10" "\x00" "\x00" "\x00" "\x00" "\x00" "\x00" "\x00" "(K\x01" "K\x02" "l\x94" "K\x09" "20(K\x05" "1(\x8c" "\x01" "k\x94" "h\x00" "d\x8c" "\x0b" "collections\x8c" "\x0b" "OrderedDict\x93" ")R\x86" ".";
  em_pytree *t = NULL;
  CHECK_OK(load_pickle(pkl, sizeof pkl - 1, &t));
  if (!t) return;
  int64_t root = em_pytree_root(t);
  CHECK(get(t, root).kind == EM_PY_TUPLE && get(t, root).n == 2);
  int64_t d = em_pytree_item(t, root, 0);
  CHECK(get(t, d).kind == EM_PY_DICT && get(t, d).n == 1);
  CHECK(get(t, em_pytree_item(t, d, 1)).kind == EM_PY_LIST);
  CHECK(get(t, em_pytree_item(t, root, 1)).kind == EM_PY_ODICT);
  em_pytree_free(t);
}

TEST(a_list_that_contains_itself_loads_and_saves) {
  em_pytree *t = NULL;
  CHECK_OK(load_pickle(PKL("\x80" "\x02" "]q\x00" "h\x00" "a."), &t));
  if (!t) return;
  int64_t root = em_pytree_root(t);
  CHECK(em_pytree_item(t, root, 0) == root);
  char path[] = "/tmp/ember_test_torch_XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  CHECK_OK(em_torch_save(path, t));
  em_pytree_free(t);
  t = NULL;
  CHECK_OK(em_torch_load(path, &t));
  unlink(path);
  if (!t) return;
  root = em_pytree_root(t);
  CHECK(get(t, root).kind == EM_PY_LIST && em_pytree_item(t, root, 0) == root);
  em_pytree_free(t);
}

TEST(deep_nesting_needs_no_recursion) {
  enum { DEPTH = 100000 };
  char *pkl = malloc(2 + 2 * DEPTH + 1);
  size_t n = 0;
  pkl[n++] = '\x80';
  pkl[n++] = 2;
  for (int i = 0; i < DEPTH; i++) pkl[n++] = ']';
  for (int i = 1; i < DEPTH; i++) pkl[n++] = 'a';
  pkl[n++] = '.';
  em_pytree *t = NULL;
  CHECK_OK(load_pickle(pkl, n, &t));
  em_pytree_free(t);
  free(pkl);
}

TEST(refusals_name_what_they_refuse) {
  static const struct {
    const char *pkl;
    size_t len;
    const char *needle;
  } bad[] = {
      {PKL("\x80" "\x02" "cos\x0a" "system\x0a" "X\x02" "\x00" "\x00" "\x00" "ls\x85" "R."), "refusing global 'os.system'"},
      {PKL("\x80" "\x02" "ctorch\x0a" "ComplexHalfStorage\x0a" "."), "torch.ComplexHalfStorage is not supported"},
      {PKL("\x80" "\x02" "ctorch._utils\x0a" "_rebuild_sparse_tensor\x0a" "."), "global 'torch._utils._rebuild_sparse_tensor' is not supported"},
      {PKL("\x80" "\x02" "ctorch.nn.modules.linear\x0a" "Linear\x0a" "."), "save model.state_dict() instead"},
      {PKL("\x80" "\x02" "(X\x02" "\x00" "\x00" "\x00" "lsios\x0a" "system\x0a" "."), "refusing pickle opcode INST"},
      {PKL("\x80" "\x02" "I1x\x0a" "."), "an INT that is not a number"},
      {PKL("\x80" "\x02" "L\x0a" "."), "a LONG that is not a number"},
      {PKL("\x80" "\x02" "I5"), "truncated"},
      {PKL("\x80" "\x02" "F1.5\x0a" "."), "pickle opcode FLOAT (protocol 0)"},
      {PKL("\x80" "\x04" "\x8f" "."), "pickle opcode EMPTY_SET (a Python set)"},
      {PKL("\x80" "\x02" "c__builtin__\x0a" "set\x0a" "."), "the file holds a Python set"},
      {PKL("\x80" "\x02" "\xfe" "."), "unsupported opcode 0xfe"},
      {PKL("\x80" "\x02" "K\x01" ")R."), "calling a int"},
      {PKL("\x80" "\x02" "]K\x01" "K\x02" "s."), "setting items of a list"},
      {PKL("\x80" "\x02" "}K\x01" "a."), "appending to a dict"},
      {PKL("\x80" "\x02" "]}b."), "BUILD of a list"},
      {PKL("\x80" "\x02" "K\x01" "\x86" "."), "stack underflow"},
      {PKL("\x80" "\x02" "(K\x01" "\x86" "."), "stack underflow"},
      {PKL("\x80" "\x02" "t."), "no mark"},
      {PKL("\x80" "\x02" "h\x05" "."), "memo entry missing"},
      {PKL("\x80" "\x02" "K\x01" "r\xff" "\xff" "\xff" "\x7f" "."), "memo index out of range"},
      {PKL("\x80" "\x02" "."), "STOP with an empty stack"},
      {PKL("\x80" "\x02" "K\x01"), "no STOP"},
      {PKL("\x80" "\x02" "X\xff" "\xff" "\xff" "\x7f"), "truncated"},
      {PKL("\x80" "\x09" "."), "unknown protocol"},
      {PKL("\x80" "\x02" "(K\x01" "K\x02" "K\x03" "d."), "an odd number of items"},
      {PKL("\x80" "\x02" "K\x01" "Q."), "a persistent id that is not"},
      {PKL("\x80" "\x02" "ccollections\x0a" "OrderedDict\x0a" "."), "the Python object"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    em_pytree *t = NULL;
    em_status st = load_pickle(bad[i].pkl, bad[i].len, &t);
    if (st == EM_OK) {
      /* a class left as a value loads; the binding refuses it */
      em_pyvalue v = get(t, em_pytree_root(t));
      CHECK(v.kind == EM_PY_OTHER && strcmp(v.s, "collections.OrderedDict") == 0 &&
            strcmp(bad[i].needle, "the Python object") == 0);
      em_pytree_free(t);
      continue;
    }
    CHECK(t == NULL);
    if (!strstr(em_last_error(), bad[i].needle)) {
      printf("  case %zu: expected \"%s\", got \"%s\"\n", i, bad[i].needle, em_last_error());
      CHECK(0);
    }
  }
}

TEST(every_truncation_of_a_pickle_fails_cleanly) {
  const char pkl[] = "\x80" "\x02" "}q\x00" "(X\x01" "\x00" "\x00" "\x00" "aq\x01" "]q\x02" "(K\x01" "G@\x04" "\x00" "\x00" "\x00" "\x00" "\x00" "\x00" "N\x88" "eX\x01" "\x00" "\x00" "\x00" "bh\x02" "u.";
  for (size_t n = 0; n < sizeof pkl - 1; n++) {
    em_pytree *t = NULL;
    CHECK(load_pickle(pkl, n, &t) != EM_OK && t == NULL);
  }
  em_pytree *t = NULL;
  CHECK_OK(load_pickle(pkl, sizeof pkl - 1, &t));
  em_pytree_free(t);
}

/* -- Tensors -------------------------------------------------------------------- */

/* _rebuild_tensor_v2(('storage', torch.FloatStorage, '0', 'cpu', NUMEL),
** OFFSET, (2, 2), (S0, 1), RG, OrderedDict()) */
static em_status load_tensor_pickle(const char *storage, int numel, int offset, int s0, int rg,
                                    const float *data, size_t dlen, em_pytree **out) {
  char pkl[512], *p = pkl;
#define PUTS(lit) (memcpy(p, lit, sizeof lit - 1), p += sizeof lit - 1)
  PUTS("\x80" "\x02" "ctorch._utils\x0a" "_rebuild_tensor_v2\x0a" "((X\x07" "\x00" "\x00" "\x00" "storagectorch\x0a");
  memcpy(p, storage, strlen(storage));
  p += strlen(storage);
  PUTS("\x0a" "X\x01" "\x00" "\x00" "\x00" "0X\x03" "\x00" "\x00" "\x00" "cpuK");
  *p++ = (char)numel;
  PUTS("tQK");
  *p++ = (char)offset;
  PUTS("K\x02" "K\x02" "\x86" "K");
  *p++ = (char)s0;
  PUTS("K\x01" "\x86");
  *p++ = rg ? (char)0x88 : (char)0x89;
  PUTS("ccollections\x0a" "OrderedDict\x0a" ")RtR.");
#undef PUTS
  rec r = {"data/0", data, dlen};
  size_t alen;
  char *b = make_archive(pkl, (size_t)(p - pkl), &r, 1, &alen);
  em_status st = b ? em_torch_load_buffer(b, alen, out) : EM_E_RUNTIME;
  free(b);
  return st;
}

TEST(tensors_over_persistent_storages) {
  const float data[6] = {0, 1, 2, 3, 4, 5};
  em_pytree *t = NULL;
  CHECK_OK(load_tensor_pickle("FloatStorage", 6, 1, 3, 1, data, sizeof data, &t));
  if (t) {
    em_pyvalue v = get(t, em_pytree_root(t));
    CHECK(v.kind == EM_PY_TENSOR && v.tensor->offset == 1 && v.tensor->strides[0] == 3 &&
          v.tensor->requires_grad && v.tensor->dtype == EM_FLOAT32);
    double x;
    CHECK_OK(em_get_f64(v.tensor, 3, &x)); /* [1][1] = storage[1 + 3 + 1] */
    CHECK(x == 5);
    em_pytree_free(t);
  }
  t = NULL;
  CHECK_ERR(load_tensor_pickle("FloatStorage", 6, 2, 3, 0, data, sizeof data, &t),
            "a tensor does not fit its storage");
  CHECK_ERR(load_tensor_pickle("FloatStorage", 5, 0, 2, 0, data, sizeof data, &t),
            "does not match its record of 24 bytes");
  CHECK_ERR(load_tensor_pickle("LongStorage", 6, 0, 2, 1, data, sizeof data, &t),
            "does not match its record");
  CHECK_ERR(load_tensor_pickle("IntStorage", 6, 0, 2, 1, data, sizeof data, &t),
            "a tensor of int32 marked requires_grad");
  CHECK_ERR(load_tensor_pickle("QInt8Storage", 6, 0, 2, 0, data, sizeof data, &t),
            "torch.QInt8Storage is not supported");
  CHECK(t == NULL);
}

TEST(save_keeps_views_and_refuses_two_dtypes_on_one_storage) {
  int64_t sizes[2] = {3, 4};
  em_tensor *base, *rows, *as_int;
  CHECK_OK(em_zeros(2, sizes, EM_FLOAT32, em_cpu(), &base));
  int64_t rs[2] = {2, 4}, st[2] = {4, 1};
  CHECK_OK(em_tensor_new(base->storage, 4, 2, rs, st, EM_FLOAT32, &rows));
  CHECK_OK(em_tensor_new(base->storage, 0, 2, rs, st, EM_INT32, &as_int));
  em_pytree *t;
  CHECK_OK(em_pytree_new(&t));
  int64_t d, k, a, b;
  em_pyvalue v = {.kind = EM_PY_DICT};
  CHECK_OK(em_pytree_add(t, &v, &d));
  v = (em_pyvalue){.kind = EM_PY_STR, .s = "base", .len = 4};
  CHECK_OK(em_pytree_add(t, &v, &k));
  v = (em_pyvalue){.kind = EM_PY_TENSOR, .tensor = base};
  CHECK_OK(em_pytree_add(t, &v, &a));
  CHECK_OK(em_pytree_append(t, d, k));
  CHECK_OK(em_pytree_append(t, d, a));
  v = (em_pyvalue){.kind = EM_PY_STR, .s = "rows", .len = 4};
  CHECK_OK(em_pytree_add(t, &v, &k));
  v = (em_pyvalue){.kind = EM_PY_TENSOR, .tensor = rows};
  CHECK_OK(em_pytree_add(t, &v, &b));
  CHECK_OK(em_pytree_append(t, d, k));
  CHECK_OK(em_pytree_append(t, d, b));
  CHECK_ERR(em_pytree_append(t, k, b), "not a container");
  em_pytree_set_root(t, d);
  char path[] = "/tmp/ember_test_torch_XXXXXX.ckpt.pt";
  int fd = mkstemps(path, 8);
  close(fd);
  CHECK_OK(em_torch_save(path, t));
  /* the archive's folder is the file's name without its extension */
  size_t len;
  char *bytes = slurp(path, &len);
  const char *slash = strrchr(path, '/') + 1;
  char want[64];
  snprintf(want, sizeof want, "%.*s/data.pkl", (int)(strlen(slash) - 3), slash);
  CHECK(bytes && memmem(bytes, len, want, strlen(want)) != NULL);
  free(bytes);
  em_pytree *back = NULL;
  CHECK_OK(em_torch_load(path, &back));
  if (back) {
    int64_t r = em_pytree_root(back);
    em_tensor *x = get(back, em_pytree_item(back, r, 1)).tensor;
    em_tensor *y = get(back, em_pytree_item(back, r, 3)).tensor;
    CHECK(x && y && x->storage == y->storage && y->offset == 4 && y->sizes[0] == 2);
    em_pytree_free(back);
  }
  /* a view of the same bytes as int32: PyTorch cannot hold that */
  v = (em_pyvalue){.kind = EM_PY_TENSOR, .tensor = as_int};
  CHECK_OK(em_pytree_add(t, &v, &b));
  CHECK_OK(em_pytree_append(t, d, k));
  CHECK_OK(em_pytree_append(t, d, b));
  CHECK_ERR(em_torch_save(path, t), "tensors view one storage as float32 and as int32");
  unlink(path);
  em_pytree_free(t);
  em_tensor_release(as_int);
  em_tensor_release(rows);
  em_tensor_release(base);
}

TEST(not_a_checkpoint) {
  em_pytree *t = NULL;
  CHECK_ERR(em_torch_load_buffer("", 0, &t), "not a zip archive");
  CHECK_ERR(em_torch_load_buffer("\x80" "\x02" "K\x01" ".", 5, &t), "a bare pickle");
  size_t len;
  rec r = {"data/0", "x", 1};
  char *b = make_archive("\x80" "\x02" "K\x01" ".", 5, &r, 1, &len);
  CHECK_OK(em_torch_load_buffer(b, len, &t));
  em_pytree_free(t);
  t = NULL;
  free(b);
  CHECK_ERR(em_torch_load("/nonexistent/x.pt", &t), "load_torch: cannot open");
  CHECK(t == NULL);
}

int main(void) {
  RUN(values_of_every_opcode_torch_writes);
  RUN(protocol_1_text_ints);
  RUN(protocol_4_frames_memoize_and_stack_ops);
  RUN(a_list_that_contains_itself_loads_and_saves);
  RUN(deep_nesting_needs_no_recursion);
  RUN(refusals_name_what_they_refuse);
  RUN(every_truncation_of_a_pickle_fails_cleanly);
  RUN(tensors_over_persistent_storages);
  RUN(save_keeps_views_and_refuses_two_dtypes_on_one_storage);
  RUN(not_a_checkpoint);
  return CTEST_END();
}
