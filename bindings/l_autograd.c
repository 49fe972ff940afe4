/*
** l_autograd.c -- the autograd surface: requires_grad / grad / grad_fn /
** is_leaf properties, backward, retain_grad, detach, grad mode, and the
** engine half of T.autograd.grad (lua/ember/autograd.lua has the rest).
** Registered after l_tensor.c, so these props replace its placeholders.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l_ember.h"

static int l_requires_grad_(lua_State *L) {
  l_nooptions(L, 2, 2, "requires_grad_");
  em_tensor *t = l_checktensor(L, 1, "requires_grad_");
  if (!lua_isnoneornil(L, 2) && lua_type(L, 2) != LUA_TBOOLEAN)
    return l_errorf(L, "requires_grad_: expected a boolean, got %s", luaL_typename(L, 2));
  int on = lua_isnoneornil(L, 2) ? 1 : lua_toboolean(L, 2);
  if (em_tensor_requires_grad_(t, on) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

static int p_requires_grad(lua_State *L) {
  lua_pushboolean(L, em_tensor_requires_grad(l_checktensor(L, 1, "requires_grad")));
  return 1;
}
static int p_set_requires_grad(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "requires_grad");
  if (!lua_isboolean(L, 2))
    return l_errorf(L, "requires_grad: expected a boolean, got %s", luaL_typename(L, 2));
  if (em_tensor_requires_grad_(t, lua_toboolean(L, 2)) != EM_OK) l_error(L);
  return 0;
}
static int p_is_leaf(lua_State *L) {
  lua_pushboolean(L, em_tensor_is_leaf(l_checktensor(L, 1, "is_leaf")));
  return 1;
}
static int p_retains_grad(lua_State *L) {
  lua_pushboolean(L, em_tensor_retains_grad(l_checktensor(L, 1, "retains_grad")));
  return 1;
}
/* t._version: the version counter of t's storage (PyTorch's _version),
** shared by every view and by detach(); each in-place write adds one */
static int p_version(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "_version");
  em_storage *s = em_tensor_storage(t);
  lua_pushinteger(L, s ? (lua_Integer)em_storage_version(s) : 0);
  return 1;
}
static int p_grad(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "grad");
  em_tensor *g = em_tensor_grad(t);
  if (!g) {
    lua_pushnil(L);
    return 1;
  }
  em_tensor **box = l_newbox(L);
  *box = g;
  return 1;
}
static int p_set_grad(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "grad");
  em_tensor *g = NULL;
  if (!lua_isnil(L, 2)) {
    g = l_totensor(L, 2);
    if (!g) return l_errorf(L, "grad: expected a tensor or nil, got %s", luaL_typename(L, 2));
  }
  if (em_tensor_set_grad(t, g) != EM_OK) l_error(L);
  return 0;
}

/* t.grad_fn: nil for leaves, else a node object (userdata holding one
** reference to the engine's node): :name() ("AddBackward0"),
** .next_functions = {{node, input_nr}, ...} as PyTorch's (input numbers
** 1-based; false where an input needs no gradient), printing as
** <AddBackward0>; two objects of the same node are ==. A leaf's edge is
** an AccumulateGrad object whose .variable is the leaf. */
#define GRAD_FN_MT "ember.grad_fn"
#define ACC_GRAD_MT "ember.accumulate_grad"

static em_grad_fn *gf_check(lua_State *L, int i) {
  em_grad_fn **p = luaL_checkudata(L, i, GRAD_FN_MT);
  if (!*p) luaL_error(L, "grad_fn: the node object was released");
  return *p;
}
static em_tensor *ag_check(lua_State *L, int i) {
  em_tensor **p = luaL_checkudata(L, i, ACC_GRAD_MT);
  if (!*p) luaL_error(L, "AccumulateGrad: the object was released");
  return *p;
}
static void **new_handle(lua_State *L, const char *mt);

