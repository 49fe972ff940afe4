/*
** cpu/attention_tpl.h -- the loops of cpu/attention.c for one dtype: the
** file includes this once per dtype with AT_T (the C type), AT_S (the
** suffix), AT_GEMM (cblas_sgemm/cblas_dgemm) and AT_VEXP (the vector exp
** getter) defined. Nothing here is used from elsewhere.
*/
#define AT_CAT_(a, b) a##_##b
#define AT_CAT(a, b) AT_CAT_(a, b)
#define AT_FN(name) AT_CAT(name, AT_S)

/* C[M x N] = alpha op(A) op(B) + beta C, row-major; K == 0 scales C. */
static void AT_FN(tgemm)(int ta, int tb, int64_t M, int64_t N, int64_t K, AT_T alpha,
                         const AT_T *A, int64_t lda, const AT_T *B, int64_t ldb, AT_T beta,
                         AT_T *Cm, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) Cm[i * ldc + j] = beta == 0 ? 0 : beta * Cm[i * ldc + j];
    return;
  }
  AT_GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
          (blasint)M, (blasint)N, (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb, beta, Cm,
          (blasint)ldc);
}

/* x[0..n) = exp(x) in place */
static void AT_FN(vexp)(AT_CAT(em_vec, AT_CAT(AT_S, fn)) vf, AT_T *x, int64_t n) {
  if (vf) {
    vf(x, x, n);
    return;
  }
  for (int64_t i = 0; i < n; i++) x[i] = (AT_T)exp((double)x[i]);
}

/* The row of scores of query i (0-based) over keys j0 .. j0 + n - 1, as
** computed by the GEMM: the mask added and the causal cut applied. */
static void AT_FN(mask_row)(AT_T *row, const AT_T *mask, int64_t moff, int64_t i, int64_t j0,
                            int64_t n, const em_sdpa_params *p) {
  if (mask) {
    const AT_T *m = mask + moff + i * p->msi + j0 * p->msj;
    if (p->msj == 1)
      for (int64_t c = 0; c < n; c++) row[c] += m[c];
    else
      for (int64_t c = 0; c < n; c++) row[c] += m[c * p->msj];
  }
  if (p->causal)
    for (int64_t c = i - j0 + 1; c < n; c++)
      if (c >= 0) row[c] = (AT_T)-INFINITY;
}

/* Dropout over the row of query i of problem b, keys j0 ..: kept elements
** times inv, the rest 0 (kern_nn.h says which are kept: element idx draws
** word idx % 4 of block offset + idx / 4, kept when its top 24 bits over
** 2^24 are >= p). The blocks come EM_PHILOX_BATCH at a time, and the test
** is on the integer: k / 2^24 >= p exactly when k >= ceil(p 2^24). */
static void AT_FN(drop_row)(AT_T *row, int64_t b, int64_t i, int64_t j0, int64_t n,
                            const em_sdpa_params *p, AT_T inv) {
  uint64_t idx0 = ((uint64_t)b * (uint64_t)p->L + (uint64_t)i) * (uint64_t)p->S + (uint64_t)j0;
  const double thr = p->dropout_p;
  const uint32_t kthr = thr >= 1 ? 1u << 24 : thr > 0 ? (uint32_t)ceil(thr * 16777216.0) : 0;
  uint32_t w[EM_PHILOX_BATCH][4];
  int64_t c = 0;
  while (c < n) {
    const uint64_t blk0 = (idx0 + (uint64_t)c) >> 2;  /* relative to the offset */
    const uint64_t last = (idx0 + (uint64_t)n - 1) >> 2;
    const int nb = last - blk0 + 1 < EM_PHILOX_BATCH ? (int)(last - blk0 + 1) : EM_PHILOX_BATCH;
    em_philox_blocks(p->draw.offset + blk0, nb, p->draw.key, w);
    int64_t cend = (int64_t)((blk0 + (uint64_t)nb) * 4 - idx0);
    if (cend > n) cend = n;
    const uint32_t *wf = &w[0][0];  /* the word of element idx0 + c: wf[idx0 + c - 4 blk0] */
    const uint64_t base = blk0 * 4 - idx0;
    for (; c < cend; c++) row[c] = (wf[(uint64_t)c - base] >> 8) >= kthr ? row[c] * inv : 0;
  }
}

