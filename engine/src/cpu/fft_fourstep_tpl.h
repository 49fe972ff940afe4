/*
** cpu/fft_fourstep_tpl.h -- one long contiguous transform as many short
** ones (the "four-step" FFT, Bailey 1990), included by cpu/complex.c once
** per computing type as cpu/fft_lanes_tpl.h is (R, SFX, KIND_C, FWD_C,
** BWD_C).
**
** A transform of m = m1 m2 complex points, input index n = m2 n1 + n2 and
** output index k = k1 + m1 k2:
**   Z[k1 + m1 k2] = sum_n2 W_m2^(n2 k2) W_m^(n2 k1) sum_n1 W_m1^(n1 k1) z[m2 n1 + n2]
** 1. the m2 columns (length m1, stride m2) are moved FS_BLOCK at a time
**    (512 bytes of each row: runs of whole cache lines) through the
**    thread's lane buffer, transformed, multiplied by the twiddles
**    W_m^(n2 k1) (a table in the order this pass reads it, exact in double
**    and rounded to R: fs_table in cpu/complex.c) and stored as rows of the
**    scratch S (row k1 holds n2 = 0..m2-1);
** 2. each row of S is transformed in place (pocketfft, times fct), and a
**    block of FS_BLOCK rows is written to the output transposed
**    (Z[k1 + m1 k2] = S[k1][k2]).
** Every short transform fits in L1/L2 (m1, m2 near sqrt(m)), where
** pocketfft's passes over one 2^19-point array each stream all of it: in a
** standalone loop (AVX2 float build) 2^20 real points took 1.9 ms as the
** 1536 short transforms alone against 4.1 ms as one. The passes are split
** across threads, so one long transform runs in parallel too (docs/fft.md
** has the measured times).
**
** rfft of n = 2m real values uses it on the values read as m complex ones
** (z[j] = x[2j] + i x[2j+1], no copy) and untangles the result,
** X[k] = E + W_n^k O, X[m-k] = conj(E - W_n^k O), with
** E = (Z[k] + conj Z[m-k]) / 2 and O = -i (Z[k] - conj Z[m-k]) / 2,
** in its row pass: Z[k] and Z[m-k] lie in rows k1 and m1 - k1 of S, which
** are transformed together and untangled while in cache (fft4_rowpairs_).
** Keeping it a pass of its own over the output, or reading S by columns
** after the row pass, measured the same or slower.
*/

/* dst[j][i] = src[i][j] for i < rows, j < cols: complex values of R, the
** pitches in complex values; whole cache lines on the long side. For float
** two complex values move at a time (one SSE register, 2x2 blocks). */
static void EMCAT(tr_, SFX)(const R *src, int64_t sp, R *dst, int64_t dp, int64_t rows,
                            int64_t cols) {
  int64_t i0 = 0;
#if defined(__SSE2__)
  if (sizeof(R) == sizeof(float)) {
    const float *fs = (const float *)src;
    float *fd = (float *)dst;
    const int64_t r2 = rows & ~(int64_t)1, c2 = cols & ~(int64_t)1;
#define TR_2X2(i, j)                                                    \
  do {                                                                  \
    __m128 a = _mm_loadu_ps(fs + 2 * ((i) * sp + (j)));                 \
    __m128 b = _mm_loadu_ps(fs + 2 * (((i) + 1) * sp + (j)));           \
    _mm_storeu_ps(fd + 2 * ((j) * dp + (i)), _mm_movelh_ps(a, b));      \
    _mm_storeu_ps(fd + 2 * (((j) + 1) * dp + (i)), _mm_movehl_ps(b, a)); \
  } while (0)
    if (rows <= cols) {
      for (int64_t j = 0; j < c2; j += 2)
        for (int64_t i = 0; i < r2; i += 2) TR_2X2(i, j);
    } else {
      for (int64_t i = 0; i < r2; i += 2)
        for (int64_t j = 0; j < c2; j += 2) TR_2X2(i, j);
    }
#undef TR_2X2
    /* an odd last column of the even rows; the odd last row below */
    if (c2 < cols)
      for (int64_t i = 0; i < r2; i++) {
        dst[2 * (c2 * dp + i)] = src[2 * (i * sp + c2)];
        dst[2 * (c2 * dp + i) + 1] = src[2 * (i * sp + c2) + 1];
      }
    i0 = r2;
  }
#endif
  if (rows <= cols) {
    for (int64_t j = 0; j < cols; j++)
      for (int64_t i = i0; i < rows; i++) {
        dst[2 * (j * dp + i)] = src[2 * (i * sp + j)];
        dst[2 * (j * dp + i) + 1] = src[2 * (i * sp + j) + 1];
      }
  } else {
    for (int64_t i = i0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) {
        dst[2 * (j * dp + i)] = src[2 * (i * sp + j)];
        dst[2 * (j * dp + i) + 1] = src[2 * (i * sp + j) + 1];
      }
  }
}

