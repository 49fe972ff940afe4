/*
** l_interop.c -- sharing memory with the outside: the C half of T.from_ffi
** (the owner anchor), .npy/.npz load and save, T.save/T.load (the value
** tree codec), DLPack capsules, and ember_lua_open for host programs.
**
** Owners of foreign memory (docs/interop.md, "Owners"): T.from_ffi anchors
** its owner in the registry (luaL_ref) and wraps the memory in a storage
** whose deleter gets a small node naming that reference. The deleter may run
** anywhere a storage is released -- inside an engine call, in a tensor's
** __gc, in a host's C code, on another thread -- so it never calls Lua: it
** only pushes the node onto a mutex-guarded pending list belonging to the
** lua_State. The binding drains that list (luaL_unref) at the start of every
** interop call and from a GC sentinel: a userdata whose __gc drains the list
** and, while anchors are outstanding, makes a fresh sentinel, so a finished
** owner is released at most one collection cycle after its last view died.
** The list outlives the lua_State if storages do (a host may keep tensors
** after lua_close): it is refcounted by the state and by each node, and
** once the state is closed a deleter just frees its node.
**
** Nothing C owns is held across a Lua error: npz/load results sit in a
** guard userdata whose __gc frees them; byte buffers are userdata too.
*/
#define _GNU_SOURCE /* dladdr, RTLD_NODELETE */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include "l_ember.h"

static char K_ANCHORS, K_CAPSULE_MT, K_GUARD_MT, K_BUF_MT, K_SENTINEL_MT;

/* -- Owner anchors -------------------------------------------------------- */

typedef struct anchor_node {
  struct anchor_node *next;
  struct anchor_list *list;
  int ref;
} anchor_node;

typedef struct anchor_list {
  pthread_mutex_t mu;
  anchor_node *pending;
  int refs;        /* the state's (until closed) + one per live node */
  int closed;
  int sentinel;    /* a sentinel is alive */
} anchor_list;

static void list_unref_locked(anchor_list *a, int *free_it) {
  *free_it = --a->refs == 0;
}

static void list_drop(anchor_list *a) {
  int free_it;
  pthread_mutex_lock(&a->mu);
  list_unref_locked(a, &free_it);
  pthread_mutex_unlock(&a->mu);
  if (free_it) {
    pthread_mutex_destroy(&a->mu);
    free(a);
  }
}

/* The storage deleter: never calls Lua. */
static void owner_deleter(void *ctx, void *data, size_t nbytes) {
  anchor_node *n = ctx;
  anchor_list *a = n->list;
  pthread_mutex_lock(&a->mu);
  if (!a->closed) {
    n->next = a->pending;
    a->pending = n;
    pthread_mutex_unlock(&a->mu);
    return;
  }
  pthread_mutex_unlock(&a->mu);
  free(n);
  list_drop(a);
  (void)data; (void)nbytes;
}

static anchor_list *get_anchors(lua_State *L) {
  lua_pushlightuserdata(L, &K_ANCHORS);
  lua_rawget(L, LUA_REGISTRYINDEX);
  anchor_list **box = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return box ? *box : NULL;
}

/* Releases the owners whose storages have died. Safe in a finalizer. */
static void drain(lua_State *L) {
  anchor_list *a = get_anchors(L);
  if (!a) return;
  pthread_mutex_lock(&a->mu);
  anchor_node *n = a->pending;
  a->pending = NULL;
  pthread_mutex_unlock(&a->mu);
  while (n) {
    anchor_node *next = n->next;
    luaL_unref(L, LUA_REGISTRYINDEX, n->ref);
    free(n);
    list_drop(a);
    n = next;
  }
}

static void new_sentinel(lua_State *L, anchor_list *a);

static int sentinel_gc(lua_State *L) {
  drain(L);
  anchor_list *a = get_anchors(L);
  if (!a) return 0;
  pthread_mutex_lock(&a->mu);
  int outstanding = a->refs > 1 && !a->closed;
  a->sentinel = outstanding;
  pthread_mutex_unlock(&a->mu);
  if (outstanding) new_sentinel(L, a);
  return 0;
}

/* An unreachable userdata whose finalizer runs at the next collection. */
static void new_sentinel(lua_State *L, anchor_list *a) {
  a->sentinel = 1;
  lua_newuserdata(L, 1);
  lua_pushlightuserdata(L, &K_SENTINEL_MT);
  lua_rawget(L, LUA_REGISTRYINDEX);
  lua_setmetatable(L, -2);
  lua_pop(L, 1);
}

static int anchors_gc(lua_State *L) {
  anchor_list **box = lua_touserdata(L, 1);
  anchor_list *a = *box;
  if (!a) return 0;
  *box = NULL;
  pthread_mutex_lock(&a->mu);
  a->closed = 1;
  anchor_node *n = a->pending;
  a->pending = NULL;
  pthread_mutex_unlock(&a->mu);
  while (n) { /* the registry goes with the state: just free the nodes */
    anchor_node *next = n->next;
    free(n);
    list_drop(a);
    n = next;
  }
  list_drop(a);
  return 0;
}

