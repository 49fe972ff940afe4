-- Sharing memory with the outside: t:data() and T.from_ffi (LuaJIT's FFI),
-- DLPack capsules, T.tensor copying, and ember.h under ffi.cdef.
local T = require "ember"
local has_ffi, ffi = pcall(require, "ffi")
local ffi_it = has_ffi and it or pending
if has_ffi then -- DLPack v0.6's structs, as a consumer outside ember declares them
  ffi.cdef[[
    typedef struct { int device_type; int device_id; } ember_test_DLDevice;
    typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } ember_test_DLDataType;
    typedef struct {
      void *data; ember_test_DLDevice device; int ndim; ember_test_DLDataType dtype;
      int64_t *shape; int64_t *strides; uint64_t byte_offset;
    } ember_test_DLTensor;
    typedef struct ember_test_DLManagedTensor {
      ember_test_DLTensor dl_tensor; void *manager_ctx;
      void (*deleter)(struct ember_test_DLManagedTensor *);
    } ember_test_DLManagedTensor;
  ]]
end
local noffi_it = has_ffi and pending or it

local function anchors()
  collectgarbage(); collectgarbage(); collectgarbage()
  return T._C._ffi_anchors()
end

describe("t:data()", function()
  ffi_it("is a typed pointer to the first element that shares the storage", function()
    local t = T.tensor({{1, 2, 3}, {4, 5, 6}}, {dtype = T.float32})
    local p = t:data()
    assert.is_true(ffi.istype("float *", p))
    assert.equal(6, p[5])
    p[0] = 42
    assert.equal(42, t[1][1]:item())
    local row = t[2]                     -- a view: its pointer is at element 4
    local q = row:data()
    assert.equal(4, q[0])
    q[2] = -1
    assert.equal(-1, t[2][3]:item())
    assert.equal(tonumber(ffi.cast("uintptr_t", p)) + 3 * 4, tonumber(ffi.cast("uintptr_t", q)))
  end)

  ffi_it("has the C type of each dtype (half types are uint16_t bits)", function()
    local expect = {
      {T.bool, "bool *"}, {T.uint8, "uint8_t *"}, {T.int8, "int8_t *"},
      {T.int16, "int16_t *"}, {T.int32, "int32_t *"}, {T.int64, "int64_t *"},
      {T.float16, "uint16_t *"}, {T.bfloat16, "uint16_t *"},
      {T.float32, "float *"}, {T.float64, "double *"},
    }
    for _, e in ipairs(expect) do
      assert.is_true(ffi.istype(e[2], T.zeros(2, {dtype = e[1]}):data()), tostring(e[1]))
    end
    local h = T.tensor({1.0, -2.0}, {dtype = T.float16}):data()
    assert.equal(0x3c00, h[0])           -- IEEE binary16 1.0
    assert.equal(0xc000, h[1])           -- -2.0
    local i = T.tensor({2^53}, {dtype = T.int64}):data()
    i[0] = i[0] + 1                      -- exact int64 access
    assert.equal("9007199254740993LL", tostring(i[0]))
  end)

  ffi_it("keeps the memory alive while the pointer is reachable", function()
    local p = T.arange and T.zeros(1000):data() or T.zeros(1000):data()
    collectgarbage(); collectgarbage()
    p[999] = 7                            -- the tensor is still alive
    assert.equal(7, p[999])
  end)

  ffi_it("refuses tensors that require grad", function()
    local x = T.tensor({1.5}, {requires_grad = true})
    assert.has_error(function() x:data() end,
      "Can't call data() on Tensor that requires grad. Use t:detach():data() instead.")
  end)
end)