/* pass 1 on columns n2 .. n2 + nb - 1: out to rows of S (pitch ps complex);
** tw: the twiddles of this block (fs_table's col at n2 m1, lane l's m1
** values at l m1) */
static int EMCAT(fft4_columns_, SFX)(const pf_ops *ops, void *p1, const R *tw, const R *z, R *S,
                                     int64_t ps, int64_t m1, int64_t m2, int64_t n2, int64_t nb,
                                     int forward, R *buf) {
  const int64_t ls = lane_stride(m1);
  EMCAT(tr_, SFX)(z + 2 * n2, m2, buf, ls / 2, m1, nb);
  const R sg = forward ? (R)1 : (R)-1; /* the inverse's twiddles are the conjugates */
  for (int64_t l = 0; l < nb; l++) {
    R *v = buf + l * ls;
    if ((forward ? FWD_C(ops, p1, v, (R)1) : BWD_C(ops, p1, v, (R)1)) != 0) return 1;
    const R *w = tw + 2 * l * m1;
    for (int64_t k1 = 0; k1 < m1; k1++) {
      const R a = v[2 * k1], b = v[2 * k1 + 1];
      const R wr = w[2 * k1], wi = sg * w[2 * k1 + 1];
      v[2 * k1] = a * wr - b * wi;
      v[2 * k1 + 1] = a * wi + b * wr;
    }
  }
  EMCAT(tr_, SFX)(buf, ls / 2, S + 2 * n2, ps, nb, m1);
  return 0;
}

/* pass 2 on rows k1 .. k1 + nb - 1 of S: transformed in place, then stored
** transposed in out */
static int EMCAT(fft4_rows_, SFX)(const pf_ops *ops, void *p2, R *S, int64_t ps, R *out,
                                  int64_t m1, int64_t m2, int64_t k1, int64_t nb, int forward,
                                  double fct) {
  for (int64_t l = 0; l < nb; l++) {
    R *v = S + 2 * ((k1 + l) * ps);
    if ((forward ? FWD_C(ops, p2, v, (R)fct) : BWD_C(ops, p2, v, (R)fct)) != 0) return 1;
  }
  EMCAT(tr_, SFX)(S + 2 * (k1 * ps), ps, out + 2 * k1, m1, nb, m2);
  return 0;
}

