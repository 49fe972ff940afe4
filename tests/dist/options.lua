-- tests/dist/options.lua: every entry point of T.distributed honours or
-- refuses an option (issue 21 item 5; the live walk of the rest of ember is
-- tests/lua/options_live_spec.lua, which cannot make a process group). The
-- list is the live one: every function in T.distributed when this runs;
-- each needs a recipe below (an entry without one fails). For each entry
-- every rank makes the call plain (it must succeed), then with
-- {zz_unknown = 1} added (it must raise an error naming the op and the key,
-- or saying that the op takes no options / no more arguments), then with
-- {out = o} added (refused naming out: no collective has an out=). The
-- refusals happen before any communication, so every rank refuses alike.
local T = require "ember"
local H = dofile((arg and arg[0] or "tests/dist/options.lua"):gsub("[^/]*$", "") .. "harness.lua")
local dist = T.distributed
local unpack = table.unpack or unpack
local rank, n = H.init(30)

local function list(f) local l = {} for i = 1, n do l[i] = f(i) end return l end
local group = dist.new_group(list(function(i) return i - 1 end))
-- recipes: a function returning the arguments of one valid call (fresh
-- tensors each time). Point to point pairs rank 0 with rank 1; other ranks
-- make their own valid call, a send to themselves being refused by MPI
-- semantics, so send/recv use the pair and the others skip the plain call.
local peer = rank == 0 and 1 or (rank == 1 and 0 or nil)
local R = {
  all_reduce = function() return T.ones(3) end,
  broadcast = function() return T.ones(3), 0 end,
  reduce = function() return T.ones(3), { dst = 0 } end,
  all_gather = function() return list(function() return T.zeros(2) end), T.ones(2) end,
  all_gather_into_tensor = function() return T.zeros(2 * n), T.ones(2) end,
  reduce_scatter = function() return T.zeros(2), list(function() return T.ones(2) end) end,
  reduce_scatter_tensor = function() return T.zeros(2), T.ones(2 * n) end,
  all_to_all = function() return list(function() return T.zeros(2) end), list(function() return T.ones(2) end) end,
  all_to_all_single = function() return T.zeros(2 * n), T.ones(2 * n) end,
  gather = function()
    return T.ones(2), { dst = 0, gather_list = rank == 0 and list(function() return T.zeros(2) end) or nil }
  end,
  scatter = function()
    return T.zeros(2), { src = 0, scatter_list = rank == 0 and list(function() return T.ones(2) end) or nil }
  end,
  barrier = function() return end,
  get_rank = function() return end,
  get_world_size = function() return end,
  get_backend = function() return end,
  is_initialized = function() return end,
  is_available = function() return end,
  is_mpi_available = function() return end,
  is_nccl_available = function() return end,
  is_gloo_available = function() return end,
  get_global_rank = function() return group, 0 end,
  get_group_rank = function() return group, 0 end,
  get_process_group_ranks = function() return group end,
  new_group = function() return list(function(i) return i - 1 end) end,
}
-- entries whose plain call cannot be repeated inside this script, or that
-- only this rank's partner can answer: checked with the extra argument
-- only, or elsewhere (the reason says where)
local skip = {
  init_process_group = "already initialized here; its options are checked in tests/lua/distributed_spec.lua",
  destroy_process_group = "ends the group; H.done() calls it",
  _abort = "ends the job (checked by run.sh's failing-rank case)",
  _detail = "internal: reports EMBER_DISTRIBUTED_DEBUG",
  _all_reduce_ffi = "internal: reports whether all_reduce(t) takes the FFI path",
}
-- point to point: plain call between ranks 0 and 1; the refusals on every rank
local P2P = { send = true, recv = true, isend = true, irecv = true }

local names = {}
for k, v in pairs(dist) do if type(v) == "function" then names[#names + 1] = k end end
table.sort(names)

local function refused(name, err, key)
  err = tostring(err)
  return err:find(name, 1, true) and (err:find("'" .. key .. "'", 1, true) or err:find("takes no options", 1, true)
    or err:find("takes at most", 1, true))
end

for _, name in ipairs(names) do
  local fn = dist[name]
  if skip[name] then
    -- counted as checked elsewhere; nothing to run
  elseif P2P[name] then
    H.check(name .. ": a plain call between ranks 0 and 1", function()
      if peer == nil then return end
      local sends = rank == 0
      if name == "send" or name == "recv" then
        if sends then dist.send(T.ones(2), peer) else dist.recv(T.zeros(2), peer) end
      else
        local w = sends and dist.isend(T.ones(2), peer) or dist.irecv(T.zeros(2), peer)
        w:wait()
      end
    end)
    H.check(name .. ": refuses an unknown option and out=", function()
      for _, key in ipairs { "zz_unknown", "out" } do
        local ok, err = pcall(fn, T.ones(2), { dst = 0, src = 0, [key] = 1 })
        H.assert(not ok and refused(name, err, key), "%s accepted or unclearly refused '%s': %s", name, key, tostring(err))
      end
    end)
  elseif not R[name] then
    H.check(name .. ": has a recipe", function() error("no recipe for T.distributed." .. name) end)
  else
    H.check(name .. ": runs its recipe", function() fn(R[name]()) end)
    for _, key in ipairs { "zz_unknown", "out" } do
      H.check(name .. ": refuses " .. (key == "out" and "out=" or "an unknown option"), function()
        local args = { R[name]() }
        local k = select("#", R[name]())
        local last = args[k]
        if type(last) == "table" and getmetatable(last) == nil and next(last) ~= nil and #last == 0 then
          last[key] = key == "out" and T.zeros(3) or 1 -- the recipe's own options table
        else
          k = k + 1
          args[k] = { [key] = key == "out" and T.zeros(3) or 1 }
        end
        local ok, err = pcall(fn, unpack(args, 1, k))
        H.assert(not ok and refused(name, err, key), "%s accepted or unclearly refused '%s': %s", name, key, tostring(err))
      end)
    end
  end
end

H.done()
