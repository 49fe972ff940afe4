-- gradcheck for every differentiable op: the backward's Jacobian against
-- float64 central finite differences (T.autograd.gradcheck).
local T = require "ember"

local f64 = { dtype = T.float64 }
local function r(...) -- a float64 leaf that requires grad
  return T.randn(...):double():requires_grad_()
end
local function pos(...) -- positive values, away from 0
  return (T.rand(...):double() + 0.5):requires_grad_()
end
local function unit(...) -- inside (-0.9, 0.9)
  return (T.rand(...):double() * 1.8 - 0.9):requires_grad_()
end
local function distinct(...) -- well separated values (max/sort/median)
  local n = 1
  for _, s in ipairs { ... } do n = n * s end
  return (T.randperm(n):double() * 0.5 + T.rand(n):double() * 0.1):view(...):requires_grad_()
end
local function idx(t) return T.tensor(t, { dtype = T.int64 }) end
-- NaN at three places of a 3x4 matrix, 0 elsewhere
local nans = T.where(T.tensor { { false, true, false, false }, { true, false, false, false }, { false, false, false, true } },
  T.full({ 3, 4 }, 0 / 0, { dtype = T.float64 }), T.zeros(3, 4, { dtype = T.float64 }))

local cases = {
  -- elementwise, with broadcasting and scalars
  { "add", function(a, b) return a + b end, { r(3, 4), r(4) } },
  { "add alpha", function(a, b) return T.add(a, b, { alpha = 2.5 }) end, { r(3, 1), r(1, 4) } },
  { "sub", function(a, b) return a - b end, { r(2, 3), r(2, 1) } },
  { "sub scalar", function(a) return 3 - a end, { r(3) } },
  { "mul", function(a, b) return a * b end, { r(2, 3), r(3) } },
  { "mul scalar", function(a) return a * 1.5 end, { r(4) } },
  { "div", function(a, b) return a / b end, { r(2, 3), pos(2, 3) } },
  { "div scalar by tensor", function(b) return 2 / b end, { pos(3) } },
  { "neg", function(a) return -a end, { r(3) } },
  { "pow scalar", function(a) return a ^ 3 end, { r(4) } },
  { "pow tensor", function(a, b) return a:pow(b) end, { pos(3), r(3) } },
  { "pow scalar base", function(b) return T.pow(2, b) end, { r(3) } },
  { "exp", function(a) return a:exp() end, { r(3, 2) } },
  { "exp2", function(a) return a:exp2() end, { r(3) } },
  { "expm1", function(a) return a:expm1() end, { r(3) } },
  { "log", function(a) return a:log() end, { pos(3) } },
  { "log2", function(a) return a:log2() end, { pos(3) } },
  { "log10", function(a) return a:log10() end, { pos(3) } },
  { "log1p", function(a) return a:log1p() end, { pos(3) } },
  { "sqrt", function(a) return a:sqrt() end, { pos(3) } },
  { "rsqrt", function(a) return a:rsqrt() end, { pos(3) } },
  { "square", function(a) return a:square() end, { r(3) } },
  { "reciprocal", function(a) return a:reciprocal() end, { pos(3) } },
  { "abs", function(a) return a:abs() end, { pos(3) } },
  { "sin", function(a) return a:sin() end, { r(3) } },
  { "cos", function(a) return a:cos() end, { r(3) } },
  { "tan", function(a) return a:tan() end, { unit(3) } },
  { "asin", function(a) return a:asin() end, { unit(3) } },
  { "acos", function(a) return a:acos() end, { unit(3) } },
  { "atan", function(a) return a:atan() end, { r(3) } },
  { "asinh", function(a) return a:asinh() end, { r(3) } },
  { "acosh", function(a) return a:acosh() end, { (T.rand(3):double() + 1.5):requires_grad_() } },
  { "atanh", function(a) return a:atanh() end, { unit(3) } },
  { "sinh", function(a) return a:sinh() end, { r(3) } },
  { "cosh", function(a) return a:cosh() end, { r(3) } },
  { "tanh", function(a) return a:tanh() end, { r(3) } },
  { "sigmoid", function(a) return a:sigmoid() end, { r(3) } },
  { "relu", function(a) return a:relu() end, { distinct(5) - 1 } },
  { "gelu", function(a) return a:gelu() end, { r(4) } },
  { "gelu tanh", function(a) return T.gelu(a, { approximate = "tanh" }) end, { r(4) } },
  { "silu", function(a) return a:silu() end, { r(4) } },
  { "softplus", function(a) return a:softplus() end, { r(4) } },
  { "erf", function(a) return a:erf() end, { r(4) } },
  { "frac", function(a) return a:frac() end, { pos(3) } },
  { "atan2", function(a, b) return T.atan2(a, b) end, { r(3), pos(3) } },
  { "maximum", function(a, b) return T.maximum(a, b) end, { r(4), r(4) } },
  { "minimum", function(a, b) return T.minimum(a, b) end, { r(4), r(4) } },
  { "remainder", function(a, b) return T.remainder(a, b) end, { pos(4), pos(4) + 2 } },
  { "fmod", function(a, b) return T.fmod(a, b) end, { pos(4), pos(4) + 2 } },
  { "lerp", function(a, b, w) return T.lerp(a, b, w) end, { r(3), r(3), r(3) } },
  { "clamp", function(a) return a:clamp(-0.5, 0.5) end, { distinct(6) - 1.4 } },
  { "clamp tensors", function(a, lo, hi) return T.clamp(a, lo, hi) end,
    { distinct(6) - 1.4, r(6) * 0.1 - 0.6, r(6) * 0.1 + 0.6 } },
  { "to another dtype and back", function(a) return a:to(T.float32):to(T.float64) * 2 end,
    { T.tensor({ 0.5, -1.25, 2 }, f64):requires_grad_() }, { eps = 1 / 64, atol = 1e-6 } },
  -- reductions
  { "sum", function(a) return a:sum() end, { r(3, 4) } },
  { "sum dim", function(a) return a:sum(2) end, { r(3, 4) } },
  { "sum dims keepdim", function(a) return a:sum({ 1, 3 }, true) end, { r(2, 3, 4) } },
  { "mean", function(a) return a:mean(-1) end, { r(3, 4) } },
  { "prod", function(a) return a:prod(2) end, { r(3, 4) } },
  { "prod with a zero", function(a) return a:prod() end, { T.tensor({ 1.5, 0, 2, -1 }, f64):requires_grad_() } },
  { "amax", function(a) return a:amax(1) end, { distinct(3, 4) } },
  { "amin", function(a) return a:amin({ 1, 2 }) end, { distinct(3, 4) } },
  { "max dim", function(a) return a:max(2) end, { distinct(3, 4) } },
  { "min dim keepdim", function(a) return a:min(1, true) end, { distinct(3, 4) } },
  { "max all", function(a) return a:max() end, { distinct(3, 4) } },
  { "nansum (NaN places get no gradient)", function(a) return (a + nans):nansum(2) end, { r(3, 4) } },
  { "nanmean", function(a) return (a + nans):nanmean(1) end, { r(3, 4) } },
  { "cummin", function(a) return a:cummin(1) end, { distinct(3, 4) } },
  { "std_mean", function(a) return a:std_mean(2) end, { r(3, 4) } },
  { "std", function(a) return a:std(2) end, { r(3, 4) } },
  { "var", function(a) return a:var() end, { r(3, 4) } },
  { "var_mean", function(a) return a:var_mean(1) end, { r(3, 4) } },
  { "norm", function(a) return a:norm() end, { r(3, 4) } },
  { "norm 1", function(a) return a:norm(1, 2) end, { r(3, 4) } },
  { "norm 3", function(a) return a:norm(3, 2) end, { r(3, 4) } },
  { "norm inf", function(a) return a:norm(math.huge) end, { distinct(3, 4) } },
  { "logsumexp", function(a) return a:logsumexp(2) end, { r(3, 4) } },
  { "softmax", function(a) return a:softmax(2) end, { r(3, 4) } },
  { "log_softmax", function(a) return a:log_softmax(1) end, { r(3, 4) } },
  { "cumsum", function(a) return a:cumsum(2) end, { r(3, 4) } },
  { "cumprod", function(a) return a:cumprod(1) end, { pos(3, 4) } },
  { "cummax", function(a) return a:cummax(2) end, { distinct(3, 4) } },
  { "sort", function(a) return a:sort(2) end, { distinct(3, 4) } },
  { "topk", function(a) return a:topk(2) end, { distinct(3, 4) } },
  { "kthvalue", function(a) return a:kthvalue(2, 1) end, { distinct(3, 4) } },
  { "median dim", function(a) return a:median(2) end, { distinct(3, 5) } },
  { "median", function(a) return a:median() end, { distinct(3, 5) } },
  -- linear algebra
  { "mm", function(a, b) return a:mm(b) end, { r(2, 3), r(3, 4) } },
  { "bmm", function(a, b) return a:bmm(b) end, { r(2, 2, 3), r(2, 3, 2) } },
  { "mv", function(a, v) return a:mv(v) end, { r(2, 3), r(3) } },
  { "dot", function(a, b) return a:dot(b) end, { r(4), r(4) } },
  { "outer", function(a, b) return a:outer(b) end, { r(3), r(2) } },
  { "matmul broadcast", function(a, b) return a:matmul(b) end, { r(2, 3, 4), r(4, 2) } },
  { "matmul vec-mat", function(a, b) return a:matmul(b) end, { r(3), r(2, 3, 4) } },
  { "matmul mat-vec", function(a, b) return a:matmul(b) end, { r(2, 3, 4), r(4) } },
  { "addmm", function(i, a, b) return T.addmm(i, a, b, { beta = 0.5, alpha = 2 }) end, { r(3), r(2, 4), r(4, 3) } },
  { "addmv", function(i, a, v) return T.addmv(i, a, v) end, { r(2), r(2, 3), r(3) } },
  { "baddbmm", function(i, a, b) return T.baddbmm(i, a, b) end, { r(2, 2), r(3, 2, 4), r(3, 4, 2) } },
  { "linear", function(x, w, b) return T.linear(x, w, b) end, { r(2, 5, 3), r(4, 3), r(4) } },
  { "linear 1-d", function(x, w) return T.linear(x, w) end, { r(3), r(4, 3) } },
  -- views
  { "narrow", function(a) return a:narrow(2, 2, 2) end, { r(3, 4) } },
  { "select", function(a) return a:select(1, -1) end, { r(3, 4) } },
  { "transpose", function(a) return a:transpose(1, 3) end, { r(2, 3, 4) } },
  { "t", function(a) return a:t() * T.arange(3):double() end, { r(3, 2) } },
  { "T", function(a) return a.T end, { r(2, 3, 4) } },
  { "mT", function(a) return a.mT end, { r(2, 3, 4) } },
  { "permute", function(a) return a:permute(3, 1, 2) end, { r(2, 3, 4) } },
  { "movedim", function(a) return a:movedim(1, 3) end, { r(2, 3, 4) } },
  { "view", function(a) return a:view(4, 3) * T.arange(12):double():view(4, 3) end, { r(3, 4) } },
  { "reshape of a transpose", function(a) return a:t():reshape(-1) end, { r(3, 4) } },
  { "flatten", function(a) return a:flatten(2) end, { r(2, 3, 4) } },
  { "unflatten", function(a) return a:unflatten(2, { 2, 2 }) end, { r(3, 4) } },
  { "squeeze/unsqueeze", function(a) return a:squeeze():unsqueeze(1) end, { r(3, 1, 4) } },
  { "expand", function(a) return a:expand(3, 2, 4) end, { r(2, 1) } },
  { "unfold (overlapping windows)", function(a) return a:unfold(1, 3, 1) end, { r(6) } },
  { "diagonal", function(a) return a:diagonal(1) end, { r(3, 4) } },
  { "as_strided", function(a) return a:as_strided({ 2, 2 }, { 1, 2 }, 1) end, { r(6) } },
  { "view of a view", function(a) return a:t():narrow(1, 2, 2):select(2, 1) end, { r(3, 4) } },
  -- indexing
  { "basic index", function(a) return a[{ 2, { 1, 3, 2 } }] end, { r(3, 4) } },
  { "advanced index with repeats", function(a) return a[{ idx { 1, 3, 1 } }] end, { r(3, 4) } },
  { "mask index", function(a) return a[a:detach():gt(0)] end, { distinct(3, 4) - 2.9 } },
  { "index_select", function(a) return a:index_select(2, idx { 4, 1, 4 }) end, { r(3, 4) } },
  { "gather", function(a) return a:gather(2, idx { { 1, 1 }, { 2, 3 } }) end, { r(2, 4) } },
  { "take", function(a) return a:take(idx { 1, 12, 5, 5 }) end, { r(3, 4) } },
  { "masked_select", function(a) return a:masked_select(T.tensor { true, false, true }) end, { r(2, 3) } },
  { "where", function(a, b) return T.where(T.tensor { true, false, true }, a, b) end, { r(2, 3), r(3) } },
  { "flip", function(a) return a:flip(1, 2) end, { r(2, 3) } },
  { "roll", function(a) return a:roll(1, 2) end, { r(2, 3) } },
  { "repeat", function(a) return a:repeat_tensor(2, 1, 2) end, { r(2, 3) } },
  { "tile", function(a) return a:tile(2) end, { r(2, 3) } },
  { "repeat_interleave", function(a) return a:repeat_interleave(2, 1) end, { r(2, 3) } },
  { "clone/contiguous", function(a) return a:t():contiguous():clone() end, { r(2, 3) } },
  -- assembling
  { "cat", function(a, b) return T.cat({ a, b }, 2) end, { r(2, 3), r(2, 1) } },
  { "stack", function(a, b) return T.stack({ a, b }, 2) end, { r(2, 3), r(2, 3) } },
  { "hstack 1-d", function(a, b) return T.hstack { a, b } end, { r(2), r(3) } },
  { "vstack", function(a, b) return T.vstack { a, b } end, { r(3), r(2, 3) } },
  { "dstack", function(a, b) return T.dstack { a, b } end, { r(3), r(3) } },
  { "hstack 2-d", function(a, b) return T.hstack { a, b } end, { r(2, 1), r(2, 3) } },
  { "split", function(a) return a:split(2, 2) end, { r(3, 5) } },
  { "chunk", function(a) return a:chunk(2) end, { r(5, 2) } },
  { "unbind", function(a) return a:unbind(2) end, { r(3, 2) } },
  { "tensor_split", function(a) return a:tensor_split({ 2, 4 }) end, { r(5) } },
  -- writes, out of place and in place on non-leaves
  { "index_add", function(a, s) return a:index_add(1, idx { 1, 3, 1 }, s) end, { r(3, 2), r(3, 2) } },
  { "index_copy", function(a, s) return a:index_copy(1, idx { 3, 1 }, s) end, { r(3, 2), r(2, 2) } },
  { "index_fill", function(a) return a:index_fill(2, idx { 2 }, 7) end, { r(3, 2) } },
  { "scatter", function(a, s) return a:scatter(2, idx { { 1, 3 } }, s) end, { r(2, 3), r(1, 2) } },
  { "scatter_add", function(a, s) return a:scatter_add(1, idx { { 2, 1, 2 } }, s) end, { r(2, 3), r(1, 3) } },
  { "masked_scatter", function(a, s) return a:masked_scatter(T.tensor { { true, false, true }, { false, false, true } }, s) end,
    { r(2, 3), r(5) } },
  { "masked_fill", function(a) return a:masked_fill(T.tensor { true, false, true }, 0) end, { r(2, 3) } },
  { "put", function(a, s) return a:put(idx { 1, 6, 1 }, s, true) end, { r(2, 3), r(3) } },
  { "index_put_ accumulate", function(a, v)
    local y = a * 1
    y:index_put_({ idx { 1, 1, 3 } }, v, true)
    return y
  end, { r(3, 2), r(3, 2) } },
  { "scatter_reduce sum", function(a, s) return a:scatter_reduce(1, idx { 2, 2, 1 }, s, "sum") end, { r(3), r(3) } },
  { "setitem of a tensor", function(a, v)
    local y = a * 1
    y[{ {}, 2 }] = v
    return y
  end, { r(3, 4), r(3) } },
  { "setitem with an index tensor", function(a, v)
    local y = a * 1
    y[idx { 3, 1 }] = v
    return y
  end, { r(3, 2), r(2) } },
  { "in-place ops", function(a, b)
    local y = a * 1
    y:mul_(b):add_(b, { alpha = 2 }):sub_(1):exp_()
    return y
  end, { r(3), r(3) } },
  { "in-place op with itself as the other operand", function(a)
    local y = a * 1
    y:mul_(y)
    return y
  end, { r(3) } },
  { "in-place op on a view (CopySlices)", function(a, b)
    local y = a * 1
    y:narrow(1, 2, 2):mul_(b)
    return y * y
  end, { r(4, 2), r(2) } },
  { "copy_ into a view", function(a, b)
    local y = a:clone()
    y[1]:copy_(b)
    return y:exp()
  end, { r(3, 2), r(2) } },
  { "fill_ of a view", function(a)
    local y = a * 2
    y:select(2, 1):fill_(0)
    return y
  end, { r(2, 3) } },
}