static int gf_gc(lua_State *L) {
  em_grad_fn **p = luaL_checkudata(L, 1, GRAD_FN_MT);
  em_grad_fn_release(*p);
  *p = NULL;
  return 0;
}
static int gf_name(lua_State *L) {
  lua_pushstring(L, em_grad_fn_name(gf_check(L, 1)));
  return 1;
}
static int gf_tostring(lua_State *L) {
  lua_pushfstring(L, "<%s>", em_grad_fn_name(gf_check(L, 1)));
  return 1;
}
static int gf_eq(lua_State *L) {
  em_grad_fn **a = luaL_testudata(L, 1, GRAD_FN_MT), **b = luaL_testudata(L, 2, GRAD_FN_MT);
  lua_pushboolean(L, a && b && *a == *b);
  return 1;
}
static int gf_next_functions(lua_State *L, em_grad_fn *fn) {
  lua_newtable(L);
  em_grad_fn *next;
  em_tensor *leaf;
  int nr;
  for (int i = 0;; i++) {
    /* the row and both boxes first (they may raise), then the references */
    lua_createtable(L, 2, 0);
    void **nb = new_handle(L, GRAD_FN_MT), **lb = new_handle(L, ACC_GRAD_MT);
    if (!em_grad_fn_next(fn, i, &next, &leaf, &nr)) {
      lua_pop(L, 3);
      break;
    }
    *nb = next;
    *lb = leaf;
    if (next) lua_pop(L, 1);        /* the node's box */
    else if (leaf) lua_remove(L, -2); /* the leaf's box */
    else {
      lua_pop(L, 2);
      lua_pushboolean(L, 0);
    }
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, nr + 1);
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int gf_index(lua_State *L) {
  em_grad_fn *fn = gf_check(L, 1);
  const char *k = lua_tostring(L, 2);
  if (k && !strcmp(k, "name")) {
    lua_pushcfunction(L, gf_name);
    return 1;
  }
  if (k && !strcmp(k, "next_functions")) return gf_next_functions(L, fn);
  lua_pushnil(L);
  return 1;
}

static int acc_gc(lua_State *L) {
  em_tensor **p = luaL_checkudata(L, 1, ACC_GRAD_MT);
  em_tensor_release(*p);
  *p = NULL;
  return 0;
}
static int acc_name(lua_State *L) {
  ag_check(L, 1);
  lua_pushliteral(L, "AccumulateGrad");
  return 1;
}
static int acc_tostring(lua_State *L) {
  ag_check(L, 1);
  lua_pushliteral(L, "<AccumulateGrad>");
  return 1;
}
static int acc_eq(lua_State *L) {
  em_tensor **a = luaL_testudata(L, 1, ACC_GRAD_MT), **b = luaL_testudata(L, 2, ACC_GRAD_MT);
  lua_pushboolean(L, a && b && *a == *b);
  return 1;
}
static int acc_index(lua_State *L) {
  em_tensor *leaf = ag_check(L, 1);
  const char *k = lua_tostring(L, 2);
  if (k && !strcmp(k, "name")) {
    lua_pushcfunction(L, acc_name);
    return 1;
  }
  if (k && !strcmp(k, "variable")) {
    em_tensor **box = l_newbox(L); /* may raise: retain after */
    em_tensor_retain(leaf);
    *box = leaf;
    return 1;
  }
  if (k && !strcmp(k, "next_functions")) {
    lua_newtable(L);
    return 1;
  }
  lua_pushnil(L);
  return 1;
}

/* A userdata box (NULL) with metatable mt, for a reference the caller
** takes afterwards: everything that may raise (allocation) happens before
** the reference exists, so an out-of-memory error leaks nothing. */
static void **new_handle(lua_State *L, const char *mt) {
  void **box = lua_newuserdata(L, sizeof(void *));
  *box = NULL;
  if (luaL_newmetatable(L, mt)) {
    int node = !strcmp(mt, GRAD_FN_MT);
    lua_pushcfunction(L, node ? gf_gc : acc_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, node ? gf_index : acc_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, node ? gf_tostring : acc_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, node ? gf_eq : acc_eq);
    lua_setfield(L, -2, "__eq");
    lua_pushliteral(L, "grad_fn");
    lua_setfield(L, -2, "__metatable");
  }
  lua_setmetatable(L, -2);
  return box;
}

static int p_grad_fn(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "grad_fn");
  if (em_tensor_is_leaf(t)) {
    lua_pushnil(L);
    return 1;
  }
  void **box = new_handle(L, GRAD_FN_MT);
  *box = em_tensor_grad_fn(t);
  return 1;
}