/* rfft's untangling of n pairs: for t < n, lo[t] and hi[-t] (complex
** indices; Z[k] and Z[m-k]) become X[k] = E + W O and X[m-k] = conj(E - W O),
** E = (Z[k] + conj Z[m-k]) / 2, O = -i (Z[k] - conj Z[m-k]) / 2, W = w[t]
** (W_(2m)^k from fs_table's unt). The two ranges do not overlap. With SSE2
** two pairs (float) or one (double) at a time, the same operations. */
static void EMCAT(untangle_, SFX)(R *lo, R *hi, const R *w, int64_t n) {
  int64_t t = 0;
#if defined(__SSE2__)
  if (sizeof(R) == sizeof(float)) {
    float *fl = (float *)lo, *fh = (float *)hi;
    const float *fw = (const float *)w;
    const __m128 h = _mm_set1_ps(0.5f);
    const __m128 cj = _mm_set_ps(-0.f, 0.f, -0.f, 0.f); /* the imaginary parts negated */
    const __m128 ng = _mm_set_ps(0.f, -0.f, 0.f, -0.f); /* the real parts negated */
    for (; t + 1 < n; t += 2) {
      const __m128 a = _mm_loadu_ps(fl + 2 * t); /* Z[k], Z[k+1] */
      __m128 b = _mm_loadu_ps(fh - 2 * (t + 1)); /* Z[m-k-1], Z[m-k] */
      b = _mm_xor_ps(_mm_shuffle_ps(b, b, _MM_SHUFFLE(1, 0, 3, 2)), cj);
      const __m128 e = _mm_mul_ps(h, _mm_add_ps(a, b));
      const __m128 d = _mm_mul_ps(h, _mm_sub_ps(a, b));
      const __m128 o = _mm_xor_ps(_mm_shuffle_ps(d, d, _MM_SHUFFLE(2, 3, 0, 1)), cj); /* -i d */
      const __m128 wv = _mm_loadu_ps(fw + 2 * t);
      const __m128 wr = _mm_shuffle_ps(wv, wv, _MM_SHUFFLE(2, 2, 0, 0));
      const __m128 wi = _mm_shuffle_ps(wv, wv, _MM_SHUFFLE(3, 3, 1, 1));
      const __m128 os = _mm_shuffle_ps(o, o, _MM_SHUFFLE(2, 3, 0, 1));
      const __m128 tw = _mm_add_ps(_mm_mul_ps(wr, o), _mm_xor_ps(_mm_mul_ps(wi, os), ng));
      _mm_storeu_ps(fl + 2 * t, _mm_add_ps(e, tw));
      __m128 nb = _mm_xor_ps(_mm_sub_ps(e, tw), cj);
      _mm_storeu_ps(fh - 2 * (t + 1), _mm_shuffle_ps(nb, nb, _MM_SHUFFLE(1, 0, 3, 2)));
    }
  } else {
    double *dl = (double *)lo, *dh = (double *)hi;
    const double *dw = (const double *)w;
    const __m128d h = _mm_set1_pd(0.5);
    const __m128d cj = _mm_set_pd(-0.0, 0.0), ng = _mm_set_pd(0.0, -0.0);
    for (; t < n; t++) {
      const __m128d a = _mm_loadu_pd(dl + 2 * t);
      const __m128d b = _mm_xor_pd(_mm_loadu_pd(dh - 2 * t), cj);
      const __m128d e = _mm_mul_pd(h, _mm_add_pd(a, b));
      const __m128d d = _mm_mul_pd(h, _mm_sub_pd(a, b));
      const __m128d o = _mm_xor_pd(_mm_shuffle_pd(d, d, 1), cj); /* -i d */
      const __m128d wv = _mm_loadu_pd(dw + 2 * t);
      const __m128d wr = _mm_unpacklo_pd(wv, wv), wi = _mm_unpackhi_pd(wv, wv);
      const __m128d tw =
          _mm_add_pd(_mm_mul_pd(wr, o), _mm_xor_pd(_mm_mul_pd(wi, _mm_shuffle_pd(o, o, 1)), ng));
      _mm_storeu_pd(dl + 2 * t, _mm_add_pd(e, tw));
      _mm_storeu_pd(dh - 2 * t, _mm_xor_pd(_mm_sub_pd(e, tw), cj));
    }
  }
#endif
  for (; t < n; t++) {
    R *a = lo + 2 * t, *b = hi - 2 * t;
    const R ar = a[0], ai = a[1], br = b[0], bi = -b[1]; /* b = conj Z[m-k] */
    const R er = (R)0.5 * (ar + br), ei = (R)0.5 * (ai + bi);
    const R orr = (R)0.5 * (ai - bi), oi = (R)-0.5 * (ar - br); /* -i (a - b) / 2 */
    const R wr = w[2 * t], wi = w[2 * t + 1];
    const R tr = wr * orr - wi * oi, ti = wr * oi + wi * orr;
    a[0] = er + tr;
    a[1] = ei + ti;
    b[0] = er - tr;
    b[1] = -(ei - ti);
  }
}

