-- PyTorch checkpoints against PyTorch 1.13 (differential round 6): files
-- torch.save writes that T.load_torch misread or refused without a clear
-- reason, and files T.save_torch writes that differ from torch.save's.
-- Fixtures: tests/fixtures/gen_torch.py (generate_protocols).
local T = require "ember"

local function err(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(e)
end

local FIX = "tests/fixtures/torch/"

local function readall(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function tmp(suffix)
  local p = os.tmpname()
  os.remove(p)
  return p .. suffix
end

describe("difftest round 6: PyTorch checkpoints (torch 1.13)", function()
  it("loads protocol 1 files: bools as INT, ints past 32 bits as LONG", function()
    -- torch.save(v, f, pickle_protocol=1); torch.load(f) gives
    -- {'t': arange(6.).reshape(2, 3).t(), 'v': [1, 'x', None, 2**62, -2**63, 1.5,
    --  True, False, 10**30, -10**30], 'h': (ones(2, half),)}
    -- (ember before: corrupt data.pkl (unsupported opcode 0x49))
    local v = T.load_torch(FIX .. "proto1.pt")
    assert.same({ 1, 3 }, v.t:stride())
    assert.same({ 0, 3, 1, 4, 2, 5 }, v.t:reshape(-1):tolist())
    local l = v.v
    assert.equal("list", T.torch_kind(l))
    assert.equal(10, #l)
    assert.equal(1, l[1]); assert.equal("x", l[2]); assert.equal(T.None, l[3])
    assert.equal("4611686018427387904", (tostring(l[4]):gsub("LL$", "")))
    assert.equal("-9223372036854775808", (tostring(l[5]):gsub("LL$", "")))
    assert.equal(1.5, l[6])
    assert.equal(true, l[7]); assert.equal(false, l[8])
    assert.equal(1e30, l[9]); assert.equal(-1e30, l[10]) -- beyond int64: a float, as LONG1
    assert.equal("tuple", T.torch_kind(v.h))
    assert.equal(T.float16, v.h[1].dtype)
    assert.is_false(v.t.requires_grad) -- requires_grad is INT 00 in protocol 1
  end)

  it("names the Python values it does not load: sets, bytearrays", function()
    -- torch.load reads these back as {'s': {1, 2}} and [bytearray(b'ab')];
    -- ember before: 'corrupt data.pkl (unsupported opcode 0x8f ...)' for a
    -- valid protocol 4 file, and "refusing global 'builtins.set' (a checkpoint
    -- must never run code)"
    local e = err(T.load_torch, FIX .. "set_p4.pt")
    assert.matches("pickle opcode EMPTY_SET (a Python set) at byte", e, 1, true)
    assert.not_matches("corrupt", e)
    e = err(T.load_torch, FIX .. "set_p2.pt")
    assert.matches("the file holds a Python set (global '__builtin__.set'): ember does not load that", e, 1, true)
    e = err(T.load_torch, FIX .. "bytearray_p5.pt")
    assert.matches("pickle opcode BYTEARRAY8 (a Python bytearray)", e, 1, true)
    -- code stays refused as code
    assert.matches("refusing global 'os.system' (a checkpoint must never run code)",
      err(T.load_torch, FIX .. "evil_os.pt"), 1, true)
  end)

  it("batches long lists and dicts as torch.save's pickler does (byte for byte)", function()
    -- CPython's C pickler: an exact list of 1001 items is MARK 1000 APPENDS
    -- MARK 1 APPENDS; an exact dict of 2000 items ends with an empty batch
    -- MARK SETITEMS; torch.save(torch.load(f)) reproduces f only so
    -- (ember before: the lone last item as APPEND/SETITEM, no empty batch)
    local p = tmp(".pt")
    local l = {}
    for i = 1, 1001 do l[i] = i end
    T.save_torch(p, l)
    local s = readall(p)
    assert.truthy(s:find("(M\233\003e.", 1, true))
    local back = T.load_torch(p)
    assert.equal(1001, #back); assert.equal(1001, back[1001])
    local d = {}
    for i = 1, 2000 do d["k" .. (10000 + i)] = i end
    T.save_torch(p, d)
    s = readall(p)
    assert.truthy(s:find("M\208\007u(u.", 1, true))
    back = T.load_torch(p)
    assert.equal(2000, #back.keys()); assert.equal(2000, back.k12000)
    d.k12001 = 2001
    T.save_torch(p, d)
    s = readall(p)
    assert.truthy(s:find("u(X\006\000\000\000k12001", 1, true))
    assert.truthy(s:find("M\209\007u.", 1, true))
    -- an OrderedDict (a state_dict) goes through batch_dict: no empty batch
    local od = T.torch_kind({}, "OrderedDict")
    for i = 1, 1000 do od["k" .. (10000 + i)] = i end
    T.save_torch(p, od)
    assert.truthy(readall(p):find("M\232\003u.", 1, true))
    os.remove(p)
  end)
end)
