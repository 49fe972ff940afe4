-- percall_spec.lua: the per-call fast paths of issue 7 (docs/performance.md,
-- "Per-call cost") give the results and errors of the general C paths.
-- Under LuaJIT, lua/ember/tensor.lua reads item/size/dim/numel/shape/ndim/
-- dtype through the FFI and keeps the C functions in C._c_methods and the C
-- __index in C._tensor_index; these specs compare the two on tensors of
-- every layout the fast paths must handle.
local T = require "ember"
local C = T._C

local cm = C._c_methods -- nil without LuaJIT's FFI (PUC Lua 5.4)
local cindex = C._tensor_index

-- the C path of method `name` (the method itself when there is no fast path)
local function cpath(name) return (cm and cm[name]) or T.Tensor_methods[name] end

local function outcome(f, ...)
  local r = { pcall(f, ...) }
  if not r[1] then return { false, (tostring(r[2]):gsub("^[^:]*:%d+: ", "")) } end
  return r
end

local function samples()
  local list = {
    T.rand(4, 4), T.rand(1), T.tensor(5), T.tensor(2.5, { dtype = T.float64 }),
    T.tensor({ 3 }, { dtype = T.int32 }), T.tensor({ -7 }, { dtype = T.int64 }),
    T.tensor({ 2 ^ 53 + 2 }, { dtype = T.int64 }), T.tensor({ -(2 ^ 53) }, { dtype = T.int64 }),
    T.tensor({ true }), T.tensor({ 1.5 }, { dtype = T.float16 }),
    T.tensor({ 1.5 }, { dtype = T.bfloat16 }), T.tensor({ 200 }, { dtype = T.uint8 }),
    T.empty(0), T.empty(0, 3), T.empty(2, 0, 1e12), T.rand(2, 3, 4, 5, 6),
    T.rand(1, 1, 1), T.rand(3, 4):t(), T.rand(1):expand(3), T.rand(3):expand(1, 3),
  }
  local x = T.arange(1, 13):view(3, 4)
  list[#list + 1] = x[{ { 2, 2 }, { 3, 3 } }] -- one element at an offset
  list[#list + 1] = x[3][4]                    -- 0-d at an offset
  list[#list + 1] = x[{ {}, { 2, 3 } }]
  return list
end

describe("per-call fast paths", function()
  it("are installed under LuaJIT: __index is a Lua function", function()
    local mt = getmetatable(T.rand(1))
    assert.are.equal("function", type(mt.__index))
    if jit then
      assert.are.equal("Lua", debug.getinfo(mt.__index, "S").what)
      assert.is_table(cm)
      assert.are_not.equal(cm.item, T.Tensor_methods.item)
    end
  end)

  it("item, dim, numel, size and size(d) equal the C functions, errors included", function()
    for i, t in ipairs(samples()) do
      for _, name in ipairs { "item", "dim", "ndimension", "numel", "nelement", "size" } do
        assert.are.same(outcome(cpath(name), t), outcome(t[name], t),
          ("%s of sample %d"):format(name, i))
      end
      for d = -7, 7 do
        assert.are.same(outcome(cpath("size"), t, d), outcome(t.size, t, d),
          ("size(%d) of sample %d"):format(d, i))
      end
      for _, d in ipairs { 1.5, 0 / 0, "1", {}, 2 ^ 63, -(2 ^ 63) } do
        assert.are.same(outcome(cpath("size"), t, d), outcome(t.size, t, d))
      end
    end
  end)

  it("shape, ndim and dtype equal the C getters", function()
    for i, t in ipairs(samples()) do
      for _, k in ipairs { "shape", "ndim", "dtype", "device" } do
        assert.are.same(outcome(cindex, t, k), outcome(function() return t[k] end),
          ("%s of sample %d"):format(k, i))
      end
      assert.is_true(T.is_size(t.shape))
      assert.are.equal(t.dtype, cindex(t, "dtype")) -- the same dtype value
    end
  end)

  it("give exact values", function()
    assert.are.equal(2 ^ 53 + 2, T.tensor({ 2 ^ 53 + 2 }, { dtype = T.int64 }):view(1):item())
    local big = T.tensor({ 2 ^ 53 }, { dtype = T.int64 }) + 1 -- not exact as a double
    -- a Lua 5.4 integer, a boxed int64_t under LuaJIT (the C path)
    assert.are.equal("9007199254740993", (tostring(big:item()):gsub("LL$", "")))
    assert.are.equal("9007199254740993", (tostring(big:view(1):item()):gsub("LL$", "")))
    assert.are.equal(0.1, T.tensor({ 0.1 }, { dtype = T.float64 }):item())
    assert.are.equal(T.tensor({ 0.1 }):item(), T.tensor({ 0.1 }):double():item())
    assert.are.equal(12, T.arange(1, 13):view(3, 4)[3][4]:item())
    assert.is_true(T.tensor({ true }):item())
    assert.are.equal(0, T.empty(2, 0, 1e12):numel())
    assert.are.same({ 2, 0, 1e12 }, T.empty(2, 0, 1e12).shape:totable())
  end)

  it("make a new Size each time", function()
    local t = T.rand(2, 3)
    local s = t.shape
    s[1] = 7
    assert.are.same({ 2, 3 }, t.shape:totable())
    assert.are.same({ 2, 3 }, t:size():totable())
    assert.are_not.equal(rawequal(t.shape, t.shape), true)
  end)

  it("hand anything that is not a live tensor to the C functions", function()
    local M = T.Tensor_methods
    for _, name in ipairs { "item", "dim", "numel", "size" } do
      assert.are.same(outcome(cpath(name), {}), outcome(M[name], {}))
      assert.are.same(outcome(cpath(name), 1), outcome(M[name], 1))
      assert.are.same(outcome(cpath(name), io.stdout), outcome(M[name], io.stdout))
      assert.are.same(outcome(cpath(name), nil), outcome(M[name], nil))
    end
    -- a tensor read by a finalizer after its own __gc ran (its box is NULL
    -- then; LuaJIT finalizes the later-made userdata first): the fast paths
    -- answer as the C functions
    if newproxy then
      local seen
      local function make()
        local p = newproxy(true)
        local t = T.rand(1)
        getmetatable(p).__gc = function()
          seen = {
            { outcome(cpath("item"), t), outcome(M.item, t) },
            { outcome(cpath("size"), t), outcome(M.size, t) },
            { outcome(cindex, t, "shape"), outcome(function() return t.shape end) },
          }
        end
      end
      make()
      collectgarbage()
      collectgarbage()
      assert.is_table(seen)
      for _, pair in ipairs(seen) do assert.are.same(pair[1], pair[2]) end
      if jit then assert.matches("expected a tensor", seen[1][1][2]) end
    end
  end)

  it("keep __index's order: methods, then properties, then indexing", function()
    local t = T.arange(1, 7):view(2, 3)
    assert.are.equal(T.Tensor_methods.view, t.view)
    assert.is_nil(t.no_such_field)
    assert.are.same({ 4, 5, 6 }, t[2]:tolist())
    assert.are.same({ { 2, 3 }, { 5, 6 } }, t[{ {}, { 2, 3 } }]:tolist())
    local ok, err = pcall(function() return t[3] end)
    assert.is_false(ok)
    assert.matches("percall_spec.lua:%d+: index 3 is out of bounds for dimension 1 with size 2", err)
    ok, err = pcall(function() t.no_such_field = 1 end)
    assert.matches("cannot set field 'no_such_field' of a tensor", err)
    -- a method added by the user is found, as before
    T.Tensor_methods.percall_probe = function(x) return x:numel() end
    assert.are.equal(6, t:percall_probe())
    T.Tensor_methods.percall_probe = nil
  end)
end)

describe("elementwise on small same-shape operands (the flat path)", function()
  -- the same values through the general iterator: non-contiguous copies
  local function strided(x)
    if x:dim() == 0 then return x:clone() end
    local sizes = x:size():totable()
    local last = #sizes
    sizes[last] = sizes[last] * 2
    local big = T.zeros(sizes, { dtype = x.dtype })
    local v = big[{ "...", { 1, -1, 2 } }]
    v:copy_(x)
    return v
  end

  it("gives the iterator's values, dtypes and layouts", function()
    local cases = {
      { T.rand(1), T.rand(1) }, { T.rand(3, 4), T.rand(3, 4) }, { T.tensor(2.5), T.tensor(4) },
      { T.arange(1, 7):view(2, 3), T.arange(6, 0, -1):view(2, 3) },
      { T.tensor { true, false }, T.tensor { true, true } },
      { T.rand(2, 1, 3), T.rand(2, 1, 3) }, { T.empty(0, 3), T.empty(0, 3) },
      { T.rand(128, 129), T.rand(128, 129) }, -- beyond the flat path's limit
    }
    for i, c in ipairs(cases) do
      local a, b = c[1], c[2]
      for _, f in ipairs {
        function(x, y) return x + y end, function(x, y) return x * y end,
        function(x, y) return T.lt(x, y) end, function(x, y) return T.maximum(x, y) end,
        function(x) return x:neg() end, function(x) return T.exp(x:double()) end,
      } do
        local ok1, r1 = pcall(f, a, b)
        local ok2, r2 = pcall(f, strided(a), strided(b))
        assert.are.equal(ok1, ok2, "case " .. i)
        if ok1 then
          assert.are.equal(r2.dtype, r1.dtype)
          assert.are.same(r2:size():totable(), r1:size():totable())
          assert.is_true(T.equal(r1, r2), "case " .. i)
          assert.is_true(r1:is_contiguous())
        else
          assert.are.equal((tostring(r2):gsub("^[^:]*:%d+: ", "")), (tostring(r1):gsub("^[^:]*:%d+: ", "")))
        end
      end
    end
  end)

  it("keeps the result's strides on size-1 dims and the in-place and error rules", function()
    local a, b = T.rand(2, 1, 3), T.rand(2, 1, 3)
    assert.are.same((a + b):stride(), (strided(a) + strided(b)):contiguous():stride())
    local x = T.arange(1, 5):float()
    x:add_(x)
    assert.are.same({ 2, 4, 6, 8 }, x:tolist())
    x:mul_(T.ones(4))
    assert.are.same({ 2, 4, 6, 8 }, x:tolist())
    assert.has_error(function() return T.tensor { 1, 2 } % T.tensor { 1, 0 } end,
      "remainder: integer division by zero (ZeroDivisionError)")
    assert.has_error(function() return T.tensor { true } - T.tensor { false } end)
    local w = T.rand(3, { requires_grad = true })
    local y = (w * w):sum()
    y:backward()
    assert.is_true(T.allclose(w.grad, w * 2))
  end)
end)

describe("T.tensor from a table", function()
  it("converts each value with the cast rules of its dtype", function()
    assert.are.same({ 1, 2, 3 }, T.tensor { 1, 2, 3 }:tolist())
    assert.are.equal(T.int64, T.tensor { 1, 2, 3 }.dtype)
    assert.are.equal(T.float32, T.tensor { 1, 2.5 }.dtype)
    assert.are.same({ 1, 2 }, T.tensor({ 1.9, 2.2 }, { dtype = T.int32 }):tolist())
    -- a value outside an integer dtype is refused, as PyTorch refuses it
    assert.has_error(function() T.tensor({ -1, 256 }, { dtype = T.uint8 }) end,
      "tensor: value cannot be converted to type uint8 without overflow")
    assert.are.same({ 255, 0 }, T.tensor({ 255, 0 }, { dtype = T.uint8 }):tolist())
    assert.are.same({ true, false, true }, T.tensor({ 2, 0, 0 / 0 }, { dtype = T.bool }):tolist())
    assert.are.same({ { 1, 2 }, { 3, 4 } }, T.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = T.float64 }):tolist())
    assert.are.equal(65504, T.tensor({ 65504 }, { dtype = T.float16 }):item())
    assert.is_true(1 / T.tensor({ -0.0 }, { dtype = T.float32 }):item() < 0)
    assert.are.same({ 0, 3 }, T.tensor({ {}, {}, {} }):t():size():totable())
    assert.has_error(function() T.tensor { 1, "x" } end,
      "tensor: expected numbers, booleans or 0-d tensors, got string at [2]")
  end)
end)

-- t[key] and T.tensor{...} parsed in Lua (tensor.lua, under LuaJIT's FFI)
-- against the C paths that walk the key or the data (C._index_get,
-- C.tensor): the same results (values to the bit, dtype, layout, the same
-- storage for views),
-- the same errors; and the cases meant for the fast paths do take them.
describe("per-call fast paths for t[key] and T.tensor", function()
  local fast_index = C._index_fast_set and C._index_fast_set[2] -- nil without the FFI
  local fast_tensor = T.tensor ~= C.tensor and C._tensor_flat or nil -- C only without them

  it("are installed when LuaJIT's compiler is on", function()
    if jit and jit.status() then
      assert.is_function(fast_index)
      assert.is_function(fast_tensor)
      assert.are.equal("Lua", debug.getinfo(T.tensor, "S").what)
    else
      assert.are.equal(C.tensor, T.tensor)
    end
  end)

  -- the outcome of f: an error message without its position, or a
  -- description of the tensor (or value) it returned, exact to the bit
  local function bits(v)
    if type(v) == "number" then return ("%a"):format(v) end
    return tostring(v)
  end
  -- base: the indexed tensor; a result's storage start is compared with
  -- its own (equal for a view, different for a copy)
  local function describe_value(x, base)
    if not T.is_tensor(x) then return bits(x) end
    local vals = {}
    local flat = x:numel() > 0 and x:reshape(-1):tolist() or {}
    if x:dim() == 0 then flat = { x:item() } end
    for i, v in ipairs(flat) do vals[i] = bits(v) end
    return {
      dtype = tostring(x.dtype), shape = x:size():totable(), stride = x:stride(),
      offset = x:storage_offset(), values = vals, requires_grad = x.requires_grad,
      contiguous = x:is_contiguous(),
      view = base and x:data_ptr() - x:storage_offset() * x:element_size()
        == base:data_ptr() - base:storage_offset() * base:element_size() or nil,
    }
  end
  local function result(base, f, ...)
    local r = { pcall(f, ...) }
    if not r[1] then return { false, (tostring(r[2]):gsub("^[^:]*:%d+: ", "")) } end
    return { true, describe_value(r[2], base) }
  end

  -- did calling f call the function target? (hooks run in the interpreter)
  local function calls(target, f)
    if target == nil then return false end
    local hit = false
    if jit then jit.off() end
    debug.sethook(function()
      if debug.getinfo(2, "f").func == target then hit = true end
    end, "c")
    pcall(f)
    debug.sethook()
    if jit then jit.on() end
    return hit
  end

  local function tensors()
    return {
      T.arange(1, 17):float():view(4, 4), T.arange(1, 121):view(2, 3, 4, 5),
      T.rand(3, 4):t(), T.tensor(5.5), T.arange(1, 6), T.rand(2, 3, { requires_grad = true }),
      T.rand(2, 2, 2, 2, 2, { dtype = T.float64 }), T.empty(0, 3), T.tensor { true, false, true },
    }
  end

  -- every key is made afresh for each use (a key is never changed by indexing)
  local function keys()
    local B = 2 ^ 53
    local list = {
      1, 2, -1, 4, 5, 0, -0.0, -7, 1.5, 0 / 0, 1 / 0, -1 / 0, B - 1, B, -B, 2 ^ 62, 2 ^ 63,
      { -0.0 }, { { -0.0, 2 } }, { { 1, 3, -0.0 } },
      {}, { 1 }, { -1 }, { 1, 2 }, { 2, -1 }, { 1, 2, 3 }, { 1, 1, 1, 1 }, { 1, 1, 1, 1, 1 },
      { {} }, { {}, {} }, { {}, { 2, 3 } }, { { 2, 3 }, {} }, { { 2 } }, { { -3, -1 } },
      { { 1, 4, 2 } }, { {}, { 1, -1, 2 } }, { { 1, 4, 0 } }, { { 1, 4, -1 } }, { { 1, 4, 1.5 } },
      { { 1.5, 2 } }, { { 1, 2.5 } }, { { 1, 2, 3, 4 } }, { { 1, "2" } }, { { "1" } }, { { true } },
      { { 5, 6 } }, { { 3, 2 } }, { { 0, 2 } }, { { 1, 10 } }, { { B, B } }, { { 1, B } },
      { { 1, 2, B } }, { { 2 ^ 60, 2 ^ 60 } }, { { 1, 2, 2 ^ 60 } }, { { 1, 0 / 0 } },
      { "..." }, { "...", 1 }, { 1, "..." }, { "...", { 2, 3 } }, { "...", "..." }, { ".." },
      { "...", {}, 2 }, { 1, "...", 1 }, { T.newaxis }, { {}, T.newaxis }, { T.newaxis, 1 },
      T.newaxis, { true }, { 1, true }, { 1, {}, {}, {}, {} }, { 1, 2, {}, { 1, 2 }, 2 },
      { 2, 2, 2, 2, 2 }, { {}, {}, {}, {}, {}, {} }, { T.tensor { 1, 2 } }, { 1, T.tensor { 1 } },
      T.tensor { 1, 2 }, T.tensor { true, false, true, false }, { T.tensor { true } },
      T.Size { 1 }, setmetatable({ 1 }, {}), { setmetatable({ 2, 3 }, {}) },
      setmetatable({}, { __index = function() return 1 end }),
      { setmetatable({ 1 }, { __index = function() return 2 end }) },
      { 1, nil, 2 }, { { 1, nil, 2 } }, { io.stdout }, io.stdout, { print }, print, true,
    }
    local many = {}
    for i = 1, 70 do many[i] = {} end
    list[#list + 1] = many
    local full64 = {}
    for i = 1, 64 do full64[i] = "..." end
    list[#list + 1] = full64
    return list
  end

  it("index: the C path's results and errors for every key shape", function()
    for ti, t in ipairs(tensors()) do
      local n = #keys()
      for ki = 1, n do
        local a = result(t, C._index_get, t, keys()[ki])
        local b = result(t, function() return t[keys()[ki]] end)
        assert.are.same(a, b, ("tensor %d, key %d"):format(ti, ki))
      end
    end
  end)

  -- the same keys on meta (DESIGN's meta device: the ops' metadata alone):
  -- a key's tensors move to meta with the tensor; the result must have the
  -- CPU result's shape, strides, offset, dtype and view-ness, or the CPU's
  -- error. Two documented differences: a bool mask's result shape depends
  -- on values (meta refuses it), and index values' bounds are not checked
  -- on meta (a key with an integer tensor that fails on the CPU may pass).
  local has_tensor
  local function to_meta(k)
    if T.is_tensor(k) then return k:to("meta") end
    if type(k) ~= "table" or rawequal(k, T.newaxis) or getmetatable(k) == getmetatable(T.Size { 1 }) then
      return k
    end
    -- a key without tensors is used as it is: a copy of a table with holes
    -- ({1, nil, 2}) may have another length (# is any border, Lua 5.4)
    if not has_tensor(k, function() return true end) then return k end
    local c = {}
    for i, v in pairs(k) do c[i] = to_meta(v) end
    return setmetatable(c, getmetatable(k))
  end
  function has_tensor(k, dtype_kind)
    if T.is_tensor(k) then return dtype_kind(k.dtype) end
    if type(k) == "boolean" then return dtype_kind(T.bool) end -- a 0-d mask
    if type(k) ~= "table" then return false end
    for _, v in pairs(k) do if has_tensor(v, dtype_kind) then return true end end
    return false
  end
  local function is_bool(dt) return dt == T.bool end
  local function is_int(dt) return dt == T.int64 or dt == T.int32 end
  local function meta_of(x, base)
    if not T.is_tensor(x) then return x end
    return { dtype = tostring(x.dtype), shape = x:size():totable(), stride = x:stride(),
             offset = x:storage_offset(), device = tostring(x.device),
             view = T.shares_storage(x, base) }
  end
  it("index: every key shape on meta gives the CPU's metadata or its error", function()
    local checked = 0
    for ti, t in ipairs(tensors()) do
      local tm = t:detach():to("meta")
      for ki = 1, #keys() do
        local what = ("tensor %d, key %d"):format(ti, ki)
        local k = keys()[ki]
        local cok, c = pcall(function() return t:detach()[k] end)
        local mok, m = pcall(function() return tm[to_meta(keys()[ki])] end)
        if has_tensor(k, is_bool) then
          if cok then
            assert.is_false(mok, what)
            assert.truthy(tostring(m):find("not supported on the meta device", 1, true), what)
          end
        elseif cok then
          assert(mok, what .. ": " .. tostring(m))
          local cm = meta_of(c, t:detach())
          if type(cm) == "table" then cm.device = "meta" end
          assert.are.same(cm, meta_of(m, tm), what)
          checked = checked + 1
        elseif not has_tensor(k, is_int) then
          assert.is_false(mok, what)
          assert.are.equal((tostring(c):gsub("^[^:]*:%d+: ", "")), (tostring(m):gsub("^[^:]*:%d+: ", "")), what)
        end
      end
    end
    assert.is_true(checked > 100)
  end)

  it("index: an error names the caller's line, on either path", function()
    local t = T.rand(4, 4)
    local _, e1 = pcall(function() return t[5] end)          -- fast path, engine error
    local _, e2 = pcall(function() return t[{ { 1, 2, 0 } }] end) -- C path, parse error
    local _, e3 = pcall(function() return t[{ {}, { 2, 3 }, 1 }] end) -- fast path
    assert.matches("percall_spec.lua:%d+: index 5 is out of bounds for dimension 1 with size 4", e1)
    assert.matches("percall_spec.lua:%d+: index: the step of a range must be positive", e2)
    assert.matches("percall_spec.lua:%d+: .*too many indices", e3)
  end)

  it("index: common keys take the fast path, the others the C path", function()
    if not fast_index then return end -- PUC Lua 5.4: C only
    local t = T.rand(4, 4, 2)
    for _, k in ipairs {
      1, -1, {}, { 2 }, { {}, { 2, 3 } }, { { 1, 4, 2 }, 2 }, { "...", 1 }, { { 3 }, {}, { 1, 2, 1 } },
      { 1, 2, 1 }, { 1, { 1, 2 }, "...", {} },
    } do
      assert.is_true(calls(fast_index, function() return t[k] end))
      assert.is_false(calls(C._index_get, function() return t[k] end))
    end
    for _, k in ipairs {
      1.5, 2 ^ 53, { T.newaxis }, T.newaxis, { { 1, 4, 0 } }, { T.tensor { 1 } }, { { 1, 2, 3, 4 } },
      T.Size { 1 }, { true },
    } do
      assert.is_true(calls(C._index_get, function() return t[k] end))
    end
  end)

  it("index: a debug hook that indexes between the fast path's steps changes nothing", function()
    if not fast_index then return end
    local t, u = T.arange(1, 17):view(4, 4), T.arange(1, 10):view(3, 3)
    for _, k in ipairs { { {}, { 2, 3 } }, { 2, { 1, 4, 2 } }, 3, { "...", 1 } } do
      local want = describe_value(C._index_get(t, k), t)
      local hooked = 0
      jit.off()
      debug.sethook(function() hooked = hooked + 1; local _ = u[{ { 1, 2 }, 3 }] end, "", 1)
      local ok, got = pcall(function() return t[k] end)
      debug.sethook()
      jit.on()
      assert.is_true(ok)
      assert.is_true(hooked > 5)
      assert.are.same(want, describe_value(got, t))
    end
  end)

  it("index: a view of the same storage, with autograd as the C path", function()
    local w = T.rand(3, 4, { requires_grad = true })
    local v = w[{ {}, { 2, 3 } }]
    assert.are.equal(w:data_ptr() + 4, v:data_ptr())
    assert.is_true(v.requires_grad)
    v:sum():backward()
    assert.are.same({ 0, 1, 1, 0 }, w.grad[1]:tolist())
    local x = T.zeros(3, 3)
    x[2][{ { 2, 3 } }]:fill_(7)
    assert.are.same({ { 0, 0, 0 }, { 0, 7, 7 }, { 0, 0, 0 } }, x:tolist())
  end)

  local function datas()
    local B = 2 ^ 53
    local list = {
      { 1 }, { 1, 2 }, { 1, 2, 3 }, { 1, 2, 3, 4 }, { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, { 1.5 },
      { 1, 2.5 }, { 0.1, 0.2, 0.3 }, { 1, 2, 3, 4.25 }, { true }, { true, false }, { true, 2 },
      { false, 2.5 }, { 2, true, false }, { 1, 2, 3, true }, { -0.0 }, { -0.0, 0.5 }, { 0 / 0 },
      { 1 / 0, -1 / 0 }, { 1, 0 / 0 }, { B + 2 }, { 2 ^ 62, -(2 ^ 62) }, { 2 ^ 63 }, { -(2 ^ 63) },
      { 2 ^ 63, 1 }, { 1e300 }, { 1e-300, 1 }, { 3.4028235677973366e38 }, { 3.4028235677973366e39 },
      { 16777217 }, { 16777217, 0.5 }, { 1 + 2 ^ -30, 1 }, { 2 ^ -149, 2 ^ -150 },
      {}, { {} }, { { 1, 2 } }, { 1, { 2 } }, { 1, "2" }, { "1" }, { 1, nil, 3 }, { nil },
      { T.tensor(1) }, { 1, print }, T.Size { 2, 3 }, setmetatable({ 1, 2 }, {}),
      setmetatable({}, { __index = function() return 1 end, __len = function() return 2 end }),
      5, 2.5, true, "x", T.tensor { 1, 2 },
    }
    local long = {}
    for i = 1, 100 do long[i] = (i % 7 == 0) and i + 0.5 or i end
    list[#list + 1] = long
    local longb = {}
    for i = 1, 40 do longb[i] = i % 3 == 0 end
    list[#list + 1] = longb
    return list
  end

  it("T.tensor: the C path's tensors and errors for every list", function()
    local default = T.get_default_dtype()
    for _, dt in ipairs { T.float32, T.float64, T.float16, T.bfloat16 } do
      T.set_default_dtype(dt)
      for i, d in ipairs(datas()) do
        assert.are.same(result(nil, C.tensor, d), result(nil, T.tensor, d),
          ("data %d, default %s"):format(i, tostring(dt)))
        assert.are.same(result(nil, C.tensor, d, { dtype = T.int32 }),
          result(nil, T.tensor, d, { dtype = T.int32 }), ("data %d with options"):format(i))
      end
    end
    T.set_default_dtype(default)
    assert.are.same(result(nil, C.tensor), result(nil, T.tensor))
    assert.are.same(result(nil, C.tensor, nil, nil), result(nil, T.tensor, nil, nil))
    local _, e = pcall(function() local r = T.tensor { 1, "x" }; return r end)
    assert.matches("percall_spec.lua:%d+: tensor: expected numbers, booleans or 0%-d tensors, got string at %[2%]", e)
  end)

  it("T.tensor: plain lists take the fast path and bump the version once", function()
    if not fast_tensor then return end
    for _, d in ipairs { { 1, 2, 3 }, { 1.5 }, { true, false }, { 1, 2, 3, 4, 5.5 }, { 2, true } } do
      assert.is_true(calls(fast_tensor, function() return T.tensor(d) end))
      assert.is_false(calls(C.tensor, function() return T.tensor(d) end))
    end
    for _, d in ipairs { {}, { { 1 } }, { 1, "x" }, 5 } do
      assert.is_true(calls(C.tensor, function() return T.tensor(d) end))
    end
    assert.is_true(calls(C.tensor, function() return T.tensor({ 1 }, { dtype = T.float64 }) end))
  end)
end)
