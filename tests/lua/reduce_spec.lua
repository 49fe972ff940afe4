-- Reductions: conformance with PyTorch (tests/fixtures/reduce_cases.lua) and
-- the behaviour a user sees: dims, keepdim, dtypes, errors, accuracy.
local T = require "ember"
local U = require "reduce_fixture"
local cases = dofile("tests/fixtures/reduce_cases.lua")

local function describe_case(c)
  local d = c.dim
  if type(d) == "table" then d = "{" .. table.concat(d, ",") .. "}" end
  return ("%s(%s, dim=%s, keepdim=%s%s)"):format(c.op, c.x.dtype, tostring(d),
    tostring(c.keepdim), c.correction and (", correction=" .. c.correction) or "")
end

local function run(c)
  local x = U.tensor(c.x)
  local opts = { keepdim = c.keepdim or nil, dtype = c.dtype and T[c.dtype] or nil,
                 correction = c.correction }
  if next(opts) == nil then opts = nil end
  if c.kind == "reduce" then
    if c.dim == nil then
      if opts then return U.mismatch(x[c.op](x, opts), c.out) end
      return U.mismatch(x[c.op](x), c.out)
    end
    if c.op == "norm" then return U.mismatch(x:norm(2, c.dim, opts), c.out) end
    return U.mismatch(x[c.op](x, c.dim, opts), c.out)
  elseif c.kind == "maxdim" then
    local v, i
    if c.keepdim == nil then v, i = x[c.op](x, c.dim)   -- cummax/cummin
    else v, i = x[c.op](x, c.dim, c.keepdim) end
    return U.mismatch(v, c.out) or U.mismatch(i, c.idx)
  elseif c.kind == "kth" then
    local v, i = x:kthvalue(c.k, c.dim)
    return U.mismatch(v, c.out) or U.mismatch(i, c.idx)
  elseif c.kind == "pair" then
    local a, b = x[c.op](x, c.dim)
    return U.mismatch(a, c.out) or U.mismatch(b, c.out2)
  elseif c.kind == "lane" then
    return U.mismatch(x[c.op](x, c.dim), c.out)
  elseif c.kind == "sort" then
    local v, i = x:sort(c.dim, c.descending)
    return U.mismatch(v, c.out) or U.mismatch(i, c.idx)
  elseif c.kind == "topk" then
    local v, i = x:topk(c.k, c.dim, c.largest)
    return U.mismatch(v, c.out) or U.mismatch(i, c.idx)
  elseif c.kind == "unique" then
    local u, inv, cnt = x:unique { return_inverse = true, return_counts = true }
    return U.mismatch(u, c.out) or U.mismatch(inv, c.inv) or U.mismatch(cnt, c.counts)
  elseif c.kind == "norm" then
    return U.mismatch(x:norm(c.p, c.dim), c.out)
  end
  error("unknown kind " .. c.kind)
end