/* T._from_ffi(address, dtype, sizes, strides|nil, owner|nil, capacity|nil) */
static int l_from_ffi(lua_State *L) {
  const char *op = "from_ffi";
  drain(L);
  if (lua_type(L, 1) != LUA_TNUMBER)
    return l_errorf(L, "%s: expected a pointer address", op);
  double addr_d = lua_tonumber(L, 1);
  if (!(addr_d >= 0 && addr_d < 18446744073709551616.0) || addr_d != floor(addr_d))
    return l_errorf(L, "%s: invalid pointer address %g", op, addr_d);
  char *ptr = (char *)(uintptr_t)addr_d;
  em_dtype dt = l_checkdtype(L, 2, op);
  int64_t sizes[EM_MAX_DIMS], strides[EM_MAX_DIMS];
  int next;
  luaL_checktype(L, 3, LUA_TTABLE);
  int ndim = l_checksizes(L, 3, op, sizes, &next);
  if (lua_isnoneornil(L, 4)) {
    int64_t st = 1;
    for (int i = ndim - 1; i >= 0; i--) {
      strides[i] = st;
      if (__builtin_mul_overflow(st, sizes[i] > 1 ? sizes[i] : 1, &st))
        return l_errorf(L, "%s: sizes overflow", op);
    }
  } else {
    if (!lua_istable(L, 4))
      return l_errorf(L, "%s: strides must be a table, got %s", op, luaL_typename(L, 4));
    int n = (int)lua_objlen(L, 4);
    if (n != ndim)
      return l_errorf(L, "%s: %d strides given for %d sizes", op, n, ndim);
    for (int i = 0; i < ndim; i++) {
      lua_rawgeti(L, 4, i + 1);
      strides[i] = l_checkint_at(L, -1, op, "strides", i + 1);
      lua_pop(L, 1);
      if (strides[i] < 0)
        return l_errorf(L, "%s: negative stride %lld (strides[%d]) is not supported",
                        op, (long long)strides[i], i + 1);
    }
  }
  int nonempty = 1;
  int64_t last = 0, step, nbytes = 0;
  for (int i = 0; i < ndim; i++) nonempty = nonempty && sizes[i] > 0;
  size_t itemsize = em_dtype_size(dt);
  if (nonempty) {
    for (int i = 0; i < ndim; i++)
      if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &step) ||
          __builtin_add_overflow(last, step, &last))
        return l_errorf(L, "%s: sizes and strides overflow", op);
    if (__builtin_mul_overflow(last + 1, (int64_t)itemsize, &nbytes))
      return l_errorf(L, "%s: sizes and strides overflow", op);
  }
  if (!lua_isnoneornil(L, 6)) {
    int64_t cap = l_checkint(L, 6, op, "nbytes");
    if (nbytes > cap)
      return l_errorf(L, "%s: %s elements need %lld bytes but the memory holds %lld",
                      op, em_dtype_name(dt), (long long)nbytes, (long long)cap);
  }
  if (nbytes > 0 && !ptr) return l_errorf(L, "%s: NULL pointer", op);
  if ((uintptr_t)ptr % itemsize != 0)
    return l_errorf(L, "%s: pointer %p is not aligned for %s (%zu bytes)", op,
                    (void *)ptr, em_dtype_name(dt), itemsize);
  em_tensor **box = l_newbox(L);
  int box_idx = lua_gettop(L);
  anchor_node *node = NULL;
  anchor_list *a = NULL;
  if (!lua_isnoneornil(L, 5)) {
    a = get_anchors(L);
    lua_pushvalue(L, 5);
    int ref = luaL_ref(L, LUA_REGISTRYINDEX);
    node = malloc(sizeof *node);
    if (!node) {
      luaL_unref(L, LUA_REGISTRYINDEX, ref);
      return l_errorf(L, "%s: out of memory", op);
    }
    node->ref = ref;
    node->list = a;
    node->next = NULL;
    pthread_mutex_lock(&a->mu);
    a->refs++;
    pthread_mutex_unlock(&a->mu);
  }
  em_storage *s;
  if (em_storage_wrap(nbytes ? ptr : NULL, (size_t)nbytes, em_cpu(),
                      node ? owner_deleter : NULL, node, &s) != EM_OK) {
    if (node) {
      luaL_unref(L, LUA_REGISTRYINDEX, node->ref);
      free(node);
      list_drop(a);
    }
    return l_error(L);
  }
  /* from here the storage owns the node */
  em_status st = em_tensor_new(s, 0, ndim, sizes, strides, dt, box);
  em_storage_release(s);
  if (st != EM_OK) return l_error(L);
  if (a && !a->sentinel) new_sentinel(L, a);
  lua_settop(L, box_idx);
  return 1;
}

/* Number of owner anchors not yet released (for tests). */
static int l_ffi_anchors(lua_State *L) {
  drain(L);
  anchor_list *a = get_anchors(L);
  pthread_mutex_lock(&a->mu);
  int n = a->refs - 1;
  pthread_mutex_unlock(&a->mu);
  lua_pushinteger(L, n);
  return 1;
}

/* -- Guards and byte buffers ---------------------------------------------- */

typedef struct {
  void (*free)(void *);
  void *p;
} guard;

static int guard_gc(lua_State *L) {
  guard *g = lua_touserdata(L, 1);
  if (g->p) g->free(g->p);
  g->p = NULL;
  return 0;
}

static guard *push_guard(lua_State *L, void (*fn)(void *)) {
  guard *g = lua_newuserdata(L, sizeof *g);
  g->free = fn;
  g->p = NULL;
  lua_pushlightuserdata(L, &K_GUARD_MT);
  lua_rawget(L, LUA_REGISTRYINDEX);
  lua_setmetatable(L, -2);
  return g;
}

static void npz_free_v(void *p) { em_npz_free(p); }
static void loaded_free_v(void *p) { em_loaded_free(p); }

typedef struct {
  char *p;
  size_t n, cap;
} bytebuf;

static int buf_gc(lua_State *L) {
  bytebuf *b = lua_touserdata(L, 1);
  free(b->p);
  b->p = NULL;
  return 0;
}

static bytebuf *push_buf(lua_State *L) {
  bytebuf *b = lua_newuserdata(L, sizeof *b);
  memset(b, 0, sizeof *b);
  lua_pushlightuserdata(L, &K_BUF_MT);
  lua_rawget(L, LUA_REGISTRYINDEX);
  lua_setmetatable(L, -2);
  return b;
}

