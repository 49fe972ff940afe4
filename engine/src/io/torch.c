/*
** torch.c -- PyTorch checkpoints: the zip files torch.save writes (PyTorch
** >= 1.6), read by a pickle machine that runs no code, and written the way
** PyTorch 1.13 writes them (docs/serialization.md, "PyTorch checkpoints").
**
** A checkpoint is an archive "<name>/data.pkl" (a pickle, protocol 2),
** "<name>/data/<key>" (the bytes of each storage), "<name>/version" and,
** since PyTorch 2.1, "<name>/byteorder". The pickle rebuilds tensors with
** torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
** requires_grad, hooks) over storages that BINPERSID names by key.
**
** What holds:
** - The pickle machine knows a fixed set of opcodes and a fixed set of
**   globals (the allow-list below, after torch/_weights_only_unpickler.py),
**   each implemented here: nothing in the file is ever looked up or run.
**   Any other opcode or global is refused with an error naming it.
** - Memory is bounded by the file: every node comes from an opcode (at most
**   one per byte), memo indices are bounded by the pickle's length, every
**   storage is checked against its record's size before it is copied, and
**   every tensor against its storage (em_tensor_new). No recursion follows
**   the file's structure while loading (the machine is a loop over a stack).
** - Storages are loaded once per key: tensors that shared a storage in the
**   file share one ember storage, with their offsets and strides.
** - Saving writes each storage once, in PyTorch's key order, with PyTorch
**   1.13's records (io/zip.c, EM_ZIP_TORCH) and its pickler's opcodes,
**   memo and batching, so torch.load reads the file back with the same
**   sharing.
*/
#include "core/core.h"
#include "io/mapping.h"
#include "io/zip.h"

#include <stdio.h>
#include <stdlib.h>

/* -- The value tree --------------------------------------------------------- */

/* Kinds beyond em_pykind, never seen outside this file except as
** EM_PY_OTHER: a global (a class or function named by the pickle). */
enum { K_GLOBAL = EM_PY_OTHER + 1 };

typedef struct {
  uint8_t kind;       /* em_pykind or K_GLOBAL */
  uint8_t storage;    /* a TENSOR made by BINPERSID: a whole storage */
  int32_t g;          /* K_GLOBAL: which global; DTYPE: the dtype */
  int64_t i;          /* INT; BOOL */
  double f;           /* FLOAT */
  char *s;            /* STR, BYTES; K_GLOBAL: "module.name" */
  size_t len;
  int64_t *items;     /* containers; dicts: key, value, key, value, ... */
  int64_t n, cap;
  em_tensor *t;       /* TENSOR */
} pynode;

struct em_pytree {
  pynode *nodes;
  int64_t n, cap;
  int64_t root;
};

em_status em_pytree_new(em_pytree **out) {
  em_pytree *t = calloc(1, sizeof *t);
  if (!t) return em_fail(EM_E_NOMEM, "pytree: out of memory");
  t->root = -1;
  *out = t;
  return EM_OK;
}

void em_pytree_free(em_pytree *t) {
  if (!t) return;
  for (int64_t i = 0; i < t->n; i++) {
    free(t->nodes[i].s);
    free(t->nodes[i].items);
    em_tensor_release(t->nodes[i].t);
  }
  free(t->nodes);
  free(t);
}

static int is_container(int k) {
  return k == EM_PY_TUPLE || k == EM_PY_LIST || k == EM_PY_DICT || k == EM_PY_ODICT;
}
static int is_dict(int k) { return k == EM_PY_DICT || k == EM_PY_ODICT; }

static em_status new_node(em_pytree *t, int kind, int64_t *id) {
  if (t->n == t->cap) {
    int64_t cap = t->cap ? 2 * t->cap : 64;
    pynode *p = realloc(t->nodes, (size_t)cap * sizeof *p);
    if (!p) return em_fail(EM_E_NOMEM, "pytree: out of memory");
    t->nodes = p;
    t->cap = cap;
  }
  memset(&t->nodes[t->n], 0, sizeof t->nodes[t->n]);
  t->nodes[t->n].kind = (uint8_t)kind;
  *id = t->n++;
  return EM_OK;
}

static em_status push_item(em_pytree *t, int64_t c, int64_t item) {
  pynode *p = &t->nodes[c];
  if (p->n == p->cap) {
    int64_t cap = p->cap ? 2 * p->cap : 4;
    int64_t *q = realloc(p->items, (size_t)cap * sizeof *q);
    if (!q) return em_fail(EM_E_NOMEM, "pytree: out of memory");
    p->items = q;
    p->cap = cap;
  }
  p->items[p->n++] = item;
  return EM_OK;
}

static em_status set_str(em_pytree *t, int64_t id, const char *s, size_t len) {
  char *c = malloc(len + 1);
  if (!c) return em_fail(EM_E_NOMEM, "pytree: out of memory");
  if (len) memcpy(c, s, len);
  c[len] = '\0';
  t->nodes[id].s = c;
  t->nodes[id].len = len;
  return EM_OK;
}

em_status em_pytree_add(em_pytree *t, const em_pyvalue *v, int64_t *node) {
  if ((unsigned)v->kind >= EM_PY_OTHER)
    return em_fail(EM_E_VALUE, "pytree: cannot add a value of kind %d", (int)v->kind);
  if (v->kind == EM_PY_TENSOR && !v->tensor)
    return em_fail(EM_E_VALUE, "pytree: a tensor value without a tensor");
  if (v->kind == EM_PY_DTYPE && (unsigned)v->dtype >= EM_NUM_DTYPES)
    return em_fail(EM_E_VALUE, "pytree: invalid dtype %d", (int)v->dtype);
  int64_t id;
  em_status st = new_node(t, v->kind, &id);
  if (st != EM_OK) return st;
  pynode *p = &t->nodes[id];
  switch (v->kind) {
    case EM_PY_BOOL: p->i = v->i != 0; break;
    case EM_PY_INT: p->i = v->i; break;
    case EM_PY_FLOAT: p->f = v->f; break;
    case EM_PY_STR:
    case EM_PY_BYTES:
      if ((st = set_str(t, id, v->s ? v->s : "", v->s ? v->len : 0)) != EM_OK) {
        t->n--;
        return st;
      }
      break;
    case EM_PY_TENSOR:
      em_tensor_retain(v->tensor);
      p->t = v->tensor;
      break;
    case EM_PY_DTYPE: p->g = (int32_t)v->dtype; break;
    default: break;
  }
  *node = id;
  return EM_OK;
}

em_status em_pytree_append(em_pytree *t, int64_t container, int64_t item) {
  if (container < 0 || container >= t->n || item < 0 || item >= t->n ||
      !is_container(t->nodes[container].kind))
    return em_fail(EM_E_VALUE, "pytree: append: node %lld is not a container",
                   (long long)container);
  return push_item(t, container, item);
}

em_status em_pytree_get(const em_pytree *t, int64_t node, em_pyvalue *v) {
  memset(v, 0, sizeof *v);
  if (node < 0 || node >= t->n)
    return em_fail(EM_E_INDEX, "pytree: node %lld of %lld", (long long)node, (long long)t->n);
  const pynode *p = &t->nodes[node];
  v->kind = p->kind >= EM_PY_OTHER ? EM_PY_OTHER : (em_pykind)p->kind;
  v->i = p->i;
  v->f = p->f;
  v->s = p->s;
  v->len = p->len;
  v->n = is_dict(p->kind) ? p->n / 2 : p->n;
  v->tensor = p->t;
  v->dtype = p->kind == EM_PY_DTYPE ? (em_dtype)p->g : EM_FLOAT32;
  return EM_OK;
}

int64_t em_pytree_item(const em_pytree *t, int64_t node, int64_t i) {
  if (node < 0 || node >= t->n) return -1;
  const pynode *p = &t->nodes[node];
  return is_container(p->kind) && i >= 0 && i < p->n ? p->items[i] : -1;
}

int64_t em_pytree_root(const em_pytree *t) { return t->root; }
void em_pytree_set_root(em_pytree *t, int64_t node) { t->root = node; }

/* -- The allow-list ------------------------------------------------------------ */

typedef enum {
  G_REBUILD_TENSOR_V2, G_REBUILD_TENSOR, G_REBUILD_PARAMETER, G_REBUILD_PARAMETER_STATE,
  G_REBUILD_META, G_ORDERED_DICT, G_STORAGE, G_DTYPE, G_SIZE, G_DEVICE, G_ENCODE, G_BYTES
} global_id;

typedef struct {
  const char *module, *name;
  global_id id;
  int dtype;  /* G_STORAGE, G_DTYPE */
} global_def;

