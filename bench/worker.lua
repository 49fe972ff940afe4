-- bench/worker.lua: the ember contender; the protocol is bench/protocol.lua.
local T = require "ember"
local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
local P = dofile(here .. "protocol.lua")

local S = {} -- the current workload's state (emptied, never replaced: percall.lua holds it)
local percall_setups, percall_bodies = dofile(here .. "percall.lua")(T, S)
-- the training-step workloads (bench/train_models.lua, shared with
-- bench/train_step.lua): one step per call
local TM = dofile(here .. "train_models.lua")(T)
local function train_setup(model, optname)
  return function()
    local x, y = TM.batch(model)
    S.step = TM.step_fn(model, optname, x, y)
  end
end
local function train_body(n) local step = S.step; for _ = 1, n do step() end end
local fl = math.floor
local M = 16 * 1024 * 1024

local setups = {
  stream_add_out = function(k) S.a, S.b, S.c = T.rand(fl(M / k)), T.rand(fl(M / k)), T.empty(fl(M / k)) end,
  stream_add_alloc = function(k) S.a, S.b = T.rand(fl(M / k)), T.rand(fl(M / k)) end,
  stream_exp = function(k) S.a, S.c = T.rand(fl(M / k)), T.empty(fl(M / k)) end,
  stream_sum = function(k) S.a = T.rand(fl(M / k)) end,
  stream_bcast_out = function(k) local n = fl(4096 / k); S.a, S.b, S.c = T.rand(n, 1), T.rand(1, n), T.empty(n, n) end,
  stream_bcast_alloc = function(k) local n = fl(4096 / k); S.a, S.b = T.rand(n, 1), T.rand(1, n) end,
  layout_transpose = function(k) local n = fl(4096 / k); S.t = T.rand(n, n) end,
  layout_transpose_out = function(k) local n = fl(4096 / k); S.t = T.rand(n, n); S.out = T.empty(n, n) end,
  layout_clone_slice = function(k) local n = fl(4096 / k); S.t = T.rand(n, n) end,
  sel_index_select = function(k)
    S.t = T.rand(fl(4 * 1024 * 1024 / k), 16)
    S.idx = T.randint(1, S.t:size(1) + 1, { fl(1024 * 1024 / k) })
  end,
  sel_masked_select = function(k) S.a = T.rand(fl(M / k)); S.mask = T.rand(fl(M / k)):lt(0.5) end,
  idx_mask_read = function(k) S.a = T.rand(fl(M / k)); S.mask = T.rand(fl(M / k)):lt(0.5) end,
  idx_mask_write = function(k) S.a = T.rand(fl(M / k)); S.mask = T.rand(fl(M / k)):lt(0.5) end,
  idx_mask_fill = function(k) S.a = T.rand(fl(M / k)); S.mask = T.rand(fl(M / k)):lt(0.5) end,
  idx_rows_read = function(k)
    S.t = T.rand(fl(4 * 1024 * 1024 / k), 16)
    S.idx = T.randint(1, S.t:size(1) + 1, { fl(1024 * 1024 / k) })
  end,
  idx_rows_write = function(k)
    S.t = T.rand(fl(4 * 1024 * 1024 / k), 16)
    S.idx = T.randint(1, S.t:size(1) + 1, { fl(1024 * 1024 / k) })
    S.rows = T.rand(fl(1024 * 1024 / k), 16)
  end,
  idx_rows_put = function(k)
    S.t = T.rand(fl(4 * 1024 * 1024 / k), 16)
    S.idx = T.randint(1, S.t:size(1) + 1, { fl(1024 * 1024 / k) })
    S.rows = T.rand(fl(1024 * 1024 / k), 16)
  end,
  idx_gather2d = function(k)
    S.t = T.rand(fl(4 * 1024 * 1024 / k), 16)
    S.i = T.randint(1, S.t:size(1) + 1, { fl(1024 * 1024 / k) })
    S.j = T.randint(1, 17, { fl(1024 * 1024 / k) })
  end,
  asm_cat = function(k) S.list = {}; for i = 1, 64 do S.list[i] = T.rand(fl(16384 / k), 16) end end,
  asm_stack = function(k) S.list = {}; for i = 1, 64 do S.list[i] = T.rand(fl(16384 / k), 16) end end,
  mm_256 = function() S.a, S.b = T.rand(256, 256), T.rand(256, 256) end,
  mm_256_out = function() S.a, S.b, S.c = T.rand(256, 256), T.rand(256, 256), T.empty(256, 256) end,
  mm_1024 = function(k) local n = fl(1024 / k); S.a, S.b = T.rand(n, n), T.rand(n, n) end,
  mm_2048 = function(k) local n = fl(2048 / k); S.a, S.b = T.rand(n, n), T.rand(n, n) end,
  bmm_64x128 = function() S.a, S.b = T.rand(64, 128, 128), T.rand(64, 128, 128) end,
  red_sum = function(k) S.a = T.rand(fl(M / k)) end,
  red_mean = function(k) S.a = T.rand(fl(M / k)) end,
  red_prod = function(k) S.a = T.rand(fl(M / k)):div(1024):add(1 - 1 / 2048) end,
  red_amax = function(k) S.a = T.rand(fl(M / k)) end,
  red_amin = function(k) S.a = T.rand(fl(M / k)) end,
  red_norm = function(k) S.a = T.rand(fl(M / k)) end,
  red_var = function(k) S.a = T.rand(fl(M / k)) end,
  red_std = function(k) S.a = T.rand(fl(M / k)) end,
  red_sum_outer = function(k) local n = fl(4096 / k); S.t = T.rand(n, n) end,
  red_sum_inner_strided = function(k) local n = fl(4096 / k); S.t = T.rand(n, n):t() end,
  train_mlp = train_setup("mlp", "sgd"),
  train_mlp_adam = train_setup("mlp", "adam"),
  train_cnn = train_setup("cnn", "sgd"),
  train_lstm = train_setup("lstm_lm", "adam"),
}