/* The forward for problems and query blocks t in [0, B * nqb): the online
** softmax over key blocks (FlashAttention-2's algorithm 1). */
static int AT_FN(fwd)(const AT_T *q, const AT_T *k, const AT_T *v, const AT_T *mask, AT_T *out,
                      AT_T *lse, const em_sdpa_params *p, int64_t BR, int64_t BC, int nt) {
  const int64_t L = p->L, S = p->S, E = p->E, Ev = p->Ev;
  const int64_t nqb = (L + BR - 1) / BR, ntask = p->B * nqb;
  const AT_T scale = (AT_T)p->scale;
  const int drop = p->dropout_p > 0;
  const AT_T inv = p->dropout_p < 1 ? (AT_T)(1.0 / (1.0 - p->dropout_p)) : 0;
  AT_CAT(em_vec, AT_CAT(AT_S, fn)) vf = AT_VEXP(EM_VM_EXP);
  int fail = 0;
  EM_OMP_IF(nt > 1 && ntask > 1, parallel num_threads(nt),
  {
    AT_T *sx = malloc(sizeof(AT_T) * (size_t)(BR * BC + BR * Ev + 2 * BR + 1));
    if (!sx) {
      EM_OMP_PRAGMA(omp atomic write)
      fail = 1;
    }
    AT_T *acc = sx ? sx + BR * BC : NULL, *m = acc ? acc + BR * Ev : NULL, *l = m ? m + BR : NULL;
      EM_OMP_PRAGMA(omp for schedule(dynamic, 1))
    for (int64_t t = 0; t < ntask; t++) {
      if (!sx) continue;
      int64_t b = t / nqb, i0 = (t % nqb) * BR, br = L - i0 < BR ? L - i0 : BR;
      int64_t moff = mask ? mask_off(p, b) : 0;
      const AT_T *Q = q + (b * L + i0) * E;
      for (int64_t r = 0; r < br; r++) {
        m[r] = (AT_T)-INFINITY;
        l[r] = 0;
      }
      memset(acc, 0, sizeof(AT_T) * (size_t)(br * Ev));
      int64_t jend = p->causal ? (i0 + br < S ? i0 + br : S) : S;
      for (int64_t j0 = 0; j0 < jend; j0 += BC) {
        int64_t bc = jend - j0 < BC ? jend - j0 : BC;
        AT_FN(tgemm)(0, 1, br, bc, E, scale, Q, E, k + (b * S + j0) * E, E, 0, sx, BC);
        for (int64_t r = 0; r < br; r++) {
          AT_T *row = sx + r * BC;
          AT_FN(mask_row)(row, mask, moff, i0 + r, j0, bc, p);
          AT_T mx = (AT_T)-INFINITY;
          for (int64_t c = 0; c < bc; c++) mx = row[c] > mx ? row[c] : mx;
          AT_T mn = mx > m[r] ? mx : m[r];
          if (mn == (AT_T)-INFINITY) {  /* every key so far masked */
            memset(row, 0, sizeof(AT_T) * (size_t)bc);
            continue;
          }
          AT_T alpha = (AT_T)exp((double)(m[r] - mn)), sum = 0;
          for (int64_t c = 0; c < bc; c++) row[c] -= mn;
          AT_FN(vexp)(vf, row, bc);
          for (int64_t c = 0; c < bc; c++) sum += row[c];
          l[r] = l[r] * alpha + sum;
          if (alpha != 1) {
            AT_T *o = acc + r * Ev;
            for (int64_t e = 0; e < Ev; e++) o[e] *= alpha;
          }
          m[r] = mn;
          if (drop) AT_FN(drop_row)(row, b, i0 + r, j0, bc, p, inv);
        }
        AT_FN(tgemm)(0, 0, br, Ev, bc, 1, sx, BC, v + (b * S + j0) * Ev, Ev, 1, acc, Ev);
      }
      for (int64_t r = 0; r < br; r++) {
        AT_T *o = out + (b * L + i0 + r) * Ev, *a = acc + r * Ev;
        if (S == 0) {  /* no keys: zeros, as the explicit product gives */
          memset(o, 0, sizeof(AT_T) * (size_t)Ev);
          lse[b * L + i0 + r] = (AT_T)-INFINITY;
          continue;
        }
        AT_T il = l[r] > 0 ? 1 / l[r] : (AT_T)NAN;  /* a row with every key masked: NaN */
        for (int64_t e = 0; e < Ev; e++) o[e] = a[e] * il;
        lse[b * L + i0 + r] = l[r] > 0 ? m[r] + (AT_T)log((double)l[r]) : (AT_T)-INFINITY;
      }
    }
    free(sx);
  });
  return fail;
}

