-- The seed "PyTorch Tensors: Creation, Indexing, and NumPy Conversion",
-- walked in ember. Positions are 1-based; every NumPy conversion maps to
-- its LuaJIT FFI or .npy counterpart, and each claim about shared versus
-- copied memory is asserted. Run: ./bin/ember examples/seeds/creation_indexing_interop.lua
local T = require "ember"
local has_ffi, ffi = pcall(require, "ffi")

local function check(cond, what)
  if not cond then error("seed check failed: " .. what, 2) end
  print("  ok  " .. what)
end

local function tmpfile(suffix)
  local p = os.tmpname()
  os.remove(p)
  return p .. suffix
end

print("== Creating tensors from data and shapes")
local data = {{1, 2}, {3, 4}}
local t = T.tensor(data)
print(t)
check(t.dtype == T.int64, "integers infer int64")
data[1][1] = 100
check(t[1][1]:item() == 1, "T.tensor copies: changing the table later does not change t")

local zeros, ones = T.zeros(2, 3), T.ones(2, 3)
local rand = T.randn(2, 3)                  -- standard normal
local arange = T.arange(0, 10, 2)           -- half-open: 0, 2, 4, 6, 8
check(T.equal(arange, T.tensor{0, 2, 4, 6, 8}), "arange(0, 10, 2) is [0, 2, 4, 6, 8]")
check(zeros.dtype == T.float32 and ones:sum():item() == 6, "factories default to float32")
check(rand.shape == T.Size{2, 3}, "randn(2, 3) has shape [2, 3]")
local t_float = T.ones(2, 2, {dtype = T.float32})
check(t_float.dtype == T.float32, "dtype option")
if T.cuda and T.cuda.is_available() then
  local t_gpu = T.zeros(2, 2, {device = "cuda"})
  check(tostring(t_gpu.device) == "cuda:0", "device option places a tensor on the GPU")
end

local a = T.tensor{1, 2, 3}
local shared, copied = T.Tensor(a), T.tensor(a)
check(shared.dtype == T.int64 and shared:data_ptr() == a:data_ptr(),
      "T.Tensor(t) shares t's storage, no copy")
check(copied:data_ptr() ~= a:data_ptr(), "T.tensor(t) copies")
check(T.Tensor(2, 3).dtype == T.float32, "T.Tensor(sizes) is default float")

print("== Indexing and slicing")
local m = T.arange(12):reshape(3, 4)
print(m)
check(T.equal(m[2], T.tensor{4, 5, 6, 7}), "m[2] is the second row")
check(T.equal(m[{ {}, 3 }], T.tensor{2, 6, 10}), "m[{{}, 3}] is the third column")
local corner = m[{ {2, 3}, {1, 2} }]        -- rows 2..3, columns 1..2 (inclusive)
check(T.equal(corner, T.tensor{{4, 5}, {8, 9}}), "ranges are inclusive and keep the axis")
corner[1][1] = -4
check(m[2][1]:item() == -4, "a slice is a view: writing it writes the original")
local independent = m[2]:clone()
independent[1] = 1000
check(m[2][1]:item() == -4, ":clone() gives an independent tensor")

print("== Advanced indexing and masks copy")
local rows = m[T.tensor{1, 3}]
check(T.equal(rows, T.tensor{{0, 1, 2, 3}, {8, 9, 10, 11}}), "index tensor selects rows 1 and 3")
rows[1][1] = 555
check(m[1][1]:item() == 0, "advanced indexing returns a copy")
local mask = m:gt(5)
local picked = m[mask]
check(T.equal(picked, T.tensor{6, 7, 8, 9, 10, 11}), "mask selection, in row-major order")
picked[1] = 0
check(m[2][3]:item() == 6, "mask selection returns a copy")

print("== Converting between tensors and foreign memory (NumPy's role)")
if has_ffi then
  -- t.numpy() -> t:data(): a typed pointer that shares memory
  local cpu_tensor = T.arange(5)
  local p = cpu_tensor:data()
  check(ffi.istype("int64_t *", p) and p[4] == 4, "t:data() is an int64_t* to the elements")
  p[0] = 42
  check(cpu_tensor[1]:item() == 42, "writing through the pointer changes the tensor")
  cpu_tensor[2] = 7
  check(p[1] == 7, "and writing the tensor changes what the pointer sees")

  -- torch.from_numpy(arr) -> T.from_ffi(arr): shares, always on the CPU
  local arr = ffi.new("int64_t[3]", {1, 2, 3})
  local tensor = T.from_ffi(arr)
  check(tostring(tensor.device) == "cpu" and tensor.dtype == T.int64, "from_ffi makes a CPU int64 tensor")
  arr[0] = 10
  check(tensor[1]:item() == 10, "the tensor sees changes to the array")

  -- torch.tensor(arr) copies
  local separate = T.tensor(tensor)
  arr[1] = 20
  check(separate[2]:item() == 2, "T.tensor(t) of foreign memory is a separate copy")

  print("== Memory sharing and its consequences")
  local ones3 = ffi.new("double[3]", {1, 1, 1})
  local shared3 = T.from_ffi(ones3)
  ones3[0] = 99
  print(shared3)                           -- tensor([99.,  1.,  1.], dtype=ember.float64)
  check(shared3[1]:item() == 99, "arr[0] = 99 shows in the tensor")

  -- gradients: detach before sharing memory
  local x = T.tensor({1.5}, {requires_grad = true})
  local ok, err = pcall(function() return x:data() end)
  check(not ok and err:find("Can't call data%(%) on Tensor that requires grad"),
        "data() on a tensor that requires grad is an error")
  if x.detach then
    local y = x:detach():data()
    check(y[0] == 1.5, "t:detach():data() works")
  end
else
  print("  (no LuaJIT FFI in this Lua: the FFI half is skipped; the .npy half follows)")
end

-- GPU tensors go to the CPU first
if T.cuda and T.cuda.is_available() then
  local gpu_tensor = T.zeros(2, {device = "cuda"})
  local ok = pcall(function() return gpu_tensor:data() end)
  check(not ok, "data() of a GPU tensor asks for :cpu() first")
  check(gpu_tensor:cpu():data() ~= nil, "after :cpu() it works")
end

print("== The same, through NumPy's files")
local f = tmpfile(".npy")
local saved = T.tensor({{1.5, 2.5}, {3.5, 4.5}}, {dtype = T.float64})
T.save_npy(f, saved)                        -- np.save
local loaded = T.load_npy(f)                -- np.load: a copy
loaded[1][1] = 0
check(T.load_npy(f)[1][1]:item() == 1.5, "a plain load is a copy of the file")
local mapped = T.load_npy(f, {mode = "r+"}) -- np.load(mmap_mode="r+"): shares the file
mapped[1][1] = -1
mapped = nil
collectgarbage()
check(T.load_npy(f)[1][1]:item() == -1, "a shared mapping writes through to the file")
os.remove(f)

print("== dtypes")
local doubles = T.tensor({1.5, 2.5}, {dtype = T.float64})   -- NumPy's float64 default
local floats = T.tensor(doubles, {dtype = T.float32})       -- what models expect
check(floats.dtype == T.float32 and floats[2]:item() == 2.5, "explicit dtype converts when copying")
check(T.tensor{1, 2}.dtype == T.int64, "integers default to int64, as in NumPy and PyTorch")
print("all seed checks passed")
