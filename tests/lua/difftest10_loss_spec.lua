-- Differences from PyTorch 1.13 found by the tenth round of differential
-- tests (every loss in T.nn.functional), each with torch's value or error.
-- Class ids are 1-based in ember: that shift is not a difference.
local T = require "ember"
local U = require "specutil"
local err = U.err
local F = T.nn.functional
local f64 = { dtype = T.float64 }

local near = U.near_list

describe("difftest round 10: losses (torch 1.13)", function()
  it("nll_loss and cross_entropy name the target shape they expect, at the caller's position", function()
    local x = T.randn(5, 4, f64)
    -- torch: "Expected input batch_size (5) to match target batch_size (4)."; ember named the
    -- target's own shape [4] as the expected one
    err(function() F.cross_entropy(x, T.tensor { 1, 2, 3, 4 }) end,
      "cross_entropy: expected target of shape [5] for input of shape [5, 4], got [4]")
    err(function() F.nll_loss(x, T.tensor { 1, 2, 3, 4 }) end,
      "nll_loss: expected target of shape [5] for input of shape [5, 4], got [4]")
    -- torch: "Expected target size [2, 4], got [2, 5]" / "... got [2]"
    err(function() F.nll_loss(T.randn(2, 3, 4, f64), T.ones(2, 5, { dtype = T.int64 })) end,
      "nll_loss: expected target of shape [2, 4] for input of shape [2, 3, 4], got [2, 5]")
    err(function() F.cross_entropy(T.randn(2, 3, 4, f64), T.tensor { 1, 2 }) end,
      "expected target of shape [2, 4] for input of shape [2, 3, 4], got [2]")
    -- nll_loss's engine errors came with "functional.lua:NNN: " in front
    local ok, msg = pcall(F.nll_loss, x, T.tensor { 1, 2, 3, 4, 9 })
    assert.is_false(ok)
    assert.is_nil(msg:find("functional.lua", 1, true))
    assert.is_truthy(msg:find("^nll_loss: target 9 is out of bounds"))
    -- the right shapes still compute
    assert.equal(0, F.nll_loss(T.randn(2, 3, 4, f64), T.ones(2, 4, { dtype = T.int64 })):dim())
    assert.equal(0, F.cross_entropy(T.randn(3, f64), T.tensor(2)):dim())
  end)

  it("binary losses refuse a weight or pos_weight that broadcasts beyond the input", function()
    local x = T.tensor({ { 0.5, -1.0, 2.0, 0.0 }, { 1.5, -0.5, 0.25, -2.0 } }, f64):requires_grad_()
    local y = T.tensor({ { 1.0, 0.0, 0.5, 1.0 }, { 0.0, 1.0, 0.25, 0.75 } }, f64)
    -- torch: "output with shape [2, 4] doesn't match the broadcast shape [3, 2, 4]"; ember returned
    -- a [3, 2, 4] loss (or its mean)
    err(function() F.binary_cross_entropy_with_logits(x, y, { pos_weight = T.rand(3, 2, 4, f64) }) end,
      "binary_cross_entropy_with_logits: output with shape [2, 4] doesn't match the broadcast shape [3, 2, 4]")
    err(function() F.binary_cross_entropy_with_logits(x, y, { weight = T.rand(3, 1, 1, f64), reduction = "none" }) end,
      "output with shape [2, 4] doesn't match the broadcast shape [3, 2, 4]")
    err(function() F.binary_cross_entropy(x:sigmoid(), y, { weight = T.rand(3, 2, 4, f64) }) end,
      "binary_cross_entropy: output with shape [2, 4] doesn't match the broadcast shape [3, 2, 4]")
    err(function() F.binary_cross_entropy_with_logits(T.zeros(2, 1, f64), T.zeros(2, 1, f64), { pos_weight = T.ones(4, f64) }) end,
      "output with shape [2, 1] doesn't match the broadcast shape [2, 4]")
    -- weights that broadcast to the input still do
    local l = F.binary_cross_entropy_with_logits(x, y, { pos_weight = T.tensor({ { 2.0 }, { 0.5 } }, f64),
      weight = T.tensor({ 1.0, 2.0, 0.5, 1.5 }, f64), reduction = "none" })
    near(l, { 0.9481539683602134, 0.6265233750364456, 0.5951960082822294, 2.0794415416798357,
      1.7014132779827524, 0.9740769841801067, 0.3457234961969941, 1.2439950103527868 }, 1e-12)
    l:sum():backward()
    near(x.grad, { -0.7550813375962908, 0.5378828427399902, 0.16059780848341176, -1.5,
      0.8175744761936437, -0.6224593312018546, 0.18345221913753665, -0.45074726060426484 }, 1e-12)
    near({ F.binary_cross_entropy(x:detach():sigmoid(), y, { weight = T.tensor({ { 2.0 }, { 0.5 } }, f64),
      reduction = "sum" }):item() }, { 7.747756573144831 }, 1e-12)
  end)

  it("multi_margin_loss wants one weight per class", function()
    -- torch 1.13 reads past a short weight (garbage); later versions: "inconsistent weight size,
    -- expected 4 but got [3]". ember raised a gather error for ids past the weight, else computed.
    local x = T.randn(5, 4, f64)
    err(function() F.multi_margin_loss(x, T.tensor { 1, 2, 3, 4, 4 }, { weight = T.rand(3, f64) }) end,
      "multi_margin_loss: inconsistent weight size, expected 4 but got")
    err(function() F.multi_margin_loss(x, T.tensor { 1, 2, 3, 1, 1 }, { weight = T.rand(3, f64) }) end,
      "inconsistent weight size, expected 4")
    err(function() F.multi_margin_loss(T.randn(4, f64), T.tensor(2), { weight = T.rand(5, f64) }) end,
      "inconsistent weight size, expected 4")
    assert.equal(0, F.multi_margin_loss(x, T.tensor { 1, 2, 3, 1, 1 }, { weight = T.rand(4, f64) }):dim())
  end)
end)
