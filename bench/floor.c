/* bench/floor.c: the per-call floor -- the per-call workloads of
** bench/workloads.txt done by a minimal but honest binding through Lua's C
** API, as the reference ("C ref" column) of the per-call rows. Built as the
** Lua C module floor.so (CMake target bench_floor, excluded from the normal
** build) and driven by bench/floor_worker.lua.
**
** What it models, and why each cost is one a binding cannot avoid:
** - A tensor is a full userdata of 8 bytes (a box) pointing to a malloc'd
**   header of about em_tensor's size (refcount, ndim, dtype, storage
**   pointer, offset, sizes[16], strides[16]: 288 bytes, em_tensor 312),
**   as bindings/l_core.c l_newbox makes them. The metatable's __gc
**   releases the header and, through its refcount, the storage. So every
**   result is one Lua allocation, one malloc (two for a new storage), one
**   finalizer run by the collector and one or two frees: the costs ember's
**   tensors pay. (ember also keeps released headers in a per-thread cache;
**   the floor uses plain malloc.)
** - A storage is a refcounted struct with its data inline (one malloc);
**   a view shares it (refcount + 1). Refcounts are atomic, as ember's are,
**   since a storage may be shared by tensors of several threads.
** - Every tensor argument is checked as a binding must: a userdata whose
**   metatable is the tensor metatable (lua_getmetatable + lua_rawequal with
**   the metatable held as upvalue 1 of every function: the cheapest exact
**   identity check) and whose box is not yet finalized; every integer
**   argument is checked to be an integer in the int64 range (as
**   l_checkint); dims and positions are 1-based, negative from the end,
**   range-checked with an error naming the value.
** - Only what the benchmark calls is supported; any other form (broadcast,
**   a number operand, other dtypes, a non-contiguous view) is refused with
**   an error rather than computed wrongly.
** The metamethods are those ember uses: __add for `a + b`, __gc; __index
** is a Lua function installed by floor_worker.lua (like ember's
** lua/ember/tensor.lua: string keys -> the methods table, other keys ->
** the C function _index_get), so `t[1]`, `t[k]`, `t:transpose(...)` and
** `t:view(...)` dispatch the way ember's do. */
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FL_MAX_DIMS = 16 };
typedef enum { FL_FLOAT32, FL_INT64 } fl_dtype;
static const size_t fl_dtype_size[] = {4, 8};
static const char *const fl_dtype_name[] = {"float32", "int64"};

typedef struct fl_storage {
  atomic_int refcount;
  int64_t nbytes;
  _Alignas(16) char data[]; /* inline: one malloc per storage */
} fl_storage;

/* The header: em_tensor's fields less its autograd ones (autograd record,
** view base, view version: 24 bytes), so 288 bytes against em_tensor's 312. */
typedef struct fl_tensor {
  atomic_int refcount;
  int ndim;
  fl_dtype dtype;
  fl_storage *storage; /* one reference, owned */
  int64_t offset;      /* in elements */
  int64_t sizes[FL_MAX_DIMS];
  int64_t strides[FL_MAX_DIMS]; /* in elements */
} fl_tensor;
_Static_assert(sizeof(fl_tensor) == 288, "the header is em_tensor's size less 24 bytes");

#define MT lua_upvalueindex(1) /* every function's upvalue 1: the tensor metatable */

/* Lua's formatter has no %lld: format here, raise with luaL_error (which
** adds the position). */
static int errorf(lua_State *L, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return luaL_error(L, "%s", buf);
}

/* -- storages, headers, boxes -------------------------------------------- */

static void storage_release(fl_storage *s) {
  if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) == 1) free(s);
}

static void tensor_release(fl_tensor *t) {
  if (atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) == 1) {
    storage_release(t->storage);
    free(t);
  }
}

static int fl_gc(lua_State *L) {
  fl_tensor **box = lua_touserdata(L, 1);
  if (box && *box) {
    tensor_release(*box);
    *box = NULL;
  }
  return 0;
}

/* A new box (NULL until filled, so that an error before it is filled
** leaves nothing to release) with the tensor metatable. */
static fl_tensor **newbox(lua_State *L) {
  fl_tensor **box = lua_newuserdata(L, sizeof(fl_tensor *));
  *box = NULL;
  lua_pushvalue(L, MT);
  lua_setmetatable(L, -2);
  return box;
}