static int l_retain_grad(lua_State *L) {
  l_checknomore(L, 1, "retain_grad");
  if (em_tensor_retain_grad(l_checktensor(L, 1, "retain_grad")) != EM_OK) l_error(L);
  return 0;
}
static int l_detach(lua_State *L) {
  l_checknomore(L, 1, "detach");
  em_tensor *t = l_checktensor(L, 1, "detach");
  em_tensor **box = l_newbox(L);
  if (em_detach(t, box) != EM_OK) l_error(L);
  return 1;
}
static int l_detach_(lua_State *L) {
  l_checknomore(L, 1, "detach_");
  if (em_detach_(l_checktensor(L, 1, "detach_")) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

/* -- Custom ops written in Lua (T.autograd._custom) ---------------------------
** C._autograd_custom(name, inputs, output, backward) records output as the
** result of an op whose gradient a Lua function computes: backward(grad_output)
** returns a list with one gradient per input slot (nil for none). This is how
** the nn kernels' separate backward kernels (lua/ember/nn/functional.lua) join
** the engine's graph, through em_autograd_record. The inputs are saved, so an
** in-place change of one before the backward fails with PyTorch's error and a
** second backward without retain_graph is refused. The function is anchored
** in the registry while the node lives; the node is freed from C (tensor
** finalizers, another node's release), so the unref goes through a thread that
** lives as long as the state (the registry's "ember.anchor"). The backward
** needs a running Lua: it is called on the thread that started the backward
** (t:backward / T.autograd.grad set it); a host starting a backward from C
** through such a node gets an error, not a crash. */
static __thread lua_State *current_L = NULL;

typedef struct lua_custom {
  lua_State *anchor; /* lives as long as the state */
  int ref;           /* the backward function in the registry */
  int nin;
} lua_custom;

static void lua_custom_free(void *p) {
  lua_custom *c = p;
  luaL_unref(c->anchor, LUA_REGISTRYINDEX, c->ref);
  free(c);
}

static int lua_custom_call(lua_State *L) {
  /* [fn, grad_output box, saved list] -> the list of gradients */
  lua_call(L, 2, 1);
  return 1;
}

static em_status lua_custom_backward(void *p, int nsaved, em_tensor *const *saved, int nout,
                                     em_tensor *const *grad_outputs, int nin,
                                     em_tensor **grad_inputs) {
  (void)nout;
  lua_custom *c = p;
  lua_State *L = current_L;
  if (!L)
    return em_set_error(EM_E_RUNTIME,
                        "backward: this graph holds an op whose backward is written in Lua; "
                        "start the backward from Lua");
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 8)) return em_set_error(EM_E_NOMEM, "backward: Lua stack overflow");
  lua_pushcfunction(L, lua_custom_call);
  lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);
  em_tensor **box = l_newbox(L);
  em_tensor_retain(grad_outputs[0]);
  *box = grad_outputs[0];
  /* the saved tensors, unpacked (checked for in-place changes; under
  ** create_graph with their history) */
  lua_createtable(L, nsaved, 1);
  for (int j = 0; j < nsaved; j++) {
    if (!saved[j]) continue;
    em_tensor **sb = l_newbox(L);
    em_tensor_retain(saved[j]);
    *sb = saved[j];
    lua_rawseti(L, -2, j + 1);
  }
  lua_pushinteger(L, nsaved);
  lua_setfield(L, -2, "n");
  if (lua_pcall(L, 3, 1, 0) != 0) {
    const char *msg = lua_tostring(L, -1);
    em_status st = em_set_error(EM_E_VALUE, msg ? msg : "backward: error in a Lua backward");
    lua_settop(L, top);
    return st;
  }
  if (!lua_istable(L, -1)) {
    lua_settop(L, top);
    return em_set_error(EM_E_VALUE, "backward: a Lua backward must return a list of gradients");
  }
  for (int i = 0; i < nin && i < c->nin; i++) {
    lua_rawgeti(L, -1, i + 1);
    em_tensor *g = l_totensor(L, -1);
    if (g) {
      em_tensor_retain(g);
      grad_inputs[i] = g;
    }
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  return EM_OK;
}

