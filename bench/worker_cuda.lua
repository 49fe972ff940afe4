-- bench/worker_cuda.lua: the ember contender of the GPU rows
-- (bench/workloads_cuda.txt, bench/bench_cuda.py); the protocol is
-- bench/protocol.lua. The device is EMBER_BENCH_DEVICE (default "cuda";
-- "cpu" runs the same rows on the CPU at a small scale: the harness's dry
-- run on a machine without a GPU). A timing covers INNER calls and then
-- waits for the device (T.cuda.synchronize), so queued kernels are counted;
-- each setup waits too. "peak NAME STEPS" answers the device memory STEPS
-- calls reach (T.cuda.max_memory_allocated after a reset).
local T = require "ember"
local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
local P = dofile(here .. "protocol.lua")
local TM = dofile(here .. "train_models.lua")(T)

local dev = os.getenv("EMBER_BENCH_DEVICE") or "cuda"
local gpu = dev:match("^cuda") ~= nil
local function sync() if gpu then T.cuda.synchronize() end end
local fl = math.floor
local S = {}
local N = 256 * 1024 * 1024 -- 256M floats: 1 GiB

local setups = {
  cu_copy = function(k)
    S.a = T.rand(fl(N / k), { device = dev })
    S.o = T.empty(fl(N / k), { device = dev })
  end,
  cu_add_out = function(k)
    S.a, S.b = T.rand(fl(N / k), { device = dev }), T.rand(fl(N / k), { device = dev })
    S.o = T.empty(fl(N / k), { device = dev })
  end,
  cu_h2d_pinned = function(k)
    local h = T.rand(fl(64 * 1024 * 1024 / k))
    S.h = gpu and h:pin_memory() or h
  end,
  cu_sum = function(k) S.a = T.rand(fl(N / k), { device = dev }) end,
  cu_softmax = function(k) S.a = T.randn(fl(8192 / k), 32768, { device = dev }) end,
  cu_add1 = function()
    S.a, S.b = T.rand(1, { device = dev }), T.rand(1, { device = dev })
  end,
  cu_sgemm_4096 = function(k)
    if gpu then T.backends.cuda.matmul.allow_tf32 = false end
    S.a, S.b = T.rand(fl(4096 / k), fl(4096 / k), { device = dev }), T.rand(fl(4096 / k), fl(4096 / k), { device = dev })
  end,
  cu_bf16_gemm_4096 = function(k)
    local n = fl(4096 / k)
    S.a = T.rand(n, n, { device = dev }):to(T.bfloat16)
    S.b = T.rand(n, n, { device = dev }):to(T.bfloat16)
  end,
  cu_mm_256 = function()
    S.a, S.b = T.rand(256, 256, { device = dev }), T.rand(256, 256, { device = dev })
  end,
  cu_rfft = function(k)
    S.a = T.randn(fl(64 / k), 65536, { device = dev })
    S.b = T.complex(T.randn(fl(2048 / k), 2048), T.randn(fl(2048 / k), 2048)):to(dev)
  end,
  cu_solve_batched = function(k)
    S.a = T.randn(fl(1024 / k), 16, 16, { device = dev }) + T.eye(16, { device = dev }) * 4
    S.b = T.randn(fl(1024 / k), 16, 1, { device = dev })
  end,
  cu_linalg = function(k)
    local function spd(n)
      local m = T.randn(n, n, { device = dev })
      return m:matmul(m.mT) + T.eye(n, { device = dev }) * n
    end
    S.c, S.s = spd(fl(2048 / k)), T.randn(fl(512 / k), fl(512 / k), { device = dev })
    S.e, S.q = spd(fl(512 / k)), T.randn(fl(1024 / k), fl(1024 / k), { device = dev })
  end,
  cu_train_mlp = function(k)
    local x, y = TM.random_batch(fl(256 / k), dev)
    S.step = TM.step_fn("mlp", "sgd", x, y, dev)
  end,
  cu_train_cnn = function(k)
    local x, y = TM.random_batch(fl(256 / k), dev)
    S.step = TM.step_fn("cnn", "sgd", x, y, dev)
  end,
  cu_train_transformer = function(k) S.step = TM.transformer_step(fl(256 / k), dev) end,
  cu_train_cnn_nocudnn = function(k)
    local x, y = TM.random_batch(fl(256 / k), dev)
    local step = TM.step_fn("cnn", "sgd", x, y, dev)
    -- cuDNN off for this row's steps only
    S.step = function()
      T.backends.cudnn.enabled = false
      local ok, err = pcall(step)
      T.backends.cudnn.enabled = true
      if not ok then error(err, 0) end
    end
  end,
}

local function step_body(n) local step = S.step; for _ = 1, n do step() end end
local bodies = {
  cu_copy = function(n) local a, o = S.a, S.o; for _ = 1, n do o:copy_(a) end end,
  cu_add_out = function(n) local a, b, o = S.a, S.b, { out = S.o }; for _ = 1, n do T.add(a, b, o) end end,
  cu_h2d_pinned = function(n)
    local h, o = S.h, { non_blocking = true }
    for _ = 1, n do local _ = h:to(dev, o) end
  end,
  cu_sum = function(n) local a = S.a; for _ = 1, n do local _ = a:sum() end end,
  cu_softmax = function(n) local a = S.a; for _ = 1, n do local _ = a:softmax(-1) end end,
  cu_add1 = function(n) local a, b = S.a, S.b; for _ = 1, n do local _ = a + b end end,
  cu_sgemm_4096 = function(n) local a, b = S.a, S.b; for _ = 1, n do local _ = T.mm(a, b) end end,
  cu_bf16_gemm_4096 = function(n) local a, b = S.a, S.b; for _ = 1, n do local _ = T.mm(a, b) end end,
  cu_mm_256 = function(n) local a, b = S.a, S.b; for _ = 1, n do local _ = T.mm(a, b) end end,
  cu_rfft = function(n)
    local a, b, F = S.a, S.b, T.fft
    for _ = 1, n do local _, _ = F.rfft(a), F.fft2(b) end
  end,
  cu_solve_batched = function(n)
    local a, b, solve = S.a, S.b, T.linalg.solve
    for _ = 1, n do local _ = solve(a, b) end
  end,
  cu_linalg = function(n)
    local LA = T.linalg
    for _ = 1, n do
      local _ = LA.cholesky(S.c)
      local _, _, _ = LA.svd(S.s, { full_matrices = false })
      local _, _ = LA.eigh(S.e)
      local _, _ = LA.qr(S.q)
    end
  end,
  cu_train_mlp = step_body,
  cu_train_cnn = step_body,
  cu_train_transformer = step_body,
  cu_train_cnn_nocudnn = step_body,
}
-- every timing ends when the device has finished what it was given
local timed = {}
for name, body in pairs(bodies) do timed[name] = function(n) body(n); sync() end end
local ready = {}
for name, setup in pairs(setups) do ready[name] = function(k) setup(k); sync() end end

P.serve {
  setups = ready, bodies = timed, unknown = "unknown workload",
  reset = function() for key in pairs(S) do S[key] = nil end end,
  threads = function(n) if T.set_num_threads then T.set_num_threads(n) end end,
  peak = function(name, steps)
    if not gpu then error("no device memory to measure on " .. dev) end
    sync()
    T.cuda.reset_peak_memory_stats()
    timed[name](steps)
    return T.cuda.max_memory_allocated()
  end,
}
