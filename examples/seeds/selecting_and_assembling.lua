-- The seeds' "Selecting samples and assembling batches" (tensors-and-storage)
-- and "Advanced Indexing with Lists and Boolean Masks" (creation-indexing-
-- interop), walked in Lua. Every fact is asserted; run with
--   bin/ember examples/seeds/selecting_and_assembling.lua
-- Positions are 1-based (Python's index 0 is ember's 1), index tensors too.
local T = require "ember"
local unpack = table.unpack or unpack  -- Lua 5.4 has only table.unpack

local function check(cond, fact)
  assert(cond, "seed fact failed: " .. fact)
  print("ok  " .. fact)
end

local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= "table" then return a == b end
  if #a ~= #b then return false end
  for i = 1, #a do
    if not same(a[i], b[i]) then return false end
  end
  return true
end

local function shape(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end

print("== creation-indexing-interop: advanced indexing with lists and masks ==")

-- t = torch.arange(12).reshape(3, 4)
local t = T.arange(12):reshape(3, 4)

-- Python: t[1] -> tensor([4, 5, 6, 7]); in Lua the second row is t[2]
check(same(t[2]:tolist(), { 4, 5, 6, 7 }), "t[2] is the row [4, 5, 6, 7]")

-- indices = [0, 2]; selected = t[indices]  (rows 0 and 2, a copy)
local indices = T.tensor { 1, 3 }
local selected = t:index_select(1, indices)
check(same(selected:tolist(), { { 0, 1, 2, 3 }, { 8, 9, 10, 11 } }),
  "selecting rows {1, 3} gives the first and last rows")
selected:fill_(-1)
check(t:tolist()[1][1] == 0, "the selection is a copy: filling it leaves t alone")
local by_syntax = t[indices]
check(T.equal(by_syntax, t:index_select(1, indices)), "t[T.tensor{1, 3}] equals index_select")
by_syntax:fill_(-1)
check(t[1][1]:item() == 0, "t[index_tensor] is a copy too")

-- mask = t > 5; t[mask] -> tensor([6, 7, 8, 9, 10, 11])
local mask = t:gt(5)
local picked = t:masked_select(mask)
check(same(picked:tolist(), { 6, 7, 8, 9, 10, 11 }),
  "masked_select(t > 5) is the 1-d tensor [6, 7, 8, 9, 10, 11]")
check(picked:dim() == 1, "a mask selection is 1-d")
picked:fill_(0)
check(t:tolist()[3][4] == 11, "boolean mask selection copies: filling it leaves t alone")
check(T.equal(t[mask], t:masked_select(mask)), "t[mask] equals masked_select")

print("== tensors-and-storage: selecting samples and assembling batches ==")

-- Reading through an index copies, but an indexed assignment modifies the source.
local values = T.tensor { 1, 2, 3, 4, 5 }
local big = values:gt(3)
local copy = values:masked_select(big)
copy:fill_(0)
check(same(values:tolist(), { 1, 2, 3, 4, 5 }), "masked_select copies: the source is unchanged")
values:masked_fill_(big, -1)
check(same(values:tolist(), { 1, 2, 3, -1, -1 }),
  "masked_fill_ (what values[mask] = -1 does) modifies the source")
local again = T.tensor { 1, 2, 3, 4, 5 }
again[again:gt(3)] = -1
check(same(again:tolist(), { 1, 2, 3, -1, -1 }), "values[mask] = -1 modifies the source")

-- values[-1] selects the last element
check(values[-1]:item() == -1, "values[-1] is the last element")

-- Negative slice steps are unsupported: use flip.
local ok, err = pcall(function() return values[{ { 1, -1, -1 } }] end)
check(not ok and tostring(err):find("flip", 1, true) ~= nil,
  "a negative step is an error that points to :flip")
check(same(values:flip(1):tolist(), { -1, -1, 3, 2, 1 }), "values:flip(1) reverses (a copy)")
local matrix = T.arange(16):reshape(4, 4)
check(same(matrix[{ { 1, -1, 2 }, { 1, -1, 2 } }]:tolist(), { { 0, 2 }, { 8, 10 } }),
  "matrix[{ {1,-1,2}, {1,-1,2} }] strides along two axes")
check(same(matrix[{ { 1, -1, 2 } }][{ { 1, -1, 2 } }]:tolist(), { { 0, 1, 2, 3 } }),
  "matrix[{ {1,-1,2} }][{ {1,-1,2} }] selects along the first axis twice")

local first = T.tensor { 2, 4, 6 }
local second = T.tensor { 8, 10, 12 }
check(same(shape(T.cat { first, second }), { 6 }), "T.cat{first, second}.shape == {6}")
check(same(shape(T.stack { first, second }), { 2, 3 }), "T.stack{first, second}.shape == {2, 3}")

local counts = {}
for i, part in ipairs(T.arange(7):split(3)) do counts[i] = part:numel() end
check(same(counts, { 3, 3, 1 }), "T.arange(7):split(3) has parts of 3, 3 and 1 elements")
check(#T.arange(4):chunk(3) == 2, "T.arange(4):chunk(3) gives only 2 chunks")
check(#T.tensor_split(T.arange(4), 3) == 3, "T.tensor_split(T.arange(4), 3) gives 3 pieces")

-- stack is not appending: the result is a rectangular 2-d tensor
check(same(T.stack({ first, second }):tolist(), { { 2, 4, 6 }, { 8, 10, 12 } }),
  "stack makes a new leading axis, not a ragged list")

-- Split outputs can still modify shared storage.
local batch = T.arange(7)
local parts = batch:split(3)
parts[2]:fill_(100)
check(same(batch:tolist(), { 0, 1, 2, 100, 100, 100, 6 }),
  "writing into a split output changes the tensor it came from")

-- Check the chunk contract before unpacking a fixed number of outputs.
local a, b, c = unpack(T.arange(4):chunk(3))
check(a and b and c == nil, "unpacking T.arange(4):chunk(3) into three names leaves the third nil")

print("all seed facts hold")
