/*
** l_optim.c -- the fused optimizer updates of ops/optim.c for T.optim
** (lua/ember/optim/init.lua): internal C._optim_sgd / _optim_adam /
** _optim_rmsprop entry points, one call per parameter and step.
**
** Arguments are positional (numbers and booleans, no option tables: this is
** the per-parameter hot path of opt:step()). A state argument is a tensor
** or nil; each call returns the state tensors, the given Lua objects where
** they were given and new tensors where the engine created them (boxes made
** before the engine call, so a raised error leaks nothing).
*/
#include <string.h>

#include "l_ember.h"

/* The tensor at idx, or NULL for nil. */
static em_tensor *opt_state(lua_State *L, int idx, const char *op) {
  if (lua_isnoneornil(L, idx)) return NULL;
  return l_checktensor(L, idx, op);
}

static double opt_num(lua_State *L, int idx, const char *op, const char *what) {
  if (lua_type(L, idx) != LUA_TNUMBER)
    return l_errorf(L, "%s: %s must be a number, got %s", op, what, luaL_typename(L, idx)), 0;
  return lua_tonumber(L, idx);
}

/* Boxes for the slots that are nil (the engine may fill them), pushed in
** order; box[i] is NULL for a slot given as a tensor. */
static void opt_boxes(lua_State *L, int n, em_tensor **given, em_tensor ***box) {
  for (int i = 0; i < n; i++) box[i] = given[i] ? NULL : l_newbox(L);
}

/* Pushes the n state results: the given Lua object, the filled box, or nil. */
static void opt_push(lua_State *L, int n, const int *slot_idx, em_tensor **given,
                     em_tensor ***box, em_tensor **now, int top) {
  int b = top;
  for (int i = 0; i < n; i++) {
    if (given[i]) {
      lua_pushvalue(L, slot_idx[i]);
    } else {
      b++;
      if (now[i]) {
        *box[i] = now[i];
        lua_pushvalue(L, b);
      } else {
        lua_pushnil(L);
      }
    }
  }
}

/* C._optim_sgd(p, g, buf|nil, lr, momentum, dampening, weight_decay,
**              nesterov, maximize) -> buf|nil */
static int l_optim_sgd(lua_State *L) {
  const char *op = "SGD";
  em_tensor *p = l_checktensor(L, 1, op), *g = l_checktensor(L, 2, op);
  em_tensor *given[1] = {opt_state(L, 3, op)};
  em_sgd_opts o;
  o.lr = opt_num(L, 4, op, "lr");
  o.momentum = opt_num(L, 5, op, "momentum");
  o.dampening = opt_num(L, 6, op, "dampening");
  o.weight_decay = opt_num(L, 7, op, "weight_decay");
  o.nesterov = lua_toboolean(L, 8);
  o.maximize = lua_toboolean(L, 9);
  lua_settop(L, 9);
  const int idx[1] = {3};
  em_tensor **box[1];
  opt_boxes(L, 1, given, box);
  em_tensor *now[1] = {given[0]};
  if (em_sgd_step(p, g, &now[0], &o) != EM_OK) return l_error(L);
  opt_push(L, 1, idx, given, box, now, 9);
  return 1;
}

/* C._optim_adam(p, g, exp_avg|nil, exp_avg_sq|nil, max_exp_avg_sq|nil, step,
**               lr, beta1, beta2, eps, weight_decay, amsgrad, maximize,
**               decoupled) -> exp_avg, exp_avg_sq, max_exp_avg_sq|nil */
static int l_optim_adam(lua_State *L) {
  int decoupled = lua_toboolean(L, 14);
  const char *op = decoupled ? "AdamW" : "Adam";
  em_tensor *p = l_checktensor(L, 1, op), *g = l_checktensor(L, 2, op);
  em_tensor *given[3] = {opt_state(L, 3, op), opt_state(L, 4, op), opt_state(L, 5, op)};
  int64_t step = l_checkint(L, 6, op, "step");
  em_adam_opts o;
  o.lr = opt_num(L, 7, op, "lr");
  o.beta1 = opt_num(L, 8, op, "beta1");
  o.beta2 = opt_num(L, 9, op, "beta2");
  o.eps = opt_num(L, 10, op, "eps");
  o.weight_decay = opt_num(L, 11, op, "weight_decay");
  o.amsgrad = lua_toboolean(L, 12);
  o.maximize = lua_toboolean(L, 13);
  o.decoupled = decoupled;
  lua_settop(L, 14);
  const int idx[3] = {3, 4, 5};
  em_tensor **box[3];
  opt_boxes(L, 3, given, box);
  em_tensor *now[3] = {given[0], given[1], given[2]};
  if (em_adam_step(p, g, &now[0], &now[1], &now[2], step, &o) != EM_OK) return l_error(L);
  opt_push(L, 3, idx, given, box, now, 14);
  return 3;
}

