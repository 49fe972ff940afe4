-- The seed text "Tensors and storage: which data did you change?", walked in
-- Lua. Every fact the text asserts is asserted here, spelled with 1-based
-- positions: Python's values[0] is values[1], [:, 1:] is { {}, {2, -1} },
-- [::2] is { {1, -1, 2} }, dims count from 1.
-- Run: bin/ember examples/seeds/tensors_and_storage.lua
local T = require "ember"

local arange = T.arange -- 0..n-1 as int64, half-open like PyTorch

local function list(t)
  local function fmt(v)
    if type(v) ~= "table" then return tostring(v) end
    local parts = {}
    for i, x in ipairs(v) do parts[i] = fmt(x) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return fmt(t:tolist())
end
local function show(name, t)
  print(string.format("%-12s shape=%s stride=(%s) offset=%d  %s", name,
    tostring(t.shape), table.concat(t:stride(), ","), t:storage_offset(), list(t)))
end
local function section(s) print("\n== " .. s) end

section("Name the axes first")
local values = arange(24, {dtype = T.float32}):reshape(2, 3, 4) -- [batch, time, feature]
show("values[1]", values[1])
assert(values.shape == T.Size{2, 3, 4})
assert(values.ndim == 3 and values:numel() == 24)
assert(T.tensor(5.0).shape == T.Size{})
assert(T.tensor(5.0):numel() == 1)
assert(T.empty(0):numel() == 0)
assert(values[1].shape == T.Size{3, 4})           -- an integer removes an axis
assert(values[{ {1, 1} }].shape == T.Size{1, 3, 4}) -- a range keeps it
assert(values[{ {1} }].shape == T.Size{1, 3, 4})
print("values[1] is", tostring(values[1].shape), " values[{{1, 1}}] is",
      tostring(values[{ {1, 1} }].shape))
-- [4] is neither a [1, 4] row nor a [4, 1] column
assert(arange(4).shape ~= T.Size{1, 4} and arange(4).shape ~= T.Size{4, 1})

section("Be explicit when creating tensors")
assert(T.tensor{1, 2}.dtype == T.int64)
assert(T.tensor{1.5, 2}.dtype == T.get_default_dtype())
assert(T.tensor{true, false}.dtype == T.bool)
local f = T.tensor{1.5, 2.5}
assert(f:to{dtype = T.float32} == f)  -- no conversion needed: the same object
assert(f:float() == f)                 -- .float() does not guarantee a copy
print("T.tensor{1, 2}.dtype =", tostring(T.tensor{1, 2}.dtype),
      " f:to(T.float32) == f:", f:to(T.float32) == f)

section("A storage picture")
local base = arange(6):reshape(2, 3)
local tr = base:transpose(1, 2)
local cl = base:clone()
show("base", base)
show("transpose", tr)
show("clone", cl)
assert(table.concat(base:stride(), ",") == "3,1")
assert(table.concat(tr:stride(), ",") == "1,3")
assert(T.shares_storage(base, tr) and base:untyped_storage() == tr:untyped_storage())
assert(not T.shares_storage(base, cl) and base:untyped_storage() ~= cl:untyped_storage())
-- element (i, j) lives at storage_offset + (i-1)*stride[1] + (j-1)*stride[2]
local storage = base:contiguous():view(-1)  -- base is contiguous: its storage in order
for i = 1, 3 do
  for j = 1, 2 do
    local k = tr:storage_offset() + (i - 1) * tr:stride(1) + (j - 1) * tr:stride(2)
    assert(tr[{i, j}]:item() == storage[k + 1]:item())
  end
end
print("transpose readdresses the same six values; the clone has its own storage")

local window = base[{ {}, {2, -1} }] -- base[:, 1:]
local snapshot = window:clone()
window[{1, 1}] = 50
assert(base[{1, 2}]:item() == 50)
assert(snapshot[{1, 1}]:item() == 1)
assert(window ~= base)
local alias = base
assert(alias == base) -- the same Lua object
show("base", base)
show("snapshot", snapshot)