/* C._mark_hook_view(t): t is the output of a module with a full backward
** hook; in-place writes to it are refused in grad mode */
static int l_mark_hook_view(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "mark_hook_view");
  em_tensor_mark_hook_view(t);
  lua_settop(L, 1);
  return 1;
}

/* C._name_grad_fn(t, name): names the grad_fn of t, a fresh result of a
** Lua composite, as PyTorch names the op; a no-op for a tensor with none */
static int l_name_grad_fn(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "name_grad_fn");
  const char *name = luaL_checkstring(L, 2);
  if (em_tensor_grad_fn_name(t) && em_tensor_name_grad_fn(t, name) != EM_OK) l_error(L);
  lua_settop(L, 1);
  return 1;
}

/* C._autograd_custom(name, inputs (with holes; inputs.n slots), output,
** backward [, saved (with holes; saved.n slots)]) -> output. Without saved
** the inputs are saved; backward(grad_output, saved) gets the saved tensors
** unpacked (an in-place change since fails the backward; under create_graph
** they carry their history, the output's being this node). */
static int l_autograd_custom(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  em_tensor *out = l_checktensor(L, 3, "autograd_custom");
  luaL_checktype(L, 4, LUA_TFUNCTION);
  lua_getfield(L, 2, "n");
  int nin = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : (int)lua_objlen(L, 2);
  lua_pop(L, 1);
  if (nin < 1 || nin > 16) return l_errorf(L, "autograd_custom: expected 1 to 16 inputs, got %d", nin);
  const em_tensor *ins[16];
  for (int i = 0; i < nin; i++) {
    lua_rawgeti(L, 2, i + 1);
    ins[i] = l_totensor(L, -1);
    lua_pop(L, 1);
  }
  const em_tensor *svs[64];
  const em_tensor *const *saved = ins;
  int nsaved = nin;
  if (!lua_isnoneornil(L, 5)) {
    luaL_checktype(L, 5, LUA_TTABLE);
    lua_getfield(L, 5, "n");
    nsaved = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : (int)lua_objlen(L, 5);
    lua_pop(L, 1);
    if (nsaved < 0 || nsaved > 64)
      return l_errorf(L, "autograd_custom: expected at most 64 saved tensors, got %d", nsaved);
    for (int j = 0; j < nsaved; j++) {
      lua_rawgeti(L, 5, j + 1);
      svs[j] = l_totensor(L, -1);
      lua_pop(L, 1);
    }
    saved = svs;
  }
  lua_getfield(L, LUA_REGISTRYINDEX, "ember.anchor");
  lua_State *anchor = lua_tothread(L, -1);
  lua_pop(L, 1);
  if (!anchor) return l_errorf(L, "autograd_custom: the ember module is not opened");
  lua_custom *c = malloc(sizeof *c);
  if (!c) return l_errorf(L, "autograd_custom: out of memory");
  lua_pushvalue(L, 4);
  c->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  c->anchor = anchor;
  c->nin = nin;
  em_tensor *outs[1] = {out};
  /* from here c belongs to the call (freed on every path) */
  if (em_autograd_record(name, nin, ins, 1, outs, nsaved, saved, lua_custom_backward, c,
                         lua_custom_free) != EM_OK)
    return l_error(L);
  lua_settop(L, 3);
  return 1;
}

/* -- Post-accumulate-grad hooks and final callbacks (issue 17) ----------------
** C._set_grad_hook(t, fn|nil) gives leaf t one Lua function, called as
** fn(t) by the engine (em_tensor_set_grad_hook) once per backward after t's
** .grad holds every gradient of that backward; lua/ember/autograd.lua keeps
** the list of a tensor's hooks behind it (register_post_accumulate_grad_hook).
** C._get_grad_hook(t) returns it. Like a Lua backward it runs on the thread
** that started the backward. C._queue_callback(fn), during a backward, runs
** fn() once when that backward has finished (PyTorch's engine queue_callback;
** DistributedDataParallel waits for its all-reduces there). */
typedef struct lua_hook {
  lua_State *anchor;
  int ref;
} lua_hook;