static const global_def globals[] = {
    {"torch._utils", "_rebuild_tensor_v2", G_REBUILD_TENSOR_V2, 0},
    {"torch._utils", "_rebuild_tensor", G_REBUILD_TENSOR, 0},
    {"torch._utils", "_rebuild_parameter", G_REBUILD_PARAMETER, 0},
    {"torch._utils", "_rebuild_parameter_with_state", G_REBUILD_PARAMETER_STATE, 0},
    {"torch._utils", "_rebuild_meta_tensor_no_storage", G_REBUILD_META, 0},
    {"collections", "OrderedDict", G_ORDERED_DICT, 0},
    {"torch", "BoolStorage", G_STORAGE, EM_BOOL},
    {"torch", "ByteStorage", G_STORAGE, EM_UINT8},
    {"torch", "CharStorage", G_STORAGE, EM_INT8},
    {"torch", "ShortStorage", G_STORAGE, EM_INT16},
    {"torch", "IntStorage", G_STORAGE, EM_INT32},
    {"torch", "LongStorage", G_STORAGE, EM_INT64},
    {"torch", "HalfStorage", G_STORAGE, EM_FLOAT16},
    {"torch", "BFloat16Storage", G_STORAGE, EM_BFLOAT16},
    {"torch", "FloatStorage", G_STORAGE, EM_FLOAT32},
    {"torch", "DoubleStorage", G_STORAGE, EM_FLOAT64},
    {"torch", "ComplexFloatStorage", G_STORAGE, EM_COMPLEX64},
    {"torch", "ComplexDoubleStorage", G_STORAGE, EM_COMPLEX128},
    {"torch", "UntypedStorage", G_STORAGE, EM_UINT8},
    /* torch.float32 and its aliases; the first name of each dtype is the
    ** one saving writes */
    {"torch", "bool", G_DTYPE, EM_BOOL},
    {"torch", "uint8", G_DTYPE, EM_UINT8},
    {"torch", "int8", G_DTYPE, EM_INT8},
    {"torch", "int16", G_DTYPE, EM_INT16},
    {"torch", "short", G_DTYPE, EM_INT16},
    {"torch", "int32", G_DTYPE, EM_INT32},
    {"torch", "int", G_DTYPE, EM_INT32},
    {"torch", "int64", G_DTYPE, EM_INT64},
    {"torch", "long", G_DTYPE, EM_INT64},
    {"torch", "float16", G_DTYPE, EM_FLOAT16},
    {"torch", "half", G_DTYPE, EM_FLOAT16},
    {"torch", "bfloat16", G_DTYPE, EM_BFLOAT16},
    {"torch", "float32", G_DTYPE, EM_FLOAT32},
    {"torch", "float", G_DTYPE, EM_FLOAT32},
    {"torch", "float64", G_DTYPE, EM_FLOAT64},
    {"torch", "double", G_DTYPE, EM_FLOAT64},
    {"torch", "complex64", G_DTYPE, EM_COMPLEX64},
    {"torch", "cfloat", G_DTYPE, EM_COMPLEX64},
    {"torch", "complex128", G_DTYPE, EM_COMPLEX128},
    {"torch", "cdouble", G_DTYPE, EM_COMPLEX128},
    {"torch", "Size", G_SIZE, 0},
    {"torch", "device", G_DEVICE, 0},
    {"_codecs", "encode", G_ENCODE, 0},       /* bytes, as protocol 2 writes them */
    {"__builtin__", "bytes", G_BYTES, 0},     /* b"" */
    {"builtins", "bytes", G_BYTES, 0},
};
enum { N_GLOBALS = sizeof globals / sizeof globals[0] };

/* PyTorch names ember has no dtype or layout for: refused with a message
** saying so, rather than as code. */
static const char *const torch_unsupported[] = {
    "ComplexHalfStorage",
    "QInt8Storage", "QUInt8Storage", "QInt32Storage", "QUInt4x2Storage",
    "QUInt2x4Storage", "complex32",
    "chalf", "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
};

static const char *torch_dtype_name(em_dtype dt) {
  for (int i = 0; i < N_GLOBALS; i++)
    if (globals[i].id == G_DTYPE && globals[i].dtype == (int)dt) return globals[i].name;
  return "float32";
}
static const char *storage_name(em_dtype dt) {
  for (int i = 0; i < N_GLOBALS; i++)
    if (globals[i].id == G_STORAGE && globals[i].dtype == (int)dt) return globals[i].name;
  return "FloatStorage";
}

/* The unit a file of the other byte order swaps: a complex number's part. */
static int swap_unit(em_dtype dt) {
  int size = (int)em_dtype_size(dt);
  return dt == EM_COMPLEX64 || dt == EM_COMPLEX128 ? size / 2 : size;
}

/* -- Loading: the archive -------------------------------------------------------- */

#define OP "load_torch"

typedef struct {
  em_zip_entry e;
  em_storage *s;     /* loaded on first use */
  int itemsize;      /* the unit it was byte-swapped with (swap_unit) */
} record;

typedef struct {
  em_zip_reader zr;
  record *recs;      /* sorted by name */
  int64_t nrecs;
  const char *prefix; /* "<name>/" inside the archive */
  size_t plen;
  int swap;          /* the file's byte order is not the host's */
  em_pytree *tree;
  /* the machine */
  const uint8_t *p, *pend, *pbeg;
  int64_t *stack, sn, scap;
  int64_t *marks, mn, mcap;
  int64_t *memo, memocap, memocount;
  int64_t none_id, true_id, false_id, empty_tuple_id;
} loader;

static int rec_cmp(const void *a, const void *b) {
  const em_zip_entry *x = &((const record *)a)->e, *y = &((const record *)b)->e;
  size_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
  int c = memcmp(x->name, y->name, n);
  return c ? c : (x->nlen > y->nlen) - (x->nlen < y->nlen);
}

