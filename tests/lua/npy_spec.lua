-- NumPy's files: .npy/.npz load and save against fixtures written by NumPy
-- (tests/fixtures/gen_npy.py), mapped loads, and malformed files.
local T = require "ember"
local files = require "filecheck"
local flat, values, readall, writeall, tmp = files.flat, files.values, files.readall, files.writeall, files.tmp

local FIX = "tests/fixtures/npy/"
local cases = dofile(FIX .. "cases.lua")

local function same_values(expected, got)
  assert.equal(#expected, #got)
  for i = 1, #expected do
    local e, g = expected[i], got[i]
    if e ~= g and not (e ~= e and g ~= g) then
      error(("value %d: expected %s, got %s"):format(i, tostring(e), tostring(g)), 2)
    end
  end
end

local function check_case(c, t)
  assert.equal(T[c.dtype], t.dtype)
  assert.same(c.shape, flat(t:size()))
  same_values(c.values, values(t))
  if c.fortran and #c.shape > 1 then
    assert.equal(1, t:stride(1))          -- column-major, as numpy holds it
    assert.is_false(t:is_contiguous())
  end
end

describe("load_npy", function()
  it("reads every fixture written by NumPy: each dtype, C and Fortran order, both byte orders", function()
    assert.is_true(#cases >= 30)
    for _, c in ipairs(cases) do
      local ok, err = pcall(function() check_case(c, T.load_npy(FIX .. c.file)) end)
      if not ok then error(c.file .. ": " .. tostring(err), 0) end
    end
  end)

  it("maps native-order files without copying; the other byte order is refused", function()
    local mapped = 0
    for _, c in ipairs(cases) do
      if c.file:find("_be%.npy$") then
        assert.has_error(function() T.load_npy(FIX .. c.file, {mmap = true}) end,
          ("load_npy: cannot map '%s': its data is in the other byte order; load it without mmap to convert"):format(FIX .. c.file))
      else
        check_case(c, T.load_npy(FIX .. c.file, {mmap = true}))
        mapped = mapped + 1
      end
    end
    assert.is_true(mapped >= 20)
  end)

  it("a copy-on-write mapping (mode 'r', the default) keeps writes in memory", function()
    local p = tmp(".npy")
    writeall(p, readall(FIX .. "f4_C_le.npy"))
    local before = readall(p)
    local t = T.load_npy(p, {mmap = true})
    t[1][1] = 1234
    assert.equal(1234, t[1][1]:item())
    t = nil
    collectgarbage()
    assert.equal(before, readall(p))
    local u = T.load_npy(p, {mode = "c"})
    u[1][1] = 5
    assert.equal(before, readall(p))
    os.remove(p)
  end)

  it("a shared mapping (mode 'r+') writes through to the file", function()
    local p = tmp(".npy")
    writeall(p, readall(FIX .. "i8_C_le.npy"))
    local t = T.load_npy(p, {mode = "r+"})
    local row = t[2]                    -- a view of the mapping
    row:fill_(77)
    t = nil; row = nil
    collectgarbage()
    local back = T.load_npy(p)
    assert.same({77, 77, 77, 77}, back[2]:tolist())
    os.remove(p)
  end)

  it("reads version 2.0 and 3.0 headers, 0-d and empty arrays", function()
    assert.same({0, 1, 2, 3, 4}, T.load_npy(FIX .. "i4_v2.npy"):tolist())
    assert.same({0, 1, 2, 3, 4}, T.load_npy(FIX .. "i4_v3.npy"):tolist())
    local s = T.load_npy(FIX .. "f8_scalar.npy")
    assert.equal(0, s:dim()); assert.equal(2.5, s:item())
    local e = T.load_npy(FIX .. "i8_empty.npy")
    assert.same({0, 3}, flat(e:size()))
  end)
end)

describe("save_npy", function()
  it("writes files byte-identical to numpy.save, C and Fortran order", function()
    for _, name in ipairs { "f4_C_le.npy", "f4_F_le.npy", "b1_C_na.npy", "f2_F_le.npy",
                            "i8_C_le.npy", "u1_vector.npy", "f8_scalar.npy", "i8_empty.npy",
                            "f4_3d_F.npy", "c8_C_le.npy", "c16_F_le.npy" } do
      local p = tmp(".npy")
      T.save_npy(p, T.load_npy(FIX .. name))
      assert.equal(readall(FIX .. name), readall(p), name)
      os.remove(p)
    end
  end)

  it("round-trips every dtype NumPy has, and writes strided views as copies", function()
    for _, dt in ipairs { T.bool, T.uint8, T.int8, T.int16, T.int32, T.int64, T.float16, T.float32, T.float64,
                          T.complex64, T.complex128 } do
      local src = T.tensor({{1, 0, 3}, {0, 5, 6}}, {dtype = dt})
      if dt.is_complex then src = src + T.complex(T.ones(2, 3) * 0.5, T.ones(2, 3) * -2):to(dt) end
      local p = tmp(".npy")
      T.save_npy(p, src)
      local back = T.load_npy(p)
      assert.equal(dt, back.dtype)
      assert.same(src:tolist(), back:tolist())
      os.remove(p)
    end
    if not pcall(require, "ffi") then return end -- the strided view below needs the FFI
    local base = T.tensor{{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}
    -- rows 1 and 3, columns 2 and 4: a strided view made through the FFI
    local view = T.from_ffi(base:data() + 1, {2, 2}, {strides = {8, 2}, owner = base})
    local p = tmp(".npy")
    T.save_npy(p, view)
    assert.same({{2, 4}, {10, 12}}, T.load_npy(p):tolist())
    os.remove(p)
  end)

  it("refuses bfloat16, which NumPy lacks", function()
    assert.has_error(function() T.save_npy(tmp(), T.zeros(2, {dtype = T.bfloat16})) end,
      "save_npy: NumPy has no bfloat16 dtype; convert first (e.g. t:float())")
  end)
end)

describe("npz", function()
  it("loads archives written by numpy.savez and savez_compressed", function()
    local s = T.load_npz(FIX .. "stored.npz")
    assert.same({{0, 1, 2}, {3, 4, 5}}, s.x:tolist())
    assert.equal(T.float32, s.x.dtype)
    assert.same({true, false, true}, s.flags:tolist())
    local d = T.load_npz(FIX .. "deflated.npz")
    assert.equal(T.int16, d.big.dtype)
    assert.equal(100, d.big:numel())
    assert.equal(99 % 7, d.big[100]:item())
    assert.same({{0, 1, 2}, {3, 4, 5}}, d.f:tolist())
    local pos = T.load_npz(FIX .. "positional.npz")
    assert.same({0, 1, 2}, pos.arr_0:tolist())
    assert.same({1, 1}, pos.arr_1:tolist())
  end)

  it("save_npz round-trips, stored and compressed; positions become arr_0, arr_1", function()
    for _, compressed in ipairs { false, true } do
      local p = tmp(".npz")
      T.save_npz(p, {w = T.zeros(50, 4), b = T.tensor{1, 2, 3}}, {compressed = compressed})
      local z = T.load_npz(p)
      assert.same({50, 4}, flat(z.w:size()))
      assert.same({1, 2, 3}, z.b:tolist())
      os.remove(p)
    end
    local p = tmp(".npz")
    T.save_npz(p, {T.tensor{1.5}, T.tensor{true}})
    local z = T.load_npz(p)
    assert.same({1.5}, z.arr_0:tolist())
    assert.same({true}, z.arr_1:tolist())
    os.remove(p)
  end)

  it("compressed archives are smaller for redundant data", function()
    local a, b = tmp(".npz"), tmp(".npz")
    T.save_npz(a, {z = T.zeros(1000)})
    T.save_npz(b, {z = T.zeros(1000)}, {compressed = true})
    assert.is_true(#readall(b) < #readall(a) / 10)
    os.remove(a); os.remove(b)
  end)
end)

describe("malformed files", function()
  local function with_bytes(s, fn)
    local p = tmp(".npy")
    writeall(p, s)
    local ok, err = pcall(fn, p)
    os.remove(p)
    assert.is_false(ok)
    return tostring(err)
  end

  it("bad magic, truncated header, truncated data, a header that lies", function()
    local good = readall(FIX .. "f8_C_le.npy")
    assert.matches("not a .npy file %(bad magic%)", with_bytes("hello world", T.load_npy))
    assert.matches("not a .npy file", with_bytes("", T.load_npy))
    assert.matches("truncated header", with_bytes(good:sub(1, 40), T.load_npy))
    assert.matches("truncated data: shape %[3, 4%] of float64 needs 96 bytes, the file holds 95",
      with_bytes(good:sub(1, -2), T.load_npy))
    local lying = good:gsub("%(3, 4%)", "(9, 4)")
    assert.matches("truncated data: shape %[9, 4%]", with_bytes(lying, T.load_npy))
    assert.matches("truncated data", with_bytes(lying, function(p) return T.load_npy(p, {mmap = true}) end))
    local huge = good:gsub("%(3, 4%)", "(99999999999, 9999999999)")
    assert.matches("load_npy:", with_bytes(huge, T.load_npy))
    local garbage = good:gsub("'shape'", "'shapf'")
    assert.matches("malformed header", with_bytes(garbage, T.load_npy))
    assert.matches("unsupported .npy format version 9", with_bytes(good:sub(1, 6) .. "\9" .. good:sub(8), T.load_npy))
  end)

  it("unsupported dtypes are named", function()
    assert.has_error(function() T.load_npy(FIX .. "bad_u2.npy") end,
      "load_npy: unsupported dtype '<u2' (ember reads bool, uint8, int8, int16, int32, int64, float16, float32, float64, complex64 and complex128)")
    assert.matches("unsupported dtype '<M8%[D%]'", select(2, pcall(T.load_npy, FIX .. "bad_m8.npy")))
    assert.matches("unsupported dtype %(structured", select(2, pcall(T.load_npy, FIX .. "bad_struct.npy")))
  end)

  it("missing files and bad options", function()
    assert.matches("load_npy: cannot open '/nonexistent/x.npy'", select(2, pcall(T.load_npy, "/nonexistent/x.npy")))
    assert.has_error(function() T.load_npy(FIX .. "f4_C_le.npy", {mode = "w"}) end,
      "load_npy: unknown mode 'w' (expected 'r', 'c' or 'r+')")
    assert.has_error(function() T.load_npy(FIX .. "f4_C_le.npy", {mmapp = true}) end,
      "load_npy: unknown option 'mmapp' (expected one of: mmap, mode)")
  end)

  it("corrupt archives: truncated, flipped bytes, not a zip", function()
    local good = readall(FIX .. "deflated.npz")
    assert.matches("load_npz: not a zip archive", with_bytes("PK\3\4 nothing else here at all", T.load_npz))
    assert.matches("load_npz:", with_bytes(good:sub(1, #good - 30), T.load_npz))
    assert.matches("load_npz:", with_bytes(good:sub(1, 200), T.load_npz))
    -- flip a byte inside the first member's compressed data
    local flipped = good:sub(1, 80) .. string.char((good:byte(81) + 1) % 256) .. good:sub(82)
    assert.matches("load_npz: member '.*'", with_bytes(flipped, T.load_npz))
    local stored = readall(FIX .. "stored.npz")
    local i = stored:find("\147NUMPY", 1, true)
    local bad = stored:sub(1, i + 60) .. "X" .. stored:sub(i + 62)
    assert.matches("fails its CRC check", with_bytes(bad, T.load_npz))
  end)
end)

describe("NumPy reads ember's files", function()
  local has_numpy = os.execute("env -u LD_PRELOAD /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1")
  has_numpy = has_numpy == true or has_numpy == 0
  local run = has_numpy and it or pending
  run("identically (tests/check_numpy_roundtrip.py, when /usr/bin/python3 has NumPy)", function()
    local dir = tmp("_npy")
    os.execute("mkdir -p " .. dir)
    -- every fixture, loaded and saved again by ember; the script compares
    -- each with the fixture NumPy wrote (dtype, shape, order, values, bytes)
    local members = {}
    for _, c in ipairs(cases) do
      local t = T.load_npy(FIX .. c.file)
      T.save_npy(dir .. "/" .. c.file, t)
      members[c.file:gsub("%.npy$", "")] = t
    end
    T.save_npz(dir .. "/stored.npz", members)
    T.save_npz(dir .. "/deflated.npz", members, {compressed = true})
    local log = dir .. ".log"
    local rc = os.execute("env -u LD_PRELOAD /usr/bin/python3 tests/check_numpy_roundtrip.py " .. FIX .. " " .. dir
                          .. " >" .. log .. " 2>&1")
    local out = readall(log)
    os.execute("rm -rf " .. dir .. " " .. log)
    assert.is_true(rc == true or rc == 0, out)
    assert.matches(#cases .. " files checked, 0 failures", out)
  end)
end)
