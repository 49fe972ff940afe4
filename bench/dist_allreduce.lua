-- bench/dist_allreduce.lua: ember's all_reduce (float32, sum, in place) of the
-- sizes given, timed as bench/mpi_allreduce.c times MPI_Allreduce: 3 warm-up
-- calls, then the best of 3 trials of `reps` calls (the slowest rank's time).
-- Prints "bytes reps seconds_per_call" on rank 0. Run by bench/dist_bench.sh:
--   mpirun -np 2 bin/ember bench/dist_allreduce.lua 4096 1048576 67108864
-- With EMBER_BENCH_NO_TIMEOUT=1 the group has timeout = math.huge (blocking
-- MPI_Allreduce); by default the 1800 s timeout (MPI_Iallreduce + polling).
local T = require "ember"
local dist = T.distributed
dist.init_process_group { backend = "mpi", timeout = os.getenv("EMBER_BENCH_NO_TIMEOUT") == "1" and math.huge or nil }
local clock = T.train.clock
for i = 1, #arg do
  local bytes = tonumber(arg[i])
  local t = T.ones(math.floor(bytes / 4))
  local reps = bytes >= 2 ^ 24 and 10 or bytes >= 2 ^ 18 and 100 or 2000
  for _ = 1, 3 do dist.all_reduce(t) end
  dist.barrier()
  local best = math.huge
  for _ = 1, 3 do
    dist.barrier()
    local t0 = clock()
    for _ = 1, reps do dist.all_reduce(t) end
    local el = T.tensor({ (clock() - t0) / reps }, { dtype = T.float64 })
    dist.all_reduce(el, { op = "max" })
    best = math.min(best, el:item())
  end
  if dist.get_rank() == 0 then print(string.format("%d %d %.9f", bytes, reps, best)) end
end
dist.destroy_process_group()
