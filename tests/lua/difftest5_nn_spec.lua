-- Differences of ember's nn from PyTorch 1.13's torch.nn.functional found
-- by the fifth round of differential tests, each with torch's value or
-- error. Positions are 1-based in ember (dims, indices, class ids): those
-- shifts are not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err

local F = T.nn.functional
local inf, nan = math.huge, 0 / 0
local function shape(t) return table.concat(t:size(), ",") end
local function f32(v) return T.tensor(v, { dtype = T.float32 }) end
local function ids(v) return T.tensor(v, { dtype = T.int64 }) end

describe("difftest round 5 (nn): cross_entropy with non-finite logits", function()
  local function nan_row(g, r)
    for _, v in ipairs(g:select(1, r):tolist()) do assert.is_true(v ~= v, "expected NaN, got " .. tostring(v)) end
  end

  it("a +inf or NaN logit makes the row's loss and gradient NaN, the other rows untouched", function()
    -- torch: F.cross_entropy(x, t) for x = [[1, inf, 2], [0, 1, 2]], t = [0, 2]:
    -- loss nan, x.grad [[nan, nan, nan], [0.0450153, 0.1223642, -0.1673795]]
    for _, row in ipairs { { 1, inf, 2 }, { 1, nan, 2 }, { inf, inf, 1 }, { -inf, -inf, -inf } } do
      for _, o in ipairs { {}, { label_smoothing = 0.1 } } do
        local x = f32({ row, { 0, 1, 2 } }):requires_grad_()
        local l = F.cross_entropy(x, ids { 1, 3 }, o)
        assert.is_true(l:item() ~= l:item())
        l:backward()
        nan_row(x.grad, 1)
        local want = o.label_smoothing and { 0.0283486, 0.1056976, -0.1340462 } or { 0.0450153, 0.1223642, -0.1673795 }
        U.near(x.grad:select(1, 2), f32(want), 1e-6)
      end
      -- probabilities as the target: the same NaN row
      local x = f32({ row, { 0, 1, 2 } }):requires_grad_()
      F.cross_entropy(x, f32 { { 0.2, 0.3, 0.5 }, { 0.1, 0.1, 0.8 } }):backward()
      nan_row(x.grad, 1)
      U.near(x.grad:select(1, 2), f32 { -0.0049847, 0.0723642, -0.0673795 }, 1e-6)
    end
    -- float64 and reduction "none": loss [nan, 0.4076059]
    local x = T.tensor({ { 1, inf, 2 }, { 0, 1, 2 } }, { dtype = T.float64 }):requires_grad_()
    local l = F.cross_entropy(x, ids { 1, 3 }, { reduction = "none" })
    assert.is_true(l[1]:item() ~= l[1]:item())
    l:sum():backward()
    nan_row(x.grad, 1)
  end)

  it("an ignored row of non-finite logits still has a NaN gradient through log_softmax", function()
    -- torch: t = [-100, 2]: loss 0.4076059 (the row is ignored), but
    -- x.grad[0] = [nan, nan, nan] (0 - exp(nan) * 0); a finite ignored row: zeros
    for _, row in ipairs { { 1, inf, 2 }, { 1, nan, 2 }, { -inf, -inf, -inf } } do
      local x = f32({ row, { 0, 1, 2 } }):requires_grad_()
      local l = F.cross_entropy(x, ids { -100, 3 })
      assert.is_true(math.abs(l:item() - 0.4076059) < 1e-6)
      l:backward()
      nan_row(x.grad, 1)
      U.near(x.grad:select(1, 2), f32 { 0.0900306, 0.2447285, -0.3347590 }, 1e-6)
    end
    local x = f32({ { 1, -inf, 2 }, { 0, 1, 2 } }):requires_grad_()
    F.cross_entropy(x, ids { -100, 3 }):backward()
    assert.is_true(T.equal(x.grad:select(1, 1), T.zeros(3)))
    -- a weight of 0 for the target of a NaN row: loss NaN (0 * NaN), as torch
    local w = f32 { 0, 1, 1 }
    x = f32({ { 1, nan, 2 }, { 0, 1, 2 } })
    local l = F.cross_entropy(x, ids { 1, 3 }, { weight = w, reduction = "none" })
    assert.is_true(l[1]:item() ~= l[1]:item())
  end)
end)

describe("difftest round 5 (nn): gaussian_nll_loss var shapes", function()
  it("a 0-d input takes a var of shape [1] (torch compares size()[:-1])", function()
    -- torch: F.gaussian_nll_loss(tensor(1.), tensor(2.), tensor([0.5])) -> 0.6534264 (0-d);
    -- reduction='none' -> shape (1,)
    local l = F.gaussian_nll_loss(f32(1), f32(2), f32 { 0.5 })
    assert.equal("", shape(l))
    assert.is_true(math.abs(l:item() - 0.6534264) < 1e-6)
    l = F.gaussian_nll_loss(f32(1), f32(2), f32 { 0.5 }, { reduction = "none" })
    assert.equal("1", shape(l))
    -- torch: var (2,) or (1, 1) for a 0-d input -> "var is of incorrect size"
    err(function() F.gaussian_nll_loss(f32(1), f32(2), f32 { 0.5, 2 }) end, "var is of incorrect size")
    err(function() F.gaussian_nll_loss(f32(1), f32(2), f32 { { 0.5 } }) end, "var is of incorrect size")
    -- the other small shapes, as torch: var one dim short, var last dim 1
    assert.equal("2,2", shape(F.gaussian_nll_loss(f32 { { 1, 3 }, { 1, 1 } }, f32 { { 2, 2 }, { 0, 0 } },
      f32 { 0.5, 1 }, { reduction = "none" })))
    assert.equal("2,2", shape(F.gaussian_nll_loss(f32 { { 1, 3 }, { 1, 1 } }, f32 { { 2, 2 }, { 0, 0 } },
      f32 { { 0.5 }, { 1 } }, { reduction = "none" })))
    assert.equal("2", shape(F.gaussian_nll_loss(f32 { 1, 3 }, f32 { 2, 2 }, f32(0.5), { reduction = "none" })))
    assert.equal("2", shape(F.gaussian_nll_loss(f32 { 1, 3 }, f32 { 2, 2 }, f32 { 0.5 }, { reduction = "none" })))
    -- torch: var (1, 2) or (1,) for a (2, 2) input, (1, 1) for a (2,) one -> refused
    err(function() F.gaussian_nll_loss(f32 { { 1, 3 }, { 1, 1 } }, f32 { { 2, 2 }, { 0, 0 } }, f32 { { 0.5, 1 } }) end,
      "var is of incorrect size")
    err(function() F.gaussian_nll_loss(f32 { { 1, 3 }, { 1, 1 } }, f32 { { 2, 2 }, { 0, 0 } }, f32 { 0.5 }) end,
      "var is of incorrect size")
    err(function() F.gaussian_nll_loss(f32 { 1, 3 }, f32 { 2, 2 }, f32 { { 0.5 } }) end, "var is of incorrect size")
  end)
end)