static void buf_add(lua_State *L, bytebuf *b, const void *p, size_t n) {
  if (b->cap - b->n < n) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->n < n) {
      if (cap > ((size_t)-1) / 2) l_errorf(L, "save: out of memory");
      cap *= 2;
    }
    char *q = realloc(b->p, cap);
    if (!q) l_errorf(L, "save: out of memory");
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
}

static void buf_u8(lua_State *L, bytebuf *b, uint8_t v) { buf_add(L, b, &v, 1); }
static void buf_u64(lua_State *L, bytebuf *b, uint64_t v) {
  uint8_t e[8];
  for (int i = 0; i < 8; i++) e[i] = (uint8_t)(v >> (8 * i));
  buf_add(L, b, e, 8);
}

/* -- .npy / .npz ----------------------------------------------------------- */

static const char *const map_opts[] = {"mmap", "mode", NULL};

/* The options {mmap = true, mode = "r" | "c" | "r+"} of a file load at idx. */
static em_npy_mode map_mode(lua_State *L, int idx, const char *op) {
  l_checkopts(L, idx, op, map_opts);
  em_npy_mode mode = EM_NPY_READ;
  if (l_optbool(L, idx, "mmap", 0)) mode = EM_NPY_MMAP_COPY;
  if (lua_istable(L, idx)) {
    lua_getfield(L, idx, "mode");
    if (!lua_isnil(L, -1)) {
      const char *m = lua_tostring(L, -1);
      if (m && (strcmp(m, "r") == 0 || strcmp(m, "c") == 0)) mode = EM_NPY_MMAP_COPY;
      else if (m && strcmp(m, "r+") == 0) mode = EM_NPY_MMAP_SHARED;
      else
        l_errorf(L, "%s: unknown mode '%s' (expected 'r', 'c' or 'r+')", op,
                 m ? m : luaL_typename(L, -1));
    }
    lua_pop(L, 1);
  }
  return mode;
}

/* T.load_npy(path, {mmap = true, mode = "r" | "c" | "r+"}) */
static int l_load_npy(lua_State *L) {
  drain(L);
  const char *path = luaL_checkstring(L, 1);
  em_npy_mode mode = map_mode(L, 2, "load_npy");
  em_tensor **box = l_newbox(L);
  if (em_npy_load(path, mode, box) != EM_OK) return l_error(L);
  return 1;
}

static int l_save_npy(lua_State *L) {
  l_checknomore(L, 2, "save_npy");
  drain(L);
  const char *path = luaL_checkstring(L, 1);
  em_tensor *t = l_checktensor(L, 2, "save_npy");
  if (em_npy_save(path, t) != EM_OK) return l_error(L);
  return 0;
}

static int l_load_npz(lua_State *L) {
  l_checknomore(L, 1, "load_npz");
  drain(L);
  const char *path = luaL_checkstring(L, 1);
  guard *g = push_guard(L, npz_free_v);
  em_npz *z;
  if (em_npz_load(path, &z) != EM_OK) return l_error(L);
  g->p = z;
  int64_t n = em_npz_count(z);
  lua_createtable(L, 0, (int)n);
  for (int64_t i = 0; i < n; i++) {
    em_tensor *t = em_npz_tensor(z, i);
    em_tensor_retain(t);
    ember_lua_push_tensor(L, t);
    lua_setfield(L, -2, em_npz_name(z, i));
  }
  return 1;
}

static const char *const npz_opts[] = {"compressed", NULL};

/* T.save_npz(path, {name = tensor, ...} or {tensor, ...}, {compressed=}) */
static int l_save_npz(lua_State *L) {
  drain(L);
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  l_checkopts(L, 3, "save_npz", npz_opts);
  int compress = l_optbool(L, 3, "compressed", 0);
  /* collect (name, tensor) pairs; names sorted for a deterministic file */
  lua_settop(L, 3);
  lua_newtable(L); /* 4: list of names */
  lua_newtable(L); /* 5: name -> tensor */
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    char name[64];
    if (lua_type(L, -2) == LUA_TSTRING) {
      lua_pushvalue(L, -2);
    } else if (lua_type(L, -2) == LUA_TNUMBER) {
      double k = lua_tonumber(L, -2);
      if (k != floor(k) || k < 1 || k > 1e15)
        return l_errorf(L, "save_npz: keys must be names or positions 1, 2, ...");
      snprintf(name, sizeof name, "arr_%lld", (long long)k - 1); /* numpy's savez(*args) */
      lua_pushstring(L, name);
    } else {
      return l_errorf(L, "save_npz: keys must be names or positions 1, 2, ...");
    }
    if (!l_totensor(L, -2))
      return l_errorf(L, "save_npz: member '%s' is a %s, not a tensor", lua_tostring(L, -1),
                      luaL_typename(L, -2));
    lua_pushvalue(L, -1);
    lua_rawget(L, 5);
    if (!lua_isnil(L, -1))
      return l_errorf(L, "save_npz: two members named '%s'", lua_tostring(L, -2));
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_pushvalue(L, -3);
    lua_rawset(L, 5);
    lua_rawseti(L, 4, ++n);
    lua_pop(L, 1);
  }
  /* sort names: an insertion sort on the Lua table */
  for (int i = 2; i <= n; i++)
    for (int j = i; j > 1; j--) {
      lua_rawgeti(L, 4, j - 1);
      lua_rawgeti(L, 4, j);
      if (strcmp(lua_tostring(L, -2), lua_tostring(L, -1)) > 0) {
        lua_rawseti(L, 4, j - 1);
        lua_rawseti(L, 4, j);
      } else {
        lua_pop(L, 2);
        break;
      }
    }
  const char **names = lua_newuserdata(L, (n ? n : 1) * sizeof *names);
  const em_tensor **ts = lua_newuserdata(L, (n ? n : 1) * sizeof *ts);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 4, i + 1);
    names[i] = lua_tostring(L, -1); /* the strings stay anchored by table 4 */
    lua_rawget(L, 5);
    ts[i] = l_totensor(L, -1);      /* the tensors by the argument table */
    lua_pop(L, 1);
  }
  if (em_npz_save(path, n, names, (const em_tensor *const *)ts, compress) != EM_OK)
    return l_error(L);
  return 0;
}

