/*
** mpi_allreduce.c -- the C reference of the all_reduce bench rows
** (bench/dist_bench.sh): a plain MPI_Allreduce loop (in place, float32,
** MPI_SUM) of the same sizes, timed the same way as the ember rows
** (bench/dist_allreduce.lua). Prints one line per size:
**   bytes reps seconds_per_call
** Usage: mpirun -np 2 build/bench_mpi_allreduce [bytes...]
*/
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int a = 1; a < argc; a++) {
    long bytes = atol(argv[a]);
    int n = (int)(bytes / 4);
    float *buf = malloc((size_t)n * sizeof *buf + 4);
    for (int i = 0; i < n; i++) buf[i] = 1.0f;
    int reps = bytes >= (1 << 24) ? 10 : bytes >= (1 << 18) ? 100 : 2000;
    for (int w = 0; w < 3; w++) MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double best = 1e30;
    for (int trial = 0; trial < 3; trial++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int r = 0; r < reps; r++)
        MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t = (MPI_Wtime() - t0) / reps;
      double tmax;
      MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (tmax < best) best = tmax;
    }
    if (rank == 0) printf("%ld %d %.9f\n", bytes, reps, best);
    free(buf);
  }
  MPI_Finalize();
  return 0;
}
