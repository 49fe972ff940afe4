#!/usr/bin/env bash
# bench/dist_bench.sh [BUILD]: the T.distributed rows (issue 17), as a
# markdown table on stdout (bench/README.md's harness runs one process per
# worker; these need mpirun):
#  - all_reduce of 4 KB, 1 MB and 64 MB float32 on 2 ranks: ember's
#    T.distributed.all_reduce against a plain C MPI_Allreduce loop
#    (bench/mpi_allreduce.c) of the same sizes, alternating, best of ROUNDS;
#  - the DDP step of the digits MLP on 1 and 2 ranks (global batch 32), with
#    the no-communication step and the all-reduces alone, which say how much
#    of the communication the backward hides.
# Environment: ROUNDS (default 2), EMBER_BUILD (default build-release, else build).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
build=${1:-${EMBER_BUILD:-}}
if [ -z "$build" ]; then
  if [ -f build-release/ember/dist.so ]; then build=build-release; else build=build; fi
fi
case $build in /*) ;; *) build=$here/$build ;; esac
export EMBER_BUILD=$build
[ -f "$build/ember/dist.so" ] || { echo "dist_bench: no $build/ember/dist.so (libopenmpi-dev, then make)"; exit 1; }
make --no-print-directory -C "$build" bench_mpi_allreduce >/dev/null || exit 1
mpi=(mpirun --oversubscribe --mca btl self,vader --mca btl_vader_single_copy_mechanism none)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
sizes="4096 1048576 67108864"
rounds=${ROUNDS:-2}
declare -A c e f g h
best() { # array-name: reads "bytes reps seconds" lines, keeps the least per size
  local -n arr=$1
  while read -r b _ s; do
    [ -z "${arr[$b]:-}" ] || [ "$(echo "$s < ${arr[$b]}" | bc -l)" = 1 ] && arr[$b]=$s
  done
}
for _ in $(seq 1 "$rounds"); do
  best c < <("${mpi[@]}" -np 2 "$build/bench_mpi_allreduce" $sizes)
  best e < <("${mpi[@]}" -np 2 ./bin/ember bench/dist_allreduce.lua $sizes)
  best f < <("${mpi[@]}" -x EMBER_BENCH_NO_TIMEOUT=1 -np 2 ./bin/ember bench/dist_allreduce.lua $sizes)
  best g < <(EMBER_DIST_ALLREDUCE=mpi "${mpi[@]}" -x EMBER_DIST_ALLREDUCE -np 2 ./bin/ember bench/dist_allreduce.lua $sizes)
  best h < <(EMBER_MPI_THREAD_LEVEL=single "${mpi[@]}" -x EMBER_MPI_THREAD_LEVEL -np 2 ./bin/ember bench/dist_allreduce.lua $sizes)
done
echo "| all_reduce, float32, 2 ranks | C MPI_Allreduce | ember, timeout 1800 s (its point-to-point schedule) | ember, timeout 1800 s, EMBER_DIST_ALLREDUCE=mpi (MPI_Iallreduce) | ember, timeout = math.huge (MPI_Allreduce) | ember, timeout 1800 s, EMBER_MPI_THREAD_LEVEL=single |"
echo "|---|---|---|---|---|---|"
for b in $sizes; do
  awk -v b="$b" -v c="${c[$b]}" -v e="${e[$b]}" -v f="${f[$b]}" -v g="${g[$b]}" -v h="${h[$b]}" 'BEGIN {
    name = b >= 1048576 ? sprintf("%d MB", b / 1048576) : sprintf("%d KB", b / 1024)
    printf("| %s | %.1f us (%.2f GB/s) | %.1f us (%.2f GB/s, %.2fx) | %.1f us (%.2f GB/s, %.2fx) | %.1f us (%.2f GB/s, %.2fx) | %.1f us (%.2f GB/s, %.2fx) |\n", name,
           c * 1e6, b / c / 1e9, e * 1e6, b / e / 1e9, c / e, g * 1e6, b / g / 1e9, c / g, f * 1e6, b / f / 1e9, c / f,
           h * 1e6, b / h / 1e9, c / h) }'
done
echo
echo "| DDP step, digits MLP, global batch 32 | step | step without communication | all-reduces alone | hidden by backward | buckets sent during backward |"
echo "|---|---|---|---|---|---|"
# 1 and 2 ranks with the default 25 MB buckets (the MLP's 200 KB of
# gradients make one), then 2 ranks with 50 KB buckets (4 of them, 3 sent
# while the backward still runs)
for cfg in "1 25" "2 25" "2 0.05"; do
  read -r np cap <<<"$cfg"
  read -r w t_ddp t_local t_comm launched nb < <("${mpi[@]}" -np "$np" ./bin/ember bench/dist_ddp.lua 200 "$cap" | tail -1)
  awk -v w="$w" -v d="$t_ddp" -v l="$t_local" -v m="$t_comm" -v k="$launched" -v nb="$nb" -v cap="$cap" 'BEGIN {
    hidden = m > 0 ? (l + m - d) / m : 0
    if (hidden < 0) hidden = 0
    printf("| %d rank%s, bucket_cap_mb = %s | %.3f ms | %.3f ms | %.3f ms | %s | %d of %d |\n", w, w > 1 ? "s" : "",
           cap, d, l, m, w > 1 ? sprintf("%.0f%%", 100 * hidden) : "-", k, nb) }'
done