/* A hook context for the Lua function at idx (checked), anchored to the
** module's main thread, which outlives any coroutine that registers it. */
static lua_hook *new_lua_hook(lua_State *L, int idx, const char *op) {
  luaL_checktype(L, idx, LUA_TFUNCTION);
  lua_getfield(L, LUA_REGISTRYINDEX, "ember.anchor");
  lua_State *anchor = lua_tothread(L, -1);
  lua_pop(L, 1);
  if (!anchor) l_errorf(L, "%s: the ember module is not opened", op);
  lua_hook *h = malloc(sizeof *h);
  if (!h) l_errorf(L, "%s: out of memory", op);
  lua_pushvalue(L, idx);
  h->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  h->anchor = anchor;
  return h;
}

static void lua_hook_free(void *p) {
  lua_hook *h = p;
  luaL_unref(h->anchor, LUA_REGISTRYINDEX, h->ref);
  free(h);
}

static int lua_hook_call(lua_State *L) {
  lua_call(L, 1, 0);
  return 0;
}

static em_status lua_grad_hook(void *p, em_tensor *t) {
  lua_hook *h = p;
  lua_State *L = current_L;
  if (!L)
    return em_set_error(EM_E_RUNTIME, "backward: a tensor of this graph has a hook written "
                        "in Lua; start the backward from Lua");
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 8)) return em_set_error(EM_E_NOMEM, "backward: Lua stack overflow");
  lua_pushcfunction(L, lua_hook_call);
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->ref);
  em_tensor **box = l_newbox(L);
  em_tensor_retain(t);
  *box = t;
  if (lua_pcall(L, 2, 0, 0) != 0) {
    char other[96];
    const char *msg = lua_tostring(L, -1);
    if (!msg) {
      snprintf(other, sizeof other, "backward: a hook raised a %s", luaL_typename(L, -1));
      msg = other;
    }
    em_status st = em_set_error(EM_E_RUNTIME, msg);
    lua_settop(L, top);
    return st;
  }
  lua_settop(L, top);
  return EM_OK;
}

static int l_set_grad_hook(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "register_post_accumulate_grad_hook");
  if (lua_isnoneornil(L, 2)) {
    if (em_tensor_set_grad_hook(t, NULL, NULL, NULL) != EM_OK) return l_error(L);
    return 0;
  }
  lua_hook *h = new_lua_hook(L, 2, "register_post_accumulate_grad_hook");
  if (em_tensor_set_grad_hook(t, lua_grad_hook, h, lua_hook_free) != EM_OK) return l_error(L);
  return 0;
}

static int l_get_grad_hook(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "register_post_accumulate_grad_hook");
  lua_hook *h = em_tensor_grad_hook_ctx(t, lua_grad_hook);
  if (!h) return 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->ref);
  return 1;
}

/* Tensor hooks (t:register_hook, issue 18): C._set_tensor_hook(t, fn|nil)
** gives t one Lua function, called as fn(grad) by the engine
** (em_tensor_set_hook) on the gradient flowing to t; a tensor it returns
** replaces the gradient. lua/ember/autograd.lua keeps the list of a
** tensor's hooks behind it. C._get_tensor_hook(t) returns it. */
static em_status lua_tensor_hook(void *p, em_tensor *g, em_tensor **out) {
  lua_hook *h = p;
  lua_State *L = current_L;
  if (!L)
    return em_set_error(EM_E_RUNTIME, "backward: a tensor of this graph has a hook written "
                        "in Lua; start the backward from Lua");
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 8)) return em_set_error(EM_E_NOMEM, "backward: Lua stack overflow");
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->ref);
  em_tensor **box = l_newbox(L);
  em_tensor_retain(g);
  *box = g;
  if (lua_pcall(L, 1, 1, 0) != 0) {
    char other[96];
    const char *msg = lua_tostring(L, -1);
    if (!msg) {
      snprintf(other, sizeof other, "backward: a hook raised a %s", luaL_typename(L, -1));
      msg = other;
    }
    em_status st = em_set_error(EM_E_RUNTIME, msg);
    lua_settop(L, top);
    return st;
  }
  em_status st = EM_OK;
  if (!lua_isnil(L, -1)) {
    em_tensor *x = l_totensor(L, -1);
    if (!x) {
      char msg[128];
      snprintf(msg, sizeof msg, "backward: a tensor hook must return a tensor or nil, got %s",
               luaL_typename(L, -1));
      st = em_set_error(EM_E_RUNTIME, msg);
    } else {
      em_tensor_retain(x);
      *out = x;
    }
  }
  lua_settop(L, top);
  return st;
}

