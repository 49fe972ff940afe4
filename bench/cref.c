/* bench/cref.c: the C reference contender -- hand-written loops compiled
** with -O3 and cblas_sgemm called directly; same protocol as worker.lua.
** Per-call workloads have no C counterpart and answer "skip". */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static float *A, *B, *Cc;
static int64_t *IDX;
static unsigned char *MASK;
static float *LIST[64];
static int64_t N, ROWS, NIDX, LROWS;
static char cur[64];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static float *frand(int64_t n) {
  float *p = malloc(sizeof(float) * n);
  for (int64_t i = 0; i < n; i++) p[i] = (float)rand() / RAND_MAX;
  return p;
}
static void freeall(void) {
  free(A); free(B); free(Cc); free(IDX); free(MASK);
  A = B = Cc = NULL; IDX = NULL; MASK = NULL;
  for (int i = 0; i < 64; i++) { free(LIST[i]); LIST[i] = NULL; }
}
static volatile float sink;

static void add(const float *a, const float *b, float *c, int64_t n) {
  for (int64_t i = 0; i < n; i++) c[i] = a[i] + b[i];
}
static float sum(const float *a, int64_t n) {
  float acc[16] = {0};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; k++) acc[k] += a[i + k];
  float s = 0;
  for (int k = 0; k < 16; k++) s += acc[k];
  for (; i < n; i++) s += a[i];
  return s;
}
static void bcast(const float *a, const float *b, float *c, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) c[i * n + j] = a[i] + b[j];
}
static void transpose(const float *a, float *c, int64_t n) {
  const int64_t bs = 32;
  for (int64_t i0 = 0; i0 < n; i0 += bs)
    for (int64_t j0 = 0; j0 < n; j0 += bs)
      for (int64_t i = i0; i < i0 + bs && i < n; i++)
        for (int64_t j = j0; j < j0 + bs && j < n; j++) c[j * n + i] = a[i * n + j];
}

/* the transcendental rows: libm per element into the preallocated Cc */
static float gelu_tanh_f(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}
static void vm_run(const char *name) {
  const float *a = A;
  float *c = Cc;
  if (!strcmp(name, "vm_exp")) for (int64_t i = 0; i < N; i++) c[i] = expf(a[i]);
  else if (!strcmp(name, "vm_log")) for (int64_t i = 0; i < N; i++) c[i] = logf(a[i]);
  else if (!strcmp(name, "vm_sin")) for (int64_t i = 0; i < N; i++) c[i] = sinf(a[i]);
  else if (!strcmp(name, "vm_tanh")) for (int64_t i = 0; i < N; i++) c[i] = tanhf(a[i]);
  else if (!strcmp(name, "vm_sigmoid"))
    for (int64_t i = 0; i < N; i++) c[i] = 1.0f / (1.0f + expf(-a[i]));
  else if (!strcmp(name, "vm_gelu"))
    for (int64_t i = 0; i < N; i++) c[i] = a[i] * 0.5f * (1.0f + erff(a[i] * (float)M_SQRT1_2));
  else if (!strcmp(name, "vm_gelu_tanh")) for (int64_t i = 0; i < N; i++) c[i] = gelu_tanh_f(a[i]);
  else if (!strcmp(name, "vm_erf")) for (int64_t i = 0; i < N; i++) c[i] = erff(a[i]);
  else if (!strcmp(name, "vm_pow")) for (int64_t i = 0; i < N; i++) c[i] = powf(a[i], 2.5f);
  else if (!strcmp(name, "vm_exp_f64")) {
    const double *ad = (const double *)A;
    double *cd = (double *)Cc;
    for (int64_t i = 0; i < N; i++) cd[i] = exp(ad[i]);
  }
}

