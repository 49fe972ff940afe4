-- tests/dist/collectives.lua: every collective of T.distributed, on several
-- dtypes and shapes (0-d, empty, contiguous, transposed, offset views),
-- against values computed locally from what every rank contributed; async
-- handles, point to point, subgroups, bad use. Run by tests/dist/run.sh
-- under mpirun -np 2 and -np 3.
local T = require "ember"
local H = dofile((arg and arg[0] or "tests/dist/collectives.lua"):gsub("[^/]*$", "") .. "harness.lua")
local dist = T.distributed
local rank, n = H.init(30)

local DTYPES = { T.float32, T.float64, T.float16, T.bfloat16, T.int64, T.int32, T.int16, T.int8, T.uint8, T.bool }
local SHAPES = { "scalar", "vector", "transposed", "empty", "offset" }

-- rank r's input: small values, so that sums and products of up to 3 ranks
-- are exact in every dtype
local function values(r, numel, dt)
  local v = (T.arange(numel, { dtype = T.float64 }) % 3) + 1 + r
  if dt == T.bool then return ((T.arange(numel) + r) % 2):eq(0) end
  if dt.is_floating_point then v = v * 0.5 end
  return v:to(dt)
end
-- the same values laid out as shape kind says
local function make(kind, r, dt)
  if kind == "scalar" then return values(r, 1, dt):reshape({}) end
  if kind == "vector" then return values(r, 5, dt) end
  if kind == "empty" then return values(r, 0, dt) end
  if kind == "transposed" then return values(r, 12, dt):view(3, 4):t() end -- (4, 3), not contiguous
  local big = T.zeros(10, { dtype = dt })                                      -- a contiguous view at an offset
  local v = big:narrow(1, 3, 4)
  v:copy_(values(r, 4, dt))
  return v, big
end
-- op over every rank's input, in float64 (then cast)
local function expected(kind, dt, op, ranks)
  ranks = ranks or {}
  if #ranks == 0 then for r = 0, n - 1 do ranks[#ranks + 1] = r end end
  local acc
  for _, r in ipairs(ranks) do
    local x = make(kind, r, dt)
    x = dt == T.bool and x:to(T.int64) or (dt.is_floating_point and x:double() or x) -- integers wrap as MPI does
    if not acc then acc = x:clone()
    elseif op == "sum" or op == "avg" then acc = acc + x
    elseif op == "prod" then acc = acc * x
    elseif op == "max" then acc = T.maximum(acc, x)
    elseif op == "min" then acc = T.minimum(acc, x) end
  end
  if op == "avg" then acc = acc / #ranks end
  if dt == T.bool then return acc:ne(0) end
  return acc:to(dt)
end
local function ops_for(dt)
  if dt.is_floating_point then return { "sum", "avg", "max", "min", "prod" } end
  return { "sum", "max", "min", "prod" }
end

-- an "offset" view's base (make): written in place, the rest of it untouched
local function untouched(base, dt, what)
  if not base then return end
  local z = T.zeros(2, { dtype = dt })
  H.assert(T.equal(base:narrow(1, 1, 2), z) and T.equal(base:narrow(1, 7, 2), z), "%s: wrote outside the view", what)
end