describe("reductions conform to PyTorch", function()
  local kinds = { reduce = true, maxdim = true, lane = true, sort = true, topk = true,
                  unique = true, norm = true, kth = true, pair = true }
  for _, g in ipairs(U.groups(cases, kinds)) do
    it(("%s matches PyTorch (%d cases)"):format(g.name, #g.cases), function()
      assert.same({}, U.failures(g, run, describe_case))
    end)
  end
end)

describe("reduction arguments", function()
  local t = T.tensor { { 1, 2, 3 }, { 4, 5, 6 } }

  it("take one dim, a table of dims, negatives, keepdim positional or as an option", function()
    assert.same({ 5, 7, 9 }, t:sum(1):tolist())
    assert.same({ 6, 15 }, t:sum(-1):tolist())
    assert.equal(21, t:sum { 1, 2 }:item())
    assert.equal(T.Size { 2, 1 }, t:sum(2, true).shape)
    assert.equal(T.Size { 2, 1 }, t:sum(2, { keepdim = true }).shape)
    assert.equal(T.Size { 1, 1 }, t:sum({ 1, 2 }, true).shape)
    assert.equal(T.Size { 1, 3 }, t:sum { dim = 1, keepdim = true }.shape)
    assert.equal(T.Size {}, t:sum().shape)
    assert.equal(21, T.sum(t):item())
  end)

  it("integer and bool sums give int64; a dtype option casts first", function()
    assert.equal(T.int64, T.tensor({ 1, 2 }, { dtype = T.int8 }):sum().dtype)
    assert.equal(T.int64, T.tensor { true, true, false }:sum().dtype)
    assert.equal(2, T.tensor { true, true, false }:sum():item())
    assert.equal(T.float64, t:sum { dtype = T.float64 }.dtype)
    -- int8 arithmetic would wrap at 127; the sum is int64
    assert.equal(400, T.full({ 4 }, 100, { dtype = T.int8 }):sum():item())
  end)

  it("max and min give values and 1-based indices with a dim, the value without", function()
    local v, i = t:max(2)
    assert.same({ 3, 6 }, v:tolist())
    assert.same({ 3, 3 }, i:tolist())
    v, i = t:min(1, true)
    assert.same({ { 1, 2, 3 } }, v:tolist())
    assert.same({ { 1, 1, 1 } }, i:tolist())
    assert.equal(6, t:max():item())
    assert.equal(6, t:argmax():item())
    assert.same({ 1, 1 }, t:argmin(2):tolist())
    -- the first extreme wins, NaN is the extreme
    assert.same({ 2 }, T.tensor { { 1, 5, 5 } }:argmax(2):tolist())
    local f = T.tensor { 1, 0 / 0, 3 }
    assert.equal(2, f:argmax():item())
    assert.is_true(f:max():item() ~= f:max():item())
    -- long contiguous runs take the vector path: NaN still propagates
    for _, dt in ipairs { T.float32, T.float64 } do
      local vals = {}
      for i = 1, 100 do vals[i] = i end
      local g = T.tensor(vals, { dtype = dt })
      assert.equal(100, g:amax():item())
      assert.equal(1, g:amin():item())
      vals[50] = 0 / 0
      g = T.tensor(vals, { dtype = dt })
      assert.is_true(g:amax():item() ~= g:amax():item())
      assert.is_true(g:amin():item() ~= g:amin():item())
      vals[50] = -math.huge
      assert.equal(-math.huge, T.tensor(vals, { dtype = dt }):amin():item())
    end
  end)

  it("std and var take correction (default 1) and unbiased", function()
    local x = T.tensor({ 1, 2, 3, 4 }, { dtype = T.float32 })
    assert.near(1.6666667, x:var():item(), 1e-6)
    assert.near(1.25, x:var { correction = 0 }:item(), 1e-6)
    assert.near(1.25, x:var { unbiased = false }:item(), 1e-6)
    assert.near(math.sqrt(5 / 3), x:std():item(), 1e-6)
    local one = T.tensor({ 1 }, { dtype = T.float32 })
    assert.is_true(one:var():item() ~= one:var():item())
  end)

  it("norm takes p as a number, 'fro' or 'inf', with dims", function()
    local x = T.tensor({ { 3, -4 }, { 0, 0 } }, { dtype = T.float32 })
    assert.near(5, x:norm():item(), 1e-6)
    assert.near(5, x:norm("fro"):item(), 1e-6)
    assert.near(7, x:norm(1):item(), 1e-6)
    assert.near(4, x:norm("inf"):item(), 1e-6)
    assert.near(4, x:norm(math.huge):item(), 1e-6)
    assert.same({ 5, 0 }, x:norm(2, 2):tolist())
    assert.same({ { 7 }, { 0 } }, x:norm { p = 1, dim = 2, keepdim = true }:tolist())
  end)

  it("logsumexp is stable for large values; softmax rows sum to 1", function()
    local x = T.tensor({ 1000.0, 1000.0 }, { dtype = T.float64 })
    assert.near(1000 + math.log(2), x:logsumexp():item(), 1e-9)
    local s = T.tensor({ { 1, 2, 3 }, { 1000, 0, -1000 } }, { dtype = T.float32 }):softmax(2)
    local r = s:sum(2):tolist()
    assert.near(1, r[1], 1e-6)
    assert.near(1, r[2], 1e-6)
    local ls = T.tensor({ 1.0, 2.0 }, { dtype = T.float64 }):log_softmax(1):tolist()
    local lse = math.log(math.exp(1) + math.exp(2))
    assert.near(1 - lse, ls[1], 1e-12)
    assert.near(2 - lse, ls[2], 1e-12)
    assert.has_error(function() t:softmax() end, "softmax: the dim argument is required")
  end)

  it("sort is stable in both directions and topk returns the k largest", function()
    local x = T.tensor { 2, 1, 2, 1, 3 }
    local v, i = x:sort()
    assert.same({ 1, 1, 2, 2, 3 }, v:tolist())
    assert.same({ 2, 4, 1, 3, 5 }, i:tolist())
    v, i = x:sort(1, true)
    assert.same({ 3, 2, 2, 1, 1 }, v:tolist())
    assert.same({ 5, 1, 3, 2, 4 }, i:tolist())
    v, i = x:sort { descending = true }
    assert.same({ 5, 1, 3, 2, 4 }, i:tolist())
    v, i = T.tensor { 5, 9, 1, 7 }:topk(2)
    assert.same({ 9, 7 }, v:tolist())
    assert.same({ 2, 4 }, i:tolist())
    v, i = T.tensor { 5, 9, 1, 7 }:topk(2, 1, false)
    assert.same({ 1, 5 }, v:tolist())
    assert.same({ 3, 1 }, i:tolist())
    assert.has_error(function() T.tensor { 1, 2 }:topk(3) end,
      "topk: k (3) is out of range: dimension 1 has size 2")
  end)

  it("topk with a small k (heap selection) gives the first k of the stable sort", function()
    local seed = 12345
    local function rnd() seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 end
    local mismatches = {}
    for trial = 1, 60 do
      local n = 20 + math.floor(rnd() * 400)
      local vals = {}
      for i = 1, n do
        local r = rnd()
        vals[i] = r < 0.05 and 0 / 0 or math.floor(r * 25)  -- many ties, some NaN
      end
      local x = T.tensor(vals, { dtype = T.float32 })
      for _, largest in ipairs { true, false } do
        local k = 1 + math.floor(rnd() * (n / 10))
        local _, i = x:topk(k, 1, largest)
        local _, si = x:sort(1, largest)
        local il, sl = i:tolist(), si:tolist()
        for j = 1, k do
          if il[j] ~= sl[j] then mismatches[#mismatches + 1] = ("n=%d k=%d"):format(n, k); break end
        end
      end
    end
    assert.same({}, mismatches)
  end)

  it("unique returns sorted values, 1-based inverse positions and counts", function()
    local x = T.tensor { { 3, 1 }, { 3, 2 } }
    local u, inv, c = x:unique { return_inverse = true, return_counts = true }
    assert.same({ 1, 2, 3 }, u:tolist())
    assert.same({ { 3, 1 }, { 3, 2 } }, inv:tolist())
    assert.same({ 1, 1, 2 }, c:tolist())
    local u2, c2 = x:unique { return_counts = true }
    assert.same({ 1, 1, 2 }, c2:tolist())
    assert.equal(1, select("#", x:unique()))
  end)

  it("cumsum and cumprod run along a dim; integers give int64", function()
    local x = T.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = T.int32 })
    assert.same({ { 1, 3 }, { 3, 7 } }, x:cumsum(2):tolist())
    assert.same({ { 1, 2 }, { 3, 8 } }, x:cumprod(1):tolist())
    assert.equal(T.int64, x:cumsum(1).dtype)
    assert.equal(T.float64, x:cumsum(1, { dtype = T.float64 }).dtype)
  end)

  it("T.equal, T.allclose and isclose compare values", function()
    local a = T.tensor { 1.5, 2.0, 0 / 0 }
    local b = T.tensor { 1.5, 2.0 + 1e-7, 0 / 0 }
    assert.is_false(T.equal(a, a))          -- NaN is unequal to itself
    assert.is_true(T.equal(T.tensor { 1, 2 }, T.tensor { 1, 2 }))
    assert.is_false(T.equal(T.tensor { 1, 2 }, T.tensor { 1, 2, 3 }))
    assert.is_false(T.allclose(a, b))
    assert.is_true(T.allclose(a, b, { equal_nan = true }))
    assert.is_true(T.allclose(a, b, 1e-5, 1e-8, true))
    local f32 = { dtype = T.float32 }
    assert.is_false(T.allclose(T.tensor({ 1 }, f32), T.tensor({ 1.1 }, f32)))
    assert.is_true(T.allclose(T.tensor({ 1 }, f32), T.tensor({ 1.1 }, f32), { atol = 0.2 }))
    assert.same({ true, true, false }, a:isclose(b):tolist())
    assert.same({ true }, T.tensor { math.huge }:isclose(T.tensor { math.huge }):tolist())
  end)
end)

