-- Hugging Face's .safetensors: T.load_safetensors / T.save_safetensors
-- against fixtures written by the format's rules (tests/fixtures/
-- gen_safetensors.py), mapped loads, round trips, and every header check
-- on files crafted here.
local T = require "ember"
local files = require "filecheck"
local flat, values, readall, writeall = files.flat, files.values, files.readall, files.writeall
local function tmp() return files.tmp(".safetensors") end

local FIX = "tests/fixtures/safetensors/"
local cases = dofile(FIX .. "cases.lua")

local function count(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  return n
end

local same_values = require("specutil").same_list

local function check_case(c, ts, md)
  assert.equal(#c.tensors, count(ts), c.file)
  for _, e in ipairs(c.tensors) do
    local t = ts[e.name]
    assert.is_truthy(t, c.file .. ": no tensor " .. e.name)
    assert.equal(T[e.dtype], t.dtype, e.name)
    assert.same(e.shape, flat(t:size()), e.name)
    assert.is_true(t:is_contiguous(), e.name)
    same_values(e.values, values(t), c.file .. ": " .. e.name)
  end
  assert.same(c.metadata, md)
end

-- a file from its header text and byte buffer: the 8-byte little-endian length first
local function u64le(n)
  local b = {}
  for i = 1, 8 do
    b[i] = string.char(n % 256)
    n = math.floor(n / 256)
  end
  return table.concat(b)
end
local function st(header, data) return u64le(#header) .. header .. (data or "") end

local function error_of(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

-- The message a file's bytes fail with, checked three ways: from a file
-- (named in the message), from a mapped file, and from a buffer.
local function fails(bytes, expected)
  local p = tmp()
  writeall(p, bytes)
  local prefix = ("load_safetensors: '%s': "):format(p)
  assert.equal(prefix .. expected, error_of(T.load_safetensors, p))
  assert.equal(prefix .. expected, error_of(T.load_safetensors, p, {mmap = true}))
  os.remove(p)
  assert.equal("load_safetensors_buffer: " .. expected, error_of(T.load_safetensors_buffer, bytes))
end

local F32_2 = '{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'
local EIGHT = string.rep("\0", 8)

describe("load_safetensors", function()
  it("reads every fixture: each dtype, 0-d and empty tensors, metadata, escapes", function()
    assert.is_true(#cases >= 6)
    for _, c in ipairs(cases) do
      local ok, err = pcall(function() check_case(c, T.load_safetensors(FIX .. c.file)) end)
      if not ok then error(c.file .. ": " .. tostring(err), 0) end
      ok, err = pcall(function() check_case(c, T.load_safetensors_buffer(readall(FIX .. c.file))) end)
      if not ok then error(c.file .. " (buffer): " .. tostring(err), 0) end
    end
  end)

  it("returns an empty metadata table when the file has none", function()
    local ts, md = T.load_safetensors(FIX .. "scalar_empty.safetensors")
    assert.same({}, md)
    assert.equal(0, ts.scalar:dim())
    assert.equal(2.5, ts.scalar:item())
    assert.same({2, 0, 3}, flat(ts.empty_3d:size()))
    assert.equal(0, ts.empty_3d:numel())
    local none, md2 = T.load_safetensors(FIX .. "no_tensors.safetensors")
    assert.same({}, none)
    assert.same({}, md2)
    -- "__metadata__": null is no metadata (the reference reads it as None)
    local ts3, md3 = T.load_safetensors_buffer(st('{"__metadata__":null,"a":' .. F32_2 .. '}', EIGHT))
    assert.same({}, md3)
    assert.same({0, 0}, ts3.a:tolist())
  end)

  it("refuses the format's dtypes that ember has no dtype for, naming the tensor", function()
    local p = FIX .. "bad_u16.safetensors"
    assert.equal(("load_safetensors: '%s': tensor 'weights' has dtype U16, which ember does not have "
      .. "(ember reads BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64 and C64)"):format(p),
      error_of(T.load_safetensors, p))
    assert.matches("tensor 'q' has dtype F8_E4M3, which ember does not have",
      error_of(T.load_safetensors, FIX .. "bad_f8.safetensors"), 1, true)
    for _, d in ipairs { "U32", "U64", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3" } do
      fails(st('{"x":{"dtype":"' .. d .. '","shape":[],"data_offsets":[0,0]}}'),
        "tensor 'x' has dtype " .. d .. ", which ember does not have (ember reads BOOL, U8, I8, "
        .. "I16, I32, I64, F16, BF16, F32, F64 and C64)")
    end
  end)

  it("C64 is complex64 (two float32, real first); complex128 has no safetensors dtype", function()
    local z = T.complex(T.tensor { 1.5, -2 }, T.tensor { 0.25, 1 / 0 })
    local p = os.tmpname()
    T.save_safetensors(p, { z = z })
    local f = assert(io.open(p, "rb"))
    local bytes = f:read("*a")
    f:close()
    assert.matches('"dtype":"C64"', bytes, 1, true)
    -- the payload: re, im of each element as little-endian float32
    assert.equal(string.char(0, 0, 192, 63, 0, 0, 128, 62), bytes:sub(-16, -9))
    local back = T.load_safetensors(p)
    assert.equal(T.complex64, back.z.dtype)
    assert.is_true(back.z:equal(z))
    assert.matches("complex128 has no safetensors dtype",
      error_of(T.save_safetensors, p, { z = z:to(T.complex128) }), 1, true)
    os.remove(p)
  end)

  it("checks its options", function()
    local p = FIX .. "all_dtypes.safetensors"
    assert.equal("load_safetensors: unknown option 'mmapp' (expected one of: mmap, mode)",
      error_of(T.load_safetensors, p, {mmapp = true}))
    assert.equal("load_safetensors: option 'mmap' must be a boolean, got string",
      error_of(T.load_safetensors, p, {mmap = "yes"}))
    assert.equal("load_safetensors: unknown mode 'w' (expected 'r', 'c' or 'r+')",
      error_of(T.load_safetensors, p, {mode = "w"}))
    assert.equal("load_safetensors: expected a path (a string) for argument #1, got no value",
      error_of(T.load_safetensors))
    assert.matches("^load_safetensors: cannot open '/nonexistent/x.safetensors': ",
      error_of(T.load_safetensors, "/nonexistent/x.safetensors"))
    assert.equal("load_safetensors_buffer: expected the file's bytes (a string) for argument #1, got table",
      error_of(T.load_safetensors_buffer, {}))
    assert.equal("load_safetensors_buffer: expected 1 argument, got 2",
      error_of(T.load_safetensors_buffer, readall(p), {mmap = true}))
  end)
end)

describe("load_safetensors with mmap", function()
  it("maps every aligned fixture: the values are right", function()
    local mapped = 0
    for _, c in ipairs(cases) do
      if c.mappable then
        check_case(c, T.load_safetensors(FIX .. c.file, {mmap = true}))
        mapped = mapped + 1
      end
    end
    assert.is_true(mapped >= 5)
  end)

  it("makes every tensor a view of one mapping, at its place in the file (zero-copy)", function()
    local p = FIX .. "all_dtypes.safetensors"
    local ts = T.load_safetensors(p, {mmap = true})
    local s = ts.i64:untyped_storage()
    assert.equal(#readall(p), s:nbytes())       -- the storage is the whole file's mapping
    local bytes = readall(p)
    local n = 0
    for i = 8, 1, -1 do n = n * 256 + bytes:byte(i) end
    -- data_offsets from the generator's layout: i64 first, then f64, f32, ...
    local at = { i64 = 0, f64 = 48, f32 = 96, i32 = 120, bf16 = 144, f16 = 156, i16 = 168,
                 i8 = 180, u8 = 186, bool = 192 }
    for name, off in pairs(at) do
      assert.is_true(ts[name]:untyped_storage() == s, name)
      assert.equal(s:data_ptr() + 8 + n + off, ts[name]:data_ptr(), name)
    end
    -- a copy-mode load owns one storage per tensor
    local c = T.load_safetensors(p)
    assert.is_false(c.i64:untyped_storage() == c.f64:untyped_storage())
  end)

  it("the mapping stays alive while any view does, and goes with the last one", function()
    local p = tmp()
    T.save_safetensors(p, {a = T.arange(1000, {dtype = T.int32}), b = T.ones(3)})
    local b = T.load_safetensors(p, {mmap = true}).b
    collectgarbage(); collectgarbage()
    local v = b[{{2, 3}}]
    b = nil
    collectgarbage(); collectgarbage()
    assert.same({1, 1}, v:tolist())
    v = nil
    collectgarbage(); collectgarbage()
    os.remove(p)
  end)

  it("a copy-on-write mapping (the default) keeps writes in memory; 'r+' writes through", function()
    local p = tmp()
    T.save_safetensors(p, {w = T.arange(6):float():reshape(2, 3), k = T.tensor({1, 2}, {dtype = T.int64})})
    local before = readall(p)
    local ts = T.load_safetensors(p, {mmap = true})
    ts.w[1][1] = 1234
    ts.k:fill_(-5)
    assert.equal(1234, ts.w[1][1]:item())
    assert.same({-5, -5}, ts.k:tolist())
    ts = nil
    collectgarbage()
    assert.equal(before, readall(p))
    local c = T.load_safetensors(p, {mode = "c"})
    c.w:zero_()
    assert.equal(before, readall(p))
    -- shared: a write through a view reaches the file
    local sh = T.load_safetensors(p, {mode = "r+"})
    local row = sh.w[2]
    row:fill_(7)
    sh = nil; row = nil
    collectgarbage(); collectgarbage()
    assert.same({{0, 1, 2}, {7, 7, 7}}, T.load_safetensors(p).w:tolist())
    os.remove(p)
  end)

  it("refuses to map a tensor that is not aligned for its dtype, or bools other than 0 and 1", function()
    local p = FIX .. "unaligned_name_order.safetensors"
    assert.equal(("load_safetensors: '%s': cannot map tensor 'b_float': its data is not aligned "
      .. "for F32; load it without mmap"):format(p), error_of(T.load_safetensors, p, {mmap = true}))
    local q = tmp()
    writeall(q, st('{"b":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}}     ', "\0\1\2"))
    assert.equal(("load_safetensors: '%s': cannot map tensor 'b': its BOOL data holds bytes other "
      .. "than 0 and 1; load it without mmap"):format(q), error_of(T.load_safetensors, q, {mmap = true}))
    -- a copy normalises them (C's bool holds 0 or 1)
    assert.same({false, true, true}, T.load_safetensors(q).b:tolist())
    os.remove(q)
  end)
end)

describe("save_safetensors", function()
  it("writes files byte-identical to the reference layout (the generator's files)", function()
    local n = 0
    for _, c in ipairs(cases) do
      if c.reference_layout then
        local ts, md = T.load_safetensors(FIX .. c.file)
        local p = tmp()
        T.save_safetensors(p, ts, md)
        assert.equal(readall(FIX .. c.file), readall(p), c.file)
        os.remove(p)
        n = n + 1
      end
    end
    assert.is_true(n >= 5)
  end)

  it("sorts tensors by descending dtype alignment, then name, and pads the header to 8 bytes", function()
    local p = tmp()
    T.save_safetensors(p, {b = T.ones(1, {dtype = T.uint8}), a = T.ones(1, {dtype = T.uint8}),
                           z = T.ones(1, {dtype = T.float64}), m = T.ones(1, {dtype = T.int16})})
    local s = readall(p)
    local n = 0
    for i = 8, 1, -1 do n = n * 256 + s:byte(i) end
    assert.equal(0, n % 8)
    assert.equal('{"z":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},'
      .. '"m":{"dtype":"I16","shape":[1],"data_offsets":[8,10]},'
      .. '"a":{"dtype":"U8","shape":[1],"data_offsets":[10,11]},'
      .. '"b":{"dtype":"U8","shape":[1],"data_offsets":[11,12]}}', (s:sub(9, 8 + n):gsub(" +$", "")))
    assert.equal(8 + n + 12, #s)
    os.remove(p)
  end)

  it("round-trips every dtype, 0-d and empty tensors, and maps its own files", function()
    local src = {}
    for _, d in ipairs { "bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                         "bfloat16", "float32", "float64" } do
      src[d] = (T.arange(12) - 5):to(T[d]):reshape(3, 4)
    end
    src.scalar = T.tensor(-1.5, {dtype = T.float64})
    src.empty = T.zeros(0, 2, {dtype = T.int32})
    src.empty0 = T.zeros(0)
    local p = tmp()
    T.save_safetensors(p, src, {epoch = "3"})
    for _, mode in ipairs { {}, {mmap = true} } do
      local ts, md = T.load_safetensors(p, mode)
      assert.same({epoch = "3"}, md)
      assert.equal(count(src), count(ts))
      for k, v in pairs(src) do
        assert.equal(v.dtype, ts[k].dtype, k)
        assert.same(flat(v:size()), flat(ts[k]:size()), k)
        assert.is_true(T.equal(v, ts[k]), k)
      end
    end
    os.remove(p)
  end)

  it("writes any strides as contiguous row-major bytes", function()
    local base = T.arange(24):float():reshape(2, 3, 4)
    local views = {
      t = base:transpose(1, 3),                 -- permuted
      step = base[{{}, {1, 3, 2}, {2, 4, 2}}],  -- stepped slices
      x = T.tensor({1, 2, 3}):expand(2, 3),     -- stride 0
      off = base[2][3],                          -- storage offset
      d = T.arange(9):reshape(3, 3):diagonal(),
    }
    local p = tmp()
    T.save_safetensors(p, views)
    local ts = T.load_safetensors(p)
    for k, v in pairs(views) do
      assert.is_true(ts[k]:is_contiguous(), k)
      assert.same(v:tolist(), ts[k]:tolist(), k)
    end
    -- only the elements were written: 24 + 8 + 4 float32 (t, step, off), 6 + 3 int64 (x, d)
    local s = readall(p)
    local n = 0
    for i = 8, 1, -1 do n = n * 256 + s:byte(i) end
    assert.equal(8 + n + (24 + 8 + 4) * 4 + (6 + 3) * 8, #s)
    os.remove(p)
  end)

  it("round-trips metadata: any UTF-8 text, escapes, empty strings", function()
    local md = {format = "pt", [""] = "", quote = 'a "b" \\ c', nl = "x\ny\r\t\1", uni = "\195\169\226\152\131"}
    local p = tmp()
    T.save_safetensors(p, {w = T.ones(2)}, md)
    local _, back = T.load_safetensors(p)
    assert.same(md, back)
    -- no metadata table (or an empty one) writes no "__metadata__"
    T.save_safetensors(p, {w = T.ones(2)}, {})
    assert.is_nil(readall(p):find("__metadata__", 1, true))
    os.remove(p)
  end)

  it("refuses what it cannot write, naming the tensor or key", function()
    local p = tmp()
    local function se(...) return error_of(T.save_safetensors, ...) end
    assert.equal("save_safetensors: expected a path (a string) for argument #1, got no value", se())
    assert.equal("save_safetensors: expected a table of name = tensor for argument #2, got number", se(p, 1))
    assert.equal("save_safetensors: expected a metadata table of strings for argument #3, got string",
      se(p, {}, "x"))
    assert.equal("save_safetensors: takes no options (got a table for argument #4)", se(p, {}, {}, {}))
    assert.equal("save_safetensors: tensor names must be strings, got the number key 1", se(p, {T.ones(1)}))
    assert.equal("save_safetensors: tensor names must be strings, got a boolean key", se(p, {[true] = T.ones(1)}))
    assert.equal("save_safetensors: 'w' is a number, not a tensor", se(p, {w = 3}))
    assert.equal("save_safetensors: metadata value of 'k' must be a string, got number (safetensors "
      .. "metadata maps strings to strings)", se(p, {}, {k = 1}))
    assert.equal("save_safetensors: metadata keys must be strings, got the number key 1", se(p, {}, {"v"}))
    assert.equal("save_safetensors: tensor name 'a' contains a NUL byte", se(p, {["a\0b"] = T.ones(1)}))
    assert.equal("save_safetensors: metadata value 'x' contains a NUL byte", se(p, {}, {k = "x\0"}))
    assert.equal("save_safetensors: a tensor cannot be named '__metadata__' (the format keeps that key "
      .. "for the metadata)", se(p, {__metadata__ = T.ones(1)}))
    assert.equal("save_safetensors: tensor name '\255' is not valid UTF-8 (at byte 0)", se(p, {["\255"] = T.ones(1)}))
    assert.equal("save_safetensors: metadata value '\192\128' is not valid UTF-8 (at byte 0)",
      se(p, {}, {k = "\192\128"}))
    assert.equal("save_safetensors: tensor 'm': a meta tensor has no data",
      se(p, {m = T.empty(2, {device = "meta"})}))
    assert.matches("^save_safetensors: cannot open '/nonexistent/x' for writing: ", se("/nonexistent/x", {}))
    -- an expanded tensor whose bytes do not fit: refused before the file is made
    assert.equal("save_safetensors: tensor 'x': the tensors are too large to write (more than 2^63 bytes)",
      se(p, {x = T.zeros(1):expand(2 ^ 62)}))
    assert.is_nil(io.open(p, "rb"))
    -- one whose contiguous copy cannot be allocated: the half-written file is removed
    assert.matches("^save_safetensors: tensor 'x': .*out of memory", se(p, {x = T.zeros(1):expand(2 ^ 45)}))
    assert.is_nil(io.open(p, "rb"))
    os.remove(p)
  end)
end)

describe("safetensors header checks", function()
  it("the length: 8 bytes, at most 100,000,000, inside the file", function()
    fails("", "not a safetensors file: 0 bytes, too short for the 8-byte header length")
    fails("\8\0\0", "not a safetensors file: 3 bytes, too short for the 8-byte header length")
    fails(u64le(100000001) .. "{}", "header length 100000001 is over the format's limit of 100000000 bytes")
    fails("\255\255\255\255\255\255\255\255", "header length 18446744073709551615 is over the format's "
      .. "limit of 100000000 bytes")
    fails(u64le(10) .. "{}", "header length 10 runs past the end of the file (2 bytes follow the length)")
  end)

  it("UTF-8 and JSON syntax", function()
    fails(st('{"a\255":{}}'), "invalid header: not valid UTF-8 (at byte 3 of the header)")
    fails(st('{"\237\160\128":{}}'), "invalid header: not valid UTF-8 (at byte 2 of the header)")  -- a surrogate
    fails(st(''), "invalid header: the header does not begin with '{' (at byte 0 of the header)")
    fails(st(' {}'), "invalid header: the header does not begin with '{' (at byte 0 of the header)")
    fails(st('[]'), "invalid header: the header does not begin with '{' (at byte 0 of the header)")
    fails(st('{'), "invalid header: expected a tensor name (a string) (at byte 1 of the header)")
    fails(st('{} x'), "invalid header: unexpected bytes after the header's object (at byte 3 of the header)")
    fails(st('{}{}'), "invalid header: unexpected bytes after the header's object (at byte 2 of the header)")
    fails(st('{"a"}'), "invalid header: expected ':' after a key (at byte 4 of the header)")
    fails(st('{"a'), "invalid header: unterminated string (at byte 2 of the header)")
    fails(st('{"a":' .. F32_2 .. ' "b"}', EIGHT), "invalid header: expected ',' or '}' (at byte 54 of the header)")
    fails(st('{"a":' .. F32_2 .. ',}', EIGHT), "invalid header: expected a tensor name (a string) (at byte 54 of the header)")
    fails(st('{"a\\x":{}}'), "invalid header: invalid escape '\\x' in a string (at byte 3 of the header)")
    fails(st('{"a\\u12":{}}'), "invalid header: invalid \\u escape in a string (at byte 5 of the header)")
    fails(st('{"\\ud800":{}}'), "invalid header: lone high surrogate \\ud800 in a string (at byte 8 of the header)")
    fails(st('{"\\udc00":{}}'), "invalid header: lone low surrogate \\udc00 in a string (at byte 8 of the header)")
    fails(st('{"\\u0000":{}}'), "invalid header: \\u0000 in a string (ember's names and metadata are C strings) "
      .. "(at byte 8 of the header)")
    fails(st('{"a\tb":{}}'), "invalid header: control character 0x09 in a string (JSON needs it escaped) "
      .. "(at byte 3 of the header)")
    -- escapes decode: \/ \u00e9 and a surrogate pair name the tensor
    local ts = T.load_safetensors_buffer(st('{"a\\/\\u00e9\\ud83d\\ude00":' .. F32_2 .. '}', EIGHT))
    assert.is_truthy(ts["a/\195\169\240\159\152\128"])
  end)

  it("names, keys and metadata: no duplicates, only strings", function()
    fails(st('{"a":' .. F32_2 .. ',"a":' .. F32_2 .. '}', EIGHT .. EIGHT),
      "tensor name 'a' appears twice in the header")
    fails(st('{"__metadata__":{},"__metadata__":{}}'), "invalid header: __metadata__ appears twice (at byte 34 of the header)")
    fails(st('{"__metadata__":{"k":"1","k":"2"}}'), "__metadata__ key 'k' appears twice in the header")
    fails(st('{"__metadata__":{"k":1}}'), "invalid header: __metadata__ value of 'k' is not a string "
      .. "(metadata maps strings to strings) (at byte 21 of the header)")
    fails(st('{"__metadata__":{"k":null}}'), "invalid header: __metadata__ value of 'k' is not a string "
      .. "(metadata maps strings to strings) (at byte 21 of the header)")
    fails(st('{"__metadata__":["k"]}'), "invalid header: __metadata__ must be an object of strings (at byte 16 of the header)")
    fails(st('{"__metadata__":"x"}'), "invalid header: __metadata__ must be an object of strings (at byte 16 of the header)")
    fails(st('{"a":[]}'), "invalid header: tensor 'a' must be an object {dtype, shape, data_offsets} (at byte 5 of the header)")
    fails(st('{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4],"extra":1}}', "1234"),
      "invalid header: tensor 'a': unexpected key 'extra' (a tensor has dtype, shape and data_offsets) "
      .. "(at byte 52 of the header)")
    fails(st('{"a":{"dtype":"F32","dtype":"F32","shape":[],"data_offsets":[0,4]}}', "1234"),
      "invalid header: tensor 'a': 'dtype' appears twice (at byte 20 of the header)")
    fails(st('{"a":{"shape":[],"data_offsets":[0,4]}}', "1234"), "invalid header: tensor 'a' has no 'dtype' "
      .. "(at byte 38 of the header)")
    fails(st('{"a":{"dtype":"F32","data_offsets":[0,4]}}', "1234"), "invalid header: tensor 'a' has no 'shape' "
      .. "(at byte 41 of the header)")
    fails(st('{"a":{"dtype":"F32","shape":[]}}'), "invalid header: tensor 'a' has no 'data_offsets' "
      .. "(at byte 31 of the header)")
    fails(st('{"a":{}}'), "invalid header: tensor 'a' has no 'dtype' (at byte 7 of the header)")
  end)

  it("dtype, shape and data_offsets values", function()
    local function entry(dtype, shape, offs) return '{"a":{"dtype":' .. dtype .. ',"shape":' .. shape
      .. ',"data_offsets":' .. offs .. '}}' end
    fails(st(entry('"F17"', '[]', '[0,4]'), "1234"), "invalid header: tensor 'a': unknown dtype 'F17' (at byte 19 of the header)")
    fails(st(entry('"f32"', '[]', '[0,4]'), "1234"), "invalid header: tensor 'a': unknown dtype 'f32' (at byte 19 of the header)")
    fails(st(entry('4', '[]', '[0,4]'), "1234"), "invalid header: tensor 'a': dtype must be a string (at byte 14 of the header)")
    fails(st(entry('"F32"', '2', '[0,8]'), EIGHT), "invalid header: tensor 'a': shape must be an array of "
      .. "non-negative integers (at byte 28 of the header)")
    fails(st(entry('"F32"', '[-2]', '[0,8]'), EIGHT), "invalid header: a shape entry must be a non-negative "
      .. "integer, got a negative number (at byte 29 of the header)")
    fails(st(entry('"F32"', '[2.0]', '[0,8]'), EIGHT), "invalid header: a shape entry must be a plain "
      .. "non-negative integer (at byte 30 of the header)")
    fails(st(entry('"F32"', '[2e0]', '[0,8]'), EIGHT), "invalid header: a shape entry must be a plain "
      .. "non-negative integer (at byte 30 of the header)")
    fails(st(entry('"F32"', '[02]', '[0,8]'), EIGHT), "invalid header: a shape entry must be a plain "
      .. "non-negative integer (at byte 30 of the header)")
    fails(st(entry('"F32"', '["2"]', '[0,8]'), EIGHT), "invalid header: a shape entry must be a non-negative "
      .. "integer (at byte 29 of the header)")
    fails(st(entry('"F32"', '[2,]', '[0,8]'), EIGHT), "invalid header: a shape entry must be a non-negative "
      .. "integer (at byte 31 of the header)")
    fails(st(entry('"F32"', '[2 2]', '[0,8]'), EIGHT), "invalid header: tensor 'a': expected ',' or ']' in shape "
      .. "(at byte 31 of the header)")
    fails(st(entry('"F32"', '[9223372036854775808]', '[0,8]'), EIGHT), "invalid header: a shape entry is too "
      .. "large (more than 2^63 - 1) (at byte 47 of the header)")
    fails(st(entry('"U8"', '[' .. string.rep("1,", 16) .. '1]', '[0,1]'), "x"),
      "invalid header: tensor 'a' has more than 16 dimensions (at byte 61 of the header)")
    fails(st(entry('"F32"', '[2]', '[0]'), EIGHT), "invalid header: tensor 'a': data_offsets must be "
      .. "[begin, end] (at byte 49 of the header)")
    fails(st(entry('"F32"', '[2]', '[0,8,8]'), EIGHT), "invalid header: tensor 'a': data_offsets must be "
      .. "[begin, end] (at byte 51 of the header)")
    fails(st(entry('"F32"', '{}', '[0,8]'), EIGHT), "invalid header: tensor 'a': shape must be an array of "
      .. "non-negative integers (at byte 28 of the header)")
    -- a 0-d tensor holds one element; sizes must match shape * itemsize
    fails(st(entry('"F32"', '[]', '[0,8]'), EIGHT), "tensor 'a': shape [] of F32 needs 4 bytes, its "
      .. "data_offsets [0, 8] hold 8")
    fails(st(entry('"I64"', '[2,3]', '[0,40]'), string.rep("\0", 40)), "tensor 'a': shape [2, 3] of I64 needs "
      .. "48 bytes, its data_offsets [0, 40] hold 40")
    fails(st(entry('"F64"', '[4611686018427387904,4]', '[0,8]'), EIGHT), "tensor 'a': shape "
      .. "[4611686018427387904, 4] of F64 is too large")
    fails(st(entry('"F64"', '[1152921504606846976]', '[0,8]'), EIGHT), "tensor 'a': shape "
      .. "[1152921504606846976] of F64 is too large")
  end)

  it("the offsets tile the byte buffer: from 0, no gaps, no overlaps, to its end", function()
    local function two(ao, bo) return '{"a":{"dtype":"U8","shape":[2],"data_offsets":' .. ao
      .. '},"b":{"dtype":"U8","shape":[2],"data_offsets":' .. bo .. '}}' end
    -- any order in the JSON is fine; the data order decides
    local ts = T.load_safetensors_buffer(st(two('[2,4]', '[0,2]'), "\1\2\3\4"))
    assert.same({3, 4}, ts.a:tolist())
    assert.same({1, 2}, ts.b:tolist())
    fails(st(two('[0,2]', '[3,5]'), "12345"), "tensor 'b': data_offsets [3, 5] leave bytes [2, 3) of the "
      .. "byte buffer to no tensor")
    fails(st(two('[1,3]', '[3,5]'), "12345"), "tensor 'a': data_offsets [1, 3] leave bytes [0, 1) of the "
      .. "byte buffer to no tensor")
    fails(st(two('[0,2]', '[1,3]'), "123"), "tensor 'b': data_offsets [1, 3] overlap the tensor before it "
      .. "(which ends at 2)")
    fails(st(two('[0,2]', '[0,2]'), "12"), "tensor 'b': data_offsets [0, 2] overlap the tensor before it "
      .. "(which ends at 2)")
    fails(st(two('[0,2]', '[4,2]'), "1234"), "tensor 'b': data_offsets [4, 2] end before they begin")
    fails(st(two('[0,2]', '[2,4]'), "123"), "tensor 'b': data_offsets [2, 4] run past the end of the byte "
      .. "buffer (3 bytes)")
    fails(st(two('[0,2]', '[2,4]'), "12345"), "the tensors cover 4 bytes of the byte buffer, which holds 5: "
      .. "bytes [4, 5) belong to no tensor")
    fails(st('{}', "x"), "the tensors cover 0 bytes of the byte buffer, which holds 1: bytes [0, 1) belong to no tensor")
    fails(st(two('[0,2]', '[2,9223372036854775807]'), "1234"), "tensor 'b': data_offsets [2, "
      .. "9223372036854775807] run past the end of the byte buffer (4 bytes)")
    -- empty tensors may share an offset with anything
    local e = '{"e":{"dtype":"F32","shape":[0],"data_offsets":[2,2]},"a":{"dtype":"U8","shape":[2],'
      .. '"data_offsets":[0,2]},"f":{"dtype":"I64","shape":[3,0],"data_offsets":[2,2]},'
      .. '"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}'
    ts = T.load_safetensors_buffer(st(e, "\1\2\3"))
    assert.same({1, 2}, ts.a:tolist())
    assert.same({3}, ts.b:tolist())
    assert.same({0}, flat(ts.e:size()))
    assert.same({3, 0}, flat(ts.f:size()))
  end)

  it("long names are cut short in messages", function()
    local name = string.rep("n", 300)
    fails(st('{"' .. name .. '":{"dtype":"X"}}'), "invalid header: tensor '" .. string.rep("n", 100)
      .. "...': unknown dtype 'X' (at byte 316 of the header)")
  end)

  it("every truncation and many corruptions of a file fail cleanly or load", function()
    local good = readall(FIX .. "all_dtypes.safetensors")
    for n = 0, #good - 1 do
      local ok, err = pcall(T.load_safetensors_buffer, good:sub(1, n))
      assert.is_false(ok, "truncated at " .. n)
      assert.matches("^load_safetensors_buffer: ", tostring(err))
    end
    local loaded, failed = 0, 0
    for i = 1, #good do
      for _, b in ipairs { 0, 0x22, 0x7b, 0x5d, 0x31, 0xff } do
        local bad = good:sub(1, i - 1) .. string.char(b) .. good:sub(i + 1)
        local ok, err = pcall(T.load_safetensors_buffer, bad)
        if ok then loaded = loaded + 1
        else
          failed = failed + 1
          assert.matches("^load_safetensors_buffer: ", tostring(err))
        end
      end
    end
    assert.is_true(failed > 1000 and loaded > 100, ("%d failed, %d loaded"):format(failed, loaded))
  end)
end)
