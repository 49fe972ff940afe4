/*
** l_view.c -- views and layout from Lua: narrow/select/transpose/t/T/mT,
** permute/movedim/swapdims, view/reshape/flatten/unflatten, squeeze/
** unsqueeze, expand/broadcast_to, as_strided, unfold, diagonal, flip,
** index_put_, and storage introspection (untyped_storage, shares_storage,
** is_non_overlapping_and_dense). Each is a method and a module function
** (T.permute(t, ...) == t:permute(...)).
** Every function checks its arguments, makes the result box, then calls the
** engine (view.c / index.c); nothing C owns is held across a Lua error.
*/
#include <stdio.h>
#include <string.h>

#include "l_ember.h"

/* -- Argument helpers -------------------------------------------------------- */

static int64_t optint(lua_State *L, int idx, const char *op, const char *what,
                      int64_t def) {
  if (lua_isnoneornil(L, idx)) return def;
  return l_checkint(L, idx, op, what);
}

/* Integers from idx on: a table (array or T.Size) or varargs numbers.
** Negative values pass through (the engine judges them). Returns the count;
** *next is the first argument after them; with next NULL the list is the
** last argument (anything after it is refused). */
static int checkints(lua_State *L, int idx, const char *op, const char *what,
                     int64_t *out, int max, int *next) {
  int n = 0;
  if (lua_istable(L, idx) && !l_isdtype(L, idx)) {
    if (l_isoptions(L, idx)) l_checknomore(L, idx - 1, op);
    int len = (int)lua_objlen(L, idx);
    if (len > max)
      l_errorf(L, "%s: %d %s given, at most %d are supported", op, len, what, max);
    for (int i = 1; i <= len; i++) {
      lua_rawgeti(L, idx, i);
      out[n++] = l_checkint_at(L, -1, op, what, i);
      lua_pop(L, 1);
    }
    if (next) *next = idx + 1;
    else l_checknomore(L, idx, op);
    return n;
  }
  while (lua_type(L, idx + n) == LUA_TNUMBER) {
    if (n == max) l_errorf(L, "%s: more than %d %s given", op, max, what);
    out[n] = l_checkint_at(L, idx + n, op, what, n + 1);
    n++;
  }
  l_check_no_hole(L, idx, n, op, what);
  /* no options follow these lists: a nil after them is a hole too
  ** (x:permute(1, nil)) */
  if (n > 0 && lua_gettop(L) >= idx + n && lua_isnil(L, idx + n) && !next)
    l_errorf(L, "%s: argument #%d is nil: expected %s (a nil cannot stand for a size "
               "or end a list early)", op, idx + n, what);
  if (next) *next = idx + n;
  else if (n > 0) l_checknomore(L, idx + n - 1, op);
  return n;
}

/* Runs an engine view call into a new box and returns it. */
#define RETURN_BOX(CALL)               \
  do {                                 \
    em_tensor **box = l_newbox(L);     \
    if ((CALL) != EM_OK) l_error(L);   \
    (void)box;                         \
    return 1;                          \
  } while (0)

/* -- The view ops ------------------------------------------------------------ */

static int l_narrow(lua_State *L) {
  l_checknomore(L, 4, "narrow");
  em_tensor *t = l_checktensor(L, 1, "narrow");
  int64_t dim = l_checkint(L, 2, "narrow", "dim");
  int64_t start = l_checkint(L, 3, "narrow", "start");
  int64_t length = l_checkint(L, 4, "narrow", "length");
  RETURN_BOX(em_narrow(t, dim, start, length, box));
}

static int l_select(lua_State *L) {
  l_checknomore(L, 3, "select");
  em_tensor *t = l_checktensor(L, 1, "select");
  int64_t dim = l_checkint(L, 2, "select", "dim");
  int64_t index = l_checkint(L, 3, "select", "index");
  RETURN_BOX(em_select(t, dim, index, box));
}

