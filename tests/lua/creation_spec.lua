-- Ranges and the identity: arange/linspace/logspace/eye against PyTorch
-- 1.13 (tests/fixtures/gen_creation.py), their options and their errors.
local T = require "ember"
local unpack = table.unpack or unpack  -- Lua 5.4 has only table.unpack

local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
local cases = dofile(here .. "../fixtures/creation_cases.lua")

-- relative tolerance per dtype: a few units in the last place
local rtol = { float32 = 4e-7, float64 = 1e-15, float16 = 2e-3, bfloat16 = 1.6e-2 }

local function flat(t)
  local out = {}
  local function walk(v)
    if type(v) == "table" then for i = 1, #v do walk(v[i]) end
    else out[#out + 1] = v == true and 1 or v == false and 0 or v end
  end
  walk(t:tolist())
  return out
end

describe("ranges match PyTorch", function()
  it("on every fixture case (" .. #cases .. " calls)", function()
    local failures = {}
    for _, c in ipairs(cases) do
      local args = {}
      for i, a in ipairs(c.args) do args[i] = a end
      local o = {}
      if c.dtype then o.dtype = T[c.dtype] end
      if c.base then o.base = c.base end
      args[#args + 1] = o
      local t = T[c.fn](unpack(args))
      local name = c.fn .. "(" .. table.concat(c.args, ", ") .. (c.dtype and (", " .. c.dtype) or "") .. ")"
      local ok = t.dtype == T[c.out_dtype] and t.shape == T.Size(c.shape)
      local got = flat(t)
      ok = ok and #got == #c.values
      local tol = rtol[c.out_dtype] or 0
      for i = 1, math.min(#got, #c.values) do
        local e = c.values[i]
        if math.abs(got[i] - e) > tol * math.max(1, math.abs(e)) then ok = false end
      end
      if not ok then
        local gs = {}
        for i = 1, #got do gs[i] = string.format("%.17g", got[i]) end
        failures[#failures + 1] = name .. ": got " .. tostring(t.dtype) .. " " .. tostring(t.shape)
          .. " {" .. table.concat(gs, ", ") .. "}"
      end
    end
    assert.are.equal("", table.concat(failures, "\n"))
  end)

  it("holds the seeds' facts", function()
    assert.same({ 0, 2, 4, 6, 8 }, T.arange(0, 10, 2):tolist())
    local v = T.arange(24, { dtype = T.float32 })
    assert.equal(T.Size{24}, v.shape)
    assert.equal(0, v:tolist()[1])
    assert.equal(23, v:tolist()[24])
    assert.equal(T.int64, T.arange(5).dtype)
    assert.equal(T.float32, T.arange(0, 1, 0.5).dtype)
  end)

  it("follows the default dtype for non-integral arguments", function()
    T.set_default_dtype(T.float64)
    local ok, err = pcall(function()
      assert.equal(T.float64, T.arange(0, 1, 0.25).dtype)
      assert.equal(T.float64, T.linspace(0, 1, 3).dtype)
      assert.equal(T.float64, T.eye(2).dtype)
      assert.equal(T.int64, T.arange(3).dtype)
    end)
    T.set_default_dtype(T.float32)
    assert(ok, err)
  end)

  it("accept device and requires_grad options", function()
    local t = T.arange(3, { dtype = T.float32, device = "cpu", requires_grad = true })
    assert.is_true(t.requires_grad)
    assert.equal("cpu", tostring(t.device))
    assert.is_true(T.linspace(0, 1, 3, { requires_grad = true }).requires_grad)
    assert.is_true(T.eye(2, { requires_grad = true }).requires_grad)
    assert.has_error(function() T.arange(3, { requires_grad = true }) end,
      "requires_grad: only tensors of floating point and complex dtype can require gradients, got ember.int64")
  end)

  it("reject bad input with clear errors", function()
    assert.has_error(function() T.arange(0, 5, 0) end, "arange: step must be nonzero")
    assert.has_error(function() T.arange(0, 2.5, 0.5, { dtype = T.int64 }) end,
      "arange: step must be nonzero")
    assert.has_error(function() T.arange(5, 0, 1) end,
      "arange: upper bound and lower bound inconsistent with step sign (start 5, end 0, step 1)")
    assert.has_error(function() T.arange(0, 1, -0.5) end,
      "arange: upper bound and lower bound inconsistent with step sign (start 0, end 1, step -0.5)")
    assert.has_error(function() T.arange(0, math.huge) end, "arange: unsupported range: 0 -> inf")
    assert.has_error(function() T.arange(0, 0 / 0) end)
    assert.has_error(function() T.arange(5, { dtype = T.bool }) end,
      "arange: not implemented for dtype ember.bool")
    assert.has_error(function() T.arange("5") end,
      "arange: expected numbers (end | start, end | start, end, step), got string")
    assert.has_error(function() T.arange(5, { dtype = "float99" }) end, "arange: unknown dtype 'float99' (expected one of bool, uint8, int8, int16, int32, "
      .. "int64, float16, bfloat16, float32, float64, complex64, complex128, or an alias such as long, int, float, double, half, byte)")
    assert.has_error(function() T.arange(5, { dtpye = T.float32 }) end, "arange: unknown option 'dtpye' (expected one of: dtype, device, requires_grad)")
    assert.has_error(function() T.linspace(0, 1, -1) end,
      "linspace: number of steps must be non-negative, got -1")
    assert.has_error(function() T.linspace(0, 1, 2.5) end,
      "linspace: expected an integer for steps, got 2.5")
    assert.has_error(function() T.linspace(0, 1) end,
      "linspace: expected an integer for steps, got no value")
    assert.has_error(function() T.logspace(0, 1, 3, { base = "ten" }) end,
      "logspace: expected a number for base, got string")
    assert.has_error(function() T.linspace(0, 1, 3, { base = 2 }) end, "linspace: unknown option 'base' (expected one of: dtype, device, requires_grad)")
    assert.has_error(function() T.eye(-1) end, "eye: n must be greater or equal to 0, got -1")
    assert.has_error(function() T.eye(2, -3) end, "eye: m must be greater or equal to 0, got -3")
    assert.has_error(function() T.eye(2.5) end, "eye: expected an integer for n, got 2.5")
  end)

  it("computes each element from its index (no accumulated error)", function()
    local t = T.arange(0, 1, 0.1, { dtype = T.float64 }):tolist()
    assert.equal(10, #t)
    assert.equal(0.1 * 7, t[8])  -- start + step * i, rounded once
    local l = T.linspace(0, 1, 1001, { dtype = T.float64 }):tolist()
    assert.equal(1, l[1001])
    assert.equal(0, l[1])
    assert.equal(0.5, l[501])
  end)
end)