describe("reduction accuracy", function()
  it("float32 sums of 10^7 elements stay within a few ulps (pairwise, not n)", function()
    local n = 10000000
    -- a naive float32 running sum stops growing at 2^24 = 16777216
    local m = 2 ^ 24 + 1000
    assert.equal(m, T.ones(m):sum():item())
    -- and drifts to 1087937 for 10^7 float32 0.1s (8.8% off)
    local tenth = T.full({ n }, 0.1)
    local exact = n * tonumber(T.tensor(0.1, { dtype = T.float32 }):to(T.float64):item())
    local got = tenth:sum():item()
    assert.is_true(math.abs(got - exact) / exact < 1e-6,
      ("sum of 10^7 float32 0.1s: %.9g, reference %.9g"):format(got, exact))
    assert.near(0.1, tenth:mean():item(), 1e-7)
  end)
end)

describe("reduction errors", function()
  local t = T.zeros(2, 3)
  it("name dims out of range and repeated dims in 1-based terms", function()
    assert.has_error(function() t:sum(3) end,
      "sum: dimension 3 out of range (expected to be in range of [-2, 2])")
    assert.has_error(function() t:sum { 1, -2 } end, "sum: dim 1 appears multiple times in the list of dims")
    assert.has_error(function() t:max(0) end,
      "max: dimension 0 is invalid: dimensions are 1-based (expected to be in range of [-2, 2])")
  end)
  it("follow PyTorch over empty dims", function()
    local e = T.zeros(2, 0)
    assert.same({ 0, 0 }, e:sum(2):tolist())
    assert.same({ 1, 1 }, e:prod(2):tolist())
    assert.has_error(function() e:max(2) end, "max(): Expected reduction dim 2 to have non-zero size.")
    assert.has_error(function() e:amax(2) end, "amax(): Expected reduction dim 2 to have non-zero size.")
    assert.has_error(function() e:max() end,
      "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
    assert.has_error(function() e:argmax() end,
      "argmax(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
  end)
  it("reject dtypes the op does not take", function()
    local i = T.tensor { 1, 2 }
    assert.has_error(function() i:mean() end,
      "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long")
    assert.equal(1.5, i:mean { dtype = T.float64 }:item())
    assert.has_error(function() i:std() end, "std: std and var only support floating point and complex dtypes, got int64")
    assert.has_error(function() i:norm() end,
      "norm(): input dtype should be either floating point or complex. Got Long instead.")
  end)
  it("reject unknown options and stray arguments", function()
    assert.has_error(function() t:sum(1, { keepdims = true }) end)
    assert.has_error(function() t:sum(1, true, {}, 5) end)
    assert.has_error(function() t:sum("x") end)
  end)
end)

describe("reductions and threads", function()
  -- T.set_num_threads comes with the threading work (issue 5 item 1); the
  -- engine splits work only between whole outputs/lanes, so results must be
  -- bit-identical for any thread count.
  if not T.set_num_threads then
    pending("T.set_num_threads is not available in this build")
    return
  end
  it("give bit-identical results on 1 and 4 threads", function()
    local rows = {}
    for i = 1, 300 do
      local r = {}
      for j = 1, 257 do r[j] = math.sin(i * 7.1 + j * 0.37) * 100 end
      rows[i] = r
    end
    local x = T.tensor(rows, { dtype = T.float32 })
    local function run()
      local v, i = x:max(2)
      return { x:sum(2):tolist(), x:sum(1):tolist(), x:var(2):tolist(), x:softmax(2):tolist(),
               x:cumsum(2):tolist(), x:logsumexp(2):tolist(), v:tolist(), i:tolist() }
    end
    local before = T.get_num_threads()
    T.set_num_threads(1)
    local one = run()
    T.set_num_threads(4)
    local four = run()
    T.set_num_threads(before)
    assert.same(one, four)
  end)
end)