/* -- .safetensors ---------------------------------------------------------- */

static void safetensors_free_v(void *p) { em_safetensors_free(p); }

/* Pushes {name = tensor, ...} and {key = value, ...} of f. */
static int push_safetensors(lua_State *L, em_safetensors *f) {
  int64_t n = em_safetensors_count(f), nm = em_safetensors_meta_count(f);
  lua_createtable(L, 0, n > 1 << 20 ? 1 << 20 : (int)n);
  for (int64_t i = 0; i < n; i++) {
    em_tensor *t = em_safetensors_tensor(f, i);
    em_tensor_retain(t);
    ember_lua_push_tensor(L, t);
    lua_setfield(L, -2, em_safetensors_name(f, i));
  }
  lua_createtable(L, 0, nm > 1 << 20 ? 1 << 20 : (int)nm);
  for (int64_t i = 0; i < nm; i++) {
    lua_pushstring(L, em_safetensors_meta_value(f, i));
    lua_setfield(L, -2, em_safetensors_meta_key(f, i));
  }
  return 2;
}

/* The path argument at idx of op. */
static const char *st_path(lua_State *L, int idx, const char *op) {
  if (lua_type(L, idx) != LUA_TSTRING)
    l_errorf(L, "%s: expected a path (a string) for argument #%d, got %s", op, idx,
             luaL_typename(L, idx));
  return lua_tostring(L, idx);
}

/* T.load_safetensors(path, {mmap = true, mode = "r" | "c" | "r+"}) ->
** tensors, metadata */
static int l_load_safetensors(lua_State *L) {
  drain(L);
  const char *path = st_path(L, 1, "load_safetensors");
  em_npy_mode mode = map_mode(L, 2, "load_safetensors");
  guard *g = push_guard(L, safetensors_free_v);
  em_safetensors *f;
  if (em_safetensors_load(path, mode, &f) != EM_OK) return l_error(L);
  g->p = f;
  return push_safetensors(L, f);
}

/* T.load_safetensors_buffer(bytes) -> tensors, metadata (copies) */
static int l_load_safetensors_buffer(lua_State *L) {
  drain(L);
  const char *op = "load_safetensors_buffer";
  size_t len;
  if (lua_type(L, 1) != LUA_TSTRING)
    return l_errorf(L, "%s: expected the file's bytes (a string) for argument #1, got %s", op,
                    luaL_typename(L, 1));
  const char *buf = lua_tolstring(L, 1, &len);
  if (!lua_isnone(L, 2))
    return l_errorf(L, "%s: expected 1 argument, got %d", op, lua_gettop(L));
  guard *g = push_guard(L, safetensors_free_v);
  em_safetensors *f;
  if (em_safetensors_decode(buf, len, &f) != EM_OK) {
    /* the engine names load_safetensors: name the function called */
    const char *msg = em_last_error(), *pre = "load_safetensors: ";
    if (strncmp(msg, pre, strlen(pre)) == 0) return l_errorf(L, "%s: %s", op, msg + strlen(pre));
    return l_error(L);
  }
  g->p = f;
  return push_safetensors(L, f);
}

/* A string key or value of a save_safetensors table: no NUL bytes. */
static const char *st_string(lua_State *L, int idx, const char *what) {
  size_t len;
  const char *s = lua_tolstring(L, idx, &len);
  if (strlen(s) != len)
    l_errorf(L, "save_safetensors: %s '%s' contains a NUL byte", what, s);
  return s;
}

/* The error for a key (at -2) that is not a string. */
static int bad_key(lua_State *L, const char *what) {
  if (lua_type(L, -2) == LUA_TNUMBER) {
    lua_pushvalue(L, -2);
    return l_errorf(L, "save_safetensors: %s must be strings, got the number key %s", what,
                    lua_tostring(L, -1));
  }
  return l_errorf(L, "save_safetensors: %s must be strings, got a %s key", what,
                  luaL_typename(L, -2));
}