local bodies = {
  stream_add_out = function(n) local o = { out = S.c }; for _ = 1, n do T.add(S.a, S.b, o) end end,
  stream_add_alloc = function(n) for _ = 1, n do local _ = S.a + S.b end end,
  stream_exp = function(n) local o = { out = S.c }; for _ = 1, n do T.exp(S.a, o) end end,
  stream_sum = function(n) for _ = 1, n do local _ = S.a:sum() end end,
  stream_bcast_out = function(n) local o = { out = S.c }; for _ = 1, n do T.add(S.a, S.b, o) end end,
  stream_bcast_alloc = function(n) for _ = 1, n do local _ = S.a + S.b end end,
  layout_transpose = function(n) for _ = 1, n do local _ = S.t:transpose(1, 2):contiguous() end end,
  layout_transpose_out = function(n) for _ = 1, n do S.out:copy_(S.t:t()) end end,
  layout_clone_slice = function(n) for _ = 1, n do local _ = S.t[{ {}, { 1, -1, 2 } }]:clone() end end,
  sel_index_select = function(n) for _ = 1, n do local _ = S.t:index_select(1, S.idx) end end,
  sel_masked_select = function(n) for _ = 1, n do local _ = S.a:masked_select(S.mask) end end,
  idx_mask_read = function(n) local a, m = S.a, S.mask; for _ = 1, n do local _ = a[m] end end,
  idx_mask_write = function(n) local a, m = S.a, S.mask; for _ = 1, n do a[m] = 0 end end,
  idx_mask_fill = function(n) for _ = 1, n do S.a:masked_fill_(S.mask, 0) end end,
  idx_rows_read = function(n) local t, idx = S.t, S.idx; for _ = 1, n do local _ = t[idx] end end,
  idx_rows_write = function(n) local t, idx, rows = S.t, S.idx, S.rows; for _ = 1, n do t[idx] = rows end end,
  idx_rows_put = function(n) local key = { S.idx }; for _ = 1, n do S.t:index_put_(key, S.rows) end end,
  idx_gather2d = function(n) local t, key = S.t, { S.i, S.j }; for _ = 1, n do local _ = t[key] end end,
  asm_cat = function(n) for _ = 1, n do local _ = T.cat(S.list, 1) end end,
  asm_stack = function(n) for _ = 1, n do local _ = T.stack(S.list, 1) end end,
  mm_256 = function(n) for _ = 1, n do local _ = T.mm(S.a, S.b) end end,
  mm_256_out = function(n)
    local a, b, o = S.a, S.b, { out = S.c }
    for _ = 1, n do local _ = T.mm(a, b, o) end
  end,
  mm_1024 = function(n) for _ = 1, n do local _ = T.mm(S.a, S.b) end end,
  mm_2048 = function(n) for _ = 1, n do local _ = T.mm(S.a, S.b) end end,
  bmm_64x128 = function(n) for _ = 1, n do local _ = T.bmm(S.a, S.b) end end,
  red_sum = function(n) for _ = 1, n do local _ = S.a:sum() end end,
  red_mean = function(n) for _ = 1, n do local _ = S.a:mean() end end,
  red_prod = function(n) for _ = 1, n do local _ = S.a:prod() end end,
  red_amax = function(n) for _ = 1, n do local _ = S.a:amax() end end,
  red_amin = function(n) for _ = 1, n do local _ = S.a:amin() end end,
  red_norm = function(n) for _ = 1, n do local _ = S.a:norm() end end,
  red_var = function(n) for _ = 1, n do local _ = S.a:var() end end,
  red_std = function(n) for _ = 1, n do local _ = S.a:std() end end,
  red_sum_outer = function(n) for _ = 1, n do local _ = S.t:sum(1) end end,
  red_sum_inner_strided = function(n) for _ = 1, n do local _ = S.t:sum(2) end end,
  train_mlp = train_body,
  train_mlp_adam = train_body,
  train_cnn = train_body,
  train_lstm = train_body,
}