describe("T.from_ffi", function()
  ffi_it("wraps an FFI array without copying, both ways", function()
    local arr = ffi.new("double[6]", {1, 2, 3, 4, 5, 6})
    local t = T.from_ffi(arr, {2, 3})
    assert.equal(T.float64, t.dtype)
    assert.equal("cpu", tostring(t.device))
    assert.same({{1, 2, 3}, {4, 5, 6}}, t:tolist())
    arr[0] = 99                           -- the seed's arr[0] = 99
    assert.equal(99, t[1][1]:item())
    t[2][3] = -6
    assert.equal(-6, arr[5])
    assert.equal(tonumber(ffi.cast("uintptr_t", arr)), t:data_ptr())
  end)

  ffi_it("infers the dtype from the pointer type and the size from an array", function()
    assert.equal(T.int32, T.from_ffi(ffi.new("int32_t[4]")).dtype)
    assert.equal(4, T.from_ffi(ffi.new("int32_t[4]")):numel())
    assert.equal(T.uint8, T.from_ffi(ffi.new("uint8_t[2]"), 2).dtype)
    assert.equal(T.int64, T.from_ffi(ffi.new("int64_t[2]"), {2}).dtype)
    assert.same({2, 3}, T.from_ffi(ffi.new("int8_t[6]"), T.Size{2, 3}):size())
    assert.equal(T.bool, T.from_ffi(ffi.new("bool[2]"), 2).dtype)
    local h = ffi.new("uint16_t[2]", {0x3c00, 0x4000})
    assert.same({1, 2}, T.from_ffi(h, 2, {dtype = T.float16}):double():tolist())
    local v = ffi.cast("void *", ffi.new("float[3]", {1, 2, 3}))
    assert.equal(T.float32, T.from_ffi(v, 3, {dtype = "float32"}).dtype)
  end)

  ffi_it("takes strides in elements: a column of a row-major buffer", function()
    local arr = ffi.new("float[6]", {0, 1, 2, 3, 4, 5})
    local col = T.from_ffi(arr + 1, {2}, {strides = {3}, owner = arr})
    assert.same({1, 4}, col:tolist())
    assert.same({3}, col:stride())
  end)

  ffi_it("keeps the owner alive until the last view dies, then lets it go", function()
    local base = anchors()
    local weak = setmetatable({}, {__mode = "v"})
    local holder = {}
    -- in a function of its own, so no dead stack slot keeps anything alive
    local function use()
      local arr = ffi.new("float[1024]")
      weak.arr = arr
      local t = T.from_ffi(arr, {32, 32})
      holder.view = t[5]
      arr, t = nil, nil
    end
    use()
    assert.equal(base + 1, anchors())
    local function check()                 -- anchored: the view still lives
      assert.is_true(weak.arr ~= nil)
      holder.view[1] = 3
      assert.equal(3, weak.arr[4 * 32])
    end
    check()
    holder.view = nil
    assert.equal(base, anchors())      -- the registry no longer holds the array
    -- (whether the array is then collected at once is up to LuaJIT: a cdata
    -- passed to ffi.typeof can linger in a dead stack slot; the next test
    -- checks collection with an owner that is a plain table)
  end)

  ffi_it("an explicit owner is anchored instead of the pointer", function()
    local base = anchors()
    local weak = setmetatable({}, {__mode = "k"})
    local holder = {}
    local function use()
      local owner = {}
      weak[owner] = true
      local buf = ffi.new("int16_t[4]", {1, 2, 3, 4})
      holder.t = T.from_ffi(ffi.cast("int16_t *", buf), 4, {owner = owner})
      holder.buf = buf                     -- the memory itself stays valid
    end
    use()
    assert.equal(base + 1, anchors())
    assert.is_true(next(weak) ~= nil)
    assert.same({1, 2, 3, 4}, holder.t:tolist())
    holder.t = nil
    assert.equal(base, anchors())
    collectgarbage(); collectgarbage()
    assert.is_true(next(weak) == nil)
  end)

  ffi_it("rejects bad pointers, dtypes, sizes and strides", function()
    local arr = ffi.new("float[6]")
    assert.has_error(function() T.from_ffi(nil, {2}) end,
      "from_ffi: expected an FFI pointer or array for argument #1, got nil")
    assert.has_error(function() T.from_ffi(ffi.cast("float *", nil), {2}) end, "from_ffi: NULL pointer")
    assert.has_error(function() T.from_ffi(arr, {2}, {dtype = T.float64}) end,
      "from_ffi: dtype ember.float64 does not match the pointer's element type float")
    assert.has_error(function() T.from_ffi(ffi.cast("void *", arr), {2}) end,
      "from_ffi: a void pointer needs the dtype option")
    assert.has_error(function() T.from_ffi(ffi.new("uint32_t[2]"), 2) end,
      "from_ffi: unsupported element type 'unsigned int'")
    assert.has_error(function() T.from_ffi(ffi.cast("float *", arr), nil) end,
      "from_ffi: sizes are required for a pointer")
    assert.has_error(function() T.from_ffi(arr, {2, 4}) end,
      "from_ffi: float32 elements need 32 bytes but the memory holds 24")
    assert.has_error(function() T.from_ffi(arr, {2, 2}, {strides = {5, 1}}) end,
      "from_ffi: float32 elements need 28 bytes but the memory holds 24")
    assert.has_error(function() T.from_ffi(arr, {2, 3}, {strides = {3}}) end,
      "from_ffi: 1 strides given for 2 sizes")
    assert.has_error(function() T.from_ffi(arr, {2}, {strides = {-1}}) end,
      "from_ffi: negative stride -1 (strides[1]) is not supported")
    assert.has_error(function() T.from_ffi(arr, {-2}) end,
      "from_ffi: negative dimension -2 in size [-2]")
    local ok, err = pcall(T.from_ffi, ffi.cast("void *", ffi.cast("char *", arr) + 1), {1}, {dtype = T.float32})
    assert.is_false(ok)
    assert.matches("from_ffi: pointer 0x%x+ is not aligned for float32 %(4 bytes%)", err)
    assert.has_error(function() T.from_ffi(arr, {2}, {sizes = 3}) end, "from_ffi: unknown option 'sizes'")
    assert.equal(0, T.from_ffi(ffi.cast("float *", nil), {0}):numel())
  end)
end)

