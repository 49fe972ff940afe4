-- Differences from PyTorch 1.13 found by the seventh round of differential
-- tests, automatic mixed precision on the CPU (docs/amp.md): the dtype each
-- op gives under torch.autocast("cpu") (bfloat16) for float32 and bfloat16
-- inputs, half inputs of layers autocast feeds, and GradScaler's update
-- rules (torch.cuda.amp.GradScaler's, run on its documented logic).
local T = require "ember"
local U = require "specutil"
local err = U.err
local F = T.nn.functional
local unpack = table.unpack or unpack

local function ac(fn, ...) return T.autocast("cpu", fn, ...) end
local function first(...) return (...) end

describe("difftest round 7: CPU autocast lists (torch 1.13)", function()
  T.manual_seed(7)
  local x = T.rand(4, 4) + 0.5
  local xb = x:bfloat16()
  local img3 = T.randn(1, 2, 5, 5, 5):bfloat16()
  local img = T.randn(1, 2, 6, 6):bfloat16()
  local seq = T.randn(1, 2, 8):bfloat16()

  it("Lua-composed ops on torch's fp32 list run bfloat16 inputs in float32", function()
    -- with torch.autocast("cpu"): each of these gives float32 for bfloat16
    -- inputs (ember kept bfloat16, or refused bfloat16 for linalg)
    local cases = {
      trace = function() return T.trace(xb) end,
      cdist = function() return T.cdist(xb, xb) end,
      smooth_l1_loss = function() return F.smooth_l1_loss(xb, xb * 0.5) end,
      huber_loss = function() return F.huber_loss(xb, xb * 0.5) end,
      kl_div = function() return F.kl_div(xb:log(), xb, { reduction = "batchmean" }) end,
      margin_ranking_loss = function() return F.margin_ranking_loss(xb[1], xb[2], T.ones(4):bfloat16()) end,
      soft_margin_loss = function() return F.soft_margin_loss(xb, T.ones(4, 4):bfloat16()) end,
      triplet_margin_loss = function() return F.triplet_margin_loss(xb, xb * 0.5, xb * 0.2) end,
      multi_margin_loss = function() return F.multi_margin_loss(xb, T.tensor({ 1, 2, 3, 4 })) end,
      cosine_embedding_loss = function() return F.cosine_embedding_loss(xb, xb * 0.5, T.ones(4):bfloat16()) end,
      hinge_embedding_loss = function() return F.hinge_embedding_loss(xb, T.ones(4, 4):bfloat16()) end,
      poisson_nll_loss = function() return F.poisson_nll_loss(xb, xb) end,
      avg_pool3d = function() return F.avg_pool3d(img3, 2) end,
      max_pool3d = function() return F.max_pool3d(img3, 2) end,
      adaptive_avg_pool3d = function() return F.adaptive_avg_pool3d(img3, 2) end,
      adaptive_max_pool3d = function() return first(F.adaptive_max_pool3d(img3, 2)) end,
      grid_sample = function() return F.grid_sample(img, (T.rand(1, 3, 3, 2) * 2 - 1):bfloat16(), { align_corners = false }) end,
      conv_transpose2d = function() return F.conv_transpose2d(img, T.randn(2, 3, 3, 3):bfloat16()) end,
      reflect_pad1d = function() return F.pad(seq, { 1, 1 }, "reflect") end,
      replicate_pad3d = function() return F.pad(img3, { 1, 1, 1, 1, 1, 1 }, "replicate") end,
      quantile = function() return T.quantile(xb, 0.3) end,
      inverse = function() return T.inverse(xb + T.eye(4):bfloat16() * 4) end,
      pinverse = function() return T.pinverse(xb) end,
      linalg_inv = function() return T.linalg.inv(xb + T.eye(4):bfloat16() * 4) end,
      linalg_svdvals = function() return T.linalg.svdvals(xb) end,
      linalg_eigh = function() return first(T.linalg.eigh(xb)) end,
      linalg_qr = function() return first(T.linalg.qr(xb)) end,
      linalg_solve = function() return T.linalg.solve(xb + T.eye(4):bfloat16() * 4, xb) end,
      linalg_matrix_norm = function() return T.linalg.matrix_norm(xb) end,
    }
    for name, f in pairs(cases) do
      local r = ac(f)
      assert.equal(T.float32, r.dtype, name)
    end
    -- not on the list: these keep bfloat16 in torch 1.13
    assert.equal(T.bfloat16, ac(function() return F.pad(img, { 1, 1, 1, 1 }) end).dtype)
    assert.equal(T.bfloat16, ac(function() return F.pad(img, { 1, 1, 1, 1 }, "circular") end).dtype)
    assert.equal(T.bfloat16, ac(function() return F.pad(img3, { 1, 1, 1, 1, 1, 1 }, "reflect") end).dtype)
    assert.equal(T.bfloat16, ac(function() return F.gaussian_nll_loss(xb, xb * 0.5, T.ones(4, 4):bfloat16()) end).dtype)
    assert.equal(T.bfloat16, ac(function() return T.linalg.vector_norm(xb) end).dtype)
    -- outside autocast, or with it turned off inside, nothing is cast
    assert.equal(T.bfloat16, F.smooth_l1_loss(xb, xb).dtype)
    ac(function()
      T.autocast("cpu", { enabled = false }, function()
        assert.equal(T.bfloat16, F.smooth_l1_loss(xb, xb).dtype)
        assert.equal(T.bfloat16, T.trace(xb).dtype)
      end)
    end)
    -- float64 is never cast
    assert.equal(T.float64, ac(function() return T.trace(x:double()) end).dtype)
  end)

  it("fp32-list ops run their insides without autocast; conv1d and addbmm are lower precision", function()
    -- torch: cdist, pinverse (fp32 list) and bilinear (its own kernel) give
    -- float32 for float32 inputs; ember's compositions went through matmul
    -- and gave bfloat16. conv1d and addbmm give bfloat16 in torch; ember
    -- gave float32.
    assert.equal(T.float32, ac(function() return T.cdist(x, x) end).dtype)
    assert.equal(T.float32, ac(function() return T.pinverse(x) end).dtype)
    assert.equal(T.float32, ac(function() return x:pinverse() end).dtype)
    assert.equal(T.float32, ac(function() return F.bilinear(x, x, T.randn(2, 4, 4)) end).dtype)
    assert.equal(T.bfloat16, ac(function() return T.addbmm(x, x:unsqueeze(1), x:unsqueeze(1)) end).dtype)
    assert.equal(T.bfloat16, ac(function() return x:addbmm(x:unsqueeze(1), x:unsqueeze(1)) end).dtype)
    assert.equal(T.bfloat16, ac(function() return F.conv1d(seq:float(), T.randn(3, 2, 3)) end).dtype)
    -- linalg.pinv is composite in torch (matmul inside): bfloat16
    assert.equal(T.bfloat16, ac(function() return T.linalg.pinv(x) end).dtype)
  end)

  it("gradients through the fp32 casts come back in the parameters' dtype", function()
    local p = xb:clone():requires_grad_()
    local l = ac(function() return F.smooth_l1_loss(p, T.zeros(4, 4):bfloat16()) end)
    assert.equal(T.float32, l.dtype)
    l:backward()
    assert.equal(T.bfloat16, p.grad.dtype)
    local w = T.randn(3, 2, 3):requires_grad_()
    local y = ac(function() return F.conv1d(seq:float(), w) end)
    y:float():sum():backward()
    assert.equal(T.float32, w.grad.dtype)
  end)

  it("conv1d takes bfloat16 inputs with torch's values", function()
    local a = T.arange(24):float():reshape(2, 3, 4) / 7 - 1
    local w = T.arange(18):float():reshape(2, 3, 3) / 11 - 0.8
    local y = ac(function() return F.conv1d(a, w) end)
    assert.equal(T.bfloat16, y.dtype)
    -- torch 1.13 under autocast("cpu"): bfloat16 values
    assert.same({ 2.140625, 1.5703125, 0.031494140625, 0.5234375, -4.59375, -5.15625, 5.9375, 6.40625 },
      y:float():flatten():tolist())
    -- outside autocast: it refused ("expected input of dtype float32 or float64")
    assert.equal(T.bfloat16, F.conv1d(a:bfloat16(), w:bfloat16()).dtype)
  end)

  it("batch_norm takes bfloat16 input (Conv2d -> BatchNorm2d under autocast)", function()
    local a = (T.arange(24):float():reshape(4, 3, 2) / 5 - 1):bfloat16()
    local rm, rv = T.zeros(3), T.ones(3)
    local z = ac(function() return F.batch_norm(a, rm, rv, T.ones(3) * 1.5, T.ones(3) * 0.5, true) end)
    -- torch: bfloat16, the same values; running stats updated in float32
    assert.equal(T.bfloat16, z.dtype)
    assert.same({ -1.6171875, -1.3984375, -1.6171875, -1.3984375, -1.6171875, -1.3984375 },
      { unpack(z:float():flatten():tolist(), 1, 6) })
    assert.near(0.08988036960363388, rm:tolist()[1], 1e-7)
    assert.near(1.106421947479248, rv:tolist()[1], 1e-6)
    -- a bfloat16 module (running stats bfloat16 too) updates them in place
    local bn = T.nn.BatchNorm1d(3):bfloat16()
    local y = bn(a:reshape(4, 3, 2):select(3, 1))
    assert.equal(T.bfloat16, y.dtype)
    assert.equal(T.bfloat16, bn.running_mean.dtype)
    assert.is_true(bn.running_mean:abs():sum():item() > 0)
    -- the usual CNN block under autocast (ember: batch_norm refused bfloat16)
    local nn = T.nn
    local m = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 3))
    assert.equal(T.bfloat16, ac(function() return m(T.randn(2, 2, 6, 6)) end).dtype)
    assert.equal(T.bfloat16, ac(function() return nn.InstanceNorm2d(4, { affine = true })(T.randn(2, 4, 6, 6):bfloat16()) end).dtype)
  end)

  it("a TransformerEncoderLayer runs under autocast (attention on bfloat16 projections)", function()
    -- torch 1.13: float32 out (the last layer_norm of a float32 residual);
    -- ember: scaled_dot_product_attention refused bfloat16 queries
    local layer = T.nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8, dropout = 0 })
    local out = ac(function() return layer(T.randn(3, 1, 4)) end)
    assert.equal(T.float32, out.dtype)
    local q = T.randn(1, 2, 3, 4)
    local h = F.scaled_dot_product_attention(q:bfloat16(), q:bfloat16(), q:bfloat16())
    assert.equal(T.bfloat16, h.dtype)
    local want = F.scaled_dot_product_attention(q:bfloat16():float(), q:bfloat16():float(), q:bfloat16():float())
    assert.is_true((h:float() - want):abs():max():item() < 2e-2)
  end)
