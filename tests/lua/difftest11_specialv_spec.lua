-- Round 11, special values of real elementwise ops against torch 1.13
-- (values below computed with torch 1.13 and pasted in)
local T = require "ember"
local F = T.nn.functional

local function signbit(v) return 1 / v < 0 end

describe("difftest11 special values", function()
  it("angle of a float64 tensor is float64's pi, with a zero gradient also at +-inf", function()
    local a = T.tensor({ -1 / 0, -2, -0.0, 0, 3, 1 / 0, 0 / 0 }, { dtype = T.float64, requires_grad = true })
    local r = T.angle(a)
    assert.are.equal(T.float64, r.dtype)
    local v = r:detach():tolist()
    -- torch: [3.141592653589793, 3.141592653589793, 0.0, 0.0, 0.0, 0.0, nan]
    assert.are.equal(3.141592653589793, v[1])
    assert.are.equal(3.141592653589793, v[2])
    for i = 3, 6 do assert.are.equal(0, v[i]) end
    assert.is_true(v[7] ~= v[7])
    r:sum():backward()
    for _, g in ipairs(a.grad:tolist()) do assert.are.equal(0, g) end
  end)

  it("hardswish below -3 is x * 0: -0 for finite x, NaN at -inf (gradient 0)", function()
    local x = T.tensor({ -1 / 0, -10, -3.5, -3, -1, 0, 2, 4, 1 / 0 }, { dtype = T.float64, requires_grad = true })
    local y = F.hardswish(x)
    -- torch: [nan, -0.0, -0.0, -0.0, -0.3333333333333333, 0.0, 1.6666666666666667, 4.0, inf]
    local v = y:detach():tolist()
    assert.is_true(v[1] ~= v[1])
    for i = 2, 4 do
      assert.are.equal(0, v[i]); assert.is_true(signbit(v[i]))
    end
    assert.is_true(math.abs(v[5] + 1 / 3) < 1e-15)
    assert.are.equal(0, v[6]); assert.is_false(signbit(v[6]))
    assert.is_true(math.abs(v[7] - 5 / 3) < 1e-15)
    assert.are.equal(4, v[8]); assert.are.equal(1 / 0, v[9])
    y:sum():backward()
    -- torch: [0.0, 0.0, 0.0, -0.5, 0.16666666666666669, 0.5, 1.1666666666666665, 1.0, 1.0]
    local g = x.grad:tolist()
    local want = { 0, 0, 0, -0.5, 1 / 6, 0.5, 7 / 6, 1, 1 }
    for i = 1, #want do assert.is_true(math.abs(g[i] - want[i]) < 1e-12, i) end
  end)

  it("logsigmoid of large positive x is +0", function()
    local x = T.tensor({ -1 / 0, -10, 0, 10, 700, 1 / 0 }, { dtype = T.float32, requires_grad = true })
    local y = F.logsigmoid(x)
    -- torch: [-inf, -10.000045776367188, -0.6931471824645996, -4.5398901420412585e-05, 0.0, 0.0]
    local v = y:detach():tolist()
    local want = { -1 / 0, -10.000045776367188, -0.6931471824645996, -4.5398901420412585e-05 }
    assert.are.equal(want[1], v[1])
    for i = 2, 4 do assert.is_true(math.abs(v[i] - want[i]) <= 1e-6 * math.abs(want[i]), i) end
    for i = 5, 6 do
      assert.are.equal(0, v[i]); assert.is_false(signbit(v[i]), i)
    end
    y:sum():backward()
    -- torch: [1.0, 0.9999545812606812, 0.5, 4.539786823443137e-05, 0.0, 0.0]
    local g = x.grad:tolist()
    local wg = { 1, 0.9999545812606812, 0.5, 4.539786823443137e-05, 0, 0 }
    for i = 1, 6 do assert.is_true(math.abs(g[i] - wg[i]) <= 1e-6, i) end
  end)
  it("gammainc/gammaincc at large a: the uniform asymptotic expansion, not 10^20 steps", function()
    -- reference: P(a, x) = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a+1)...(a+n)) in
    -- mpmath at 40 digits (torch 1.13 reads 0.49986701924097765 for Q(1e6, 1e6)
    -- and 6.41e-24 for P(1e8, 1e8 - 1e5): its expansion stops at 4.5 sqrt(a))
    local f64 = function(v) return T.tensor(v, { dtype = T.float64 }) end
    local a = f64 { 1e6, 1e6, 1e6, 1e8, 1e8 }
    local x = f64 { 1e6, 1e6 - 1e4, 1e6 + 1e3, 1e8, 1e8 - 1e5 }
    local want = { 0.50013298076087259, 5.4466446930108087e-24, 0.84134478636834029,
      0.50001329807601412, 7.3699310668969939e-24 }
    local p = T.special.gammainc(a, x)
    for i = 1, 5 do
      assert.is_true(math.abs(p[i]:item() - want[i]) <= 1e-12 * want[i], i .. ": " .. p[i]:item())
    end
    local q = T.special.gammaincc(f64 { 1e8 }, f64 { 1e8 + 1e4 })
    assert.is_true(math.abs(q[1]:item() - 0.15865525352820119) < 1e-14)
    -- a = x at the top of the range: 1/2 + 1/(3 sqrt(2 pi a)) (this took hours)
    local big = T.special.gammainc(f64 { 1e20, 1e300 }, f64 { 1e20, 1e300 })
    assert.is_true(math.abs(big[1]:item() - (0.5 + 1 / (3 * math.sqrt(2 * math.pi * 1e20)))) < 1e-15)
    assert.equal(0.5, big[2]:item())
    local m = T.tensor({ 3.4e38 }, { dtype = T.float32 })
    assert.equal(0.5, T.special.gammainc(m, m)[1]:item())
    assert.equal(0.5, T.special.gammaincc(m, m)[1]:item())
  end)
end)
