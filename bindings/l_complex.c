/*
** l_complex.c -- the complex dtypes' functions (docs/dtypes.md, "Complex"):
** T.complex, T.view_as_real, T.view_as_complex, T.real/T.imag and the
** t.real/t.imag views, conj, angle, is_complex; and the FFT's one engine
** primitive for lua/ember/fft.lua (docs/fft.md).
*/
#include "l_ember.h"

typedef em_status (*unary_fn)(const em_tensor *, em_tensor **);

static int unary(lua_State *L, const char *op, unary_fn f) {
  em_tensor *t = l_checktensor(L, 1, op);
  l_checknomore(L, 1, op);
  em_tensor **box = l_newbox(L);
  if (f(t, box) != EM_OK) return l_error(L);
  return 1;
}

static int l_view_as_real(lua_State *L) { return unary(L, "view_as_real", em_view_as_real); }
static int l_view_as_complex(lua_State *L) {
  return unary(L, "view_as_complex", em_view_as_complex);
}
static int l_conj(lua_State *L) { return unary(L, "conj", em_conj); }
static int l_angle(lua_State *L) { return unary(L, "angle", em_angle); }

static int part(lua_State *L, const char *op, int which) {
  em_tensor *t = l_checktensor(L, 1, op);
  l_checknomore(L, 1, op);
  em_tensor **box = l_newbox(L);
  if (em_complex_part(t, which, box) != EM_OK) return l_error(L);
  return 1;
}
static int l_real(lua_State *L) { return part(L, "real", 1); }
static int l_imag(lua_State *L) { return part(L, "imag", 2); }
/* properties: the getter takes the tensor only */
static int p_real(lua_State *L) { lua_settop(L, 1); return part(L, "real", 1); }
static int p_imag(lua_State *L) { lua_settop(L, 1); return part(L, "imag", 2); }

static int l_complex(lua_State *L) {
  em_tensor *re = l_checktensor(L, 1, "complex");
  em_tensor *im = l_checktensor(L, 2, "complex");
  l_checknomore(L, 2, "complex");
  em_tensor **box = l_newbox(L);
  if (em_complex_new(re, im, box) != EM_OK) return l_error(L);
  return 1;
}

static int l_is_complex(lua_State *L) {
  em_tensor *t = l_checktensor(L, 1, "is_complex");
  l_checknomore(L, 1, "is_complex");
  lua_pushboolean(L, em_dtype_kindof(em_tensor_dtype(t)) == EM_KIND_COMPLEX);
  return 1;
}

/* C._fft_c2c(x, dim, forward, fct): x complex; the transform along dim
** (1-based, negative from the end), times fct, as a new tensor. */
static int l_fft_c2c(lua_State *L) {
  em_tensor *x = l_checktensor(L, 1, "fft");
  int64_t dim = l_checkint(L, 2, "fft", "dim");
  int forward = lua_toboolean(L, 3);
  double fct = luaL_checknumber(L, 4);
  em_tensor **box = l_newbox(L);
  if (em_fft_c2c(x, dim, forward, fct, box) != EM_OK) return l_error(L);
  return 1;
}

/* C._fft_c2c_(y, dim, forward, fct): the same in place on y (contiguous,
** complex, not requiring grad); returns y */
static int l_fft_c2c_(lua_State *L) {
  em_tensor *y = l_checktensor(L, 1, "fft");
  int64_t dim = l_checkint(L, 2, "fft", "dim");
  int forward = lua_toboolean(L, 3);
  double fct = luaL_checknumber(L, 4);
  if (em_fft_c2c_(y, dim, forward, fct) != EM_OK) return l_error(L);
  lua_settop(L, 1);
  return 1;
}

/* C._fft_r2c(x, dim, fct[, out]): x float32/float64; rfft along dim, times
** fct; into out (returned) when given */
static int l_fft_r2c(lua_State *L) {
  em_tensor *x = l_checktensor(L, 1, "rfft");
  int64_t dim = l_checkint(L, 2, "rfft", "dim");
  double fct = luaL_checknumber(L, 3);
  if (!lua_isnoneornil(L, 4)) {
    em_tensor *o = l_checktensor(L, 4, "rfft");
    if (em_fft_r2c_out(x, dim, fct, o) != EM_OK) return l_error(L);
    lua_settop(L, 4);
    return 1;
  }
  em_tensor **box = l_newbox(L);
  if (em_fft_r2c(x, dim, fct, box) != EM_OK) return l_error(L);
  return 1;
}

void l_open_complex(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"complex", l_complex},         {"view_as_real", l_view_as_real},
      {"view_as_complex", l_view_as_complex}, {"real", l_real},
      {"imag", l_imag},               {"conj", l_conj},
      {"angle", l_angle},             {"is_complex", l_is_complex},
      {"_fft_c2c", l_fft_c2c},        {"_fft_r2c", l_fft_r2c},
      {"_fft_c2c_", l_fft_c2c_},
      {NULL, NULL}};
  static const luaL_Reg methods[] = {
      {"conj", l_conj}, {"angle", l_angle}, {"is_complex", l_is_complex}, {NULL, NULL}};
  static const luaL_Reg props[] = {{"real", p_real}, {"imag", p_imag}, {NULL, NULL}};
  l_add_functions(L, fns);
  l_add_methods(L, methods);
  l_add_props(L, props);
}