static int l_transpose(lua_State *L) {
  l_checknomore(L, 3, "transpose");
  em_tensor *t = l_checktensor(L, 1, "transpose");
  int64_t d0 = l_checkint(L, 2, "transpose", "dim0");
  int64_t d1 = l_checkint(L, 3, "transpose", "dim1");
  RETURN_BOX(em_transpose(t, d0, d1, box));
}

static int l_t(lua_State *L) {
  l_checknomore(L, 1, "t");
  em_tensor *t = l_checktensor(L, 1, "t");
  RETURN_BOX(em_t(t, box));
}

static int p_T(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "T");
  RETURN_BOX(em_reverse_dims(t, box));
}

static int p_mT(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "mT");
  RETURN_BOX(em_mT(t, box));
}

/* The conjugate transposes: H (matrices only, as PyTorch; every dim
** reversed), mH and adjoint() (the last two dims). A real tensor's is its
** transpose view; a complex tensor's is the transpose conjugated, a new
** tensor as T.conj's (ember keeps no lazy conjugate bit: docs/dtypes.md). */
static em_status conj_transpose(const em_tensor *t, int all_dims, em_tensor **out) {
  em_tensor *v = NULL;
  em_status st = all_dims ? em_reverse_dims(t, &v) : em_mT(t, &v);
  em_dtype dt = em_tensor_dtype(t);
  if (st != EM_OK || (dt != EM_COMPLEX64 && dt != EM_COMPLEX128)) {
    *out = v;
    return st;
  }
  st = em_conj(v, out);
  em_tensor_release(v);
  return st;
}

static int p_H(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "H");
  if (em_tensor_ndim(t) != 2 && em_tensor_ndim(t) != 0)
    return l_errorf(L, "H: only supported on matrices (2-d tensors), got a %d-d "
                      "tensor; use .mH to transpose the last two dims",
                      em_tensor_ndim(t));
  RETURN_BOX(conj_transpose(t, 1, box));
}

static int p_mH(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "mH");
  RETURN_BOX(conj_transpose(t, 0, box));
}

/* t:adjoint(): a method, so it takes nothing more (the getters take t only) */
static int l_adjoint(lua_State *L) {
  l_checknomore(L, 1, "adjoint");
  em_tensor *t = l_checktensor(L, 1, "adjoint");
  RETURN_BOX(conj_transpose(t, 0, box));
}

static int l_permute(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "permute");
  int64_t dims[EM_MAX_DIMS];
  int n = checkints(L, 2, "permute", "dims", dims, EM_MAX_DIMS, NULL);
  RETURN_BOX(em_permute(t, n, dims, box));
}

static int l_movedim(lua_State *L) {
  l_checknomore(L, 3, "movedim");
  em_tensor *t = l_checktensor(L, 1, "movedim");
  int64_t src[EM_MAX_DIMS], dst[EM_MAX_DIMS];
  int ns, nd, next;
  if (lua_istable(L, 2)) ns = checkints(L, 2, "movedim", "source", src, EM_MAX_DIMS, &next);
  else { src[0] = l_checkint(L, 2, "movedim", "source"); ns = 1; }
  if (lua_istable(L, 3)) nd = checkints(L, 3, "movedim", "destination", dst, EM_MAX_DIMS, &next);
  else { dst[0] = l_checkint(L, 3, "movedim", "destination"); nd = 1; }
  if (ns != nd)
    return l_errorf(L, "movedim: invalid source or destination dims: source has %d "
                      "dims but destination has %d", ns, nd);
  RETURN_BOX(em_movedim(t, ns, src, dst, box));
}

static int shape_op(lua_State *L, const char *op,
                    em_status (*fn)(const em_tensor *, int, const int64_t *, em_tensor **)) {
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t sizes[EM_MAX_DIMS];
  int next, n = checkints(L, 2, op, "size", sizes, EM_MAX_DIMS, &next);
  if (lua_istable(L, next)) l_checknomore(L, next - 1, op);
  if (!lua_isnoneornil(L, next))
    return l_errorf(L, "%s: expected sizes as numbers or one table, got %s for "
                      "argument #%d", op, luaL_typename(L, next), next - 1);
  RETURN_BOX(fn(t, n, sizes, box));
}

