/*
** ctest_ops.h -- operand builders for the C tests that call the engine's
** elementwise entry points: a tensor operand, an integer and a float scalar.
*/
#ifndef EMBER_CTEST_OPS_H
#define EMBER_CTEST_OPS_H

#include <string.h>

#include "ember.h"

static inline em_operand T_(const em_tensor *t) {
  em_operand o;
  memset(&o, 0, sizeof o);
  o.tensor = t;
  return o;
}
static inline em_operand S_int(int64_t v) {
  em_operand o;
  memset(&o, 0, sizeof o);
  o.scalar.kind = EM_SCALAR_INT;
  o.scalar.i = v;
  o.scalar.f = (double)v;
  return o;
}
static inline em_operand S_float(double v) {
  em_operand o;
  memset(&o, 0, sizeof o);
  o.scalar.kind = EM_SCALAR_FLOAT;
  o.scalar.f = v;
  return o;
}

#endif
