-- Linear algebra: conformance with PyTorch (tests/fixtures/reduce_cases.lua,
-- including broadcast batch dims and transposed/strided operands) and the
-- errors a user sees.
local T = require "ember"
local U = require "reduce_fixture"
local cases = dofile("tests/fixtures/reduce_cases.lua")

local function shape_of(rec)
  local s = rec.view and rec.view.sizes or rec.shape
  return "[" .. table.concat(s, ",") .. "]" .. (rec.view and "(strided)" or "")
end

local function describe_case(c)
  return ("%s(%s %s, %s)"):format(c.op, c.a.dtype, shape_of(c.a), shape_of(c.b))
end

local function run(c)
  local a, b = U.tensor(c.a), U.tensor(c.b)
  if c.kind == "linalg" then
    return U.mismatch(T[c.op](a, b), c.out)
  elseif c.kind == "addop" then
    return U.mismatch(T[c.op](U.tensor(c.input), a, b, { beta = c.beta, alpha = c.alpha }), c.out)
  elseif c.kind == "linear" then
    return U.mismatch(T.linear(a, b, c.bias and U.tensor(c.bias) or nil), c.out)
  end
  error("unknown kind " .. c.kind)
end

describe("linear algebra conforms to PyTorch", function()
  for _, g in ipairs(U.groups(cases, { linalg = true, addop = true, linear = true })) do
    it(("%s matches PyTorch (%d cases)"):format(g.name, #g.cases), function()
      assert.same({}, U.failures(g, run, describe_case))
    end)
  end
end)

describe("matmul", function()
  local f32, f64 = { dtype = T.float32 }, { dtype = T.float64 }
  local a = T.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, f32)
  local b = T.tensor({ { 1, 0 }, { 0, 1 }, { 1, 1 } }, f32)

  it("follows PyTorch's shape rules for 1-d, 2-d and batched operands", function()
    assert.same({ { 4, 5 }, { 10, 11 } }, T.matmul(a, b):tolist())
    assert.same({ { 4, 5 }, { 10, 11 } }, a:matmul(b):tolist())
    assert.same({ 6, 15 }, T.matmul(a, T.ones(3)):tolist())
    assert.same({ 5, 7, 9 }, T.matmul(T.ones(2), a):tolist())
    assert.equal(14, T.matmul(T.tensor({ 1, 2, 3 }, f32), T.tensor({ 1, 2, 3 }, f32)):item())
    assert.equal(T.Size {}, T.dot(T.ones(3), T.ones(3)).shape)
    assert.equal(T.Size { 4, 2, 2 }, T.matmul(T.ones(4, 2, 3), b).shape)
    assert.equal(T.Size { 5, 4, 2, 7 }, T.matmul(T.ones(5, 1, 2, 3), T.ones(4, 3, 7)).shape)
    assert.equal(T.Size { 2, 4 }, T.matmul(T.ones(3), T.ones(2, 3, 4)).shape)
  end)

  it("mm, bmm, mv, dot and outer compute the right values", function()
    assert.same({ { 4, 5 }, { 10, 11 } }, T.mm(a, b):tolist())
    assert.same({ { { 4, 5 }, { 10, 11 } } },
      T.bmm(T.tensor({ { { 1, 2, 3 }, { 4, 5, 6 } } }, f32),
        T.tensor({ { { 1, 0 }, { 0, 1 }, { 1, 1 } } }, f32)):tolist())
    assert.same({ 4, 10 }, T.mv(a, T.tensor({ 1, 0, 1 }, f32)):tolist())
    assert.same({ { 2, 4 }, { 3, 6 } }, T.outer(T.tensor({ 2, 3 }, f32), T.tensor({ 1, 2 }, f32)):tolist())
  end)

  it("addmm, addmv, baddbmm take beta and alpha; beta = 0 ignores NaN in input", function()
    local c = T.ones(2, 2)
    assert.same({ { 9, 11 }, { 21, 23 } }, T.addmm(c, a, b, { alpha = 2 }):tolist())
    assert.same({ { 4.5, 5.5 }, { 10.5, 11.5 } }, T.addmm(c, a, b, { beta = 0.5 }):tolist())
    assert.same({ { 4, 5 }, { 10, 11 } }, T.addmm(T.full({ 2, 2 }, 0 / 0), a, b, { beta = 0 }):tolist())
    assert.same({ 5, 11 }, T.addmv(T.ones(2), a, T.tensor({ 1, 0, 1 }, f32)):tolist())
    assert.same({ { { 5, 6 }, { 11, 12 } } },
      T.baddbmm(T.ones(1, 2, 2), T.tensor({ { { 1, 2, 3 }, { 4, 5, 6 } } }, f32),
        T.tensor({ { { 1, 0 }, { 0, 1 }, { 1, 1 } } }, f32)):tolist())
  end)

  it("T.linear computes x W^T + b", function()
    local W = T.tensor({ { 1, 0, 1 }, { 0, 1, 0 } }, f32)
    assert.same({ { 4, 2 }, { 10, 5 } }, T.linear(a, W):tolist())
    assert.same({ { 5, 4 }, { 11, 7 } }, T.linear(a, W, T.tensor({ 1, 2 }, f32)):tolist())
    assert.same({ 5, 4 }, T.linear(T.tensor({ 1, 2, 3 }, f32), W, T.tensor({ 1, 2 }, f32)):tolist())
  end)

  it("computes integer products exactly and half types through float32", function()
    local i = T.tensor { { 1, 2 }, { 3, 4 } }
    assert.same({ { 7, 10 }, { 15, 22 } }, T.mm(i, i):tolist())
    assert.equal(T.int64, T.mm(i, i).dtype)
    -- int8 wraps as int8 arithmetic does: 100 * 2 = 200 -> -56
    local b8 = T.tensor({ { 100 } }, { dtype = T.int8 })
    assert.same({ { -56 } }, T.mm(b8, T.tensor({ { 2 } }, { dtype = T.int8 })):tolist())
    local h = T.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = T.float16 })
    assert.equal(T.float16, T.mm(h, h).dtype)
    assert.same({ { 7, 10 }, { 15, 22 } }, T.mm(h, h):tolist())
    local bf = T.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = T.bfloat16 })
    assert.same({ { 7, 10 }, { 15, 22 } }, T.matmul(bf, bf):tolist())
  end)

  it("writes every output element (deterministic mode fills fresh memory with NaN)", function()
    T.use_deterministic_algorithms(true)
    local ok, err = pcall(function()
      assert.equal(70 * 33 * 90, T.mm(T.ones(70, 90), T.ones(90, 33)):sum():item())
      assert.equal(70 * 33 * 90, T.mm(T.ones(70, 90, f64), T.ones(90, 33, f64)):sum():item())
      assert.equal(24, T.mm(T.ones(3, 4, { dtype = T.int32 }), T.ones(4, 2, { dtype = T.int32 })):sum():item())
      assert.equal(120, T.matmul(T.ones(5, 3, 4, { dtype = T.float16 }), T.ones(4, 2, { dtype = T.float16 })):sum():item())
      assert.same({ { 0, 0 } }, T.mm(T.ones(1, 0), T.ones(0, 2)):tolist())
    end)
    T.use_deterministic_algorithms(false)
    assert(ok, err)
  end)

  it("handles empty operands: k = 0 gives zeros", function()
    assert.same({ { 0, 0 }, { 0, 0 } }, T.mm(T.zeros(2, 0), T.zeros(0, 2)):tolist())
    assert.equal(T.Size { 0, 2 }, T.mm(T.zeros(0, 3), T.zeros(3, 2)).shape)
  end)