H.check("all_reduce: every dtype, op and layout", function()
  for _, dt in ipairs(DTYPES) do
    for _, kind in ipairs(SHAPES) do
      for _, op in ipairs(ops_for(dt)) do
        local t, base = make(kind, rank, dt)
        local shape = t.shape:totable()
        dist.all_reduce(t, { op = op })
        local what = string.format("%s %s %s", dt.name, kind, op)
        H.assert(#t.shape:totable() == #shape, "%s: shape changed", what)
        local tol = (dt == T.float16 or dt == T.bfloat16) and 0 or nil
        H.same(t, expected(kind, dt, op), what, tol)
        untouched(base, dt, what)
      end
    end
  end
end)

H.check("all_reduce(t) with no options: every dtype and layout, a completed handle, the version bumped", function()
  -- under LuaJIT the world group takes the FFI path (distributed.lua's
  -- fast path) for contiguous CPU tensors of the dtypes MPI sums as they
  -- are; bool (a logical or), float16/bfloat16 (staged) and the views that
  -- are not contiguous take the checked path: every one must sum the same
  -- (not under EMBER_DISTRIBUTED_DEBUG=DETAIL, whose check runs first)
  H.assert(dist._all_reduce_ffi() == (jit ~= nil and n > 1 and not dist._detail()),
    "the FFI path is %s under %s", tostring(dist._all_reduce_ffi()), _VERSION)
  for _, dt in ipairs(DTYPES) do
    for _, kind in ipairs(SHAPES) do
      local t, base = make(kind, rank, dt)
      local w = dist.all_reduce(t)
      local what = string.format("%s %s", dt.name, kind)
      H.same(t, expected(kind, dt, "sum"), what, (dt == T.float16 or dt == T.bfloat16) and 0 or nil)
      H.assert(w:is_completed() and w:wait() and w:is_success(), "%s: the handle is not completed", what)
      untouched(base, dt, what)
    end
  end
  -- written in place: a tensor saved for backward and then reduced makes
  -- backward refuse, as any in-place write does
  local w = T.ones(4, { requires_grad = true })
  local v = T.full({ 4 }, rank + 1)
  local loss = (w * v):sum()
  dist.all_reduce(v)
  H.errors(function() loss:backward() end, "modified by an inplace operation")
  -- not a tensor: the checked path's error
  H.errors(function() dist.all_reduce(42) end, "all_reduce: expected a tensor for tensor, got number")
end)

H.check("all_reduce: blocks reused between calls (sizes down and up, async ones in flight, avg blocking)", function()
  -- each schedule's block is kept for the next call when large enough:
  -- calls of falling and rising sizes, with two async ones in flight at
  -- once (two blocks) and blocking ones between, must each get the sum
  for _, numel in ipairs { 300000, 1000, 300000, 5, 500000, 70001 } do
    local a = T.full({ numel }, rank + 1, { dtype = T.float32 })
    local b = T.full({ numel + 7 }, 2 * (rank + 1), { dtype = T.float64 })
    local wa = dist.all_reduce(a, { async_op = true })
    local wb = dist.all_reduce(b, { async_op = true })
    local c = T.full({ numel }, rank + 1, { dtype = T.float32 })
    dist.all_reduce(c, { op = "avg" })
    wb:wait()
    wa:wait()
    local s = n * (n + 1) / 2
    H.same(a, T.full({ numel }, s, { dtype = T.float32 }), "async float32 sum of " .. numel)
    H.same(b, T.full({ numel + 7 }, 2 * s, { dtype = T.float64 }), "async float64 sum of " .. numel + 7)
    H.same(c, T.full({ numel }, s / n, { dtype = T.float32 }), "blocking avg of " .. numel)
  end
end)

H.check("all_reduce: the schedules (recursive doubling, ring) at many sizes, the same bytes on every rank", function()
  -- sizes around the chunking (fewer elements than ranks, remainders) and
  -- past the recursive-doubling limit (64 KB), float sums whose rounding
  -- depends on the order: every rank must hold the same bits
  for _, numel in ipairs { 0, 1, 2, 5, 1000, 16384, 16385, 70001 } do
    local x = ((T.arange(numel, { dtype = T.float64 }) * (rank + 1) * 0.7311):sin() * 1e3):float()
    local want = T.zeros(numel, { dtype = T.float64 })
    for r = 0, n - 1 do want = want + ((T.arange(numel, { dtype = T.float64 }) * (r + 1) * 0.7311):sin() * 1e3):float():double() end
    local y = x:clone()
    dist.all_reduce(y)
    if numel > 0 then
      H.assert((y:double() - want):abs():max():item() <= 1e-3 * n, "sum of %d elements off", numel)
    end
    local all = {}
    for i = 1, n do all[i] = T.zeros(numel) end
    dist.all_gather(all, y)
    for i = 2, n do H.assert(T.equal(all[i], all[1]), "rank %d's sum of %d elements differs in its bits from rank 0's", i - 1, numel) end
    local m = x:clone()
    dist.all_reduce(m, { op = "max" })
    if numel > 0 then
      local mw = x:clone()
      for r = 0, n - 1 do
        mw = T.maximum(mw, ((T.arange(numel, { dtype = T.float64 }) * (r + 1) * 0.7311):sin() * 1e3):float())
      end
      H.same(m, mw, "max of " .. numel)
    end
    local k = T.full({ numel }, rank + 2, { dtype = T.int64 })
    dist.all_reduce(k, { op = "prod" })
    local p = 1
    for r = 0, n - 1 do p = p * (r + 2) end
    H.same(k, T.full({ numel }, p, { dtype = T.int64 }), "int64 prod of " .. numel)
  end
end)

H.check("all_reduce: async ones in flight waited in different orders on different ranks", function()
  local ws, ts = {}, {}
  for i = 1, 4 do
    ts[i] = T.full({ i == 4 and 100000 or 10 * i }, i + rank, { dtype = T.float32 })
    ws[i] = dist.all_reduce(ts[i], { async_op = true })
  end
  -- rank 0 waits oldest first, the others newest first
  for j = 1, 4 do
    local i = rank == 0 and j or 5 - j
    H.assert(ws[i]:wait(), "wait")
  end
  for i = 1, 4 do
    local want = 0
    for r = 0, n - 1 do want = want + i + r end
    H.same(ts[i], T.full({ ts[i]:numel() }, want, { dtype = T.float32 }), "async all_reduce " .. i)
  end
end)

H.check("all_reduce: a transposed view writes through to its base", function()
  local base = values(rank, 12, T.float32):view(3, 4)
  dist.all_reduce(base:t())
  H.same(base, expected("transposed", T.float32, "sum"):t(), "base")
end)

H.check("all_reduce: bool and integer bit ops", function()
  local b = T.tensor({ rank == 0, true, false }, { dtype = T.bool })
  dist.all_reduce(b, { op = "max" })
  H.same(b, T.tensor({ true, true, false }, { dtype = T.bool }), "bool max (any)")
  local c = T.tensor({ rank == 0, true, false }, { dtype = T.bool })
  dist.all_reduce(c, { op = "min" })
  H.same(c, T.tensor({ false, true, false }, { dtype = T.bool }), "bool min (all)")
  local x = T.tensor({ 2 ^ rank, 7 }, { dtype = T.int32 })
  dist.all_reduce(x, { op = "bor" })
  H.same(x, T.tensor({ 2 ^ n - 1, 7 }, { dtype = T.int32 }), "bor")
  local y = T.tensor({ 1, 3 }, { dtype = T.int64 })
  dist.all_reduce(y, { op = "bxor" })
  H.same(y, T.tensor({ n % 2, n % 2 == 1 and 3 or 0 }, { dtype = T.int64 }), "bxor")
end)

H.check("broadcast from every rank, every dtype and layout", function()
  for src = 0, n - 1 do
    for _, dt in ipairs(DTYPES) do
      for _, kind in ipairs(SHAPES) do
        local t = make(kind, rank, dt)
        dist.broadcast(t, { src = src })
        H.same(t, make(kind, src, dt), string.format("%s %s src %d", dt.name, kind, src))
      end
    end
  end
  local t = make("vector", rank, T.float32)
  dist.broadcast(t, n - 1) -- the positional form
  H.same(t, make("vector", n - 1, T.float32), "broadcast(t, src)")
end)

H.check("reduce to the last rank; the others keep their input", function()
  local dst = n - 1
  for _, dt in ipairs { T.float32, T.float16, T.int64, T.bool } do
    for _, kind in ipairs { "vector", "transposed", "scalar" } do
      local t = make(kind, rank, dt)
      dist.reduce(t, { dst = dst, op = "sum" })
      local want = rank == dst and expected(kind, dt, "sum") or make(kind, rank, dt)
      H.same(t, want, dt.name .. " " .. kind)
    end
  end
  local t = make("vector", rank, T.float64)
  dist.reduce(t, { dst = 0, op = "avg" })
  if rank == 0 then H.same(t, expected("vector", T.float64, "avg"), "avg at dst 0") end
end)

H.check("all_gather and all_gather_into_tensor", function()
  for _, dt in ipairs(DTYPES) do
    for _, kind in ipairs { "vector", "transposed", "scalar", "empty" } do
      local t = make(kind, rank, dt)
      local list = {}
      for i = 1, n do list[i] = T.zeros(t.shape, { dtype = dt }) end
      dist.all_gather(list, t)
      for i = 1, n do H.same(list[i], make(kind, i - 1, dt), string.format("%s %s [%d]", dt.name, kind, i)) end
    end
  end
  local t = make("transposed", rank, T.float32) -- (4, 3)
  local cat = T.zeros(4 * n, 3)
  dist.all_gather_into_tensor(cat, t)
  local stacked = T.zeros(n, 4, 3):transpose(2, 3) -- a non-contiguous output
  dist.all_gather_into_tensor(stacked, t:t())
  local parts, tparts = {}, {}
  for r = 0, n - 1 do
    parts[#parts + 1] = make("transposed", r, T.float32)
    tparts[#tparts + 1] = parts[#parts]:t()
  end
  H.same(cat, T.cat(parts), "concatenated")
  H.same(stacked:contiguous(), T.stack(tparts), "stacked into a transposed output")
  H.errors(function() dist.all_gather_into_tensor(T.zeros(5), t) end,
    "all_gather_into_tensor: output_tensor has shape (5) (5 elements), expected " .. 12 * n)
  H.errors(function() dist.all_gather({ T.zeros(4, 3) }, t) end,
    "all_gather: tensor_list holds 1 tensors, expected " .. n .. " (the group's size)")
end)

H.check("reduce_scatter and reduce_scatter_tensor", function()
  for _, dt in ipairs { T.float32, T.float64, T.bfloat16, T.int32 } do
    for _, op in ipairs(dt.is_floating_point and { "sum", "avg", "max" } or { "sum", "min" }) do
      -- rank r's input_list[i] = values(r * 10 + i); output = op over r of input_list[rank + 1]
      local list = {}
      for i = 1, n do list[i] = values(rank + i, 6, dt):view(2, 3):t() end
      local out = T.zeros(3, 2, { dtype = dt })
      dist.reduce_scatter(out, list, { op = op })
      local acc
      for r = 0, n - 1 do
        local x = values(r + rank + 1, 6, dt):view(2, 3):t():double()
        if not acc then acc = x
        elseif op == "sum" or op == "avg" then acc = acc + x
        elseif op == "max" then acc = T.maximum(acc, x)
        else acc = T.minimum(acc, x) end
      end
      if op == "avg" then acc = acc / n end
      H.same(out, acc:to(dt), dt.name .. " reduce_scatter " .. op)
      local flat = T.cat((function() local f = {} for i = 1, n do f[i] = list[i]:reshape(-1) end return f end)())
      local out2 = T.zeros(6, { dtype = dt })
      dist.reduce_scatter_tensor(out2, flat, { op = op })
      H.same(out2, acc:to(dt):reshape(-1), dt.name .. " reduce_scatter_tensor " .. op)
    end
  end
  H.errors(function() dist.reduce_scatter_tensor(T.zeros(2), T.zeros(3)) end,
    "reduce_scatter_tensor: input has shape (3) (3 elements), expected " .. 2 * n .. " elements")
end)

H.check("all_to_all and all_to_all_single", function()
  for _, dt in ipairs { T.float32, T.int64, T.float16, T.bool } do
    local ins, outs = {}, {}
    for i = 1, n do
      ins[i] = values(rank * 10 + i, 4, dt):view(2, 2):t()
      outs[i] = T.zeros(2, 2, { dtype = dt })
    end
    dist.all_to_all(outs, ins)
    for i = 1, n do
      H.same(outs[i], values((i - 1) * 10 + rank + 1, 4, dt):view(2, 2):t(), dt.name .. " all_to_all [" .. i .. "]")
    end
    local src = values(rank, 3 * n, dt)
    local dst = T.zeros(3 * n, { dtype = dt })
    dist.all_to_all_single(dst, src)
    for i = 1, n do
      H.same(dst:narrow(1, (i - 1) * 3 + 1, 3), values(i - 1, 3 * n, dt):narrow(1, rank * 3 + 1, 3),
        dt.name .. " all_to_all_single block " .. i)
    end
  end
end)

H.check("uneven all_to_all and all_to_all_single (split sizes)", function()
  -- rank r sends (r + j) rows of 2 to rank j (0-based): block sizes differ
  -- per pair; each row holds 100 * sender + 10 * receiver + row
  for _, dt in ipairs { T.float32, T.int64, T.float64 } do
    local isz, osz, rows_in, rows_out = {}, {}, {}, {}
    for j = 0, n - 1 do
      isz[j + 1], osz[j + 1] = rank + j, j + rank
      local b = T.zeros(rank + j, 2, { dtype = dt })
      for r = 1, rank + j do b[r]:fill_(100 * rank + 10 * j + r) end
      rows_in[j + 1] = b
      rows_out[j + 1] = T.zeros(j + rank, 2, { dtype = dt })
    end
    dist.all_to_all(rows_out, rows_in)
    for j = 0, n - 1 do
      H.assert(rows_out[j + 1].shape[1] == j + rank, "shape")
      for r = 1, j + rank do
        H.same(rows_out[j + 1][r], T.full({ 2 }, 100 * j + 10 * rank + r, { dtype = dt }),
          dt.name .. " uneven all_to_all from " .. j .. " row " .. r)
      end
    end
    local src = T.cat(rows_in)
    local dst = T.zeros(src.shape[1] + 0, 2, { dtype = dt }) -- sum_j (rank + j) rows either way
    dist.all_to_all_single(dst, src:t():contiguous():t(), { input_split_sizes = isz, output_split_sizes = osz })
    H.same(dst, T.cat(rows_out), dt.name .. " uneven all_to_all_single")
  end
  -- one side given, the other even
  local even = T.zeros(2 * n, 1)
  dist.all_to_all_single(even, T.full({ 2 * n, 1 }, rank, { dtype = T.float32 }), { input_split_sizes = (function()
    local l = {} for i = 1, n do l[i] = 2 end return l end)() })
  for j = 0, n - 1 do H.same(even:narrow(1, 2 * j + 1, 2), T.full({ 2, 1 }, j, { dtype = T.float32 }), "one-sided splits") end
  -- a mismatch is an error on every rank, and the group goes on
  local bad = {}
  for j = 1, n do bad[j] = (rank == 0 and j == 2) and 2 or 1 end
  H.errors(function() dist.all_to_all_single(T.zeros(n + (rank == 1 and 0 or 0)), T.zeros(n + (rank == 0 and 1 or 0)),
    { input_split_sizes = bad, output_split_sizes = (function() local l = {} for i = 1, n do l[i] = 1 end return l end)() }) end,
    "all_to_all_single: ")
  local t2 = T.ones(2)
  dist.all_reduce(t2)
  H.same(t2, T.full({ 2 }, n, { dtype = T.float32 }), "the group goes on after a split mismatch")
  H.errors(function() dist.all_to_all_single(T.zeros(n), T.zeros(n), { input_split_sizes = { 1 } }) end,
    "all_to_all_single: input_split_sizes must be a list of " .. n .. " row counts")
  H.errors(function() dist.all_to_all_single(T.zeros(n), T.zeros(n + 1), { input_split_sizes = (function()
    local l = {} for i = 1, n do l[i] = 1 end return l end)() }) end, "input_split_sizes sums to " .. n .. " rows, but input has " .. n + 1 .. " rows")
end)

H.check("gather and scatter", function()
  local dst = n - 1
  for _, dt in ipairs { T.float32, T.int8, T.bfloat16 } do
    local t = make("transposed", rank, dt)
    local list
    if rank == dst then
      list = {}
      for i = 1, n do list[i] = T.zeros(4, 3, { dtype = dt }) end
    end
    dist.gather(t, { gather_list = list, dst = dst })
    if rank == dst then
      for i = 1, n do H.same(list[i], make("transposed", i - 1, dt), dt.name .. " gather [" .. i .. "]") end
    end
    local out = T.zeros(3, 4, { dtype = dt }):t()
    local sl
    if rank == 0 then
      sl = {}
      for i = 1, n do sl[i] = make("transposed", i + 5, dt) end
    end
    dist.scatter(out, { scatter_list = sl, src = 0 })
    H.same(out, make("transposed", rank + 6, dt), dt.name .. " scatter")
  end
  if rank ~= dst then
    H.errors(function() dist.gather(T.zeros(2), { gather_list = { T.zeros(2) }, dst = dst }) end,
      "gather: gather_list must not be given on a rank that is not the destination")
  end
end)

H.check("async handles: wait and is_completed", function()
  local works, ts = {}, {}
  for i = 1, 6 do
    ts[i] = values(rank + i, 1000, T.float32)
    works[i] = dist.all_reduce(ts[i], { op = "sum", async_op = true })
  end
  local bw = dist.barrier { async_op = true }
  for i = 6, 1, -1 do
    H.assert(works[i]:wait() == true, "wait returns true")
    H.assert(works[i]:is_completed(), "is_completed after wait")
    local want = values(0 + i, 1000, T.float64)
    for r = 1, n - 1 do want = want + values(r + i, 1000, T.float64) end
    H.same(ts[i], want:float(), "async all_reduce " .. i)
  end
  while not bw:is_completed() do end
  local t = make("transposed", rank, T.float16)
  local w = dist.broadcast(t, { src = 0, async_op = true })
  w:wait()
  H.same(t, make("transposed", 0, T.float16), "async broadcast into a non-contiguous float16")
  local list = {}
  for i = 1, n do list[i] = T.zeros(5) end
  local gw = dist.all_gather(list, make("vector", rank, T.float32), { async_op = true })
  while not gw:is_completed() do end
  for i = 1, n do H.same(list[i], make("vector", i - 1, T.float32), "async all_gather [" .. i .. "]") end
end)

H.check("send / recv / isend / irecv around a ring", function()
  local right, left = (rank + 1) % n, (rank - 1) % n
  for _, dt in ipairs { T.float32, T.int64, T.float16, T.bool } do
    local out = make("transposed", rank, dt)
    local w = dist.isend(out, { dst = right, tag = 3 })
    local got = T.zeros(3, 4, { dtype = dt }):t()
    local from = dist.recv(got, { src = left, tag = 3 })
    w:wait()
    H.assert(from == left, "recv returned %s, expected %d", tostring(from), left)
    H.same(got, make("transposed", left, dt), dt.name .. " ring")
  end
  -- any source: rank 0 receives from every other rank
  if rank == 0 then
    local seen = {}
    for _ = 1, n - 1 do
      local t = T.zeros(1, { dtype = T.int32 })
      local s = dist.recv(t, { tag = 7 })
      H.assert(t:item() == s * 100, "payload %d from %d", t:item(), s)
      seen[s] = true
    end
    for r = 1, n - 1 do H.assert(seen[r], "nothing from rank %d", r) end
  else
    dist.send(T.tensor({ rank * 100 }, { dtype = T.int32 }), 0, { tag = 7 })
  end
  local r = T.zeros(2)
  local rw = dist.irecv(r, { src = left })
  dist.send(T.full({ 2 }, rank, { dtype = T.float32 }), { dst = right })
  rw:wait()
  H.assert(rw:source_rank() == left, "irecv source_rank")
  H.same(r, T.full({ 2 }, left, { dtype = T.float32 }), "irecv payload")
  H.errors(function() dist.send(T.zeros(1), rank) end, "send: dst " .. rank .. " is this process's own rank")
  H.errors(function() dist.send(T.zeros(1), n) end, "send: dst " .. n .. " is out of range: ranks are 0.." .. n - 1)
end)

H.check("subgroups: members run the collective, others do nothing", function()
  local members = { 0, n - 1 }
  local g = dist.new_group(members)
  local member = rank == 0 or rank == n - 1
  H.assert(dist.get_world_size(g) == (member and 2 or -1), "group size")
  H.assert(dist.get_rank(g) == (rank == 0 and 0 or rank == n - 1 and 1 or -1), "group rank")
  local t = T.full({ 3 }, rank + 1, { dtype = T.float32 })
  dist.all_reduce(t, { group = g })
  H.same(t, T.full({ 3 }, member and (1 + n) or (rank + 1), { dtype = T.float32 }), "group all_reduce")
  local b = T.full({ 2 }, rank, { dtype = T.int64 })
  dist.broadcast(b, { src = n - 1, group = g }) -- src is a global rank
  H.same(b, T.full({ 2 }, member and n - 1 or rank, { dtype = T.int64 }), "group broadcast")
  if member then
    H.errors(function() dist.broadcast(b, { src = 5, group = g }) end, "broadcast: src 5 is out of range")
    if n > 2 then
      H.errors(function() dist.broadcast(b, { src = 1, group = g }) end, "broadcast: src 1 is not in the group (ranks 0, " .. n - 1 .. ")")
    end
    local list = { T.zeros(1), T.zeros(1) }
    dist.all_gather(list, T.full({ 1 }, rank, { dtype = T.float32 }), { group = g })
    H.same(list[2], T.full({ 1 }, n - 1, { dtype = T.float32 }), "group all_gather")
  end
  -- a second group over the whole world, and the world again after it
  local all = dist.new_group()
  local x = T.ones(2)
  dist.all_reduce(x, { group = all })
  H.same(x, T.full({ 2 }, n, { dtype = T.float32 }), "all-ranks group")
  dist.destroy_process_group(g)
  if member then
    H.errors(function() dist.all_reduce(x, { group = g }) end, "all_reduce: the process group has been destroyed")
  end
  dist.destroy_process_group(all)
  dist.barrier()
end)

H.check("a group without a timeout (math.huge) takes MPI's blocking forms", function()
  local g = dist.new_group(nil, { timeout = math.huge })
  for _, dt in ipairs { T.float32, T.int64, T.float16 } do
    for _, kind in ipairs { "vector", "transposed", "offset" } do
      local t = make(kind, rank, dt)
      dist.all_reduce(t, { group = g })
      H.same(t, expected(kind, dt, "sum"), "all_reduce " .. dt.name .. " " .. kind)
      local b = make(kind, rank, dt)
      dist.broadcast(b, { src = n - 1, group = g })
      H.same(b, make(kind, n - 1, dt), "broadcast " .. dt.name .. " " .. kind)
    end
  end
  local a = make("vector", rank, T.float32)
  dist.all_reduce(a, { op = "avg", group = g })
  H.same(a, expected("vector", T.float32, "avg"), "avg")
  dist.barrier { group = g }
  local w = dist.all_reduce(T.ones(3), { group = g, async_op = true })
  H.assert(w:wait(), "async on a group without a timeout")
  dist.destroy_process_group(g)
end)

H.check("bad use is a clear error on every rank", function()
  local t = T.zeros(3)
  H.errors(function() dist.all_reduce(t, { op = "mean" }) end, "all_reduce: unknown op 'mean'")
  H.errors(function() dist.all_reduce(t, { asyncop = true }) end, "all_reduce: unknown option 'asyncop'")
  H.errors(function() dist.broadcast(t, { src = n }) end, "broadcast: src " .. n .. " is out of range")
  H.errors(function() dist.reduce(t, { dst = -1 }) end, "reduce: dst -1 is out of range")
  H.errors(function() dist.all_to_all({ T.zeros(2) }, { T.zeros(2) }) end,
    "all_to_all: input_tensor_list holds 1 tensors, expected " .. n)
  local ins = {}
  for i = 1, n do ins[i] = T.zeros(2) end
  local outs = {}
  for i = 1, n do outs[i] = T.zeros(2, { dtype = T.float64 }) end
  H.errors(function() dist.all_to_all(outs, ins) end, "all_to_all: output_tensor_list[1] has dtype float64")
  H.errors(function() dist.scatter(t, { src = 0, scatter_list = { t } }) end,
    rank == 0 and "scatter: scatter_list holds 1 tensors" or "scatter: scatter_list must not be given")
end)

H.done()