/* The record prefix + name (NULL if absent). */
static record *find_record(loader *L, const char *name, size_t nlen) {
  size_t total = L->plen + nlen;
  int64_t lo = 0, hi = L->nrecs;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    const em_zip_entry *e = &L->recs[mid].e;
    size_t n = e->nlen < total ? e->nlen : total;
    int c = memcmp(e->name, L->prefix, n < L->plen ? n : L->plen);
    if (c == 0 && n > L->plen) c = memcmp(e->name + L->plen, name, n - L->plen);
    if (c == 0) c = (e->nlen > total) - (e->nlen < total);
    if (c == 0) return &L->recs[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static em_status read_directory(loader *L, const void *buf, size_t len) {
  em_status st = em_zip_open(&L->zr, OP, buf, len);
  if (st != EM_OK) return st;
  L->recs = calloc(L->zr.count ? L->zr.count : 1, sizeof *L->recs);
  if (!L->recs) return em_fail(EM_E_NOMEM, "%s: out of memory", OP);
  for (;;) {
    int got;
    if ((st = em_zip_next(&L->zr, &L->recs[L->nrecs].e, &got)) != EM_OK) return st;
    if (!got) break;
    L->nrecs++;
  }
  if (L->nrecs == 0) return em_fail(EM_E_VALUE, "%s: an empty zip archive, not a torch.save file", OP);
  /* the archive's folder: the first record's, as PyTorchStreamReader takes it */
  const em_zip_entry *first = &L->recs[0].e;
  const char *slash = memchr(first->name, '/', first->nlen);
  if (!slash)
    return em_fail(EM_E_VALUE, "%s: not a torch.save file (its first member '%s' is not in a folder)",
                   OP, first->shown);
  L->prefix = first->name;
  L->plen = (size_t)(slash - first->name) + 1;
  qsort(L->recs, (size_t)L->nrecs, sizeof *L->recs, rec_cmp);
  for (int64_t i = 1; i < L->nrecs; i++)
    if (rec_cmp(&L->recs[i - 1], &L->recs[i]) == 0)
      return em_fail(EM_E_VALUE, "%s: the archive holds two members named '%s'", OP,
                     L->recs[i].e.shown);
  return EM_OK;
}

/* A record's bytes (stored members point into the archive). */
static em_status record_bytes(loader *L, record *r, const uint8_t **data, uint8_t **owned) {
  return em_zip_data(&L->zr, &r->e, data, owned);
}

/* -- Loading: the pickle machine ----------------------------------------------- */

enum { MAX_PROTO = 5 };

static em_status corrupt(loader *L, const char *what) {
  return em_fail(EM_E_VALUE, "%s: corrupt data.pkl (%s at byte %lld)", OP, what,
                 (long long)(L->p - L->pbeg));
}

static em_status need(loader *L, size_t n) {
  if ((size_t)(L->pend - L->p) < n) return corrupt(L, "truncated");
  return EM_OK;
}

static em_status push(loader *L, int64_t id) {
  if (L->sn == L->scap) {
    int64_t cap = L->scap ? 2 * L->scap : 64;
    int64_t *s = realloc(L->stack, (size_t)cap * sizeof *s);
    if (!s) return em_fail(EM_E_NOMEM, "%s: out of memory", OP);
    L->stack = s;
    L->scap = cap;
  }
  L->stack[L->sn++] = id;
  return EM_OK;
}

/* The first stack position after the innermost mark, or -1. */
static int64_t top_mark(loader *L) { return L->mn ? L->marks[L->mn - 1] : -1; }

static em_status pop(loader *L, int64_t *id) {
  if (L->sn == 0 || L->sn <= top_mark(L)) return corrupt(L, "stack underflow");
  *id = L->stack[--L->sn];
  return EM_OK;
}

static pynode *node(loader *L, int64_t id) { return &L->tree->nodes[id]; }

static em_status add_scalar(loader *L, int kind, int64_t i, double f) {
  int64_t id;
  em_status st = new_node(L->tree, kind, &id);
  if (st != EM_OK) return st;
  node(L, id)->i = i;
  node(L, id)->f = f;
  return push(L, id);
}

static em_status add_string(loader *L, int kind, size_t len) {
  em_status st = need(L, len);
  if (st != EM_OK) return st;
  int64_t id;
  if ((st = new_node(L->tree, kind, &id)) != EM_OK) return st;
  if ((st = set_str(L->tree, id, (const char *)L->p, len)) != EM_OK) return st;
  L->p += len;
  return push(L, id);
}

/* A new container holding the stack's items from position from on. */
static em_status collect(loader *L, int kind, int64_t from) {
  int64_t id;
  em_status st = new_node(L->tree, kind, &id);
  if (st != EM_OK) return st;
  for (int64_t k = from; k < L->sn; k++)
    if ((st = push_item(L->tree, id, L->stack[k])) != EM_OK) return st;
  L->sn = from;
  return push(L, id);
}

static em_status pop_mark(loader *L, int64_t *from) {
  if (L->mn == 0) return corrupt(L, "no mark");
  *from = L->marks[--L->mn];
  return EM_OK;
}

static uint64_t rdle(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

/* A little-endian two's-complement integer of n bytes (LONG1/LONG4):
** int64 when it fits, else a float (Lua has nothing wider). */
static em_status add_long(loader *L, uint64_t n) {
  em_status st = need(L, n);
  if (st != EM_OK) return st;
  const uint8_t *b = L->p;
  L->p += n;
  if (n == 0) return add_scalar(L, EM_PY_INT, 0, 0);
  int neg = (b[n - 1] & 0x80) != 0;
  uint64_t k = n;  /* drop sign-extension bytes */
  while (k > 1 && b[k - 1] == (neg ? 0xff : 0x00) && ((b[k - 2] & 0x80) != 0) == neg) k--;
  if (k <= 8) {
    uint64_t v = rdle(b, (int)k);
    if (neg && k < 8) v |= ~(uint64_t)0 << (8 * k);
    return add_scalar(L, EM_PY_INT, (int64_t)v, 0);
  }
  double d = 0;
  for (uint64_t i = k; i-- > 0;) d = d * 256 + (neg ? (uint8_t)~b[i] : b[i]);
  return add_scalar(L, EM_PY_FLOAT, 0, neg ? -(d + 1) : d);
}

static em_status memo_put(loader *L, uint64_t idx) {
  if (L->sn == 0 || L->sn <= top_mark(L)) return corrupt(L, "memoizing an empty stack");
  if (idx > (uint64_t)(L->pend - L->pbeg)) return corrupt(L, "memo index out of range");
  if ((int64_t)idx >= L->memocap) {
    int64_t cap = L->memocap ? L->memocap : 64;
    while (cap <= (int64_t)idx) cap *= 2;
    int64_t *m = realloc(L->memo, (size_t)cap * sizeof *m);
    if (!m) return em_fail(EM_E_NOMEM, "%s: out of memory", OP);
    for (int64_t i = L->memocap; i < cap; i++) m[i] = -1;
    L->memo = m;
    L->memocap = cap;
  }
  L->memocount += L->memo[idx] < 0;
  L->memo[idx] = L->stack[L->sn - 1];
  return EM_OK;
}

static em_status memo_get(loader *L, uint64_t idx) {
  if ((int64_t)idx >= L->memocap || idx >= (uint64_t)INT64_MAX || L->memo[idx] < 0)
    return corrupt(L, "memo entry missing");
  return push(L, L->memo[idx]);
}

static int str_is(const pynode *p, const char *s) {
  return p->kind == EM_PY_STR && p->len == strlen(s) && memcmp(p->s, s, p->len) == 0;
}

static em_status refuse_global(const char *module, const char *name) {
  if (strcmp(module, "torch") == 0)
    for (size_t i = 0; i < sizeof torch_unsupported / sizeof *torch_unsupported; i++)
      if (strcmp(name, torch_unsupported[i]) == 0)
        return em_fail(EM_E_TYPE,
                       "%s: torch.%s is not supported (ember has bool, uint8, int8, int16, "
                       "int32, int64, float16, bfloat16, float32, float64, complex64 and "
                       "complex128)",
                       OP, name);
  if (strcmp(module, "builtins") == 0 || strcmp(module, "__builtin__") == 0) {
    static const char *const plain[] = {"set", "frozenset", "bytearray", "complex", "range",
                                        "xrange", "slice"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
      if (strcmp(name, plain[i]) == 0)
        return em_fail(EM_E_VALUE,
                       "%s: the file holds a Python %s (global '%s.%s'): ember does not load "
                       "that (it loads tensors, dicts, lists, tuples, numbers, strings, bytes "
                       "and None)",
                       OP, strcmp(name, "xrange") == 0 ? "range" : name, module, name);
  }
  if (strncmp(module, "torch.nn.modules", 16) == 0)
    return em_fail(EM_E_VALUE,
                   "%s: the file holds a pickled module (class '%s.%s': torch.save(model)); "
                   "ember reads tensors, not Python objects: save model.state_dict() instead",
                   OP, module, name);
  if (strncmp(module, "torch", 5) == 0 && (module[5] == '\0' || module[5] == '.'))
    return em_fail(EM_E_VALUE,
                   "%s: global '%s.%s' is not supported (ember loads dense tensors, "
                   "parameters, containers, numbers and strings)",
                   OP, module, name);
  return em_fail(EM_E_VALUE, "%s: refusing global '%s.%s' (a checkpoint must never run code)",
                 OP, module, name);
}

static em_status add_global(loader *L, const char *module, size_t mlen, const char *name,
                            size_t nlen) {
  char m[128], n[128];
  snprintf(m, sizeof m, "%.*s", mlen > 100 ? 100 : (int)mlen, module);
  snprintf(n, sizeof n, "%.*s", nlen > 100 ? 100 : (int)nlen, name);
  if (memchr(module, '\0', mlen) || memchr(name, '\0', nlen) || mlen > 100 || nlen > 100)
    return refuse_global(m, n);
  for (int i = 0; i < N_GLOBALS; i++)
    if (strcmp(globals[i].module, m) == 0 && strcmp(globals[i].name, n) == 0) {
      int64_t id;
      em_status st;
      if (globals[i].id == G_DTYPE) {
        if ((st = new_node(L->tree, EM_PY_DTYPE, &id)) != EM_OK) return st;
        node(L, id)->g = globals[i].dtype;
        return push(L, id);
      }
      if ((st = new_node(L->tree, K_GLOBAL, &id)) != EM_OK) return st;
      node(L, id)->g = i;
      char full[260];
      snprintf(full, sizeof full, "%s.%s", m, n);
      if ((st = set_str(L->tree, id, full, strlen(full))) != EM_OK) return st;
      return push(L, id);
    }
  return refuse_global(m, n);
}

static const char *kind_name(int k) {
  static const char *const names[] = {"None", "bool", "int", "float", "str", "bytes",
                                      "tuple", "list", "dict", "OrderedDict", "tensor",
                                      "dtype", "object", "global"};
  return k >= 0 && k <= K_GLOBAL ? names[k] : "object";
}

static em_status bad_args(const char *fn, const char *what) {
  return em_fail(EM_E_VALUE, "%s: corrupt data.pkl (%s: %s)", OP, fn, what);
}

/* The int items of a size or stride tuple. */
static em_status int_tuple(loader *L, int64_t id, const char *fn, const char *what,
                           int64_t *out, int *n) {
  pynode *p = node(L, id);
  if (p->kind != EM_PY_TUPLE && p->kind != EM_PY_LIST) return bad_args(fn, what);
  if (p->n > EM_MAX_DIMS)
    return em_fail(EM_E_VALUE, "%s: a tensor of %lld dimensions (ember has at most %d)", OP,
                   (long long)p->n, (int)EM_MAX_DIMS);
  for (int64_t k = 0; k < p->n; k++) {
    pynode *q = node(L, p->items[k]);
    if (q->kind != EM_PY_INT) return bad_args(fn, what);
    out[k] = q->i;
  }
  *n = (int)p->n;
  return EM_OK;
}

static em_status push_tensor(loader *L, em_tensor *t, int is_storage) {
  int64_t id;
  em_status st = new_node(L->tree, EM_PY_TENSOR, &id);
  if (st != EM_OK) {
    em_tensor_release(t);
    return st;
  }
  node(L, id)->t = t;
  node(L, id)->storage = (uint8_t)is_storage;
  return push(L, id);
}

static em_status set_grad(em_tensor *t, int on) {
  if (on && em_dtype_kindof(t->dtype) != EM_KIND_FLOAT)
    return em_fail(EM_E_VALUE, "%s: corrupt data.pkl (a tensor of %s marked requires_grad)",
                   OP, em_dtype_name(t->dtype));
  t->requires_grad = on != 0;
  return EM_OK;
}

/* torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride,
** requires_grad, backward_hooks[, metadata]) and _rebuild_tensor (the
** first four). */
static em_status rebuild_tensor(loader *L, const pynode *a, int v2) {
  const char *fn = v2 ? "_rebuild_tensor_v2" : "_rebuild_tensor";
  if (v2 ? (a->n != 6 && a->n != 7) : a->n != 4) return bad_args(fn, "wrong number of arguments");
  pynode *s = node(L, a->items[0]), *off = node(L, a->items[1]);
  if (s->kind != EM_PY_TENSOR || !s->storage) return bad_args(fn, "argument 1 is not a storage");
  if (off->kind != EM_PY_INT) return bad_args(fn, "the storage offset is not an int");
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int nd, ns;
  em_status st = int_tuple(L, a->items[2], fn, "the size is not a tuple of ints", sizes, &nd);
  if (st == EM_OK) st = int_tuple(L, a->items[3], fn, "the stride is not a tuple of ints", strides, &ns);
  if (st != EM_OK) return st;
  if (nd != ns) return bad_args(fn, "size and stride differ in length");
  int rg = 0;
  if (v2) {
    pynode *g = node(L, a->items[4]);
    if (g->kind != EM_PY_BOOL) return bad_args(fn, "requires_grad is not a bool");
    rg = (int)g->i;
  }
  em_tensor *t;
  const em_tensor *base = s->t;
  st = em_tensor_new(base->storage, off->i, nd, sizes, strides, base->dtype, &t);
  if (st != EM_OK) {
    return em_fail(EM_E_VALUE, "%s: corrupt data.pkl (a tensor does not fit its storage: %s)",
                   OP, em_last_error_after("tensor_new"));
  }
  if ((st = set_grad(t, rg)) != EM_OK) {
    em_tensor_release(t);
    return st;
  }
  return push_tensor(L, t, 0);
}

/* torch._utils._rebuild_parameter(data, requires_grad, backward_hooks)
** [_with_state(..., state)]: ember's parameters are tensors. */
static em_status rebuild_parameter(loader *L, const pynode *a, int with_state) {
  const char *fn = with_state ? "_rebuild_parameter_with_state" : "_rebuild_parameter";
  if (a->n != (with_state ? 4 : 3)) return bad_args(fn, "wrong number of arguments");
  pynode *d = node(L, a->items[0]), *g = node(L, a->items[1]);
  if (d->kind != EM_PY_TENSOR) return bad_args(fn, "the data is not a tensor");
  if (g->kind != EM_PY_BOOL) return bad_args(fn, "requires_grad is not a bool");
  em_tensor *t;
  em_status st = em_alias(d->t, &t);
  if (st != EM_OK) return st;
  if ((st = set_grad(t, (int)g->i)) != EM_OK) {
    em_tensor_release(t);
    return st;
  }
  return push_tensor(L, t, 0);
}

/* torch._utils._rebuild_meta_tensor_no_storage(dtype, size, stride,
** requires_grad): a meta tensor (ember's meta device). */
static em_status rebuild_meta(loader *L, const pynode *a) {
  const char *fn = "_rebuild_meta_tensor_no_storage";
  if (a->n != 4) return bad_args(fn, "wrong number of arguments");
  pynode *d = node(L, a->items[0]), *g = node(L, a->items[3]);
  if (d->kind != EM_PY_DTYPE) return bad_args(fn, "argument 1 is not a dtype");
  if (g->kind != EM_PY_BOOL) return bad_args(fn, "requires_grad is not a bool");
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int nd, ns;
  em_status st = int_tuple(L, a->items[1], fn, "the size is not a tuple of ints", sizes, &nd);
  if (st == EM_OK) st = int_tuple(L, a->items[2], fn, "the stride is not a tuple of ints", strides, &ns);
  if (st != EM_OK) return st;
  if (nd != ns) return bad_args(fn, "size and stride differ in length");
  em_dtype dt = (em_dtype)d->g;
  int64_t numel, last = 0, step, nbytes = 0;
  if ((st = em_numel_checked(OP, nd, sizes, &numel)) != EM_OK) return st;
  for (int i = 0; i < nd; i++)
    if (strides[i] < 0) return bad_args(fn, "a negative stride");
  if (numel > 0) {
    for (int i = 0; i < nd; i++)
      if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &step) ||
          __builtin_add_overflow(last, step, &last))
        return bad_args(fn, "size and stride overflow");
    if (__builtin_mul_overflow(last + 1, (int64_t)em_dtype_size(dt), &nbytes))
      return bad_args(fn, "size and stride overflow");
  }
  em_storage *s;
  if ((st = em_storage_new((size_t)nbytes, em_meta(), &s)) != EM_OK) return st;
  em_tensor *t;
  st = em_tensor_new(s, 0, nd, sizes, strides, dt, &t);
  em_storage_release(s);
  if (st != EM_OK) return st;
  if ((st = set_grad(t, (int)g->i)) != EM_OK) {
    em_tensor_release(t);
    return st;
  }
  return push_tensor(L, t, 0);
}

/* UTF-8 text of code points below 256 as the bytes they number. */
static em_status latin1_bytes(loader *L, int64_t text) {
  const uint8_t *p = (const uint8_t *)node(L, text)->s, *end = p + node(L, text)->len;
  char *out = malloc((size_t)(end - p) + 1);
  if (!out) return em_fail(EM_E_NOMEM, "%s: out of memory", OP);
  size_t k = 0;
  while (p < end) {
    if (*p < 0x80) {
      out[k++] = (char)*p++;
    } else if ((*p & 0xe0) == 0xc0 && end - p >= 2 && (p[1] & 0xc0) == 0x80 && *p <= 0xc3) {
      out[k++] = (char)(((p[0] & 0x1f) << 6) | (p[1] & 0x3f));
      p += 2;
    } else {
      free(out);
      return bad_args("_codecs.encode", "a latin1 string with a character above 255");
    }
  }
  out[k] = '\0';
  int64_t id;
  em_status st = new_node(L->tree, EM_PY_BYTES, &id);
  if (st != EM_OK) {
    free(out);
    return st;
  }
  node(L, id)->s = out;
  node(L, id)->len = k;
  return push(L, id);
}

/* A new STR or BYTES node holding a copy of s. */
static em_status copy_text(loader *L, int kind, const char *s, size_t len) {
  int64_t id = 0;
  em_status st = new_node(L->tree, kind, &id);
  if (st == EM_OK) st = set_str(L->tree, id, s, len);
  return st == EM_OK ? push(L, id) : st;
}

/* Pointers to nodes do not survive new_node (the array moves): the cases
** below hold node ids across it, or copy what they need first. */
static em_status reduce(loader *L, int64_t fid, int64_t aid) {
  const pynode *f = node(L, fid), *a = node(L, aid);
  if (f->kind != K_GLOBAL) {
    char what[64];
    snprintf(what, sizeof what, "calling a %s", kind_name(f->kind));
    return corrupt(L, what);
  }
  const global_def *g = &globals[f->g];
  const char *fname = f->s; /* owned by the node, stays put */
  if (a->kind != EM_PY_TUPLE) return bad_args(fname, "the arguments are not a tuple");
  int64_t nargs = a->n, arg0 = nargs > 0 ? a->items[0] : -1, arg1 = nargs > 1 ? a->items[1] : -1;
  switch (g->id) {
    case G_REBUILD_TENSOR_V2: return rebuild_tensor(L, a, 1);
    case G_REBUILD_TENSOR: return rebuild_tensor(L, a, 0);
    case G_REBUILD_PARAMETER: return rebuild_parameter(L, a, 0);
    case G_REBUILD_PARAMETER_STATE: return rebuild_parameter(L, a, 1);
    case G_REBUILD_META: return rebuild_meta(L, a);
    case G_ORDERED_DICT: {
      /* OrderedDict() or OrderedDict([(k, v), ...]) */
      if (nargs > 1) return bad_args(fname, "more than one argument");
      if (nargs == 1) {
        const pynode *pairs = node(L, arg0);
        if (pairs->kind != EM_PY_LIST && pairs->kind != EM_PY_TUPLE)
          return bad_args(fname, "the argument is not a list of pairs");
        for (int64_t k = 0; k < pairs->n; k++) {
          const pynode *kv = node(L, pairs->items[k]);
          if ((kv->kind != EM_PY_TUPLE && kv->kind != EM_PY_LIST) || kv->n != 2)
            return bad_args(fname, "the argument is not a list of pairs");
        }
      }
      int64_t id;
      em_status st = new_node(L->tree, EM_PY_ODICT, &id);
      if (st != EM_OK) return st;
      for (int64_t k = 0; nargs == 1 && k < node(L, arg0)->n; k++) {
        const pynode *kv = node(L, node(L, arg0)->items[k]);
        int64_t key = kv->items[0], val = kv->items[1];
        if ((st = push_item(L->tree, id, key)) != EM_OK ||
            (st = push_item(L->tree, id, val)) != EM_OK)
          return st;
      }
      return push(L, id);
    }
    case G_SIZE:
      /* torch.Size((2, 3)): the tuple */
      if (nargs != 1 || node(L, arg0)->kind != EM_PY_TUPLE)
        return bad_args(fname, "the argument is not a tuple");
      return push(L, arg0);
    case G_DEVICE: {
      /* torch.device('cuda', 0) -> "cuda:0" */
      if (nargs < 1 || nargs > 2 || node(L, arg0)->kind != EM_PY_STR ||
          (nargs == 2 && node(L, arg1)->kind != EM_PY_INT))
        return bad_args(fname, "the arguments are not (type[, index])");
      char buf[160];
      int n = nargs == 2 ? snprintf(buf, sizeof buf, "%.100s:%lld", node(L, arg0)->s,
                                    (long long)node(L, arg1)->i)
                         : snprintf(buf, sizeof buf, "%.100s", node(L, arg0)->s);
      return copy_text(L, EM_PY_STR, buf, (size_t)n);
    }
    case G_ENCODE: {
      /* _codecs.encode(text, 'latin1'): protocol 2's bytes */
      if (nargs != 2 || node(L, arg0)->kind != EM_PY_STR || node(L, arg1)->kind != EM_PY_STR)
        return bad_args(fname, "the arguments are not (text, encoding)");
      const pynode *enc = node(L, arg1);
      if (str_is(enc, "latin1") || str_is(enc, "latin-1") || str_is(enc, "iso-8859-1"))
        return latin1_bytes(L, arg0);
      if (str_is(enc, "utf-8") || str_is(enc, "utf8"))
        return copy_text(L, EM_PY_BYTES, node(L, arg0)->s, node(L, arg0)->len);
      return bad_args(fname, "an encoding other than latin1 or utf-8");
    }
    case G_BYTES:
      if (nargs != 0) return bad_args(fname, "bytes() with arguments");
      return copy_text(L, EM_PY_BYTES, "", 0);
    case G_STORAGE:
    case G_DTYPE:
      break;
  }
  return em_fail(EM_E_VALUE, "%s: corrupt data.pkl (calling %s)", OP, fname);
}

/* BINPERSID ('storage', storage_type, key, location, numel): the record
** data/<key> as a storage, loaded once per key. */
static em_status persistent_load(loader *L, int64_t pid) {
  const pynode *t = node(L, pid);
  if (t->kind != EM_PY_TUPLE || t->n != 5 || !str_is(node(L, t->items[0]), "storage"))
    return corrupt(L, "a persistent id that is not ('storage', type, key, location, numel)");
  const pynode *ty = node(L, t->items[1]), *key = node(L, t->items[2]),
               *loc = node(L, t->items[3]), *num = node(L, t->items[4]);
  if (ty->kind != K_GLOBAL || globals[ty->g].id != G_STORAGE || key->kind != EM_PY_STR ||
      loc->kind != EM_PY_STR || num->kind != EM_PY_INT || num->i < 0)
    return corrupt(L, "a persistent id that is not ('storage', type, key, location, numel)");
  em_dtype dt = (em_dtype)globals[ty->g].dtype;
  int itemsize = (int)em_dtype_size(dt);
  char name[160];
  int n = snprintf(name, sizeof name, "data/%.*s", key->len > 100 ? 100 : (int)key->len, key->s);
  record *r = key->len > 100 || memchr(key->s, '\0', key->len) ? NULL : find_record(L, name, (size_t)n);
  if (!r)
    return em_fail(EM_E_VALUE, "%s: the archive has no record '%.*s%s' for a storage", OP,
                   (int)L->plen, L->prefix, name);
  int64_t need_bytes;
  if (__builtin_mul_overflow(num->i, (int64_t)itemsize, &need_bytes) ||
      (uint64_t)need_bytes != r->e.ulen)
    return em_fail(EM_E_VALUE,
                   "%s: storage '%s' of %lld %s elements does not match its record of %llu bytes",
                   OP, name + 5, (long long)num->i, em_dtype_name(dt),
                   (unsigned long long)r->e.ulen);
  em_status st;
  if (!r->s) {
    const uint8_t *data;
    uint8_t *owned;
    if ((st = record_bytes(L, r, &data, &owned)) != EM_OK) return st;
    st = em_storage_new((size_t)r->e.ulen, em_cpu(), &r->s);
    if (st == EM_OK && r->e.ulen) memcpy(r->s->data, data, (size_t)r->e.ulen);
    free(owned);
    if (st != EM_OK) return st;
    r->itemsize = swap_unit(dt);
    if (L->swap) em_io_byteswap_dtype(r->s->data, num->i, dt);
  } else if (L->swap && r->itemsize != swap_unit(dt) && (swap_unit(dt) > 1 || r->itemsize > 1)) {
    return em_fail(EM_E_VALUE,
                   "%s: storage '%s' is viewed with two element sizes in a file of the other "
                   "byte order",
                   OP, name + 5);
  }
  if (dt == EM_BOOL) em_io_bool_normalise(r->s->data, (int64_t)r->e.ulen, 1);
  em_tensor *x;
  int64_t size = num->i, stride = 1;
  if ((st = em_tensor_new(r->s, 0, 1, &size, &stride, dt, &x)) != EM_OK) return st;
  return push_tensor(L, x, 1);
}

/* BUILD: the state of an OrderedDict (its __dict__, e.g. a state_dict's
** _metadata) or of a parameter is not kept; anything else is refused. */
static em_status build(loader *L, int64_t inst) {
  int k = node(L, inst)->kind;
  if (is_dict(k) || k == EM_PY_TENSOR) return EM_OK;
  char what[64];
  snprintf(what, sizeof what, "BUILD of a %s", kind_name(k));
  return corrupt(L, what);
}

static em_status setitems(loader *L, int64_t dict, int64_t from) {
  pynode *d = node(L, dict);
  if (!is_dict(d->kind)) {
    char what[64];
    snprintf(what, sizeof what, "setting items of a %s", kind_name(d->kind));
    return corrupt(L, what);
  }
  if ((L->sn - from) % 2) return corrupt(L, "an odd number of items for a dict");
  for (int64_t k = from; k < L->sn; k++) {
    em_status st = push_item(L->tree, dict, L->stack[k]);
    if (st != EM_OK) return st;
  }
  L->sn = from;
  return EM_OK;
}

static em_status appends(loader *L, int64_t list, int64_t from) {
  pynode *l = node(L, list);
  if (l->kind != EM_PY_LIST) {
    char what[64];
    snprintf(what, sizeof what, "appending to a %s", kind_name(l->kind));
    return corrupt(L, what);
  }
  for (int64_t k = from; k < L->sn; k++) {
    em_status st = push_item(L->tree, list, L->stack[k]);
    if (st != EM_OK) return st;
  }
  L->sn = from;
  return EM_OK;
}

/* A line of GLOBAL's text form ("module\n"). */
static em_status line(loader *L, const char **s, size_t *n) {
  const uint8_t *nl = memchr(L->p, '\n', (size_t)(L->pend - L->p));
  if (!nl) return corrupt(L, "truncated");
  *s = (const char *)L->p;
  *n = (size_t)(nl - L->p);
  L->p = nl + 1;
  return EM_OK;
}

/* INT ("I42\n", "I01\n" for True) and LONG ("L42L\n"): the text forms
** protocol 1 writes for bools and for ints past 32 bits. Decimal digits
** with an optional sign; past int64, a float (as LONG1). */
static em_status text_int(loader *L, int is_long) {
  const char *s = NULL;
  size_t n = 0;
  em_status st = line(L, &s, &n);
  if (st != EM_OK) return st;
  const char *not_number = is_long ? "a LONG that is not a number" : "an INT that is not a number";
  if (is_long && n > 0 && s[n - 1] == 'L') n--;
  if (!is_long && n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1'))
    return push(L, s[1] == '1' ? L->true_id : L->false_id);
  size_t i = n > 0 && (s[0] == '-' || s[0] == '+');
  int neg = n > 0 && s[0] == '-';
  if (i == n) return corrupt(L, not_number);
  uint64_t v = 0;
  int big = 0;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return corrupt(L, not_number);
    unsigned digit = (unsigned)(s[i] - '0');
    if (v > (UINT64_MAX - digit) / 10) big = 1;
    else v = v * 10 + digit;
  }
  if (!big && (neg ? v <= (uint64_t)INT64_MAX + 1 : v <= (uint64_t)INT64_MAX))
    return add_scalar(L, EM_PY_INT, neg ? (int64_t)(0 - v) : (int64_t)v, 0);
  /* rounded once, as Python's float(int): the digits end at 'L' or '\n' */
  return add_scalar(L, EM_PY_FLOAT, 0, strtod(s, NULL));
}

/* Opcodes of real pickles that ember does not load: said by name, not
** called corrupt. NULL for bytes that are no opcode at all. */
static const char *unloaded_opcode(uint8_t op) {
  switch (op) {
    case 0x8f: return "EMPTY_SET (a Python set)";
    case 0x90: return "ADDITEMS (a Python set)";
    case 0x91: return "FROZENSET (a Python frozenset)";
    case 0x96: return "BYTEARRAY8 (a Python bytearray)";
    case 0x97: return "NEXT_BUFFER (an out-of-band buffer)";
    case 0x98: return "READONLY_BUFFER (an out-of-band buffer)";
    case 'F': return "FLOAT (protocol 0)";
    case 'S': return "STRING (protocol 0)";
    case 'V': return "UNICODE (protocol 0)";
    case 'g': return "GET (protocol 0)";
    case 'p': return "PUT (protocol 0)";
    case 'P': return "PERSID (protocol 0)";
    default: return NULL;
  }
}

static em_status run(loader *L, const uint8_t *pkl, size_t len) {
  L->pbeg = L->p = pkl;
  L->pend = pkl + len;
  em_status st;
  int64_t a = 0, b = 0, from = 0;  /* set before use; zeroed for -Wmaybe-uninitialized */
  for (;;) {
    if (L->p >= L->pend) return corrupt(L, "no STOP");
    uint8_t op = *L->p++;
    st = EM_OK;
    switch (op) {
      case 0x80: /* PROTO */
        if ((st = need(L, 1)) == EM_OK && *L->p++ > MAX_PROTO) return corrupt(L, "unknown protocol");
        break;
      case 0x95: /* FRAME */
        if ((st = need(L, 8)) == EM_OK) L->p += 8;
        break;
      case '.': /* STOP */
        if (L->sn == 0) return corrupt(L, "STOP with an empty stack");
        L->tree->root = L->stack[L->sn - 1];
        return EM_OK;
      case '(': /* MARK */
        if (L->mn == L->mcap) {
          int64_t cap = L->mcap ? 2 * L->mcap : 16;
          int64_t *m = realloc(L->marks, (size_t)cap * sizeof *m);
          if (!m) return em_fail(EM_E_NOMEM, "%s: out of memory", OP);
          L->marks = m;
          L->mcap = cap;
        }
        L->marks[L->mn++] = L->sn;
        break;
      case '0': st = pop(L, &a); break;                     /* POP */
      case '1': if ((st = pop_mark(L, &from)) == EM_OK) L->sn = from; break; /* POP_MARK */
      case '2':                                             /* DUP */
        if ((st = pop(L, &a)) == EM_OK && (st = push(L, a)) == EM_OK) st = push(L, a);
        break;
      case 'N': st = push(L, L->none_id); break;
      case 0x88: st = push(L, L->true_id); break;
      case 0x89: st = push(L, L->false_id); break;
      case 'J': /* BININT */
        if ((st = need(L, 4)) == EM_OK) {
          int32_t v = (int32_t)(uint32_t)rdle(L->p, 4);
          L->p += 4;
          st = add_scalar(L, EM_PY_INT, v, 0);
        }
        break;
      case 'K': /* BININT1 */
        if ((st = need(L, 1)) == EM_OK) st = add_scalar(L, EM_PY_INT, *L->p++, 0);
        break;
      case 'M': /* BININT2 */
        if ((st = need(L, 2)) == EM_OK) {
          int64_t v = (int64_t)rdle(L->p, 2);
          L->p += 2;
          st = add_scalar(L, EM_PY_INT, v, 0);
        }
        break;
      case 'I': st = text_int(L, 0); break; /* INT */
      case 'L': st = text_int(L, 1); break; /* LONG */
      case 0x8a: /* LONG1 */
        if ((st = need(L, 1)) == EM_OK) st = add_long(L, *L->p++);
        break;
      case 0x8b: /* LONG4 */
        if ((st = need(L, 4)) == EM_OK) {
          int32_t n = (int32_t)(uint32_t)rdle(L->p, 4);
          L->p += 4;
          st = n < 0 ? corrupt(L, "negative length") : add_long(L, (uint64_t)n);
        }
        break;
      case 'G': /* BINFLOAT, big-endian */
        if ((st = need(L, 8)) == EM_OK) {
          uint64_t bits = 0;
          for (int i = 0; i < 8; i++) bits = bits << 8 | L->p[i];
          L->p += 8;
          double d;
          memcpy(&d, &bits, 8);
          st = add_scalar(L, EM_PY_FLOAT, 0, d);
        }
        break;
      case 'X':  /* BINUNICODE */
      case 'T':  /* BINSTRING (Python 2 str) */
      case 'B':  /* BINBYTES */
        if ((st = need(L, 4)) == EM_OK) {
          uint64_t n = rdle(L->p, 4);
          L->p += 4;
          if (op == 'T' && n > 0x7fffffffu) return corrupt(L, "negative length");
          st = add_string(L, op == 'B' ? EM_PY_BYTES : EM_PY_STR, (size_t)n);
        }
        break;
      case 0x8c: /* SHORT_BINUNICODE */
      case 'U':  /* SHORT_BINSTRING */
      case 'C':  /* SHORT_BINBYTES */
        if ((st = need(L, 1)) == EM_OK) {
          size_t n = *L->p++;
          st = add_string(L, op == 'C' ? EM_PY_BYTES : EM_PY_STR, n);
        }
        break;
      case 0x8d: /* BINUNICODE8 */
      case 0x8e: /* BINBYTES8 */
        if ((st = need(L, 8)) == EM_OK) {
          uint64_t n = rdle(L->p, 8);
          L->p += 8;
          if (n > (uint64_t)(L->pend - L->p)) return corrupt(L, "truncated");
          st = add_string(L, op == 0x8e ? EM_PY_BYTES : EM_PY_STR, (size_t)n);
        }
        break;
      case ')': st = push(L, L->empty_tuple_id); break;    /* EMPTY_TUPLE */
      case 't': /* TUPLE */
        if ((st = pop_mark(L, &from)) == EM_OK) st = collect(L, EM_PY_TUPLE, from);
        break;
      case 0x85: case 0x86: case 0x87: { /* TUPLE1, TUPLE2, TUPLE3 */
        int64_t n = op - 0x84;
        if (L->sn - n < 0 || L->sn - n < top_mark(L)) return corrupt(L, "stack underflow");
        st = collect(L, EM_PY_TUPLE, L->sn - n);
        break;
      }
      case ']': /* EMPTY_LIST */
        if ((st = new_node(L->tree, EM_PY_LIST, &a)) == EM_OK) st = push(L, a);
        break;
      case 'l': /* LIST */
        if ((st = pop_mark(L, &from)) == EM_OK) st = collect(L, EM_PY_LIST, from);
        break;
      case 'a': /* APPEND */
        if ((st = pop(L, &b)) == EM_OK) {
          if (L->sn == 0 || L->sn <= top_mark(L)) return corrupt(L, "stack underflow");
          st = appends(L, L->stack[L->sn - 1], L->sn);
          if (st == EM_OK) st = push_item(L->tree, L->stack[L->sn - 1], b);
        }
        break;
      case 'e': /* APPENDS */
        if ((st = pop_mark(L, &from)) == EM_OK) {
          if (from == 0 || from <= top_mark(L)) return corrupt(L, "stack underflow");
          st = appends(L, L->stack[from - 1], from);
        }
        break;
      case '}': /* EMPTY_DICT */
        if ((st = new_node(L->tree, EM_PY_DICT, &a)) == EM_OK) st = push(L, a);
        break;
      case 'd': /* DICT */
        if ((st = pop_mark(L, &from)) == EM_OK) {
          if ((L->sn - from) % 2) return corrupt(L, "an odd number of items for a dict");
          st = collect(L, EM_PY_DICT, from);
        }
        break;
      case 's': /* SETITEM */
        if (L->sn - 3 < 0 || L->sn - 3 < top_mark(L)) return corrupt(L, "stack underflow");
        st = setitems(L, L->stack[L->sn - 3], L->sn - 2);
        break;
      case 'u': /* SETITEMS */
        if ((st = pop_mark(L, &from)) == EM_OK) {
          if (from == 0 || from <= top_mark(L)) return corrupt(L, "stack underflow");
          st = setitems(L, L->stack[from - 1], from);
        }
        break;
      case 'h': /* BINGET */
        if ((st = need(L, 1)) == EM_OK) st = memo_get(L, *L->p++);
        break;
      case 'j': /* LONG_BINGET */
        if ((st = need(L, 4)) == EM_OK) {
          uint64_t i = rdle(L->p, 4);
          L->p += 4;
          st = memo_get(L, i);
        }
        break;
      case 'q': /* BINPUT */
        if ((st = need(L, 1)) == EM_OK) st = memo_put(L, *L->p++);
        break;
      case 'r': /* LONG_BINPUT */
        if ((st = need(L, 4)) == EM_OK) {
          uint64_t i = rdle(L->p, 4);
          L->p += 4;
          st = memo_put(L, i);
        }
        break;
      case 0x94: st = memo_put(L, (uint64_t)L->memocount); break; /* MEMOIZE */
      case 'c': { /* GLOBAL */
        const char *m = NULL, *n = NULL;
        size_t ml = 0, nl = 0;
        if ((st = line(L, &m, &ml)) == EM_OK && (st = line(L, &n, &nl)) == EM_OK)
          st = add_global(L, m, ml, n, nl);
        break;
      }
      case 0x93: /* STACK_GLOBAL */
        if ((st = pop(L, &b)) == EM_OK && (st = pop(L, &a)) == EM_OK) {
          if (node(L, a)->kind != EM_PY_STR || node(L, b)->kind != EM_PY_STR)
            return corrupt(L, "STACK_GLOBAL of non-strings");
          st = add_global(L, node(L, a)->s, node(L, a)->len, node(L, b)->s, node(L, b)->len);
        }
        break;
      case 'R':  /* REDUCE */
      case 0x81: /* NEWOBJ: cls(*args), for the same allow-list */
        if ((st = pop(L, &b)) == EM_OK && (st = pop(L, &a)) == EM_OK) st = reduce(L, a, b);
        break;
      case 'b': /* BUILD */
        if ((st = pop(L, &b)) == EM_OK) {
          if (L->sn == 0 || L->sn <= top_mark(L)) return corrupt(L, "stack underflow");
          st = build(L, L->stack[L->sn - 1]);
        }
        break;
      case 'Q': /* BINPERSID */
        if ((st = pop(L, &a)) == EM_OK) st = persistent_load(L, a);
        break;
      case 'i': case 'o': case 0x92: case 0x82: case 0x83: case 0x84:
        L->p--;
        return em_fail(EM_E_VALUE,
                       "%s: refusing pickle opcode %s at byte %lld (it builds an object of "
                       "a class named by the file: a checkpoint must never run code)",
                       OP, op == 'i' ? "INST" : op == 'o' ? "OBJ" : op == 0x92 ? "NEWOBJ_EX" : "EXT",
                       (long long)(L->p - L->pbeg));
      default: {
        char what[64];
        const char *name = unloaded_opcode(op);
        L->p--;
        if (name)
          return em_fail(EM_E_VALUE,
                         "%s: pickle opcode %s at byte %lld: ember does not load that (it loads "
                         "tensors, dicts, lists, tuples, numbers, strings, bytes and None)",
                         OP, name, (long long)(L->p - L->pbeg));
        snprintf(what, sizeof what, "unsupported opcode 0x%02x", op);
        return corrupt(L, what);
      }
    }
    if (st != EM_OK) return st;
  }
}

static void loader_free(loader *L) {
  for (int64_t i = 0; i < L->nrecs; i++) em_storage_release(L->recs[i].s);
  free(L->recs);
  free(L->stack);
  free(L->marks);
  free(L->memo);
}

static const uint8_t LEGACY_MAGIC[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                       0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

em_status em_torch_load_buffer(const void *buf, size_t len, em_pytree **out) {
  const uint8_t *b = buf;
  *out = NULL;
  if (len >= sizeof LEGACY_MAGIC && memcmp(b, LEGACY_MAGIC, sizeof LEGACY_MAGIC) == 0)
    return em_fail(EM_E_VALUE,
                   "%s: a checkpoint in PyTorch's legacy format (before 1.6, or "
                   "_use_new_zipfile_serialization=False); re-save it with torch.save in "
                   "PyTorch >= 1.6",
                   OP);
  if (len >= 2 && b[0] == 0x80 && b[1] <= MAX_PROTO)
    return em_fail(EM_E_VALUE, "%s: a bare pickle, not a torch.save zip archive", OP);
  if (len >= 262 && memcmp(b + 257, "ustar", 5) == 0)
    return em_fail(EM_E_VALUE,
                   "%s: a tar archive (PyTorch's format before 0.4), not a torch.save zip archive",
                   OP);
  loader L;
  memset(&L, 0, sizeof L);
  em_status st = read_directory(&L, buf, len);
  em_pytree *t = NULL;
  if (st == EM_OK) st = em_pytree_new(&t);
  L.tree = t;
  record *pkl = NULL;
  if (st == EM_OK && find_record(&L, "constants.pkl", 13))
    st = em_fail(EM_E_VALUE,
                 "%s: a TorchScript archive (torch.jit.save); ember reads torch.save files "
                 "(save the model's state_dict() with torch.save)",
                 OP);
  if (st == EM_OK && !(pkl = find_record(&L, "data.pkl", 8)))
    st = em_fail(EM_E_VALUE, "%s: not a torch.save file (no record '%.*sdata.pkl')", OP,
                 (int)L.plen, L.prefix);
  record *bo = st == EM_OK ? find_record(&L, "byteorder", 9) : NULL;
  int little = 1;
  if (bo) {
    const uint8_t *d;
    uint8_t *owned;
    st = record_bytes(&L, bo, &d, &owned);
    if (st == EM_OK) {
      size_t n = (size_t)bo->e.ulen;
      while (n && (d[n - 1] == '\n' || d[n - 1] == '\r')) n--;
      if (n == 6 && memcmp(d, "little", 6) == 0) little = 1;
      else if (n == 3 && memcmp(d, "big", 3) == 0) little = 0;
      else st = em_fail(EM_E_VALUE, "%s: unknown byte order '%.*s' (expected 'little' or 'big')",
                        OP, n > 20 ? 20 : (int)n, (const char *)d);
    }
    free(owned);
  }
  L.swap = little != em_io_host_is_little();
  /* the constants every pickle shares */
  if (st == EM_OK) st = new_node(t, EM_PY_NONE, &L.none_id);
  if (st == EM_OK) st = new_node(t, EM_PY_BOOL, &L.false_id);
  if (st == EM_OK) st = new_node(t, EM_PY_BOOL, &L.true_id);
  if (st == EM_OK) st = new_node(t, EM_PY_TUPLE, &L.empty_tuple_id);
  if (st == EM_OK) t->nodes[L.true_id].i = 1;
  if (st == EM_OK) {
    const uint8_t *d;
    uint8_t *owned;
    st = record_bytes(&L, pkl, &d, &owned);
    if (st == EM_OK) st = run(&L, d, (size_t)pkl->e.ulen);
    free(owned);
  }
  loader_free(&L);
  if (st != EM_OK) {
    em_pytree_free(t);
    return st;
  }
  *out = t;
  return EM_OK;
}

em_status em_torch_load(const char *path, em_pytree **out) {
  em_io_mapping m = {0};
  *out = NULL;
  em_status st = em_io_map_file(OP, path, 0, &m);
  if (st != EM_OK) return st;
  if (m.len == 0) st = em_fail(EM_E_VALUE, "%s: empty file", OP);
  else st = em_torch_load_buffer(m.base, m.len, out);
  em_io_unmap(&m);
  if (st != EM_OK) {
    /* "load_torch: X" -> "load_torch: 'path': X" */
    return em_fail(st, "%s: '%s': %s", OP, path, em_last_error_after(OP));
  }
  return EM_OK;
}

#undef OP

/* -- Saving: the pickler ------------------------------------------------------------ */

#define OP "save_torch"

typedef struct {
  const em_storage *s;
  em_dtype dt;
  char key[24];
  int64_t memo;      /* the key string's memo index */
} saved_storage;

typedef struct {
  const em_pytree *tree;
  uint8_t *b;
  size_t n, cap;
  int64_t *memo;      /* node -> memo index, -1 */
  int64_t next_memo;
  /* memo indices of the pickler's own objects (-1 until written) */
  int64_t g_rebuild, g_meta, g_odict, g_encode, g_bytes, s_storage, s_cpu, s_latin1;
  int64_t g_storage[EM_NUM_DTYPES], g_dtype[EM_NUM_DTYPES];
  saved_storage *st;
  int64_t nst, stcap;
  em_status err;
} pickler;

static void emit(pickler *P, const void *p, size_t n) {
  if (P->err != EM_OK) return;
  if (P->cap - P->n < n) {
    size_t cap = P->cap ? P->cap : 4096;
    while (cap - P->n < n) {
      if (cap > ((size_t)-1) / 2) {
        P->err = em_fail(EM_E_NOMEM, "%s: out of memory", OP);
        return;
      }
      cap *= 2;
    }
    uint8_t *q = realloc(P->b, cap);
    if (!q) {
      P->err = em_fail(EM_E_NOMEM, "%s: out of memory", OP);
      return;
    }
    P->b = q;
    P->cap = cap;
  }
  memcpy(P->b + P->n, p, n);
  P->n += n;
}

static void emit1(pickler *P, uint8_t c) { emit(P, &c, 1); }

static void emit_le(pickler *P, uint8_t op, uint64_t v, int n) {
  uint8_t e[9];
  e[0] = op;
  for (int i = 0; i < n; i++) e[1 + i] = (uint8_t)(v >> (8 * i));
  emit(P, e, (size_t)n + 1);
}

/* BINPUT/LONG_BINPUT of the next memo index; returns it. */
static int64_t put_memo(pickler *P) {
  int64_t i = P->next_memo++;
  if (i < 256) emit_le(P, 'q', (uint64_t)i, 1);
  else emit_le(P, 'r', (uint64_t)i, 4);
  return i;
}

static void get_memo(pickler *P, int64_t i) {
  if (i < 256) emit_le(P, 'h', (uint64_t)i, 1);
  else emit_le(P, 'j', (uint64_t)i, 4);
}

/* Python's save_long in binary mode, protocol 2 */
static void emit_int(pickler *P, int64_t v) {
  if (v >= 0 && v <= 0xff) return emit_le(P, 'K', (uint64_t)v, 1);
  if (v >= 0 && v <= 0xffff) return emit_le(P, 'M', (uint64_t)v, 2);
  if (v >= INT32_MIN && v <= INT32_MAX) return emit_le(P, 'J', (uint64_t)(uint32_t)(int32_t)v, 4);
  /* encode_long: the fewest little-endian two's-complement bytes */
  uint8_t b[8];
  int n = 8;
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)v >> (8 * i));
  while (n > 1 && ((v < 0 && b[n - 1] == 0xff && (b[n - 2] & 0x80)) ||
                   (v >= 0 && b[n - 1] == 0 && !(b[n - 2] & 0x80))))
    n--;
  uint8_t h[2] = {0x8a, (uint8_t)n};
  emit(P, h, 2);
  emit(P, b, (size_t)n);
}

static void emit_float(pickler *P, double d) {
  uint64_t bits;
  memcpy(&bits, &d, 8);
  uint8_t e[9];
  e[0] = 'G';
  for (int i = 0; i < 8; i++) e[1 + i] = (uint8_t)(bits >> (56 - 8 * i));
  emit(P, e, 9);
}

static void emit_unicode(pickler *P, const char *s, size_t len) {
  emit_le(P, 'X', (uint64_t)len, 4);
  emit(P, s, len);
}

/* A string the pickler writes itself ('storage', 'cpu'), memoized once. */
static void emit_own_str(pickler *P, int64_t *memo, const char *s) {
  if (*memo >= 0) return get_memo(P, *memo);
  emit_unicode(P, s, strlen(s));
  *memo = put_memo(P);
}

static void emit_global(pickler *P, int64_t *memo, const char *module, const char *name) {
  if (*memo >= 0) return get_memo(P, *memo);
  emit1(P, 'c');
  emit(P, module, strlen(module));
  emit1(P, '\n');
  emit(P, name, strlen(name));
  emit1(P, '\n');
  *memo = put_memo(P);
}

/* A tuple of ints (sizes, strides): memoized unless empty. */
static void emit_int_tuple(pickler *P, int n, const int64_t *v) {
  if (n == 0) return emit1(P, ')');
  if (n > 3) emit1(P, '(');
  for (int i = 0; i < n; i++) emit_int(P, v[i]);
  emit1(P, n > 3 ? 't' : (uint8_t)(0x84 + n));
  put_memo(P);
}

/* OrderedDict(): a tensor's backward hooks */
static void emit_empty_odict(pickler *P) {
  emit_global(P, &P->g_odict, "collections", "OrderedDict");
  emit1(P, ')');
  emit1(P, 'R');
  put_memo(P);
}

static void emit_tensor(pickler *P, const em_tensor *t) {
  if (t->storage->device.type == EM_META) {
    /* _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad) */
    emit_global(P, &P->g_meta, "torch._utils", "_rebuild_meta_tensor_no_storage");
    emit1(P, '(');
    emit_global(P, &P->g_dtype[t->dtype], "torch", torch_dtype_name(t->dtype));
    emit_int_tuple(P, t->ndim, t->sizes);
    emit_int_tuple(P, t->ndim, t->strides);
    emit1(P, t->requires_grad ? 0x88 : 0x89);
    emit1(P, 't');
    put_memo(P);
    emit1(P, 'R');
    return;
  }
  int64_t k = 0;
  while (k < P->nst && P->st[k].s != t->storage) k++;
  if (k < P->nst && P->st[k].dt != t->dtype) {
    P->err = em_fail(EM_E_VALUE,
                     "%s: tensors view one storage as %s and as %s (PyTorch cannot save "
                     "that: save a clone of one of them)",
                     OP, em_dtype_name(P->st[k].dt), em_dtype_name(t->dtype));
    return;
  }
  if (k == P->nst) {
    if (P->nst == P->stcap) {
      int64_t cap = P->stcap ? 2 * P->stcap : 16;
      saved_storage *s = realloc(P->st, (size_t)cap * sizeof *s);
      if (!s) {
        P->err = em_fail(EM_E_NOMEM, "%s: out of memory", OP);
        return;
      }
      P->st = s;
      P->stcap = cap;
    }
    saved_storage *s = &P->st[P->nst++];
    s->s = t->storage;
    s->dt = t->dtype;
    snprintf(s->key, sizeof s->key, "%lld", (long long)k);
    s->memo = -1;
  }
  saved_storage *s = &P->st[k];
  /* _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict()) */
  emit_global(P, &P->g_rebuild, "torch._utils", "_rebuild_tensor_v2");
  emit1(P, '(');
  emit1(P, '(');
  emit_own_str(P, &P->s_storage, "storage");
  emit_global(P, &P->g_storage[t->dtype], "torch", storage_name(t->dtype));
  emit_own_str(P, &s->memo, s->key);
  emit_own_str(P, &P->s_cpu, "cpu");
  emit_int(P, (int64_t)(t->storage->nbytes / em_dtype_size(t->dtype)));
  emit1(P, 't');
  put_memo(P);
  emit1(P, 'Q');
  emit_int(P, t->offset);
  emit_int_tuple(P, t->ndim, t->sizes);
  emit_int_tuple(P, t->ndim, t->strides);
  emit1(P, t->requires_grad ? 0x88 : 0x89);
  emit_empty_odict(P);
  emit1(P, 't');
  put_memo(P);
  emit1(P, 'R');
}

enum { BATCH = 1000, MAX_SAVE_DEPTH = 1000, BUSY = -2 };

static void emit_node(pickler *P, int64_t id, int depth);

/* The items of a list or dict in batches of BATCH, as CPython's C pickler
** (torch.save's) writes them: an OrderedDict's items (batch_dict) with a
** lone last item as APPEND/SETITEM; an exact list (batch_list_exact) with
** every batch marked unless it has one item in all; an exact dict
** (batch_dict_exact) likewise, plus an empty marked batch after a full
** last one (2000 items: 1000, 1000, 0). */
static void emit_batched(pickler *P, const pynode *c, int per, uint8_t one, uint8_t many,
                         int depth) {
  int64_t total = c->n / per;
  if (total == 0) return;
  /* an exact list or dict of more than one item marks every batch */
  int exact = (c->kind == EM_PY_LIST || c->kind == EM_PY_DICT) && total > 1;
  int64_t at = 0, k;
  do {
    k = total - at < BATCH ? total - at : BATCH;
    int marked = exact || k > 1;
    if (marked) emit1(P, '(');
    for (int64_t i = at * per; i < (at + k) * per; i++) emit_node(P, c->items[i], depth + 1);
    emit1(P, marked ? many : one);
    at += k;
  } while (P->err == EM_OK && (exact && c->kind == EM_PY_DICT ? k == BATCH : at < total));
}

static void emit_node(pickler *P, int64_t id, int depth) {
  if (P->err != EM_OK) return;
  if (depth > MAX_SAVE_DEPTH) {
    P->err = em_fail(EM_E_VALUE, "%s: values nested deeper than %d", OP, MAX_SAVE_DEPTH);
    return;
  }
  const pynode *p = &P->tree->nodes[id];
  if (P->memo[id] >= 0) return get_memo(P, P->memo[id]);
  if (P->memo[id] == BUSY) {
    P->err = em_fail(EM_E_VALUE, "%s: a tuple that contains itself", OP);
    return;
  }
  switch (p->kind) {
    case EM_PY_NONE: return emit1(P, 'N');
    case EM_PY_BOOL: return emit1(P, p->i ? 0x88 : 0x89);
    case EM_PY_INT: return emit_int(P, p->i);
    case EM_PY_FLOAT: return emit_float(P, p->f);
    case EM_PY_STR:
      emit_unicode(P, p->s, p->len);
      P->memo[id] = put_memo(P);
      return;
    case EM_PY_BYTES: {
      /* protocol 2 in Python 3: _codecs.encode(latin1 text, 'latin1'), b"" as bytes() */
      if (p->len == 0) {
        emit_global(P, &P->g_bytes, "__builtin__", "bytes");
        emit1(P, ')');
      } else {
        emit_global(P, &P->g_encode, "_codecs", "encode");
        size_t n = 0;
        for (size_t i = 0; i < p->len; i++) n += (uint8_t)p->s[i] < 0x80 ? 1 : 2;
        emit_le(P, 'X', (uint64_t)n, 4);
        for (size_t i = 0; i < p->len; i++) {
          uint8_t c = (uint8_t)p->s[i];
          if (c < 0x80) {
            emit1(P, c);
          } else {
            uint8_t u[2] = {(uint8_t)(0xc0 | c >> 6), (uint8_t)(0x80 | (c & 0x3f))};
            emit(P, u, 2);
          }
        }
        put_memo(P);
        emit_own_str(P, &P->s_latin1, "latin1");
        emit1(P, 0x86);
        put_memo(P);
      }
      emit1(P, 'R');
      P->memo[id] = put_memo(P);
      return;
    }
    case EM_PY_TUPLE:
      if (p->n == 0) return emit1(P, ')');
      P->memo[id] = BUSY; /* a cycle back to it is an error (tuples are built last) */
      if (p->n > 3) emit1(P, '(');
      for (int64_t i = 0; i < p->n; i++) emit_node(P, p->items[i], depth + 1);
      emit1(P, p->n > 3 ? 't' : (uint8_t)(0x84 + p->n));
      P->memo[id] = put_memo(P);
      return;
    case EM_PY_LIST:
      emit1(P, ']');
      P->memo[id] = put_memo(P);
      return emit_batched(P, p, 1, 'a', 'e', depth);
    case EM_PY_DICT:
      emit1(P, '}');
      P->memo[id] = put_memo(P);
      return emit_batched(P, p, 2, 's', 'u', depth);
    case EM_PY_ODICT:
      emit_global(P, &P->g_odict, "collections", "OrderedDict");
      emit1(P, ')');
      emit1(P, 'R');
      P->memo[id] = put_memo(P);
      return emit_batched(P, p, 2, 's', 'u', depth);
    case EM_PY_TENSOR:
      emit_tensor(P, p->t);
      P->memo[id] = put_memo(P);
      return;
    case EM_PY_DTYPE:
      return emit_global(P, &P->g_dtype[p->g], "torch", torch_dtype_name((em_dtype)p->g));
    default:
      P->err = em_fail(EM_E_VALUE, "%s: cannot save a %s", OP, kind_name(p->kind));
  }
}

static int key_cmp(const void *a, const void *b) {
  return strcmp(((const saved_storage *)a)->key, ((const saved_storage *)b)->key);
}

/* The archive's folder: the file's name without its folders and its last
** extension, as PyTorchStreamWriter names it ("archive" when empty). */
static void archive_name(const char *path, char *out, size_t n) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  size_t len = dot ? (size_t)(dot - base) : strlen(base);
  if (len == 0) {
    snprintf(out, n, "archive/");
    return;
  }
  if (len > n - 2) len = n - 2;
  memcpy(out, base, len);
  out[len] = '/';
  out[len + 1] = '\0';
}

