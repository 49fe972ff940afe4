-- resize_, resize_as_, set_ and is_set_to: PyTorch's in-place geometry
-- changes that may grow a storage (ops/view.c). The expectations are what
-- torch 1.13 gives for the same calls (checked with python3-torch when
-- these were written; the calls are in the comments).
local T = require "ember"
local U = require "specutil"

local f32 = { dtype = T.float32 }
local function arange(n) return T.arange(n, f32) end
local function strides(t)
  local out = {}
  for i, v in ipairs(t:stride()) do out[i] = string.format("%d", v) end
  return table.concat(out, ",")
end
local function values(t)
  local out = {}
  for i, v in ipairs(t:reshape(-1):tolist()) do out[i] = string.format("%g", v) end
  return table.concat(out, ",")
end

describe("resize_", function()
  it("grows a view's storage in place: the base shares the grown bytes", function()
    -- a = torch.arange(4.); b = a[1:]; b.resize_(6): a.storage().size() == 7
    local a = arange(4)
    local b = a[{ { 2, -1 } }]
    assert.equal(b, b:resize_(6))
    assert.same({ 6 }, b:size():totable())
    assert.equal(1, b:storage_offset())
    assert.equal(7 * 4, a:untyped_storage():nbytes())
    assert.is_true(T.shares_storage(a, b))
    assert.equal("0,1,2,3", values(a))
    b[{ { 1, 3 } }]:fill_(9)
    assert.equal("0,9,9,9", values(a))
  end)

  it("keeps the strides when the sizes are the same, else makes them contiguous", function()
    -- c = torch.arange(6.).view(2,3).t(); c.resize_(3,2).stride() == (1, 3);
    -- c.resize_(2,3).stride() == (3, 1), values 0..5
    local c = arange(6):view(2, 3):t()
    assert.equal("1,3", strides(c:resize_(3, 2)))
    assert.equal("3,1", strides(c:resize_(2, 3)))
    assert.equal("0,1,2,3,4,5", values(c))
    -- torch.ones(3).resize_(2,0,3).stride() == (3, 3, 1)
    assert.equal("3,3,1", strides(T.ones(3):resize_(2, 0, 3)))
    -- an expanded tensor resized to its own sizes stays expanded: (0, 1)
    assert.equal("0,1", strides(T.ones(3):expand(2, 3):resize_(2, 3)))
  end)

  it("shrinks without touching the storage, and takes sizes as numbers, a table or a T.Size", function()
    local t = arange(6)
    t:resize_(2, 2)
    assert.equal("0,1,2,3", values(t))
    assert.equal(24, t:untyped_storage():nbytes())
    assert.same({ 2, 2 }, T.ones(3):resize_({ 2, 2 }):size():totable())
    assert.same({ 2, 2 }, T.ones(3):resize_(T.Size { 2, 2 }):size():totable())
    assert.same({}, T.ones(3):resize_({}):size():totable())
    assert.same({ 2 }, T.ones(3):resize_(2, { memory_format = T.contiguous_format }):size():totable())
  end)

  it("resize_as_ takes the other tensor's sizes", function()
    local t = T.ones(2, 3)
    assert.equal(t, t:resize_as_(T.ones(4, 1)))
    assert.same({ 4, 1 }, t:size():totable())
    assert.equal("1,1", strides(t))
  end)

  it("bumps the version, so a saved tensor resized before backward is caught there", function()
    local w = T.ones(3, { requires_grad = true })
    local s = T.ones(3)
    local out = (w * s):sum()
    s:resize_(5)
    local ok, err = pcall(function() out:backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("modified by an inplace operation", 1, true), err)
  end)

  it("fills the grown elements in deterministic mode", function()
    T.use_deterministic_algorithms(true)
    local ok, err = pcall(function()
      local t = T.zeros(2)
      t:resize_(4)
      local v = t:tolist()
      assert.equal(0, v[1])
      assert.is_true(v[3] ~= v[3] and v[4] ~= v[4]) -- NaN
      local i = T.zeros(1, { dtype = T.int32 })
      i:resize_(3)
      assert.equal(2147483647, i[3]:item())
    end)
    T.use_deterministic_algorithms(false)
    assert(ok, err)
  end)

  it("refuses what PyTorch refuses, naming resize_", function()
    U.err(function() T.ones(3):resize_() end, "resize_: expected the new size")
    -- torch: cannot resize variables that require grad (in no_grad mode too)
    local g = T.ones(3, { requires_grad = true })
    U.err(function() g:resize_(6) end, "resize_: cannot resize variables that require grad")
    U.err(function() T.no_grad(function() g:resize_(6) end) end, "cannot resize variables that require grad")
    U.err(function() T.ones(3):resize_(-1, 2) end, "resize_: negative dimension -1 in size [-1, 2]")
    U.err(function() T.ones(3):resize_(2, { memory_format = T.preserve_format }) end,
      "resize_: memory_format must be ember.contiguous_format")
    U.err(function() T.ones(3):resize_(2, { foo = 1 }) end, "resize_: unknown option 'foo'")
    U.err(function() T.ones(3):resize_(2, {}, 5) end, "resize_: unexpected argument #4")
    U.err(function() T.ones(3):resize_(2 ^ 62) end, "resize_: size [4611686018427387904]")
    U.err(function() T.ones(3):resize_as_(5) end, "resize_as_: ")
    assert.equal(3, g:numel()) -- nothing changed
  end)

  it("refuses to grow wrapped memory, and shrinks it", function()
    local ok, ffi = pcall(require, "ffi")
    if not ok then return pending("needs LuaJIT's FFI") end
    local buf = ffi.new("float[3]", 1, 2, 3)
    local t = T.from_ffi(buf, { 3 }, { owner = buf })
    local ok2, e = pcall(function() t:resize_(10) end)
    assert.is_false(ok2)
    assert.truthy(tostring(e):find("resize_: Trying to resize storage that is not resizable", 1, true), e)
    assert.same({ 3 }, t:size():totable())
    t:resize_(2)
    assert.equal("1,2", values(t))
  end)
end)