describe("without LuaJIT's FFI (PUC Lua 5.4)", function()
  noffi_it("data() and from_ffi say what they need", function()
    assert.has_error(function() T.zeros(2):data() end,
      "data: needs LuaJIT's FFI (this Lua has no 'ffi' module)")
    assert.has_error(function() T.from_ffi(nil, {2}) end,
      "from_ffi: needs LuaJIT's FFI (this Lua has no 'ffi' module)")
  end)

  noffi_it("math.type decides integer versus float in T.tensor", function()
    assert.equal(T.int64, T.tensor{1, 2}.dtype)
    assert.equal(T.float32, T.tensor{1.0, 2}.dtype)
    assert.equal(T.float32, T.tensor(3.0).dtype)
    assert.equal(T.int64, T.full({2}, 3).dtype)
    assert.equal(T.float32, T.full({2}, 3.0).dtype)
  end)
end)

describe("T.tensor of a tensor", function()
  it("copies, as torch.tensor(array) does; T.Tensor(t) shares", function()
    local a = T.tensor{1.5, 2.5}
    local c, s = T.tensor(a), T.Tensor(a)
    c[1] = 10
    assert.equal(1.5, a[1]:item())
    s[1] = 20
    assert.equal(20, a[1]:item())
    assert.are_not.equal(a:data_ptr(), c:data_ptr())
    assert.equal(a:data_ptr(), s:data_ptr())
    assert.equal(T.float64, T.tensor(a, {dtype = T.float64}).dtype)
  end)
end)

describe("DLPack", function()
  it("a capsule shares memory and is consumed once", function()
    local t = T.tensor({{1, 2}, {3, 4}}, {dtype = T.int32})
    local cap = t:to_dlpack()
    assert.is_false(cap:consumed())
    local u = T.from_dlpack(cap)
    assert.is_true(cap:consumed())
    assert.equal(t:data_ptr(), u:data_ptr())
    assert.same({2, 2}, u:size())
    assert.equal(T.int32, u.dtype)
    u[2][2] = 40
    assert.equal(40, t[2][2]:item())
    assert.has_error(function() T.from_dlpack(cap) end,
      "from_dlpack: the capsule was already consumed (a capsule can be consumed once)")
    assert.equal("ember.dlpack_capsule (consumed)", tostring(cap))
  end)

  it("keeps the storage alive through the capsule and the imported tensor", function()
    local cap = T.arange and nil
    do
      local t = T.tensor({5, 6, 7}, {dtype = T.float64})
      cap = t[2]:to_dlpack()              -- a view: offset and strides travel
    end
    collectgarbage(); collectgarbage()
    local u = T.from_dlpack(cap)
    cap = nil
    collectgarbage(); collectgarbage()
    assert.equal(6, u:item())
  end)

  it("round-trips every dtype, strides included", function()
    for _, dt in ipairs { T.bool, T.uint8, T.int8, T.int16, T.int32, T.int64,
                          T.float16, T.bfloat16, T.float32, T.float64 } do
      local t = T.tensor({{1, 0, 1}, {0, 1, 1}}, {dtype = dt})
      local u = T.from_dlpack(t:to_dlpack())
      assert.equal(dt, u.dtype)
      assert.same(t:tolist(), u:tolist())
      assert.same(t:stride(), u:stride())
    end
  end)

  ffi_it("a capsule released to the FFI comes back as a DLManagedTensor pointer", function()
    local t = T.tensor({{1, 2, 3}, {4, 5, 6}}, {dtype = T.int16})
    local cap = t:to_dlpack()
    local raw = cap:release()
    assert.is_true(cap:consumed())
    assert.has_error(function() cap:release() end,
      "release: the capsule was already consumed (a capsule can be consumed once)")
    -- a consumer outside ember reads the struct through the FFI
    local m = ffi.cast("ember_test_DLManagedTensor *", raw)
    assert.equal(2, m.dl_tensor.ndim)
    assert.equal(3, tonumber(m.dl_tensor.shape[1]))
    assert.equal(0, m.dl_tensor.dtype.code)       -- kDLInt
    assert.equal(16, m.dl_tensor.dtype.bits)
    assert.equal(t:data_ptr(), tonumber(ffi.cast("uintptr_t", m.dl_tensor.data)))
    local u = T.from_dlpack(m)                      -- and hands it back to ember
    assert.same({{1, 2, 3}, {4, 5, 6}}, u:tolist())
    assert.equal(t:data_ptr(), u:data_ptr())
    assert.has_error(function() T.from_dlpack(ffi.cast("void *", nil)) end,
      "from_dlpack: NULL or invalid DLManagedTensor pointer")
    local v = T.from_dlpack(T.zeros(3):to_dlpack():release())  -- the light userdata itself
    assert.same({0, 0, 0}, v:tolist())
  end)

  ffi_it("refuses a producer's tensor on a GPU or of a dtype ember lacks, leaving it to the producer", function()
    local deleted = 0
    local data = ffi.new("float[4]")
    local shape = ffi.new("int64_t[1]", {4})
    local m = ffi.new("ember_test_DLManagedTensor")
    m.dl_tensor.data = data
    m.dl_tensor.device.device_type = 2              -- kDLCUDA
    m.dl_tensor.ndim = 1
    m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.dtype.lanes = 2, 32, 1
    m.dl_tensor.shape = shape
    local cb = ffi.cast("void (*)(ember_test_DLManagedTensor *)", function() deleted = deleted + 1 end)
    m.deleter = cb
    assert.has_error(function() T.from_dlpack(m) end,
      "from_dlpack: unsupported device cuda:0 (ember imports CPU memory only)")
    m.dl_tensor.device.device_type = 1              -- kDLCPU
    m.dl_tensor.dtype.code = 5                      -- kDLComplex
    assert.has_error(function() T.from_dlpack(m) end,
      "from_dlpack: unsupported dtype (code 5, bits 32, lanes 1)")
    m.dl_tensor.dtype.code = 1                      -- kDLUInt 32: ember has no uint32
    assert.has_error(function() T.from_dlpack(m) end,
      "from_dlpack: unsupported dtype (code 1, bits 32, lanes 1)")
    assert.equal(0, deleted)                        -- never taken, never deleted
    m.dl_tensor.dtype.code = 2                      -- float32 on the CPU: accepted
    local t = T.from_dlpack(m)
    data[2] = 5
    assert.equal(5, t[3]:item())
    t = nil
    collectgarbage(); collectgarbage()
    assert.equal(1, deleted)                        -- once, when the view died
    cb:free()
  end)

  it("T.from_dlpack(t) shares t's memory; other values are refused", function()
    local t = T.zeros(3)
    assert.equal(t:data_ptr(), T.from_dlpack(t):data_ptr())
    assert.has_error(function() T.from_dlpack({}) end,
      "from_dlpack: expected a DLPack capsule (from t:to_dlpack()), got table")
  end)
end)

