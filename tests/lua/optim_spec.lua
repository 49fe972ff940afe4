-- optim: each optimizer against torch.optim (tests/fixtures/optim_cases.lua):
-- same initial parameters, same gradients, same hyperparameters, the
-- parameters after each of 4 steps equal to float64 rounding. Gradients are
-- handed over through T.optim.grad_of (the one place optimizers read them),
-- so the math is checked without autograd.
local T = require "ember"
local fx = dofile("tests/fixtures/optim_cases.lua")

local function tensor(rec)
  return T.tensor(rec.v, { dtype = T.float64 }):reshape(rec.shape)
end
local function maxdiff(a, b) return (a - b):abs():max():item() end

-- gradients given by hand: a table from parameter to gradient
local grads = setmetatable({}, { __mode = "k" })
local saved_grad_of, saved_set_grad
local function use_hand_grads()
  saved_grad_of, saved_set_grad = T.optim.grad_of, T.optim.set_grad
  T.optim.grad_of = function(p) return grads[p] end
  T.optim.set_grad = function(p, g) grads[p] = g end
end
local function restore()
  T.optim.grad_of, T.optim.set_grad = saved_grad_of, saved_set_grad
end

local function fresh_params()
  return { tensor(fx.p0[1]), tensor(fx.p0[2]) }
end

