/*
** autocast.c -- the autocast state (per thread and device type) and the
** casts of EM_AUTOCAST (autocast.h; docs/amp.md).
**
** The lists follow PyTorch 1.13 (aten/src/ATen/autocast_mode.cpp), checked
** for the CPU against python3-torch 1.13 itself (tests/fixtures/gen_amp.py):
** - cpu (bfloat16): lower precision: mm, bmm, matmul, addmm, baddbmm,
**   linear, conv1d/2d; fp32: prod, the losses (mse, l1, cross_entropy,
**   nll, binary_cross_entropy[_with_logits], smooth_l1, huber, kl_div),
**   trace, cdist; everything else runs in its inputs' dtype (sum, softmax,
**   exp, layer_norm stay bfloat16 on the CPU in 1.13);
** - cuda (float16 or bfloat16): lower precision also mv and addmv; fp32
**   also sum, cumsum/cumprod and softmax/log_softmax without a dtype,
**   layer_norm, and the pointwise exp, expm1, log, log2, log10, log1p,
**   reciprocal, rsqrt, sinh, cosh, tan, asin, acos, erfinv, pow, softplus
**   (without out=, not in place, as PyTorch's). The cuda lists are tested
**   on CPU tensors made to follow them (em_autocast_cpu_as_cuda); nothing
**   of them has run on a GPU.
** float64 inputs are never cast (PyTorch's is_eligible).
*/
#include "ops/autocast.h"

#include <string.h>

#include "ember.h"

_Thread_local int em_ac_any;
static _Thread_local int ac_on[3];                  /* by em_device_type */
static _Thread_local em_dtype ac_dt[3] = {EM_BFLOAT16, EM_FLOAT16, EM_BFLOAT16};

enum { KEEP = 0, LOWER = 1, FP32 = 2 };
/*                                   MM     MV     CONV   PROD  REDUCE NORM  LOSS  POINTWISE */
static const unsigned char cpu_policy[EM_AC_COUNT] = {LOWER, KEEP, LOWER, FP32, KEEP, KEEP, FP32, KEEP};
static const unsigned char cuda_policy[EM_AC_COUNT] = {LOWER, LOWER, LOWER, FP32, FP32, FP32, FP32, FP32};
static _Thread_local int cpu_as_cuda;

void em_autocast_cpu_as_cuda(int on) { cpu_as_cuda = on != 0; }

em_status em_autocast_set(em_device_type d, int enabled, em_dtype dt) {
  if ((unsigned)d > EM_META)
    return em_fail(EM_E_VALUE, "autocast: unknown device type %d", (int)d);
  if (d == EM_META)
    return em_fail(EM_E_VALUE, "autocast: the meta device has no autocast (use 'cpu' or 'cuda')");
  if (dt != EM_FLOAT16 && dt != EM_BFLOAT16)
    return em_fail(EM_E_VALUE, "autocast: dtype must be float16 or bfloat16, got %s", em_dtype_name(dt));
  if (d == EM_CPU && dt != EM_BFLOAT16)
    return em_fail(EM_E_VALUE, "autocast: CPU autocast only supports dtype bfloat16 (as PyTorch 1.13), got %s",
                   em_dtype_name(dt));
  ac_on[d] = enabled != 0;
  ac_dt[d] = dt;
  em_ac_any = ac_on[EM_CPU] || ac_on[EM_CUDA];
  return EM_OK;
}

int em_autocast_enabled(em_device_type d, em_dtype *dt) {
  if ((unsigned)d > EM_META) return 0;
  if (dt) *dt = ac_dt[d];
  return ac_on[d];
}

static int policy(em_ac_op op, em_device_type d) {
  if (!ac_on[d] || (unsigned)op >= EM_AC_COUNT) return KEEP;
  return d == EM_CPU ? cpu_policy[op] : d == EM_CUDA ? cuda_policy[op] : KEEP;
}

static int eligible(em_dtype dt) {
  return dt == EM_FLOAT32 || dt == EM_FLOAT16 || dt == EM_BFLOAT16;
}

int em_ac_begin(em_ac_scope *s, em_ac_op op, int n, const em_tensor **in) {
  memset(s, 0, sizeof *s);
  s->n = n < EM_AC_MAX_IN ? n : EM_AC_MAX_IN;
  const em_tensor *first = NULL;
  for (int i = 0; i < s->n && !first; i++) first = in[i];
  if (!first) return 0;
  em_device dev = first->storage->device;
  em_device_type pt = dev.type == EM_CPU && cpu_as_cuda ? EM_CUDA : dev.type;
  int pol = policy(op, pt);
  if (pol == KEEP) return 0;
  em_dtype want = pol == LOWER ? ac_dt[pt] : EM_FLOAT32;
  int any = 0;
  for (int i = 0; i < s->n; i++)
    if (in[i] && eligible(in[i]->dtype) && in[i]->dtype != want &&
        em_device_equal(in[i]->storage->device, dev))
      any = 1;
  if (!any) return 0;
  for (int i = 0; i < s->n; i++) {
    if (!in[i] || !eligible(in[i]->dtype) || in[i]->dtype == want ||
        !em_device_equal(in[i]->storage->device, dev))
      continue;
    em_status st = em_to(in[i], want, dev, 0, &s->cast[i]);
    if (st != EM_OK) {
      s->status = st;
      em_ac_end(s);
      return -1;
    }
    in[i] = s->cast[i];
  }
  return 1;
}

void em_ac_end(em_ac_scope *s) {
  for (int i = 0; i < s->n; i++)
    if (s->cast[i]) em_tensor_release(s->cast[i]), s->cast[i] = NULL;
}

int em_half_begin(em_ac_scope *s, int n, const em_tensor **in, em_dtype *half) {
  memset(s, 0, sizeof *s);
  s->n = n < EM_AC_MAX_IN ? n : EM_AC_MAX_IN;
  int found = 0;
  for (int i = 0; i < s->n; i++)
    if (in[i] && (in[i]->dtype == EM_FLOAT16 || in[i]->dtype == EM_BFLOAT16)) {
      if (!found) *half = in[i]->dtype;
      found = 1;
    }
  if (!found) return 0;
  for (int i = 0; i < s->n; i++) {
    if (!in[i] || (in[i]->dtype != EM_FLOAT16 && in[i]->dtype != EM_BFLOAT16)) continue;
    em_status st = em_to(in[i], EM_FLOAT32, in[i]->storage->device, 0, &s->cast[i]);
    if (st != EM_OK) {
      s->status = st;
      em_ac_end(s);
      return -1;
    }
    in[i] = s->cast[i];
  }
  s->saved_any = em_ac_any;
  em_ac_any = 0;
  return 1;
}

em_status em_half_end(em_ac_scope *s, em_status st, em_dtype half, em_tensor **out) {
  em_ac_any = s->saved_any;
  em_ac_end(s);
  if (st != EM_OK || !out || !*out) return st;
  em_tensor *r = NULL;
  st = em_to(*out, half, (*out)->storage->device, 0, &r);
  em_tensor_release(*out);
  *out = st == EM_OK ? r : NULL;
  return st;
}
