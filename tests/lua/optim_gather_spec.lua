-- optim: the gathered step loop (docs/optim.md, "One launch for many
-- parameters"): the built-in optimizers queue the updates of contiguous
-- parameters and run them through the device's multi entry (on cuda one
-- launch; on the CPU one after the other). Checked here on the CPU: the
-- same bits as the same updates run one at a time, the queue's limits (64
-- updates, a change of dtype, memory shared with a queued update, a
-- non-contiguous parameter), and errors in the middle of a step.
local T = require "ember"
local C = T._C

local grads = setmetatable({}, { __mode = "k" })
local saved
local function use_hand_grads()
  saved = T.optim.grad_of
  T.optim.grad_of = function(p) return grads[p] end
end
local function restore() T.optim.grad_of = saved end

-- n parameters of assorted shapes (one non-contiguous when asked), with
-- gradients; the same values on every call with the same seed
local function params(n, dtype, strided)
  T.manual_seed(17)
  local ps = {}
  for i = 1, n do
    local p = T.randn(3 + i % 4, 5, { dtype = dtype })
    if strided and i == 2 then p = T.randn(5, 3 + i % 4, { dtype = dtype }):t() end
    ps[i] = p
    grads[p] = T.randn(p.shape, { dtype = dtype })
  end
  return ps
end

-- the optimizer's own update, wrapped: a function the loop does not know
-- runs ungathered, one update at a time, as before gathering
local function ungathered(opt)
  local u = opt.update
  opt.update = function(...) return u(...) end
  return opt
end

local CASES = {
  { "SGD", { lr = 0.1, momentum = 0.9, nesterov = true, weight_decay = 0.01 } },
  { "Adam", { lr = 1e-2, amsgrad = true } },
  { "AdamW", { lr = 1e-2 } },
  { "RMSprop", { lr = 1e-2, momentum = 0.5, centered = true } },
  { "Adagrad", { lr = 0.1 } },
  { "NAdam", { lr = 1e-2 } },
  { "Rprop", { lr = 1e-2 } },
}

describe("the gathered optimizer step", function()
  before_each(use_hand_grads)
  after_each(restore)

  it("gives the bits of the updates run one at a time, for every family, float32 and float64, over 3 steps", function()
    for _, c in ipairs(CASES) do
      for _, dt in ipairs { T.float32, T.float64 } do
        local a, b = params(7, dt, true), params(7, dt, true)
        local oa = T.optim[c[1]](a, c[2])
        local ob = ungathered(T.optim[c[1]](b, c[2]))
        local before = C._optim_multi_calls()
        for _ = 1, 3 do
          oa:step()
          ob:step()
        end
        -- one queue per step (the strided parameter ran at once)
        assert.equal(3, C._optim_multi_calls() - before, c[1])
        for i = 1, #a do
          assert.is_true(T.equal(a[i], b[i]), c[1] .. " " .. tostring(dt) .. " parameter " .. i)
        end
        for i = 1, #a do
          for k, v in pairs(ob.state[b[i]]) do
            local w = oa.state[a[i]][k]
            if T.is_tensor(v) then assert.is_true(T.equal(w, v), c[1] .. " state " .. k)
            else assert.equal(v, w) end
          end
        end
      end
    end
  end)

  it("runs at most 64 updates per multi call, and splits at a change of dtype", function()
    local ps = params(100, T.float32)
    local before = C._optim_multi_calls()
    T.optim.SGD(ps, { lr = 0.1 }):step()
    assert.equal(2, C._optim_multi_calls() - before)
    local mixed = params(4, T.float32)
    for i, p in ipairs(params(4, T.float64)) do mixed[4 + i] = p end
    before = C._optim_multi_calls()
    T.optim.SGD(mixed, { lr = 0.1 }):step()
    assert.equal(2, C._optim_multi_calls() - before)
  end)

  it("runs a queued update before one that shares its memory (a parameter listed twice)", function()
    local p = T.ones(4)
    grads[p] = T.ones(4)
    local q = T.ones(4)
    grads[q] = T.ones(4)
    local before = C._optim_multi_calls()
    T.optim.SGD({ p, p }, { lr = 0.25 }):step()
    T.optim.SGD({ q }, { lr = 0.25 }):step()
    T.optim.SGD({ q }, { lr = 0.25 }):step()
    assert.is_true(T.equal(p, q)) -- 1 - 0.25 - 0.25, twice in turn
    assert.equal(T.tensor { 0.5, 0.5, 0.5, 0.5 }:tolist()[1], p:tolist()[1])
    assert.equal(4, C._optim_multi_calls() - before)
  end)

  it("runs the queue before a non-contiguous update that shares its memory", function()
    local function setup()
      local base = T.arange(16, { dtype = T.float64 }):reshape(4, 4)
      local p1 = base:narrow(1, 1, 2)  -- rows 1-2: contiguous, queued
      local p2 = base:narrow(2, 1, 2)  -- columns 1-2: strided, runs at once
      grads[p1] = T.ones(2, 4, { dtype = T.float64 })
      grads[p2] = T.full({ 4, 2 }, 2, { dtype = T.float64 })
      return base, p1, p2
    end
    local ba, a1, a2 = setup()
    local bb, b1, b2 = setup()
    local before = C._optim_multi_calls()
    -- weight decay makes the second update read the first one's result
    T.optim.SGD({ a1, a2 }, { lr = 0.5, weight_decay = 0.5 }):step()
    ungathered(T.optim.SGD({ b1, b2 }, { lr = 0.5, weight_decay = 0.5 })):step()
    assert.equal(1, C._optim_multi_calls() - before)
    assert.is_true(T.equal(ba, bb))
    -- element (1, 1), 0 at first: p1's step to -0.5, then p2's reads it:
    -- -0.5 - 0.5 * (2 + 0.5 * -0.5) = -1.375 (the other order gives -1.25)
    assert.equal(-1.375, ba[1][1]:item())
  end)

  it("bumps versions at once, and an error in the middle runs what was queued before it", function()
    local ps = params(4, T.float64)
    local want = {}
    for i = 1, 4 do want[i] = ps[i]:clone() end
    grads[ps[3]] = T.randn(2, 2, { dtype = T.float64 }) -- wrong shape
    -- a graph that saved parameter 1 sees its version move
    local saved_p = T.tensor(0.0, { dtype = T.float64 }):requires_grad_()
    local loss = (saved_p * ps[1]):sum()
    local opt = T.optim.SGD(ps, { lr = 0.5 })
    local ok, err = pcall(function() opt:step() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("does not match the parameter's shape", 1, true))
    local bok, berr = pcall(function() loss:backward() end)
    assert.is_false(bok)
    assert.truthy(tostring(berr):find("modified by an inplace operation", 1, true))
    -- parameters 1 and 2 moved (their queue ran), 3 and 4 did not
    assert.is_true(T.allclose(ps[1], want[1] - grads[ps[1]] * 0.5))
    assert.is_true(T.allclose(ps[2], want[2] - grads[ps[2]] * 0.5))
    assert.is_true(T.equal(ps[3], want[3]))
    assert.is_true(T.equal(ps[4], want[4]))
    -- and the thread no longer gathers: a step on its own runs at once
    local p = T.ones(3)
    grads[p] = T.ones(3)
    C._optim_sgd(p, grads[p], nil, 1, 0, 0, 0, false, false)
    assert.is_true(T.equal(p, T.zeros(3)))
  end)
end)