describe("optimizers against torch.optim", function()
  before_each(use_hand_grads)
  after_each(restore)
  for _, c in ipairs(fx.cases) do
    local label = c.name
    for k, v in pairs(c.opts) do
      label = label .. " " .. k .. "=" .. (type(v) == "table" and table.concat(v, "/") or tostring(v))
    end
    it(label, function()
      local ps = fresh_params()
      local opt = T.optim[c.name](ps, c.opts)
      for k = 1, #c.after do
        for i, p in ipairs(ps) do grads[p] = tensor(fx.grads[k][i]) end
        opt:step()
        for i, p in ipairs(ps) do
          local d = maxdiff(p, tensor(c.after[k][i]))
          assert(d < 1e-12, string.format("step %d, parameter %d: max difference %g", k, i, d))
        end
      end
    end)
  end

  -- float32: the fused kernels compute in float32 as torch does, op for op;
  -- torch's vectorised add uses FMA where the kernels round twice, so the
  -- results agree to a few float32 ulps, not bit for bit
  for _, c in ipairs(fx.cases32) do
    local label = c.name .. " float32"
    for k, v in pairs(c.opts) do
      label = label .. " " .. k .. "=" .. (type(v) == "table" and table.concat(v, "/") or tostring(v))
    end
    it(label, function()
      local ps = { tensor(fx.p0[1]):float(), tensor(fx.p0[2]):float() }
      local opt = T.optim[c.name](ps, c.opts)
      for k = 1, #c.after do
        for i, p in ipairs(ps) do grads[p] = tensor(fx.grads[k][i]):float() end
        opt:step()
        for i, p in ipairs(ps) do
          assert.are.equal(T.float32, p.dtype)
          local d = maxdiff(p:double(), tensor(c.after[k][i]))
          assert(d < 2e-6, string.format("step %d, parameter %d: max difference %g", k, i, d))
        end
      end
    end)
  end

  it("a strided parameter and gradient step as their contiguous copies", function()
    for _, c in ipairs({ fx.cases[4], fx.cases[8], fx.cases[12] }) do
      local base = tensor(fx.p0[1])
      local strided = base:t():contiguous():t() -- same values, column-major
      assert.is_false(strided:is_contiguous())
      local dense = base:clone()
      local o1, o2 = T.optim[c.name]({ strided }, c.opts), T.optim[c.name]({ dense }, c.opts)
      for k = 1, 3 do
        grads[strided] = tensor(fx.grads[k][1]):t():contiguous():t()
        grads[dense] = tensor(fx.grads[k][1])
        o1:step()
        o2:step()
      end
      assert.are.equal(0, maxdiff(strided, dense))
      assert(maxdiff(dense, tensor(c.after[3][1])) < 1e-12)
    end
  end)

  it("a step writes the parameter in place: views see it, a saved parameter is caught", function()
    local p = T.ones(3, { dtype = T.float64, requires_grad = true })
    local y = (p * p):sum() -- saves p for the backward
    local opt = T.optim.SGD({ p }, { lr = 0.5 })
    grads[p] = T.ones(3, { dtype = T.float64 })
    local view = p:detach():narrow(1, 1, 2)
    opt:step()
    assert.are.equal(0.5, view[1]:item())
    local ok, err = pcall(function() y:backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("modified by an inplace operation: [ember.float64 [3]] is at version", 1, true))
  end)

  it("large parameters give the same result on one thread and on two", function()
    local saved = T.get_num_threads()
    local function run(threads)
      T.set_num_threads(threads)
      T.manual_seed(3)
      local p = T.randn(200, 400)
      local o = T.optim.Adam({ p }, { lr = 0.01, weight_decay = 0.1, amsgrad = true })
      for _ = 1, 2 do
        grads[p] = T.randn(200, 400)
        o:step()
      end
      return p
    end
    local one, two = run(1), run(2)
    T.set_num_threads(saved)
    assert.are.equal(0, maxdiff(one, two))
  end)

  it("explains bad gradients and state", function()
    local p = T.zeros(3, 4, { dtype = T.float64 })
    local opt = T.optim.SGD({ p }, { lr = 0.1, momentum = 0.9 })
    grads[p] = T.zeros(4, { dtype = T.float64 })
    assert.has_error(function() opt:step() end,
      "SGD: the gradient of shape [4] does not match the parameter's shape [3, 4]")
    grads[p] = T.zeros(3, 4, { dtype = T.float32 })
    assert.has_error(function() opt:step() end,
      "SGD: the gradient has dtype float32 but the parameter has dtype float64")
    assert.is_nil(opt.state[p].momentum_buffer) -- a failed step leaves the state alone
    local q = T.zeros(3, { dtype = T.int64 })
    grads[q] = T.zeros(3, { dtype = T.int64 })
    assert.has_error(function() T.optim.Adam({ q }):step() end, "Adam: parameters must be floating point, got int64")
    local r = T.zeros(2, { dtype = T.float64 })
    grads[r] = T.zeros(2, { dtype = T.float64 })
    local adam = T.optim.Adam({ r })
    adam.state[r] = { step = 3, exp_avg = T.zeros(5, { dtype = T.float64 }) }
    assert.has_error(function() adam:step() end,
      "Adam: exp_avg of shape [5] does not match the parameter's shape [2]")
    assert.are.equal(3, adam.state[r].step)
    local e = T.zeros(1, { dtype = T.float64 }):expand(3)
    grads[e] = T.zeros(3, { dtype = T.float64 })
    assert.has_error(function() T.optim.SGD({ e }, { lr = 1 }):step() end,
      "SGD: the parameter has elements that share memory (an expanded tensor?); clone() it first")
  end)

  it("state_dict / load_state_dict continue a run exactly", function()
    local c = fx.cases[7] -- Adam with weight decay
    local ps = fresh_params()
    local opt = T.optim.Adam(ps, c.opts)
    for k = 1, 2 do
      for i, p in ipairs(ps) do grads[p] = tensor(fx.grads[k][i]) end
      opt:step()
    end
    local sd = opt:state_dict()
    assert.are.equal(2, sd.state[1].step)
    assert.are.same({ 1, 2 }, sd.param_groups[1].params)
    -- a new optimizer over copies of the parameters, loaded from the state
    local qs = { ps[1]:clone(), ps[2]:clone() }
    local opt2 = T.optim.Adam(qs, { lr = 1 })
    opt2:load_state_dict(sd)
    assert.are.equal(c.opts.lr, opt2.param_groups[1].lr)
    for k = 3, 4 do
      for i, q in ipairs(qs) do grads[q] = tensor(fx.grads[k][i]) end
      opt2:step()
      for i, q in ipairs(qs) do assert(maxdiff(q, tensor(c.after[k][i])) < 1e-12) end
    end
    -- the saved state is a copy: stepping opt2 did not move it
    assert.are.equal(2, sd.state[1].step)
  end)

  it("zero_grad drops gradients, or zeroes them with set_to_none = false", function()
    local ps = fresh_params()
    local opt = T.optim.SGD(ps, { lr = 0.1 })
    grads[ps[1]], grads[ps[2]] = T.ones(3, 4), T.ones(4)
    local g2 = grads[ps[2]]
    opt:zero_grad { set_to_none = false }
    assert.are.equal(g2, grads[ps[2]])
    assert.are.equal(0, g2:abs():sum():item())
    opt:zero_grad()
    assert.is_nil(grads[ps[1]])
    opt:step() -- parameters without gradients are left alone
    assert.are.equal(0, maxdiff(ps[1], tensor(fx.p0[1])))
  end)

  it("parameter groups take their own options", function()
    local ps = fresh_params()
    local opt = T.optim.SGD({ { params = { ps[1] } }, { params = { ps[2] }, lr = 0.5 } }, { lr = 0.1, momentum = 0.9 })
    assert.are.equal(0.1, opt.param_groups[1].lr)
    assert.are.equal(0.5, opt.param_groups[2].lr)
    assert.are.equal(0.9, opt.param_groups[2].momentum)
    grads[ps[2]] = T.ones(4, { dtype = T.float64 })
    opt:step()
    assert(maxdiff(ps[2], tensor(fx.p0[2]) - 0.5) < 1e-15)
  end)

  it("explains bad options", function()
    local ps = fresh_params()
    assert.has_error(function() T.optim.SGD(ps, { lr = 0.1, momentun = 0.9 }) end, "SGD: unknown option 'momentun' (expected one of: dampening, lr, maximize, momentum, nesterov, weight_decay)")
    assert.has_error(function() T.optim.SGD(ps, {}) end, "SGD: lr is required")
    assert.has_error(function() T.optim.SGD({}, { lr = 1 }) end, "SGD: optimizer got an empty parameter list")
    assert.has_error(function() T.optim.SGD(ps, { lr = -1 }) end, "SGD: Invalid learning rate: -1")
    assert.has_error(function() T.optim.SGD(ps, { lr = 0.1, nesterov = true }) end,
      "SGD: Nesterov momentum requires a momentum and zero dampening")
    assert.has_error(function() T.optim.Adam(ps, { betas = { 1, 0.9 } }) end,
      "Adam: Invalid beta parameter at index 1: 1")
  end)
end)

