/*
** l_linalg.c -- the LAPACK primitives of T.linalg (issue 19) as private
** module functions C._linalg_*; lua/ember/linalg.lua checks the public
** arguments and options, builds T.linalg on them and records the
** derivatives. Each returns its results in the order of the engine call
** (nil where the engine gives none).
*/
#include "l_ember.h"

/* make n result boxes at the top of the stack (first at *base) */
static em_tensor **boxes(lua_State *L, int n, int *base) {
  *base = lua_gettop(L) + 1;
  em_tensor **first = NULL;
  for (int i = 0; i < n; i++) {
    em_tensor **b = l_newbox(L);
    if (i == 0) first = b;
  }
  return first;
}
static em_tensor **box_at(lua_State *L, int idx) {
  return (em_tensor **)lua_touserdata(L, idx);
}
/* the n boxes from base as results; empty ones become nil */
static int results(lua_State *L, int base, int n) {
  for (int i = 0; i < n; i++)
    if (*box_at(L, base + i) == NULL) {
      lua_pushnil(L);
      lua_replace(L, base + i);
    }
  return n;
}

static int flag(lua_State *L, int idx) { return lua_toboolean(L, idx); }

/* (A, check) -> LU, pivots, info */
static int l_lu_factor(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "linalg.lu_factor");
  int check = flag(L, 2), base;
  boxes(L, 3, &base);
  if (em_linalg_lu_factor(A, check, box_at(L, base), box_at(L, base + 1),
                          box_at(L, base + 2)) != EM_OK)
    l_error(L);
  return results(L, base, 3);
}

/* (LU, pivots, B, trans) -> X */
static int l_lu_solve(lua_State *L) {
  em_tensor *LU = l_checktensor(L, 1, "linalg.lu_solve");
  em_tensor *P = l_checktensor(L, 2, "linalg.lu_solve");
  em_tensor *B = l_checktensor(L, 3, "linalg.lu_solve");
  int tr = flag(L, 4), base;
  boxes(L, 1, &base);
  if (em_linalg_lu_solve(LU, P, B, tr, box_at(L, base)) != EM_OK) l_error(L);
  return results(L, base, 1);
}

/* (A, hermitian, check) -> LD, pivots, info */
static int l_ldl_factor(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "linalg.ldl_factor");
  /* check: 0, 1 (ldl_factor) or 2 (ldl_factor_ex's check_errors: its name) */
  int herm = flag(L, 2), base;
  int check = lua_isnumber(L, 3) ? (int)lua_tointeger(L, 3) : flag(L, 3);
  boxes(L, 3, &base);
  if (em_linalg_ldl_factor(A, herm, check, box_at(L, base), box_at(L, base + 1),
                           box_at(L, base + 2)) != EM_OK)
    l_error(L);
  return results(L, base, 3);
}

/* (LD, pivots, B, hermitian) -> X */
static int l_ldl_solve(lua_State *L) {
  em_tensor *LD = l_checktensor(L, 1, "linalg.ldl_solve");
  em_tensor *P = l_checktensor(L, 2, "linalg.ldl_solve");
  em_tensor *B = l_checktensor(L, 3, "linalg.ldl_solve");
  int herm = flag(L, 4), base;
  boxes(L, 1, &base);
  if (em_linalg_ldl_solve(LD, P, B, herm, box_at(L, base)) != EM_OK) l_error(L);
  return results(L, base, 1);
}

/* (A, B, check) -> X, info */
static int l_solve(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "linalg.solve");
  em_tensor *B = l_checktensor(L, 2, "linalg.solve");
  int check = (int)luaL_optinteger(L, 3, 1), base;
  boxes(L, 2, &base);
  if (em_linalg_solve(A, B, check, box_at(L, base), box_at(L, base + 1)) != EM_OK) l_error(L);
  return results(L, base, 2);
}

/* (A, check) -> inv(A), info (check as l_solve's: 0 none, else raise) */
static int l_inv(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "linalg.inv");
  int check = (int)luaL_optinteger(L, 2, 1), base;
  boxes(L, 2, &base);
  if (em_linalg_inv(A, check, box_at(L, base), box_at(L, base + 1)) != EM_OK) l_error(L);
  return results(L, base, 2);
}