static int l_set_tensor_hook(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "register_hook");
  if (lua_isnoneornil(L, 2)) {
    if (em_tensor_set_hook(t, NULL, NULL, NULL) != EM_OK) return l_error(L);
    return 0;
  }
  lua_hook *h = new_lua_hook(L, 2, "register_hook");
  if (em_tensor_set_hook(t, lua_tensor_hook, h, lua_hook_free) != EM_OK) return l_error(L);
  return 0;
}

static int l_get_tensor_hook(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "register_hook");
  lua_hook *h = em_tensor_hook_ctx(t, lua_tensor_hook);
  if (!h) return 0;
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->ref);
  return 1;
}

static const char K_CALLBACKS = 0; /* registry: the list of queued final callbacks */

static int l_queue_callback(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  if (!current_L)
    return l_errorf(L, "queue_callback: final callbacks can only be installed during the "
                    "backward pass");
  lua_pushlightuserdata(L, (void *)&K_CALLBACKS);
  lua_rawget(L, LUA_REGISTRYINDEX);
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushlightuserdata(L, (void *)&K_CALLBACKS);
    lua_pushvalue(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
  }
  lua_pushvalue(L, 1);
  lua_rawseti(L, -2, (int)lua_objlen(L, -2) + 1);
  return 0;
}

/* After the outermost backward: takes the queued callbacks off the list and,
** when the backward succeeded, calls them in order (an error raises from
** backward, after the list is cleared). */
static void run_final_callbacks(lua_State *L, int ok) {
  if (current_L) return; /* a backward inside a hook: the outer one runs them */
  lua_pushlightuserdata(L, (void *)&K_CALLBACKS);
  lua_rawget(L, LUA_REGISTRYINDEX);
  if (!lua_istable(L, -1) || lua_objlen(L, -1) == 0) {
    lua_pop(L, 1);
    return;
  }
  lua_pushlightuserdata(L, (void *)&K_CALLBACKS);
  lua_newtable(L);
  lua_rawset(L, LUA_REGISTRYINDEX);
  if (!ok) {
    lua_pop(L, 1);
    return;
  }
  int list = lua_gettop(L), n = (int)lua_objlen(L, list);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    lua_call(L, 0, 0);
  }
  lua_pop(L, 1);
}

static const char *const backward_opts[] = {"gradient", "retain_graph", "create_graph",
                                            NULL};

/* t:backward([gradient][, {retain_graph=, create_graph=}]) */
static int l_backward(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "backward");
  em_tensor *g = NULL;
  int opts = 0;
  if (lua_istable(L, 2) && !l_totensor(L, 2)) opts = 2;
  else if (!lua_isnoneornil(L, 2)) {
    g = l_totensor(L, 2);
    if (!g) return l_errorf(L, "backward: expected a tensor for gradient, got %s",
                            luaL_typename(L, 2));
    if (lua_istable(L, 3)) opts = 3;
  } else if (lua_istable(L, 3)) {
    opts = 3; /* t:backward(nil, {...}) */
  }
  l_checknomore(L, opts ? opts : 2, "backward");
  if (opts) {
    l_checkopts(L, opts, "backward", backward_opts);
    lua_getfield(L, opts, "gradient");
    if (!lua_isnil(L, -1)) {
      g = l_totensor(L, -1);
      if (!g) return l_errorf(L, "backward: expected a tensor for gradient");
    }
    lua_pop(L, 1);
  }
  int create = opts ? l_optbool(L, opts, "create_graph", 0) : 0;
  int retain = opts ? l_optbool(L, opts, "retain_graph", create) : create;
  em_tensor *ts[1] = {t}, *gs[1] = {g};
  lua_State *prev = current_L;
  current_L = L;
  em_status st = em_backward(1, ts, gs, retain, create);
  current_L = prev;
  run_final_callbacks(L, st == EM_OK); /* touches no engine error */
  if (st != EM_OK) return l_error(L);
  return 0;
}

