-- Elementwise ops through the Lua API: the conformance table generated from
-- PyTorch (tests/fixtures/math_cases.lua: ops x dtypes x broadcast shapes x
-- edge values), then the behaviours a user meets directly: metamethods,
-- in-place ops and out=, overlap, errors, threads.
local T = require "ember"
local unpack = table.unpack or unpack  -- Lua 5.4 has only table.unpack

local cases = dofile("tests/fixtures/math_cases.lua")

local function nest(data, shape)
  if #shape == 0 then return data[1] end
  local pos = 0
  local function build(d)
    local t = {}
    for i = 1, shape[d] do
      if d == #shape then
        pos = pos + 1
        t[i] = data[pos]
      else
        t[i] = build(d + 1)
      end
    end
    return t
  end
  return build(1)
end

local function make(v)
  if v.scalar ~= nil then return v.scalar end
  local t = T.tensor(nest(v.data, v.shape), { dtype = T[v.dtype] })
  return t
end

local function flatten(x, acc)
  acc = acc or {}
  if type(x) ~= "table" then
    acc[#acc + 1] = x
  else
    for i = 1, #x do flatten(x[i], acc) end
  end
  return acc
end

local rtol = { float16 = 2e-3, bfloat16 = 1e-2, float32 = 2e-6, float64 = 1e-12 }
local atol = { float16 = 1e-3, bfloat16 = 1e-2, float32 = 1e-6, float64 = 1e-12 }

-- gelu(-0) is +0 or -0 in torch depending on its code path (vectorised
-- float32 vs scalar float64); ember keeps the formula's sign
local ignore_zero_sign = { gelu = true }

local function close(got, want, dtype, op)
  if type(want) == "boolean" then return got == want end
  if want ~= want then return got ~= got end
  if not rtol[dtype] then return got == want end
  if want == math.huge or want == -math.huge then return got == want end
  if want == 0 and got == 0 then return ignore_zero_sign[op] or 1 / want == 1 / got end
  return math.abs(got - want) <= atol[dtype] + rtol[dtype] * math.abs(want)
end

local function describe_case(c)
  local parts = {}
  for _, a in ipairs(c.args) do
    if a.scalar ~= nil then parts[#parts + 1] = tostring(a.scalar)
    else parts[#parts + 1] = a.dtype .. "[" .. table.concat(a.shape, ",") .. "]{" ..
      table.concat((function() local s = {} for i, v in ipairs(a.data) do s[i] = tostring(v) end return s end)(), ",") .. "}" end
  end
  local o = {}
  for k, v in pairs(c.opts or {}) do o[#o + 1] = k .. "=" .. tostring(type(v) == "table" and "tensor" or v) end
  return c.op .. (c.inplace and "_" or "") .. "(" .. table.concat(parts, ", ") .. (#o > 0 and ", {" .. table.concat(o, ",") .. "}" or "") .. ")" .. (c.out and " out=" .. c.out or "")
end

local function run_case(c)
  local args = {}
  for i, a in ipairs(c.args) do args[i] = make(a) end
  local opts
  if c.opts then
    opts = {}
    for k, v in pairs(c.opts) do opts[k] = type(v) == "table" and make(v) or v end
  end
  local n = #args
  if c.inplace then -- t:op_(...) and then t itself is the result
    local t = args[1]
    local ok, err = pcall(t[c.op .. "_"], unpack(args, 1, n))
    return ok, ok and t or err
  end
  if c.out then
    local o = T.empty(0, { dtype = T[c.out] })
    opts = opts or {}
    opts.out = o
    args[n + 1] = opts
    local ok, r = pcall(T[c.op], unpack(args, 1, n + 1))
    if ok and r ~= o then return false, "the result is not the out tensor" end
    return ok, ok and o or r
  end
  if opts then args[n + 1] = opts; n = n + 1 end
  return pcall(T[c.op], unpack(args, 1, n))
end

local function check(c)
  local ok, r = run_case(c)
  if c.err then
    if ok then return "expected an error like '" .. c.err .. "', got a result of dtype " .. tostring(r.dtype) end
    return nil
  end
  if not ok then return "raised: " .. tostring(r) end
  if r.dtype.name ~= c.dtype then return "dtype " .. r.dtype.name .. ", expected " .. c.dtype end
  local shape = r:size()
  if #shape ~= #c.shape then return "ndim " .. #shape .. ", expected " .. #c.shape end
  for i = 1, #c.shape do
    if shape[i] ~= c.shape[i] then return "shape mismatch at dim " .. i end
  end
  local got = flatten(r:tolist())
  for i, want in ipairs(c.data) do
    if not close(got[i], want, c.dtype, c.op) then
      return ("element %d: got %.17g, expected %.17g"):format(i, tonumber(got[i]) or (got[i] and 1 or 0),
        tonumber(want) or (want and 1 or 0))
    end
  end
end

describe("elementwise conformance with PyTorch (tests/fixtures/math_cases.lua)", function()
  local byop, order = {}, {}
  for _, c in ipairs(cases) do
    local key = c.op .. (c.inplace and "_ (in place)" or c.out and " (out=)" or "")
    if not byop[key] then byop[key] = {}; order[#order + 1] = key end
    table.insert(byop[key], c)
  end
  for _, op in ipairs(order) do
    it(op .. " (" .. #byop[op] .. " cases)", function()
      local failures = {}
      for _, c in ipairs(byop[op]) do
        local why = check(c)
        if why then failures[#failures + 1] = describe_case(c) .. ": " .. why end
      end
      assert(#failures == 0, #failures .. " failing cases:\n" .. table.concat(failures, "\n", 1, math.min(#failures, 15)))
    end)
  end
end)

describe("operators", function()
  local a = T.tensor { { 1, 2, 3 }, { 4, 5, 6 } }
  it("+ - * / % ^ and unary minus, with Lua numbers on either side", function()
    assert.are.same({ { 2, 3, 4 }, { 5, 6, 7 } }, (a + 1):tolist())
    assert.are.same({ { 1, 0, -1 }, { -2, -3, -4 } }, (2 - a):tolist())
    assert.are.same({ { 2, 4, 6 }, { 8, 10, 12 } }, (2 * a):tolist())
    assert.are.same({ 0.5, 0.25 }, (1 / T.tensor { 2, 4 }):tolist())
    assert.are.same({ { 1, 2, 0 }, { 1, 2, 0 } }, (a % 3):tolist())
    assert.are.same({ 1, 2 }, (T.tensor { -5, -4 } % 3):tolist()) -- Python's sign rule
    assert.are.same({ { 1, 4, 9 }, { 16, 25, 36 } }, (a ^ 2):tolist())
    assert.are.same({ 2, 4, 8 }, (2 ^ T.tensor { 1, 2, 3 }):tolist())
    assert.are.same({ { -1, -2, -3 }, { -4, -5, -6 } }, (-a):tolist())
    assert.are.same({ { 2, 4, 6 }, { 5, 7, 9 } }, (a + T.tensor { 1, 2, 3 }):tolist())
  end)
  it("== stays identity (value equality is eq/equal)", function()
    local b = T.tensor { 1 }
    assert.is_true(b == b)
    assert.is_false(T.tensor { 1 } == T.tensor { 1 })
    assert.are.same({ true }, T.tensor({ 1 }):eq(T.tensor { 1 }):tolist())
  end)
  it("< and <= on tensors point to lt/le instead of comparing", function()
    local b = T.tensor { 1 }
    assert.has_error(function() return b < b end,
      "<: Lua's comparison operators cannot compare tensors elementwise; use a:lt(b) / a:gt(b), or T.equal(a, b) for equality of values")
    assert.has_error(function() return b <= b end,
      "<=: Lua's comparison operators cannot compare tensors elementwise; use a:le(b) / a:ge(b)")
  end)
  it("reject operands that are neither tensors nor numbers", function()
    assert.has_error(function() return a + "x" end,
      "add: expected a tensor or a number for argument #2, got string")
    assert.has_error(function() return a * {} end,
      "mul: expected a tensor or a number for argument #2, got table")
  end)
end)

describe("methods, functions and in-place variants", function()
  it("t:op(), T.op() and t:op_() agree; op_ returns the same tensor", function()
    local x = T.tensor { 1.5, -2.5, 0.25 }
    assert.are.same(x:exp():tolist(), T.exp(x):tolist())
    local y = x:clone()
    local r = y:mul_(2)
    assert.are.equal(y, r)
    assert.are.same({ 3, -5, 0.5 }, y:tolist())
    y:neg_():abs_():sqrt_()
    local got = y:tolist()
    local want = { math.sqrt(3), math.sqrt(5), math.sqrt(0.5) }
    for i = 1, 3 do assert.is_true(math.abs(got[i] - want[i]) < 1e-6) end
    assert.are.same({ 3, -5, 0.5 }, x:mul(2):tolist()) -- x itself untouched
  end)
  it("add/sub take alpha, div takes rounding_mode, floor_divide floors", function()
    local a, b = T.tensor { 7, -7 }, T.tensor { 2, 2 }
    assert.are.same({ 11, -3 }, a:add(b, { alpha = 2 }):tolist())
    assert.are.same({ 1, -13 }, T.sub(a, b, { alpha = 3 }):tolist())
    assert.are.same({ 3, -3 }, a:div(b, { rounding_mode = "trunc" }):tolist())
    assert.are.same({ 3, -4 }, a:div(b, { rounding_mode = "floor" }):tolist())
    assert.are.same({ 3, -4 }, a:floor_divide(b):tolist())
    assert.are.same({ 3.5, -3.5 }, a:div(b):tolist())
    assert.has_error(function() a:div(b, { rounding_mode = "round" }) end,
      "div: rounding_mode must be nil, 'trunc' or 'floor', but got round")
    assert.has_error(function() a:add(b, { alpha = 0.5 }) end,
      "add: for integral input tensors, argument alpha must not be a floating point number")
  end)
  it("round is half to even and takes decimals", function()
    assert.are.same({ 0, 2, 2, -0, -2 }, T.tensor { 0.5, 1.5, 2.5, -0.5, -2.5 }:round():tolist())
    local r = T.tensor({ 1.2345, 1250 }, { dtype = T.float64 })
    assert.are.same({ 1.23, 1250 }, r:round({ decimals = 2 }):tolist())
    assert.are.same({ 0, 1200 }, r:round({ decimals = -2 }):tolist())
  end)
  it("clamp takes numbers or tensors, one side may be nil; clamp_min/clamp_max", function()
    local x = T.tensor { -2, 0, 5 }
    assert.are.same({ -1, 0, 3 }, x:clamp(-1, 3):tolist())
    assert.are.same({ 0, 0, 5 }, x:clamp(0):tolist())
    assert.are.same({ -2, 0, 1 }, x:clamp(nil, 1):tolist())
    assert.are.same({ -2, 0, 1 }, x:clamp({ max = 1 }):tolist())
    assert.are.same({ 1, 1, 5 }, x:clamp_min(1):tolist())
    assert.are.same({ -2, 0, 1 }, x:clamp_max(1):tolist())
    assert.are.same({ 0, 0, 2 }, x:clamp(T.tensor { 0, -1, 2 }, T.tensor { 1, 1, 2 }):tolist())
    assert.are.equal(T.float32, x:clamp(0.5).dtype) -- promoted, as PyTorch 1.13
    assert.has_error(function() x:clamp() end,
      "clamp: at least one of 'min' or 'max' must not be nil")
  end)
  it("gelu approximate, softplus beta/threshold, nan_to_num, lerp", function()
    local x = T.tensor({ -1, 0, 1, 30 }, { dtype = T.float64 })
    local g = x:gelu():tolist()
    assert.is_true(math.abs(g[3] - 0.8413447460685429) < 1e-12)
    local gt = x:gelu({ approximate = "tanh" }):tolist()
    assert.is_true(math.abs(gt[3] - 0.8411919906082768) < 1e-12)
    assert.has_error(function() x:gelu({ approximate = "fast" }) end,
      "gelu: approximate must be 'none' or 'tanh', got 'fast'")
    local s = x:softplus({ beta = 2, threshold = 10 }):tolist()
    assert.are.equal(30, s[4])
    assert.is_true(math.abs(s[1] - math.log(1 + math.exp(-2)) / 2) < 1e-12)
    local n = T.tensor { 0 / 0, 1 / 0, -1 / 0, 1 }:nan_to_num(0, 100, -100)
    assert.are.same({ 0, 100, -100, 1 }, n:tolist())
    local d = T.tensor({ 0 / 0, 1 / 0 }, { dtype = T.float16 }):nan_to_num()
    assert.are.same({ 0, 65504 }, d:tolist())
    local F = { dtype = T.float32 }
    assert.are.same({ 2.5, 5 }, T.tensor({ 0, 0 }, F):lerp(T.tensor({ 10, 10 }, F), T.tensor { 0.25, 0.5 }):tolist())
    assert.has_error(function() T.tensor({ 0 }, F):lerp(T.tensor({ 1 }, { dtype = T.float64 }), 0.5) end,
      "lerp: expected dtype float32 for `end` but got dtype float64")
  end)
  it("comparisons, logical and bitwise ops", function()
    local a, b = T.tensor { 1, 2, 3 }, T.tensor { 3, 2, 1 }
    assert.are.same({ true, false, false }, a:lt(b):tolist())
    assert.are.same({ true, true, false }, T.le(a, b):tolist())
    assert.are.same({ false, true, false }, a:eq(b):tolist())
    assert.are.same({ true, false, true }, a:ne(2):tolist())
    assert.are.same({ false, false, true }, a:gt(b):tolist())
    assert.are.same({ false, true, true }, a:ge(b):tolist())
    assert.are.same({ true, false }, T.logical_and(T.tensor { 1, 2 }, T.tensor { 0.5, 0 }):tolist())
    assert.are.same({ false, true }, T.tensor { 1, 0 }:logical_not():tolist())
    assert.are.same({ 1, 2, 1 }, a:bitwise_and(b):tolist())
    assert.are.same({ -2, -3, -4 }, a:bitwise_not():tolist())
    assert.are.same({ 4, 8, 12 }, a:bitwise_left_shift(2):tolist())
    assert.are.same({ -4 }, T.tensor({ -8 }):bitwise_right_shift(1):tolist())
    assert.has_error(function() T.tensor { 1.5 }:bitwise_and(1) end,
      "bitwise_and: not implemented for float32 tensors")
    assert.has_error(function() T.tensor { 1.5 }:bitwise_left_shift(T.tensor { 1.0 }) end,
      "bitwise_left_shift: not implemented for float32 tensors")
  end)
  it("float16 and bfloat16 compute in float32 and round once", function()
    local h = T.tensor({ 1000 }, { dtype = T.float16 })
    assert.are.same({ 1 / 0 }, (h * 100):tolist()) -- past 65504
    -- 2049 is not a float16; (2048 + 1.5) in float rounds once to 2050
    assert.are.same({ 2050 }, (T.tensor({ 2048 }, { dtype = T.float16 }) + 1.5):tolist())
    local b = T.tensor({ 3 }, { dtype = T.bfloat16 }):sqrt()
    assert.are.equal(T.bfloat16, b.dtype)
    assert.are.same({ 1.734375 }, b:tolist()) -- sqrt(3) = 1.7320508 rounded to 8 bits
  end)
end)

describe("out= and in-place", function()
  it("writes into out and returns it; an empty out is resized", function()
    local c = T.zeros(2)
    local r = T.add(T.tensor { 1, 2 }, 1, { out = c })
    assert.are.equal(c, r)
    assert.are.same({ 2, 3 }, c:tolist())
    local e = T.empty(0)
    T.mul(T.tensor { { 1, 2 } }, T.tensor { { 3 }, { 4 } }, { out = e })
    assert.are.same({ 2, 2 }, { e:size(1), e:size(2) })
    assert.are.same({ { 3, 6 }, { 4, 8 } }, e:tolist())
  end)
  it("an out of another shape with elements is an error (only empty outs resize)", function()
    assert.has_error(function() T.add(T.ones(2, 3), 1, { out = T.zeros(3) }) end,
      "add: output with shape [3] doesn't match the broadcast shape [2, 3] (only an empty out tensor is resized)")
    assert.has_error(function() T.zeros(3):add_(T.ones(2, 3)) end,
      "add_: output with shape [3] doesn't match the broadcast shape [2, 3]")
  end)
  it("casts into out when the result type allows it", function()
    local o = T.zeros(2, { dtype = T.float64 })
    T.add(T.tensor { 1, 2 }, T.tensor { 1, 1 }, { out = o })
    assert.are.same({ 2, 3 }, o:tolist())
    local i = T.zeros(2, { dtype = T.int64 })
    T.eq(T.tensor { 1, 2 }, 1, { out = i }) -- bool -> int64 is fine
    assert.are.same({ 1, 0 }, i:tolist())
    assert.has_error(function() T.div(T.tensor { 1, 2 }, 2, { out = i }) end,
      "div: result type Float can't be cast to the desired output type Long")
  end)
  it("integer division by zero is an error and writes nothing", function()
    local a = T.tensor { 6, 7 }
    assert.has_error(function() a:floor_divide_(T.tensor { 2, 0 }) end,
      "floor_divide_: integer division by zero (ZeroDivisionError)")
    assert.are.same({ 6, 7 }, a:tolist())
    assert.has_error(function() return a % 0 end, "remainder: integer division by zero (ZeroDivisionError)")
    assert.has_error(function() a:fmod(0) end, "fmod: integer division by zero (ZeroDivisionError)")
    local q = (a / 0):tolist() -- true division: floats
    assert.are.same({ 1 / 0, 1 / 0 }, q)
  end)
  it("integers to negative integer powers are an error", function()
    assert.has_error(function() return T.tensor { 2 } ^ -1 end,
      "pow: integers to negative integer powers are not allowed")
    assert.are.same({ 0, 1, -1 }, T.tensor({ 2, 1, -1 }):pow(T.tensor { -1, -1, -1 }):tolist())
  end)
  it("shapes that do not broadcast name both shapes and the dim", function()
    assert.has_error(function() return T.ones(2, 3) + T.ones(4) end,
      "add: shapes [2, 3] and [4] cannot be broadcast: the size of a (3) must match the size of b (4) at non-singleton dimension 2")
  end)
  it("bool rules of sub and neg", function()
    assert.has_error(function() return T.tensor { true } - T.tensor { true } end,
      "sub: subtraction, the `-` operator, with two bool tensors is not supported; use logical_xor() instead")
    assert.has_error(function() return -T.tensor { true } end,
      "neg: negation, the `-` operator, on a bool tensor is not supported; to invert a mask use logical_not() instead")
    assert.are.same({ true, true }, (T.tensor { true, false } + T.tensor { true, true }):tolist())
  end)
end)

describe("requires_grad flows through ops (the seeds' y = x * 2)", function()
  it("a floating result of an input that requires grad requires grad", function()
    local x = T.tensor({ 1.5 }, { requires_grad = true })
    local y = x * 2
    assert.is_true(y.requires_grad)
    assert.is_false(x:gt(0).requires_grad) -- bool results never do
    assert.is_false((T.tensor { 1.5 } * 2).requires_grad)
  end)
  it("in place into a leaf that requires grad, or out= with such inputs, is an error", function()
    local x = T.tensor({ 1.5 }, { requires_grad = true })
    assert.has_error(function() x:add_(1) end,
      "add_: a leaf tensor that requires grad is being used in an in-place operation")
    assert.has_error(function() T.mul(x, 2, { out = T.zeros(1) }) end,
      "mul: functions with out= arguments don't support automatic differentiation, but one of the arguments requires grad")
    local b = T.zeros(1)
    b:add_(x) -- allowed: b now depends on x
    assert.is_true(b.requires_grad)
  end)
end)

describe("threads", function()
  it("get/set_num_threads", function()
    local n = T.get_num_threads()
    assert.is_true(n >= 1)
    T.set_num_threads(1)
    assert.are.equal(1, T.get_num_threads())
    T.set_num_threads(n)
    assert.has_error(function() T.set_num_threads(0) end,
      "set_num_threads: expected a positive number of threads, got 0")
  end)
  it("results do not depend on the thread count", function()
    local data = {}
    for i = 1, 200000 do data[i] = (i * 7919 % 1000) / 37 - 13 end
    local x = T.tensor(data)
    local n = T.get_num_threads()
    T.set_num_threads(1)
    local r1 = (x:sin() * x + 1):tolist()
    T.set_num_threads(4)
    local r4 = (x:sin() * x + 1):tolist()
    T.set_num_threads(n)
    local same = #r1 == #r4
    for i = 1, #r1 do
      if r1[i] ~= r4[i] then same = false break end
    end
    assert.is_true(same)
  end)
end)
