-- The elementwise and layout helpers written in Lua (lua/ember/math.lua):
-- rot90, fill_diagonal_, deg2rad/rad2deg (in place too) and positive
-- against PyTorch 1.13 (tests/fixtures/gen_math_extra.py), their
-- gradients, and their errors.
local T = require "ember"
local cases = dofile("tests/fixtures/math_extra_cases.lua")

local U = require "specutil"
local tensor = U.tensor
local function close(got, want, what)
  assert.are.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  assert.are.equal(want.dtype, got.dtype, what .. ": dtype")
  local d = (got:double() - want:double()):abs():max():item()
  assert(d <= 1e-6 * math.max(1, want:double():abs():max():item()), ("%s: max difference %g"):format(what, d))
end

describe("math helpers match PyTorch 1.13", function()
  local x = T.arange(1, 7):reshape(2, 3):float()
  local c = T.arange(0, 24):reshape(2, 3, 4):float()
  local function filled(t, v, wrap)
    t = t:clone()
    local r = t:fill_diagonal_(v, wrap)
    assert.is_true(rawequal(r, t))
    return t
  end
  local E = {
    rot90 = function() return x:rot90() end, rot90_k2 = function() return x:rot90(2) end,
    rot90_k3 = function() return x:rot90(3) end, rot90_kneg = function() return x:rot90(-1) end,
    rot90_k0 = function() return x:rot90(0) end, rot90_dims = function() return T.rot90(c, 1, { 3, 1 }) end,
    rot90_neg_dims = function() return c:rot90(1, { -1, -2 }) end,
    rot90_k5 = function() return c:rot90({ k = 5, dims = { 1, 2 } }) end,
    fill_diag = function() return filled(T.zeros(3, 4), 1) end,
    fill_diag_tall = function() return filled(T.zeros(5, 3), 2) end,
    fill_diag_wrap = function() return filled(T.zeros(7, 3), 5, true) end,
    fill_diag_wrap_short = function() return filled(T.zeros(4, 3), 5, { wrap = true }) end,
    fill_diag_cube = function() return filled(T.zeros(3, 3, 3), 4) end,
    fill_diag_int = function() return filled(T.zeros(2, 2, { dtype = T.int64 }), 7) end,
    fill_diag_strided = function() return filled(T.zeros(4, 3):t(), 9) end,
    deg2rad = function() return T.deg2rad(T.tensor { 180, 90, -45, 0 }:float()) end,
    deg2rad_int = function() return T.tensor({ 180, 90 }):deg2rad() end,
    deg2rad_f64 = function() return T.deg2rad(T.tensor({ 30, 1e3 }, { dtype = T.float64 })) end,
    rad2deg = function() return T.tensor({ math.pi, -1, 0.5 }):float():rad2deg() end,
    rad2deg_int = function() return T.rad2deg(T.tensor { 1, -2 }) end,
    positive = function() return T.positive(T.tensor { 1, -2, 3 }) end,
  }
  it("gives torch's values", function()
    local n = 0
    for k, want in pairs(cases) do
      n = n + 1
      close(assert(E[k], k)(), tensor(want), k)
    end
    assert.are.equal(21, n)
  end)

  it("writes in place, through out=, and differentiates as the compositions", function()
    local t = T.tensor { 180, 90 }:float()
    assert.is_true(rawequal(t, t:deg2rad_()))
    close(t, T.tensor { math.pi, math.pi / 2 }:float(), "deg2rad_")
    local o = T.empty(2)
    assert.is_true(rawequal(o, T.rad2deg(t, { out = o })))
    close(o, T.tensor { 180, 90 }:float(), "rad2deg out")
    local g = T.ones(3, 3, { dtype = T.float64 }):requires_grad_()
    local h = g * 2
    h:fill_diagonal_(0)
    h:sum():backward()
    close(g.grad, (T.ones(3, 3) * 2 - T.eye(3) * 2):double(), "fill_diagonal_ grad")
    local r = T.randn(2, 3, { dtype = T.float64 }):requires_grad_()
    assert.is_true(T.autograd.gradcheck(function(a) return a:rot90(1) * a:rot90(1) end, { r }))
    assert.is_true(T.autograd.gradcheck(function(a) return a:deg2rad() end, { r }))
    local p = T.ones(2)
    assert.is_true(rawequal(p, p:positive()))
  end)

  it("refuses bad input naming the op", function()
    local x2 = T.ones(2, 3)
    local err = U.err
    err(function() return x2:rot90(1, { 1, 1 }) end, "rot90: expected rotation dims to be different, but got dim0 = 1 and dim1 = 1")
    err(function() return x2:rot90(1, { 1, 2, 3 }) end, "rot90: expected total rotation dims == 2, but got dims = 3")
    err(function() return T.ones(3):rot90() end, "rot90: expected total dims >= 2, but got total dims = 1")
    err(function() return x2:rot90(1, { 1, 5 }) end, "rot90: Rotation dim1 out of range, dim1 = 5")
    err(function() return x2:rot90(1.5) end, "rot90: expected an integer k, got 1.5")
    err(function() return x2:rot90({ z = 1 }) end, "rot90: unknown option 'z'")
    err(function() return T.positive(T.tensor { true }) end, "positive: The `+` operator, on a bool tensor is not supported.")
    err(function() return T.deg2rad(T.complex(T.ones(1), T.ones(1))) end, "deg2rad: deg2rad is not supported for complex tensors.")
    err(function() return T.tensor({ 1, 2 }):rad2deg_() end, "rad2deg_: result type Float can't be cast to the desired output type Long")
    err(function() return T.deg2rad(x2, { bad = 1 }) end, "deg2rad: unknown option 'bad' (expected one of: out)")
    err(function() return T.zeros(2, 3, 3):fill_diagonal_(1) end, "fill_diagonal_: all dimensions of input must be of equal length")
    err(function() return T.zeros(3):fill_diagonal_(1) end, "fill_diagonal_: dimensions must larger than 1")
    err(function() return x2:fill_diagonal_("a") end, "fill_diagonal_: expected a number for the fill value, got string")
    err(function() return x2:fill_diagonal_(1, 3) end, "fill_diagonal_: expected a boolean for wrap, got number")
  end)
end)