static em_tensor **tensor_list(lua_State *L, int idx, const char *what, int allow_nil, int *n);

/* C._backward_many(tensors, grads|nil, retain, create): one backward pass
** from several roots (T.autograd.backward), their gradients summed, each
** hook run once (PyTorch's) */
static int l_backward_many(lua_State *L) {
  int n, ng = 0;
  em_tensor **ts = tensor_list(L, 1, "tensors", 0, &n);
  em_tensor **gs = NULL;
  if (!lua_isnil(L, 2)) {
    gs = tensor_list(L, 2, "grad_tensors", 1, &ng);
    if (ng > n) return l_errorf(L, "backward: got %d grad_tensors for %d tensors", ng, n);
  }
  if (n < 1) return l_errorf(L, "backward: expected at least one tensor");
  em_tensor **g = lua_newuserdata(L, sizeof *g * (size_t)n);
  for (int i = 0; i < n; i++) g[i] = gs && i < ng ? gs[i] : NULL;
  int retain = lua_toboolean(L, 3), create = lua_toboolean(L, 4);
  lua_State *prev = current_L;
  current_L = L;
  em_status st = em_backward(n, ts, g, retain, create);
  current_L = prev;
  run_final_callbacks(L, st == EM_OK);
  if (st != EM_OK) return l_error(L);
  return 0;
}

/* Reads a list of tensors (or one tensor) at idx into a malloc'd array
** anchored in a userdata on the stack (so a raise frees it). */
static em_tensor **tensor_list(lua_State *L, int idx, const char *what, int allow_nil,
                               int *n) {
  if (l_totensor(L, idx)) {
    em_tensor **a = lua_newuserdata(L, sizeof *a);
    a[0] = l_totensor(L, idx);
    *n = 1;
    return a;
  }
  if (!lua_istable(L, idx))
    l_errorf(L, "grad: expected a tensor or a list of tensors for %s, got %s", what,
             luaL_typename(L, idx));
  int len = (int)lua_objlen(L, idx);
  if (allow_nil) {
    /* a hole (PyTorch's None) is false, or nil in a list with an n field
    ** ({g, nil, n = 2}, as table.pack makes), since {g, nil} has length 1 */
    lua_getfield(L, idx, "n");
    if (lua_type(L, -1) == LUA_TNUMBER) {
      lua_Number nn = lua_tonumber(L, -1);
      if (nn >= len && nn <= 1e6 && nn == (lua_Number)(int)nn) len = (int)nn;
    }
    lua_pop(L, 1);
  }
  em_tensor **a = lua_newuserdata(L, sizeof *a * (size_t)(len + 1));
  for (int i = 0; i < len; i++) {
    lua_rawgeti(L, idx, i + 1);
    a[i] = l_totensor(L, -1);
    if (!a[i] && !(allow_nil && (lua_isnil(L, -1) ||
                                 (lua_isboolean(L, -1) && !lua_toboolean(L, -1)))))
      l_errorf(L, "grad: %s[%d] is not a tensor", what, i + 1);
    lua_pop(L, 1);
  }
  *n = len;
  return a;
}

/* C._autograd_grad(outputs, grad_outputs|nil, inputs, retain, create,
** allow_unused) -> list of gradients (nil for unused inputs) */
static int l_autograd_grad(lua_State *L) {
  int nout, ngo = 0, nin;
  em_tensor **outs = tensor_list(L, 1, "outputs", 0, &nout);
  em_tensor **gos = NULL;
  if (!lua_isnil(L, 2)) {
    gos = tensor_list(L, 2, "grad_outputs", 1, &ngo);
    if (ngo != nout)
      return l_errorf(L,
                      "grad: got %d grad_outputs for %d outputs (give false, PyTorch's None, "
                      "for an output of one element that takes 1)", ngo, nout);
  }
  em_tensor **ins = tensor_list(L, 3, "inputs", 0, &nin);
  int retain = lua_toboolean(L, 4), create = lua_toboolean(L, 5);
  int allow_unused = lua_toboolean(L, 6);
  em_tensor **res = lua_newuserdata(L, sizeof *res * (size_t)(nin + 1));
  lua_State *prev = current_L;
  current_L = L;
  em_status st = em_autograd_grad(nout, outs, gos, nin, (const em_tensor *const *)ins, retain,
                                  create, allow_unused, res);
  current_L = prev;
  if (st != EM_OK) {
    run_final_callbacks(L, 0); /* touches no engine error */
    return l_error(L);
  }
  /* boxes for every result first; no raise after this point but pushes */
  lua_createtable(L, nin, 0);
  for (int j = 0; j < nin; j++) {
    if (res[j]) {
      em_tensor **box = l_newbox(L);
      *box = res[j];
    } else {
      lua_pushboolean(L, 0);
    }
    lua_rawseti(L, -2, j + 1);
  }
  run_final_callbacks(L, 1); /* the results are boxed: a raise frees them */
  return 1;
}