section("Reshape is not transpose")
local grid = arange(30):reshape(5, 6)
local spaced = grid[{ {}, {1, -1, 2} }]  -- grid[:, ::2]
local flat = spaced:view(-1)
assert(not spaced:is_contiguous())
assert(#flat:stride() == 1 and flat:stride(1) == 2)
local expect = {}
for v = 0, 29, 2 do expect[#expect + 1] = v end
assert(table.concat(flat:tolist(), ",") == table.concat(expect, ","))
show("spaced", spaced)
show("flat", flat)

local swapped = grid:transpose(1, 2)
local repacked = swapped:reshape(-1)
assert(table.concat(repacked[{ {1, 5} }]:tolist(), ",") == "0,6,12,18,24")
assert(repacked:data_ptr() ~= swapped:data_ptr()) -- this reshape made a copy
local ok, err = pcall(function() return swapped:view(-1) end)
assert(not ok and err:find(":reshape", 1, true))
print("swapped:view(-1) fails:", (err:gsub("^.-view:", "view:")))
assert(grid:contiguous() == grid) -- already contiguous: the input itself
-- exchange time and features in [B,T,D] -> [B,D,T] with transpose(2, 3)
local btd = arange(24):reshape(2, 3, 4)
local bdt = btd:transpose(2, 3)
assert(bdt.shape == T.Size{2, 4, 3})
assert(bdt[{2, 4, 1}]:item() == btd[{2, 1, 4}]:item())
assert(list(bdt) ~= list(btd:reshape(2, 4, 3))) -- same shape, different meaning

section("flatten, squeeze, unsqueeze")
local batch = arange(12):reshape(1, 3, 4)
assert(batch:flatten(2).shape == T.Size{1, 12})  -- keeps the batch axis
assert(batch:squeeze(1).shape == T.Size{3, 4})
assert(batch:squeeze().shape == T.Size{3, 4})   -- a batch of one is gone
assert(batch:squeeze(2).shape == T.Size{1, 3, 4}) -- a non-singleton dim stays
assert(batch[1]:unsqueeze(1).shape == T.Size{1, 3, 4})
print("flatten(2):", tostring(batch:flatten(2).shape), " squeeze():",
      tostring(batch:squeeze().shape), " unsqueeze(1):", tostring(batch[1]:unsqueeze(1).shape))

section("Selecting samples and assembling batches")
local v = arange(5)
assert(v[-1]:item() == 4)
local ok2, err2 = pcall(function() return v[{ {5, 1, -1} }] end)
assert(not ok2 and err2:find(":flip", 1, true))
assert(table.concat(v:flip(1):tolist(), ",") == "4,3,2,1,0")
print("v[{{5, 1, -1}}] fails:", (err2:gsub("^.-index:", "index:")))
local matrix = arange(36):reshape(6, 6)
local both = matrix[{ {1, -1, 2}, {1, -1, 2} }]   -- matrix[::2, ::2]
local twice = matrix[{ {1, -1, 2} }][{ {1, -1, 2} }] -- matrix[::2][::2]
assert(both.shape == T.Size{3, 3} and twice.shape == T.Size{2, 6})
show("[::2, ::2]", both)
show("[::2][::2]", twice)
-- advanced indexing reads copy; assignment through it writes the source
local rows = matrix[T.tensor{1, 3}]
assert(not T.shares_storage(rows, matrix))
local mask = matrix:gt(6)
matrix[mask] = -1
assert(matrix[{2, 1}]:item() == 6 and matrix[{2, 2}]:item() == -1)
print("matrix[mask] = -1 changed the source:", list(matrix[2]))
local first, second = T.tensor{2, 4, 6}, T.tensor{8, 10, 12}
assert(T.cat{first, second}.shape == T.Size{6})
assert(T.stack{first, second}.shape == T.Size{2, 3})
local parts = arange(7):split(3)
assert(#parts == 3 and parts[1]:numel() == 3 and parts[3]:numel() == 1)
assert(#arange(4):chunk(3) == 2)
assert(#T.tensor_split(arange(4), 3) == 3)

section("Crossing into Lua values")
local sub = {}
for i, s in arange(6):reshape(2, 3):iter() do sub[i] = list(s) end
assert(#sub == 2 and sub[2] == "[3, 4, 5]") -- iteration runs along dim 1
assert(T.tensor{{7}}:item() == 7)           -- one element, not necessarily 0-d
print("tolist:", list(arange(6):reshape(2, 3)), " iter:", table.concat(sub, " "))
print("\nall assertions of the seed hold")