/* A header over storage s (one reference taken by the caller), not yet
** shaped. Freed (with that reference) if malloc fails. */
static fl_tensor *newheader(lua_State *L, fl_storage *s, fl_dtype dt) {
  fl_tensor *t = malloc(sizeof *t);
  if (!t) {
    storage_release(s);
    luaL_error(L, "out of memory");
  }
  atomic_init(&t->refcount, 1);
  t->dtype = dt;
  t->storage = s;
  t->offset = 0;
  t->ndim = 0;
  return t;
}

/* A new contiguous tensor of ndim/sizes in box: storage + header. */
static fl_tensor *newtensor(lua_State *L, fl_tensor **box, int ndim, const int64_t *sizes,
                            fl_dtype dt) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= sizes[d];
  fl_storage *s = malloc(sizeof *s + (size_t)n * fl_dtype_size[dt]);
  if (!s) luaL_error(L, "out of memory");
  atomic_init(&s->refcount, 1);
  s->nbytes = n * (int64_t)fl_dtype_size[dt];
  fl_tensor *t = newheader(L, s, dt);
  t->ndim = ndim;
  int64_t st = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    t->sizes[d] = sizes[d];
    t->strides[d] = st;
    st *= sizes[d];
  }
  *box = t;
  return t;
}

/* A view of src in box: a header sharing src's storage (refcount + 1),
** with src's dtype and offset; the caller sets ndim, sizes and strides. */
static fl_tensor *newview(lua_State *L, fl_tensor **box, const fl_tensor *src) {
  atomic_fetch_add_explicit(&src->storage->refcount, 1, memory_order_relaxed);
  fl_tensor *t = newheader(L, src->storage, src->dtype);
  t->offset = src->offset;
  *box = t;
  return t;
}

/* -- argument checks ------------------------------------------------------ */

static fl_tensor *checktensor(lua_State *L, int idx, const char *op) {
  fl_tensor **box = lua_touserdata(L, idx);
  if (box && lua_getmetatable(L, idx)) {
    int is = lua_rawequal(L, -1, MT);
    lua_pop(L, 1);
    if (is) {
      if (!*box) errorf(L, "%s: argument #%d is a finalized tensor", op, idx);
      return *box;
    }
  }
  errorf(L, "%s: expected a tensor for argument #%d, got %s", op, idx, luaL_typename(L, idx));
  return NULL;
}

/* An integer in the int64 range, as bindings/l_core.c l_checkint. */
static int64_t checkint(lua_State *L, int idx, const char *op, const char *what) {
  if (lua_type(L, idx) != LUA_TNUMBER)
    errorf(L, "%s: expected an integer for %s, got %s", op, what, luaL_typename(L, idx));
  double v = lua_tonumber(L, idx);
  if (!(v == floor(v) && fabs(v) < 9223372036854775808.0))
    errorf(L, "%s: expected an integer for %s, got %.14g", op, what, v);
  return (int64_t)v;
}

/* A 1-based dim (negative from the end) of an ndim tensor -> 0-based. */
static int wrapdim(lua_State *L, int64_t d, int ndim, const char *op) {
  int n = ndim > 0 ? ndim : 1;
  if (d < -n || d > n || d == 0)
    errorf(L, "%s: dimension out of range (expected to be in range of [%d, %d] "
              "without 0, but got %lld)", op, -n, n, (long long)d);
  return (int)(d < 0 ? d + n : d - 1);
}

/* A 1-based position (negative from the end) along a dim of size n ->
** 0-based. */
static int64_t wrappos(lua_State *L, int64_t i, int64_t n, int dim) {
  if (i < -n || i > n || i == 0)
    errorf(L, "index %lld is out of bounds for dimension %d with size %lld%s", (long long)i,
           dim + 1, (long long)n, i == 0 ? " (positions are 1-based)" : "");
  return i < 0 ? i + n : i - 1;
}

/* -- the workloads -------------------------------------------------------- */

/* Is t contiguous (row-major, size-1 dims' strides free)? */
static int contiguous(const fl_tensor *t) {
  int64_t st = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->sizes[d] != 1 && t->strides[d] != st) return 0;
    st *= t->sizes[d];
  }
  return 1;
}

