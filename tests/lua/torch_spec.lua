-- PyTorch checkpoints: T.load_torch against files written by torch.save
-- (tests/fixtures/gen_torch.py, PyTorch 1.13), T.save_torch read back by
-- ember and, when /usr/bin/python3 has torch, by torch.load (gen_torch.py
-- --check), refused files, and damaged ones.
local T = require "ember"
local files = require "filecheck"
local flat, values, readall, writeall, tmp = files.flat, files.values, files.readall, files.writeall, files.tmp
local nn, F = T.nn, T.nn.functional

local FIX = "tests/fixtures/torch/"
local cases = dofile(FIX .. "cases.lua")
local PWNED = "/tmp/ember-torch-fixture-pwned"

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- got (a loaded Lua value) against c (cases.lua's spelling of the Python
-- value): kinds, keys in order, tensors with their metadata and values
local function same(c, got, where)
  where = where or "value"
  local function fail(msg) error(where .. ": " .. msg, 0) end
  if type(c) ~= "table" then
    if c ~= got and not (c ~= c and got ~= got) then
      fail(("expected %s, got %s"):format(tostring(c), tostring(got)))
    end
    return
  end
  if c.none then
    if got ~= T.None then fail("expected T.None, got " .. tostring(got)) end
  elseif c.dtype and not c.tensor then
    if got ~= T[c.dtype] then fail("expected the dtype " .. c.dtype) end
  elseif c.tensor then
    if not T.is_tensor(got) then fail("expected a tensor, got " .. type(got)) end
    if got.dtype ~= T[c.dtype] then fail("dtype " .. tostring(got.dtype)) end
    if table.concat(c.shape, ",") ~= table.concat(flat(got:size()), ",") then fail("shape") end
    if table.concat(c.stride, ",") ~= table.concat(got:stride(), ",") then fail("stride") end
    if c.offset ~= got:storage_offset() then fail("offset " .. got:storage_offset()) end
    if c.requires_grad ~= got.requires_grad then fail("requires_grad") end
    if c.device ~= got.device.type then fail("device " .. got.device.type) end
    if c.device ~= "meta" then
      local v = values(got)
      if #v ~= #c.v then fail("number of values") end
      for i = 1, #v do
        if v[i] ~= c.v[i] and not (v[i] ~= v[i] and c.v[i] ~= c.v[i]) then
          fail(("value %d: expected %s, got %s"):format(i, tostring(c.v[i]), tostring(v[i])))
        end
      end
    end
  elseif c.kind == "list" or c.kind == "tuple" then
    if type(got) ~= "table" then fail("expected a " .. c.kind .. ", got " .. type(got)) end
    if T.torch_kind(got) ~= c.kind then fail("kind " .. tostring(T.torch_kind(got))) end
    if #got ~= #c then fail(("%d items, expected %d"):format(#got, #c)) end
    for i = 1, #c do same(c[i], got[i], where .. "[" .. i .. "]") end
  elseif c.kind then
    if type(got) ~= "table" then fail("expected a dict, got " .. type(got)) end
    if T.torch_kind(got) ~= c.kind then fail("kind " .. tostring(T.torch_kind(got))) end
    local keys, n = got.keys(), 0
    for _ in pairs(got) do n = n + 1 end
    if n ~= #c.items or #keys ~= #c.items then fail(("%d keys, expected %d"):format(n, #c.items)) end
    for i, kv in ipairs(c.items) do
      local k = type(kv[1]) == "table" and kv[1].none and T.None or kv[1]
      if keys[i] ~= k then fail(("key %d is %s, expected %s"):format(i, tostring(keys[i]), tostring(k))) end
      same(kv[2], rawget(got, k), where .. "." .. tostring(k))
    end
  else
    fail("unknown case")
  end
end

