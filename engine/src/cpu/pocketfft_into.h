/*
** cpu/pocketfft_into.h -- ember's one addition to the vendored pocketfft
** (engine/third_party/pocketfft, left as released), included right after
** pocketfft.c by each of its builds (cpu/pocketfft_f64.c, _avx2.c, _f32.c,
** _f32_avx2.c), where its static passes are in scope.
**
** rfft_forward_into(plan, in, out, fct): the forward real transform of
** in[0..n) into out[0..n), pocketfft's packed order (r0, r1, i1, ...).
** The same passes on the same values as copying in to out and calling
** rfft_forward(plan, out, fct), so the same bits; but the first pass reads
** in itself, and the target of that pass is chosen so that the last one
** lands in out: the data is read and written once less (a 2^20-point
** float64 rfft: 8 MB each way, about a tenth of its time). Bluestein
** plans, length 1, a first factor of the generic pass (radfg works in
** place in its input) and in == out take the copy.
*/
WARN_UNUSED_RESULT
int rfft_forward_into(rfft_plan plan, const double *in, double *out, double fct)
  {
  rfftp_plan pp = plan->packplan;
  size_t n = pp ? pp->length : 0, nf = pp ? pp->nfct : 0;
  if (!pp || n == 1 || in == out || pp->fct[nf - 1].fct > 5)
    {
    size_t len = pp ? n : rfft_length(plan);
    if (in != out) memcpy(out, in, len * sizeof(double));
    return rfft_forward(plan, out, fct);
    }
  double *ch = RALLOC(double, n);
  if (!ch) return -1;
  /* the passes after the first that move the data (radfg stays in place) */
  size_t moves = 0;
  for (size_t k = 0; k + 1 < nf; k++)
    if (pp->fct[k].fct <= 5) moves++;
  double *cur = (moves % 2 == 0) ? out : ch, *oth = (cur == out) ? ch : out;
  size_t l1 = n;
  for (size_t k1 = 0; k1 < nf; ++k1)
    {
    size_t k = nf - k1 - 1, ip = pp->fct[k].fct, ido = n / l1;
    l1 /= ip;
    if (ip > 5) /* never the first pass (above) */
      {
      radfg(ido, ip, l1, cur, oth, pp->fct[k].tw, pp->fct[k].tws);
      continue;
      }
    const double *src = (k1 == 0) ? in : cur;
    double *dst = (k1 == 0) ? cur : oth;
    if (ip == 4) radf4(ido, l1, src, dst, pp->fct[k].tw);
    else if (ip == 2) radf2(ido, l1, src, dst, pp->fct[k].tw);
    else if (ip == 3) radf3(ido, l1, src, dst, pp->fct[k].tw);
    else radf5(ido, l1, src, dst, pp->fct[k].tw);
    if (k1 > 0) SWAP(cur, oth, double *);
    }
  copy_and_norm(out, cur, n, fct); /* cur is out: scales when fct != 1 */
  DEALLOC(ch);
  return 0;
  }