/* a + b (__add): same-shape contiguous float32 tensors; a new tensor. */
static int fl_add(lua_State *L) {
  fl_tensor *a = checktensor(L, 1, "add"), *b = checktensor(L, 2, "add");
  if (a->dtype != FL_FLOAT32 || b->dtype != FL_FLOAT32)
    return errorf(L, "add: the floor adds float32 tensors only");
  int same = a->ndim == b->ndim;
  for (int d = 0; same && d < a->ndim; d++) same = a->sizes[d] == b->sizes[d];
  if (!same) return errorf(L, "add: the floor does not broadcast");
  if (!contiguous(a) || !contiguous(b))
    return errorf(L, "add: the floor adds contiguous tensors only");
  fl_tensor *c = newtensor(L, newbox(L), a->ndim, a->sizes, FL_FLOAT32);
  int64_t n = 1;
  for (int d = 0; d < a->ndim; d++) n *= a->sizes[d];
  const float *pa = (const float *)a->storage->data + a->offset;
  const float *pb = (const float *)b->storage->data + b->offset;
  float *pc = (float *)c->storage->data;
  for (int64_t i = 0; i < n; i++) pc[i] = pa[i] + pb[i];
  return 1;
}

/* t[i]: select along dim 1 (the axis is removed), a view. */
static void select_first(lua_State *L, fl_tensor *t, int64_t i) {
  if (t->ndim == 0) errorf(L, "index: a 0-d tensor cannot be indexed by a position");
  int64_t p = wrappos(L, i, t->sizes[0], 0);
  fl_tensor *v = newview(L, newbox(L), t);
  v->offset += p * t->strides[0];
  v->ndim = t->ndim - 1;
  for (int d = 1; d < t->ndim; d++) {
    v->sizes[d - 1] = t->sizes[d];
    v->strides[d - 1] = t->strides[d];
  }
}

/* Reads entry e of a range table at idx: nil -> def, else an integer. */
static int64_t range_entry(lua_State *L, int idx, int e, int64_t def) {
  lua_rawgeti(L, idx, e);
  int64_t v = lua_isnil(L, -1) ? def : checkint(L, -1, "index", "a range bound");
  lua_pop(L, 1);
  return v;
}

/* t[{ e1, e2, ... }]: per leading dim, an integer (select, the axis is
** removed) or a range table {} / {i} / {first, last} / {first, last, step}
** (inclusive, clamped like Python slices, step > 0; the axis is kept).
** Dims the key does not name are kept whole. A view. */
static void slice(lua_State *L, fl_tensor *t, int key) {
  int n = (int)lua_objlen(L, key);
  if (n > t->ndim)
    errorf(L, "index: too many indices for a tensor of dimension %d (got %d)", t->ndim, n);
  fl_tensor *v = newview(L, newbox(L), t);
  int out = 0;
  for (int d = 0; d < n; d++) {
    lua_rawgeti(L, key, d + 1);
    int e = lua_gettop(L), ty = lua_type(L, e);
    int64_t size = t->sizes[d], stride = t->strides[d];
    if (ty == LUA_TNUMBER) {
      v->offset += wrappos(L, checkint(L, e, "index", "an index"), size, d) * stride;
    } else if (ty == LUA_TTABLE) {
      int len = (int)lua_objlen(L, e);
      if (len > 3) errorf(L, "index: a range has at most 3 entries, got %d", len);
      int64_t first = range_entry(L, e, 1, 1);
      int64_t last = range_entry(L, e, 2, len == 1 ? first : -1);
      int64_t step = range_entry(L, e, 3, 1);
      if (step <= 0) errorf(L, "index: step must be positive, got %lld", (long long)step);
      if (first < 0) first += size + 1;
      if (first < 1) first = 1;
      if (first > size + 1) first = size + 1;
      if (last < 0) last += size + 1;
      if (last > size) last = size;
      int64_t len_out = last >= first ? (last - first) / step + 1 : 0;
      v->offset += (first - 1) * stride;
      v->sizes[out] = len_out;
      v->strides[out] = stride * step;
      out++;
    } else {
      errorf(L, "index: the floor takes integers and range tables, got %s at [%d]",
             luaL_typename(L, e), d + 1);
    }
    lua_pop(L, 1);
  }
  for (int d = n; d < t->ndim; d++, out++) {
    v->sizes[out] = t->sizes[d];
    v->strides[out] = t->strides[d];
  }
  v->ndim = out;
}