em_status em_torch_save(const char *path, const em_pytree *tree) {
  if (!em_io_host_is_little())
    return em_fail(EM_E_RUNTIME, "%s: big-endian hosts are not supported", OP);
  if (tree->root < 0 || tree->root >= tree->n)
    return em_fail(EM_E_VALUE, "%s: the value tree has no root", OP);
  for (int64_t i = 0; i < tree->n; i++) {
    const pynode *p = &tree->nodes[i];
    if (p->kind != EM_PY_TENSOR) continue;
    em_device dev = p->t->storage->device;
    if (dev.type != EM_CPU && dev.type != EM_META) {
      char d[32];
      return em_fail(EM_E_RUNTIME, "%s: a tensor is on %s; use :cpu() first", OP,
                     em_device_str(dev, d, sizeof d));
    }
  }
  pickler P;
  memset(&P, 0, sizeof P);
  P.tree = tree;
  P.g_rebuild = P.g_meta = P.g_odict = P.g_encode = P.g_bytes = -1;
  P.s_storage = P.s_cpu = P.s_latin1 = -1;
  for (int i = 0; i < EM_NUM_DTYPES; i++) P.g_storage[i] = P.g_dtype[i] = -1;
  P.memo = malloc((size_t)(tree->n ? tree->n : 1) * sizeof *P.memo);
  if (!P.memo) return em_fail(EM_E_NOMEM, "%s: out of memory", OP);
  for (int64_t i = 0; i < tree->n; i++) P.memo[i] = -1;
  emit_le(&P, 0x80, 2, 1); /* PROTO 2 */
  emit_node(&P, tree->root, 0);
  emit1(&P, '.');
  em_status st = P.err;
  if (st == EM_OK) {
    char prefix[256];
    archive_name(path, prefix, sizeof prefix);
    em_zip_writer w;
    em_zipw_open(&w, OP, path, EM_ZIP_TORCH);
    em_zipw_add(&w, prefix, "data.pkl", P.b, P.n, 0);
    if (P.nst > 1) qsort(P.st, (size_t)P.nst, sizeof *P.st, key_cmp);
    for (int64_t k = 0; k < P.nst; k++) {
      char name[40];
      snprintf(name, sizeof name, "data/%s", P.st[k].key);
      size_t nb = P.st[k].s->nbytes / em_dtype_size(P.st[k].dt) * em_dtype_size(P.st[k].dt);
      em_zipw_add(&w, prefix, name, P.st[k].s->data, nb, 0);
    }
    em_zipw_add(&w, prefix, "version", "3\n", 2, 0);
    st = em_zipw_close(&w);
  }
  free(P.b);
  free(P.memo);
  free(P.st);
  return st;
}

#undef OP
