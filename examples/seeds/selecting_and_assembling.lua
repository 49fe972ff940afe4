-- The seeds' "Selecting samples and assembling batches" (tensors-and-storage)
-- and "Advanced Indexing with Lists and Boolean Masks" (creation-indexing-
-- interop), walked in Lua. Every fact is asserted; run with
--   bin/ember examples/seeds/selecting_and_assembling.lua
-- Positions are 1-based (Python's index 0 is ember's 1), index tensors too.
--
-- Lines marked TODO(merge) need pieces developed on other branches (the
-- t[...] index syntax and views, comparison ops, arange/reshape); the lead
-- completes them after merging.
local T = require "ember"

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

-- 0, 1, ..., n - 1 (int64), PyTorch's torch.arange(n)
-- TODO(merge): replace with T.arange(n) from the creation branch.
local arange = T.arange or function(n)
  local v = {}
  for i = 1, n do v[i] = i - 1 end
  return T.tensor(v, { dtype = T.int64 })
end

-- elementwise t > x as a bool mask
-- TODO(merge): replace with t:gt(x) from the math branch.
local function greater(t, x)
  local function walk(v)
    if type(v) ~= "table" then return v > x end
    local out = {}
    for i, e in ipairs(v) do out[i] = walk(e) end
    return out
  end
  return T.tensor(walk(t:tolist()), { dtype = T.bool })
end

print("== creation-indexing-interop: advanced indexing with lists and masks ==")

-- t = torch.arange(12).reshape(3, 4)
-- TODO(merge): local t = T.arange(12):reshape(3, 4)
local t = T.tensor { { 0, 1, 2, 3 }, { 4, 5, 6, 7 }, { 8, 9, 10, 11 } }

-- Python: t[1] -> tensor([4, 5, 6, 7]); in Lua the second row is t[2]
check(same(t[2]:tolist(), { 4, 5, 6, 7 }), "t[2] is the row [4, 5, 6, 7]")

-- indices = [0, 2]; selected = t[indices]  (rows 0 and 2, a copy)
local indices = T.tensor { 1, 3 }
local selected = t:index_select(1, indices)
check(same(selected:tolist(), { { 0, 1, 2, 3 }, { 8, 9, 10, 11 } }),
  "selecting rows {1, 3} gives the first and last rows")
selected:fill_(-1)
check(t:tolist()[1][1] == 0, "the selection is a copy: filling it leaves t alone")
-- TODO(merge): the same with the index syntax: t[T.tensor{1, 3}] equals
-- t:index_select(1, T.tensor{1, 3}) and is a copy.

-- mask = t > 5; t[mask] -> tensor([6, 7, 8, 9, 10, 11])
local mask = greater(t, 5) -- TODO(merge): t:gt(5)
local picked = t:masked_select(mask)
check(same(picked:tolist(), { 6, 7, 8, 9, 10, 11 }),
  "masked_select(t > 5) is the 1-d tensor [6, 7, 8, 9, 10, 11]")
check(picked:dim() == 1, "a mask selection is 1-d")
picked:fill_(0)
check(t:tolist()[3][4] == 11, "boolean mask selection copies: filling it leaves t alone")
-- TODO(merge): t[mask] equals t:masked_select(mask) (and is a copy).

print("== tensors-and-storage: selecting samples and assembling batches ==")

-- Reading through an index copies, but an indexed assignment modifies the source.
local values = T.tensor { 1, 2, 3, 4, 5 }
local big = greater(values, 3)
local copy = values:masked_select(big)
copy:fill_(0)
check(same(values:tolist(), { 1, 2, 3, 4, 5 }), "masked_select copies: the source is unchanged")
values:masked_fill_(big, -1)
check(same(values:tolist(), { 1, 2, 3, -1, -1 }),
  "masked_fill_ (what values[mask] = -1 does) modifies the source")
-- TODO(merge): values[mask] = -1 (the syntax of the seed) modifies values the
-- same way: assert same(values:tolist(), {1, 2, 3, -1, -1}) after it.

-- values[-1] selects the last element
check(values[-1]:item() == -1, "values[-1] is the last element")

-- Negative slice steps are unsupported: use flip.
-- TODO(merge): values[{ {1, -1, -1} }] raises an error that points to
-- :flip(1), and values:flip(1) gives {-1, -1, 3, 2, 1}.
-- TODO(merge): matrix[{ {1, -1, 2}, {1, -1, 2} }] strides along two axes;
-- matrix[{ {1, -1, 2} }][{ {1, -1, 2} }] selects along the first axis twice.

local first = T.tensor { 2, 4, 6 }
local second = T.tensor { 8, 10, 12 }
check(same(shape(T.cat { first, second }), { 6 }), "T.cat{first, second}.shape == {6}")
check(same(shape(T.stack { first, second }), { 2, 3 }), "T.stack{first, second}.shape == {2, 3}")

local counts = {}
for i, part in ipairs(arange(7):split(3)) do counts[i] = part:numel() end
check(same(counts, { 3, 3, 1 }), "arange(7):split(3) has parts of 3, 3 and 1 elements")
check(#arange(4):chunk(3) == 2, "arange(4):chunk(3) gives only 2 chunks")
check(#T.tensor_split(arange(4), 3) == 3, "T.tensor_split(arange(4), 3) gives 3 pieces")

-- stack is not appending: the result is a rectangular 2-d tensor
check(same(T.stack({ first, second }):tolist(), { { 2, 4, 6 }, { 8, 10, 12 } }),
  "stack makes a new leading axis, not a ragged list")

-- Split outputs can still modify shared storage.
local batch = arange(7)
local parts = batch:split(3)
parts[2]:fill_(100)
check(same(batch:tolist(), { 0, 1, 2, 100, 100, 100, 6 }),
  "writing into a split output changes the tensor it came from")

-- Check the chunk contract before unpacking a fixed number of outputs.
local a, b, c = unpack(arange(4):chunk(3))
check(a and b and c == nil, "unpacking arange(4):chunk(3) into three names leaves the third nil")

print("all seed facts hold")
