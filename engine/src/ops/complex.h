/*
** ops/complex.h -- the complex elementwise path that em_elementwise takes
** when the result type of its operands is complex (ops/complex.c).
*/
#ifndef EMBER_OPS_COMPLEX_H
#define EMBER_OPS_COMPLEX_H

#include "core/core.h"

/* op on n operands whose result type rt is complex: refused unless the op
** has a complex loop (add, sub, mul, div, pow, eq, ne, neg, abs, sqrt,
** reciprocal, exp, log, sin, cos, tanh, square). alpha scales add/sub's
** second operand; out (may be an input: the in-place forms) takes the
** result when given. */
em_status em_complex_ew(em_ew_op op, const char *name, int n, const em_operand *ops,
                        em_dtype rt, em_scalar alpha, int has_rounding, em_tensor *out,
                        em_tensor **result);

struct em_ag_params;
/* Records the autograd node (kind COMPLEX, sub-op op: an em_ag_cx_op) of a
** complex op computed with grad mode paused (on: the mode before), when on
** and an input requires grad; p (may be NULL) gives what it saves. On
** failure *out is released. */
em_status em_cx_record(int on, int op, const char *name, int nin, const em_tensor *const *in,
                       struct em_ag_params *p, em_tensor **out);

#endif
