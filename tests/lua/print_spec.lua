-- Printing: tostring(t) matches PyTorch 1.13 character for character on the
-- generated fixture (tests/fixtures/gen_print.py), plus the options and the
-- cost of printing a huge tensor.
local T = require "ember"

local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
local cases = dofile(here .. "../fixtures/print_cases.lua")

local negzero = 1 / -math.huge
local special = { nan = 0 / 0, inf = math.huge, ["-inf"] = -math.huge, ["-0"] = negzero }

local function flat_values(c)
  local n = 1
  for _, s in ipairs(c.shape) do n = n * s end
  local v = {}
  if c.gen then
    local a, b, m, cc, scale = c.gen[1], c.gen[2], c.gen[3], c.gen[4], c.gen[5]
    for i = 0, n - 1 do v[i + 1] = (math.fmod(i * a + b, m) - cc) * scale end
  else
    for i = 1, n do v[i] = c.values[i] end
  end
  for _, sp in ipairs(c.specials or {}) do v[sp[1] + 1] = special[sp[2]] end
  return v, n
end

local function nest(v, shape, d, pos)
  if d > #shape then return v[pos], pos + 1 end
  local t = {}
  for i = 1, shape[d] do t[i], pos = nest(v, shape, d + 1, pos) end
  return t, pos
end

local function build(c)
  local dt = T[c.dtype]
  local v, n = flat_values(c)
  local o = { dtype = dt, requires_grad = c.requires_grad }
  if n == 0 then return T.zeros(c.shape, o) end
  return T.tensor((nest(v, c.shape, 1, 1)), o)
end

describe("printing matches PyTorch", function()
  after_each(function()
    T.set_printoptions { profile = "default" }
    T.set_default_dtype(T.float32)
  end)

  it("on every fixture case (" .. #cases .. " tensors)", function()
    local failures = {}
    for _, c in ipairs(cases) do
      if c.default then T.set_default_dtype(T[c.default]) end
      local t = build(c)
      if c.opts then T.set_printoptions(c.opts) end
      local got = tostring(t)
      T.set_printoptions { profile = "default" }
      T.set_default_dtype(T.float32)
      if got ~= c.expected then
        failures[#failures + 1] = c.name .. "\n  expected: " .. c.expected .. "\n  got:      " .. got
      end
    end
    assert.are.equal("", table.concat(failures, "\n"))
  end)

  it("prints the seed's examples", function()
    assert.equal("tensor([[1, 2],\n        [3, 4]])", tostring(T.tensor{{1, 2}, {3, 4}}))
    assert.equal("tensor([99.,  1.,  1.])", tostring(T.tensor{99, 1, 1, dtype = nil}:double():float()))
    assert.equal("tensor([0, 2, 4, 6, 8])", tostring(T.arange(0, 10, 2)))
    assert.equal("tensor(5.)", tostring(T.tensor(5.0, { dtype = T.float32 })))
    assert.equal("tensor([])", tostring(T.tensor{}))
    assert.equal("tensor([], size=(0, 3))", tostring(T.zeros(0, 3)))
    assert.equal("tensor([], dtype=ember.int64)", tostring(T.zeros(0, { dtype = T.int64 })))
    assert.equal("tensor([1., 2.], dtype=ember.float64)", tostring(T.tensor({1, 2}, { dtype = T.float64 })))
    assert.equal("tensor([ True, False])", tostring(T.tensor{true, false}))
  end)

  it("reads only the edge items of a huge tensor", function()
    local t = T.zeros(10000000)
    local s = tostring(t)
    assert.equal("tensor([0., 0., 0.,  ..., 0., 0., 0.])", s)
    local t2 = T.arange(10000000, { dtype = T.float64 })
    assert.equal("tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.0000e+07, 1.0000e+07,\n"
      .. "        1.0000e+07], dtype=ember.float64)", tostring(t2))
    assert.equal("tensor([      0,       1,       2,  ..., 9999997, 9999998, 9999999])",
      tostring(T.arange(10000000)))
  end)

  it("set_printoptions validates its options and resets sci_mode like PyTorch", function()
    assert.has_error(function() T.set_printoptions { precison = 2 } end,
      "set_printoptions: unknown option 'precison'")
    assert.has_error(function() T.set_printoptions { precision = -1 } end,
      "set_printoptions: precision must be an integer >= 0, got -1")
    assert.has_error(function() T.set_printoptions { profile = "tiny" } end,
      "set_printoptions: profile must be 'default', 'short' or 'full', got tiny")
    assert.has_error(function() T.set_printoptions { sci_mode = "yes" } end)
    T.set_printoptions { sci_mode = true }
    assert.equal(true, T.get_printoptions().sci_mode)
    T.set_printoptions { precision = 3 }
    assert.equal(nil, T.get_printoptions().sci_mode)
    assert.equal(3, T.get_printoptions().precision)
    T.set_printoptions { profile = "full" }
    assert.equal(math.huge, T.get_printoptions().threshold)
  end)

  -- expected strings from PyTorch 1.13 (torch.set_printoptions(precision=0))
  it("formats ties as Python does (round half to even on the exact binary value)", function()
    assert.equal("tensor([0.5000, 1.5000, 2.5000])", tostring(T.tensor{0.5, 1.5, 2.5}))
    T.set_printoptions { precision = 0 }
    assert.equal("tensor([0, 2, 2])", tostring(T.tensor{0.5, 1.5, 2.5}))
  end)
end)
