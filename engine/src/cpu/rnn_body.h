/*
** rnn_body.h -- the time loops of cpu/rnn.c for one dtype: included once
** per dtype with RT (the C type), SUF (the name suffix), EXPF and TANHF
** defined. Layout of the workspace: rnn_ws (cpu/rnn.c).
*/
#define RNN_CAT_(a, b) a##_##b
#define RNN_CAT(a, b) RNN_CAT_(a, b)
#define RNN_FN(name) RNN_CAT(name, SUF)

static RT RNN_FN(sig)(RT v) { return (RT)1 / ((RT)1 + EXPF(-v)); }

/* rows [n0, n0 + rows) of m [*, cols] += b (b [cols]) */
static void RNN_FN(add_rows)(RT *m, int64_t rows, int64_t cols, const RT *b) {
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < cols; j++) m[r * cols + j] += b[j];
}
/* acc [cols] += the column sums of m [rows, cols] */
static void RNN_FN(col_sums)(RT *acc, const RT *m, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < cols; j++) acc[j] += m[r * cols + j];
}

static em_status RNN_FN(rnn_fwd)(const char *op, const em_rnn_geo *g, const em_rnn_args *a,
                                 em_tensor *out, em_tensor *hn, em_tensor *cn, em_tensor *ws) {
  const int64_t L = g->L, N = g->N, I = g->I, H = g->H, P = g->P, GH = g->G * g->H;
  const em_dtype dt = a->x->dtype;
  const int proj = a->w_hr != NULL;
  if (N == 0) return EM_OK;  /* empty results (and an empty workspace: no pointers into it) */
  rnn_ws_t w = rnn_ws(g);
  RT *W = em_tensor_data(ws), *hs = W + w.hs, *cs = W + w.cs, *gates = W + w.gates;
  RT *hnb = W + w.hn, *Y = em_tensor_data(out);
  const RT *X = em_tensor_data(a->x), *Wih = em_tensor_data(a->w_ih), *Whh = em_tensor_data(a->w_hh);
  const RT *bih = a->b_ih ? em_tensor_data(a->b_ih) : NULL;
  const RT *bhh = a->b_hh ? em_tensor_data(a->b_hh) : NULL;
  const RT *Whr = proj ? em_tensor_data(a->w_hr) : NULL;
  RT *xw = malloc(sizeof(RT) * (size_t)(L * N * GH) + 1);
  RT *hw = malloc(sizeof(RT) * (size_t)(N * GH) + 1);
  RT *m = proj ? malloc(sizeof(RT) * (size_t)(N * H) + 1) : NULL;
  RT *hp = proj ? malloc(sizeof(RT) * (size_t)(N * P) + 1) : NULL;
  if (!xw || !hw || (proj && (!m || !hp))) {
    free(xw); free(hw); free(m); free(hp);
    return em_fail(EM_E_NOMEM, "%s: out of memory for the gate buffers", op);
  }
  /* the input projection of the whole sequence: one GEMM */
  if (L * N > 0 && GH > 0) {
    if (I > 0) em_cpu_nn_gemm(dt, 0, 1, L * N, GH, I, X, I, Wih, I, 0.0, xw, GH);
    else memset(xw, 0, sizeof(RT) * (size_t)(L * N * GH));
  }
  if (bih) RNN_FN(add_rows)(xw, L * N, GH, bih);
  if (a->h0) memcpy(hs, em_tensor_data(a->h0), sizeof(RT) * (size_t)(N * P));
  if (a->c0 && g->mode == EM_RNN_LSTM) memcpy(cs, em_tensor_data(a->c0), sizeof(RT) * (size_t)(N * H));
  for (int64_t s = 0; s < L; s++) {
    int64_t t = g->reverse ? L - 1 - s : s;
    RT *hprev = hs + s * N * P, *hnew = hs + (s + 1) * N * P;
    RT *cprev = cs + s * N * H, *cnew = cs + (s + 1) * N * H;
    RT *gt = gates + s * N * GH;
    if (P > 0 && N > 0) em_cpu_nn_gemm(dt, 0, 1, N, GH, P, hprev, P, Whh, P, 0.0, hw, GH);
    else memset(hw, 0, sizeof(RT) * (size_t)(N * GH));
    if (bhh) RNN_FN(add_rows)(hw, N, GH, bhh);
    for (int64_t n = 0; n < N; n++) {
      RT *hpn = hprev + n * P, *hnn = hnew + n * P;
      if (!rnn_active(g, n, t)) {
        memcpy(hnn, hpn, sizeof(RT) * (size_t)P);
        if (g->mode == EM_RNN_LSTM) memcpy(cnew + n * H, cprev + n * H, sizeof(RT) * (size_t)H);
        continue;
      }
      const RT *xr = xw + (t * N + n) * GH, *hr = hw + n * GH;
      RT *gr = gt + n * GH;
      switch (g->mode) {
        case EM_RNN_TANH: case EM_RNN_RELU:
          for (int64_t j = 0; j < H; j++) {
            RT v = xr[j] + hr[j];
            v = g->mode == EM_RNN_TANH ? TANHF(v) : (v > 0 ? v : (v != v ? v : 0));
            gr[j] = v;
            hnn[j] = v;
          }
          break;
        case EM_RNN_LSTM:
          for (int64_t j = 0; j < H; j++) {
            RT ig = RNN_FN(sig)(xr[j] + hr[j]), fg = RNN_FN(sig)(xr[H + j] + hr[H + j]);
            RT gg = TANHF(xr[2 * H + j] + hr[2 * H + j]);
            RT og = RNN_FN(sig)(xr[3 * H + j] + hr[3 * H + j]);
            RT c = fg * cprev[n * H + j] + ig * gg;
            gr[j] = ig; gr[H + j] = fg; gr[2 * H + j] = gg; gr[3 * H + j] = og;
            cnew[n * H + j] = c;
            RT mv = og * TANHF(c);
            if (proj) m[n * H + j] = mv;
            else hnn[j] = mv;
          }
          break;
        case EM_RNN_GRU:
          for (int64_t j = 0; j < H; j++) {
            RT r = RNN_FN(sig)(xr[j] + hr[j]), z = RNN_FN(sig)(xr[H + j] + hr[H + j]);
            RT hnv = hr[2 * H + j];
            RT nv = TANHF(xr[2 * H + j] + r * hnv);
            gr[j] = r; gr[H + j] = z; gr[2 * H + j] = nv;
            hnb[(s * N + n) * H + j] = hnv;
            hnn[j] = (1 - z) * nv + z * hpn[j];
          }
          break;
      }
    }
    if (proj) {  /* h = W_hr (o tanh(c)) for the rows that ran */
      if (H > 0) em_cpu_nn_gemm(dt, 0, 1, N, P, H, m, H, Whr, H, 0.0, hp, P);
      else memset(hp, 0, sizeof(RT) * (size_t)(N * P));
      for (int64_t n = 0; n < N; n++)
        if (rnn_active(g, n, t)) memcpy(hnew + n * P, hp + n * P, sizeof(RT) * (size_t)P);
    }
    for (int64_t n = 0; n < N; n++)
      if (rnn_active(g, n, t)) memcpy(Y + (t * N + n) * P, hnew + n * P, sizeof(RT) * (size_t)P);
  }
  memcpy(em_tensor_data(hn), hs + L * N * P, sizeof(RT) * (size_t)(N * P));
  if (cn) memcpy(em_tensor_data(cn), cs + L * N * H, sizeof(RT) * (size_t)(N * H));
  free(xw); free(hw); free(m); free(hp);
  return EM_OK;
}