/* _index_get(t, k): the non-string keys of __index (floor_worker.lua). */
static int fl_index_get(lua_State *L) {
  fl_tensor *t = checktensor(L, 1, "index");
  switch (lua_type(L, 2)) {
    case LUA_TNUMBER: select_first(L, t, checkint(L, 2, "index", "an index")); break;
    case LUA_TTABLE: slice(L, t, 2); break;
    default: return errorf(L, "index: invalid key of type %s", luaL_typename(L, 2));
  }
  return 1;
}

/* t:transpose(d0, d1): a view with two dims swapped. */
static int fl_transpose(lua_State *L) {
  fl_tensor *t = checktensor(L, 1, "transpose");
  int d0 = wrapdim(L, checkint(L, 2, "transpose", "dim0"), t->ndim, "transpose");
  int d1 = wrapdim(L, checkint(L, 3, "transpose", "dim1"), t->ndim, "transpose");
  fl_tensor *v = newview(L, newbox(L), t);
  v->ndim = t->ndim;
  memcpy(v->sizes, t->sizes, sizeof(int64_t) * t->ndim);
  memcpy(v->strides, t->strides, sizeof(int64_t) * t->ndim);
  if (t->ndim > 0) {
    v->sizes[d0] = t->sizes[d1], v->sizes[d1] = t->sizes[d0];
    v->strides[d0] = t->strides[d1], v->strides[d1] = t->strides[d0];
  }
  return 1;
}

/* t:view(s1, s2, ...): sizes as integers, one of them -1 (inferred); the
** floor views contiguous tensors only (ember also views compatible
** strides). A view. */
static int fl_view(lua_State *L) {
  fl_tensor *t = checktensor(L, 1, "view");
  int nd = lua_gettop(L) - 1;
  if (nd > FL_MAX_DIMS) return errorf(L, "view: at most %d dims, got %d", FL_MAX_DIMS, nd);
  int64_t sizes[FL_MAX_DIMS] = {0}, numel = 1, known = 1;
  int infer = -1;
  for (int d = 0; d < t->ndim; d++) numel *= t->sizes[d];
  for (int d = 0; d < nd; d++) {
    sizes[d] = checkint(L, d + 2, "view", "a size");
    if (sizes[d] == -1) {
      if (infer >= 0) return errorf(L, "view: only one dimension can be inferred");
      infer = d;
    } else if (sizes[d] < 0) {
      return errorf(L, "view: invalid size %lld", (long long)sizes[d]);
    } else {
      known *= sizes[d];
    }
  }
  if (infer >= 0 && known != 0 && numel % known == 0) sizes[infer] = numel / known;
  else if (infer >= 0 || known != numel) known = -1;
  if (known < 0) {
    char buf[FL_MAX_DIMS * 24 + 4];
    int p = snprintf(buf, sizeof buf, "[");
    for (int d = 0; d < nd; d++)
      p += snprintf(buf + p, sizeof buf - p, "%s%lld", d ? ", " : "", (long long)sizes[d]);
    snprintf(buf + p, sizeof buf - p, "]");
    return errorf(L, "view: shape %s is invalid for input of size %lld", buf, (long long)numel);
  }
  if (!contiguous(t)) return errorf(L, "view: the floor views contiguous tensors only");
  fl_tensor *v = newview(L, newbox(L), t);
  v->ndim = nd;
  int64_t st = 1;
  for (int d = nd - 1; d >= 0; d--) {
    v->sizes[d] = sizes[d];
    v->strides[d] = st;
    st *= sizes[d];
  }
  return 1;
}

/* tensor{x1, x2, ...}: a 1-d tensor from a flat table of numbers; all
** integers -> int64, else float32 (ember's inference for numbers). */
static int fl_tensor_new(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int n = (int)lua_objlen(L, 1), isfloat = 0;
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    if (lua_type(L, -1) != LUA_TNUMBER)
      errorf(L, "tensor: expected numbers, got %s at [%d]", luaL_typename(L, -1), i);
    double v = lua_tonumber(L, -1);
    if (!(v == floor(v) && fabs(v) < 9223372036854775808.0)) isfloat = 1;
    lua_pop(L, 1);
  }
  int64_t size = n;
  fl_tensor *t = newtensor(L, newbox(L), 1, &size, isfloat ? FL_FLOAT32 : FL_INT64);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    double v = lua_tonumber(L, -1);
    if (isfloat) ((float *)t->storage->data)[i - 1] = (float)v;
    else ((int64_t *)t->storage->data)[i - 1] = (int64_t)v;
    lua_pop(L, 1);
  }
  return 1;
}