-- the transcendental rows (vm_*): 16M values into a preallocated output;
-- [0, 1) for exp/log/sin/pow, [-4, 4) for the activations
local function sym(n) return T.rand(n) * 8 - 4 end
local vm_rows = {
  vm_exp = { T.rand, function(a, o) return T.exp(a, o) end },
  vm_log = { T.rand, function(a, o) return T.log(a, o) end },
  vm_sin = { T.rand, function(a, o) return T.sin(a, o) end },
  vm_tanh = { sym, function(a, o) return T.tanh(a, o) end },
  vm_sigmoid = { sym, function(a, o) return T.sigmoid(a, o) end },
  vm_gelu = { sym, function(a, o) return T.gelu(a, o) end },
  vm_gelu_tanh = { sym, function(a, o) return T.gelu(a, o) end, { approximate = "tanh" } },
  vm_erf = { sym, function(a, o) return T.erf(a, o) end },
  vm_pow = { T.rand, function(a, o) return T.pow(a, 2.5, o) end },
  vm_exp_f64 = { function(n) return T.rand(n, { dtype = T.float64 }) end,
                 function(a, o) return T.exp(a, o) end },
}
for name, row in pairs(vm_rows) do
  setups[name] = function(k)
    S.a = row[1](fl(M / k)); S.c = T.empty(fl(M / k), { dtype = S.a.dtype })
    S.o = { out = S.c }
    for key, v in pairs(row[3] or {}) do S.o[key] = v end
  end
  bodies[name] = function(n) local f, a, o = row[2], S.a, S.o; for _ = 1, n do f(a, o) end end
end

