-- A tour of ember: run with `make demo` or `bin/ember examples/tour.lua`.
-- Each section prints what it shows; every fact it states is also asserted.
local T = require "ember"

local function section(name) print(("\n== %s =="):format(name)) end

section("creation infers dtypes as PyTorch does")
local ids = T.tensor{1, 2, 3}
local feats = T.tensor{{0.5, 1.5}, {2.5, 3.5}}
print(ids)
print(feats)
assert(ids.dtype == T.int64 and feats.dtype == T.float32)
print(T.arange(6):reshape(2, 3))
T.manual_seed(0)
print(T.rand(2, 3))

section("to() returns the same object when nothing changes")
assert(feats:to(T.float32) == feats and feats:float() == feats)
print("feats:double() is new:", feats:double() ~= feats, feats:double().dtype)

section("views share storage, clones do not")
local base = T.arange(6):reshape(2, 3)
local window = base[{ {}, {2, 3} }]      -- base[:, 1:] in Python
local snapshot = window:clone()
window[{1, 1}] = 50
print(base)
assert(base[{1, 2}]:item() == 50 and snapshot[{1, 1}]:item() == 1)
print("transpose strides:", table.concat(base:t():stride(), ","), " shares storage:",
  T.shares_storage(base, base:t()))

section("view keeps strides when it can, reshape copies when it must")
local grid = T.arange(30):reshape(5, 6)
local flat = grid[{ {}, {1, -1, 2} }]:view(-1)     -- grid[:, ::2].view(-1)
print("grid[:, ::2]:view(-1) stride:", flat:stride(1))
assert(flat:stride(1) == 2)
local repacked = grid:transpose(1, 2):reshape(-1)
print("transpose then reshape copies:", repacked:data_ptr() ~= grid:data_ptr())

section("advanced indexing copies; assignment through it writes the source")
local t = T.arange(12):reshape(3, 4)
print(t[T.tensor{1, 3}])
local mask = t:gt(5)
print(t[mask])
t[mask] = -1
print(t)

section("math: broadcasting and type promotion")
local a = T.tensor{{1}, {2}, {3}}
local b = T.tensor{10, 20}
print(a + b)
print((a + b).dtype, (a / 2).dtype, (a + 0.5).dtype, a:lt(2).dtype)
print(T.result_type(T.tensor({1}, {dtype = T.int8}), 1000))

section("reductions, with 1-based indices")
local m = T.tensor({{3, 7, 5}, {9, 1, 4}}, {dtype = T.float32}) -- integral numbers infer int64: say the dtype
local values, indices = m:max(2)
print(values, indices)
print(m:sum(), m:mean(1), m:softmax(2))

section("matmul on OpenBLAS; matching dtypes required")
local w = T.randn(3, 2)
print(T.mm(m, w).shape, (m:matmul(w)).dtype)
local ok, err = pcall(T.mm, m, w:double())
print(ok, err)

section("assembling batches")
local first, second = T.tensor{2, 4, 6}, T.tensor{8, 10, 12}
print(T.cat{first, second}, T.stack{first, second}.shape)
for i, part in ipairs(T.arange(7):split(3)) do io.write(tostring(part), i < 3 and "  " or "\n") end

section("errors name the operation and the values")
for _, f in ipairs {
  function() return T.arange(24):view(4, 5) end,
  function() return T.zeros(3)[4] end,
  function() return T.zeros(2, 3):transpose(1, 4) end,
} do
  print(select(2, pcall(f)))
end

print("\ntour complete")