describe("schedulers against torch.optim.lr_scheduler", function()
  for _, s in ipairs(fx.schedulers) do
    it(s.name, function()
      local opt = T.optim.SGD({ T.zeros(1) }, { lr = 0.1 })
      local sch = T.optim.lr_scheduler[s.name](opt, s.opts)
      assert(math.abs(opt.param_groups[1].lr - s.lrs[1]) < 1e-12)
      for k = 2, #s.lrs do
        sch:step()
        assert(math.abs(opt.param_groups[1].lr - s.lrs[k]) < 1e-12,
          string.format("epoch %d: %g vs %g", k - 1, opt.param_groups[1].lr, s.lrs[k]))
        assert.are.equal(opt.param_groups[1].lr, sch:get_last_lr()[1])
      end
    end)
  end
end)

describe("clip_grad_norm_ against torch", function()
  before_each(use_hand_grads)
  after_each(restore)
  for _, c in ipairs(fx.clips) do
    it(string.format("max_norm %g, norm_type %s", c.max_norm, tostring(c.norm_type)), function()
      local ps = fresh_params()
      for i, p in ipairs(ps) do grads[p] = tensor(fx.grads[1][i]) end
      local nt = c.norm_type == "inf" and math.huge or c.norm_type
      local total = T.nn.utils.clip_grad_norm_(ps, c.max_norm, nt)
      assert(math.abs(total:item() - c.total) < 1e-12)
      for i, p in ipairs(ps) do assert(maxdiff(grads[p], tensor(c.grads[i])) < 1e-12) end
    end)
  end
end)

describe("three training steps of a small CNN against torch", function()
  before_each(use_hand_grads)
  after_each(restore)
  it("conv -> relu -> max_pool -> linear -> cross_entropy, SGD with momentum: same losses and parameters", function()
    -- the backward pass chained by hand from the graph node each nn op
    -- records (its gradients through T.autograd.grad, per input slot)
    local F, ts = T.nn.functional, fx.train_step
    local cw, cb = tensor(ts.init.conv_w), tensor(ts.init.conv_b)
    local fw, fb = tensor(ts.init.fc_w), tensor(ts.init.fc_b)
    local params = { cw, cb, fw, fb }
    local x, y = tensor(ts.x), T.tensor(ts.y)
    local opt = T.optim.SGD(params, { lr = 0.1, momentum = 0.9 })
    local function grads_on(on) for _, p in ipairs(params) do p:requires_grad_(on) end end
    -- fn returns the op's output and its inputs
    local function recorded(fn)
      grads_on(true)
      local ok, out, ins = pcall(fn)
      grads_on(false)
      assert(ok, out)
      return out, function(go)
        grads_on(true)
        local list, slot = {}, {}
        for i = 1, 3 do
          if ins[i] ~= nil and ins[i].requires_grad then list[#list + 1], slot[#list + 1] = ins[i], i end
        end
        local ok2, gs = pcall(T.autograd.grad, { out }, list, { grad_outputs = { go }, retain_graph = true })
        grads_on(false)
        assert(ok2, gs)
        local res = {}
        for k, i in pairs(slot) do res[i] = gs[k] end
        return res
      end
    end
    for step = 1, 3 do
      opt:zero_grad()
      local a1, conv_bwd = recorded(function() return F.conv2d(x, cw, cb, { padding = 1 }), { x, cw, cb } end)
      local h1 = a1:detach():relu()
      local p1, pool_bwd = recorded(function()
        local h = h1:clone()
        h:requires_grad_(true)
        return F.max_pool2d(h, 2), { h }
      end)
      local f = p1:detach():reshape(5, -1)
      local logits = T.linear(f, fw, fb)
      local loss, ce_bwd = recorded(function()
        local l = logits:clone()
        l:requires_grad_(true)
        return F.cross_entropy(l, y, { label_smoothing = 0.1 }), { l }
      end)
      assert(math.abs(loss:item() - ts.losses[step]) < 1e-12, "loss at step " .. step)
      local g = ce_bwd(T.tensor(1, { dtype = T.float64 }))[1]
      grads[fw], grads[fb] = g:t():mm(f), g:sum(1)
      g = g:mm(fw):reshape(p1.shape)
      g = pool_bwd(g)[1] * a1:gt(0)
      local gc = conv_bwd(g)
      grads[cw], grads[cb] = gc[2], gc[3]
      opt:step()
      for i, p in ipairs(params) do
        local d = maxdiff(p, tensor(ts.after[step][i]))
        assert(d < 1e-12, string.format("step %d, parameter %d: max difference %g", step, i, d))
      end
    end
  end)
end)
