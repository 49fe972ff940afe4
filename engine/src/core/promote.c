/*
** promote.c -- type promotion exactly as PyTorch's promote_types,
** result_type and can_cast (c10/core/ScalarType.h, ATen TypeProperties.cpp),
** for ember's dtypes (complex included; no quantized).
**
** What holds:
** - em_promote_types is symmetric, idempotent, and a dtype meets bool in
**   itself; the full 10 x 10 table is checked against torch in
**   tests/lua/promotion_spec.lua (fixture tests/fixtures/promotion_cases.lua).
** - em_result_type keeps three separate winners -- dimensioned tensors, 0-d
**   tensors, scalars -- and combines them by category only: a lower-priority
**   group changes the result only when it is of a higher category
**   (bool < integer < floating).
*/
#include "core/core.h"

/* Ranks inside a category, used by the table below. */
em_dtype em_promote_types(em_dtype a, em_dtype b) {
  if (a == b) return a;
  if (a == EM_BOOL) return b;
  if (b == EM_BOOL) return a;
  em_dtype_kind ka = em_dtype_kindof(a), kb = em_dtype_kindof(b);
  if (ka == EM_KIND_COMPLEX || kb == EM_KIND_COMPLEX) {
    /* complex wins; its width is the wider of the two value types
    ** (complex64 with float64 is complex128, as PyTorch) */
    if (ka == EM_KIND_COMPLEX && kb == EM_KIND_COMPLEX)
      return a == EM_COMPLEX128 || b == EM_COMPLEX128 ? EM_COMPLEX128 : EM_COMPLEX64;
    em_dtype c = ka == EM_KIND_COMPLEX ? a : b, o = ka == EM_KIND_COMPLEX ? b : a;
    return o == EM_FLOAT64 ? EM_COMPLEX128 : c;
  }
  if (ka == EM_KIND_FLOAT && kb != EM_KIND_FLOAT) return a;
  if (kb == EM_KIND_FLOAT && ka != EM_KIND_FLOAT) return b;
  if (ka == EM_KIND_FLOAT) {
    /* two different floats: float16 and bfloat16 meet in float32; otherwise
    ** the wider one wins */
    if ((a == EM_FLOAT16 && b == EM_BFLOAT16) || (a == EM_BFLOAT16 && b == EM_FLOAT16))
      return EM_FLOAT32;
    return em_dtype_size(a) > em_dtype_size(b) ? a : b;
  }
  /* two different integers */
  if (a == EM_UINT8 || b == EM_UINT8) {
    em_dtype other = a == EM_UINT8 ? b : a;
    return other == EM_INT8 ? EM_INT16 : other;  /* int16/32/64 hold uint8 */
  }
  return em_dtype_size(a) > em_dtype_size(b) ? a : b;
}

int em_can_cast(em_dtype from, em_dtype to) {
  if (em_dtype_kindof(from) == EM_KIND_COMPLEX && em_dtype_kindof(to) != EM_KIND_COMPLEX)
    return 0;
  if (em_dtype_kindof(from) == EM_KIND_FLOAT && em_dtype_kindof(to) != EM_KIND_FLOAT &&
      em_dtype_kindof(to) != EM_KIND_COMPLEX)
    return 0;
  if (from != EM_BOOL && to == EM_BOOL) return 0;
  return 1;
}

const char *em_dtype_pt_name(em_dtype dt) {
  static const char *const names[EM_NUM_DTYPES] = {
      [EM_BOOL] = "Bool",     [EM_UINT8] = "Byte",      [EM_INT8] = "Char",
      [EM_INT16] = "Short",   [EM_INT32] = "Int",       [EM_INT64] = "Long",
      [EM_FLOAT16] = "Half",  [EM_BFLOAT16] = "BFloat16", [EM_FLOAT32] = "Float",
      [EM_FLOAT64] = "Double", [EM_COMPLEX64] = "ComplexFloat",
      [EM_COMPLEX128] = "ComplexDouble"};
  return (unsigned)dt < EM_NUM_DTYPES ? names[dt] : "Undefined";
}

/* -1 stands for "no operand in this group yet" (PyTorch's Undefined). */
static int promote_skip(int a, int b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return (int)em_promote_types((em_dtype)a, (em_dtype)b);
}

static int is_kind(int dt, em_dtype_kind k) {
  return dt >= 0 && em_dtype_kindof((em_dtype)dt) == k;
}

/* PyTorch's combine_categories(higher, lower). */
static int combine(int higher, int lower) {
  if (is_kind(higher, EM_KIND_COMPLEX)) return higher;
  if (is_kind(lower, EM_KIND_COMPLEX)) /* a floating higher keeps its width */
    return higher == EM_FLOAT64 ? EM_COMPLEX128
           : is_kind(higher, EM_KIND_FLOAT) ? EM_COMPLEX64 : lower;
  if (higher >= 0 && em_dtype_kindof((em_dtype)higher) == EM_KIND_FLOAT) return higher;
  if (higher == EM_BOOL ||
      (lower >= 0 && em_dtype_kindof((em_dtype)lower) == EM_KIND_FLOAT))
    return promote_skip(higher, lower);
  if (higher >= 0) return higher;
  return lower;
}

em_dtype em_result_type(int n, const em_operand *ops, em_dtype default_float) {
  int dim = -1, zero = -1, wrapped = -1;
  if (em_dtype_kindof(default_float) != EM_KIND_FLOAT) default_float = EM_FLOAT32;
  for (int i = 0; i < n; i++) {
    const em_tensor *t = ops[i].tensor;
    if (t) {
      if (t->ndim > 0) dim = promote_skip(dim, t->dtype);
      else zero = promote_skip(zero, t->dtype);
    } else {
      em_dtype d = ops[i].scalar.kind == EM_SCALAR_BOOL ? EM_BOOL
                   : ops[i].scalar.kind == EM_SCALAR_INT ? EM_INT64
                                                          : default_float;
      wrapped = promote_skip(wrapped, d);
    }
  }
  int r = combine(dim, combine(zero, wrapped));
  return r < 0 ? default_float : (em_dtype)r;
}