/* T.save_safetensors(path, {name = tensor, ...}, {key = "value", ...}) */
static int l_save_safetensors(lua_State *L) {
  l_checknomore(L, 3, "save_safetensors");
  drain(L);
  const char *path = st_path(L, 1, "save_safetensors");
  if (!lua_istable(L, 2))
    return l_errorf(L, "save_safetensors: expected a table of name = tensor for argument #2, got %s",
                    luaL_typename(L, 2));
  if (!lua_isnoneornil(L, 3) && !lua_istable(L, 3))
    return l_errorf(L, "save_safetensors: expected a metadata table of strings for argument #3, got %s",
                    luaL_typename(L, 3));
  lua_settop(L, 3);
  int n = 0, nm = 0;
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      return bad_key(L, "tensor names");
    }
    const char *name = st_string(L, -2, "tensor name");
    if (!l_totensor(L, -1))
      return l_errorf(L, "save_safetensors: '%s' is a %s, not a tensor", name, luaL_typename(L, -1));
    n++;
    lua_pop(L, 1);
  }
  if (lua_istable(L, 3)) {
    lua_pushnil(L);
    while (lua_next(L, 3)) {
      if (lua_type(L, -2) != LUA_TSTRING) {
        return bad_key(L, "metadata keys");
      }
      const char *key = st_string(L, -2, "metadata key");
      if (lua_type(L, -1) != LUA_TSTRING)
        return l_errorf(L, "save_safetensors: metadata value of '%s' must be a string, got %s "
                           "(safetensors metadata maps strings to strings)",
                        key, luaL_typename(L, -1));
      st_string(L, -1, "metadata value");
      nm++;
      lua_pop(L, 1);
    }
  }
  /* the strings stay anchored by the argument tables while the engine runs */
  const char **names = lua_newuserdata(L, (n ? n : 1) * sizeof *names);
  const em_tensor **ts = lua_newuserdata(L, (n ? n : 1) * sizeof *ts);
  const char **keys = lua_newuserdata(L, (nm ? nm : 1) * sizeof *keys);
  const char **values = lua_newuserdata(L, (nm ? nm : 1) * sizeof *values);
  int i = 0;
  lua_pushnil(L);
  while (lua_next(L, 2) && i < n) {
    names[i] = lua_tostring(L, -2);
    ts[i++] = l_totensor(L, -1);
    lua_pop(L, 1);
  }
  i = 0;
  if (lua_istable(L, 3)) {
    lua_pushnil(L);
    while (lua_next(L, 3) && i < nm) {
      keys[i] = lua_tostring(L, -2);
      values[i++] = lua_tostring(L, -1);
      lua_pop(L, 1);
    }
  }
  if (em_safetensors_save(path, n, names, (const em_tensor *const *)ts, nm, keys, values) != EM_OK)
    return l_error(L);
  return 0;
}

/* -- T.save / T.load: the value tree --------------------------------------
** Tags (docs/serialization.md): 1 false, 2 true, 3 float64, 4 int64,
** 5 string (u64 length + bytes), 6 table (u64 pairs, then key, value...),
** 7 tensor (u64 index into the file's tensor table). */

enum { TAG_FALSE = 1, TAG_TRUE, TAG_F64, TAG_I64, TAG_STR, TAG_TABLE, TAG_TENSOR };
enum { MAX_DEPTH = 200 };

typedef struct {
  bytebuf *buf;
  int tensors;   /* stack index: tensor -> 0-based index */
  int list;      /* stack index: array of tensors */
  int visiting;  /* stack index: tables on the current path */
  int ntensors;
} enc;

static void encode(lua_State *L, enc *e, int idx, int depth, int is_key) {
  luaL_checkstack(L, 6, "save: nesting too deep");
  if (depth > MAX_DEPTH) l_errorf(L, "save: tables nested deeper than %d", MAX_DEPTH);
  int t = lua_type(L, idx);
  switch (t) {
    case LUA_TBOOLEAN:
      buf_u8(L, e->buf, lua_toboolean(L, idx) ? TAG_TRUE : TAG_FALSE);
      return;
    case LUA_TNUMBER: {
#if LUA_VERSION_NUM >= 503
      if (lua_isinteger(L, idx)) {
        buf_u8(L, e->buf, TAG_I64);
        buf_u64(L, e->buf, (uint64_t)lua_tointeger(L, idx));
        return;
      }
#endif
      double d = lua_tonumber(L, idx);
      uint64_t bits;
      memcpy(&bits, &d, 8);
      buf_u8(L, e->buf, TAG_F64);
      buf_u64(L, e->buf, bits);
      return;
    }
    case LUA_TSTRING: {
      size_t n;
      const char *s = lua_tolstring(L, idx, &n);
      buf_u8(L, e->buf, TAG_STR);
      buf_u64(L, e->buf, n);
      buf_add(L, e->buf, s, n);
      return;
    }
    case LUA_TTABLE: {
      if (is_key) l_errorf(L, "save: table keys must be strings, numbers or booleans, got a table");
      lua_pushvalue(L, idx);
      lua_rawget(L, e->visiting);
      int cyclic = !lua_isnil(L, -1);
      lua_pop(L, 1);
      if (cyclic) l_errorf(L, "save: the table is cyclic (it contains itself)");
      lua_pushvalue(L, idx);
      lua_pushboolean(L, 1);
      lua_rawset(L, e->visiting);
      uint64_t npairs = 0;
      lua_pushnil(L);
      while (lua_next(L, idx)) {
        npairs++;
        lua_pop(L, 1);
      }
      buf_u8(L, e->buf, TAG_TABLE);
      buf_u64(L, e->buf, npairs);
      lua_pushnil(L);
      while (lua_next(L, idx)) {
        int top = lua_gettop(L);
        if (lua_type(L, top - 1) == LUA_TNUMBER && isnan(lua_tonumber(L, top - 1)))
          l_errorf(L, "save: NaN table key");
        encode(L, e, top - 1, depth + 1, 1);
        encode(L, e, top, depth + 1, 0);
        lua_pop(L, 1);
      }
      lua_pushvalue(L, idx);
      lua_pushnil(L);
      lua_rawset(L, e->visiting);
      return;
    }
    default:
      break;
  }
  if (l_isint64box(L, idx)) { /* LuaJIT's boxed int64_t (load_torch makes them past 2^53) */
    int64_t v;
    if (!l_toint64(L, idx, &v, "save")) l_errorf(L, "save: a cdata that is not an int64_t");
    buf_u8(L, e->buf, TAG_I64);
    buf_u64(L, e->buf, (uint64_t)v);
    return;
  }
  if (t == LUA_TUSERDATA && l_totensor(L, idx)) {
    if (is_key) l_errorf(L, "save: table keys must be strings, numbers or booleans, got a tensor");
    lua_pushvalue(L, idx);
    lua_rawget(L, e->tensors);
    uint64_t k;
    if (lua_isnil(L, -1)) {
      k = (uint64_t)e->ntensors++;
      lua_pushvalue(L, idx);
      lua_pushinteger(L, (lua_Integer)k);
      lua_rawset(L, e->tensors);
      lua_pushvalue(L, idx);
      lua_rawseti(L, e->list, e->ntensors);
    } else {
      k = (uint64_t)lua_tointeger(L, -1);
    }
    lua_pop(L, 1);
    buf_u8(L, e->buf, TAG_TENSOR);
    buf_u64(L, e->buf, k);
    return;
  }
  l_errorf(L, "save: cannot save a value of type %s (tensors, tables, numbers, strings "
              "and booleans only)", luaL_typename(L, idx));
}