/* (A, check) -> L (upper triangle zeroed), info */
static int l_cholesky(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "linalg.cholesky");
  int check = flag(L, 2), base;
  boxes(L, 2, &base);
  if (em_linalg_cholesky(A, check, box_at(L, base), box_at(L, base + 1)) != EM_OK) l_error(L);
  return results(L, base, 2);
}

/* (A, B, upper, left, unitriangular) -> X */
static int l_solve_triangular(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "linalg.solve_triangular");
  em_tensor *B = l_checktensor(L, 2, "linalg.solve_triangular");
  int base;
  boxes(L, 1, &base);
  if (em_linalg_solve_triangular(A, B, flag(L, 3), flag(L, 4), flag(L, 5), box_at(L, base)) !=
      EM_OK)
    l_error(L);
  return results(L, base, 1);
}

/* (A) -> QR, tau */
static int l_geqrf(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "geqrf");
  int base;
  boxes(L, 2, &base);
  if (em_linalg_geqrf(A, box_at(L, base), box_at(L, base + 1)) != EM_OK) l_error(L);
  return results(L, base, 2);
}

/* (A, tau) -> Q */
static int l_householder_product(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "linalg.householder_product");
  em_tensor *tau = l_checktensor(L, 2, "linalg.householder_product");
  int base;
  boxes(L, 1, &base);
  if (em_linalg_householder_product(A, tau, box_at(L, base)) != EM_OK) l_error(L);
  return results(L, base, 1);
}

/* (A, full_matrices, compute_uv) -> U, S, Vh */
static int l_svd(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "linalg.svd");
  int base;
  boxes(L, 3, &base);
  if (em_linalg_svd(A, flag(L, 2), flag(L, 3), box_at(L, base), box_at(L, base + 1),
                    box_at(L, base + 2)) != EM_OK)
    l_error(L);
  return results(L, base, 3);
}

/* (A, upper, compute_v) -> L, V */
static int l_eigh(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "linalg.eigh");
  int base;
  boxes(L, 2, &base);
  if (em_linalg_eigh(A, flag(L, 2), flag(L, 3), box_at(L, base), box_at(L, base + 1)) != EM_OK)
    l_error(L);
  return results(L, base, 2);
}

/* (A, compute_v) -> L, V */
static int l_eig(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "linalg.eig");
  int base;
  boxes(L, 2, &base);
  if (em_linalg_eig(A, flag(L, 2), box_at(L, base), box_at(L, base + 1)) != EM_OK) l_error(L);
  return results(L, base, 2);
}

/* (A, B, rcond, driver) -> X, rank, S, R */
static int l_lstsq(lua_State *L) {
  em_tensor *A = l_checktensor(L, 1, "linalg.lstsq");
  em_tensor *B = l_checktensor(L, 2, "linalg.lstsq");
  double rcond = luaL_checknumber(L, 3);
  int driver = (int)luaL_checkinteger(L, 4), base;
  boxes(L, 4, &base);
  if (em_linalg_lstsq(A, B, rcond, driver, box_at(L, base), box_at(L, base + 1),
                      box_at(L, base + 2), box_at(L, base + 3)) != EM_OK)
    l_error(L);
  return results(L, base, 4);
}

void l_open_linalg(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"_linalg_lu_factor", l_lu_factor}, {"_linalg_lu_solve", l_lu_solve},
      {"_linalg_ldl_factor", l_ldl_factor}, {"_linalg_ldl_solve", l_ldl_solve},
      {"_linalg_solve", l_solve}, {"_linalg_cholesky", l_cholesky},
      {"_linalg_inv", l_inv},
      {"_linalg_solve_triangular", l_solve_triangular}, {"_linalg_geqrf", l_geqrf},
      {"_linalg_householder_product", l_householder_product}, {"_linalg_svd", l_svd},
      {"_linalg_eigh", l_eigh}, {"_linalg_lstsq", l_lstsq}, {"_linalg_eig", l_eig},
      {NULL, NULL}};
  l_add_functions(L, fns);
}
