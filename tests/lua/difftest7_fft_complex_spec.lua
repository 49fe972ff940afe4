-- Differences from PyTorch 1.13 found by the seventh round of differential
-- tests: T.fft and complex autograd (ember against torch on the same
-- inputs), each with torch's value or error. Where torch 1.13 is itself
-- wrong (a branch cut's side), the case says so and holds the right value.
local T = require "ember"
local U = require "specutil"
local err = U.err

local f64 = T.float64
local function cx(re, im) return T.complex(T.tensor(re, { dtype = f64 }), T.tensor(im, { dtype = f64 })) end
-- z.grad of sum(Re(f(z) * w)) (w = 1 by default), as a list of {re, im}
local function grad(f, z, w)
  z = z:detach():clone():requires_grad_()
  local y = f(z)
  if w then y = y * w end
  y.real:sum():backward()
  return z.grad:tolist()
end
local function near(got, want, tol, what)
  assert.equal(#want, #got, what)
  for i = 1, #want do
    for k = 1, 2 do
      local g, e = got[i][k], want[i][k]
      if not (math.abs(g - e) <= (tol or 1e-12) * math.max(1, math.abs(e))) then
        error(("%s: element %d part %d is %.17g, expected %.17g"):format(what, i, k, g, e))
      end
    end
  end
end
local R3 = 1 / math.sqrt(3)

describe("difftest round 7: complex autograd (torch 1.13)", function()
  it("asin/acos/asinh/acosh gradients on their branch cuts follow the side the signed zero picks", function()
    -- acosh at 0.5+0j and -0.5+0j: torch 1.13 1.1547j (ember had the sign
    -- flipped); at 0.5-0j the value lies below the cut: -1.1547j (torch
    -- 1.13 says +1.1547j there, against central differences of its own
    -- acosh); at -2+0j -0.57735 as torch
    near(grad(function(z) return z:acosh() end, cx({ 0.5, -0.5, 0.5, -2, 0 }, { 0, 0, -0.0, 0, 0 })),
      { { 0, 2 / math.sqrt(3) }, { 0, 2 / math.sqrt(3) }, { 0, -2 / math.sqrt(3) }, { -R3, 0 }, { 0, 1 } }, 1e-12, "acosh")
    -- asin at -2+0j: torch 0.57735j (ember had -0.57735j); at 2+0j the
    -- derivative of casin's value is -0.57735j (torch 1.13: +0.57735j)
    near(grad(function(z) return z:asin() end, cx({ -2, 2, 0.5 }, { 0, 0, 0 })),
      { { 0, R3 }, { 0, -R3 }, { 2 / math.sqrt(3), 0 } }, 1e-12, "asin")
    -- acos: torch at -2+0j -0.57735j (ember had +0.57735j)
    near(grad(function(z) return z:acos() end, cx({ -2, 2 }, { 0, 0 })),
      { { 0, -R3 }, { 0, R3 } }, 1e-12, "acos")
    -- asinh on the imaginary axis: torch at 0+2j 0.57735j; 0-2j gives
    -- -0.57735j (torch 1.13: +0.57735j)
    near(grad(function(z) return z:asinh() end, cx({ 0, 0 }, { 2, -2 })),
      { { 0, R3 }, { 0, -R3 } }, 1e-12, "asinh")
    -- off the cuts unchanged (torch's values)
    assert.is_true(T.autograd.gradcheck(function(z) return z:acosh() + z:asin() + z:acos() + z:asinh() end,
      { cx({ 0.3, -1.7, 2.5 }, { 0.4, 0.9, -1.1 }):requires_grad_() }))
  end)

  it("sgn's gradient at 0 is 0 (torch's sgn_backward), not NaN", function()
    local w = cx({ 1, 2 }, { -1, 0.5 })
    -- torch: [0j, (0.304-0.228j)]
    near(grad(function(z) return z:sgn() end, cx({ 0, 3 }, { 0, 4 }), w), { { 0, 0 }, { 0.304, -0.228 } }, 1e-12, "sgn")
  end)

  it("pow's complex gradients are masked as torch's: exponent 0, and base 0 with a real exponent >= 0", function()
    -- z ^ (0+0j): torch gives 0 for z (ember had NaN at z = 0)
    local z = cx({ 0, 0, 1.5 }, { 0, 0, -1 }):requires_grad_()
    local e = cx({ 0 }, { 0 }):requires_grad_()
    z:pow(e).real:sum():backward()
    near(z.grad:tolist(), { { 0, 0 }, { 0, 0 }, { 0, 0 } }, 0, "pow z")
    -- the exponent's: the 0 bases contribute nothing; torch (0.5893+0.5880j)
    near(e.grad:tolist(), { { 0.589327498170823, 0.5880026035475675 } }, 1e-12, "pow e")
    -- 0 ^ x: torch 0 for x = 0, 1, 2.5 (ember had -inf/NaN)
    near(grad(function(x) return T.pow(0, x) end, cx({ 0, 1, 2.5 }, { 0, 0, 0 })),
      { { 0, 0 }, { 0, 0 }, { 0, 0 } }, 0, "rpow")
    -- a zero base tensor: torch 0 for both operands where the exponent is 2 or 0
    local b = T.zeros(3, { dtype = T.complex128 }):requires_grad_()
    local ex = cx({ 2, 0, -1 }, { 0, 0, 0 }):requires_grad_()
    b:pow(ex).real:sum():backward()
    for _, g in ipairs { b.grad, ex.grad } do
      local l = g:tolist()
      assert.same({ 0, 0 }, l[1]); assert.same({ 0, 0 }, l[2])
    end
  end)

  it("complex masked_fill and masked_fill_ work under autograd", function()
    local m = T.tensor({ true, false, true })
    local z = cx({ 1, -2, 3 }, { 1, 0.5, -1 })
    -- torch: masked_fill(m, 2+1j) * (1-1j): [0j, (1+1j), 0j]
    near(grad(function(x) return x:masked_fill(m, T.complex(T.tensor(2.0, { dtype = f64 }), T.tensor(1.0, { dtype = f64 }))) end,
      z, cx({ 1 }, { -1 })), { { 0, 0 }, { 1, 1 }, { 0, 0 } }, 0, "masked_fill")
    -- torch: y = z * 1; y.masked_fill_(~m, 0); (y * y).real.sum(): [(2-2j), 0j, (6+2j)]
    near(grad(function(x)
      local y = x * 1
      y:masked_fill_(m:logical_not(), 0)
      return y * y
    end, z), { { 2, -2 }, { 0, 0 }, { 6, 2 } }, 0, "masked_fill_")
    -- the value: torch [2+1j, -2+0.5j, 2+1j]
    local r = z:clone():requires_grad_():masked_fill(m, 5)
    near(r:tolist(), { { 5, 0 }, { -2, 0.5 }, { 5, 0 } }, 0, "value")
    assert.is_true(r.requires_grad)
    -- triu (through masked_fill) of a complex matrix that requires grad
    local a = T.complex(T.ones(2, 2, { dtype = f64 }), T.ones(2, 2, { dtype = f64 })):requires_grad_()
    a:triu().real:sum():backward()
    near(a.grad:reshape(-1):tolist(), { { 1, 0 }, { 1, 0 }, { 0, 0 }, { 1, 0 } }, 0, "triu")
  end)
end)

describe("difftest round 7: T.fft argument forms (torch 1.13)", function()
  it("an empty s followed by more arguments is an empty list, not an options table", function()
    local x = T.arange(1, 7, { dtype = f64 }):reshape(2, 3)
    -- torch.fft.fftn(x, s=[], dim=[]) transforms nothing: x as complex
    local y = T.fft.fftn(x, {}, {})
    assert.equal(T.complex128, y.dtype)
    assert.is_true(T.equal(y.real, x))
    -- torch: "rfftn must transform at least one axis"
    err(function() T.fft.rfftn(x, {}, {}) end, "rfftn: must transform at least one axis")
    -- {} alone is still an (empty) options table
    assert.is_true(T.allclose(T.fft.fftn(x, {}), T.fft.fftn(x)))
  end)

  it("s longer than the input's dims, without dim, gives torch's message", function()
    -- torch: "Got shape with 3 values but input tensor only has 2 dimensions."
    err(function() T.fft.fftn(T.zeros(2, 3), { 2, 3, 4 }) end,
      "fftn: Got shape with 3 values but input tensor only has 2 dimensions.")
    err(function() T.fft.irfftn(T.zeros(2, 3), { 2, 3, 4 }) end, "irfftn: Got shape with 3 values")
  end)
end)
