-- The linear-algebra family on the meta device: each op on meta tensors
-- gives the shape, dtype and strides the same op gives on CPU tensors (the
-- reference), on the meta device, and mixing devices is the shared error.
local T = require "ember"
local unpack = table.unpack or unpack
local same_meta = require("metacheck").same_meta

local function meta_of(t)
  return T.empty(t:size(), { dtype = t.dtype, device = "meta" }):as_strided(t:size(), t:stride())
end

-- runs f on CPU operands and on their meta twins (same sizes, strides, dtypes)
local function same_on_meta(f, ...)
  local cpu, meta = { ... }, {}
  for i, t in ipairs(cpu) do meta[i] = meta_of(t) end
  local c = f(unpack(cpu))
  local m = f(unpack(meta))
  same_meta(c, m)
end

describe("linalg on meta tensors", function()
  it("mm, bmm, mv, dot and outer give the CPU result's metadata", function()
    for _, dt in ipairs({ T.float32, T.float64, T.float16, T.bfloat16, T.int64, T.int32 }) do
      same_on_meta(T.mm, T.zeros(5, 7, { dtype = dt }), T.zeros(7, 3, { dtype = dt }))
      same_on_meta(T.mm, T.zeros(7, 5, { dtype = dt }):t(), T.zeros(3, 7, { dtype = dt }):t())
      same_on_meta(T.bmm, T.zeros(2, 5, 7, { dtype = dt }), T.zeros(2, 7, 3, { dtype = dt }))
      same_on_meta(T.mv, T.zeros(5, 7, { dtype = dt }), T.zeros(7, { dtype = dt }))
      same_on_meta(T.dot, T.zeros(9, { dtype = dt }), T.zeros(9, { dtype = dt }))
      same_on_meta(T.outer, T.zeros(4, { dtype = dt }), T.zeros(6, { dtype = dt }))
    end
    -- empty products
    same_on_meta(T.mm, T.zeros(5, 0), T.zeros(0, 3))
    same_on_meta(T.mm, T.zeros(0, 4), T.zeros(4, 3))
  end)

  it("matmul broadcasts batch dims and drops the added vector dims as on CPU", function()
    same_on_meta(T.matmul, T.zeros(2, 1, 5, 7), T.zeros(3, 7, 4))
    same_on_meta(T.matmul, T.zeros(7), T.zeros(3, 7, 2))
    same_on_meta(T.matmul, T.zeros(3, 5, 7), T.zeros(7))
    same_on_meta(T.matmul, T.zeros(7), T.zeros(7))
    same_on_meta(T.matmul, T.zeros(5, 7), T.zeros(7, 2))
  end)

  it("addmm, addmv, baddbmm and linear give the CPU result's metadata", function()
    same_on_meta(function(i, a, b) return T.addmm(i, a, b, { beta = 2, alpha = 3 }) end,
      T.zeros(3), T.zeros(5, 7), T.zeros(7, 3))
    same_on_meta(function(i, a, b) return T.addmm(i, a, b, { beta = 0 }) end,
      T.zeros(5, 3), T.zeros(5, 0), T.zeros(0, 3))
    same_on_meta(T.addmv, T.zeros(5), T.zeros(5, 7), T.zeros(7))
    same_on_meta(T.baddbmm, T.zeros(2, 5, 3), T.zeros(2, 5, 7), T.zeros(2, 7, 3))
    same_on_meta(T.linear, T.zeros(4, 3), T.zeros(5, 3), T.zeros(5))
    same_on_meta(T.linear, T.zeros(2, 4, 3), T.zeros(5, 3))
  end)

  it("checks shapes and dtypes on meta with the CPU's messages", function()
    local function m(r, c) return T.empty(r, c, { device = "meta" }) end
    assert.has_error(function() T.mm(m(2, 3), m(4, 5)) end,
      "mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
    assert.has_error(function() T.mm(m(2, 3), T.empty(3, 2, { dtype = T.float64, device = "meta" })) end,
      "mm: expected m1 and m2 to have the same dtype, but got: float != double")
  end)

  it("refuses operands on two devices with the shared message", function()
    local msg = "expected all tensors to be on the same device, but found at least two devices, cpu and meta"
    assert.has_error(function() T.mm(T.zeros(2, 3), T.empty(3, 2, { device = "meta" })) end, "mm: " .. msg)
    assert.has_error(function() T.matmul(T.zeros(2, 3), T.empty(3, { device = "meta" })) end, "matmul: " .. msg)
    assert.has_error(function()
      T.addmm(T.zeros(2, 2), T.empty(2, 3, { device = "meta" }), T.empty(3, 2, { device = "meta" }))
    end, "addmm: " .. msg)
    assert.has_error(function()
      T.linear(T.empty(4, 3, { device = "meta" }), T.empty(5, 3, { device = "meta" }), T.zeros(5))
    end, "linear: " .. msg)
  end)
end)
