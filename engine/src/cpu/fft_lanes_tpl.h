/*
** cpu/fft_lanes_tpl.h -- the FFT's lane loops (cpu/complex.c), written once
** and included once per computing type: R the real type (double for
** complex128/float64, float for complex64/float32), SFX the names' suffix,
** KIND_C/KIND_R the plan kinds (plan_get), FWD_C/BWD_C/FWD_R the pocketfft
** calls of that build (through the process's pf_ops). The data is already
** of type R: a lane is copied into the thread's buffer (or transformed in
** place when contiguous; rfft's straight from its input into its output)
** and copied back, with no conversion.
*/

/* nb lanes of n complex values at base (element stride inner) into buf
** (lane l at buf + l * lane_stride(n)) */
static inline __attribute__((always_inline)) void EMCAT(load_lanes_n_, SFX)(
    const R *p, int64_t n, int64_t inner, int64_t nb, R *buf) {
  const int64_t ls = lane_stride(n);
  for (int64_t k = 0; k < n; k++)
    for (int64_t l = 0; l < nb; l++) {
      buf[l * ls + 2 * k] = p[2 * (k * inner + l)];
      buf[l * ls + 2 * k + 1] = p[2 * (k * inner + l) + 1];
    }
}
static inline __attribute__((always_inline)) void EMCAT(store_lanes_n_, SFX)(
    R *p, int64_t n, int64_t inner, int64_t nb, const R *buf) {
  const int64_t ls = lane_stride(n);
  for (int64_t k = 0; k < n; k++)
    for (int64_t l = 0; l < nb; l++) {
      p[2 * (k * inner + l)] = buf[l * ls + 2 * k];
      p[2 * (k * inner + l) + 1] = buf[l * ls + 2 * k + 1];
    }
}
/* a full block's lane count as a constant (the inner loops unrolled) */
static void EMCAT(load_lanes_, SFX)(const R *p, int64_t n, int64_t inner, int64_t nb, R *buf) {
  if (nb == LANE_BLOCK) EMCAT(load_lanes_n_, SFX)(p, n, inner, LANE_BLOCK, buf);
  else EMCAT(load_lanes_n_, SFX)(p, n, inner, nb, buf);
}
static void EMCAT(store_lanes_, SFX)(R *p, int64_t n, int64_t inner, int64_t nb, const R *buf) {
  if (nb == LANE_BLOCK) EMCAT(store_lanes_n_, SFX)(p, n, inner, LANE_BLOCK, buf);
  else EMCAT(store_lanes_n_, SFX)(p, n, inner, nb, buf);
}

/* the complex transform along the middle dim of contiguous (outer, n,
** inner) complex values, in place */
static em_status EMCAT(cpu_fft_, SFX)(R *data, int64_t outer, int64_t n, int64_t inner,
                                      int forward, double fct) {
  plan_slot *slot = NULL;
  const pf_ops *ops = pf();
  void *plan = NULL;
  em_status st = plan_or_fail(KIND_C, n, &plan, &slot);
  if (st != EM_OK) return st;
  const int direct = inner == 1;
  const int64_t blocks = outer * ((inner + LANE_BLOCK - 1) / LANE_BLOCK);
  const int64_t width = inner < LANE_BLOCK ? inner : LANE_BLOCK;
  int failed = 0;
  int nt = em_get_num_threads();
  (void)nt;
  EM_OMP_IF(fft_parallel(nt, blocks, outer * n * inner), parallel num_threads(nt),
  {
    R *buf = direct ? NULL : scratch_get((size_t)(lane_stride(n) * width) * sizeof(R));
    if (!direct && !buf) FFT_FAIL(failed);
      EM_OMP_PRAGMA(omp for schedule(static))
    for (int64_t b = 0; b < blocks; b++) {
      if (!direct && !buf) continue;
      int64_t o, i0, nb;
      lane_block(b, inner, &o, &i0, &nb);
      R *base = data + 2 * ((o * n) * inner + i0);
      if (!direct) EMCAT(load_lanes_, SFX)(base, n, inner, nb, buf);
      for (int64_t l = 0; l < nb; l++) {
        R *v = direct ? base : buf + l * lane_stride(n);
        int r = forward ? FWD_C(ops, plan, v, (R)fct) : BWD_C(ops, plan, v, (R)fct);
        if (r != 0) FFT_FAIL(failed);
      }
      if (!direct) EMCAT(store_lanes_, SFX)(base, n, inner, nb, buf);
    }
    scratch_put(buf);
  });
  return plan_done(KIND_C, plan, slot, failed, n);
}

