-- Differences from PyTorch 1.13 found by the sixth round of differential
-- tests, printing and type promotion (ember against torch on the same
-- inputs), each with torch's output or error.
local T = require "ember"
local U = require "specutil"
local err = U.err

describe("difftest round 6: printing (torch 1.13)", function()
  after_each(function() T.set_printoptions { profile = "default" } end)

  it("prints with any precision Python formats (was an error past 100)", function()
    -- torch.set_printoptions(precision=120); torch.tensor([1.5, 2.25])
    T.set_printoptions { precision = 120 }
    assert.equal("tensor([1.5" .. string.rep("0", 119) .. ",\n        2.25" .. string.rep("0", 118) .. "])",
      tostring(T.tensor { 1.5, 2.25 }))
    -- torch.set_printoptions(precision=1000, sci_mode=False)
    -- torch.tensor([1/3], dtype=torch.float64): the exact binary value, then zeros
    T.set_printoptions { precision = 1000, sci_mode = false }
    assert.equal("tensor([0.333333333333333314829616256247390992939472198486328125" .. string.rep("0", 946)
      .. "],\n       dtype=ember.float64)", tostring(T.tensor({ 1 / 3 }, { dtype = T.float64 })))
  end)

  it("pads to any width (was no padding past 200 characters)", function()
    -- torch.set_printoptions(precision=250, sci_mode=True)
    -- torch.tensor([1.5, -20.25, nan], dtype=torch.float64): the width comes
    -- from the fixed notation (254), NaN padded to it
    T.set_printoptions { precision = 250, sci_mode = true }
    assert.equal("tensor([1.5" .. string.rep("0", 249) .. "e+00,\n        -2.025" .. string.rep("0", 247)
      .. "e+01,\n" .. string.rep(" ", 259) .. "nan],\n       dtype=ember.float64)",
      tostring(T.tensor({ 1.5, -20.25, 0 / 0 }, { dtype = T.float64 })))
    -- Python's "precision too big" past INT_MAX is refused when it is set
    err(function() T.set_printoptions { precision = 2 ^ 31 } end, "precision too big")
    T.set_printoptions { precision = 2 ^ 31 - 1 }
    assert.equal(2 ^ 31 - 1, T.get_printoptions().precision)
  end)

  it("a parameter prints as PyTorch's Parameter does", function()
    -- print(torch.nn.Parameter(torch.ones(2)))
    -- -> Parameter containing:\ntensor([1., 1.], requires_grad=True)
    assert.equal("Parameter containing:\ntensor([1., 1.], requires_grad=True)",
      tostring(T.nn.Parameter(T.ones(2))))
    -- a frozen one: Parameter containing:\ntensor([1., 1.])
    assert.equal("Parameter containing:\ntensor([1., 1.])", tostring(T.nn.Parameter(T.ones(2), false)))
    -- a module's parameters, also after a dtype change; what is computed from
    -- them is a plain tensor (l.weight * 1, l.weight.detach())
    local l = T.nn.Linear(2, 1)
    assert.matches("^Parameter containing:\ntensor%(%[%[", tostring(l.weight))
    assert.matches("^tensor%(", tostring(l.weight * 1))
    assert.matches("^tensor%(", tostring(l.weight:detach()))
    l:double()
    assert.matches("^Parameter containing:\ntensor%(%[.*dtype=ember.float64, requires_grad=True%)$", tostring(l.bias))
    assert.matches("^tensor%(", tostring(T.ones(2):requires_grad_()))
  end)
end)

