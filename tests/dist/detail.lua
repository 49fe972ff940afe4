-- tests/dist/detail.lua: with EMBER_DISTRIBUTED_DEBUG=DETAIL (tests/dist/run.sh
-- sets it) the ranks compare each collective's operation, element count and
-- dtype first: a mismatch is an error on every rank, and the group goes on.
local T = require "ember"
local H = dofile((arg and arg[0] or "tests/dist/detail.lua"):gsub("[^/]*$", "") .. "harness.lua")
local dist = T.distributed
local rank, n = H.init(30)

H.check("DETAIL is on", function() H.assert(dist._detail(), "EMBER_DISTRIBUTED_DEBUG=DETAIL is not set") end)

H.check("different element counts are an error on every rank", function()
  H.errors(function() dist.all_reduce(T.ones(4 + rank)) end,
    "all_reduce: the ranks of the group disagree on the element counts (4 .. " .. 3 + n .. "); this rank (" .. rank ..
    ") passes " .. 4 + rank .. " elements of float32")
end)

H.check("different dtypes and different operations too", function()
  H.errors(function() dist.broadcast(rank == 0 and T.ones(3) or T.ones(3, { dtype = T.float64 }), 0) end,
    "broadcast: the ranks of the group disagree on the dtypes")
  H.errors(function()
    if rank == 0 then dist.all_reduce(T.ones(2)) else dist.broadcast(T.ones(2), 0) end
  end, "the ranks of the group disagree on the operations (all_reduce .. broadcast)")
end)

H.check("matching calls still run", function()
  local t = T.ones(3)
  dist.all_reduce(t)
  H.same(t, T.full({ 3 }, n, { dtype = T.float32 }), "sum")
  local list = {}
  for i = 1, n do list[i] = T.zeros(2) end
  dist.all_gather(list, T.full({ 2 }, rank, { dtype = T.float32 }))
  H.same(list[n], T.full({ 2 }, n - 1, { dtype = T.float32 }), "all_gather")
end)

H.done()