-- the attention rows: sdpa_fwd_bwd (the fused op's forward and backward)
-- and train_transformer (one step of a small causal pre-norm encoder block;
-- bench/worker_py.py has the same model in PyTorch)
setups.sdpa_fwd_bwd = function(k)
  local L = fl(512 / k)
  local q, kk, v = T.randn(8, 8, L, 64), T.randn(8, 8, L, 64), T.randn(8, 8, L, 64)
  q:requires_grad_(); kk:requires_grad_(); v:requires_grad_()
  local g, F = T.randn(8, 8, L, 64), T.nn.functional
  local wrt, go = { q, kk, v }, { grad_outputs = { g } }
  S.step = function() T.autograd.grad({ F.scaled_dot_product_attention(q, kk, v) }, wrt, go) end
end
setups.train_transformer = function(k)
  S.step = TM.transformer_step(k > 1 and fl(16 / k) or 16)
end
bodies.sdpa_fwd_bwd = train_body
bodies.train_transformer = train_body
-- the T.linalg rows (issue 19), float32; sizes shrink by k in quick mode
local function spd(n) local a = T.rand(n, n); return a:matmul(a:t()) / n + T.eye(n) end
local function symm(n) local a = T.rand(n, n); return a + a:t() end
local la_rows = {
  la_solve_1024 = { function(k) local n = fl(1024 / k); S.a, S.b = T.rand(n, n) + T.eye(n) * n, T.rand(n, 1) end,
                    function() return T.linalg.solve(S.a, S.b) end },
  la_inv_1024 = { function(k) local n = fl(1024 / k); S.a = T.rand(n, n) + T.eye(n) * n end,
                  function() return T.linalg.inv(S.a) end },
  la_cholesky_2048 = { function(k) S.a = spd(fl(2048 / k)) end, function() return T.linalg.cholesky(S.a) end },
  la_svd_512 = { function(k) local n = fl(512 / k); S.a = T.rand(n, n) end,
                 function() return T.linalg.svd(S.a, { full_matrices = false }) end },
  la_eigh_512 = { function(k) S.a = symm(fl(512 / k)) end, function() return T.linalg.eigh(S.a) end },
  la_lstsq_4096x256 = { function(k) S.a, S.b = T.rand(fl(4096 / k), fl(256 / k)), T.rand(fl(4096 / k), 1) end,
                        function() return T.linalg.lstsq(S.a, S.b) end },
  la_solve_batch16 = { function(k) local b = fl(1024 / k); S.a = T.rand(b, 16, 16) + T.eye(16) * 16; S.b = T.rand(b, 16, 1) end,
                       function() return T.linalg.solve(S.a, S.b) end },
}
-- the T.fft rows (issue 19): rfft of 2^20 (float32, float64), fft2 of 1024^2 complex64
la_rows.fft_rfft_1m = { function(k) S.a = T.rand(fl(1048576 / k)) end, function() return T.fft.rfft(S.a) end }
la_rows.fft_rfft_1m_out = { function(k)
  S.a = T.rand(fl(1048576 / k)); S.o = T.empty(fl(fl(1048576 / k) / 2) + 1, { dtype = T.complex64 })
end, function() return T.fft.rfft(S.a, { out = S.o }) end }
la_rows.fft_rfft_1m_f64 = { function(k) S.a = T.rand(fl(1048576 / k), { dtype = T.float64 }) end,
                            function() return T.fft.rfft(S.a) end }
la_rows.fft_fft2_1024 = { function(k) local n = fl(1024 / k); S.a = T.complex(T.rand(n, n), T.rand(n, n)) end,
                          function() return T.fft.fft2(S.a) end }
for name, row in pairs(la_rows) do
  setups[name] = row[1]
  bodies[name] = function(n) local f = row[2]; for _ = 1, n do f() end end
end

-- the optimizer-step rows (optim_step_*): one step on a 4M parameter
for name, cls in pairs({ optim_step_adagrad = "Adagrad", optim_step_nadam = "NAdam" }) do
  setups[name] = function(k)
    S.p = T.rand(fl(M / 4 / k)):requires_grad_()
    S.p.grad = T.rand(fl(M / 4 / k))
    S.opt = T.optim[cls]({ S.p })
  end
  bodies[name] = function(n) local opt = S.opt; for _ = 1, n do opt:step() end end
end

for k, f in pairs(percall_setups) do setups[k] = f end
for k, f in pairs(percall_bodies) do bodies[k] = f end

P.serve {
  setups = setups, bodies = bodies, unknown = "unknown workload",
  reset = function() for k in pairs(S) do S[k] = nil end end,
  threads = function(n) if T.set_num_threads then T.set_num_threads(n) end end,
}
