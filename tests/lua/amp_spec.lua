-- Automatic mixed precision (docs/amp.md; issue 16 item 4) on the CPU:
-- T.autocast("cpu", {dtype = T.bfloat16}, fn) against PyTorch 1.13's own
-- CPU autocast (tests/fixtures/amp_cases.lua from gen_amp.py): the dtype
-- every listed op gives, a model's values and float32 gradients from given
-- weights; the state's scoping; and T.amp.GradScaler's rules.
local T = require "ember"
local F = T.nn.functional
local fx = dofile("tests/fixtures/amp_cases.lua")

local function tensor(rec)
  local t = T.tensor(rec.v, { dtype = T[rec.dtype] })
  return #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
end
local function close(got, want, rel, what)
  got, want = got:double(), want:double()
  assert.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  local d = (got - want):abs():max():item()
  local tol = rel * math.max(1, want:abs():max():item())
  assert(d <= tol, string.format("%s: max difference %g (tolerance %g)", what, d, tol))
end

describe("T.autocast on the cpu", function()
  local env = setmetatable({ T = T, F = F, x = tensor(fx.x), img = tensor(fx.img), w = tensor(fx.w),
    t = tensor(fx.t) }, { __index = _G })
  env.xb = env.x:bfloat16()
  local names = {}
  for k in pairs(fx.dtypes) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do
    local c = fx.dtypes[k]
    it(k .. " gives " .. c.dtype .. " as in PyTorch 1.13", function()
      local f = assert(load("return " .. c.expr, k, "t", env))
      local r = T.autocast("cpu", { dtype = T.bfloat16 }, f)
      assert.equal(T[c.dtype], r.dtype)
    end)
  end

  it("runs an MLP's forward in bfloat16 with PyTorch's values; the gradients are float32", function()
    local m = fx.mlp
    local ps = { tensor(m.W1), tensor(m.b1), tensor(m.W2), tensor(m.b2) }
    for _, p in ipairs(ps) do p:requires_grad_() end
    local x, y = tensor(m.x), tensor(m.y)
    local h, out, loss = T.autocast("cpu", function()
      local h = F.relu(F.linear(x, ps[1], ps[2]))
      local out = F.linear(h, ps[3], ps[4])
      return h, out, F.cross_entropy(out, y)
    end)
    assert.equal(T[m.h_dtype], h.dtype)
    assert.equal(T[m.out_dtype], out.dtype)
    assert.equal(T[m.loss_dtype], loss.dtype)
    -- bfloat16 has 8 significant bits: the products differ by rounding order
    close(out, tensor(m.out), 3e-2, "out")
    assert(math.abs(loss:item() - m.loss) <= 2e-2 * math.max(1, math.abs(m.loss)), "loss")
    loss:backward()
    for i, p in ipairs(ps) do
      assert.equal(T[m.grad_dtypes[i]], p.grad.dtype)
      close(p.grad, tensor(m.grads[i]), 5e-2, "grad " .. i)
    end
  end)

  it("runs conv2d in bfloat16 through an nn layer too", function()
    local c = fx.conv
    local conv = T.nn.Conv2d(1, 3, 3)
    T.no_grad(function() conv.weight:copy_(tensor(c.w)); conv.bias:copy_(tensor(c.b)) end)
    local out, loss = T.autocast("cpu", function()
      local o = conv(tensor(c.x))
      return o, o:float():square():mean()
    end)
    assert.equal(T[c.out_dtype], out.dtype)
    close(out, tensor(c.out), 3e-2, "conv out")
    loss:backward()
    close(conv.weight.grad, tensor(c.grads[1]), 5e-2, "conv weight grad")
    close(conv.bias.grad, tensor(c.grads[2]), 5e-2, "conv bias grad")
    assert.equal(T.float32, conv.weight.grad.dtype)
  end)

  it("takes half inputs outside autocast where only float32/64 kernels exist, rounding back", function()
    local x = tensor(fx.x)
    for _, dt in ipairs { T.bfloat16, T.float16 } do
      local h = x:to(dt)
      local l = F.mse_loss(h, h * 0.5)
      assert.equal(dt, l.dtype)
      close(l, F.mse_loss(h:float(), (h * 0.5):float()), 1e-2, dt.name .. " mse_loss")
      local n = F.layer_norm(h, { 4 })
      assert.equal(dt, n.dtype)
      close(n, F.layer_norm(h:float(), { 4 }), 2e-2, dt.name .. " layer_norm")
      local g = h:clone():requires_grad_()
      F.l1_loss(g, h * 0):backward()
      assert.equal(dt, g.grad.dtype)
    end
    assert.is_false(T.is_autocast_cpu_enabled())
  end)

  it("restores the state after the region, nested regions and errors", function()
    assert.is_false(T.is_autocast_cpu_enabled())
    T.autocast("cpu", function()
      assert.is_true(T.is_autocast_cpu_enabled())
      assert.equal(T.bfloat16, T.get_autocast_dtype("cpu"))
      T.autocast("cpu", { enabled = false }, function()
        assert.is_false(T.is_autocast_cpu_enabled())
        assert.equal(T.float32, T.mm(T.ones(2, 2), T.ones(2, 2)).dtype)
      end)
      assert.is_true(T.is_autocast_cpu_enabled())
    end)
    assert.is_false(T.is_autocast_cpu_enabled())
    local ok, err = pcall(T.autocast, "cpu", function() error("boom") end)
    assert.is_false(ok)
    assert.matches("boom", err)
    assert.is_false(T.is_autocast_cpu_enabled())
    assert.equal(T.float32, T.mm(T.ones(2, 2), T.ones(2, 2)).dtype)
    -- arguments after fn reach it; its results come back
    local a, b = T.autocast("cpu", function(p, q) return p + 1, q end, 1, "z")
    assert.equal(2, a); assert.equal("z", b)
  end)

  it("refuses what it cannot honour", function()
    assert.has_error(function() T.autocast("cpu", { dtype = T.float16 }, function() end) end,
      "autocast: CPU autocast only supports dtype bfloat16 (as PyTorch 1.13), got float16")
    assert.has_error(function() T.autocast("cpu", { cache_enabled = true }, function() end) end,
      "autocast: cache_enabled = true is not supported (ember does not cache the casts); leave it out or pass false")
    assert.has_error(function() T.autocast("cpu", { dtyp = T.bfloat16 }, function() end) end,
      "autocast: unknown option 'dtyp' (expected one of: dtype, enabled, cache_enabled)")
    assert.has_error(function() T.autocast("tpu", function() end) end,
      "autocast: device_type must be 'cpu' or 'cuda', got 'tpu'")
    assert.has_error(function() T.autocast("cpu", { dtype = T.int32 }, function() end) end,
      "autocast: dtype must be float16 or bfloat16, got int32")
    assert.has_error(function() T.autocast("cpu") end, "autocast: expected the function to run as argument #3, got nil")
    if not (T.cuda and T.cuda.is_available and T.cuda.is_available()) then
      assert.has_error(function() T.autocast("cuda", function() end) end,
        "autocast: device_type 'cuda' needs a CUDA device (T.cuda.is_available() is false)")
    end
    assert.is_false(T.is_autocast_cpu_enabled())
  end)
end)

