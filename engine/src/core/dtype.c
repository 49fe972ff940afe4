/*
** dtype.c -- the dtype table and the scalar conversions between dtypes.
** float16/bfloat16 round to nearest even; see core/core.h for the float->int
** and int->int rules (documented in docs/dtypes.md).
*/
#include "core/core.h"

#include <float.h>
#include <string.h>

typedef struct {
  const char *name;
  size_t size;
  em_dtype_kind kind;
  int is_signed;
} em_dtype_info;

/* Designated initialisers keep each row next to its enum. */
static const em_dtype_info dtype_info[EM_NUM_DTYPES] = {
    [EM_BOOL] = {"bool", 1, EM_KIND_BOOL, 0},
    [EM_UINT8] = {"uint8", 1, EM_KIND_INT, 0},
    [EM_INT8] = {"int8", 1, EM_KIND_INT, 1},
    [EM_INT16] = {"int16", 2, EM_KIND_INT, 1},
    [EM_INT32] = {"int32", 4, EM_KIND_INT, 1},
    [EM_INT64] = {"int64", 8, EM_KIND_INT, 1},
    [EM_FLOAT16] = {"float16", 2, EM_KIND_FLOAT, 1},
    [EM_BFLOAT16] = {"bfloat16", 2, EM_KIND_FLOAT, 1},
    [EM_FLOAT32] = {"float32", 4, EM_KIND_FLOAT, 1},
    [EM_FLOAT64] = {"float64", 8, EM_KIND_FLOAT, 1},
    [EM_COMPLEX64] = {"complex64", 8, EM_KIND_COMPLEX, 1},
    [EM_COMPLEX128] = {"complex128", 16, EM_KIND_COMPLEX, 1},
};

static const struct {
  const char *alias;
  em_dtype dt;
} dtype_aliases[] = {
    {"long", EM_INT64},   {"int", EM_INT32},     {"short", EM_INT16},
    {"byte", EM_UINT8},   {"char", EM_INT8},     {"half", EM_FLOAT16},
    {"float", EM_FLOAT32}, {"double", EM_FLOAT64}, {"cfloat", EM_COMPLEX64},
    {"cdouble", EM_COMPLEX128},
};

static int valid(em_dtype dt) { return (unsigned)dt < EM_NUM_DTYPES; }

const char *em_dtype_name(em_dtype dt) {
  return valid(dt) ? dtype_info[dt].name : "invalid";
}
double em_dtype_float_max(em_dtype dt) {
  switch (dt) {
    case EM_FLOAT16: return 65504.0;
    case EM_BFLOAT16: return 3.3895313892515355e38;
    case EM_FLOAT32:
    case EM_COMPLEX64: return FLT_MAX;
    default: return DBL_MAX;
  }
}
size_t em_dtype_size(em_dtype dt) { return valid(dt) ? dtype_info[dt].size : 0; }
em_dtype_kind em_dtype_kindof(em_dtype dt) {
  return valid(dt) ? dtype_info[dt].kind : EM_KIND_BOOL;
}
int em_dtype_is_signed(em_dtype dt) {
  return valid(dt) ? dtype_info[dt].is_signed : 0;
}

int em_dtype_from_name(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < EM_NUM_DTYPES; i++)
    if (strcmp(name, dtype_info[i].name) == 0) return i;
  for (size_t i = 0; i < sizeof dtype_aliases / sizeof dtype_aliases[0]; i++)
    if (strcmp(name, dtype_aliases[i].alias) == 0) return dtype_aliases[i].dt;
  return -1;
}

/* -- float16 / bfloat16 ------------------------------------------------- */

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float em_half_to_float(em_half h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return u2f(sign | 0x7f800000u | (man << 13));  /* inf/nan */
  if (exp == 0) {
    if (man == 0) return u2f(sign);
    /* subnormal: value = man * 2^-24 */
    float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
  }
  return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

em_half em_float_to_half(float f) {
  uint32_t u = f2u(f);
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t absu = u & 0x7fffffffu;
  if (absu >= 0x7f800000u) /* inf or nan (keep nan quiet and non-zero) */
    return (em_half)(sign | 0x7c00 | (absu > 0x7f800000u ? 0x200 : 0));
  if (absu >= 0x477ff000u) return (em_half)(sign | 0x7c00); /* rounds to inf */
  if (absu < 0x38800000u) {
    /* result is subnormal or zero: round(|f| * 2^24) to nearest even */
    float a = u2f(absu) * 0x1p24f;  /* exact: scaling by a power of two */
    uint32_t m = (uint32_t)a;
    float rem = a - (float)m;
    if (rem > 0.5f || (rem == 0.5f && (m & 1))) m++;
    return (em_half)(sign | m);  /* m may reach 0x400: the smallest normal */
  }
  /* normal: rebias exponent, round mantissa 23 -> 10 bits, nearest even */
  uint32_t base = absu - 0x38000000u;  /* exponent - 112 */
  uint32_t half = base >> 13, rest = base & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) half++;
  return (em_half)(sign | half);
}

float em_bf16_to_float(em_bfloat16 h) { return u2f((uint32_t)h << 16); }

em_bfloat16 em_float_to_bf16(float f) {
  uint32_t u = f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (em_bfloat16)((u >> 16) | 0x40);
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7fffu + lsb;
  return (em_bfloat16)(u >> 16);
}

/* -- Scalars and single elements, with the cast rules -------------------- */

void em_scalar_to_bytes(em_scalar v, em_dtype dt, void *out) {
#define STORE_SCALAR(S, E, CT, K)                        \
  case E:                                                \
    if (v.kind == EM_SCALAR_FLOAT) EM_STORE_##S(out, v.f); \
    else EM_STORE_##S(out, v.i);                         \
    break;
  switch (dt) {
    EM_FOR_EACH_DTYPE(STORE_SCALAR)
    case EM_COMPLEX64: case EM_COMPLEX128: {  /* the value, imaginary part 0 */
      double re = v.kind == EM_SCALAR_FLOAT ? v.f : (double)v.i;
      if (dt == EM_COMPLEX64) {
        float c[2] = {(float)re, 0.0f};
        memcpy(out, c, sizeof c);
      } else {
        double c[2] = {re, 0.0};
        memcpy(out, c, sizeof c);
      }
      break;
    }
    default: break;
  }
#undef STORE_SCALAR
}

double em_bytes_to_f64(em_dtype dt, const void *p) {
  double r = 0;
#define LOAD_F64(S, E, CT, K) case E: EM_STORE_f64(&r, EM_LOAD_##S(p)); break;
  switch (dt) {
    EM_FOR_EACH_DTYPE(LOAD_F64)
    case EM_COMPLEX64: EM_STORE_f64(&r, EM_LOAD_f32(p)); break;  /* the real part */
    case EM_COMPLEX128: r = EM_LOAD_f64(p); break;
    default: break;
  }
#undef LOAD_F64
  return r;
}

int64_t em_bytes_to_i64(em_dtype dt, const void *p) {
  int64_t r = 0;
#define LOAD_I64(S, E, CT, K) case E: EM_STORE_i64(&r, EM_LOAD_##S(p)); break;
  switch (dt) {
    EM_FOR_EACH_DTYPE(LOAD_I64)
    case EM_COMPLEX64: EM_STORE_i64(&r, EM_LOAD_f32(p)); break;  /* the real part */
    case EM_COMPLEX128: EM_STORE_i64(&r, EM_LOAD_f64(p)); break;
    default: break;
  }
#undef LOAD_I64
  return r;
}
