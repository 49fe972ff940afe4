-- Elementwise ops through the Lua API: the conformance table generated from
-- PyTorch (tests/fixtures/math_cases.lua: ops x dtypes x broadcast shapes x
-- edge values), then the behaviours a user meets directly: metamethods,
-- in-place ops and out=, overlap, errors, threads.
local T = require "ember"

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
  -- T.tensor reads -0.0 as the integer 0 (l_checkscalar); put the signs of
  -- negative zeros back by multiplying with -1 there (exact)
  local signs, any = {}, false
  for i, x in ipairs(v.data) do
    local negz = type(x) == "number" and x == 0 and 1 / x < 0
    signs[i] = negz and -1 or 1
    any = any or negz
  end
  if any then t = t * T.tensor(nest(signs, v.shape), { dtype = T[v.dtype] }) end
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
  return c.op .. "(" .. table.concat(parts, ", ") .. (#o > 0 and ", {" .. table.concat(o, ",") .. "}" or "") .. ")"
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
    if not byop[c.op] then byop[c.op] = {}; order[#order + 1] = c.op end
    table.insert(byop[c.op], c)
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