/* the forward real transform of the n values at v + 1, unpacked from
** pocketfft's (r0, r1, i1, ...) there to (r0, 0, r1, i1, ...) at v (and a
** zero imaginary Nyquist term for even n); nonzero when out of memory */
/* lane in (n values; in may be v + 1) transformed into v and unpacked */
static int EMCAT(rfft_lane_, SFX)(const pf_ops *ops, void *plan, const R *in, R *v, int64_t n,
                                  double fct) {
  if (FWD_R(ops, plan, in, v + 1, (R)fct) != 0) return 1;
  v[0] = v[1];
  v[1] = 0;
  if (n % 2 == 0) v[n + 1] = 0;
  return 0;
}

/* The real-input transform: in (contiguous (outer, n, inner) of R) to out
** (complex of R, contiguous (outer, n / 2 + 1, inner)), the non-negative
** frequencies of the forward transform, times fct. On pocketfft's real
** plan (half the work of a complex transform); its packed result (r0, r1,
** i1, r2, i2, ...) is unpacked as NumPy does. */
static em_status EMCAT(cpu_rfft_, SFX)(const R *in, R *out, int64_t outer, int64_t n,
                                       int64_t inner, double fct) {
  plan_slot *slot = NULL;
  const pf_ops *ops = pf();
  void *plan = NULL;
  em_status st = plan_or_fail(KIND_R, n, &plan, &slot);
  if (st != EM_OK) return st;
  const int direct = inner == 1; /* each lane contiguous: transformed in its output */
  const int64_t nh = n / 2 + 1, stride = n + 2;
  const int64_t blocks = outer * ((inner + LANE_BLOCK - 1) / LANE_BLOCK);
  const int64_t width = inner < LANE_BLOCK ? inner : LANE_BLOCK;
  int failed = 0;
  int nt = em_get_num_threads();
  (void)nt;
  EM_OMP_IF(fft_parallel(nt, blocks, outer * n * inner), parallel num_threads(nt),
  {
    R *buf = direct ? NULL : scratch_get((size_t)(stride * width) * sizeof(R));
    if (!direct && !buf) FFT_FAIL(failed);
      EM_OMP_PRAGMA(omp for schedule(static))
    for (int64_t b = 0; b < blocks; b++) {
      if (!direct && !buf) continue;
      int64_t o, i0, nb;
      lane_block(b, inner, &o, &i0, &nb);
      int64_t ioff = o * n * inner + i0, ooff = o * nh * inner + i0;
      if (direct) { /* in its output: 2 nh >= n + 1 values */
        if (EMCAT(rfft_lane_, SFX)(ops, plan, in + ioff, out + 2 * ooff, n, fct) != 0)
          FFT_FAIL(failed);
        continue;
      }
      /* lane l's values at buf + l * stride + 1 */
      for (int64_t k = 0; k < n; k++)
        for (int64_t l = 0; l < nb; l++) buf[l * stride + 1 + k] = in[ioff + k * inner + l];
      for (int64_t l = 0; l < nb; l++)
        if (EMCAT(rfft_lane_, SFX)(ops, plan, buf + l * stride + 1, buf + l * stride, n, fct) != 0)
          FFT_FAIL(failed);
      for (int64_t k = 0; k < nh; k++)
        for (int64_t l = 0; l < nb; l++) {
          const R *v = buf + l * stride + 2 * k;
          R *p = out + 2 * (ooff + k * inner + l);
          p[0] = v[0];
          p[1] = v[1];
        }
    }
    scratch_put(buf);
  });
  return plan_done(KIND_R, plan, slot, failed, n);
}