describe("gradcheck: the backward of every differentiable op matches finite differences", function()
  T.manual_seed(7)
  for _, c in ipairs(cases) do
    local name, fn, inputs, opts = c[1], c[2], c[3], c[4]
    it(name, function()
      assert.is_true(T.autograd.gradcheck(fn, inputs, opts))
    end)
  end

  -- second derivatives: gradcheck of the first derivative (create_graph)
  local function first_derivative(fn)
    return function(...)
      local ins = { ... }
      local out = fn(...)
      local gs = T.autograd.grad(out:sum(), ins, { create_graph = true })
      return gs
    end
  end
  local second = {
    { "tanh, mul and exp", function(a, b) return (a * b):tanh() * b:exp() end, { r(3), r(3) } },
    { "matmul and softmax", function(a, b) return a:matmul(b):softmax(2) * T.arange(3):double() end, { r(2, 4), r(4, 3) } },
    { "log_softmax, logsumexp, std", function(a) return a:log_softmax(1) * a:logsumexp(1, true) + a:std() end, { r(3, 2) } },
    { "views and gathers", function(a) return a:t()[{ idx { 2, 1, 2 } }]:cumsum(1):pow(2) end, { r(3, 2) } },
    { "in-place on a view (CopySlices)", function(a, b)
      local y = a * a
      y:narrow(1, 1, 2):mul_(b)
      return y * y
    end, { r(3), r(2) } },
    { "setitem", function(a, v)
      local y = a * 2
      y[{ idx { 1, 3 } }] = v * v
      return y * a
    end, { r(3), r(2) } },
    { "prod, norm, max", function(a) return a:prod(1) + a:norm() * a:amax() end, { distinct(2, 3) } },
  }
  for _, c in ipairs(second) do
    it("second derivative: " .. c[1], function()
      assert.is_true(T.autograd.gradcheck(first_derivative(c[2]), c[3]))
    end)
  end

  it("fails (and says where) for a wrong derivative", function()
    -- sign's derivative is 0 almost everywhere; as a stand-in for a wrong
    -- formula, a function whose output does not depend differentiably on
    -- its input in the analytical graph but does numerically
    local x = r(3)
    local ok, msg = T.autograd.gradcheck(function(a) return a:detach() * a:detach() + a * 0 end,
      { x }, { raise = false })
    assert.is_false(ok)
    assert.matches("Jacobian mismatch for output 1 with respect to input 1", msg)
  end)
end)