static int l_view(lua_State *L) {
  if (l_isdtype(L, 2)) { /* t:view(dtype): PyTorch's Tensor.view(dtype) */
    l_checknomore(L, 2, "view");
    em_tensor *t = l_checktensor(L, 1, "view");
    RETURN_BOX(em_view_dtype(t, l_checkdtype(L, 2, "view"), box));
  }
  return shape_op(L, "view", em_view);
}
static int l_reshape(lua_State *L) { return shape_op(L, "reshape", em_reshape); }
static int l_expand(lua_State *L) { return shape_op(L, "expand", em_expand); }
static int l_broadcast_to(lua_State *L) {
  return shape_op(L, "broadcast_to", em_broadcast_to);
}

static int l_flatten(lua_State *L) {
  l_nooptions(L, 2, 3, "flatten");
  em_tensor *t = l_checktensor(L, 1, "flatten");
  int64_t start = optint(L, 2, "flatten", "start_dim", 1);
  int64_t end = optint(L, 3, "flatten", "end_dim", -1);
  RETURN_BOX(em_flatten(t, start, end, box));
}

static int l_unflatten(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "unflatten");
  int64_t dim = l_checkint(L, 2, "unflatten", "dim");
  int64_t sizes[EM_MAX_DIMS];
  int n = checkints(L, 3, "unflatten", "sizes", sizes, EM_MAX_DIMS, NULL);
  RETURN_BOX(em_unflatten(t, dim, n, sizes, box));
}

static int l_squeeze(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "squeeze");
  if (lua_isnoneornil(L, 2)) RETURN_BOX(em_squeeze(t, 0, NULL, box));
  int64_t dims[EM_MAX_DIMS];
  int n = checkints(L, 2, "squeeze", "dims", dims, EM_MAX_DIMS, NULL);
  if (n == 0 && !lua_istable(L, 2))
    return l_errorf(L, "squeeze: expected a dim or a table of dims, got %s",
                      luaL_typename(L, 2));
  RETURN_BOX(em_squeeze(t, n, dims, box));
}

static int l_unsqueeze(lua_State *L) {
  l_checknomore(L, 2, "unsqueeze");
  em_tensor *t = l_checktensor(L, 1, "unsqueeze");
  int64_t dim = l_checkint(L, 2, "unsqueeze", "dim");
  RETURN_BOX(em_unsqueeze(t, dim, box));
}

/* as_strided(t, size, stride[, storage_offset]) and as_strided_ (in place) */
static int as_strided_common(lua_State *L, const char *op, int inplace) {
  l_nooptions(L, 4, 4, op);
  em_tensor *t = l_checktensor(L, 1, op);
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  if (!lua_istable(L, 2) || !lua_istable(L, 3))
    return l_errorf(L, "%s: expected tables of sizes and strides, got %s and %s", op,
                    luaL_typename(L, 2), luaL_typename(L, 3));
  int next, n = checkints(L, 2, op, "size", sizes, EM_MAX_DIMS, &next);
  int m = checkints(L, 3, op, "stride", strides, EM_MAX_DIMS, &next);
  if (n != m)
    return l_errorf(L, "%s: mismatch in length of strides (%d) and shape (%d)", op, m, n);
  int64_t offset = optint(L, 4, op, "storage_offset", em_tensor_offset(t));
  for (int i = 0; i < n; i++)
    if (sizes[i] < 0) return l_errorf(L, "%s: negative size %lld", op, (long long)sizes[i]);
  if (inplace) {
    if (em_as_strided_(t, n, sizes, strides, offset) != EM_OK) l_error(L);
    /* PyTorch's name for the node in-place as_strided_ records */
    if (em_grad_enabled() && em_tensor_requires_grad(t) &&
        em_tensor_name_grad_fn(t, "AsStridedBackward1") != EM_OK)
      l_error(L);
    lua_settop(L, 1);
    return 1;
  }
  RETURN_BOX(em_as_strided(t, n, sizes, strides, offset, box));
}
static int l_as_strided(lua_State *L) { return as_strided_common(L, "as_strided", 0); }
static int l_as_strided_(lua_State *L) { return as_strided_common(L, "as_strided_", 1); }