static const char *setup(const char *name, int k) {
  freeall();
  const int64_t M = 16 * 1024 * 1024;
  snprintf(cur, sizeof cur, "%s", name);
  if (!strncmp(name, "percall_", 8)) return "skip no C counterpart";
  if (!strcmp(name, "stream_add_out") || !strcmp(name, "stream_add_alloc")) {
    N = M / k; A = frand(N); B = frand(N); Cc = malloc(4 * N);
  } else if (!strcmp(name, "stream_exp") || !strcmp(name, "stream_sum")) {
    N = M / k; A = frand(N); Cc = malloc(4 * N);
  } else if (!strncmp(name, "stream_bcast", 12) || !strncmp(name, "layout_", 7)) {
    N = 4096 / k;
    A = frand(!strncmp(name, "layout_", 7) ? N * N : N); B = frand(N); Cc = malloc(4 * N * N);
  } else if (!strcmp(name, "sel_index_select")) {
    ROWS = 4 * 1024 * 1024 / k; NIDX = 1024 * 1024 / k;
    A = frand(ROWS * 16); IDX = malloc(8 * NIDX);
    for (int64_t i = 0; i < NIDX; i++) IDX[i] = rand() % ROWS;
  } else if (!strcmp(name, "sel_masked_select")) {
    N = M / k; A = frand(N); MASK = malloc(N);
    for (int64_t i = 0; i < N; i++) MASK[i] = rand() & 1;
  } else if (!strncmp(name, "asm_", 4)) {
    LROWS = 16384 / k;
    for (int i = 0; i < 64; i++) LIST[i] = frand(LROWS * 16);
  } else if (!strncmp(name, "mm_", 3)) {
    N = atoi(name + 3); if (N > 256) N /= k;
    A = frand(N * N); B = frand(N * N); Cc = malloc(4 * N * N);
  } else if (!strcmp(name, "bmm_64x128")) {
    A = frand(64 * 128 * 128); B = frand(64 * 128 * 128); Cc = malloc(4 * 64 * 128 * 128);
  } else if (!strncmp(name, "vm_", 3)) { /* the transcendental rows: a libm loop */
    N = M / k; A = frand(N); Cc = malloc(8 * N);
    int sym = strstr("vm_tanh vm_sigmoid vm_gelu vm_gelu_tanh vm_erf", name) != NULL;
    if (sym) for (int64_t i = 0; i < N; i++) A[i] = A[i] * 8 - 4;
    if (!strcmp(name, "vm_exp_f64")) {
      double *d = malloc(8 * N);
      for (int64_t i = 0; i < N; i++) d[i] = A[i];
      free(A); A = (float *)d;
    }
  } else return "skip unknown workload";
  return "ok";
}

static void run(const char *name) {
  if (!strcmp(name, "stream_add_out")) add(A, B, Cc, N);
  else if (!strcmp(name, "stream_add_alloc")) {
    float *c = malloc(4 * N); add(A, B, c, N); sink = c[N - 1]; free(c);
  } else if (!strcmp(name, "stream_exp")) for (int64_t i = 0; i < N; i++) Cc[i] = expf(A[i]);
  else if (!strncmp(name, "vm_", 3)) vm_run(name);
  else if (!strcmp(name, "stream_sum")) sink = sum(A, N);
  else if (!strcmp(name, "stream_bcast_out")) bcast(A, B, Cc, N);
  else if (!strcmp(name, "stream_bcast_alloc")) {
    float *c = malloc(4 * N * N); bcast(A, B, c, N); sink = c[N * N - 1]; free(c);
  } else if (!strcmp(name, "layout_transpose")) {
    float *c = malloc(4 * N * N); transpose(A, c, N); sink = c[1]; free(c);
  } else if (!strcmp(name, "layout_clone_slice")) {
    int64_t h = (N + 1) / 2; float *c = malloc(4 * N * h);
    for (int64_t i = 0; i < N; i++) for (int64_t j = 0; j < h; j++) c[i * h + j] = A[i * N + 2 * j];
    sink = c[1]; free(c);
  } else if (!strcmp(name, "sel_index_select")) {
    float *c = malloc(4 * 16 * NIDX);
    for (int64_t i = 0; i < NIDX; i++) memcpy(c + 16 * i, A + 16 * IDX[i], 64);
    sink = c[1]; free(c);
  } else if (!strcmp(name, "sel_masked_select")) {
    float *c = malloc(4 * N); int64_t k = 0;
    for (int64_t i = 0; i < N; i++) { c[k] = A[i]; k += MASK[i]; }
    sink = c[0]; free(c);
  } else if (!strcmp(name, "asm_cat") || !strcmp(name, "asm_stack")) {
    float *c = malloc(4 * 64 * 16 * LROWS);
    for (int i = 0; i < 64; i++) memcpy(c + (int64_t)i * 16 * LROWS, LIST[i], 4 * 16 * LROWS);
    sink = c[1]; free(c);
  } else if (!strncmp(name, "mm_", 3)) {
    float *c = malloc(4 * N * N);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)N, (int)N, 1.0f, A,
                (int)N, B, (int)N, 0.0f, c, (int)N);
    sink = c[1]; free(c);
  } else if (!strcmp(name, "bmm_64x128")) {
    float *c = malloc(4 * 64 * 128 * 128);
    for (int b = 0; b < 64; b++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 128, 128, 128, 1.0f,
                  A + b * 16384, 128, B + b * 16384, 128, 0.0f, c + b * 16384, 128);
    sink = c[1]; free(c);
  }
}

int main(void) {
  char line[256], cmd[32], a1[64];
  int a2;
  setvbuf(stdout, NULL, _IOLBF, 0);
  while (fgets(line, sizeof line, stdin)) {
    a1[0] = 0; a2 = 1;
    if (sscanf(line, "%31s %63s %d", cmd, a1, &a2) < 1) continue;
    if (!strcmp(cmd, "quit")) break;
    if (!strcmp(cmd, "threads")) { openblas_set_num_threads(atoi(a1)); puts("ok"); }
    else if (!strcmp(cmd, "setup")) puts(setup(a1, a2));
    else if (!strcmp(cmd, "time")) {
      double t0 = now();
      for (int i = 0; i < a2; i++) run(a1);
      printf("t %.9f\n", now() - t0);
    }
  }
  freeall();
  return 0;
}