/* C._optim_rmsprop(p, g, square_avg|nil, momentum_buffer|nil, grad_avg|nil,
**                  lr, alpha, eps, weight_decay, momentum, centered, maximize)
**   -> square_avg, momentum_buffer|nil, grad_avg|nil */
static int l_optim_rmsprop(lua_State *L) {
  const char *op = "RMSprop";
  em_tensor *p = l_checktensor(L, 1, op), *g = l_checktensor(L, 2, op);
  em_tensor *given[3] = {opt_state(L, 3, op), opt_state(L, 4, op), opt_state(L, 5, op)};
  em_rmsprop_opts o;
  o.lr = opt_num(L, 6, op, "lr");
  o.alpha = opt_num(L, 7, op, "alpha");
  o.eps = opt_num(L, 8, op, "eps");
  o.weight_decay = opt_num(L, 9, op, "weight_decay");
  o.momentum = opt_num(L, 10, op, "momentum");
  o.centered = lua_toboolean(L, 11);
  o.maximize = lua_toboolean(L, 12);
  lua_settop(L, 12);
  const int idx[3] = {3, 4, 5};
  em_tensor **box[3];
  opt_boxes(L, 3, given, box);
  em_tensor *now[3] = {given[0], given[1], given[2]};
  if (em_rmsprop_step(p, g, &now[0], &now[1], &now[2], &o) != EM_OK) return l_error(L);
  opt_push(L, 3, idx, given, box, now, 12);
  return 3;
}

/* C._optim_gather(true): queue the steps' updates (em_optim_gather_begin);
** C._optim_gather(false): run what is queued (em_optim_gather_end), raising
** its error. */
static int l_optim_gather(lua_State *L) {
  if (lua_toboolean(L, 1)) {
    em_optim_gather_begin();
  } else if (em_optim_gather_end() != EM_OK) {
    return l_error(L);
  }
  return 0;
}

/* C._optim_multi_calls() -> the multi entry calls so far (tests) */
static int l_optim_multi_calls(lua_State *L) {
  lua_pushnumber(L, (lua_Number)em_optim_multi_calls());
  return 1;
}

/* C._optim_other(kind, p, g, state1|nil, state2|nil, step, scalar1, scalar2,
**   lr, weight_decay, eps, beta1, beta2, lr_decay, initial_accumulator_value,
**   rho, momentum_decay, lambd, alpha, t0, etaminus, etaplus, step_size_min,
**   step_size_max, maximize) -> state1, state2|nil, scalar1, scalar2
** kind: 1 Adagrad, 2 Adadelta, 3 Adamax, 4 NAdam, 5 RAdam, 6 ASGD, 7 Rprop
** (em_optim_kind + 1); the scalars are NAdam's mu_product, ASGD's eta and mu
** (0 for the others). */
static int l_optim_other(lua_State *L) {
  static const char *const names[] = {"Adagrad", "Adadelta", "Adamax", "NAdam",
                                      "RAdam", "ASGD", "Rprop"};
  int64_t kind = l_checkint(L, 1, "optimizer step", "kind");
  if (kind < 1 || kind > 7) return l_errorf(L, "optimizer step: unknown kind %lld", (long long)kind);
  const char *op = names[kind - 1];
  em_tensor *p = l_checktensor(L, 2, op), *g = l_checktensor(L, 3, op);
  em_tensor *given[2] = {opt_state(L, 4, op), opt_state(L, 5, op)};
  int64_t step = l_checkint(L, 6, op, "step");
  double sc[2] = {opt_num(L, 7, op, "scalar state"), opt_num(L, 8, op, "scalar state")};
  em_optim_opts o;
  memset(&o, 0, sizeof o);
  o.lr = opt_num(L, 9, op, "lr");
  o.weight_decay = opt_num(L, 10, op, "weight_decay");
  o.eps = opt_num(L, 11, op, "eps");
  o.beta1 = opt_num(L, 12, op, "beta1");
  o.beta2 = opt_num(L, 13, op, "beta2");
  o.lr_decay = opt_num(L, 14, op, "lr_decay");
  o.initial_accumulator_value = opt_num(L, 15, op, "initial_accumulator_value");
  o.rho = opt_num(L, 16, op, "rho");
  o.momentum_decay = opt_num(L, 17, op, "momentum_decay");
  o.lambd = opt_num(L, 18, op, "lambd");
  o.alpha = opt_num(L, 19, op, "alpha");
  o.t0 = opt_num(L, 20, op, "t0");
  o.etaminus = opt_num(L, 21, op, "etaminus");
  o.etaplus = opt_num(L, 22, op, "etaplus");
  o.step_size_min = opt_num(L, 23, op, "step_size_min");
  o.step_size_max = opt_num(L, 24, op, "step_size_max");
  o.maximize = lua_toboolean(L, 25);
  lua_settop(L, 25);
  const int idx[2] = {4, 5};
  em_tensor **box[2];
  opt_boxes(L, 2, given, box);
  em_tensor *now[2] = {given[0], given[1]};
  if (em_optim_step((em_optim_kind)(kind - 1), p, g, now, step, sc, &o) != EM_OK) return l_error(L);
  opt_push(L, 2, idx, given, box, now, 25);
  lua_pushnumber(L, sc[0]);
  lua_pushnumber(L, sc[1]);
  return 4;
}

void l_open_optim(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"_optim_sgd", l_optim_sgd},
      {"_optim_adam", l_optim_adam},
      {"_optim_rmsprop", l_optim_rmsprop},
      {"_optim_other", l_optim_other},
      {"_optim_gather", l_optim_gather},
      {"_optim_multi_calls", l_optim_multi_calls},
      {NULL, NULL},
  };
  l_add_functions(L, fns);
}
