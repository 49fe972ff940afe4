-- Views and layout: every view op, the stride rule of view, reshape's
-- view-or-copy choice, flip/contiguous/clone, storage introspection, and
-- the conformance fixtures generated from PyTorch (tests/fixtures/).
local T = require "ember"

-- x = 0..n-1 as int64 (T.arange lives in another area of the project)
local function arange(n)
  local t = {}
  for i = 1, n do t[i] = i - 1 end
  return T.tensor(t, {dtype = T.int64})
end

local function base(...)
  local sizes, n = {...}, 1
  for _, s in ipairs(sizes) do n = n * s end
  return arange(n):view(sizes)
end

local function flat(t)
  local out = {}
  local function walk(v)
    if type(v) == "table" then for _, x in ipairs(v) do walk(x) end
    else out[#out + 1] = v end
  end
  walk(t:tolist())
  return out
end

describe("conformance with PyTorch (tests/fixtures/views_cases.lua)", function()
  local cases = dofile("tests/fixtures/views_cases.lua")
  for i, c in ipairs(cases) do
    local name = string.format("#%d %s  (x = %s of [%s])", i, c.lua, c.pre,
                               table.concat(c.shape, ", "))
    it(name, function()
      local b = base(unpack(c.shape))
      local x = assert(loadstring("local T, x = ...; return " .. c.pre))(T, b)
      local chunk = c.kind == "w" and ("local T, x = ...; " .. c.lua)
                    or ("local T, x = ...; return " .. c.lua)
      local f = assert(loadstring(chunk))
      if c.error then
        assert.has_error(function() f(T, x) end)
        return
      end
      local r = f(T, x)
      if c.kind == "w" then
        assert.same(c.values, flat(b))
        return
      end
      assert.same(c.size, r.shape:totable())
      assert.same(c.values, flat(r))
      assert.equal(c.shares, T.shares_storage(r, b))
      if c.shares then
        -- a view: its layout is PyTorch's exactly
        assert.same(c.stride, r:stride())
        assert.equal(c.offset, r:storage_offset())
      else
        assert.equal(0, r:storage_offset())
        assert.same(c.stride, r:stride())
      end
    end)
  end
end)
