-- Differential round 11, complex elementwise ops: cases where ember differed
-- from torch 1.13 (values pasted from torch 1.13, CPU).
local T = require "ember"

local f64 = { dtype = T.float64 }
local function cx(re, im) return T.complex(T.tensor(re, f64), T.tensor(im, f64)) end
local function Z() return cx({ 0.3, -1.2 }, { 0.5, 0.8 }) end

-- z (complex128) against a list of {re, im} pairs
local function near(z, want, tol)
  tol = tol or 1e-10
  local got = z:tolist()
  assert.are.equal(#want, #got)
  for i, w in ipairs(want) do
    for k = 1, 2 do
      local g, e = got[i][k], w[k]
      assert(math.abs(g - e) <= tol * (1 + math.abs(e)),
        ("element %d part %d: got %.17g, want %.17g"):format(i, k, g, e))
    end
  end
end

describe("difftest11 complex", function()
  it("angle of a float64 tensor is pi in float64 (not float32's pi)", function()
    local a = T.angle(T.tensor({ -1, 2, -0.0 }, f64))
    assert.are.equal(T.float64, a.dtype)
    assert.are.equal(3.141592653589793, a:tolist()[1])
    assert.are.equal(0, a:tolist()[2])
    assert.are.equal(0, a:tolist()[3])
  end)

  it("the composed unary ops have in-place forms on complex tensors", function()
    local want = {
      sigmoid_ = { { 0.5791816932178908, 0.12466074260226367 }, { 0.19899416421468535, 0.14304994885936362 } },
      rsqrt_ = { { 1.1395917673889977, -0.6452258946479975 }, { 0.24130081678110776, -0.7969624590294744 } },
      log2_ = { { -0.7781966742621929, 1.4865195378735334 }, { 0.5282917641831838, 3.6840517016593193 } },
      log10_ = { { -0.23426054147887249, 0.44748697004049304 }, { 0.15903166748138076, 1.1090100677763872 } },
      sinh_ = { { 0.2672416992709515, 0.5011619801599462 }, { -1.0516518538159267, 1.2988847997412711 } },
      cosh_ = { { 0.917370851271881, 0.14599480570180629 }, { 1.26149588207169, -1.0828212972823714 } },
      tan_ = { { 0.2384050833381232, 0.49619706577350764 }, { -0.3670854386853234, 1.2910198946976732 } },
    }
    for op, w in pairs(want) do
      local z = Z()
      local r = z[op](z)
      assert(rawequal(r, z), op .. " returns self")
      near(z, w)
    end
    -- a real tensor keeps the real op
    assert.are.equal(0.5, T.tensor({ 0 }, f64):sigmoid_():item())
  end)

  it("in-place complex ops give torch's gradients", function()
    local A, B = T.tensor({ 0.7, -1.3 }, f64), T.tensor({ -0.4, 0.6 }, f64)
    local want = {
      sigmoid_ = { { 0.18938607108534447, -0.08988903593425261 }, { -0.18214576380085484, 0.21986832529530456 } },
      tan_ = { { 0.4728010967211609, -0.48986444621669895 }, { 0.12287731869762293, -1.551366360957333 } },
    }
    for op, w in pairs(want) do
      local z = Z():requires_grad_()
      local y = z * 1
      y[op](y)
      local L = (y.real * A):sum() + (y.imag * B):sum()
      L:backward()
      near(z.grad, w)
    end
    -- sgn_ (helpers2's in-place form) and masked_fill_
    local z = Z():requires_grad_()
    local y = z * 1
    y:sgn_()
    y:exp():abs():sum():backward()
    near(z.grad, { { 2.109426029112766, -1.2656556174676594 }, { 0.09283892863627657, 0.1392583929544149 } })
    z = Z():requires_grad_()
    y = z * 1
    y:masked_fill_(T.tensor({ true, false }), 0)
    y:exp():abs():sum():backward()
    near(z.grad, { { 0, 0 }, { 0.3011942119122021, -2.2485854810065295e-17 } })
  end)

  it("copy_ into a complex tensor is recorded by autograd", function()
    local z = Z():requires_grad_()
    local y = T.zeros(2, { dtype = T.complex128 })
    y:copy_(z:exp())
    assert.is_true(y.requires_grad)
    y:abs():sum():backward()
    near(z.grad, { { 1.3498588075760034, 0 }, { 0.3011942119122021, 0 } })
    -- the index ops' in-place forms end in copy_: the source gets its gradient
    local a = cx({ 0.3, -1.2, 0.7 }, { 0.5, 0.8, -0.2 }):requires_grad_()
    local w = a:detach():clone():requires_grad_()
    local v = a * 1
    v:index_copy_(1, T.tensor({ 3, 1 }), w[{ { 1, 2 } }] * 2)
    local L = (v * v):abs():sum()
    L:backward()
    near(a.grad, { { 0, 0 }, { -2.4, 1.6 }, { 0, 0 } })
    near(w.grad, { { 2.4, 4.0 }, { -9.6, 6.4 }, { 0, 0 } })
    -- a leaf that requires grad is refused, as torch
    local ok, err = pcall(function() z:copy_(z:detach()) end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("copy_: a leaf tensor that requires grad", 1, true))
    -- no recording under no_grad
    local u = T.zeros(2, { dtype = T.complex128 })
    T.no_grad(function() u:copy_(z:exp()) end)
    assert.is_false(u.requires_grad)
    near(u, { { 1.1846125505428327, 0.6471567858617525 }, { 0.20984402825576315, 0.2160635024588998 } }, 1e-12)
  end)
  it("an in-place op on a view of a complex tensor differentiates (CopySlices), and where takes complex", function()
    -- torch 1.13: z = [1+0.5j, 2-1j, 3+2j]; y = z * 1; y[0:2].mul_(2); y.abs().sum().backward()
    local re = T.tensor({ 1, 2, 3 }, { dtype = T.float64 })
    local z = T.complex(re, T.tensor({ 0.5, -1, 2 }, { dtype = T.float64 })):requires_grad_()
    local y = z * 1
    y[{ { 1, 2 } }]:mul_(2)
    y:abs():sum():backward()
    near(z.grad, { { 1.7888543819998317, 0.8944271909999159 }, { 1.7888543819998317, -0.8944271909999159 },
      { 0.8320502943378437, 0.5547001962252291 } })
    local w = T.where(T.tensor { true, false, true }, z:detach(), z:detach() * 2)
    near(w, { { 1, 0.5 }, { 4, -2 }, { 3, 2 } })
  end)
end)
