-- Differential round 12, the BLAS-like products: cases where ember differed
-- from torch 1.13 (values pasted from torch 1.13, CPU).
local T = require "ember"

local f64 = { dtype = T.float64 }
local function A() return T.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, f64) end
local function B() return T.tensor({ { 1, -1 }, { 0.5, 2 }, { -2, 1 } }, f64) end
local function I() return T.tensor({ { 1, 2 }, { 3, 4 } }, f64) end
local function V() return T.tensor({ 1, -2, 0.5 }, f64) end

local function near(t, want, tol)
  tol = tol or 1e-12
  local got = t:reshape(-1):tolist()
  local flat = {}
  local function walk(w) if type(w) == "table" then for _, x in ipairs(w) do walk(x) end else flat[#flat + 1] = w end end
  walk(want)
  assert.are.equal(#flat, #got)
  for i = 1, #flat do
    assert(math.abs(got[i] - flat[i]) <= tol * (1 + math.abs(flat[i])),
      ("element %d: got %.17g, want %.17g"):format(i, got[i], flat[i]))
  end
end
local function empty() return T.empty({ 0 }, f64) end

describe("difftest12 blas", function()
  it("addmm, addmv and baddbmm take out= (an empty out is resized)", function()
    local o = empty()
    local r = T.addmm(I(), A(), B(), { beta = 0.5, alpha = 2, out = o })
    assert(rawequal(r, o))
    near(o, { { -7.5, 13 }, { -9.5, 26 } })
    o = empty()
    T.addmv(T.tensor({ 1, 2 }, f64), A(), V(), { beta = 2, out = o })
    near(o, { 0.5, 1 })
    o = empty()
    local b1 = A():unsqueeze(1):expand(2, 2, 3)
    local b2 = B():unsqueeze(1) * T.tensor({ 1, 2 }, f64):view(2, 1, 1)
    T.baddbmm(I(), b1, b2, { alpha = -1, out = o })
    assert.are.same({ 2, 2, 2 }, o.shape:totable())
    near(o, { { { 5, -4 }, { 8.5, -8 } }, { { 9, -10 }, { 14, -20 } } })
    -- out's dtype must be the result's, as mm's out=
    assert.has_error(function() T.addmm(I(), A(), B(), { out = T.empty({ 0 }) }) end)
    -- the methods and the options check are unchanged
    near(I():addmm(A(), B(), { beta = 0.5, alpha = 2 }), { { -7.5, 13 }, { -9.5, 26 } })
    local ok, e = pcall(T.addmm, I(), A(), B(), { outt = 1 })
    assert.is_false(ok)
    assert.truthy(tostring(e):find("addmm: unknown option 'outt'", 1, true))
  end)

  it("addr refuses a fractional beta or alpha for a bool result, as torch", function()
    local m = T.tensor({ { true, false }, { false, false } })
    local v1, v2 = T.tensor({ true, false }), T.tensor({ true, true })
    for _, o in ipairs { { beta = 0.5 }, { alpha = 1.5 } } do
      local ok, e = pcall(T.addr, m, v1, v2, o)
      assert.is_false(ok)
      assert.truthy(tostring(e):find("addr: for integer tensors beta and alpha must be integers", 1, true))
    end
    -- integer ones are taken (torch: [[true, true], [false, false]])
    assert.are.same({ { true, true }, { false, false } }, T.addr(m, v1, v2, { beta = 2 }):tolist())
  end)

  it("addbmm with alpha = 0 does not read the batches (NaN ignored, as torch)", function()
    local b1 = T.full({ 2, 2, 3 }, 0 / 0, f64)
    local r = T.addbmm(I(), b1, T.ones({ 2, 3, 2 }, f64), { alpha = 0, beta = 3 })
    near(r, { { 3, 6 }, { 9, 12 } })
    -- the batches stay in the graph with a zero gradient
    local x = T.ones({ 2, 2, 3 }, f64):requires_grad_()
    T.addbmm(I(), x, T.ones({ 2, 3, 2 }, f64), { alpha = 0 }):sum():backward()
    near(x.grad, T.zeros({ 12 }):tolist())
  end)

  it("tensordot, kron, linalg.multi_dot, vdot, ger and mixed-dtype outer take out=", function()
    local o = empty()
    assert(rawequal(T.tensordot(A(), B(), 1, { out = o }), o))
    near(o, { { -4, 6 }, { -5.5, 12 } })
    o = empty()
    T.tensordot(A(), A(), { { 1, 2 }, { 1, 2 } }, { out = o })
    near(o, { 91 })
    o = empty()
    T.tensordot(A():reshape(3, 2), B(), { out = o }) -- dims defaults to 2
    assert.are.equal(0, o:dim())
    o = T.empty({ 0 }, { dtype = T.int64 })
    T.kron(T.tensor({ 1, 2 }), T.tensor({ 3, 4, 5 }), { out = o })
    near(o, { 3, 4, 5, 6, 8, 10 })
    o = empty()
    T.linalg.multi_dot({ V(), B(), T.tensor({ 1, 1 }, f64) }, { out = o })
    near(o, { -5.5 })
    local f32 = { dtype = T.float32 }
    local c = T.complex(T.tensor({ 1, 3 }, f32), T.tensor({ 2, -1 }, f32))
    local d = T.complex(T.tensor({ 2, 0 }, f32), T.tensor({ -1, 1 }, f32))
    o = T.empty({ 0 }, { dtype = T.complex64 })
    T.vdot(c, d, { out = o })
    assert.are.same({ -1, -2 }, o:tolist())
    assert.are.same({ -1, -2 }, T.vdot(c, d):tolist())
    o = empty()
    T.ger(T.tensor({ 1, 2 }, f64), T.tensor({ 0.5, 1.5 }, f64), { out = o })
    near(o, { { 0.5, 1.5 }, { 1, 3 } })
    o = empty()
    T.outer(T.tensor({ 1, 2 }), T.tensor({ 0.5, 1.5 }, f64), { out = o })
    near(o, { { 0.5, 1.5 }, { 1, 3 } })
    o = T.empty({ 0 }, { dtype = T.bool })
    T.outer(T.tensor({ true, false }), T.tensor({ true }), { out = o })
    assert.are.same({ { true }, { false } }, o:tolist())
  end)

  it("tensordot and inner errors name the op, not the matmul inside", function()
    local b = T.tensor({ { true, false } })
    local ok, e = pcall(T.tensordot, b, b:t(), 1)
    assert.is_false(ok)
    assert.are.equal("tensordot: not implemented for 'bool' tensors", tostring(e))
    ok, e = pcall(T.tensordot, A(), A():float(), 1)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("got float64 and float32", 1, true))
    ok, e = pcall(T.inner, A(), A():float())
    assert.is_false(ok)
    assert.truthy(tostring(e):find("^inner: expected both tensors to have the same dtype"))
  end)

  it("bilinear checks the inputs' batch dims and the bias as torch", function()
    local F = T.nn.functional
    local w, bias = T.ones({ 5, 2, 4 }), T.ones({ 5 })
    -- different ndims: torch refuses (ember gave a [3, 5] result)
    local ok, e = pcall(F.bilinear, T.ones({ 3, 2 }), T.ones({ 1, 3, 4 }), w, bias)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("bilinear: input dimensions do not match: got 2 and 3", 1, true))
    ok, e = pcall(F.bilinear, T.ones({ 3, 2 }), T.ones({ 2, 4 }), w, bias)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("bilinear: input batch dimensions do not match at dim 1: got 3 and 2", 1, true))
    ok, e = pcall(F.bilinear, T.ones({ 3, 3 }), T.ones({ 3, 4 }), w, bias)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("bilinear: input1 size does not match weight size: got 3 but expected 2", 1, true))
    ok, e = pcall(F.bilinear, T.ones({ 3, 2 }), T.ones({ 3, 4 }), w, T.ones({ 4 }))
    assert.is_false(ok)
    assert.truthy(tostring(e):find("bilinear: bias size does not match weight size", 1, true))
    -- valid calls unchanged: 1-d inputs, batched inputs
    near(F.bilinear(T.ones({ 2 }), T.ones({ 4 }), w, bias), { 9, 9, 9, 9, 9 }, 1e-6)
    assert.are.same({ 2, 3, 5 }, F.bilinear(T.ones({ 2, 3, 2 }), T.ones({ 2, 3, 4 }), w, bias).shape:totable())
  end)
  it("addmm, addmv and baddbmm refuse an argument after the options table", function()
    local a, b, c = T.zeros(2, 2), T.ones(2, 3), T.ones(3, 2)
    local ok, err = pcall(function() return T.addmm(a, b, c, { beta = 1 }, 7) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("addmm: unexpected argument #5 (number): addmm takes at most 4 arguments", 1, true))
    ok = pcall(function() return T.addmv(T.zeros(2), b, T.ones(3), {}, 1) end)
    assert.is_false(ok)
  end)
end)