describe("set_", function()
  it("with no argument gives the tensor an empty storage", function()
    -- g.set_(): size (0,), stride (1,), storage size 0
    local g = T.ones(3)
    assert.equal(g, g:set_())
    assert.same({ 0 }, g:size():totable())
    assert.equal("1", strides(g))
    assert.equal(0, g:untyped_storage():nbytes())
  end)

  it("with a tensor takes its storage, offset, sizes and strides", function()
    local h = arange(6)
    local z = T.zeros(2):set_(h[{ { 3, -1 } }])
    assert.equal(2, z:storage_offset())
    assert.is_true(z:is_set_to(h[{ { 3, -1 } }]))
    assert.is_false(h[{ { 2, -1 } }]:is_set_to(h))
    assert.equal("1,3", strides(T.zeros(2):set_(h:view(2, 3):t())))
    z[1] = 7
    assert.equal(7, h[3]:item())
    assert.is_true(T.zeros(2):set_(h):is_set_to(h))
  end)

  it("with a storage takes an offset, a size and strides, growing the storage as PyTorch 1.13", function()
    -- torch.zeros(2).set_(h.storage(), 1, (2,2), (2,1)) == [[1,2],[3,4]]
    local h = arange(6)
    assert.equal("1,2,3,4", values(T.zeros(2):set_(h:untyped_storage(), 1, { 2, 2 }, { 2, 1 })))
    -- (4,2) with strides (2,1) from 1 reaches element 8: h's storage grows to 9
    local y = T.zeros(2):set_(h:untyped_storage(), 1, { 4, 2 }, { 2, 1 })
    assert.same({ 4, 2 }, y:size():totable())
    assert.equal(36, h:untyped_storage():nbytes())
    assert.equal("0,1,2,3,4,5", values(h))
    assert.same({ 9 }, T.zeros(2):set_(h:untyped_storage()):size():totable())
    assert.equal("1", strides(T.zeros(2):set_(h:untyped_storage(), 2, { 2 })))
  end)

  it("refuses other dtypes and devices, and autograd through it", function()
    local h = arange(6)
    U.err(function() T.zeros(2, { dtype = T.float64 }):set_(h) end,
      "set_: expected a source of dtype ember.float64 (the tensor's), got ember.float32")
    U.err(function() T.zeros(2):set_(h, 1) end, "set_: unexpected argument #3")
    U.err(function() T.zeros(2):set_(5) end, "set_: expected an untyped storage")
    U.err(function() T.zeros(2):set_(h:untyped_storage(), 0, { 2 }, { 1, 1 }) end,
      "set_: mismatch in length of strides (2) and shape (1)")
    -- a leaf that requires grad: the in-place rule; under no_grad it is allowed
    local w = T.zeros(3, { requires_grad = true })
    U.err(function() w:set_(T.ones(3)) end, "set_: a leaf")
    T.no_grad(function() w:set_(T.ones(4)) end)
    assert.same({ 4 }, w:size():totable())
    assert.is_true(w.requires_grad and w.is_leaf)
    -- PyTorch records a node whose backward fails; ember refuses at the call
    local y = T.ones(3, { requires_grad = true }) * 2
    U.err(function() y:set_(T.ones(3)) end, "set_: the derivative of set_ is not implemented")
    U.err(function() T.zeros(3):set_(T.ones(3, { requires_grad = true }) * 1) end,
      "derivative of set_ is not implemented")
  end)

  it("leaves a view's base alone afterwards", function()
    local base = T.zeros(4, { requires_grad = true })
    local v
    T.no_grad(function()
      v = base:clone()[{ { 1, 2 } }]
      v:set_(T.ones(2))
    end)
    v:mul_(3) -- not a view of anything any more: no CopySlices into a base
    assert.equal("3,3", values(v))
    assert.is_nil(v.grad_fn)
  end)
end)