describe("difftest round 6: promotion and integer semantics (torch 1.13)", function()
  it("Lua 5.4's // & | ~ << >> are Python's tensor operators", function()
    local chunk = load([[local T, t = ...
      return { t // 2, 7 // t, t // 2.5, t & 3, t | 8, t ~ 1, ~t, t << 1, t >> 1, 1 << T.tensor { 1, 3 },
        T.tensor { true, false } & true, T.tensor { 1.5, -1.5 } // 1 }]])
    if not chunk then return end -- LuaJIT: no such operators
    local t = T.tensor { -7, 7, 5 }
    local r = chunk(T, t)
    local function same(a, b) return a.dtype == b.dtype and T.equal(a, b) end
    -- torch: t // 2, 7 // t, t // 2.5
    assert.is_true(same(r[1], T.tensor { -4, 3, 2 }))
    assert.is_true(same(r[2], T.tensor { -1, 1, 1 }))
    assert.is_true(same(r[3], T.tensor({ -3, 2, 2 }, { dtype = T.float32 })))
    -- t & 3, t | 8, t ^ 1, ~t, t << 1, t >> 1, 1 << tensor([1, 3])
    assert.is_true(same(r[4], T.tensor { 1, 3, 1 }))
    assert.is_true(same(r[5], T.tensor { -7, 15, 13 }))
    assert.is_true(same(r[6], T.tensor { -8, 6, 4 }))
    assert.is_true(same(r[7], T.tensor { 6, -8, -6 }))
    assert.is_true(same(r[8], T.tensor { -14, 14, 10 }))
    assert.is_true(same(r[9], T.tensor { -4, 3, 2 }))
    assert.is_true(same(r[10], T.tensor { 2, 8 }))
    -- tensor([True, False]) & True; tensor([1.5, -1.5]) // 1 -> [1., -2.]
    assert.is_true(same(r[11], T.tensor { true, false }))
    assert.is_true(same(r[12], T.tensor({ 1, -2 }, { dtype = T.float32 })))
    -- t // 0: ZeroDivisionError; a float tensor & 1: "bitwise_and_cpu" not implemented for 'Float'
    err(function() return load("local t = ...; return t // 0")(t) end, "ZeroDivisionError")
    err(function() return load("local t = ...; return t & 1")(T.ones(2)) end, "bitwise_and: not implemented for float32")
  end)
end)

describe("difftest round 6: Lua numbers as Python numbers (torch 1.13)", function()
  it("a Lua 5.4 float is a Python float, an integer a Python int; LuaJIT goes by value", function()
    local t = T.tensor { 1, 2 }
    if math.type then
      -- torch.tensor([1, 2]) * 2.0 -> float32; * 2 -> int64;
      -- torch.tensor([3], dtype=torch.int32) * 2**40 -> int32 [0] (wraps), * 2.0**40 -> float32
      assert.equal(T.float32, (t * 2.0).dtype)
      assert.equal(T.float32, (t + 2 ^ 3).dtype)
      assert.same({ 0 }, (T.tensor({ 3 }, { dtype = T.int32 }) * math.tointeger(2 ^ 40)):tolist())
      assert.equal(T.float32, (T.tensor({ 3 }, { dtype = T.int32 }) * 2 ^ 40).dtype)
    else
      assert.equal(T.int64, (t * 2.0).dtype)
    end
    assert.equal(T.int64, (t * 2).dtype)
  end)
end)

describe("difftest round 6: complex lerp's dtypes (torch 1.13)", function()
  local z = T.complex(T.tensor({ 1, 2 }, { dtype = T.float32 }), T.tensor({ 0.5, -1 }, { dtype = T.float32 }))
  local f = T.tensor({ 3, 4 }, { dtype = T.float32 })

  it("refuses an end or a weight of another dtype, as the real lerp does", function()
    -- torch.lerp(f, z, 0.5): expected dtype float for `end` but got dtype c10::complex<float>
    err(function() T.lerp(f, z, 0.5) end, "lerp: expected dtype float32 for `end` but got dtype complex64")
    err(function() T.lerp(z, f, 0.5) end, "lerp: expected dtype complex64 for `end` but got dtype float32")
    err(function() T.lerp(z, z:to(T.complex128), 0.5) end, "expected dtype complex64 for `end` but got dtype complex128")
    -- torch.lerp(z, 2 * z, tensor([0.5, 0.25])): ... for `weight` but got dtype float
    err(function() T.lerp(z, z * 2, T.tensor({ 0.5, 0.25 }, { dtype = T.float32 })) end,
      "expected dtype complex64 for `weight` but got dtype float32")
    -- torch.lerp(z, 2 * z, z) -> [1.75+1.5j, 5-5j]
    local r = T.lerp(z, z * 2, z)
    assert.equal(T.complex64, r.dtype)
    assert.same({ { 1.75, 1.5 }, { 5, -5 } }, r:tolist())
  end)

  it("lerp_ runs on complex tensors (was refused)", function()
    -- z.clone().lerp_(2 * z, 0.5) -> [1.5+0.75j, 3-1.5j]
    local y = z:clone()
    assert.equal(y, y:lerp_(z * 2, 0.5))
    assert.same({ { 1.5, 0.75 }, { 3, -1.5 } }, y:tolist())
    err(function() z:clone():lerp_(f, 0.5) end, "lerp_: expected dtype complex64 for `end` but got dtype float32")
  end)
end)
