-- Assembling (issue 4): cat/concat, stack, hstack/vstack/dstack, split,
-- chunk, tensor_split, unbind, repeat_tensor/repeat, tile,
-- repeat_interleave, roll. (Randomised PyTorch conformance cases for these
-- are replayed in select_spec.lua.)
local T = require "ember"

local unpack = unpack or table.unpack
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."

local function L(t) return t:tolist() end
local function shape_of(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end
local function I(tbl) return T.tensor(tbl, { dtype = T.int64 }) end
local range = T.arange -- 0, 1, ..., n - 1 as int64

local function raises(fn, needle)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected an error containing: " .. needle)
  assert.is_truthy(tostring(err):find(needle, 1, true),
    "error '" .. tostring(err) .. "' does not contain '" .. needle .. "'")
end

describe("cat", function()
  local first, second = T.tensor { 2, 4, 6 }, T.tensor { 8, 10, 12 }

  it("joins along an existing dim (the seed's example)", function()
    local c = T.cat { first, second }
    assert.same({ 6 }, shape_of(c))
    assert.same({ 2, 4, 6, 8, 10, 12 }, L(c))
    assert.same({ 2, 4, 6, 8, 10, 12 }, L(T.concat({ first, second }, 1)))
  end)

  it("joins along any dim, negative from the end", function()
    local a, b = T.tensor { { 1, 2 } }, T.tensor { { 3, 4 } }
    assert.same({ { 1, 2 }, { 3, 4 } }, L(T.cat({ a, b }, 1)))
    assert.same({ { 1, 2, 3, 4 } }, L(T.cat({ a, b }, -1)))
    assert.same({ { 1, 2, 3, 4 } }, L(T.cat({ a, b }, { dim = 2 })))
    -- Torch7's spelling: the tensors as arguments, then the dim
    assert.same({ { 1, 2, 3, 4 } }, L(T.cat(a, b, 2)))
    assert.same({ { 1, 2 }, { 3, 4 }, { 1, 2 } }, L(T.cat(a, b, a)))
  end)

  it("returns a new tensor (a copy)", function()
    local c = T.cat { first, second }
    c:fill_(0)
    assert.same({ 2, 4, 6 }, L(first))
  end)

  it("promotes dtypes as PyTorch does", function()
    local i32 = T.tensor({ 1, 2 }, { dtype = T.int32 })
    assert.equal(T.float32, T.cat({ i32, T.tensor { 1.5 } }).dtype)
    assert.equal(T.int16, T.cat({ T.tensor({ 1 }, { dtype = T.uint8 }),
      T.tensor({ -1 }, { dtype = T.int8 }) }).dtype)
    assert.equal(T.float32, T.cat({ T.tensor({ 1 }, { dtype = T.float16 }),
      T.tensor({ 1 }, { dtype = T.bfloat16 }) }).dtype)
    assert.equal(T.int32, T.cat({ T.tensor { true }, i32 }).dtype)
    assert.equal(T.float64, T.stack({ T.tensor({ 1 }, { dtype = T.float64 }),
      T.tensor({ 2 }, { dtype = T.float16 }) }).dtype)
    assert.same({ 1, 2, -1 }, L(T.cat({ T.tensor({ 1, 2 }, { dtype = T.uint8 }),
      T.tensor({ -1 }, { dtype = T.int8 }) })))
  end)

  it("skips 1-d empty tensors (PyTorch's legacy rule) but counts their dtype", function()
    local r = T.cat { T.zeros(2, 3, { dtype = T.int32 }), T.tensor({}, { dtype = T.float64 }) }
    assert.same({ 2, 3 }, shape_of(r))
    assert.equal(T.float64, r.dtype)
  end)

  it("reports mismatched shapes with the dim and both sizes", function()
    raises(function() T.cat { T.zeros(2, 3), T.zeros(2, 4) } end,
      "cat: sizes of tensors must match except in dimension 1, but in dimension 2 tensor 1 has size 3 and tensor 2 has size 4")
    raises(function() T.cat { T.zeros(2, 3), T.zeros(3) } end,
      "tensors must have the same number of dimensions")
    raises(function() T.cat { T.tensor(1), T.tensor(2) } end,
      "zero-dimensional tensor (tensor 1) cannot be concatenated")
    raises(function() T.cat {} end, "cat: expected a non-empty list of tensors")
    raises(function() T.cat { first, 3 } end, "expected a tensor at entry 2")
    raises(function() T.cat(3) end, "cat: expected a table of tensors for argument #1, got number")
    raises(function() T.cat({ first }, 2) end, "dimension 2 out of range")
  end)
end)

describe("stack and friends", function()
  local first, second = T.tensor { 2, 4, 6 }, T.tensor { 8, 10, 12 }

  it("stack adds a new dim (the seed's example)", function()
    assert.same({ 2, 3 }, shape_of(T.stack { first, second }))
    assert.same({ { 2, 8 }, { 4, 10 }, { 6, 12 } }, L(T.stack({ first, second }, 2)))
    assert.same({ 3, 2 }, shape_of(T.stack({ first, second }, -1)))
    assert.same({ 2 }, shape_of(T.stack { T.tensor(1), T.tensor(2) }))
  end)

  it("stack rejects different shapes", function()
    raises(function() T.stack { T.zeros(2, 3), T.zeros(2, 4) } end,
      "stack: expects each tensor to be equal size, but got [2, 3] at entry 1 and [2, 4] at entry 2")
    raises(function() T.stack({ first, second }, 3) end, "dimension 3 out of range")
  end)

  it("hstack, vstack, dstack follow NumPy's atleast rules", function()
    assert.same({ 2, 4, 6, 8, 10, 12 }, L(T.hstack { first, second }))
    assert.same({ { 2, 4, 6 }, { 8, 10, 12 } }, L(T.vstack { first, second }))
    assert.same({ { { 2, 8 }, { 4, 10 }, { 6, 12 } } }, L(T.dstack { first, second }))
    local a, b = T.tensor { { 1 }, { 2 } }, T.tensor { { 3 }, { 4 } }
    assert.same({ { 1, 3 }, { 2, 4 } }, L(T.hstack { a, b }))
    assert.same({ 4, 1 }, shape_of(T.vstack { a, b }))
    assert.same({ 2, 1, 2 }, shape_of(T.dstack { a, b }))
    assert.same({ 2 }, shape_of(T.hstack { T.tensor(1), T.tensor(2) }))
  end)
end)

describe("split, chunk, tensor_split, unbind", function()
  it("split by a size gives 3/3/1 (the seed's example)", function()
    local parts = range(7):split(3)
    assert.equal(3, #parts)
    assert.same({ 3, 3, 1 }, { parts[1]:numel(), parts[2]:numel(), parts[3]:numel() })
    assert.same({ 6 }, L(parts[3]))
  end)

  it("split by a table of sizes, along a dim", function()
    local t = T.tensor { { 1, 2, 3, 4 }, { 5, 6, 7, 8 } }
    local a, b = unpack(t:split({ 1, 3 }, 2))
    assert.same({ { 1 }, { 5 } }, L(a))
    assert.same({ { 2, 3, 4 }, { 6, 7, 8 } }, L(b))
    raises(function() t:split({ 1, 2 }, 2) end,
      "split: split sizes must sum exactly to 4 (the size of dimension 2), but they sum to 3")
    raises(function() t:split({ 5, -1 }, 2) end, "split sizes must be non-negative")
  end)

  it("split outputs are views sharing storage", function()
    local t = range(7)
    local parts = T.split(t, 3)
    parts[2]:fill_(-1)
    assert.same({ 0, 1, 2, -1, -1, -1, 6 }, L(t))
    assert.equal(3, parts[2]:storage_offset())
  end)

  it("split size 0 is an error unless the dim is empty", function()
    raises(function() range(7):split(0) end,
      "split: split_size can only be 0 if dimension size is 0, but got dimension size of 7")
    raises(function() range(7):split(-2) end, "split_size must be non-negative")
    assert.equal(1, #T.zeros(0):split(0))
    raises(function() T.tensor(3):split(1) end, "a 0-d tensor cannot be split")
  end)

  it("chunk may return fewer chunks than asked (the seed's contract)", function()
    local c = range(4):chunk(3)
    assert.equal(2, #c)
    assert.same({ 0, 1 }, L(c[1]))
    assert.same({ 2, 3 }, L(c[2]))
    assert.equal(3, #range(6):chunk(3))
    assert.equal(5, #range(5):chunk(6))
    raises(function() range(4):chunk(0) end, "chunk: number of chunks must be greater than 0")
  end)

  it("tensor_split by a count always gives that many pieces", function()
    local s = T.tensor_split(range(4), 3)
    assert.equal(3, #s)
    assert.same({ { 0, 1 }, { 2 }, { 3 } }, { L(s[1]), L(s[2]), L(s[3]) })
    assert.equal(5, #range(2):tensor_split(5))
    assert.equal(3, #range(4):tensor_split(T.tensor(3)))
    raises(function() range(4):tensor_split(2 ^ 40) end, "too many pieces")
    assert.equal(1, #range(4):split(2 ^ 62))
    assert.equal(1, #range(4):chunk(1))
  end)

  it("tensor_split at 1-based positions splits before those elements", function()
    local s = range(6):tensor_split { 2, 4 }
    assert.same({ { 0 }, { 1, 2 }, { 3, 4, 5 } }, { L(s[1]), L(s[2]), L(s[3]) })
    local n = range(6):tensor_split { -1 } -- before the last element
    assert.same({ { 0, 1, 2, 3, 4 }, { 5 } }, { L(n[1]), L(n[2]) })
    local w = range(6):tensor_split(I { 1, 9 }) -- clamped like slices
    assert.same({ {}, { 0, 1, 2, 3, 4, 5 }, {} }, { L(w[1]), L(w[2]), L(w[3]) })
    local m = T.tensor { { 1, 2, 3 }, { 4, 5, 6 } }:tensor_split({ 3 }, 2)
    assert.same({ { 1, 2 }, { 4, 5 } }, L(m[1]))
    -- each piece is its own slice, as in PyTorch: positions out of order
    -- give an empty piece and then restart from the later bound
    local o = range(3):tensor_split { 3, -2 }
    assert.same({ { 0, 1 }, {}, { 1, 2 } }, { L(o[1]), L(o[2]), L(o[3]) })
    raises(function() range(6):tensor_split { 0 } end, "position 0 is invalid")
    raises(function() range(6):tensor_split(T.tensor { 1.0, 2.5 }) end, "int64 or int32")
  end)

  it("unbind returns the slices along a dim as views", function()
    local t = T.tensor { { 1, 2 }, { 3, 4 } }
    local cols = t:unbind(2)
    assert.equal(2, #cols)
    assert.same({ 1, 3 }, L(cols[1]))
    cols[2]:fill_(0)
    assert.same({ { 1, 0 }, { 3, 0 } }, L(t))
    assert.same({ 1, 0 }, L(T.unbind(t)[1]))
  end)
end)

describe("repeat, tile, repeat_interleave, roll", function()
  local t = T.tensor { { 1, 2 }, { 3, 4 } }

  it("repeat_tensor (alias t['repeat']) tiles whole copies", function()
    assert.same({ { 1, 2, 1, 2 }, { 3, 4, 3, 4 } }, L(t:repeat_tensor(1, 2)))
    assert.same({ 2, 2, 4 }, shape_of(t["repeat"](t, 2, 1, 2)))
    assert.same({ 1, 2, 3, 1, 2, 3 }, L(T.tensor { 1, 2, 3 }:repeat_tensor { 2 }))
    assert.same({ 0, 4 }, shape_of(t:repeat_tensor(0, 2)))
    raises(function() t:repeat_tensor(2) end,
      "repeat: number of dimensions of repeat dims (1) can not be smaller than number of dimensions of tensor (2)")
    raises(function() t:repeat_tensor(2, -1) end, "repeats must be non-negative")
  end)

  it("tile pads the repeats with leading ones", function()
    assert.same({ { 1, 2, 1, 2 }, { 3, 4, 3, 4 } }, L(t:tile(2)))
    assert.same({ 2, 2, 2 }, shape_of(t:tile(2, 1, 1)))
  end)

  it("repeat_interleave repeats each element or slice", function()
    assert.same({ 1, 1, 2, 2, 3, 3, 4, 4 }, L(t:repeat_interleave(2)))
    assert.same({ { 1, 2 }, { 3, 4 }, { 3, 4 } }, L(t:repeat_interleave(I { 1, 2 }, 1)))
    assert.same({ { 1, 1, 1, 2 }, { 3, 3, 3, 4 } }, L(t:repeat_interleave(I { 3, 1 }, 2)))
    -- one tensor argument: its positions (1-based) repeated
    assert.same({ 1, 1, 2, 2, 2 }, L(T.repeat_interleave(I { 2, 3 })))
    raises(function() t:repeat_interleave(I { 1, 2, 3 }, 1) end, "repeats must have one element")
    raises(function() t:repeat_interleave(-1) end, "repeats can not be negative")
  end)

  it("roll shifts with wrap-around, flattened or along dims", function()
    assert.same({ { 4, 1 }, { 2, 3 } }, L(t:roll(1)))
    assert.same({ { 2, 1 }, { 4, 3 } }, L(t:roll(1, 2)))
    assert.same({ { 4, 3 }, { 2, 1 } }, L(t:roll({ 1, -1 }, { 1, 2 })))
    assert.same({ 3, 4, 5, 1, 2 }, L(T.tensor { 1, 2, 3, 4, 5 }:roll(-2)))
    raises(function() t:roll({ 1, 2 }, { 1 }) end, "shifts and dimensions must align")
    raises(function() t:roll(1, 3) end, "dimension 3 out of range")
  end)
end)

describe("the seed walkthrough", function()
  it("examples/seeds/selecting_and_assembling.lua runs and asserts every fact", function()
    local lines = {}
    local saved = _G.print -- the script runs in the global environment
    _G.print = function(...) lines[#lines + 1] = table.concat({ ... }, " ") end
    local ok, err = pcall(dofile, here .. "/../../examples/seeds/selecting_and_assembling.lua")
    _G.print = saved
    assert.is_true(ok, tostring(err))
    assert.equal("all seed facts hold", lines[#lines])
  end)
end)
