-- float32 reductions are no less accurate than PyTorch's: the error of
-- sum, mean, norm, var, std (and an outer-dim sum) on 16M values of mixed
-- magnitude against a float64 reference, bounded by PyTorch 1.13's error
-- on the same values (tests/fixtures/gen_reduce_accuracy.py, which also
-- records a naive float32 loop's error: far above the bound, so these
-- checks can fail). The values are rebuilt here from the generator's
-- integer recipe with ember's own ops.
local T = require "ember"
local F = dofile("tests/fixtures/reduce_accuracy_cases.lua")

-- the values of gen_reduce_accuracy.py's data(n), float32 (exact)
local function data(n)
  local i = T.arange(0, n, { dtype = T.int64 })
  local h = (i * 2654435761 + 12345):remainder(4294967296)
  local m = h:remainder(8388608)
  local top = h:floor_divide(8388608)
  local sign = T.where(top:remainder(4):eq(0), -1.0, 1.0)
  local p2 = {}
  for k = -8, 8 do p2[#p2 + 1] = 2.0 ^ k end
  local scale = T.tensor(p2):index_select(1, top:floor_divide(4):remainder(17) + 1)
  return ((m:double() / 8388608 + 1) * scale * sign):float()
end

-- the spacing of float32 numbers at |v|
local function ulp32(v)
  local e = math.floor(math.log(math.abs(v), 2))
  return 2.0 ^ (e - 23)
end

describe("float32 reduction accuracy (16M values, against PyTorch's error)", function()
  local x = data(F.n)
  local threads = T.get_num_threads and T.get_num_threads() or 1

  it("rebuilds the generator's values", function()
    for _, s in ipairs(F.samples) do assert.are.equal(s[2], x[s[1]]:item()) end
    local s = x:double():sum():item()
    assert.is_true(math.abs(s - F.exact_sum) <= 1e-12 * math.abs(F.exact_sum))
  end)

  local ops = {
    sum = function(t) return t:sum() end,
    mean = function(t) return t:mean() end,
    norm = function(t) return t:norm() end,
    var = function(t) return t:var() end,
    std = function(t) return t:std() end,
  }
  for _, name in ipairs { "sum", "mean", "norm", "var", "std" } do
    it(name .. " is within PyTorch's error (or one float32 ulp)", function()
      local c = F.cases[name]
      local r = ops[name](x)
      assert.are.equal(T.float32, r.dtype)
      local err = math.abs(r:item() - c.ref)
      local bound = math.max(c.torch_err, ulp32(c.ref))
      assert.is_true(err <= bound, string.format("%s: error %.6g, bound %.6g (torch %.6g)",
        name, err, bound, c.torch_err))
      if c.naive_err then assert.is_true(c.naive_err > bound) end
    end)
  end

  it("the outer-dim sum of (4096, 4096) is within PyTorch's largest column error", function()
    local c = F.cases.sum_outer
    local v = x:view(4096, 4096)
    local got = v:sum(1):double()
    local ref = v:double():sum(1)
    local err = (got - ref):abs():max():item()
    assert.is_true(err <= c.torch_err, string.format("error %.6g, torch %.6g", err, c.torch_err))
    assert.is_true(c.naive_err > c.torch_err)
    -- the transposed view summed over its (strided) dim 2: the same columns, same bits
    assert.is_true(T.equal(v:t():sum(2), v:sum(1)))
  end)

  it("gives the same bits on 1 and 2 threads", function()
    if not T.set_num_threads then return end
    local v = x:view(4096, 4096)
    local function all()
      return { x:sum(), x:mean(), x:norm(), x:norm(1), x:norm(math.huge), x:var(), x:std(),
               x:prod(), x:amax(), x:amin(), v:sum(1), v:var(1), v:amax(1), v:norm(2, 1),
               v:sum(2), v:var(2) }
    end
    T.set_num_threads(1)
    local a = all()
    T.set_num_threads(2)
    local b = all()
    T.set_num_threads(threads)
    for k = 1, #a do
      local x1, x2 = a[k]:view(-1), b[k]:view(-1)
      assert.is_true(T.equal(x1, x2) or T.equal(x1:isnan(), x2:isnan()), "result " .. k)
    end
  end)
end)
