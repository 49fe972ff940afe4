-- Helpers for the reduction/linalg conformance specs: build tensors from the
-- fixture records of tests/fixtures/gen_reduce.py and compare results.
local T = require "ember"

local U = {}

-- nested Lua table from flat row-major values and a shape
local function nest(v, shape, d, pos)
  if d > #shape then return v[pos[1]] end
  local out = {}
  for i = 1, shape[d] do
    if d == #shape then
      out[i] = v[pos[1]]
      pos[1] = pos[1] + 1
    else
      out[i] = nest(v, shape, d + 1, pos)
    end
  end
  return out
end

-- A tensor from a fixture operand {v=, shape=, dtype=[, view=]}
function U.tensor(rec)
  local dt = T[rec.dtype]
  local t
  if #rec.shape == 0 then
    t = T.tensor(rec.v[1], { dtype = dt })
  elseif #rec.v == 0 then
    t = T.zeros(rec.shape, { dtype = dt })  -- nested tables cannot spell [0, 3]
  else
    t = T.tensor(nest(rec.v, rec.shape, 1, { 1 }), { dtype = dt })
  end
  if rec.view then
    local w = rec.view
    if t.as_strided then
      t = t:as_strided(w.sizes, w.strides, w.offset)
    else
      t = T._C._strided(t, w.sizes, w.strides, w.offset)
    end
  end
  return t
end

local function flatten(x, out)
  if type(x) ~= "table" then
    out[#out + 1] = x
    return out
  end
  for i = 1, #x do flatten(x[i], out) end
  return out
end

local TOL = {
  float64 = { 1e-12, 1e-12 },
  float32 = { 2e-5, 2e-5 },
  float16 = { 4e-3, 4e-3 },
  bfloat16 = { 2e-2, 2e-2 },
}

-- nil when t matches the expected record, else a message
function U.mismatch(t, rec)
  if not T.is_tensor(t) then return "expected a tensor, got " .. type(t) end
  if t.dtype ~= T[rec.dtype] then
    return ("dtype %s, expected %s"):format(tostring(t.dtype), rec.dtype)
  end
  local shape = t.shape
  if #shape ~= #rec.shape then
    return ("shape %s, expected [%s]"):format(tostring(shape), table.concat(rec.shape, ", "))
  end
  for i = 1, #shape do
    if shape[i] ~= rec.shape[i] then
      return ("shape %s, expected [%s]"):format(tostring(shape), table.concat(rec.shape, ", "))
    end
  end
  local got = flatten(t:tolist(), {})
  if #got ~= #rec.v then return ("%d values, expected %d"):format(#got, #rec.v) end
  local tol = TOL[rec.dtype]
  for i = 1, #got do
    local g, e = got[i], rec.v[i]
    local ok
    if type(e) == "boolean" or not tol then
      ok = g == e
    elseif e ~= e then
      ok = g ~= g
    elseif e == math.huge or e == -math.huge then
      ok = g == e
    else
      ok = math.abs(g - e) <= tol[2] + tol[1] * math.abs(e)
    end
    if not ok then
      return ("value %d is %s, expected %s"):format(i, tostring(g), tostring(e))
    end
  end
  return nil
end

-- The cases of the given kinds grouped by op and input dtype: a list of
-- {name=, cases=} in fixture order.
function U.groups(cases, kinds)
  local groups, order = {}, {}
  for _, c in ipairs(cases) do
    if kinds[c.kind] then
      local src = c.x or c.a
      local key = c.op .. " " .. src.dtype
      if not groups[key] then
        groups[key] = { name = key, cases = {} }
        order[#order + 1] = groups[key]
      end
      table.insert(groups[key].cases, c)
    end
  end
  return order
end

-- Runs every case of a group; returns the list of failures (empty if none).
function U.failures(group, run, describe_case)
  local failures = {}
  for _, c in ipairs(group.cases) do
    local ok, msg = pcall(run, c)
    if not ok then
      failures[#failures + 1] = describe_case(c) .. ": error " .. tostring(msg)
    elseif msg then
      failures[#failures + 1] = describe_case(c) .. ": " .. msg
    end
  end
  return failures
end

return U
