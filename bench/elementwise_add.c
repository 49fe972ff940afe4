/* bench/elementwise_add.c -- c = a + b on 16M float32 through the engine
** (new output, as `c = a + b` in Lua, and into a preallocated out) against a
** plain C loop doing the same, to see how close the elementwise path gets to
** memory bandwidth. Build and run from the repository root after `make`:
**
**   cc -O2 -fopenmp -Iengine/include bench/elementwise_add.c build/libember.a -lm -o /tmp/bench_add
**   /tmp/bench_add [threads]
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum { N = 16 << 20, REPS = 20 };

int main(int argc, char **argv) {
  if (argc > 1) em_set_num_threads(atoi(argv[1]));
  int64_t n = N;
  em_tensor *a, *b, *c, *r;
  em_empty(1, &n, EM_FLOAT32, em_cpu(), &a);
  em_empty(1, &n, EM_FLOAT32, em_cpu(), &b);
  em_empty(1, &n, EM_FLOAT32, em_cpu(), &c);
  float *ap = em_tensor_data(a), *bp = em_tensor_data(b), *cp = em_tensor_data(c);
  for (int64_t i = 0; i < n; i++) { ap[i] = (float)i; bp[i] = 1.0f; cp[i] = 0; }
  double best_loop = 1e9, best_loop_new = 1e9, best_out = 1e9, best_new = 1e9;
  for (int rep = 0; rep < REPS; rep++) {
    double t0 = now();
    for (int64_t i = 0; i < n; i++) cp[i] = ap[i] + bp[i];
    double t1 = now();
    if (t1 - t0 < best_loop) best_loop = t1 - t0;
    t0 = now();
    float *fresh = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) fresh[i] = ap[i] + bp[i];
    t1 = now();
    if (t1 - t0 < best_loop_new) best_loop_new = t1 - t0;
    if (fresh[7] != 8.0f) return 1;
    free(fresh);
    em_operand ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].tensor = a;
    ops[1].tensor = b;
    t0 = now();
    em_elementwise(EM_OP_ADD, 2, ops, NULL, c, NULL);
    t1 = now();
    if (t1 - t0 < best_out) best_out = t1 - t0;
    t0 = now();
    em_binary(EM_OP_ADD, a, b, &r);
    t1 = now();
    if (t1 - t0 < best_new) best_new = t1 - t0;
    if (((float *)em_tensor_data(r))[7] != 8.0f) return 1;
    em_tensor_release(r);
  }
  double gb = 3.0 * n * sizeof(float) / 1e9;
  printf("threads %d, 16M float32, best of %d\n", em_get_num_threads(), REPS);
  printf("plain C loop, preallocated:  %7.2f ms  %6.1f GB/s\n", best_loop * 1e3, gb / best_loop);
  printf("plain C loop, fresh malloc:  %7.2f ms  %6.1f GB/s\n", best_loop_new * 1e3, gb / best_loop_new);
  printf("em add, out= preallocated:   %7.2f ms  %6.1f GB/s  (ratio %.2f)\n", best_out * 1e3,
         gb / best_out, best_out / best_loop);
  printf("em add, new result (a + b):  %7.2f ms  %6.1f GB/s  (ratio %.2f vs fresh loop)\n",
         best_new * 1e3, gb / best_new, best_new / best_loop_new);
  em_tensor_release(a);
  em_tensor_release(b);
  em_tensor_release(c);
  return 0;
}
