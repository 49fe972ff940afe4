/*
** rnn_body.h -- the time loops of cpu/rnn.c for one dtype: included once
** per dtype with RT (the C type), SUF (the name suffix), EXPF, TANHF, VMFN
** (cpu/vecmath.h's dispatch for RT) and VFN (its function type) defined.
** Layout of the workspace: rnn_ws (cpu/rnn.c).
**
** Where the time goes (one LSTM layer, N 32, H 128): the per-step GEMM of
** the state and the gate nonlinearities. The sigmoids and tanhs run over
** whole gate blocks through the vector functions (cpu/vecmath.h; libm
** where there is none for RT); both biases are added once to the input
** projection (GRU: b_hn stays with W_hn h, inside r * (...)); the
** backward does one GEMM per step for the state's gradient and, after the
** loop, one GEMM each for w_hh's, w_ih's and the input's gradients over
** the whole sequence.
*/
#define RNN_CAT_(a, b) a##_##b
#define RNN_CAT(a, b) RNN_CAT_(a, b)
#define RNN_FN(name) RNN_CAT(name, SUF)

/* the vector sigmoid and tanh for RT (NULL: loops over libm) */
typedef struct RNN_FN(rnn_vm) { VFN sig, tanh; } RNN_FN(rnn_vm);
static RNN_FN(rnn_vm) RNN_FN(rnn_vm_get)(void) {
  RNN_FN(rnn_vm) v;
  v.sig = VMFN(EM_VM_SIGMOID);
  v.tanh = VMFN(EM_VM_TANH);
  return v;
}
/* out[0..n) = sigmoid(in[0..n)) (out may be in) */
static void RNN_FN(vsig)(const RNN_FN(rnn_vm) *vm, RT *out, const RT *in, int64_t n) {
  if (vm->sig) { vm->sig(out, in, n); return; }
  for (int64_t j = 0; j < n; j++) out[j] = (RT)1 / ((RT)1 + EXPF(-in[j]));
}
static void RNN_FN(vtanh)(const RNN_FN(rnn_vm) *vm, RT *out, const RT *in, int64_t n) {
  if (vm->tanh) { vm->tanh(out, in, n); return; }
  for (int64_t j = 0; j < n; j++) out[j] = TANHF(in[j]);
}

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
  const int proj = a->w_hr != NULL, gru = g->mode == EM_RNN_GRU;
  if (N == 0) return EM_OK;  /* empty results (and an empty workspace: no pointers into it) */
  const RNN_FN(rnn_vm) vm = RNN_FN(rnn_vm_get)();
  rnn_ws_t w = rnn_ws(g);
  RT *W = em_tensor_data(ws), *hs = W + w.hs, *cs = W + w.cs, *gates = W + w.gates;
  RT *hnb = W + w.hn, *Y = em_tensor_data(out);
  const RT *X = em_tensor_data(a->x), *Wih = em_tensor_data(a->w_ih), *Whh = em_tensor_data(a->w_hh);
  const RT *bih = a->b_ih ? em_tensor_data(a->b_ih) : NULL;
  const RT *bhh = a->b_hh ? em_tensor_data(a->b_hh) : NULL;
  const RT *Whr = proj ? em_tensor_data(a->w_hr) : NULL;
  /* the input projection goes straight into the gates' rows of the
  ** workspace (step s is time s), but for reverse: a buffer in time order */
  RT *xbuf = g->reverse ? malloc(sizeof(RT) * (size_t)(L * N * GH) + 1) : NULL;
  RT *xw = g->reverse ? xbuf : gates;
  RT *hw = gru ? malloc(sizeof(RT) * (size_t)(N * GH) + 1) : NULL;
  RT *m = proj ? malloc(sizeof(RT) * (size_t)(N * H) + 1) : NULL;
  RT *hp = proj ? malloc(sizeof(RT) * (size_t)(N * P) + 1) : NULL;
  RT *tc = g->mode == EM_RNN_LSTM ? malloc(sizeof(RT) * (size_t)(N * H) + 1) : NULL;
  if (!xw || (gru && !hw) || (proj && (!m || !hp)) || (g->mode == EM_RNN_LSTM && !tc)) {
    free(xbuf); free(hw); free(m); free(hp); free(tc);
    return em_fail(EM_E_NOMEM, "%s: out of memory for the gate buffers", op);
  }
  /* the input projection of the whole sequence: one GEMM, with the biases
  ** (b_hh too, but for GRU: its b_hn is inside r * (W_hn h + b_hn)) */
  if (L * N > 0 && GH > 0) {
    if (I > 0) em_cpu_nn_gemm(dt, 0, 1, L * N, GH, I, X, I, Wih, I, 0.0, xw, GH);
    else memset(xw, 0, sizeof(RT) * (size_t)(L * N * GH));
  }
  if (bih) RNN_FN(add_rows)(xw, L * N, GH, bih);
  if (bhh && !gru) RNN_FN(add_rows)(xw, L * N, GH, bhh);
  if (a->h0) memcpy(hs, em_tensor_data(a->h0), sizeof(RT) * (size_t)(N * P));
  if (a->c0 && g->mode == EM_RNN_LSTM) memcpy(cs, em_tensor_data(a->c0), sizeof(RT) * (size_t)(N * H));
  for (int64_t s = 0; s < L; s++) {
    int64_t t = g->reverse ? L - 1 - s : s;
    RT *hprev = hs + s * N * P, *hnew = hs + (s + 1) * N * P;
    RT *cprev = cs + s * N * H, *cnew = cs + (s + 1) * N * H;
    RT *gt = gates + s * N * GH;
    const RT *xt = xw + t * N * GH;
    if (gru) {  /* hw = W_hh h + b_hh, kept apart from the input's part */
      if (P > 0) em_cpu_nn_gemm(dt, 0, 1, N, GH, P, hprev, P, Whh, P, 0.0, hw, GH);
      else memset(hw, 0, sizeof(RT) * (size_t)(N * GH));
      if (bhh) RNN_FN(add_rows)(hw, N, GH, bhh);
    } else {    /* gt = x W_ih + b_ih + b_hh + h W_hh: the pre-activations */
      if (gt != xt) memcpy(gt, xt, sizeof(RT) * (size_t)(N * GH));
      if (P > 0) em_cpu_nn_gemm(dt, 0, 1, N, GH, P, hprev, P, Whh, P, 1.0, gt, GH);
    }
    for (int64_t n = 0; n < N; n++) {
      RT *hpn = hprev + n * P, *hnn = hnew + n * P;
      RT *gr = gt + n * GH;
      if (!rnn_active(g, n, t)) {
        memset(gr, 0, sizeof(RT) * (size_t)GH);
        memcpy(hnn, hpn, sizeof(RT) * (size_t)P);
        if (g->mode == EM_RNN_LSTM) memcpy(cnew + n * H, cprev + n * H, sizeof(RT) * (size_t)H);
        continue;
      }
      switch (g->mode) {
        case EM_RNN_TANH:
          RNN_FN(vtanh)(&vm, gr, gr, H);
          memcpy(hnn, gr, sizeof(RT) * (size_t)H);
          break;
        case EM_RNN_RELU:
          for (int64_t j = 0; j < H; j++) {
            RT v = gr[j];
            v = v > 0 ? v : (v != v ? v : 0);
            gr[j] = v;
            hnn[j] = v;
          }
          break;
        case EM_RNN_LSTM: {  /* i f g o: sigmoid, sigmoid, tanh, sigmoid */
          RNN_FN(vsig)(&vm, gr, gr, 2 * H);
          RNN_FN(vtanh)(&vm, gr + 2 * H, gr + 2 * H, H);
          RNN_FN(vsig)(&vm, gr + 3 * H, gr + 3 * H, H);
          const RT *ig = gr, *fg = gr + H, *gg = gr + 2 * H;
          const RT *cp = cprev + n * H;
          RT *cv = cnew + n * H;
          for (int64_t j = 0; j < H; j++) cv[j] = fg[j] * cp[j] + ig[j] * gg[j];
          break;
        }
        case EM_RNN_GRU: {
          const RT *xr = xt + n * GH, *hr = hw + n * GH;
          for (int64_t j = 0; j < 2 * H; j++) gr[j] = xr[j] + hr[j];
          RNN_FN(vsig)(&vm, gr, gr, 2 * H);
          RT *hb = hnb + (s * N + n) * H;
          for (int64_t j = 0; j < H; j++) {
            hb[j] = hr[2 * H + j];
            gr[2 * H + j] = xr[2 * H + j] + gr[j] * hb[j];
          }
          RNN_FN(vtanh)(&vm, gr + 2 * H, gr + 2 * H, H);
          for (int64_t j = 0; j < H; j++) {
            RT z = gr[H + j], nv = gr[2 * H + j];
            hnn[j] = (1 - z) * nv + z * hpn[j];
          }
          break;
        }
      }
    }
    if (g->mode == EM_RNN_LSTM) {  /* m = o tanh(c): h, or what W_hr projects */
      RNN_FN(vtanh)(&vm, tc, cnew, N * H);
      RT *mo = proj ? m : hnew;
      for (int64_t n = 0; n < N; n++) {
        if (!rnn_active(g, n, t)) continue;
        const RT *og = gt + n * GH + 3 * H, *tv = tc + n * H;
        RT *mv = mo + n * (proj ? H : P);
        for (int64_t j = 0; j < H; j++) mv[j] = og[j] * tv[j];
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
  free(xbuf); free(hw); free(m); free(hp); free(tc);
  return EM_OK;
}

/* One LSTM row's gate gradients (dx [4H]) and the cell's gradient dc
** (in: from the step after; out: to the step before) from the gates gv,
** tanh(c) tv, the previous cell cp and the gradient of o tanh(c), dm. */
static void RNN_FN(lstm_row_bwd)(int64_t H, RT *restrict dx, RT *restrict dc,
                                 const RT *restrict gv, const RT *restrict tv,
                                 const RT *restrict cp, const RT *restrict dm) {
  const RT *ig = gv, *fg = gv + H, *gg = gv + 2 * H, *og = gv + 3 * H;
  for (int64_t j = 0; j < H; j++) {
    RT tcv = tv[j];
    RT dcv = dc[j] + dm[j] * og[j] * (1 - tcv * tcv);
    dx[j] = dcv * gg[j] * ig[j] * (1 - ig[j]);
    dx[H + j] = dcv * cp[j] * fg[j] * (1 - fg[j]);
    dx[2 * H + j] = dcv * ig[j] * (1 - gg[j] * gg[j]);
    dx[3 * H + j] = dm[j] * tcv * og[j] * (1 - og[j]);
    dc[j] = dcv * fg[j];
  }
}

static em_status RNN_FN(rnn_bwd)(const char *op, const em_rnn_geo *g, const em_rnn_args *a,
                                 const em_tensor *ws, const em_tensor *g_out,
                                 const em_tensor *g_hn, const em_tensor *g_cn,
                                 const em_rnn_grads *gr) {
  const int64_t L = g->L, N = g->N, I = g->I, H = g->H, P = g->P, GH = g->G * g->H;
  const em_dtype dt = a->x->dtype;
  const int proj = a->w_hr != NULL, gru = g->mode == EM_RNN_GRU, lstm = g->mode == EM_RNN_LSTM;
  if (N == 0) return EM_OK;  /* the gradients are empty or stay zero */
  const RNN_FN(rnn_vm) vm = RNN_FN(rnn_vm_get)();
  rnn_ws_t w = rnn_ws(g);
  const RT *W = em_tensor_data(ws), *hs = W + w.hs, *cs = W + w.cs, *gates = W + w.gates;
  const RT *hnb = W + w.hn;
  const RT *X = em_tensor_data(a->x), *Wih = em_tensor_data(a->w_ih), *Whh = em_tensor_data(a->w_hh);
  const RT *Whr = proj ? em_tensor_data(a->w_hr) : NULL;
  const RT *GO = g_out ? em_tensor_data(g_out) : NULL;
  RT *gX = gr->x ? em_tensor_data(gr->x) : NULL, *gWih = gr->w_ih ? em_tensor_data(gr->w_ih) : NULL;
  RT *gWhh = gr->w_hh ? em_tensor_data(gr->w_hh) : NULL, *gWhr = gr->w_hr ? em_tensor_data(gr->w_hr) : NULL;
  RT *gbih = gr->b_ih ? em_tensor_data(gr->b_ih) : NULL, *gbhh = gr->b_hh ? em_tensor_data(gr->b_hh) : NULL;
  size_t es = sizeof(RT);
  /* The steps run in chunks of K: dXc holds a chunk's gate gradients in
  ** time order (for the input's and w_ih's GEMMs), dHc those the state's
  ** GEMM sees, in step order (w_hh's GEMM pairs them with the states hs):
  ** dXc itself unless GRU (r * ... for n) or reverse (step order is then
  ** not time order). After each chunk: one GEMM each for the input's,
  ** w_ih's and w_hh's gradients over its K N rows. */
  const int sep = gru || g->reverse;
  int64_t K = (int64_t)262144 / (N * GH > 0 ? N * GH : 1);
  if (K < 8) K = 8;
  if (K > L) K = L;
  RT *dXc = malloc(es * (size_t)(K * N * GH) + 1);
  RT *dHc = sep ? malloc(es * (size_t)(K * N * GH) + 1) : dXc;
  RT *dh = calloc((size_t)(N * P) + 1, es), *dc = lstm ? calloc((size_t)(N * H) + 1, es) : NULL;
  RT *dha = malloc(es * (size_t)(N * P) + 1), *dhp = malloc(es * (size_t)(N * P) + 1);
  RT *dm = proj ? malloc(es * (size_t)(N * H) + 1) : NULL;
  RT *mrow = proj ? malloc(es * (size_t)(N * H) + 1) : NULL;
  RT *tc = lstm ? malloc(es * (size_t)(N * H) + 1) : NULL;
  em_status st = EM_OK;
  if (!dXc || !dHc || !dh || (lstm && (!dc || !tc)) || !dha || !dhp || (proj && (!dm || !mrow))) {
    st = em_fail(EM_E_NOMEM, "%s: out of memory for the gradient buffers", op);
    goto done;
  }
  if (g_hn) memcpy(dh, em_tensor_data(g_hn), es * (size_t)(N * P));
  if (g_cn && lstm) memcpy(dc, em_tensor_data(g_cn), es * (size_t)(N * H));
  for (int64_t shi = L; shi > 0; shi -= K) {
    const int64_t slo = shi > K ? shi - K : 0, kn = shi - slo;
    const int64_t tlo = g->reverse ? L - shi : slo;  /* the chunk's first time */
    for (int64_t s = shi - 1; s >= slo; s--) {
      int64_t t = g->reverse ? L - 1 - s : s;
      const RT *hprev = hs + s * N * P, *cprev = cs + s * N * H, *cnew = cs + (s + 1) * N * H;
      const RT *gt = gates + s * N * GH;
      RT *dX = dXc + (t - tlo) * N * GH, *dHh = dHc + (s - slo) * N * GH;
      for (int64_t n = 0; n < N; n++) {
        const RT *gon = GO ? GO + (t * N + n) * P : NULL;
        RT *da = dha + n * P;
        const RT *dv = dh + n * P;
        if (!rnn_active(g, n, t)) memset(da, 0, es * (size_t)P);
        else if (gon) for (int64_t j = 0; j < P; j++) da[j] = dv[j] + gon[j];
        else memcpy(da, dv, es * (size_t)P);
      }
      if (lstm) RNN_FN(vtanh)(&vm, tc, cnew, N * H);
      if (proj) {
        em_cpu_nn_gemm(dt, 0, 0, N, H, P, dha, P, Whr, H, 0.0, dm, H);
        if (gWhr) {
          for (int64_t n = 0; n < N; n++) {
            int on = rnn_active(g, n, t);
            for (int64_t j = 0; j < H; j++)
              mrow[n * H + j] = on ? gt[n * GH + 3 * H + j] * tc[n * H + j] : 0;
          }
          em_cpu_nn_gemm(dt, 1, 0, P, H, N, dha, P, mrow, H, 1.0, gWhr, H);
        }
      }
      for (int64_t n = 0; n < N; n++) {
        RT *dXr = dX + n * GH, *dHr = dHh + n * GH;
        const RT *gv = gt + n * GH;
        if (!rnn_active(g, n, t)) {  /* no gradient reaches its gates */
          memset(dXr, 0, es * (size_t)GH);
          if (sep) memset(dHr, 0, es * (size_t)GH);
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
            RNN_FN(lstm_row_bwd)(H, dXr, dc + n * H, gv, tc + n * H, cprev + n * H,
                                 proj ? dm + n * H : dv);
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
        if (sep && !gru) memcpy(dHr, dXr, es * (size_t)GH);
      }
      if (GH > 0) em_cpu_nn_gemm(dt, 0, 0, N, P, GH, dHh, GH, Whh, P, 0.0, dhp, P);
      else memset(dhp, 0, es * (size_t)(N * P));
      for (int64_t n = 0; n < N; n++) {
        if (!rnn_active(g, n, t)) continue;  /* its gradient passes this step unchanged */
        for (int64_t j = 0; j < P; j++)
          dh[n * P + j] = dhp[n * P + j] + (gru ? dha[n * P + j] * gt[n * GH + H + j] : 0);
      }
    }
    /* the chunk's share of the weights' and the input's gradients */
    const int64_t rows = kn * N;
    if (GH > 0) {
      if (gWhh) em_cpu_nn_gemm(dt, 1, 0, GH, P, rows, dHc, GH, hs + slo * N * P, P, 1.0, gWhh, P);
      if (gX && I > 0)
        em_cpu_nn_gemm(dt, 0, 0, rows, I, GH, dXc, GH, Wih, I, 0.0, gX + tlo * N * I, I);
      if (gWih && I > 0)
        em_cpu_nn_gemm(dt, 1, 0, GH, I, rows, dXc, GH, X + tlo * N * I, I, 1.0, gWih, I);
    }
    if (gbhh) RNN_FN(col_sums)(gbhh, dHc, rows, GH);
    if (gbih && !(gbhh && !sep)) RNN_FN(col_sums)(gbih, dXc, rows, GH);
  }
  if (gbih && gbhh && !sep) memcpy(gbih, gbhh, es * (size_t)GH);  /* the same sums */
  if (gr->h0) memcpy(em_tensor_data(gr->h0), dh, es * (size_t)(N * P));
  if (gr->c0 && lstm) memcpy(em_tensor_data(gr->c0), dc, es * (size_t)(N * H));
done:
  free(dXc);
  if (dHc != dXc) free(dHc);
  free(dh); free(dc); free(dha); free(dhp); free(dm); free(mrow); free(tc);
  return st;
}

#undef RNN_FN
#undef RNN_CAT
#undef RNN_CAT_
