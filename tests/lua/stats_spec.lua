-- The statistics helpers of issue 19 item 3 (lua/ember/stats.lua) against
-- PyTorch 1.13 (tests/fixtures/stats_cases.lua from gen_stats.py; 1-based
-- positions), gradients through the differentiable ones, errors.
local T = require "ember"
local cases = dofile("tests/fixtures/stats_cases.lua")
local unpack = table.unpack or unpack

local function tensor(rec)
  local t = T.tensor(rec.v, { dtype = T[rec.dtype] })
  return #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
end
local function close(got, rec, what)
  local want = tensor(rec)
  assert(T.is_tensor(got), what .. ": not a tensor")
  assert.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  assert.equal(want.dtype, got.dtype, what .. ": dtype")
  if not want:is_floating_point() then
    assert.same(want:tolist(), got:tolist(), what)
    return
  end
  local tol = want.dtype == T.float32 and 2e-5 or 1e-11
  local g, w = got:double():reshape(-1), want:double():reshape(-1)
  for i = 1, w:numel() do
    local a, b = g[i]:item(), w[i]:item()
    if b ~= b then assert(a ~= a, string.format("%s [%d]: got %s, want nan", what, i, tostring(a)))
    else
      assert(math.abs(a - b) <= tol * math.max(1, math.abs(b)),
        string.format("%s [%d]: got %.17g, want %.17g", what, i, a, b))
    end
  end
end

local function call(c)
  local x = {}
  for i, r in ipairs(c.x) do x[i] = tensor(r) end
  local o = {}
  for k, v in pairs(c.opts or {}) do o[k] = v end
  local args = { x[1] }
  if c.op == "diff" and x[2] then o.prepend, o.append = x[2], x[3]
  elseif c.op == "cov" and x[2] then o.fweights, o.aweights = x[2], x[3]
  elseif c.op == "histogram" and x[2] then args[2] = x[2]; o.weight = x[3]
  elseif c.op == "searchsorted" then args[2] = x[2]; if x[3] then o.sorter = x[3] end
  elseif c.op == "gradient" and x[2] then o.spacing = { x[2] }
  elseif c.op == "bincount" and x[2] then o.weights = x[2]
  else for i = 2, #x do args[i] = x[i] end end
  for _, a in ipairs(c.args or {}) do args[#args + 1] = a end
  if next(o) ~= nil then args[#args + 1] = o end
  local r = { T[c.op](unpack(args)) }
  if c.op == "gradient" then r = r[1] end
  return r
end

describe("statistics helpers against PyTorch 1.13", function()
  for i, c in ipairs(cases) do
    it(string.format("%s #%d", c.op, i), function()
      local r = call(c)
      assert.equal(#c.out, #r, "number of results")
      for k = 1, #c.out do close(r[k], c.out[k], "result " .. k) end
    end)
  end
end)

describe("statistics helpers: behaviour", function()
  it("are methods too", function()
    local x = T.tensor({ 1, 4, 9, 16 }):double()
    assert.same({ 3, 5, 7 }, x:diff():tolist())
    assert.same({ 2 }, T.tensor({ 1, 2, 2 }):bincount():tolist() and { T.tensor({ 1, 2, 2 }):bincount()[2]:item() })
  end)
  it("gradients flow through cov, quantile, logcumsumexp, trapezoid, renorm, dist", function()
    local x = T.randn(3, 6):double():requires_grad_()
    local function gc(f) assert.is_true(T.autograd.gradcheck(f, { x })) end
    gc(function(a) return T.cov(a) end)
    gc(function(a) return T.corrcoef(a) end)
    gc(function(a) return T.quantile(a, 0.3, 2) end)
    gc(function(a) return T.logcumsumexp(a, 2) end)
    gc(function(a) return T.trapezoid(a) end)
    gc(function(a) return T.cumulative_trapezoid(a) end)
    gc(function(a) return T.diff(a, 2) end)
    local b = T.randn(3, 6):double()
    gc(function(a) return T.dist(a, b, 3) end)
    gc(function(a) return T.renorm(a, 2, 1, 0.5) end)
  end)
  it("logcumsumexp stays exact far below the maximum", function()
    local x = T.tensor({ -1000, 0, -2000 }):double()
    local r = T.logcumsumexp(x, 1)
    assert.equal(-1000, r[1]:item())
    assert.near(0, r[2]:item(), 1e-12)
  end)
  it("1-based positions: searchsorted 1..n+1, bincount counts v at v", function()
    local seq = T.tensor({ 1, 3, 5 }):double()
    assert.same({ 1, 2, 4 }, T.searchsorted(seq, T.tensor({ 0, 3, 6 }):double()):tolist())
    assert.same({ 1, 3, 4 }, T.searchsorted(seq, T.tensor({ 0, 3, 6 }):double(), { right = true }):tolist())
    assert.same({ 1, 2, 4 }, T.bucketize(T.tensor({ 0, 3, 6 }):double(), seq):tolist())
    assert.equal(T.int32, T.bucketize(T.tensor({ 0.5 }), seq:float(), { out_int32 = true }).dtype)
    assert.same({ 1, 0, 2 }, T.bincount(T.tensor { 1, 3, 3 }):tolist())
    assert.same({ 0, 0, 0, 0 }, T.bincount(T.zeros(0, { dtype = T.int64 }), { minlength = 4 }):tolist())
  end)
  it("errors name the op and the value", function()
    assert.error_matches(function() T.bincount(T.tensor { 0, 1 }) end,
      "bincount: values must be >= 1 %(class ids are 1%-based")
    assert.error_matches(function() T.quantile(T.randn(3), 1.5) end, "quantile: q values must be in the range")
    assert.error_matches(function() T.quantile(T.randn(3), 0.5, { interpolation = "x" }) end, "quantile: interpolation must be")
    assert.error_matches(function() T.quantile(T.tensor { 1, 2 }, 0.5) end, "quantile: input tensor must be either float or double")
    assert.error_matches(function() T.diff(T.randn(3), { zz = 1 }) end, "diff: unknown option 'zz'")
    assert.error_matches(function() T.searchsorted(T.randn(3), T.randn(2), { side = "up" }) end,
      "searchsorted: side can only be 'left' or 'right'")
    assert.error_matches(function() T.cov(T.randn(2, 2, 2)) end, "cov: expected input to have two or fewer dimensions")
    assert.error_matches(function() T.histc(T.tensor { 1, 2 }) end, "histc: not implemented for int64")
    assert.error_matches(function() T.renorm(T.randn(3), 2, 1, 1) end, "renorm: input needs at least 2 dimensions")
  end)
end)