static int l_unfold(lua_State *L) {
  l_checknomore(L, 4, "unfold");
  em_tensor *t = l_checktensor(L, 1, "unfold");
  int64_t dim = l_checkint(L, 2, "unfold", "dimension");
  int64_t size = l_checkint(L, 3, "unfold", "size");
  int64_t step = l_checkint(L, 4, "unfold", "step");
  RETURN_BOX(em_unfold(t, dim, size, step, box));
}

static const char *const diagonal_opts[] = {"offset", "dim1", "dim2", NULL};

static int64_t optfield(lua_State *L, int idx, const char *key, int64_t def) {
  lua_getfield(L, idx, key);
  int64_t v = optint(L, lua_gettop(L), "diagonal", key, def);
  lua_pop(L, 1);
  return v;
}

/* t:diagonal([offset [, dim1 [, dim2]]]) or t:diagonal{offset=, dim1=, dim2=} */
static int l_diagonal(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "diagonal");
  int64_t offset, d1, d2;
  if (lua_istable(L, 2)) {
    l_checkopts(L, 2, "diagonal", diagonal_opts);
    offset = optfield(L, 2, "offset", 0);
    d1 = optfield(L, 2, "dim1", 1);
    d2 = optfield(L, 2, "dim2", 2);
  } else {
    offset = optint(L, 2, "diagonal", "offset", 0);
    d1 = optint(L, 3, "diagonal", "dim1", 1);
    d2 = optint(L, 4, "diagonal", "dim2", 2);
  }
  RETURN_BOX(em_diagonal(t, offset, d1, d2, box));
}

static int l_flip(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "flip");
  int64_t dims[EM_MAX_DIMS];
  int n = checkints(L, 2, "flip", "dims", dims, EM_MAX_DIMS, NULL);
  RETURN_BOX(em_flip(t, n, dims, box));
}

/* t:index_put_(indices, values [, accumulate]): indices is a table with one
** entry per leading dim: an int64/int32/bool tensor, or false/{} for a
** whole dim. Returns t. */
static int l_index_put_(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "index_put_");
  if (!lua_istable(L, 2))
    return l_errorf(L, "index_put_: expected a table of index tensors for argument #2, got %s",
                    luaL_typename(L, 2));
  const em_tensor *idx[EM_MAX_DIMS];
  int n = (int)lua_objlen(L, 2);
  if (n > EM_MAX_DIMS)
    return l_errorf(L, "index_put_: %d indices given, at most %d are supported", n,
                      (int)EM_MAX_DIMS);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 2, i);
    em_tensor *x = l_totensor(L, -1);
    if (!x && !(lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1)) &&
        !(lua_istable(L, -1) && lua_objlen(L, -1) == 0))
      return l_errorf(L, "index_put_: indices[%d] must be a tensor, or {} / false for "
                        "a whole dimension, got %s", i, luaL_typename(L, -1));
    idx[i - 1] = x; /* kept alive by the indices table */
    lua_pop(L, 1);
  }
  static const char *const put_opts[] = {"accumulate", NULL};
  l_checknomore(L, 4, "index_put_");
  if (lua_istable(L, 4)) l_checkopts(L, 4, "index_put_", put_opts);
  int acc = lua_isnoneornil(L, 4) ? 0
            : lua_istable(L, 4)   ? l_optbool(L, 4, "accumulate", 0)
                                  : lua_toboolean(L, 4);
  em_tensor *v = l_totensor(L, 3);
  em_tensor *tmp = NULL;
  if (!v) {
    em_scalar s = l_checkscalar(L, 3, "index_put_");
    em_tensor **box = l_newbox(L);
    if (em_full(0, NULL, s, em_tensor_dtype(t), em_tensor_device(t), box) != EM_OK)
      l_error(L);
    tmp = *box;
  }
  if (em_index_put_tensors_(t, n, idx, v ? v : tmp, acc) != EM_OK) l_error_as(L, "index", "index_put_");
  lua_settop(L, 1);
  return 1;
}