/* Pushes a tensor with the values of the tensor at idx on the host: that
** tensor itself when it is on the CPU or has no data (meta: the savers
** refuse it), else a view of a host copy of its device storage, as
** PyTorch's save writes a cuda tensor's bytes. seen (a stack index of a
** table) maps each device storage to its copy (the storage's bytes, copied
** once), so tensors that shared a storage share the copy, whatever their
** dtypes: a saver then treats them exactly as it treats CPU tensors that
** share a storage. The view keeps the tensor's dtype, sizes, strides,
** offset and requires_grad, and has no history. */
void l_push_host(lua_State *L, int idx, int seen) {
  if (idx < 0 && idx > LUA_REGISTRYINDEX) idx = lua_gettop(L) + idx + 1; /* absolute */
  em_tensor *t = l_totensor(L, idx);
  em_device dev = em_tensor_device(t);
  if (dev.type == EM_CPU || !em_device_has_data(dev)) {
    lua_pushvalue(L, idx);
    return;
  }
  em_storage *st = em_tensor_storage(t);
  lua_pushlightuserdata(L, st);
  lua_rawget(L, seen);
  em_tensor *hb = l_totensor(L, -1); /* NULL: not copied yet */
  if (!hb) {
    lua_pop(L, 1);
    int64_t nbytes = (int64_t)em_storage_nbytes(st), one = 1;
    em_tensor **box = l_newbox(L), *bytes = NULL;
    em_status stt = em_tensor_new(st, 0, 1, &nbytes, &one, EM_UINT8, &bytes);
    if (stt == EM_OK) stt = em_to(bytes, EM_UINT8, em_cpu(), 1, box);
    if (bytes) em_tensor_release(bytes);
    if (stt != EM_OK) l_error(L);
    hb = *box;
    lua_pushlightuserdata(L, st);
    lua_pushvalue(L, -2);
    lua_rawset(L, seen);
  }
  em_tensor **view = l_newbox(L);
  if (em_tensor_new(em_tensor_storage(hb), em_tensor_offset(t), em_tensor_ndim(t),
                    em_tensor_sizes(t), em_tensor_strides(t), em_tensor_dtype(t),
                    view) != EM_OK)
    l_error(L);
  if (em_tensor_requires_grad(t) && em_tensor_set_requires_grad(*view, 1) != EM_OK) l_error(L);
  lua_remove(L, -2); /* the bytes: kept alive by seen */
}

