-- tests/dist/harness.lua: checks for scripts run under mpirun (tests/dist/run.sh).
-- check(name, fn) runs fn on every rank; the ranks agree on the outcome
-- (an all_reduce of the failures), rank 0 prints "ok name" or "FAIL name",
-- and a failing rank prints its error. done() prints rank 0's summary line
-- "dist-cases: N passed, N failed" and ends the script.
local T = require "ember"
local dist = T.distributed
local H = { pass = 0, fail = 0 }

-- DIST_WORLD_TIMEOUT=inf (tests/dist/run.sh) runs a script's world group
-- with timeout = math.huge: MPI's blocking forms
function H.init(timeout)
  if os.getenv("DIST_WORLD_TIMEOUT") == "inf" then timeout = math.huge end
  dist.init_process_group { backend = "mpi", timeout = timeout or 30 }
  H.rank, H.size = dist.get_rank(), dist.get_world_size()
  return H.rank, H.size
end

function H.check(name, fn)
  local ok, err = pcall(fn)
  if not ok then
    io.stderr:write(string.format("rank %d: %s: %s\n", H.rank, name, tostring(err)))
  end
  local bad = T.tensor({ ok and 0 or 1 }, { dtype = T.int32 })
  dist.all_reduce(bad)
  local failed = bad:item()
  if failed == 0 then H.pass = H.pass + 1 else H.fail = H.fail + 1 end
  if H.rank == 0 then
    print(string.format("%s %s (np %d)%s", failed == 0 and "ok  " or "FAIL", name, H.size,
      failed == 0 and "" or string.format(" [%d rank(s) failed]", failed)))
    io.stdout:flush()
  end
end

function H.assert(cond, fmt, ...)
  if not cond then error(string.format(fmt or "assertion failed", ...), 2) end
end
-- a and b hold the same values (exactly, or within tol)
function H.same(a, b, what, tol)
  H.assert(T.is_tensor(a) and T.is_tensor(b), "%s: not tensors", what or "values")
  H.assert(a.dtype == b.dtype, "%s: dtype %s, expected %s", what or "values", a.dtype.name, b.dtype.name)
  H.assert(a:numel() == b:numel(), "%s: %d elements, expected %d", what or "values", a:numel(), b:numel())
  if a:numel() == 0 then return end
  if tol then
    local d = (a:double() - b:double()):abs():max():item()
    H.assert(d <= tol, "%s: differ by %g (tolerance %g)", what or "values", d, tol)
  else
    H.assert(T.equal(a:reshape(-1), b:reshape(-1)), "%s: %s, expected %s", what or "values",
      tostring(a:reshape(-1)), tostring(b:reshape(-1)))
  end
end
function H.errors(fn, pattern)
  local ok, err = pcall(fn)
  H.assert(not ok, "expected an error matching '%s'", pattern)
  H.assert(tostring(err):find(pattern, 1, true), "error '%s' does not contain '%s'", tostring(err), pattern)
end

function H.done()
  if H.rank == 0 then print(string.format("dist-cases: %d passed, %d failed", H.pass, H.fail)) end
  io.stdout:flush()
  dist.barrier()
  dist.destroy_process_group()
end

return H