/* -- Storage introspection ---------------------------------------------------- */

static char K_STORAGE_MT;

static em_storage *checkstorage(lua_State *L, int idx, const char *op) {
  em_storage **box = lua_touserdata(L, idx);
  if (box && lua_getmetatable(L, idx)) {
    lua_pushlightuserdata(L, &K_STORAGE_MT);
    lua_rawget(L, LUA_REGISTRYINDEX);
    int ok = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (ok && *box) return *box;
  }
  l_errorf(L, "%s: expected an untyped storage, got %s", op, luaL_typename(L, idx));
  return NULL;
}

static int l_untyped_storage(lua_State *L) {
  l_checknomore(L, 1, "untyped_storage");
  em_tensor *t = l_checktensor(L, 1, "untyped_storage");
  em_storage **box = lua_newuserdata(L, sizeof(em_storage *));
  *box = NULL;
  lua_pushlightuserdata(L, &K_STORAGE_MT);
  lua_rawget(L, LUA_REGISTRYINDEX);
  lua_setmetatable(L, -2);
  *box = em_tensor_storage(t);
  em_storage_retain(*box);
  return 1;
}

static int s_gc(lua_State *L) {
  em_storage **box = lua_touserdata(L, 1);
  if (box && *box) {
    em_storage_release(*box);
    *box = NULL;
  }
  return 0;
}

static int s_eq(lua_State *L) {
  em_storage **a = lua_touserdata(L, 1), **b = lua_touserdata(L, 2);
  lua_pushboolean(L, a && b && *a == *b);
  return 1;
}

static int s_data_ptr(lua_State *L) {
  lua_pushnumber(L, (lua_Number)(uintptr_t)em_storage_data(checkstorage(L, 1, "data_ptr")));
  return 1;
}

static int s_nbytes(lua_State *L) {
  lua_pushnumber(L, (lua_Number)em_storage_nbytes(checkstorage(L, 1, "nbytes")));
  return 1;
}

static int s_device(lua_State *L) {
  l_pushdevice(L, em_storage_device(checkstorage(L, 1, "device")));
  return 1;
}

static int s_tostring(lua_State *L) {
  em_storage *s = checkstorage(L, 1, "tostring");
  char buf[96];
  snprintf(buf, sizeof buf, "ember.UntypedStorage(%zu bytes at %p)",
           em_storage_nbytes(s), em_storage_data(s));
  lua_pushstring(L, buf);
  return 1;
}

/* -- resize_ / resize_as_ / set_ (ops/view.c) ------------------------------- */

static const char *const resize_opts[] = {"memory_format", NULL};

/* The options table at idx of resize_/resize_as_: memory_format may only be
** contiguous (ember has no channels_last); nothing after it. */
static void resize_options(lua_State *L, int idx, const char *op) {
  l_checkopts(L, idx, op, resize_opts);
  if (lua_istable(L, idx)) {
    lua_getfield(L, idx, "memory_format");
    const char *mf = lua_isnil(L, -1) ? "contiguous" : lua_tostring(L, -1);
    if (!mf || strcmp(mf, "contiguous") != 0)
      l_errorf(L, "%s: memory_format must be ember.contiguous_format (resize_ makes contiguous "
               "strides), got %s", op, mf ? mf : luaL_typename(L, -1));
    lua_pop(L, 1);
  }
  l_nooptions(L, idx + 1, idx, op);
}

