-- Views and layout: every view op, the stride rule of view, reshape's
-- view-or-copy choice, flip/contiguous/clone, storage introspection, and
-- the conformance fixtures generated from PyTorch (tests/fixtures/).
local T = require "ember"
local unpack = table.unpack or unpack  -- Lua 5.4 has only table.unpack

local arange = T.arange -- 0..n-1 as int64, half-open like PyTorch

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
      local x = assert(load("local T, x = ...; return " .. c.pre))(T, b)
      local chunk = c.kind == "w" and ("local T, x = ...; " .. c.lua)
                    or ("local T, x = ...; return " .. c.lua)
      local f = assert(load(chunk))
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

describe("the seed: tensors and storage", function()
  it("names the axes: an integer index removes an axis, a range keeps it", function()
    local values = arange(24):float():reshape(2, 3, 4)
    assert.equal(T.Size{2, 3, 4}, values.shape)
    assert.is_true(values.ndim == 3 and values:numel() == 24)
    assert.equal(T.Size{3, 4}, values[1].shape)
    assert.equal(T.Size{1, 3, 4}, values[{ {1, 1} }].shape)
    assert.equal(T.Size{1, 3, 4}, values[{ {1} }].shape)
  end)

  it("draws the storage picture: transpose readdresses, clone copies", function()
    local base = arange(6):reshape(2, 3)
    assert.same({3, 1}, base:stride())
    local tr = base:transpose(1, 2)
    assert.same({1, 3}, tr:stride())
    assert.same({{0, 3}, {1, 4}, {2, 5}}, tr:tolist())
    assert.is_true(T.shares_storage(base, tr))
    assert.equal(base:untyped_storage():data_ptr(), tr:untyped_storage():data_ptr())
    local c = base:clone()
    assert.is_false(T.shares_storage(base, c))
    assert.are_not.equal(base:untyped_storage():data_ptr(), c:untyped_storage():data_ptr())
    assert.same({0, 1, 2, 3, 4, 5}, flat(c))
    -- element (i, j) lives at storage_offset + (i-1)*stride1 + (j-1)*stride2
    local w = base[{ {}, {2, 3} }]
    assert.equal(1, w:storage_offset())
    assert.equal(base:data_ptr() + 8 * (w:storage_offset() + (2 - 1) * 3 + (2 - 1) * 1),
                 w[{2, 2}]:data_ptr())
  end)

  it("a window is another object sharing storage; a clone is independent", function()
    local base = arange(6):reshape(2, 3)
    local window = base[{ {}, {2, -1} }]
    local snapshot = window:clone()
    window[{1, 1}] = 50
    assert.equal(50, base[{1, 2}]:item())
    assert.equal(1, snapshot[{1, 1}]:item())
    assert.are_not.equal(window, base)
    local alias = base
    assert.equal(alias, base)
  end)

  it("reshape is not transpose: view keeps a stride of two, reshape repacks", function()
    local grid = arange(30):reshape(5, 6)
    local spaced = grid[{ {}, {1, -1, 2} }]
    local fl = spaced:view(-1)
    assert.is_false(spaced:is_contiguous())
    assert.same({2}, fl:stride())
    local expect = {}
    for v = 0, 29, 2 do expect[#expect + 1] = v end
    assert.same(expect, fl:tolist())
    local swapped = grid:transpose(1, 2)
    local repacked = swapped:reshape(-1)
    assert.same({0, 6, 12, 18, 24}, repacked[{ {1, 5} }]:tolist())
    assert.are_not.equal(repacked:data_ptr(), swapped:data_ptr())
    assert.is_false(T.shares_storage(repacked, swapped))
    -- transpose(2, 3) exchanges time and features, a [B,T,D] view is not
    local btd = arange(24):reshape(2, 3, 4)
    local bdt = btd:transpose(2, 3)
    assert.equal(T.Size{2, 4, 3}, bdt.shape)
    assert.equal(btd[{1, 2, 3}]:item(), bdt[{1, 3, 2}]:item())
    assert.are_not.same(bdt:tolist(), btd:reshape(2, 4, 3):tolist())
  end)

  it("contiguous returns its input when the layout already holds", function()
    local grid = arange(30):reshape(5, 6)
    assert.equal(grid, grid:contiguous())
    local tc = grid:t():contiguous()
    assert.are_not.equal(grid, tc)
    assert.is_true(tc:is_contiguous())
    assert.same({5, 1}, tc:stride())
  end)

  it("flatten keeps the batch axis; squeeze(dim) and unsqueeze(dim) name one axis", function()
    local x = arange(24):reshape(2, 3, 4)
    assert.equal(T.Size{2, 12}, x:flatten(2).shape)
    assert.equal(T.Size{24}, x:flatten().shape)
    local one = arange(12):reshape(1, 3, 4)
    assert.equal(T.Size{3, 4}, one:squeeze().shape)       -- the batch axis is gone
    assert.equal(T.Size{1, 3, 4}, one:squeeze(2).shape)   -- a non-singleton dim stays
    assert.equal(T.Size{3, 4}, one:squeeze(1).shape)
    assert.equal(T.Size{1, 1, 3, 4}, one:unsqueeze(1).shape)
    assert.equal(T.Size{1, 3, 4, 1}, one:unsqueeze(-1).shape)
    assert.equal(T.Size{3, 4}, arange(12):reshape(1, 3, 1, 4):squeeze{1, 3}.shape)
  end)
end)

describe("view ops", function()
  it("write only metadata: writes through any view reach the base", function()
    local b = arange(24):reshape(2, 3, 4)
    local views = {
      b:narrow(3, 2, 2), b:select(2, 3), b:transpose(1, 3), b:permute(3, 1, 2),
      b:movedim(1, -1), b:view(6, 4), b:reshape(4, 6), b:flatten(), b:unflatten(3, {2, 2}),
      b:unsqueeze(2), b[1]:unsqueeze(1):squeeze(1), b[{ {}, {}, 1 }]:unsqueeze(3):expand(2, 3, 5),
      b:as_strided({2, 2}, {1, 1}, 3), b:unfold(3, 2, 2), b:diagonal(0, 2, 3), b.mT, b.T,
      b[{ "...", T.newaxis }],
    }
    for i, v in ipairs(views) do
      assert.is_true(T.shares_storage(v, b), "view #" .. i)
    end
    b:select(2, 3)[{2, 4}] = 1000
    assert.equal(1000, b[{2, 3, 4}]:item())
    b:transpose(1, 3)[{1, 2, 2}] = -7
    assert.equal(-7, b[{2, 2, 1}]:item())
  end)

  it("are module functions too", function()
    local b = arange(6):reshape(2, 3)
    assert.same(b:t():tolist(), T.t(b):tolist())
    assert.same(b:permute(2, 1):tolist(), T.permute(b, {2, 1}):tolist())
    assert.same(b:flip(2):tolist(), T.flip(b, 2):tolist())
    assert.equal(T.Size{3, 2}, T.reshape(b, 3, 2).shape)
    assert.equal(T.Size{4, 2, 3}, T.broadcast_to(b, {4, -1, -1}).shape)
  end)

  it("view_as, reshape_as, expand_as follow the other tensor's shape", function()
    local a, other = arange(6), T.zeros(3, 2)
    assert.equal(T.Size{3, 2}, a:view_as(other).shape)
    assert.equal(T.Size{3, 2}, a:reshape_as(other).shape)
    assert.equal(T.Size{3, 2}, arange(2):expand_as(other).shape)
    assert.same({0, 1}, arange(2):expand_as(other):stride())
  end)

  it("t, T and mT", function()
    local m = arange(6):reshape(2, 3)
    assert.same({{0, 3}, {1, 4}, {2, 5}}, m.T:tolist())
    assert.same({{0, 3}, {1, 4}, {2, 5}}, m:t():tolist())
    assert.equal(T.Size{4, 3, 2}, arange(24):reshape(2, 3, 4).T.shape)
    assert.equal(T.Size{2, 4, 3}, arange(24):reshape(2, 3, 4).mT.shape)
    assert.same(m.T:tolist(), m.H:tolist())   -- real dtypes: H is T
    assert.same(arange(24):reshape(2, 3, 4).mT:tolist(), arange(24):reshape(2, 3, 4).mH:tolist())
    assert.same(arange(24):reshape(2, 3, 4).mT:tolist(), arange(24):reshape(2, 3, 4):adjoint():tolist())
    assert.has_error(function() return arange(3).H end,
      "H: only supported on matrices (2-d tensors), got a 1-d tensor; use .mH to transpose the last two dims")
    local v = arange(3)
    assert.equal(T.Size{3}, v:t().shape)
    assert.has_error(function() return v.mT end,
      "mT: expects a tensor with at least 2 dimensions, but it has 1")
  end)

  it("reshape copies only when it must, and never errs for a valid size", function()
    local g = arange(12):reshape(3, 4)
    assert.is_true(T.shares_storage(g:reshape(4, 3), g))
    assert.is_true(T.shares_storage(g:t():reshape(4, 3, 1), g))
    assert.is_false(T.shares_storage(g:t():reshape(12), g))
    assert.same({0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}, g:t():reshape(12):tolist())
  end)

  it("clone keeps the strides of a dense permuted tensor and packs others", function()
    local p = arange(24):reshape(2, 3, 4):permute(3, 1, 2)
    local c = p:clone()
    assert.same(p:stride(), c:stride())
    assert.same(p:tolist(), c:tolist())
    local s = arange(30):reshape(5, 6)[{ {}, {1, -1, 2} }]
    assert.same({3, 1}, s:clone():stride())
  end)

  it("flip copies with the listed dims reversed", function()
    local m = arange(6):reshape(2, 3)
    local f = m:flip(1, 2)
    assert.same({{5, 4, 3}, {2, 1, 0}}, f:tolist())
    assert.is_false(T.shares_storage(f, m))
    assert.same({{2, 1, 0}, {5, 4, 3}}, m:flip{-1}:tolist())
    assert.same({{0, 1, 2}, {3, 4, 5}}, m:flip():tolist())
    f[{1, 1}] = 99
    assert.equal(5, m[{2, 3}]:item())
  end)

  it("expand makes stride-0 dims that take only value fills", function()
    local e = arange(3):expand(4, 3)
    assert.same({0, 1}, e:stride())
    -- a tensor written into aliased elements is refused; a value fill (the
    -- same bytes everywhere) is allowed, as PyTorch's fill_ and t[i] = v
    assert.has_error(function() e[{ {}, 1 }] = T.tensor { 1, 2, 3, 4 } end, "index: unsupported operation: more than one element of the written-to tensor refers to a single memory location; clone() the tensor before performing the operation")
    assert.has_error(function() e:add_(1) end)
    e[{ {}, 1 }] = 0
    e[{1, 2}] = 5 -- one element is one location: every row sees it, as in PyTorch
    assert.same({{0, 5, 2}, {0, 5, 2}, {0, 5, 2}, {0, 5, 2}}, e:tolist())
  end)

  it("copies between dtypes when assigning into views", function()
    local f = T.zeros(2, 3, {dtype = T.float64})
    f[{ {}, 2 }] = arange(2)
    assert.same({{0, 0, 0}, {0, 1, 0}}, f:tolist())
    local i = T.zeros(3, {dtype = T.int32})
    i[{ {1, 2} }] = T.tensor{2.7, -1.9}
    assert.same({2, -1, 0}, i:tolist())
  end)
end)

describe("storage introspection", function()
  it("untyped_storage: data_ptr, nbytes, identity", function()
    local b = arange(6):reshape(2, 3)
    local s1, s2 = b:untyped_storage(), b[2]:untyped_storage()
    assert.equal(48, s1:nbytes())
    assert.equal(s1, s2)                        -- two views, one storage
    assert.equal(s1:data_ptr(), s2:data_ptr())
    assert.are_not.equal(s1, b:clone():untyped_storage())
    assert.equal(b:data_ptr(), s1:data_ptr())
    assert.equal(s1:data_ptr() + 3 * 8, b[2]:data_ptr())
    assert.matches("UntypedStorage", tostring(s1))
  end)

  it("is_non_overlapping_and_dense", function()
    local b = arange(24):reshape(2, 3, 4)
    assert.is_true(b:is_non_overlapping_and_dense())
    assert.is_true(b:permute(3, 1, 2):is_non_overlapping_and_dense())
    assert.is_false(b:permute(3, 1, 2):is_contiguous())
    assert.is_false(b[{ {}, {}, {1, -1, 2} }]:is_non_overlapping_and_dense())
    assert.is_false(arange(3):expand(2, 3):is_non_overlapping_and_dense())
  end)
end)

describe("bad input", function()
  local x = arange(24):reshape(2, 3, 4)
  local cases = {
    {function() return x:view(4, 5) end, "view: shape [4, 5] is invalid for input of size 24"},
    {function() return x:view(-1, -1) end, "only one dimension can be inferred"},
    {function() return x:transpose(1, 2):view(-1) end, "use :reshape(...) instead"},
    {function() return x:transpose(1, 2):view(-1) end, "strides [4, 12, 1]"},
    {function() return x:reshape(5, -1) end, "reshape: shape [5, -1] is invalid for input of size 24"},
    {function() return x:transpose(1, 4) end, "dimension 4 out of range (expected to be in range of [-3, 3])"},
    {function() return x:size(0) end, "dimension 0 is invalid"},
    {function() return x:select(2, 4) end, "select: index 4 is out of bounds for dimension 2 with size 3"},
    {function() return T.tensor(3):select(1, 1) end, "select: cannot be applied to a 0-dim tensor"},
    {function() return x:narrow(3, 3, 3) end, "narrow: start 3 with length 3 runs past the end of dimension 3 with size 4"},
    {function() return x:expand(2, 5, 4) end, "expand: the expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 2"},
    {function() return x:broadcast_to{3, 3, 4} end, "broadcast_to: the expanded size of the tensor (3) must match the existing size (2) at non-singleton dimension 1"},
    {function() return x:expand(4) end, "must be greater or equal to the number of dimensions"},
    {function() return x:as_strided({5, 5}, {5, 1}) end, "as_strided: size [5, 5] with strides [5, 1] and offset 0 reaches outside the storage of 24 elements"},
    {function() return x:as_strided({2}, {1}, -1) end, "negative storage offset"},
    {function() return x:permute(1, 1, 2) end, "permute: dimension 1 appears more than once"},
    {function() return x:permute(1, 2) end, "permute: the number of dims (2) does not match"},
    {function() return x:unfold(3, 5, 1) end, "unfold: maximum size for dimension 3 is 4 but size is 5"},
    {function() return x:unfold(3, 2, 0) end, "unfold: step is 0 but must be > 0"},
    {function() return x:diagonal(0, 2, -2) end, "diagonal: dimensions cannot be identical"},
    {function() return x:t() end, "t: expects a tensor with <= 2 dimensions, but it has 3"},
    {function() return x:flatten(3, 2) end, "flatten: start dim 3 comes after end dim 2"},
    {function() return x:unflatten(2, {2, 2}) end, "unflatten: sizes [2, 2] do not multiply to the size 3 of dimension 2"},
    {function() return x:movedim({1, 2}, {1}) end, "movedim: invalid source or destination dims"},
    {function() return x:view(2.5) end, "view: expected an integer for size[1], got 2.5"},
    {function() return x:squeeze("a") end, "squeeze: expected a dim or a table of dims"},
    {function() return x:flip(1, 1) end, "flip: dimension 1 appears more than once"},
  }
  for i, c in ipairs(cases) do
    it("#" .. i .. " " .. c[2], function()
      local ok, err = pcall(c[1])
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find(c[2], 1, true), tostring(err))
    end)
  end
end)

describe("examples/seeds/tensors_and_storage.lua", function()
  it("runs and every assertion of the seed holds", function()
    local lines, real_print = {}, print
    _G.print = function(...)
      local parts = {}
      for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
      lines[#lines + 1] = table.concat(parts, " ")
    end
    local ok, err = pcall(dofile, "examples/seeds/tensors_and_storage.lua")
    _G.print = real_print
    assert(ok, err)
    assert.equal("\nall assertions of the seed hold", lines[#lines])
  end)
end)
