/*
** l_ember.h -- helpers shared by the binding files (not installed).
** Every binding function follows one pattern: check arguments with these
** helpers (they raise "op: ..." Lua errors), make the result box first, call
** the engine, and on failure raise em_last_error() -- nothing is held in C
** across a raise, so nothing leaks.
*/
#ifndef EMBER_L_EMBER_H
#define EMBER_L_EMBER_H

#include <lauxlib.h>
#include <lua.h>

#include "ember.h"
#include "ember_lua.h"

/* The binding builds against LuaJIT (Lua 5.1's API) and PUC Lua 5.4. */
#if LUA_VERSION_NUM >= 502
#define lua_objlen(L, i) lua_rawlen(L, (i))
#endif

/* -- Tensors ------------------------------------------------------------ */

/* A new box (a userdata holding NULL, with the tensor metatable) on the
** stack top; store the engine's result in it. */
em_tensor **l_newbox(lua_State *L);
/* The tensor at idx or a "op: expected a tensor for argument #n" error. */
em_tensor *l_checktensor(lua_State *L, int idx, const char *op);
em_tensor *l_totensor(lua_State *L, int idx);  /* NULL if not a tensor */
/* luaL_error with C's printf formats (%lld, %zu, %g): Lua's own
** lua_pushfstring knows only %d %s %f %p %c. */
int l_errorf(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Raises the engine's last error as a Lua error. */
int l_error(lua_State *L);
int l_error_as(lua_State *L, const char *inner, const char *op);
/* Pushes result; when it is the same tensor as the one at idx, pushes that
** Lua object instead (so `t:to(t.dtype) == t`). Takes over the reference. */
void l_push_result(lua_State *L, em_tensor *result, int idx);

/* -- Numbers, sizes, options --------------------------------------------- */

/* An integral Lua number in int64 range; else "op: expected an integer for
** what, got 2.5". */
int64_t l_checkint(lua_State *L, int idx, const char *op, const char *what);
/* l_checkint of a list element: errors name it "what[pos]". */
int64_t l_checkint_at(lua_State *L, int idx, const char *op, const char *what, int pos);
/* Refuses a nil hole in size/position arguments from idx after n numbers. */
void l_check_no_hole(lua_State *L, int idx, int n, const char *op, const char *what);
/* An entry point that takes nothing after argument n (no options table):
** a non-nil argument past n is an error, an options table as
** "op: unknown option 'k' (op takes no options)" (docs/math.md, "Options"). */
void l_checknomore(lua_State *L, int n, const char *op);
/* The same for an entry point whose arguments from..n are numbers, booleans,
** tensors or dtypes (optional ones may be absent): a table among them is an
** options table and refused as above. */
void l_nooptions(lua_State *L, int from, int n, const char *op);
/* A table with no [1] and a string key: an options table, not a list. */
int l_isoptions(lua_State *L, int idx);
/* Sizes as varargs numbers or a table (array or T.Size) starting at idx.
** Returns ndim; *next is the first argument after the sizes. */
int l_checksizes(lua_State *L, int idx, const char *op, int64_t *sizes, int *next);
/* Is the value at idx an options table (a table that is not a size list)? */
int l_isopts(lua_State *L, int idx);
/* Errors on keys not in allowed (NULL-terminated). idx may be none/nil. */
void l_checkopts(lua_State *L, int idx, const char *op, const char *const *allowed);
/* out= for ops that compute a fresh result: l_opt_out checks the options
** table at idx and returns out (its value pushed at *outidx) or NULL;
** l_out_result writes the boxed result into out and returns it (or leaves
** the box as the result). */
extern const char *const l_out_opts[]; /* {"out", NULL} */
em_tensor *l_opt_out(lua_State *L, int idx, const char *op, const char *const *allowed,
                     int *outidx);
int l_out_result(lua_State *L, em_tensor **box, em_tensor *out, int outidx, const char *op);
/* The `out` field of the options table at opts (already checked): out with
** its value pushed at *outidx, or NULL with nothing pushed. */
em_tensor *l_out_field(lua_State *L, int opts, const char *op, int *outidx);
/* Reads opts[key] as a dtype (a dtype value or name); def when absent. */
int l_optdtype(lua_State *L, int idx, const char *op, int def);
em_device l_optdevice(lua_State *L, int idx, const char *op, em_device def);
int l_optbool(lua_State *L, int idx, const char *key, int def);
/* A dtype value or name at idx (not an options table). */
em_dtype l_checkdtype(lua_State *L, int idx, const char *op);
em_device l_checkdevice(lua_State *L, int idx, const char *op);
int l_isdtype(lua_State *L, int idx);
int l_isdevice(lua_State *L, int idx);
void l_pushdtype(lua_State *L, em_dtype dt);
void l_pushdevice(lua_State *L, em_device dev);
/* Pushes a T.Size. */
void l_pushsize(lua_State *L, int n, const int64_t *sizes);
/* A Lua number as an em_scalar (integral values are INT), or a boolean. */
em_scalar l_checkscalar(lua_State *L, int idx, const char *op);
/* Pushes an element read as the Lua value for its dtype. Errors for int64
** beyond 2^53 (not exactly representable as a Lua number). */
/* Exact int64 values: a Lua 5.4 integer; under LuaJIT a number within
** +-2^53, else a boxed int64_t (FFI). l_toint64 reads an integer-valued
** number, a 5.4 integer or a boxed int64_t/uint64_t into *out (1), or
** answers 0; l_isint64box: idx holds LuaJIT cdata. */
void l_pushint64(lua_State *L, int64_t v);
int l_toint64(lua_State *L, int idx, int64_t *out, const char *op);
int l_isint64box(lua_State *L, int idx);
void l_pushelement(lua_State *L, const em_tensor *t, int64_t pos, const char *op);

em_dtype l_default_dtype(void);

/* The options every creation function takes, and applying requires_grad
** from them to the fresh tensor t (raises for integer dtypes). */
extern const char *const l_creation_opts[];
extern const char *const l_like_opts[]; /* l_creation_opts and memory_format */
int l_like_contiguous(lua_State *L, int opts, const char *op);
/* raises "op: value cannot be converted to type X without overflow" where
** PyTorch's checked Scalar conversion does (l_tensor.c) */
void l_check_scalar_fits(lua_State *L, em_scalar v, em_dtype dt, const char *op);
/* a number, a boolean or a 0-d real tensor at idx as a scalar of its kind;
** a 0-d complex tensor as its real part, refused unless its imaginary part
** is 0 (l_select.c) */
em_scalar l_value_arg(lua_State *L, int idx, const char *op);
/* T.tensor(data) of the number, boolean or nested table at idx (its dtype
** inferred), on dev; the new tensor is left on the stack */
em_tensor *l_tensor_from_data(lua_State *L, int idx, em_device dev, const char *op);
void l_apply_requires_grad(lua_State *L, int opts, em_tensor *t);

/* -- Registration --------------------------------------------------------
** Each binding file has an l_open_<area> that adds its functions with these:
** methods (t:name()), properties (t.name, a getter taking the tensor), and
** module functions (T.name). */
void l_add_methods(lua_State *L, const luaL_Reg *fns);
void l_add_props(lua_State *L, const luaL_Reg *fns);
void l_add_functions(lua_State *L, const luaL_Reg *fns);

/* The indexing entry points, called by __index/__newindex for keys that are
** not strings (l_index.c). */
int l_index_get(lua_State *L);  /* (t, key) -> value */
int l_index_set(lua_State *L);  /* (t, key, value) */

/* The core area (l_core.c), opened first by luaopen_ember_core (l_init.c):
** 1 when the module was opened before (the module is at index 1 either way). */
int l_open_core(lua_State *L);
void l_push_dtype_values(lua_State *L);  /* [id + 1] = dtype value */
void l_push_size_mt(lua_State *L);       /* T.Size's metatable */
void l_open_layout(lua_State *L);  /* C._layout: the FFI fast paths' field offsets (l_layout.c) */
void l_open_tensor(lua_State *L);
void l_open_index(lua_State *L);
void l_open_view(lua_State *L);  /* views: narrow/select/transpose/permute/view/reshape/... (issue 3) */
void l_open_creation(lua_State *L);  /* creation: arange/linspace/logspace/eye and the random generator (issue 2) */
void l_open_math(lua_State *L);  /* math: elementwise ops, type promotion, metamethods (issue 5) */
void l_open_reduce(lua_State *L);  /* reductions and linear algebra (issue 5) */
void l_open_select(lua_State *L);  /* the index family and assembling: index_select/gather/scatter/cat/stack/split (issue 4) */
void l_open_interop(lua_State *L);  /* sharing memory with the outside: FFI, .npy, save/load, DLPack (issue 6) */
void l_open_torch(lua_State *L);  /* PyTorch checkpoints: load_torch/save_torch, T.None (issue 20) */
void l_open_nn(lua_State *L);  /* nn kernels, internal C._nn_* entry points (issue 9) */
void l_open_plot(lua_State *L);  /* C._plot_png: line charts written as PNG (issue 9) */
void l_open_autograd(lua_State *L);  /* autograd: grad/grad_fn/backward/detach, grad mode (issue 9) */
void l_open_dist(lua_State *L);  /* C._data_address for T.distributed (issue 17) */
void l_open_optim(lua_State *L);  /* C._optim_*: fused optimizer updates (issue 9) */
void l_open_complex(lua_State *L);  /* complex dtypes and the FFT primitive (issue 19) */
void l_open_tools(lua_State *L);  /* C._write_out for the tensor tools in Lua (issue 18) */
void l_open_amp(lua_State *L);  /* C._autocast_set/_get for T.autocast (issue 16 item 4) */
void l_open_cuda(lua_State *L);  /* C._cuda_*, pin_memory/is_pinned: the CUDA runtime (issue 15) */
void l_open_linalg(lua_State *L);  /* C._linalg_*: the LAPACK primitives of T.linalg (issue 19) */
void l_open_rnn(lua_State *L);  /* C._nn_rnn_layer: one recurrent layer's time loop (issue 18) */

/* l_interop.c: pushes the tensor at idx with its values on the host (a
** view of a host copy of a device storage, shared through the table at
** seen), for the savers that write device tensors as host bytes. */
void l_push_host(lua_State *L, int idx, int seen);

#endif
