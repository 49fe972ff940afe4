/*
** l_rnn.c -- one recurrent layer and direction (engine/src/ops/rnn.c) for
** lua/ember/nn/rnn.lua: C._nn_rnn_layer(mode, x, h0, c0, w_ih, w_hh, b_ih,
** b_hh, w_hr, lengths, reverse) -> out, h_n[, c_n]. mode is "rnn_tanh",
** "rnn_relu", "lstm" or "gru"; the optional tensors may be nil. The engine
** records the autograd node.
*/
#include <string.h>

#include "l_ember.h"

static int l_rnn_layer(lua_State *L) {
  const char *op = "rnn_layer";
  const char *m = luaL_checkstring(L, 1);
  em_rnn_mode mode;
  if (strcmp(m, "rnn_tanh") == 0) mode = EM_RNN_TANH;
  else if (strcmp(m, "rnn_relu") == 0) mode = EM_RNN_RELU;
  else if (strcmp(m, "lstm") == 0) mode = EM_RNN_LSTM;
  else if (strcmp(m, "gru") == 0) mode = EM_RNN_GRU;
  else return l_errorf(L, "%s: unknown mode '%s' (expected rnn_tanh, rnn_relu, lstm or gru)", op, m);
  const em_tensor *in[EM_RNN_NOPS];
  for (int i = 0; i < EM_RNN_NOPS; i++)
    in[i] = lua_isnoneornil(L, 2 + i) ? NULL : l_checktensor(L, 2 + i, op);
  const em_tensor *lengths = lua_isnoneornil(L, 10) ? NULL : l_checktensor(L, 10, op);
  int reverse = lua_toboolean(L, 11);
  em_tensor **o = l_newbox(L), **h = l_newbox(L);
  em_tensor **c = mode == EM_RNN_LSTM ? l_newbox(L) : NULL;
  if (em_rnn_layer(mode, in, lengths, reverse, o, h, c) != EM_OK) return l_error(L);
  return c ? 3 : 2;
}

void l_open_rnn(lua_State *L) {
  static const luaL_Reg fns[] = {{"_nn_rnn_layer", l_rnn_layer}, {NULL, NULL}};
  l_add_functions(L, fns);
}