/* t:resize_(size...[, {memory_format}]): sizes as numbers, a table or a T.Size */
static int l_resize_(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "resize_");
  if (lua_isnoneornil(L, 2) || l_isopts(L, 2))
    return l_errorf(L, "resize_: expected the new size (numbers, a table or a T.Size), got %s",
                    luaL_typename(L, 2));
  int64_t sizes[EM_MAX_DIMS];
  int next, n = l_checksizes(L, 2, "resize_", sizes, &next);
  resize_options(L, next, "resize_");
  if (em_resize_(t, n, sizes) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

/* t:resize_as_(other[, {memory_format}]) */
static int l_resize_as_(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "resize_as_");
  em_tensor *o = l_checktensor(L, 2, "resize_as_");
  resize_options(L, 3, "resize_as_");
  if (em_resize_(t, em_tensor_ndim(o), em_tensor_sizes(o)) != EM_OK) l_error_as(L, "resize_", "resize_as_");
  lua_settop(L, 1);
  return 1;
}

/* t:set_(): an empty storage; t:set_(source tensor); t:set_(storage[,
** storage_offset[, size[, stride]]]) (offset 0, the storage's elements as
** a 1-d size, contiguous strides by default) */
static int l_set_(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "set_");
  em_status st;
  if (lua_isnoneornil(L, 2)) {
    l_checknomore(L, 1, "set_");
    em_storage *s = NULL;
    st = em_storage_new(0, em_storage_device(em_tensor_storage(t)), &s);
    if (st == EM_OK) {
      int64_t zero = 0, one = 1;
      st = em_set_storage_(t, s, 0, 1, &zero, &one);
      em_storage_release(s);
    }
  } else if (l_totensor(L, 2)) {
    l_checknomore(L, 2, "set_");
    st = em_set_(t, l_totensor(L, 2));
  } else {
    em_storage *s = checkstorage(L, 2, "set_");
    l_checknomore(L, 5, "set_");
    int64_t offset = optint(L, 3, "set_", "storage_offset", 0);
    int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
    int n, next;
    size_t el = em_dtype_size(em_tensor_dtype(t));
    if (lua_isnoneornil(L, 4)) {
      if (!lua_isnoneornil(L, 5))
        return l_errorf(L, "set_: a stride needs a size (argument #4)");
      n = 1;
      sizes[0] = (int64_t)(em_storage_nbytes(s) / el) - offset;
      if (sizes[0] < 0) sizes[0] = 0;
    } else {
      if (!lua_istable(L, 4))
        return l_errorf(L, "set_: expected a table of sizes for argument #4, got %s",
                        luaL_typename(L, 4));
      n = checkints(L, 4, "set_", "size", sizes, EM_MAX_DIMS, &next);
      for (int i = 0; i < n; i++)
        if (sizes[i] < 0) return l_errorf(L, "set_: negative size %lld", (long long)sizes[i]);
    }
    int64_t *st_or_null = strides;
    if (lua_isnoneornil(L, 5)) {
      st_or_null = NULL; /* contiguous */
    } else {
      if (!lua_istable(L, 5))
        return l_errorf(L, "set_: expected a table of strides for argument #5, got %s",
                        luaL_typename(L, 5));
      int m = checkints(L, 5, "set_", "stride", strides, EM_MAX_DIMS, &next);
      if (m != n)
        return l_errorf(L, "set_: mismatch in length of strides (%d) and shape (%d)", m, n);
    }
    st = em_set_storage_(t, s, offset, n, sizes, st_or_null);
  }
  if (st != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

/* t:is_set_to(other): the same storage, offset, sizes and strides */
static int l_is_set_to(lua_State *L) {
  l_checknomore(L, 2, "is_set_to");
  em_tensor *a = l_checktensor(L, 1, "is_set_to");
  em_tensor *b = l_checktensor(L, 2, "is_set_to");
  int same = em_tensor_storage(a) == em_tensor_storage(b) &&
             em_tensor_offset(a) == em_tensor_offset(b) && em_tensor_ndim(a) == em_tensor_ndim(b) &&
             em_tensor_dtype(a) == em_tensor_dtype(b);
  const int64_t *sa = em_tensor_sizes(a), *sb = em_tensor_sizes(b);
  const int64_t *ta = em_tensor_strides(a), *tb = em_tensor_strides(b);
  for (int i = 0; same && i < em_tensor_ndim(a); i++) same = sa[i] == sb[i] && ta[i] == tb[i];
  lua_pushboolean(L, same);
  return 1;
}

static int l_shares_storage(lua_State *L) {
  l_checknomore(L, 2, "shares_storage");
  em_tensor *a = l_checktensor(L, 1, "shares_storage");
  em_tensor *b = l_checktensor(L, 2, "shares_storage");
  lua_pushboolean(L, em_tensor_storage(a) == em_tensor_storage(b));
  return 1;
}

static int l_is_nod(lua_State *L) {
  l_checknomore(L, 1, "is_non_overlapping_and_dense");
  em_tensor *t = l_checktensor(L, 1, "is_non_overlapping_and_dense");
  lua_pushboolean(L, em_tensor_is_non_overlapping_and_dense(t));
  return 1;
}

static void open_storage(lua_State *L) {
  lua_pushlightuserdata(L, &K_STORAGE_MT);
  lua_createtable(L, 0, 6);
  lua_createtable(L, 0, 4);
  lua_pushcfunction(L, s_data_ptr);
  lua_setfield(L, -2, "data_ptr");
  lua_pushcfunction(L, s_nbytes);
  lua_setfield(L, -2, "nbytes");
  lua_pushcfunction(L, s_nbytes);
  lua_setfield(L, -2, "size");
  lua_pushcfunction(L, s_device);
  lua_setfield(L, -2, "device");
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, s_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, s_eq);
  lua_setfield(L, -2, "__eq");
  lua_pushcfunction(L, s_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushliteral(L, "ember.UntypedStorage");
  lua_setfield(L, -2, "__name");
  lua_rawset(L, LUA_REGISTRYINDEX);
}

void l_open_view(lua_State *L) {
  static const luaL_Reg both[] = {
      {"narrow", l_narrow},
      {"select", l_select},
      {"transpose", l_transpose},
      {"swapdims", l_transpose},
      {"swapaxes", l_transpose},
      {"t", l_t},
      {"permute", l_permute},
      {"movedim", l_movedim},
      {"moveaxis", l_movedim},
      {"view", l_view},
      {"reshape", l_reshape},
      {"flatten", l_flatten},
      {"unflatten", l_unflatten},
      {"squeeze", l_squeeze},
      {"unsqueeze", l_unsqueeze},
      {"expand", l_expand},
      {"broadcast_to", l_broadcast_to},
      {"as_strided", l_as_strided},
      {"as_strided_", l_as_strided_},
      {"unfold", l_unfold},
      {"diagonal", l_diagonal},
      {"flip", l_flip},
      {"adjoint", l_adjoint},
      {"index_put_", l_index_put_},
      {"resize_", l_resize_},
      {"resize_as_", l_resize_as_},
      {"set_", l_set_},
      {"is_set_to", l_is_set_to},
      {"untyped_storage", l_untyped_storage},
      {"is_non_overlapping_and_dense", l_is_nod},
      {NULL, NULL}};
  static const luaL_Reg fns[] = {{"shares_storage", l_shares_storage}, {NULL, NULL}};
  static const luaL_Reg props[] = {
      {"T", p_T}, {"mT", p_mT}, {"H", p_H}, {"mH", p_mH}, {NULL, NULL}};
  l_add_methods(L, both);
  l_add_functions(L, both);
  l_add_functions(L, fns);
  l_add_props(L, props);
  open_storage(L);
}