/* rfft's pass 2, rows in pairs: the low rows r .. r + h - 1 (1 <= r, r + h
** - 1 < m1 / 2) and their mirrors m1 - r - h + 1 .. m1 - r, or (h == 0)
** row 0 and, for even m1, row m1 / 2: each row transformed in place, then
** untangled in place, row k1 against row m1 - k1 read backwards (Z[k1 + m1
** k2] pairs with Z[(m1 - k1) + m1 (m2 - 1 - k2)]; row 0's own k2 with m2 -
** k2 and row m1 / 2's k2 with m2 - 1 - k2), then stored transposed in out.
** Z[0] (S[0][0]) stays for the caller's X[0] and X[m]. */
static int EMCAT(fft4_rowpairs_, SFX)(const pf_ops *ops, void *p2, R *S, int64_t ps, R *out,
                                      const R *unt, int64_t m1, int64_t m2, int64_t r, int64_t h,
                                      double fct) {
  if (h == 0) { /* the rows that pair with themselves */
    const int64_t rows[2] = {0, m1 / 2}, nr = m1 % 2 == 0 ? 2 : 1;
    for (int64_t j = 0; j < nr; j++) {
      const int64_t k1 = rows[j];
      R *v = S + 2 * (k1 * ps);
      if (FWD_C(ops, p2, v, (R)fct) != 0) return 1;
      /* row 0: k2 in 1 .. with m2 - k2; row m1/2: k2 in 0 .. with m2 - 1 - k2 */
      const int64_t lo0 = k1 == 0 ? 1 : 0, n = (m2 - lo0) / 2;
      EMCAT(untangle_, SFX)(v + 2 * lo0, v + 2 * (m2 - 1), unt + 2 * (k1 * m2 + lo0), n);
      if ((m2 - lo0) % 2 == 1) { /* k = m / 2: X = conj Z */
        R *mid = v + 2 * (lo0 + n);
        mid[1] = -mid[1];
      }
      EMCAT(tr_, SFX)(v, ps, out + 2 * k1, m1, 1, m2);
    }
    return 0;
  }
  const int64_t q = m1 - r - h + 1; /* the first mirror row */
  for (int64_t l = 0; l < h; l++) {
    if (FWD_C(ops, p2, S + 2 * ((r + l) * ps), (R)fct) != 0) return 1;
    if (FWD_C(ops, p2, S + 2 * ((q + l) * ps), (R)fct) != 0) return 1;
  }
  for (int64_t l = 0; l < h; l++) {
    const int64_t k1 = r + l;
    EMCAT(untangle_, SFX)(S + 2 * (k1 * ps), S + 2 * ((m1 - k1) * ps + m2 - 1),
                          unt + 2 * (k1 * m2), m2);
  }
  EMCAT(tr_, SFX)(S + 2 * (r * ps), ps, out + 2 * r, m1, h, m2);
  EMCAT(tr_, SFX)(S + 2 * (q * ps), ps, out + 2 * q, m1, h, m2);
  return 0;
}