describe("T.amp.GradScaler", function()
  local function setup(val)
    local p = T.tensor({ 1.0, 2.0 }):float():requires_grad_()
    local opt = T.optim.SGD({ p }, { lr = 0.1 })
    return p, opt
  end

  it("scales the loss, unscales the gradients and steps", function()
    local s = T.amp.GradScaler { init_scale = 8 }
    local p, opt = setup()
    local loss = (p * p):sum()
    local scaled = s:scale(loss)
    assert.equal(8 * loss:item(), scaled:item())
    scaled:backward()
    assert.same({ 16, 32 }, p.grad:tolist()) -- 8 * 2p
    s:step(opt)                               -- unscales first: grad 2p
    assert.same({ 2, 4 }, p.grad:tolist())
    assert.near(1 - 0.2, p:tolist()[1], 1e-6)
    s:update()
    assert.equal(8, s:get_scale())
  end)

  it("skips the step on inf/nan gradients and backs off; grows after growth_interval clean steps", function()
    local s = T.amp.GradScaler { init_scale = 4, growth_interval = 2, growth_factor = 3, backoff_factor = 0.25 }
    local p, opt = setup()
    local before = p:tolist()
    s:scale((p * 1e38):sum() * 1e10):backward() -- overflows to inf
    s:step(opt)
    assert.same(before, p:tolist())
    s:update()
    assert.equal(1, s:get_scale())
    for _ = 1, 2 do
      opt:zero_grad()
      s:scale((p * p):sum()):backward()
      s:step(opt)
      s:update()
    end
    assert.equal(3, s:get_scale())
    assert.same({ scale = 3, growth_factor = 3, backoff_factor = 0.25, growth_interval = 2, _growth_tracker = 0 },
      s:state_dict())
    local s2 = T.amp.GradScaler()
    s2:load_state_dict(s:state_dict())
    assert.equal(3, s2:get_scale())
    s:update(16)
    assert.equal(16, s:get_scale())
  end)

  it("refuses the calls out of order, as PyTorch", function()
    local s = T.amp.GradScaler()
    local p, opt = setup()
    s:scale((p * p):sum()):backward()
    s:unscale_(opt)
    assert.has_error(function() s:unscale_(opt) end,
      "GradScaler:unscale_: unscale_() has already been called on this optimizer since the last update().")
    s:step(opt)
    assert.has_error(function() s:step(opt) end,
      "GradScaler:step: step() has already been called since the last update().")
    assert.has_error(function() s:unscale_(opt) end, "GradScaler:unscale_: unscale_() is being called after step().")
    s:update()
    local s3 = T.amp.GradScaler()
    s3:scale(T.ones(1))
    assert.has_error(function() s3:update() end, "GradScaler:update: No inf checks were recorded prior to update.")
    assert.has_error(function() T.amp.GradScaler { init_scal = 1 } end,
      "GradScaler: unknown option 'init_scal' (expected one of: init_scale, growth_factor, backoff_factor, growth_interval, enabled)")
    assert.has_error(function() T.amp.GradScaler { growth_factor = 1 } end, "GradScaler: The growth factor must be > 1.0.")
    local h = T.tensor({ 1 }, { dtype = T.float16 }):requires_grad_()
    local hopt = T.optim.SGD({ h }, { lr = 0.1 })
    s3 = T.amp.GradScaler()
    s3:scale((h * 2):sum()):backward()
    assert.has_error(function() s3:unscale_(hopt) end, "GradScaler:unscale_: Attempting to unscale FP16 gradients.")
  end)

  it("is a pass-through when disabled", function()
    local s = T.amp.GradScaler { enabled = false }
    local p, opt = setup()
    local loss = (p * p):sum()
    assert.equal(loss, s:scale(loss))
    loss:backward()
    s:step(opt)
    assert.near(0.8, p:tolist()[1], 1e-6)
    assert.equal(1, s:get_scale())
    assert.same({}, s:state_dict())
  end)
end)