end)

describe("difftest round 7: GradScaler update rules (torch.cuda.amp.GradScaler 1.13)", function()
  local function param(v)
    local p = T.tensor(v):float():requires_grad_()
    return p, T.optim.SGD({ p }, { lr = 0.1 })
  end

  it("keeps the scale when growing it would overflow float32", function()
    -- _amp_update_scale_: new_scale = scale * growth_factor, applied only if
    -- finite; the growth tracker restarts either way (ember went to inf)
    local s = T.amp.GradScaler { init_scale = 2 ^ 127, growth_interval = 1 }
    local p, opt = param({ 1.5, 2.5 })
    s:scale((p * p):sum() * 0):backward()
    s:step(opt)
    s:update()
    assert.equal(2 ^ 127, s:get_scale())
    assert.equal(0, s:state_dict()._growth_tracker)
  end)

  it("refuses step() and update() when no gradient was checked", function()
    -- torch: AssertionError "No inf checks were recorded for this optimizer."
    -- (ember stepped and then updated as after a clean step)
    local s = T.amp.GradScaler()
    local p, opt = param({ 1.5 })
    s:scale(p:sum())
    err(function() s:step(opt) end, "GradScaler:step: No inf checks were recorded for this optimizer.")
    local s2 = T.amp.GradScaler()
    local _, opt2 = param({ 1.5 })
    s2:scale(T.ones(1))
    s2:unscale_(opt2)
    err(function() s2:update() end, "GradScaler:update: No inf checks were recorded prior to update.")
  end)

  it("checks the gradients for inf/nan before unscaling them", function()
    -- torch's kernel: found_inf from the scaled value, then val * inv_scale;
    -- with a scale below 1 a finite gradient may overflow when unscaled and
    -- the step still runs (ember checked after, and skipped it)
    local s = T.amp.GradScaler { init_scale = 0.25 }
    local p, opt = param({ 1.5 })
    s:scale((p * p):sum()):backward()
    p.grad:fill_(3e38)
    s:step(opt)
    assert.equal(-math.huge, p:tolist()[1])
    s:update()
    assert.equal(0.25, s:get_scale())
  end)
end)
