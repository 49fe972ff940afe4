-- Differences from NumPy 1.24 (np.save/np.load/np.savez) and the
-- safetensors reference found by the seventh round of differential tests
-- of the file formats, each with the reference's behaviour in a comment;
-- then cases that pin what agreed (hand-made files other writers produce).
local T = require "ember"
local U = require "specutil"
local files = require "filecheck"
local err = U.err
local readall, writeall, tmp = files.readall, files.writeall, files.tmp

local function u16(n) return string.char(n % 256, math.floor(n / 256) % 256) end
local function u32(n) return u16(n % 65536) .. u16(math.floor(n / 65536)) end
local function u64(n) return u32(n % 4294967296) .. u32(math.floor(n / 4294967296)) end

-- a .npy file with the given header dict text (padded as numpy pads, to
-- `align` bytes, ending in '\n') and data bytes
local function npy(dict, data, opts)
  opts = opts or {}
  local major, minor = opts.major or 1, opts.minor or 0
  local pre = major == 1 and 10 or 12
  local align = opts.align or 64
  local h = dict .. string.rep(" ", (align - (pre + #dict + 1) % align) % align) .. "\n"
  local len = major == 1 and u16(#h) or u32(#h)
  local p = tmp(".npy")
  writeall(p, "\147NUMPY" .. string.char(major, minor) .. len .. h .. (data or ""))
  return p
end

local F012 = "\0\0\0\0" .. "\0\0\128\63" .. "\0\0\0\64"  -- float32 0, 1, 2

local function vals(t) return U.flat(t:double()) end

describe("difftest round 7: .npy/.npz, safetensors and T.save against their references", function()
  it("load_npy takes numpy's other spellings of a descr: dtype names and kind+size without a byte order", function()
    -- np.load reads the descr through np.dtype(): 'float32', 'bool', 'f4' (native order)
    -- and 'complex128' load; ember refused them as unsupported dtypes
    local t = T.load_npy(npy("{'descr': 'float32', 'fortran_order': False, 'shape': (3,), }", F012))
    assert.equal(T.float32, t.dtype); assert.same({0, 1, 2}, vals(t))
    t = T.load_npy(npy("{'descr': 'f4', 'fortran_order': False, 'shape': (3,), }", F012))
    assert.equal(T.float32, t.dtype); assert.same({0, 1, 2}, vals(t))
    t = T.load_npy(npy("{'descr': 'bool', 'fortran_order': False, 'shape': (3,), }", "\1\0\1"))
    assert.equal(T.bool, t.dtype); assert.same({true, false, true}, U.flat(t))
    t = T.load_npy(npy("{'descr': 'int16', 'fortran_order': False, 'shape': (2,), }", "\255\255\2\0"))
    assert.equal(T.int16, t.dtype); assert.same({-1, 2}, vals(t))
    t = T.load_npy(npy("{'descr': 'complex64', 'fortran_order': False, 'shape': (1,), }", "\0\0\128\63\0\0\0\64"))
    assert.equal(T.complex64, t.dtype)
    -- the dtypes ember lacks are still named, as written in the file
    err(function() T.load_npy(npy("{'descr': 'u2', 'fortran_order': False, 'shape': (1,), }", "\0\0")) end,
      "load_npy: unsupported dtype 'u2' (ember reads bool")
    err(function() T.load_npy(npy("{'descr': 'float128', 'fortran_order': False, 'shape': (1,), }", string.rep("\0", 16))) end,
      "load_npy: unsupported dtype 'float128'")
  end)

  it("load_npy refuses format versions numpy does not know (1.1, 2.5)", function()
    -- numpy: ValueError: we only support format version (1,0), (2,0), and (3,0), not (1, 1)
    -- ember ignored the minor version and loaded the file
    local dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
    err(function() T.load_npy(npy(dict, F012, {minor = 1})) end, "load_npy: unsupported .npy format version 1.1")
    err(function() T.load_npy(npy(dict, F012, {major = 2, minor = 5})) end, "load_npy: unsupported .npy format version 2.5")
    err(function() T.load_npy(npy(dict, F012, {major = 4})) end, "load_npy: unsupported .npy format version 4.0")
    assert.same({0, 1, 2}, vals(T.load_npy(npy(dict, F012, {major = 3}))))
  end)

  it("save_npz marks a non-ASCII member name as UTF-8, as Python's zipfile does", function()
    -- np.savez('x.npz', **{'ünï': a}) sets flag bit 11 in both headers, and np.load of
    -- ember's archive listed the name as CP437 mojibake ('├╝n├»') without it
    local p = tmp(".npz")
    T.save_npz(p, {["ünï"] = T.ones(2)})
    local s = readall(p)
    assert.equal("PK\3\4", s:sub(1, 4))
    assert.equal(0x0800, s:byte(7) + 256 * s:byte(8))        -- local header flags
    local cd = s:find("PK\1\2", 1, true)
    assert.equal(0x0800, s:byte(cd + 8) + 256 * s:byte(cd + 9)) -- central directory flags
    assert.same({1, 1}, vals(T.load_npz(p)["ünï"]))
    -- an ASCII name keeps flags 0 (numpy's own archives)
    T.save_npz(p, {["a/b.c"] = T.ones(2)})
    s = readall(p)
    assert.equal(0, s:byte(7) + 256 * s:byte(8))
    os.remove(p)
  end)

  it("save_npz names the member it cannot write", function()
    -- ember said "save_npy: NumPy has no bfloat16 dtype" without saying which member
    local p = tmp(".npz")
    err(function() T.save_npz(p, {good = T.ones(2), w = T.ones(2):bfloat16()}) end,
      "save_npz: member 'w': NumPy has no bfloat16 dtype; convert first")
    os.remove(p)
  end)

  -- what agreed with NumPy: headers other writers produce
  it("load_npy reads headers as np.load does: key order, quotes, padding, Python 2 longs, trailing bytes", function()
    local cases = {
      "{'shape': (3,), 'fortran_order': False, 'descr': '<f4'}",
      '{"descr": "<f4", "fortran_order": False, "shape": (3,)}',
      "{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 3 , ) }",
      "{'descr':\t'<f4',\t'fortran_order':\tFalse,\t'shape':\t(3L,),\t}",
      "{'descr': '=f4', 'fortran_order': True, 'shape': (3,), }",
    }
    for _, d in ipairs(cases) do
      assert.same({0, 1, 2}, vals(T.load_npy(npy(d, F012))))
      assert.same({0, 1, 2}, vals(T.load_npy(npy(d, F012, {align = 16}))))  -- numpy < 1.9's padding
    end
    -- bytes after the data are ignored (np.load reads count elements)
    assert.same({0, 1, 2}, vals(T.load_npy(npy(cases[1], F012 .. "junk"))))
    -- np.load refuses these too
    err(function() T.load_npy(npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }", F012)) end, "bad fortran_order")
    err(function() T.load_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': [3], }", F012)) end, "bad shape")
    err(function() T.load_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", F012)) end, "unexpected key 'x'")
    err(function() T.load_npy(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", F012)) end,
      "truncated data: shape [4] of float32 needs 16 bytes, the file holds 12")
    err(function() T.load_npy(npy("{'descr': [('', '<f4')], 'fortran_order': False, 'shape': (3,), }", F012)) end,
      "unsupported dtype (structured")
  end)

  it("safetensors: any JSON order of the entries, __metadata__ null, an unpadded header", function()
    local function st(h, data)
      local p = tmp(".safetensors")
      writeall(p, u64(#h) .. h .. data)
      return p
    end
    local two = "\0\0\128\63\0\0\0\64"
    local r, m = T.load_safetensors(st('{"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', two))
    assert.same({1}, vals(r.a)); assert.same({2}, vals(r.b)); assert.same({}, m)
    r, m = T.load_safetensors(st('{"__metadata__":null,"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', two))
    assert.same({1, 2}, vals(r.x)); assert.same({}, m)
    -- an unpadded header loads; mapping refuses the misaligned tensor
    local p = st('{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', two)
    assert.same({1, 2}, vals(T.load_safetensors(p).x))
    err(function() T.load_safetensors(p, {mmap = true}) end, "its data is not aligned for F32; load it without mmap")
    -- no tensors at all: the reference writes '{}' padded to 8
    local q = tmp(".safetensors")
    T.save_safetensors(q, {})
    assert.equal(u64(8) .. "{}      ", readall(q))
    assert.is_nil(next((T.load_safetensors(q))))
  end)

  it("T.save keeps views of one storage sharing after T.load, complex dtypes included", function()
    -- torch.save/torch.load: views saved together share the storage after loading
    local p = tmp(".ember")
    local base = T.arange(0, 12):double():view(3, 4)
    local c = T.complex(T.tensor{1.5, 2}, T.tensor{-1.0, 0.5})
    T.save(p, {base = base, views = {base[2], base:t(), {deep = base:view(12):narrow(1, 2, 4)}}, c = c, c2 = c:to(T.complex128)})
    local r = T.load(p)
    r.base[2][1] = 100
    assert.equal(100, r.views[1][1]:item())
    assert.equal(100, r.views[2][1][2]:item())
    assert.same({1, 4}, {r.views[2]:stride(1), r.views[2]:stride(2)})
    r.base[1][3] = -1
    assert.equal(-1, r.views[3].deep[2]:item())
    assert.equal(T.complex64, r.c.dtype); assert.equal(T.complex128, r.c2.dtype)
    assert.is_true(T.equal(r.c, c))
    os.remove(p)
  end)
end)