end)

describe("linear algebra errors", function()
  local f32, f64 = { dtype = T.float32 }, { dtype = T.float64 }
  it("name mismatched sizes as PyTorch does", function()
    assert.has_error(function() T.mm(T.zeros(2, 3), T.zeros(4, 5)) end,
      "mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
    assert.has_error(function() T.matmul(T.zeros(2, 3), T.zeros(4, 5)) end,
      "mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
    assert.has_error(function() T.mv(T.zeros(2, 3), T.zeros(4)) end,
      "mv: size mismatch, got input (2), mat (2x3), vec (4)")
    assert.has_error(function() T.dot(T.zeros(3), T.zeros(4)) end,
      "dot: inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got 3 and 4 elements respectively")
    assert.has_error(function() T.bmm(T.zeros(2, 2, 3), T.zeros(2, 4, 5)) end,
      "bmm: Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].")
    assert.has_error(function() T.matmul(T.zeros(2, 2, 3), T.zeros(3, 3, 5)) end,
      "matmul: shapes [2] and [3] cannot be broadcast: the size of a (2) must match the size of b (3) at non-singleton dimension 1")
    assert.has_error(function() T.matmul(T.zeros(2, 2, 3), T.zeros(2, 4, 5)) end,
      "matmul: shapes [2, 2, 3] and [2, 4, 5] cannot be multiplied (3 columns vs 4 rows)")
    assert.has_error(function() T.matmul(T.tensor(1.5), T.zeros(3)) end,
      "matmul: both arguments to matmul need to be at least 1D, but they are 0D and 1D")
    assert.has_error(function() T.addmm(T.zeros(3, 3), T.zeros(2, 3), T.zeros(3, 2), { beta = 0 }) end,
      "addmm: input of shape [3, 3] cannot be broadcast to the result shape [2, 2]")
    assert.has_error(function() T.linear(T.zeros(2, 3), T.zeros(2, 3), T.zeros(3)) end,
      "linear: bias of shape [3] cannot be broadcast to the result shape [2, 2]")
    assert.has_error(function() T.linear(T.zeros(2, 3), T.zeros(4, 5)) end,
      "linear: mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)")
  end)

  it("require matching dtypes, in PyTorch's words", function()
    assert.has_error(function() T.mm(T.zeros(2, 3, f32), T.zeros(3, 2, f64)) end,
      "mm: expected m1 and m2 to have the same dtype, but got: float != double")
    assert.has_error(function() T.matmul(T.zeros(2, 3, f32), T.zeros(3, f64)) end,
      "matmul: expected m1 and m2 to have the same dtype, but got: float != double")
    assert.has_error(function() T.dot(T.zeros(3, f32), T.zeros(3, f64)) end,
      "dot: expected both vectors to have same dtype, but found float and double")
    assert.has_error(function() T.addmm(T.zeros(2, 2, f64), T.zeros(2, 3), T.zeros(3, 2)) end,
      "addmm: self and mat2 must have the same dtype, but got: double != float")
    assert.has_error(function()
      T.mm(T.zeros(2, 2, { dtype = T.bool }), T.zeros(2, 2, { dtype = T.bool }))
    end, "mm: not implemented for 'bool' tensors")
  end)

  it("reject wrong ranks and non-tensors", function()
    assert.has_error(function() T.mm(T.zeros(2, 3, 4), T.zeros(4, 5)) end,
      "mm: expected 2-D tensors, got 3-D and 2-D")
    assert.has_error(function() T.bmm(T.zeros(2, 3), T.zeros(3, 3, 5)) end,
      "bmm: batch1 must be a 3D tensor, got 2-D")
    assert.has_error(function() T.mm(T.zeros(2, 2), 3) end,
      "mm: expected a tensor for argument #2, got number")
    assert.has_error(function() T.addmm(T.zeros(2, 2), T.zeros(2, 2), T.zeros(2, 2), { gamma = 1 }) end)
  end)
end)
