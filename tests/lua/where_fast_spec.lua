-- T.where's contiguous loops (cpu/index.c: both branches loaded, a select
-- rather than a branch; a 0-d branch broadcast) against an element-by-element
-- reference, in every layout the kernel tells apart, and ReLU's backward,
-- which now selects against a 0-d zero (PyTorch's threshold_backward:
-- y <= 0 gives 0, anything else, NaN included, passes the gradient).
local T = require "ember"

local function ref_where(c, a, b)
  -- c, a, b: Lua lists of equal length (a or b may be a single value)
  local out = {}
  for i = 1, #c do
    local x = type(a) == "table" and a[i] or a
    local y = type(b) == "table" and b[i] or b
    out[i] = c[i] and x or y
  end
  return out
end

local same = require("specutil").same_list

describe("where's fast loops", function()
  T.manual_seed(7)
  -- 1000 elements: the vector body and a tail
  local n = 1000
  local cond = T.rand(n):lt(0.5)
  local c = cond:tolist()

  for _, dt in ipairs { "float32", "float64", "int64", "int32", "uint8", "complex64" } do
    it("gives the reference for " .. dt .. " in each layout", function()
      local D = T[dt]
      local cplx = dt == "complex64"
      local function mk(scale)
        local t = (T.rand(n) * scale):to(cplx and T.float32 or D)
        if cplx then t = T.complex(t, t * 2) end
        return t:to(D)
      end
      local a, b = mk(100), mk(50)
      local function lst(t) return cplx and T.view_as_real(t):reshape(-1):tolist() or t:tolist() end
      local function pairs_of(l) -- complex: (re, im) pairs as one value per element
        if not cplx then return l end
        local out = {}
        for i = 1, #l / 2 do out[i] = l[2 * i - 1] .. "," .. l[2 * i] end
        return out
      end
      local la, lb = pairs_of(lst(a)), pairs_of(lst(b))
      local a0, b0 = a[1]:clone(), b[2]:clone() -- 0-d branches
      local a0v, b0v = pairs_of(lst(a0:reshape(1)))[1], pairs_of(lst(b0:reshape(1)))[1]
      same(ref_where(c, la, lb), pairs_of(lst(T.where(cond, a, b))), dt .. " both full")
      same(ref_where(c, a0v, lb), pairs_of(lst(T.where(cond, a0, b))), dt .. " 0-d a")
      same(ref_where(c, la, b0v), pairs_of(lst(T.where(cond, a, b0))), dt .. " 0-d b")
      same(ref_where(c, a0v, b0v), pairs_of(lst(T.where(cond, a0, b0))), dt .. " both 0-d")
      -- a strided a (every other element of a longer tensor): the general loop
      local long = mk(100):repeat_interleave(2)
      local sa = long[{ { 1, -1, 2 } }]
      same(ref_where(c, pairs_of(lst(sa:contiguous())), lb), pairs_of(lst(T.where(cond, sa, b))),
        dt .. " strided a")
    end)
  end

  it("keeps NaN and infinities of the chosen side, and the signs of zeros", function()
    local a = T.tensor({ 0 / 0, 1 / 0, -0.0, 5 }, { dtype = T.float64 })
    local b = T.tensor({ 1, 2, 3, -1 / 0 }, { dtype = T.float64 })
    local m = T.tensor({ true, true, true, false })
    local r = T.where(m, a, b):tolist()
    assert(r[1] ~= r[1])
    assert.equal(1 / 0, r[2])
    assert.equal(-1 / 0, 1 / r[3]) -- -0.0 kept
    assert.equal(-1 / 0, r[4])
  end)
end)

describe("ReLU's backward", function()
  it("passes the gradient where y > 0 or y is NaN, and gives 0 where y <= 0", function()
    local x = T.tensor({ -2, -0.0, 0, 3, 0 / 0, 1 }, { requires_grad = true })
    local y = T.relu(x)
    y:backward(T.tensor({ 10, 20, 30, 40, 50, 0 / 0 }))
    local g = x.grad:tolist()
    assert.equal(0, g[1])
    assert.equal(0, g[2])
    assert.equal(0, g[3])
    assert.equal(40, g[4])
    assert.equal(50, g[5]) -- relu(NaN) is NaN, not <= 0: the gradient passes
    assert(g[6] ~= g[6])   -- a NaN gradient where y > 0 passes as NaN
  end)

  it("records a differentiable backward (create_graph) with the 0-d zero", function()
    local x = T.tensor({ -1.0, 2.0, 3.0 }, { dtype = T.float64, requires_grad = true })
    local y = T.relu(x) * x
    local g = T.autograd.grad(y:sum(), { x }, { create_graph = true })[1]
    assert.same({ 0, 4, 6 }, g:tolist())
    local gg = T.autograd.grad(g:sum(), { x })[1]
    assert.same({ 0, 2, 2 }, gg:tolist())
  end)
end)
