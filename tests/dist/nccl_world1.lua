-- tests/dist/nccl_world1.lua: the nccl backend in a world of one process on
-- one GPU (tools/cuda-check.sh runs it where a device is lent; it needs no
-- launcher). Every collective runs through a real one-rank NCCL
-- communicator, so this checks the module's calls, the stream ordering and
-- the work handles, not the transport between GPUs. Prints
-- "NCCL-CASES: P passed, F failed".
local T = require "ember"
local dist = T.distributed
local pass, failn = 0, 0
local function case(name, f)
  local ok, err = pcall(f)
  if ok then pass = pass + 1; print("ok   " .. name)
  else failn = failn + 1; print("FAIL " .. name .. ": " .. tostring(err)) end
end
local function same(a, b) assert(T.equal(a:cpu(), b:cpu()), "values differ") end

if not T.cuda.is_available() then
  print("nccl_world1: no CUDA device; nothing checked")
  print("NCCL-CASES: 0 passed, 1 failed")
  os.exit(1)
end
dist.init_process_group { backend = "nccl", timeout = 60 }
case("the world is one rank on nccl", function()
  assert(dist.get_rank() == 0 and dist.get_world_size() == 1)
  assert(dist.get_backend() == "nccl")
end)
case("all_reduce sum, avg, max keep the values (float32, float16, int64)", function()
  for _, dt in ipairs { T.float32, T.float16, T.int64 } do
    local x = T.arange(1, 9, { dtype = dt }):to("cuda")
    local y = x:clone()
    dist.all_reduce(y, { op = "sum" }); same(y, x)
    dist.all_reduce(y, { op = "max" }); same(y, x)
    if dt.is_floating_point then dist.all_reduce(y, { op = "avg" }); same(y, x) end
  end
end)
case("all_reduce of a non-contiguous tensor writes back", function()
  local x = T.arange(1, 13):to("cuda"):view(3, 4):t()
  local y = x:clone():t():t()
  local z = x:clone()
  dist.all_reduce(x); same(x, z)
  assert(not x:is_contiguous()); same(y, z)
end)
case("broadcast, all_gather_into_tensor, reduce_scatter_tensor", function()
  local x = T.randn(5):to("cuda")
  local b = x:clone(); dist.broadcast(b, { src = 0 }); same(b, x)
  local out = T.empty(1, 5, { device = "cuda" }); dist.all_gather_into_tensor(out, x); same(out:view(5), x)
  local rs = T.empty(5, { device = "cuda" }); dist.reduce_scatter_tensor(rs, x); same(rs, x)
end)
case("all_gather, gather, scatter, all_to_all_single in a world of one", function()
  local x = T.randn(4):to("cuda")
  local l = { T.empty(4, { device = "cuda" }) }; dist.all_gather(l, x); same(l[1], x)
  local g = { T.empty(4, { device = "cuda" }) }; dist.gather(x, { gather_list = g, dst = 0 }); same(g[1], x)
  local s = T.empty(4, { device = "cuda" }); dist.scatter(s, { scatter_list = { x }, src = 0 }); same(s, x)
  local a = T.empty(4, { device = "cuda" }); dist.all_to_all_single(a, x); same(a, x)
end)
case("async work handles complete; barrier returns", function()
  local x = T.ones(1048576, { device = "cuda" })
  local w = dist.all_reduce(x, { async_op = true })
  w:wait()
  assert(w:is_completed())
  dist.barrier()
  assert(x:cpu():sum():item() == 1048576)
end)
case("a CPU tensor is refused by name", function()
  local ok, err = pcall(dist.all_reduce, T.ones(2))
  assert(not ok and tostring(err):find("the nccl backend moves cuda tensors", 1, true), tostring(err))
end)
case("new_group of the one rank, then destroy", function()
  local g = dist.new_group({ 0 })
  local x = T.ones(3, { device = "cuda" })
  dist.all_reduce(x, { group = g }); same(x, T.ones(3))
  dist.destroy_process_group(g)
end)
dist.destroy_process_group()
print(string.format("NCCL-CASES: %d passed, %d failed", pass, failn))
os.exit(failn == 0 and 0 or 1)