/* The four-step transform of nl lanes: lane i of m = m1 m2 complex values
** at z + i zs (R values apart) into out + i os (natural order; out may be
** z), times fct; real: z holds 2m real values per lane and out gets the
** m + 1 values of rfft. */
static em_status EMCAT(cpu_fft4_, SFX)(const R *z, int64_t zs, R *out, int64_t os, int64_t nl,
                                       int64_t m1, int64_t m2, int forward, double fct, int real) {
  const int64_t m = m1 * m2, ps = m2 + 4; /* rows of S a cache line apart beyond m2 */
  const pf_ops *ops = pf();
  void *p1 = NULL, *p2 = NULL, *tp = NULL;
  plan_slot *s1 = NULL, *s2 = NULL, *st = NULL;
  em_status s = plan_or_fail(KIND_C, m1, &p1, &s1);
  if (s == EM_OK) s = plan_or_fail(KIND_C, m2, &p2, &s2);
  if (s == EM_OK) s = plan_or_fail(KIND_T4, m, &tp, &st);
  const fs_table *tw = tp;
  R *S = s == EM_OK ? big_scratch_get((size_t)(2 * m1 * ps) * sizeof(R)) : NULL;
  int failed = s == EM_OK && !S;
  const int64_t FB = FS_BLOCK;
  const int64_t cb = (m2 + FB - 1) / FB, rb = (m1 + FB - 1) / FB;
  /* rfft's row groups: row 0 (and m1 / 2), then the low rows 1 .. P - 1
  ** (P = ceil(m1 / 2)) FB / 2 at a time with their mirrors */
  const int64_t P = (m1 + 1) / 2, H = FB / 2, rg = 1 + (P - 1 + H - 1) / H;
  int nt = em_get_num_threads();
  (void)nt;
  for (int64_t i = 0; i < nl && s == EM_OK && !failed; i++) {
    const R *zi = z + i * zs;
    R *oi = out + i * os;
    EM_OMP_IF(fft_parallel(nt, cb, m), parallel num_threads(nt),
    {
      R *buf = scratch_get((size_t)(lane_stride(m1) * FB) * sizeof(R));
      if (!buf) FFT_FAIL(failed);
      EM_OMP_PRAGMA(omp for schedule(static))
      for (int64_t b = 0; b < cb; b++) {
        const int64_t n2 = b * FB, nb = m2 - n2 < FB ? m2 - n2 : FB;
        if (buf && EMCAT(fft4_columns_, SFX)(ops, p1, (const R *)tw->col + 2 * n2 * m1, zi, S, ps,
                                             m1, m2, n2, nb, forward, buf))
          FFT_FAIL(failed);
      }
      scratch_put(buf);
      /* the columns are all in S before any row is written to out (out
      ** may be z) */
      if (real) {
      EM_OMP_PRAGMA(omp for schedule(static))
        for (int64_t g = 0; g < rg; g++) {
          const int64_t r = g == 0 ? 0 : 1 + (g - 1) * H, h = g == 0 ? 0 : (P - r < H ? P - r : H);
          if (!failed &&
              EMCAT(fft4_rowpairs_, SFX)(ops, p2, S, ps, oi, tw->unt, m1, m2, r, h, fct))
            FFT_FAIL(failed);
        }
      } else {
      EM_OMP_PRAGMA(omp for schedule(static))
        for (int64_t b = 0; b < rb; b++) {
          const int64_t k1 = b * FB, nb = m1 - k1 < FB ? m1 - k1 : FB;
          if (!failed && EMCAT(fft4_rows_, SFX)(ops, p2, S, ps, oi, m1, m2, k1, nb, forward, fct))
            FFT_FAIL(failed);
        }
      }
    });
    if (real && !failed) { /* X[0] and X[m] from Z[0], real */
      const R zr = S[0], zi0 = S[1];
      oi[0] = zr + zi0;
      oi[1] = 0;
      oi[2 * m] = zr - zi0;
      oi[2 * m + 1] = 0;
    }
  }
  big_scratch_put(S);
  if (tp) plan_release(KIND_T4, tp, st);
  if (p2) plan_release(KIND_C, p2, s2);
  if (p1) plan_release(KIND_C, p1, s1);
  if (s != EM_OK) return s;
  if (failed)
    return em_fail(EM_E_NOMEM, "fft: out of memory in a transform of size %lld",
                   (long long)(real ? 2 * m : m));
  return EM_OK;
}