describe("ember.h", function()
  ffi_it("loads in LuaJIT's ffi.cdef and matches the library", function()
    local f = assert(io.open("engine/include/ember.h"))
    local src = f:read("*a")
    f:close()
    -- drop the C++ guards, then every preprocessor line
    src = src:gsub("#ifdef __cplusplus.-#endif", "")
    src = src:gsub("\n#[^\n]*", "\n")
    ffi.cdef(src)
    -- the shared library next to the Lua module exports what the header says
    local so = package.searchpath("ember.core", package.cpath)
    local lib = ffi.load((so:gsub("ember/core%.so$", "libember.so")))
    assert.equal(16, tonumber(lib.EM_MAX_DIMS))
    assert.equal(4, tonumber(lib.em_dtype_size(lib.EM_FLOAT32)))
    assert.equal("float16", ffi.string(lib.em_dtype_name(lib.EM_FLOAT16)))
    local out = ffi.new("em_tensor *[1]")
    local sizes = ffi.new("int64_t[2]", {2, 3})
    assert.equal(lib.EM_OK, lib.em_zeros(2, sizes, lib.EM_FLOAT64, lib.em_cpu(), out))
    assert.equal(6, tonumber(lib.em_tensor_numel(out[0])))
    lib.em_tensor_release(out[0])
    assert.equal(lib.EM_E_RUNTIME, lib.em_npy_load("/nonexistent.npy", lib.EM_NPY_READ, out))
    assert.matches("load_npy: cannot open '/nonexistent.npy'", ffi.string(lib.em_last_error()))
  end)
end)

describe("the seed walkthrough", function()
  -- examples/seeds/creation_indexing_interop.lua uses creation, views,
  -- indexing and math from the other areas; it runs once they are there
  local ready = pcall(function()
    assert(T.equal and T.randn)
    local m = T.arange(12):reshape(3, 4)
    assert(m[{ {}, 3 }] and m[m:gt(5)] and m:sum())
  end)
  local run = ready and it or pending
  run("examples/seeds/creation_indexing_interop.lua runs and its checks hold", function()
    local saved = print
    print = function() end
    local ok, err = pcall(dofile, "examples/seeds/creation_indexing_interop.lua")
    print = saved
    assert(ok, err)
  end)
end)