/* A per-thread mode switch: sets it from the boolean at 1, pushes the
** previous mode. */
static int swap_mode(lua_State *L, const char *op, int (*get)(void), void (*set)(int)) {
  if (!lua_isboolean(L, 1))
    return l_errorf(L, "%s: expected a boolean, got %s", op, luaL_typename(L, 1));
  int prev = get();
  set(lua_toboolean(L, 1));
  lua_pushboolean(L, prev);
  return 1;
}

/* C._set_detect_anomaly(b) -> the previous mode */
static int l_set_detect_anomaly(lua_State *L) {
  return swap_mode(L, "set_detect_anomaly", em_is_anomaly_enabled, em_set_detect_anomaly);
}

static int l_is_grad_enabled(lua_State *L) {
  l_checknomore(L, 0, "is_grad_enabled");
  lua_pushboolean(L, em_grad_mode());
  return 1;
}
static int l_set_grad_enabled(lua_State *L) {
  return swap_mode(L, "set_grad_enabled", em_grad_mode, em_set_grad_enabled);
}
/* C._set_inference_mode(b) -> the previous mode */
static int l_set_inference_mode(lua_State *L) {
  return swap_mode(L, "inference_mode", em_inference_mode, em_set_inference_mode);
}

void l_open_autograd(lua_State *L) {
  static const luaL_Reg fns[] = {{"is_grad_enabled", l_is_grad_enabled},
                                 {"set_grad_enabled", l_set_grad_enabled},
                                 {"_set_inference_mode", l_set_inference_mode},
                                 {"_autograd_grad", l_autograd_grad},
                                 {"_autograd_custom", l_autograd_custom},
                                 {"_name_grad_fn", l_name_grad_fn},
                                 {"_backward_many", l_backward_many},
                                 {"_mark_hook_view", l_mark_hook_view},
                                 {"_set_detect_anomaly", l_set_detect_anomaly},
                                 {"_set_grad_hook", l_set_grad_hook},
                                 {"_set_tensor_hook", l_set_tensor_hook},
                                 {"_get_tensor_hook", l_get_tensor_hook},
                                 {"_get_grad_hook", l_get_grad_hook},
                                 {"_queue_callback", l_queue_callback},
                                 {NULL, NULL}};
  static const luaL_Reg methods[] = {{"requires_grad_", l_requires_grad_},
                                     {"backward", l_backward},
                                     {"retain_grad", l_retain_grad},
                                     {"detach", l_detach},
                                     {"detach_", l_detach_},
                                     {NULL, NULL}};
  static const luaL_Reg props[] = {{"requires_grad", p_requires_grad},
                                   {"set_requires_grad", p_set_requires_grad},
                                   {"is_leaf", p_is_leaf},
                                   {"retains_grad", p_retains_grad},
                                   {"_version", p_version},
                                   {"grad", p_grad},
                                   {"set_grad", p_set_grad},
                                   {"grad_fn", p_grad_fn},
                                   {NULL, NULL}};
  /* a thread that lives as long as the state, for lua_custom_free */
  lua_getfield(L, LUA_REGISTRYINDEX, "ember.anchor");
  int have = lua_isthread(L, -1);
  lua_pop(L, 1);
  if (!have) {
    lua_newthread(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "ember.anchor");
  }
  l_add_functions(L, fns);
  l_add_methods(L, methods);
  l_add_props(L, props);
}
