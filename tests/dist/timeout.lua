-- tests/dist/timeout.lua: one rank skips a collective. Every other rank
-- must raise "all_reduce: timed out after 2 s (rank r of n)" instead of
-- waiting forever, later calls must refuse to run on the broken group,
-- and the job must end (MPI_Abort at exit) with a non-zero status.
-- tests/dist/run.sh checks the output, the status and the time taken.
local T = require "ember"
local dist = T.distributed
dist.init_process_group { backend = "mpi", timeout = 2 }
local rank = dist.get_rank()
if rank == 1 then
  print("rank 1: skipping the all_reduce")
  io.stdout:flush()
  -- busy elsewhere (no MPI call), long past the timeout: mpirun ends it
  -- when the other ranks abort the job
  local t0 = os.time()
  while os.time() - t0 < 60 do end
  print("rank 1: woke up (the job was not aborted)")
else
  local ok, err = pcall(dist.all_reduce, T.ones(4))
  print(string.format("rank %d: all_reduce: %s", rank, tostring(err)))
  local ok2, err2 = pcall(dist.broadcast, T.ones(4), { src = 0 })
  print(string.format("rank %d: then: %s", rank, tostring(err2)))
  io.stdout:flush()
  -- the first rank to exit aborts the job (MPI_Abort at exit), which would
  -- kill a rank still inside its own 2 s wait before it reports: stay a
  -- while, so every waiting rank reaches its timeout and says so
  local t0 = os.time()
  while os.time() - t0 < 6 do end
end
io.stdout:flush()