static em_status RNN_FN(rnn_bwd)(const char *op, const em_rnn_geo *g, const em_rnn_args *a,
                                 const em_tensor *ws, const em_tensor *g_out,
                                 const em_tensor *g_hn, const em_tensor *g_cn,
                                 const em_rnn_grads *gr) {
  const int64_t L = g->L, N = g->N, I = g->I, H = g->H, P = g->P, GH = g->G * g->H;
  const em_dtype dt = a->x->dtype;
  const int proj = a->w_hr != NULL, gru = g->mode == EM_RNN_GRU, lstm = g->mode == EM_RNN_LSTM;
  if (N == 0) return EM_OK;  /* the gradients are empty or stay zero */
  rnn_ws_t w = rnn_ws(g);
  const RT *W = em_tensor_data(ws), *hs = W + w.hs, *cs = W + w.cs, *gates = W + w.gates;
  const RT *hnb = W + w.hn;
  const RT *X = em_tensor_data(a->x), *Wih = em_tensor_data(a->w_ih), *Whh = em_tensor_data(a->w_hh);
  const RT *Whr = proj ? em_tensor_data(a->w_hr) : NULL;
  const RT *GO = g_out ? em_tensor_data(g_out) : NULL;
  size_t es = sizeof(RT);
  RT *dXg = calloc((size_t)(L * N * GH) + 1, es), *dHg = gru ? malloc(es * (size_t)(N * GH) + 1) : NULL;
  RT *dh = calloc((size_t)(N * P) + 1, es), *dc = lstm ? calloc((size_t)(N * H) + 1, es) : NULL;
  RT *dha = malloc(es * (size_t)(N * P) + 1), *dhp = malloc(es * (size_t)(N * P) + 1);
  RT *dm = proj ? malloc(es * (size_t)(N * H) + 1) : NULL;
  RT *mrow = proj ? malloc(es * (size_t)(N * H) + 1) : NULL;
  em_status st = EM_OK;
  if (!dXg || (gru && !dHg) || !dh || (lstm && !dc) || !dha || !dhp || (proj && (!dm || !mrow))) {
    st = em_fail(EM_E_NOMEM, "%s: out of memory for the gradient buffers", op);
    goto done;
  }
  if (g_hn) memcpy(dh, em_tensor_data(g_hn), es * (size_t)(N * P));
  if (g_cn && lstm) memcpy(dc, em_tensor_data(g_cn), es * (size_t)(N * H));
  RT *gWhh = gr->w_hh ? em_tensor_data(gr->w_hh) : NULL;
  RT *gbhh = gr->b_hh ? em_tensor_data(gr->b_hh) : NULL;
  RT *gWhr = gr->w_hr ? em_tensor_data(gr->w_hr) : NULL;
  for (int64_t s = L - 1; s >= 0; s--) {
    int64_t t = g->reverse ? L - 1 - s : s;
    const RT *hprev = hs + s * N * P, *cprev = cs + s * N * H, *cnew = cs + (s + 1) * N * H;
    const RT *gt = gates + s * N * GH;
    RT *dX = dXg + t * N * GH, *dHh = gru ? dHg : dX;
    for (int64_t n = 0; n < N; n++) {
      int on = rnn_active(g, n, t);
      for (int64_t j = 0; j < P; j++)
        dha[n * P + j] = on ? dh[n * P + j] + (GO ? GO[(t * N + n) * P + j] : 0) : 0;
    }
    if (proj) {
      if (P > 0) em_cpu_nn_gemm(dt, 0, 0, N, H, P, dha, P, Whr, H, 0.0, dm, H);
      else memset(dm, 0, es * (size_t)(N * H));
      if (gWhr) {
        for (int64_t n = 0; n < N; n++) {
          int on = rnn_active(g, n, t);
          for (int64_t j = 0; j < H; j++)
            mrow[n * H + j] = on ? gt[n * GH + 3 * H + j] * TANHF(cnew[n * H + j]) : 0;
        }
        if (N > 0) em_cpu_nn_gemm(dt, 1, 0, P, H, N, dha, P, mrow, H, 1.0, gWhr, H);
      }
    }
    for (int64_t n = 0; n < N; n++) {
      RT *dXr = dX + n * GH, *dHr = dHh + n * GH;
      const RT *gv = gt + n * GH;
      if (!rnn_active(g, n, t)) {
        if (gru) memset(dHr, 0, es * (size_t)GH);
        continue;
      }
      const RT *dv = dha + n * P;
      switch (g->mode) {
        case EM_RNN_TANH:
          for (int64_t j = 0; j < H; j++) dXr[j] = dv[j] * (1 - gv[j] * gv[j]);
          break;
        case EM_RNN_RELU:
          for (int64_t j = 0; j < H; j++) dXr[j] = gv[j] > 0 ? dv[j] : 0;
          break;
        case EM_RNN_LSTM:
          for (int64_t j = 0; j < H; j++) {
            RT ig = gv[j], fg = gv[H + j], gg = gv[2 * H + j], og = gv[3 * H + j];
            RT dmv = proj ? dm[n * H + j] : dv[j];
            RT tc = TANHF(cnew[n * H + j]);
            RT dcv = dc[n * H + j] + dmv * og * (1 - tc * tc);
            dXr[j] = dcv * gg * ig * (1 - ig);
            dXr[H + j] = dcv * cprev[n * H + j] * fg * (1 - fg);
            dXr[2 * H + j] = dcv * ig * (1 - gg * gg);
            dXr[3 * H + j] = dmv * tc * og * (1 - og);
            dc[n * H + j] = dcv * fg;
          }
          break;
        case EM_RNN_GRU:
          for (int64_t j = 0; j < H; j++) {
            RT r = gv[j], z = gv[H + j], nv = gv[2 * H + j], hnv = hnb[(s * N + n) * H + j];
            RT dhv = dv[j];
            RT dan = dhv * (1 - z) * (1 - nv * nv);
            RT dar = dan * hnv * r * (1 - r);
            RT daz = dhv * (hprev[n * P + j] - nv) * z * (1 - z);
            dXr[j] = dHr[j] = dar;
            dXr[H + j] = dHr[H + j] = daz;
            dXr[2 * H + j] = dan;
            dHr[2 * H + j] = dan * r;
          }
          break;
      }
    }
    if (N > 0 && GH > 0) em_cpu_nn_gemm(dt, 0, 0, N, P, GH, dHh, GH, Whh, P, 0.0, dhp, P);
    else memset(dhp, 0, es * (size_t)(N * P));
    if (gWhh && N > 0) em_cpu_nn_gemm(dt, 1, 0, GH, P, N, dHh, GH, hprev, P, 1.0, gWhh, P);
    if (gbhh) RNN_FN(col_sums)(gbhh, dHh, N, GH);
    for (int64_t n = 0; n < N; n++) {
      if (!rnn_active(g, n, t)) continue;  /* its gradient passes this step unchanged */
      for (int64_t j = 0; j < P; j++)
        dh[n * P + j] = dhp[n * P + j] + (gru ? dha[n * P + j] * gt[n * GH + H + j] : 0);
    }
  }
  if (gr->h0) memcpy(em_tensor_data(gr->h0), dh, es * (size_t)(N * P));
  if (gr->c0 && lstm) memcpy(em_tensor_data(gr->c0), dc, es * (size_t)(N * H));
  if (gr->x && L * N > 0 && I > 0)
    em_cpu_nn_gemm(dt, 0, 0, L * N, I, GH, dXg, GH, Wih, I, 0.0, em_tensor_data(gr->x), I);
  if (gr->w_ih && L * N > 0 && I > 0)
    em_cpu_nn_gemm(dt, 1, 0, GH, I, L * N, dXg, GH, X, I, 0.0, em_tensor_data(gr->w_ih), I);
  if (gr->b_ih) RNN_FN(col_sums)(em_tensor_data(gr->b_ih), dXg, L * N, GH);
done:
  free(dXg); free(dHg); free(dh); free(dc); free(dha); free(dhp); free(dm); free(mrow);
  return st;
}

#undef RNN_FN
#undef RNN_CAT
#undef RNN_CAT_
