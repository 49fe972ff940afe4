-- Differences from PyTorch 1.13 found by the twelfth round of differential
-- tests, in-place operation and aliasing (ember against torch on the same
-- inputs), each with torch's value or error. Positions are 1-based in ember
-- (dims, indices): those shifts are not differences.
local T = require "ember"

local function FT(v) return T.tensor(v, { dtype = T.float32 }) end

local function near(want, got, tol)
  got = got:flatten():tolist()
  assert.equal(#want, #got)
  for i = 1, #want do
    assert(math.abs(want[i] - got[i]) <= (tol or 1e-4) * (1 + math.abs(want[i])),
      string.format("element %d: want %.7g, got %.7g", i, want[i], got[i]))
  end
end

local B = { { 0.5, 1.5, 2.0 }, { 1.0, 3.0, 0.25 } }
local W = FT { { 1, 2, 3 }, { 4, 5, 6 } }

describe("difftest round 12: in-place ops and aliasing (torch 1.13)", function()
  -- the in-place forms composed in Lua as t:copy_(f(t)) computed f from t
  -- itself, so the node f recorded had saved the storage copy_ then
  -- overwrote, and backward failed the version check where torch's runs
  it("cumprod_ on a non-leaf is differentiable", function()
    -- x = tensor(B, requires_grad=True); y = x * 1; y.cumprod_(1)
    -- (y * arange(1., 7.).reshape(2, 3)).sum().backward()
    local x = FT(B):requires_grad_()
    local y = x * 1
    y:cumprod_(2)
    near({ 0.5, 0.75, 1.5, 1.0, 3.0, 0.75 }, y)
    ;(y * W):sum():backward()
    near({ 13.0, 4.0, 2.25, 23.5, 6.5, 18.0 }, x.grad)
    -- 1-d: y = (tensor([2., 3, 4]) * 1).cumprod_(0); y.sum().backward()
    local a = FT { 2, 3, 4 }:requires_grad_()
    local b = a * 1
    b:cumprod_(1)
    b:sum():backward()
    near({ 2, 6, 24 }, b)
    near({ 16, 10, 6 }, a.grad)
  end)

  it("igamma_ / igammac_ give the other operand its gradient", function()
    -- y = tensor(B); e = tensor([1., 2., .5], requires_grad=True); y.igamma_(e)
    -- (y * arange(1., 7.).reshape(2, 3)).sum().backward(); e.grad
    local y = FT(B)
    local e = FT { 1, 2, 0.5 }:requires_grad_()
    y:igamma_(e)
    ;(y * W):sum():backward()
    near({ 0.8427008, 0.7385359, 0.0902040, 0.6321204, 0.3233237, 0.8464863 }, y)
    near({ 1.6790715, 1.7852805, 2.5978854 }, e.grad)
    local z = FT(B)
    local f = FT { 1, 2, 0.5 }:requires_grad_()
    z:igammac_(f)
    ;(z * W):sum():backward()
    near({ 0.1572992, 0.2614641, 0.9097960, 0.3678794, 0.6766763, 0.1535136 }, z)
    near({ -1.6790715, -1.7852805, -2.5978854 }, f.grad)
  end)

  it("renorm_ on a non-leaf is differentiable", function()
    -- y = tensor(B, requires_grad=True) * 1; y.renorm_(2, 0, 1.0)
    local x = FT(B):requires_grad_()
    local y = x * 1
    y:renorm_(2, 1, 1.0)
    near({ 0.1961161, 0.5883484, 0.7844645, 0.3152442, 0.9457325, 0.0788110 }, y)
    ;(y * W):sum():backward()
    near({ 0.1056010, -0.0754292, 0.0301718, 0.6187401, -0.3504888, 1.7309058 }, x.grad)
  end)

  it("the in-place forms still refuse a leaf that requires grad, under their own name", function()
    -- torch: a leaf Variable that requires grad is being used in an in-place operation.
    local x = FT(B):requires_grad_()
    assert.error_matches(function() x:cumprod_(2) end, "cumprod_: a leaf tensor that requires grad")
    assert.error_matches(function() x:renorm_(2, 1, 1.0) end, "renorm_: a leaf tensor that requires grad")
    assert.error_matches(function() x:igamma_(FT { 1, 2, 3 }) end, "igamma_: a leaf tensor that requires grad")
    -- F.dropout(x, 1.0, True, inplace=True) on such a leaf: the same error,
    -- which ember named copy_
    local F = T.nn.functional
    local ok, err = pcall(function() F.dropout(x, 1.0, true, true) end)
    assert.is_false(ok)
    assert.matches("^[^\n]*difftest12_inplace_spec.lua:%d+: dropout: a leaf tensor that requires grad", err)
    -- an expanded tensor: torch's "more than one element of the written-to
    -- tensor refers to a single memory location"
    local e = FT { 1, 2, 3 }:expand(2, 3)
    assert.error_matches(function() F.dropout(e, 1.0, true, true) end,
      "dropout: unsupported operation: more than one element of the written%-to tensor")
    -- and the write itself: x = tensor([-2., 0, 3]); F.dropout(x, 1., True, True) is x, zeros
    local d = FT { -2, 0, 3 }
    assert.equal(d, F.dropout(d, 1.0, true, true))
    near({ 0, 0, 0 }, d)
  end)
  it("scatter_add_ and index_put_ errors name the op called, not the engine op under it", function()
    local e = T.zeros(1):expand(3)
    local ok, err = pcall(function() e:scatter_add_(1, T.tensor({ 1, 2, 3 }), T.ones(3)) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("scatter_add_: unsupported operation: more than one element", 1, true), err)
    ok, err = pcall(function() e:index_put_({ T.tensor({ 1 }) }, T.ones(1)) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("index_put_: unsupported operation: more than one element", 1, true), err)
  end)
  it("a property assignment's error points at the assignment's line (x.grad of the wrong size)", function()
    local x = T.zeros(2)
    local ok, err = pcall(function()
      x.grad = T.zeros(3) -- this line
    end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("difftest12_inplace_spec.lua:%d+: grad: assigned grad has data of a different size"), err)
  end)
end)