local function close(a, b, tol, what)
  assert(T.is_tensor(a) and T.is_tensor(b), what)
  assert.same(flat(b:size()), flat(a:size()))
  local d = (a:double() - b:double()):abs():max():item()
  assert(d <= (tol or 1e-5), ("%s: differs by %g"):format(what or "tensor", d))
end

local function item(c, key) -- a cases.lua dict's value for key
  for _, kv in ipairs(c.items) do if kv[1] == key then return kv[2] end end
  error("no case key " .. tostring(key))
end

local function tensor_of(c) -- a cases.lua tensor as an ember tensor
  return T.tensor(c.v, { dtype = T[c.dtype] }):reshape(c.shape)
end

local function mlp() return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)) end

local function digits_cnn() -- examples/train_digits.lua's CNN
  return nn.Sequential(
    nn.Conv2d(1, 32, 3, { padding = 1 }), nn.BatchNorm2d(32), nn.ReLU(),
    nn.Conv2d(32, 64, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Linear(128, 10))
end

local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert(not ok, "expected an error")
  return tostring(e)
end

describe("load_torch", function()
  it("reads every dtype, and the same file deflated", function()
    same(cases.dtypes, T.load_torch(FIX .. "dtypes.pt"), "dtypes")
    same(cases.dtypes, T.load_torch(FIX .. "deflated.pt"), "deflated")
  end)

  it("keeps views of one storage as views: offsets, strides, sharing, one object twice", function()
    local v = T.load_torch(FIX .. "views.pt")
    same(cases.views, v, "views")
    assert.equal(v.base, v.again)              -- one tensor saved twice: one object
    local function base_ptr(t) return t:data_ptr() - t:storage_offset() * t:element_size() end
    for _, k in ipairs { "rows", "t", "narrow", "step", "row2" } do
      assert.equal(base_ptr(v.base), base_ptr(v[k]), k)
    end
    v.base[3][4] = -1                          -- row 2, column 3 in PyTorch's terms
    assert.equal(-1, v.row2[4]:item())
    assert.equal(-1, v.t[4][3]:item())
    assert.equal(-1, v.rows[2][4]:item())
    assert.equal(-1, v.narrow[3][2]:item())
  end)

  it("numbers, strings, bytes, None, tuples, lists, dicts with any keys, dtypes, Size, device", function()
    local v = T.load_torch(FIX .. "misc.pt")
    same(cases.misc, v, "misc")
    assert.equal(T.None, v.none)
    assert.equal("None", tostring(T.None))
    assert.equal("zero", v.int_keys[0])        -- integer keys stay as they are
    assert.equal(v.shared[1], v.shared[2])     -- one list reached twice: one table
    if math.type then assert.equal("integer", math.type(v.big)) end
  end)

  it("parameters and requires_grad tensors, meta tensors", function()
    local v = T.load_torch(FIX .. "params.pt")
    same(cases.params, v, "params")
    assert.is_true(v.param.requires_grad)
    assert.is_false(v.frozen.requires_grad)
    assert.equal("meta", v.meta_t.device.type)
  end)

  it("reads complex64/complex128 tensors and dtypes (gen_torch_complex.py), either byte order", function()
    local v = T.load_torch(FIX .. "complex.pt")
    assert.equal(T.complex64, v.c64.dtype)
    assert.same({ 1, 3, -0.5 }, v.c64.real:tolist())
    assert.same({ 2, -4, 0 }, v.c64.imag:tolist())
    assert.equal(T.complex128, v.c128.dtype)
    assert.same({ { 1, -0.5 }, { 0, 2.5 } }, v.c128.real:tolist())
    assert.same({ { 2, math.huge }, { -1e300, 0 } }, v.c128.imag:tolist())
    assert.is_true(v.c128_t:equal(v.c128:t()))
    assert.same({ T.complex64, T.complex128 }, v.dtypes)
    local be = T.load_torch(FIX .. "complex_be.pt")
    assert.is_true(be.c64:equal(v.c64))
    -- and back: ember's file holds the same values
    local p = tmp(".pt")
    T.save_torch(p, v)
    local back = T.load_torch(p)
    assert.is_true(back.c128:equal(v.c128) and back.c64:equal(v.c64))
    os.remove(p)
  end)

  it("converts a file in the other byte order (PyTorch's byteorder record)", function()
    same(cases.big_endian, T.load_torch(FIX .. "big_endian.pt"), "big_endian")
  end)

  it("a Sequential's state_dict loads with {torch_names = true} and gives PyTorch's output", function()
    local sd = T.load_torch(FIX .. "mlp.pt")
    assert.equal("OrderedDict", T.torch_kind(sd))
    assert.same({ "0.weight", "0.bias", "2.weight", "2.bias" }, sd.keys())
    local m = mlp()
    local e = err_of(m.load_state_dict, m, sd)
    assert.matches("unexpected keys: {0.weight, 0.bias, 2.weight, 2.bias}", e, 1, true) -- the dict's order
    assert.matches("pass {torch_names = true}", e, 1, true)
    m:load_state_dict(sd, { torch_names = true })
    close(m(tensor_of(item(cases.mlp_io, "x"))), tensor_of(item(cases.mlp_io, "y")), 1e-6, "mlp output")
    assert.equal(m[3].weight:data_ptr(), m:state_dict{ torch_names = true }["2.weight"]:data_ptr())
    assert.has_error(function() m:load_state_dict(sd, { torchnames = true }) end,
      "load_state_dict: unknown option 'torchnames' (expected one of: strict, torch_names)")
  end)

  it("the digits CNN of examples/train_digits.lua: weights and BatchNorm statistics", function()
    local model = digits_cnn()
    model:load_state_dict(T.load_torch(FIX .. "digits_cnn.pt"), { torch_names = true })
    model:eval()
    close(model(tensor_of(item(cases.digits_cnn_io, "x"))), tensor_of(item(cases.digits_cnn_io, "y")), 1e-4, "cnn output")
    assert.equal(T.int64, model[2].num_batches_tracked.dtype)
    assert.equal(1, model[2].num_batches_tracked:item())
  end)

  for _, o in ipairs { { "sgd", function(p) return T.optim.SGD(p, { lr = 0.1, momentum = 0.9 }) end },
                       { "adam", function(p) return T.optim.Adam(p, { lr = 0.01 }) end } } do
    it(o[1] .. "'s state_dict from PyTorch continues training where PyTorch stopped", function()
      local ck = T.load_torch(FIX .. o[1] .. ".pt")
      local m = mlp()
      m:load_state_dict(ck.model, { torch_names = true })
      local opt = o[2](m:parameters())
      opt:load_state_dict(ck.optim)
      local c = cases[o[1] .. "_step"]
      opt:zero_grad()
      F.mse_loss(m(tensor_of(item(c, "x"))), tensor_of(item(c, "target"))):backward()
      opt:step()
      local after = m:state_dict { torch_names = true }
      for _, kv in ipairs(item(c, "after").items) do close(after[kv[1]], tensor_of(kv[2]), 1e-6, kv[1]) end
    end)
  end

  it("refuses code: the globals a malicious pickle names, and never runs them", function()
    os.remove(PWNED)
    for file, global in pairs { evil_os = "os.system", evil_system = "posix.system",
                                evil_eval = "__builtin__.eval", evil_class = "__main__.Exploit" } do
      local e = err_of(T.load_torch, FIX .. file .. ".pt")
      assert.matches("refusing global '" .. global .. "' (a checkpoint must never run code)", e, 1, true)
    end
    assert.matches("refusing pickle opcode INST", err_of(T.load_torch, FIX .. "evil_inst.pt"), 1, true)
    assert.is_false(exists(PWNED))
  end)

  it("says what other files are: legacy format, TorchScript, a pickled module, not a zip", function()
    assert.matches("legacy format", err_of(T.load_torch, FIX .. "legacy.pt"), 1, true)
    assert.matches("TorchScript archive", err_of(T.load_torch, FIX .. "torchscript.pt"), 1, true)
    assert.matches("save model.state_dict() instead", err_of(T.load_torch, FIX .. "module.pt"), 1, true)
    local p = tmp(".pt")
    writeall(p, "hello, not a checkpoint at all")
    assert.matches("^load_torch: '" .. p:gsub("%p", "%%%0") .. "': not a zip archive", err_of(T.load_torch, p))
    writeall(p, "")
    assert.matches("empty file", err_of(T.load_torch, p), 1, true)
    os.remove(p)
    assert.matches("load_torch: cannot open", err_of(T.load_torch, p), 1, true)
    assert.matches("load_torch: expected a file path", err_of(T.load_torch, 5), 1, true)
    assert.matches("load_torch: takes no options", err_of(T.load_torch, p, {}), 1, true)
  end)

  it("every truncation and every flipped byte of a file: an error or a value, never a crash", function()
    local good = readall(FIX .. "views.pt")
    local p = tmp(".pt")
    local loaded, failed = 0, 0
    local function try(bytes)
      writeall(p, bytes)
      local ok, e = pcall(T.load_torch, p)
      if ok then loaded = loaded + 1 else
        failed = failed + 1
        assert.matches("^load_torch: ", tostring(e))
      end
    end
    for n = 0, #good - 1 do try(good:sub(1, n)) end
    for i = 1, #good do
      local b = good:byte(i)
      try(good:sub(1, i - 1) .. string.char((b + 1 + (i % 254)) % 256) .. good:sub(i + 1))
    end
    os.remove(p)
    assert.is_true(failed > #good) -- truncations all fail; most flips are caught by the CRCs
    collectgarbage()
  end)
end)

describe("save_torch", function()
  it("round-trips values, kinds, key order, views and sharing through load_torch", function()
    local base = T.arange(12, { dtype = T.float32 }):reshape(3, 4)
    local v = {
      base = base, rows = base:narrow(1, 2, 2), t = base:t(), again = base,
      none = T.None, int = 3, float = 2.5, yes = true, str = "h\195\169llo", bytes = "\255\0a",
      list = { 1, 2, 3 }, tuple = T.torch_kind({ 1, "a" }, "tuple"),
      int_keys = T.torch_kind({ [1] = "a", [2] = "b" }, "dict"), empty = {},
      dtype = T.bfloat16, meta = T.empty(2, 3, { device = "meta" }),
      rg = T.ones(2, { requires_grad = true }), zero_d = T.tensor(3.5),
      size = T.Size { 2, 3 }, nested = { a = { b = { c = T.ones(2, { dtype = T.int16 }) } } },
    }
    v.shared = { v.list, v.list }
    v.int62 = math.tointeger and math.tointeger(2 ^ 62) or 2 ^ 62 -- exact past 2^53 both ways
    local p = tmp(".pt")
    T.save_torch(p, v)
    local w = T.load_torch(p)
    os.remove(p)
    assert.equal("dict", T.torch_kind(w))
    local keys = w.keys()
    for i = 2, #keys do assert.is_true(keys[i - 1] < keys[i]) end -- sorted
    for _, k in ipairs { "base", "rows", "t", "zero_d" } do close(w[k], v[k], 0, k) end
    assert.same({ 4, 1 }, w.rows:stride())
    assert.equal(4, w.rows:storage_offset())
    assert.same({ 1, 4 }, w.t:stride())
    assert.equal(w.base, w.again)
    w.base[1][1] = 100
    assert.equal(100, w.t[1][1]:item())
    assert.equal(T.None, w.none)
    assert.equal(3, w.int)
    if math.type then assert.equal("integer", math.type(w.int)) end
    assert.equal(2.5, w.float)
    assert.is_true(w.yes)
    assert.equal("h\195\169llo", w.str)
    assert.equal("\255\0a", w.bytes)
    assert.equal("list", T.torch_kind(w.list))
    assert.same({ 1, 2, 3 }, { w.list[1], w.list[2], w.list[3] })
    assert.equal("tuple", T.torch_kind(w.tuple))
    assert.equal("tuple", T.torch_kind(w.size))
    assert.equal("b", w.int_keys[2])
    assert.equal("dict", T.torch_kind(w.empty))
    assert.equal(T.bfloat16, w.dtype)
    assert.equal("meta", w.meta.device.type)
    assert.is_true(w.rg.requires_grad)
    assert.equal(T.int16, w.nested.a.b.c.dtype)
    assert.equal(w.shared[1], w.shared[2])
    assert.equal("4611686018427387904", (tostring(w.int62):gsub("LL$", "")))
  end)

  it("a module's state_dict{torch_names = true} round-trips through a file, back with torch_names", function()
    T.manual_seed(3)
    local a, b = mlp(), mlp()
    local sd = a:state_dict { torch_names = true }
    assert.same({ "0.weight", "0.bias", "2.weight", "2.bias" }, sd.keys())
    local p = tmp(".pt")
    T.save_torch(p, sd)
    local back = T.load_torch(p)
    os.remove(p)
    assert.equal("OrderedDict", T.torch_kind(back))
    b:load_state_dict(back, { torch_names = true })
    for k, t in pairs(a:state_dict()) do close(b:state_dict()[k], t, 0, k) end
    assert.has_error(function() a:state_dict { bogus = "x" } end,
      "state_dict: unknown option 'bogus' (expected one of: torch_names, prefix, keep_vars)")
  end)

  it("refuses what PyTorch cannot hold, naming where it is", function()
    local p = tmp(".pt")
    assert.matches("save_torch: the value.f is a function", err_of(T.save_torch, p, { f = print }), 1, true)
    assert.matches("save_torch: the value%.x%[2%] is a function", err_of(T.save_torch, p, { x = { 1, print } }))
    assert.matches("with holes", err_of(T.save_torch, p, T.torch_kind({ 1, nil, 3 }, "list")), 1, true)
    assert.matches("has the key 'x'", err_of(T.save_torch, p, T.torch_kind({ 1, x = 2 }, "tuple")), 1, true)
    local tup = T.torch_kind({}, "tuple")
    tup[1] = tup
    assert.matches("a tuple that contains itself", err_of(T.save_torch, p, tup), 1, true)
    local cyc = {}
    cyc[1] = cyc -- a list may contain itself (the pickle's memo)
    T.save_torch(p, cyc)
    local back = T.load_torch(p)
    assert.equal(back, back[1])
    assert.matches("has a table as a key", err_of(T.save_torch, p, { [{}] = 1 }), 1, true)
    assert.matches("has both true and 1 as keys", err_of(T.save_torch, p, { [0] = "z", [1] = "o", [true] = "t" }), 1, true)
    assert.matches("marked __torch = 'set'", err_of(T.save_torch, p, setmetatable({}, { __torch = "set" })), 1, true)
    assert.matches("expected a value to save", err_of(T.save_torch, p), 1, true)
    assert.matches("takes no options", err_of(T.save_torch, p, {}, {}), 1, true)
    assert.matches("cannot open", err_of(T.save_torch, "/nonexistent/dir/x.pt", {}), 1, true)
    assert.matches("torch_kind: unknown kind 'set'", err_of(T.torch_kind, {}, "set"), 1, true)
    assert.matches("torch_kind: expected a table", err_of(T.torch_kind, 5), 1, true)
    os.remove(p)
  end)

  it("PyTorch reads ember's files back (gen_torch.py --check, when /usr/bin/python3 has torch)", function()
    local dir = tmp("-torch-check")
    assert(os.execute("mkdir -p " .. dir))
    -- every dtype
    local d = {}
    for _, name in ipairs { "bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                            "bfloat16", "float32", "float64" } do
      local r = T.arange(6) * 3 - 5
      if name == "bool" then r = (T.arange(6) % 2):eq(0) end
      if name == "uint8" then r = T.arange(6) * 3 + 250 end
      d[name] = r:to(T[name])
    end
    T.save_torch(dir .. "/dtypes.pt", d)
    -- views of one storage
    local base = T.arange(12, { dtype = T.float32 }):reshape(3, 4)
    local same = T.ones(3)
    T.save_torch(dir .. "/views.pt", { base = base, rows = base:narrow(1, 2, 2), t = base:t(),
      narrow = base:narrow(2, 2, 2), row = base[3], same = same, same2 = same,
      zero_d = T.tensor(3.5), empty = T.empty(0, 3) })
    -- values
    T.save_torch(dir .. "/misc.pt", { none = T.None, int = 3, float = 2.5, bool = true,
      str = "h\195\169llo", bytes = "\255\0a", list = { 1, 2, 3 }, tuple = T.torch_kind({ 1, "a" }, "tuple"),
      int_keys = T.torch_kind({ [1] = "a", [2] = "b" }, "dict"), dtype = T.float16,
      meta = T.empty(2, 3, { device = "meta" }), rg = T.ones(2, { requires_grad = true }),
      nested = { a = { b = { c = T.ones(2) } } } })
    -- complex tensors and dtypes, and -0.0 (a float, not the int 0)
    local c128 = T.complex(T.tensor({ { 1, -0.5 }, { 0, 2.5 } }, { dtype = T.float64 }),
      T.tensor({ { 2, 0 }, { -1e300, 0 } }, { dtype = T.float64 }))
    T.save_torch(dir .. "/complex.pt", { c64 = T.complex(T.tensor({ 1, 3 }, { dtype = T.float32 }), T.tensor({ 2, -4 }, { dtype = T.float32 })),
      c128 = c128:t(), dt = { T.complex64, T.complex128 }, nz = -0.0 })
    -- a Sequential's state_dict and its output, and Adam's state
    T.manual_seed(4)
    local m = mlp()
    local x, target = T.randn(6, 4), T.randn(6, 3)
    T.save_torch(dir .. "/mlp.pt", m:state_dict { torch_names = true })
    T.save_torch(dir .. "/mlp_io.pt", { sd = m:state_dict { torch_names = true }, x = x, y = m(x):detach() })
    local opt = T.optim.Adam(m:parameters(), { lr = 0.01 })
    local function step()
      opt:zero_grad()
      F.mse_loss(m(x), target):backward()
      opt:step()
    end
    step()
    local ck = { model = m:state_dict { torch_names = true }, optim = opt:state_dict(), x = x, target = target }
    for k, t in pairs(ck.model) do ck.model[k] = t:clone() end
    step()
    ck.after = m:state_dict { torch_names = true }
    T.save_torch(dir .. "/adam.pt", ck)
    -- without the sanitizer runtimes make test-asan preloads (python would load them too)
    local py = "env -u LD_PRELOAD /usr/bin/python3"
    local r = os.execute(py .. " -c 'import torch' >/dev/null 2>&1")
    if r ~= true and r ~= 0 then
      os.execute("rm -rf " .. dir)
      pending("/usr/bin/python3 cannot import torch: PyTorch's side not checked")
      return
    end
    local h = io.popen(py .. " tests/fixtures/gen_torch.py --check " .. dir .. " 2>&1")
    local out = h:read("*a")
    local ok = h:close()
    os.execute("rm -rf " .. dir)
    assert(out:match("(%d+) passed, 0 failed"), "gen_torch.py --check:\n" .. out)
    assert(ok == true or ok == 0, out)
    assert.is_true(tonumber(out:match("(%d+) passed")) >= 60)
  end)
end)