/* The backward rebuilds a row's probabilities as exp(s - lse) from the
** saved log-sum-exp. Where |lse| is large, its rounding is large against
** the part log(l) it carries (a row whose keys are all masked with -1e9 in
** float32: lse rounds to -1e9 itself and every probability came out 1, not
** 1/S). Such a row (|lse| > 64, rare: large finite masks, huge scores) has
** its maximum m and log(l) recomputed here in double, one key at a time;
** the backward then takes exp((s - m) - log l). Elsewhere *m = lse and
** *ll = 0: the same operations as before. */
static void AT_FN(row_lse)(const AT_T *Qb, const AT_T *Kb, const AT_T *mask, int64_t moff,
                           int64_t i, AT_T lse, const em_sdpa_params *p, AT_T scale, AT_T *m,
                           AT_T *ll) {
  *m = lse;
  *ll = 0;
  if (!(fabs((double)lse) > 64) || !isfinite((double)lse)) return;
  const int64_t S = p->S, E = p->E;
  const AT_T *qi = Qb + i * E;
  AT_T mx = (AT_T)-INFINITY;
  double l = 0;
  for (int64_t j = 0; j < S; j++) {
    AT_T acc = 0;
    for (int64_t e = 0; e < E; e++) acc += qi[e] * Kb[j * E + e];
    AT_T sj = scale * acc;
    AT_FN(mask_row)(&sj, mask, moff, i, j, 1, p);
    if (sj == (AT_T)-INFINITY) continue;
    if (sj > mx) {
      l = l * exp((double)mx - (double)sj) + 1;
      mx = sj;
    } else {
      l += exp((double)sj - (double)mx);
    }
  }
  if (l > 0 && mx != (AT_T)-INFINITY && !isnan((double)mx)) {
    *m = mx;
    *ll = (AT_T)log(l);
  }
}