/* The tensors of list (1..n) put on the host (l_push_host): T.save writes
** device tensors as host bytes, and T.load gives CPU tensors
** (docs/serialization.md). */
static void host_copies(lua_State *L, int list, int n) {
  lua_newtable(L);
  int seen = lua_gettop(L);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    l_push_host(L, -1, seen);
    lua_rawseti(L, list, i);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

static int l_save(lua_State *L) {
  l_checknomore(L, 2, "save");
  drain(L);
  const char *path = luaL_checkstring(L, 1);
  if (lua_isnone(L, 2)) return l_errorf(L, "save: expected a value to save");
  lua_settop(L, 2);
  enc e;
  e.buf = push_buf(L);     /* 3 */
  lua_newtable(L);
  e.tensors = 4;
  lua_newtable(L);
  e.list = 5;
  lua_newtable(L);
  e.visiting = 6;
  e.ntensors = 0;
  encode(L, &e, 2, 0, 0);
  host_copies(L, e.list, e.ntensors);
  const em_tensor **ts = lua_newuserdata(L, (e.ntensors ? e.ntensors : 1) * sizeof *ts);
  for (int i = 0; i < e.ntensors; i++) {
    lua_rawgeti(L, e.list, i + 1);
    ts[i] = l_totensor(L, -1);
    lua_pop(L, 1);
  }
  if (em_save(path, e.ntensors, (const em_tensor *const *)ts, e.buf->p, e.buf->n) != EM_OK)
    return l_error(L);
  return 0;
}

typedef struct {
  const uint8_t *p, *end;
  em_loaded *f;
  int cache;  /* stack index: tensor index -> Lua object */
} dec;

static uint64_t dec_u64(lua_State *L, dec *d) {
  if (d->end - d->p < 8) l_errorf(L, "load: corrupt file (metadata truncated)");
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | d->p[i];
  d->p += 8;
  return v;
}

static void decode(lua_State *L, dec *d, int depth) {
  luaL_checkstack(L, 6, "load: nesting too deep");
  if (depth > MAX_DEPTH) l_errorf(L, "load: corrupt file (tables nested deeper than %d)", MAX_DEPTH);
  if (d->p >= d->end) l_errorf(L, "load: corrupt file (metadata truncated)");
  int tag = *d->p++;
  switch (tag) {
    case TAG_FALSE: lua_pushboolean(L, 0); return;
    case TAG_TRUE: lua_pushboolean(L, 1); return;
    case TAG_F64: {
      uint64_t bits = dec_u64(L, d);
      double v;
      memcpy(&v, &bits, 8);
      lua_pushnumber(L, v);
      return;
    }
    case TAG_I64: {
      int64_t v = (int64_t)dec_u64(L, d);
#if LUA_VERSION_NUM >= 503
      lua_pushinteger(L, (lua_Integer)v);
#else
      l_pushint64(L, v); /* a number within 2^53, else a boxed int64_t */
#endif
      return;
    }
    case TAG_STR: {
      uint64_t n = dec_u64(L, d);
      if (n > (uint64_t)(d->end - d->p)) l_errorf(L, "load: corrupt file (string truncated)");
      lua_pushlstring(L, (const char *)d->p, (size_t)n);
      d->p += n;
      return;
    }
    case TAG_TABLE: {
      uint64_t n = dec_u64(L, d);
      /* each pair takes at least 2 bytes: never preallocate beyond that */
      uint64_t room = (uint64_t)(d->end - d->p) / 2;
      if (n > room) l_errorf(L, "load: corrupt file (table of %llu pairs truncated)",
                             (unsigned long long)n);
      lua_createtable(L, 0, n > 1024 ? 1024 : (int)n);
      for (uint64_t i = 0; i < n; i++) {
        decode(L, d, depth + 1);
        if (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER &&
            lua_type(L, -1) != LUA_TBOOLEAN)
          l_errorf(L, "load: corrupt file (a table key is a %s)", luaL_typename(L, -1));
        if (lua_type(L, -1) == LUA_TNUMBER && isnan(lua_tonumber(L, -1)))
          l_errorf(L, "load: corrupt file (NaN table key)");
        decode(L, d, depth + 1);
        lua_rawset(L, -3);
      }
      return;
    }
    case TAG_TENSOR: {
      uint64_t k = dec_u64(L, d);
      if (k >= (uint64_t)em_loaded_count(d->f))
        l_errorf(L, "load: corrupt file (tensor %llu of %lld)", (unsigned long long)k,
                 (long long)em_loaded_count(d->f));
      lua_rawgeti(L, d->cache, (int)k + 1);
      if (!lua_isnil(L, -1)) return;
      lua_pop(L, 1);
      em_tensor *t = em_loaded_tensor(d->f, (int64_t)k);
      em_tensor_retain(t);
      ember_lua_push_tensor(L, t);
      lua_pushvalue(L, -1);
      lua_rawseti(L, d->cache, (int)k + 1);
      return;
    }
    default:
      l_errorf(L, "load: corrupt file (unknown tag %d in the metadata)", tag);
  }
}

static int l_load(lua_State *L) {
  l_checknomore(L, 1, "load");
  drain(L);
  const char *path = luaL_checkstring(L, 1);
  lua_settop(L, 1);
  guard *g = push_guard(L, loaded_free_v); /* 2 */
  em_loaded *f;
  if (em_load(path, &f) != EM_OK) return l_error(L);
  g->p = f;
  if (em_loaded_count(f) > 0x7fffffff) return l_errorf(L, "load: too many tensors");
  lua_newtable(L); /* 3: cache */
  size_t len;
  const uint8_t *meta = em_loaded_meta(f, &len);
  dec d = {meta, meta + len, f, 3};
  decode(L, &d, 0);
  if (d.p != d.end) return l_errorf(L, "load: corrupt file (%lld stray metadata bytes)",
                                    (long long)(d.end - d.p));
  return 1;
}

/* -- DLPack capsules -------------------------------------------------------- */

typedef struct {
  DLManagedTensor *m;  /* NULL once consumed */
} capsule;

static int capsule_gc(lua_State *L) {
  capsule *c = lua_touserdata(L, 1);
  if (c->m) {
    DLManagedTensor *m = c->m;
    c->m = NULL;
    if (m->deleter) m->deleter(m);
  }
  return 0;
}

static int capsule_tostring(lua_State *L) {
  capsule *c = lua_touserdata(L, 1);
  lua_pushstring(L, c->m ? "ember.dlpack_capsule" : "ember.dlpack_capsule (consumed)");
  return 1;
}

static capsule *tocapsule(lua_State *L, int idx) {
  capsule *c = lua_touserdata(L, idx);
  if (!c || !lua_getmetatable(L, idx)) return NULL;
  lua_pushlightuserdata(L, &K_CAPSULE_MT);
  lua_rawget(L, LUA_REGISTRYINDEX);
  int ok = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return ok ? c : NULL;
}

static int l_to_dlpack(lua_State *L) {
  l_checknomore(L, 1, "to_dlpack");
  drain(L);
  em_tensor *t = l_checktensor(L, 1, "to_dlpack");
  capsule *c = lua_newuserdata(L, sizeof *c);
  c->m = NULL;
  lua_pushlightuserdata(L, &K_CAPSULE_MT);
  lua_rawget(L, LUA_REGISTRYINDEX);
  lua_setmetatable(L, -2);
  if (em_to_dlpack(t, &c->m) != EM_OK) return l_error(L);
  return 1;
}

static int l_from_dlpack(lua_State *L) {
  drain(L);
  if (lua_islightuserdata(L, 1)) { /* from capsule:release() */
    if (!lua_touserdata(L, 1))
      return l_errorf(L, "from_dlpack: NULL or invalid DLManagedTensor pointer");
    em_tensor **box = l_newbox(L);
    if (em_from_dlpack(lua_touserdata(L, 1), box) != EM_OK) return l_error(L);
    return 1;
  }
  em_tensor *t = l_totensor(L, 1);
  if (t) { /* an object that speaks DLPack itself: share its memory */
    lua_settop(L, 1);
    l_to_dlpack(L);
    lua_replace(L, 1);
  }
  capsule *c = tocapsule(L, 1);
  if (!c)
    return l_errorf(L, "from_dlpack: expected a DLPack capsule (from t:to_dlpack()), got %s",
                    luaL_typename(L, 1));
  if (!c->m)
    return l_errorf(L, "from_dlpack: the capsule was already consumed (a capsule can "
                       "be consumed once)");
  em_tensor **box = l_newbox(L);
  if (em_from_dlpack(c->m, box) != EM_OK) return l_error(L);
  c->m = NULL;
  return 1;
}

/* T._from_dlpack_address(address): a DLManagedTensor* handed over through
** the FFI; on success ember owns it (its deleter runs when the last view
** goes), on failure the caller still does. */
static int l_from_dlpack_address(lua_State *L) {
  drain(L);
  double a = luaL_checknumber(L, 1);
  if (!(a > 0 && a < 18446744073709551616.0) || a != floor(a))
    return l_errorf(L, "from_dlpack: NULL or invalid DLManagedTensor pointer");
  em_tensor **box = l_newbox(L);
  if (em_from_dlpack((DLManagedTensor *)(uintptr_t)a, box) != EM_OK) return l_error(L);
  return 1;
}

/* capsule:release(): hands the DLManagedTensor* to a consumer outside
** ember (a light userdata; ffi.cast it to DLManagedTensor *). The capsule
** is consumed: calling the deleter is now the consumer's job. */
static int capsule_release(lua_State *L) {
  capsule *c = tocapsule(L, 1);
  if (!c) return l_errorf(L, "release: expected a DLPack capsule");
  if (!c->m)
    return l_errorf(L, "release: the capsule was already consumed (a capsule can be "
                       "consumed once)");
  lua_pushlightuserdata(L, c->m);
  c->m = NULL;
  return 1;
}

static int capsule_consumed(lua_State *L) {
  capsule *c = tocapsule(L, 1);
  if (!c) return l_errorf(L, "consumed: expected a DLPack capsule");
  lua_pushboolean(L, c->m == NULL);
  return 1;
}

/* -- Host glue --------------------------------------------------------------- */

int ember_lua_open(lua_State *L, const char *lua_dir) {
  int top = lua_gettop(L);
  lua_getglobal(L, "package");
  if (!lua_istable(L, -1)) {
    lua_settop(L, top);
    lua_pushliteral(L, "ember_lua_open: the package library is not open (call luaL_openlibs)");
    return LUA_ERRRUN;
  }
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_ember_core);
  lua_setfield(L, -2, "ember.core");
  lua_pop(L, 1);
  if (lua_dir) {
    lua_getfield(L, -1, "path");
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", lua_dir, lua_dir, lua_tostring(L, -1));
    lua_setfield(L, -3, "path");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "ember");
  int rc = lua_pcall(L, 1, 1, 0);
  if (rc != 0) return rc;
  return 0;
}