/* -- set-up and checking helpers (not timed) ----------------------------- */

/* rand(s1, s2, ...): a contiguous float32 tensor of uniform [0, 1). */
static int fl_rand(lua_State *L) {
  int nd = lua_gettop(L);
  if (nd > FL_MAX_DIMS) return errorf(L, "rand: at most %d dims", FL_MAX_DIMS);
  int64_t sizes[FL_MAX_DIMS] = {0}, n = 1;
  for (int d = 0; d < nd; d++) {
    sizes[d] = checkint(L, d + 1, "rand", "a size");
    if (sizes[d] < 0) return errorf(L, "rand: invalid size %lld", (long long)sizes[d]);
    n *= sizes[d];
  }
  fl_tensor *t = newtensor(L, newbox(L), nd, sizes, FL_FLOAT32);
  for (int64_t i = 0; i < n; i++) ((float *)t->storage->data)[i] = (float)rand() / RAND_MAX;
  return 1;
}

/* tolist(t) -> values (flat, in logical order), sizes, dtype name. */
static int fl_tolist(lua_State *L) {
  fl_tensor *t = checktensor(L, 1, "tolist");
  int64_t n = 1, idx[FL_MAX_DIMS] = {0};
  for (int d = 0; d < t->ndim; d++) n *= t->sizes[d];
  lua_createtable(L, (int)n, 0);
  for (int64_t k = 0; k < n; k++) {
    int64_t off = t->offset;
    for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
    if (t->dtype == FL_FLOAT32) lua_pushnumber(L, ((float *)t->storage->data)[off]);
    else lua_pushnumber(L, (lua_Number)((int64_t *)t->storage->data)[off]);
    lua_rawseti(L, -2, (int)k + 1);
    for (int d = t->ndim - 1; d >= 0; d--) { /* next index, last dim fastest */
      if (++idx[d] < t->sizes[d]) break;
      idx[d] = 0;
    }
  }
  lua_createtable(L, t->ndim, 0);
  for (int d = 0; d < t->ndim; d++) {
    lua_pushnumber(L, (lua_Number)t->sizes[d]);
    lua_rawseti(L, -2, d + 1);
  }
  lua_pushstring(L, fl_dtype_name[t->dtype]);
  return 3;
}

/* refcount(t) -> the header's and the storage's reference counts. */
static int fl_refcount(lua_State *L) {
  fl_tensor *t = checktensor(L, 1, "refcount");
  lua_pushinteger(L, atomic_load(&t->refcount));
  lua_pushinteger(L, atomic_load(&t->storage->refcount));
  return 2;
}

/* The module: { tensor, rand, tolist, refcount, _mt, _methods, _index_get }.
** The metatable holds __add and __gc; floor_worker.lua installs __index. */
int luaopen_floor(lua_State *L) {
  lua_newtable(L); /* 1: module */
  lua_createtable(L, 0, 4); /* 2: the tensor metatable */
  lua_pushliteral(L, "floor.Tensor");
  lua_setfield(L, 2, "__name");
  lua_pushcfunction(L, fl_gc);
  lua_setfield(L, 2, "__gc");
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, fl_add, 1);
  lua_setfield(L, 2, "__add");
  lua_pushvalue(L, 2);
  lua_setfield(L, 1, "_mt");
  lua_createtable(L, 0, 2); /* 3: methods */
  static const luaL_Reg methods[] = {{"transpose", fl_transpose}, {"view", fl_view}, {NULL, NULL}};
  for (const luaL_Reg *r = methods; r->name; r++) {
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, r->func, 1);
    lua_setfield(L, 3, r->name);
  }
  lua_setfield(L, 1, "_methods");
  static const luaL_Reg fns[] = {{"tensor", fl_tensor_new}, {"rand", fl_rand},
                                 {"tolist", fl_tolist},     {"refcount", fl_refcount},
                                 {"_index_get", fl_index_get}, {NULL, NULL}};
  for (const luaL_Reg *r = fns; r->name; r++) {
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, r->func, 1);
    lua_setfield(L, 1, r->name);
  }
  lua_pop(L, 1); /* the metatable */
  return 1;
}
