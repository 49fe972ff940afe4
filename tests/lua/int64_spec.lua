-- Exact int64 values across the Lua boundary (docs/dtypes.md, "Integers in
-- Lua"): Lua 5.4 integers both ways; under LuaJIT a value within +-2^53 is
-- a number and one beyond a boxed int64_t, also accepted wherever a number
-- is.
local T = require "ember"

-- the decimal text of an integer value, whichever form it has
local function text(v) return (tostring(v):gsub("LL$", "")) end

-- an int64 value from its decimal text, in this Lua's exact form
local function int(s)
  if jit then
    local ffi = require "ffi"
    local neg = s:sub(1, 1) == "-"
    local v = ffi.new("int64_t", 0)
    for d in s:gmatch("%d") do v = v * 10 + tonumber(d) end
    return neg and -v or v
  end
  return math.tointeger(tonumber(s))
end

local MAX, MIN = "9223372036854775807", "-9223372036854775808"
local ODD = "9007199254740993" -- 2^53 + 1: no double holds it

describe("int64 values", function()
  it("T.tensor takes them exactly and infers int64", function()
    local t = T.tensor { int(ODD), int(MAX), int(MIN), 5 }
    assert.equal(T.int64, t.dtype)
    local l = t:tolist()
    assert.same({ ODD, MAX, MIN, "5" }, { text(l[1]), text(l[2]), text(l[3]), text(l[4]) })
    assert.equal(ODD, text(t[1]:item()))
    assert.equal(MAX, text(t[2]:item()))
  end)

  it("print exactly", function()
    -- right-aligned to the widest, as PyTorch prints
    assert.equal("tensor([    9007199254740993, -9223372036854775808])",
      tostring(T.tensor { int(ODD), int(MIN) }))
  end)

  it("fill_, T.full, indexed writes and arithmetic keep every digit", function()
    local t = T.zeros(3, { dtype = T.int64 })
    t:fill_(int(ODD))
    assert.equal(ODD, text(t[3]:item()))
    t[2] = int(MIN)
    assert.equal(MIN, text(t[2]:item()))
    t[{ { 3, 3 } }] = int(MAX)
    assert.equal(MAX, text(t[3]:item()))
    assert.equal(ODD, text(T.full({ 2 }, int(ODD), { dtype = T.int64 })[2]:item()))
    assert.equal("9007199254740994", text((T.tensor { int(ODD) } + 1):item()))
    assert.equal("18014398509481986", text((T.tensor { int(ODD) } * 2):item()))
  end)

  it("values within 2^53 stay plain Lua numbers, integers under Lua 5.4", function()
    local v = T.tensor { 2 ^ 53 }:long():item()
    assert.equal("number", type(v))
    assert.equal(2 ^ 53, v)
    if math.type then
      assert.equal("integer", math.type(T.tensor { 7 }:item()))
      assert.equal("integer", math.type(T.zeros(2, 3):size(1)))
      assert.equal("integer", math.type(T.zeros(2, 3):stride(1)))
      assert.equal("integer", math.type(T.zeros(2, 3):numel()))
      assert.equal("integer", math.type(T.tensor { 1, 2 }:int():tolist()[1]))
      assert.equal("float", math.type(T.tensor { 1.0 }:item()))
      assert.equal("3", tostring(T.zeros(2, 3).shape[2]))
    end
  end)

  it("seeds round-trip exactly", function()
    local s = T.seed()
    assert.is_true(s >= 0)
    local a = T.rand(3)
    T.manual_seed(T.initial_seed())
    assert.is_true(T.equal(a, T.rand(3)))
    T.manual_seed(int(ODD))
    assert.equal(ODD, text(T.initial_seed()))
    local st = T.get_rng_state()
    local b = T.rand(2)
    T.set_rng_state(st)
    assert.is_true(T.equal(b, T.rand(2)))
  end)

  it("a value out of the int64 range is refused, naming the op", function()
    if jit then
      local ffi = require "ffi"
      local ok, err = pcall(T.tensor, { ffi.new("uint64_t", 2 ^ 63) })
      assert.is_false(ok)
      assert.matches("tensor: uint64 value 9223372036854775808 is out of the int64 range", err, 1, true)
      ok, err = pcall(function() return T.zeros(1, { dtype = T.int64 }):fill_(ffi.new("int32_t[2]")) end)
      assert.is_false(ok)
      assert.matches("fill_: expected a number", err, 1, true)
    else
      -- 2^63 is a float in Lua 5.4: stored as int64 it saturates, as a cast
      -- from float64 does (docs/dtypes.md)
      assert.equal(T.float32, T.tensor { 2 ^ 63 }.dtype)
    end
  end)
end)