/* -- Registration ------------------------------------------------------------- */

static void newmeta(lua_State *L, char *key, lua_CFunction gc, const char *name) {
  lua_pushlightuserdata(L, key);
  lua_createtable(L, 0, 3);
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__gc");
  lua_pushstring(L, name);
  lua_setfield(L, -2, "__name");
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_rawset(L, LUA_REGISTRYINDEX);
}

/* Finalizers in this module (tensors, capsules, the sentinel) may run after
** Lua's package library has dlclose'd the module: at lua_close, LuaJIT
** finalizes in rounds and a userdata made by one finalizer (the sentinel)
** is finalized in the next, after the library handle's own __gc. Pinning
** the module with RTLD_NODELETE keeps its code mapped for the process's
** life. (When ember is linked into a host program, dlopen of the
** executable fails harmlessly: its code never goes away.) */
static void pin_module(void) {
  static int pinned;
  Dl_info info;
  if (pinned || !dladdr((void *)&l_open_interop, &info) || !info.dli_fname) return;
  if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) pinned = 1;
}

void l_open_interop(lua_State *L) {
  pin_module();
  newmeta(L, &K_GUARD_MT, guard_gc, "ember.guard");
  newmeta(L, &K_BUF_MT, buf_gc, "ember.buffer");
  newmeta(L, &K_SENTINEL_MT, sentinel_gc, "ember.sentinel");
  newmeta(L, &K_CAPSULE_MT, capsule_gc, "ember.dlpack_capsule");
  lua_pushlightuserdata(L, &K_CAPSULE_MT);
  lua_rawget(L, LUA_REGISTRYINDEX);
  lua_pushcfunction(L, capsule_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, capsule_consumed);
  lua_setfield(L, -2, "consumed");
  lua_pushcfunction(L, capsule_release);
  lua_setfield(L, -2, "release");
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);

  /* this state's anchor list, freed by the registry entry's __gc at close */
  anchor_list *a = calloc(1, sizeof *a);
  if (!a) luaL_error(L, "ember: out of memory");
  pthread_mutex_init(&a->mu, NULL);
  a->refs = 1;
  lua_pushlightuserdata(L, &K_ANCHORS);
  anchor_list **box = lua_newuserdata(L, sizeof *box);
  *box = a;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, anchors_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_rawset(L, LUA_REGISTRYINDEX);

  static const luaL_Reg fns[] = {
      {"load_npy", l_load_npy},       {"save_npy", l_save_npy},
      {"load_npz", l_load_npz},       {"save_npz", l_save_npz},
      {"load_safetensors", l_load_safetensors},
      {"load_safetensors_buffer", l_load_safetensors_buffer},
      {"save_safetensors", l_save_safetensors},
      {"save", l_save},               {"load", l_load},
      {"from_dlpack", l_from_dlpack}, {"_from_ffi", l_from_ffi},
      {"_from_dlpack_address", l_from_dlpack_address},
      {"_ffi_anchors", l_ffi_anchors}, {NULL, NULL}};
  static const luaL_Reg methods[] = {{"to_dlpack", l_to_dlpack}, {NULL, NULL}};
  l_add_functions(L, fns);
  l_add_methods(L, methods);
}