/* The backward for problems b in [0, B) (FlashAttention-2's algorithm 2,
** one problem per task: no two tasks write the same gradient rows). */
static int AT_FN(bwd)(const AT_T *go, const AT_T *q, const AT_T *k, const AT_T *v,
                      const AT_T *mask, const AT_T *out, const AT_T *lse, AT_T *gq, AT_T *gk,
                      AT_T *gv, const em_sdpa_params *p, int64_t BR, int64_t BC, int nt) {
  const int64_t L = p->L, S = p->S, E = p->E, Ev = p->Ev;
  const AT_T scale = (AT_T)p->scale;
  const int drop = p->dropout_p > 0;
  const AT_T inv = p->dropout_p < 1 ? (AT_T)(1.0 / (1.0 - p->dropout_p)) : 0;
  AT_CAT(em_vec, AT_CAT(AT_S, fn)) vf = AT_VEXP(EM_VM_EXP);
  int fail = 0;
  EM_OMP_IF(nt > 1 && p->B > 1, parallel num_threads(nt),
  {
    AT_T *P = malloc(sizeof(AT_T) * (size_t)(3 * BR * BC + 3 * L + 1));
    if (!P) {
      EM_OMP_PRAGMA(omp atomic write)
      fail = 1;
    }
    AT_T *dP = P ? P + BR * BC : NULL, *Pd = dP ? dP + BR * BC : NULL, *D = Pd ? Pd + BR * BC : NULL;
    AT_T *M = D ? D + L : NULL, *LL = M ? M + L : NULL;
      EM_OMP_PRAGMA(omp for schedule(dynamic, 1))
    for (int64_t b = 0; b < p->B; b++) {
      if (!P) continue;
      int64_t moff = mask ? mask_off(p, b) : 0;
      const AT_T *Qb = q + b * L * E, *Kb = k + b * S * E, *Vb = v + b * S * Ev;
      const AT_T *Gb = go + b * L * Ev, *Ob = out + b * L * Ev, *lb = lse + b * L;
      AT_T *gQ = gq + b * L * E, *gK = gk + b * S * E, *gV = gv + b * S * Ev;
      for (int64_t i = 0; i < L; i++) {
        AT_T s = 0;
        for (int64_t e = 0; e < Ev; e++) s += Gb[i * Ev + e] * Ob[i * Ev + e];
        D[i] = s;
        AT_FN(row_lse)(Qb, Kb, mask, moff, i, lb[i], p, scale, &M[i], &LL[i]);
      }
      for (int64_t j0 = 0; j0 < S; j0 += BC) {
        int64_t bc = S - j0 < BC ? S - j0 : BC;
        for (int64_t i0 = p->causal ? (j0 / BR) * BR : 0; i0 < L; i0 += BR) {
          int64_t br = L - i0 < BR ? L - i0 : BR;
          const AT_T *Qi = Qb + i0 * E, *Kj = Kb + j0 * E, *Vj = Vb + j0 * Ev, *Gi = Gb + i0 * Ev;
          AT_FN(tgemm)(0, 1, br, bc, E, scale, Qi, E, Kj, E, 0, P, BC);
          for (int64_t r = 0; r < br; r++) {
            AT_T *row = P + r * BC, mi = M[i0 + r], li = LL[i0 + r];
            AT_FN(mask_row)(row, mask, moff, i0 + r, j0, bc, p);
            if (li == 0)
              for (int64_t c = 0; c < bc; c++) row[c] -= mi;
            else
              for (int64_t c = 0; c < bc; c++) row[c] = (row[c] - mi) - li;
            AT_FN(vexp)(vf, row, bc);
            if (drop) {
              memcpy(Pd + r * BC, row, sizeof(AT_T) * (size_t)bc);
              AT_FN(drop_row)(Pd + r * BC, b, i0 + r, j0, bc, p, inv);
            }
          }
          const AT_T *Pv = drop ? Pd : P;
          AT_FN(tgemm)(1, 0, bc, Ev, br, 1, Pv, BC, Gi, Ev, 1, gV + j0 * Ev, Ev);
          AT_FN(tgemm)(0, 1, br, bc, Ev, 1, Gi, Ev, Vj, Ev, 0, dP, BC);
          for (int64_t r = 0; r < br; r++) {
            AT_T *dr = dP + r * BC, *pr = P + r * BC, di = D[i0 + r];
            if (drop) AT_FN(drop_row)(dr, b, i0 + r, j0, bc, p, inv);
            for (int64_t c = 0; c < bc; c++) dr[c] = pr[c] * (dr[c] - di);
          }
          AT_FN(tgemm)(0, 0, br, E, bc, scale, dP, BC, Kj, E, 1, gQ + i0 * E, E);
          AT_FN(tgemm)(1, 0, bc, E, br, scale, dP, BC, Qi, E, 1, gK + j0 * E, E);
        }
      }
    }
    free(P);
  });
  return fail;
}

#undef AT_FN
#undef AT_CAT
#undef AT_CAT_
