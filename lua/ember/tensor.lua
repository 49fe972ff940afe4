-- Tensor methods written in Lua on top of ember.core, and the tensor
-- metatable's __index/__newindex.
return function(T, C)
  local M = C._methods
  local mt, cindex, index_get = C._Tensor_mt, C._tensor_index, C._index_get
  local type = type
  local nomore = require("ember.args").nomore

  -- t.name / t:name() / t[key]. ember.core's __index is a C closure (kept
  -- as C._tensor_index); LuaJIT cannot compile a call to it, so every
  -- method call paid it in the interpreter. This Lua function dispatches the
  -- same way and is compiled: methods first, then the property getters of
  -- C._props through the C closure (so a getter's error reads exactly as
  -- before), then indexing for every key that is not a string (a tail
  -- call: its errors name the caller's line, as before). __newindex stays
  -- the C closure (assignments are not a per-call hot path).
  -- Hot reads done from Lua through LuaJIT's FFI (below); empty without it.
  local fastprops = {}
  -- Non-string keys parsed from Lua (below): nkey(k) writes k's items into
  -- the buffer of C._index_items after a new stamp s (a count of the calls)
  -- and returns their count and s, or returns nil
  -- for a key it does not parse. Set under LuaJIT's FFI only.
  local nkey, index_items

  -- Installed under LuaJIT only: it exists to be compiled; PUC Lua keeps
  -- the C closure (and its error positions, which a Lua frame would shift).
  if jit then
    mt.__index = function(t, k)
      if type(k) == "string" then
        local m = M[k]
        if m ~= nil then return m end
        local f = fastprops[k]
        if f ~= nil then return f(t) end
        return cindex(t, k)
      end
      if nkey ~= nil then
        local n, s = nkey(k)
        if n ~= nil then return index_items(t, k, n, s) end
      end
      return index_get(t, k)
    end
  end

  -- FFI fast paths. `ffi.cast(ptr, userdata)` gives a full userdata's
  -- payload address, which for a tensor is its em_tensor pointer; the
  -- fields are read at byte offsets that C._layout takes from the structs
  -- of engine/src/core/core.h (so there is one declaration of the layout).
  -- Each fast path reads only what it can do exactly as the C function
  -- does, and hands every other case (not a tensor, a collected box, a dim
  -- out of range, a dtype it does not read, a tensor not on the CPU) to the
  -- C function, which also raises the errors: results and messages are the
  -- C ones. Without LuaJIT (PUC Lua 5.4) the C functions stay.
  local has_ffi, ffi = pcall(require, "ffi")
  local Lo = has_ffi and C._layout and C._layout()
  if Lo and Lo.box_size == ffi.sizeof("void *") then
    -- the C methods, kept once: this file runs again when ember is
    -- required again in the same state (busted), when M holds these
    local orig = C._c_methods or {}
    C._c_methods = orig
    for _, name in ipairs { "item", "dim", "ndimension", "size", "numel", "nelement" } do
      if orig[name] == nil then orig[name] = M[name] end
    end
    local c_item, c_dim, c_size, c_numel = orig.item, orig.dim, orig.size, orig.numel

    local cast, getmetatable, setmetatable, tonumber = ffi.cast, getmetatable, setmetatable, tonumber
    local ptrp = ffi.typeof("char **")
    local i32p, i64p = ffi.typeof("int32_t *"), ffi.typeof("int64_t *")
    local f32p, f64p = ffi.typeof("float *"), ffi.typeof("double *")
    local u32p = ffi.typeof("uint32_t *")
    local HI = ffi.abi("le") and 1 or 0 -- the high word of a double
    local O_NDIM, O_DTYPE, O_STORAGE, O_OFFSET, O_SIZES =
      Lo.ndim, Lo.dtype, Lo.storage, Lo.offset, Lo.sizes
    local O_SDATA, O_SDEV, CPU = Lo.storage_data, Lo.storage_device, Lo.cpu
    local F32, F64, I32, I64, BOOL = Lo.float32, Lo.float64, Lo.int32, Lo.int64, Lo.bool
    local dtypes, Size_mt = Lo.dtypes, Lo.Size_mt
    -- int64 constants made at run time: an `LL` literal would not parse
    -- under Lua 5.4, which loads this file too
    local I64_ONE, I64_2P53 = ffi.new("int64_t", 1), ffi.new("int64_t", 2 ^ 53)

    -- the em_tensor of a live tensor userdata, or nil
    local function header(t)
      if getmetatable(t) ~= mt then return nil end
      local h = cast(ptrp, t)[0]
      if h == nil then return nil end
      return h
    end
    -- for the FFI entries of other modules (distributed.lua's all_reduce)
    C._ffi_header = header

    local function shape_of(h)
      local nd = cast(i32p, h + O_NDIM)[0]
      local sz = cast(i64p, h + O_SIZES)
      if nd == 2 then return setmetatable({ tonumber(sz[0]), tonumber(sz[1]) }, Size_mt) end
      if nd == 1 then return setmetatable({ tonumber(sz[0]) }, Size_mt) end
      if nd == 3 then
        return setmetatable({ tonumber(sz[0]), tonumber(sz[1]), tonumber(sz[2]) }, Size_mt)
      end
      local s = {}
      for i = 1, nd do s[i] = tonumber(sz[i - 1]) end
      return setmetatable(s, Size_mt)
    end

    fastprops.shape = function(t)
      local h = header(t)
      if h == nil then return cindex(t, "shape") end
      return shape_of(h)
    end
    fastprops.ndim = function(t)
      local h = header(t)
      if h == nil then return cindex(t, "ndim") end
      return cast(i32p, h + O_NDIM)[0]
    end
    fastprops.dtype = function(t)
      local h = header(t)
      if h == nil then return cindex(t, "dtype") end
      return dtypes[cast(i32p, h + O_DTYPE)[0] + 1]
    end

    -- the device of a CPU tensor: the interned cpu device (devices are
    -- interned by name, so this is the table the C property returns),
    -- without the C call that looks it up (about 0.2 us)
    local cpu_device
    fastprops.device = function(t)
      local h = header(t)
      if h ~= nil and cpu_device ~= nil and cast(i32p, cast(ptrp, h + O_STORAGE)[0] + O_SDEV)[0] == CPU then
        return cpu_device
      end
      local d = cindex(t, "device")
      if h ~= nil and cpu_device == nil and d.type == "cpu" then cpu_device = d end
      return d
    end

    local function dim(t, extra)
      if extra ~= nil then return c_dim(t, extra) end -- refused there
      local h = header(t)
      if h == nil then return c_dim(t) end
      return cast(i32p, h + O_NDIM)[0]
    end
    M.dim, M.ndimension = dim, dim

    M.size = function(t, d, extra)
      if extra ~= nil then return c_size(t, d, extra) end -- refused there
      local h = header(t)
      if h ~= nil then
        if d == nil then return shape_of(h) end
        local nd = cast(i32p, h + O_NDIM)[0]
        if type(d) == "number" and d % 1 == 0 then
          if d >= 1 and d <= nd then return tonumber(cast(i64p, h + O_SIZES)[d - 1]) end
          if d <= -1 and d >= -nd then return tonumber(cast(i64p, h + O_SIZES)[nd + d]) end
        end
      end
      return c_size(t, d)
    end

    -- numel: 0 when a size is 0 (an empty view's other sizes may multiply
    -- past int64), else the int64 product, as em_tensor_numel
    -- Up to 3 dims without a loop: numel is mostly called once, from code
    -- that is not itself a loop, and LuaJIT aborts (then blacklists) a
    -- trace that starts in a function and leaves a loop of it, after which
    -- every call ran interpreted, int64 arithmetic boxed (about 1 us).
    local function numel_loop(sz, nd)
      local n = I64_ONE
      for i = 0, nd - 1 do
        local s = sz[i]
        if s == 0 then return 0 end
        n = n * s
      end
      return tonumber(n)
    end
    local function numel(t, extra)
      if extra ~= nil then return c_numel(t, extra) end -- refused there
      local h = header(t)
      if h == nil then return c_numel(t) end
      local nd = cast(i32p, h + O_NDIM)[0]
      local sz = cast(i64p, h + O_SIZES)
      if nd == 1 then return tonumber(sz[0]) end
      if nd == 0 then return 1 end
      if nd == 2 then
        local a, b = sz[0], sz[1]
        if a == 0 or b == 0 then return 0 end
        return tonumber(a * b)
      end
      if nd == 3 then
        local a, b, c = sz[0], sz[1], sz[2]
        if a == 0 or b == 0 or c == 0 then return 0 end
        return tonumber(a * b * c)
      end
      return numel_loop(sz, nd)
    end
    M.numel, M.nelement = numel, numel

    -- item: exactly one element (every size is 1), on the CPU, of a dtype
    -- read here; int64 only when the value is exact as a Lua number
    M.item = function(t, extra)
      if extra ~= nil then return c_item(t, extra) end -- refused there
      local h = header(t)
      if h ~= nil then
        local nd = cast(i32p, h + O_NDIM)[0]
        local sz = cast(i64p, h + O_SIZES)
        local one = true
        for i = 0, nd - 1 do
          if sz[i] ~= 1 then one = false; break end
        end
        local st = cast(ptrp, h + O_STORAGE)[0]
        if one and cast(i32p, st + O_SDEV)[0] == CPU then
          local data = cast(ptrp, st + O_SDATA)[0]
          local off = cast(i64p, h + O_OFFSET)[0]
          local dt = cast(i32p, h + O_DTYPE)[0]
          -- a float whose exponent bits are all ones (inf or NaN) goes to
          -- the C path: LuaJIT tags its values inside the NaN space, and a
          -- NaN payload read through the FFI (-NaN with every bit set, as
          -- vector blends make) can come back as nil; lua_pushnumber
          -- makes NaNs canonical
          if dt == F32 then
            if cast(u32p, data)[off] % 0x80000000 < 0x7f800000 then return tonumber(cast(f32p, data)[off]) end
          elseif dt == F64 then
            if cast(u32p, data)[2 * off + HI] % 0x80000000 < 0x7ff00000 then return tonumber(cast(f64p, data)[off]) end
          end
          if dt == I32 then return tonumber(cast(i32p, data)[off]) end
          if dt == I64 then
            local v = cast(i64p, data)[off]
            if v < I64_2P53 and v > -I64_2P53 then return tonumber(v) end
          end
        end
      end
      return c_item(t)
    end
  end

  -- t[key] and T.tensor{...} (docs/performance.md, "Per-call cost"). The C
  -- paths (l_index.c, l_tensor.c) walk the key or the data through the
  -- Lua C API, a call per value; these recognise the common cases in Lua,
  -- compiled with the caller, and hand C plain numbers. Anything else goes
  -- to the C path, which also raises every error, so results and messages
  -- are the C ones; tests/lua/percall_spec.lua compares both. Installed
  -- only when the JIT compiler is on as ember loads: interpreted, the FFI
  -- writes cost more than the C paths save (`luajit -joff`: t[{ {}, {2, 3} }]
  -- 553 -> 814 ns; a jit.off() after loading keeps them, and that cost).
  local jit_on = jit ~= nil and jit.status() == true
  if jit_on and Lo and Lo.box_size == ffi.sizeof("void *") and C._index_fast then
    local cast, rawget, getmetatable, next = ffi.cast, rawget, getmetatable, next
    local i64p = ffi.typeof("int64_t *")
    if C._index_fast_set == nil then C._index_fast_set = { C._index_fast() } end
    local set = C._index_fast_set
    local bufud, items_fn, max_items, K = set[1], set[2], set[3], set[4]
    local buf = cast(i64p, bufud)
    local KINT, KFULL, KRANGE, KELL = K.int, K.full, K.range, K.ellipsis
    local B = 2 ^ 53 -- bounds read here: |v| < 2^53 (C takes up to 2^63)

    -- one entry of a key table into slots j..j+3; false if not parsed here
    local function entry(e, j)
      local te = type(e)
      if te == "number" then
        if e % 1 ~= 0 or e <= -B or e >= B then return false end
        buf[j] = KINT; buf[j + 1] = e
        return true
      elseif te == "table" then
        if getmetatable(e) ~= nil then return false end -- T.newaxis, objects
        local m = #e
        -- an entry past the length (after a nil) or a non-position key: C
        -- refuses it (the length may stop at a nil: {1, nil, 2})
        if next(e, m > 0 and m or nil) ~= nil then return false end
        if m == 0 then buf[j] = KFULL; return true end
        if m > 3 then return false end
        local a = rawget(e, 1)
        if type(a) ~= "number" or a % 1 ~= 0 or a <= -B or a >= B then return false end
        local b, s = a, 1
        if m >= 2 then
          b = rawget(e, 2)
          if type(b) ~= "number" or b % 1 ~= 0 or b <= -B or b >= B then return false end
          if m == 3 then
            s = rawget(e, 3)
            if type(s) ~= "number" or s % 1 ~= 0 or s < 1 or s >= B then return false end
          end
        end
        buf[j] = KRANGE; buf[j + 1] = a; buf[j + 2] = b; buf[j + 3] = s
        return true
      elseif e == "..." then
        buf[j] = KELL
        return true
      end
      return false
    end

    -- The stamp goes first: were a debug hook to index between these writes
    -- and the C call, its own stamp would be in the buffer, and C would
    -- parse k itself.
    local stampp = cast(ffi.typeof("double *"), bufud) + 4 * max_items
    nkey = function(k)
      local s = stampp[0]
      s = s < 2 ^ 52 and s + 1 or 0
      stampp[0] = s
      if type(k) == "number" then
        if k % 1 ~= 0 or k <= -B or k >= B then return nil end
        buf[0] = KINT; buf[1] = k
        return 1, s
      end
      if type(k) ~= "table" or getmetatable(k) ~= nil then return nil end
      local n = #k
      if next(k, n > 0 and n or nil) ~= nil then return nil end -- as entry()
      if n <= 3 then -- straight code: a loop this short would not be compiled well
        if n >= 1 and not entry(rawget(k, 1), 0) then return nil end
        if n >= 2 and not entry(rawget(k, 2), 4) then return nil end
        if n == 3 and not entry(rawget(k, 3), 8) then return nil end
        return n, s
      end
      if n > max_items then return nil end
      for i = 1, n do
        if not entry(rawget(k, i), 4 * (i - 1)) then return nil end
      end
      return n, s
    end
    index_items = items_fn
  end

  -- T.tensor{...} of a flat list of numbers and booleans, without options:
  -- the kind of each value as scan_data decides it (boolean; number that is
  -- an integer within +-2^63; other number), C._tensor_flat makes the
  -- tensor of the highest kind (bool, int64, the default float), and the
  -- values are written here through the FFI, converted as
  -- em_scalar_to_bytes converts them (a Lua number to float32 is rounded
  -- once, as the C cast; true/false are 1/0). A list of up to 3 values is
  -- read without a loop (a loop that short does not compile well).
  if jit_on and Lo and Lo.box_size == ffi.sizeof("void *") and C._tensor_flat then
    local c_tensor, tensor_flat = C.tensor, C._tensor_flat -- C.tensor: the C path
    local cast, floor, rawget, type = ffi.cast, math.floor, rawget, type
    local u8p, i64p = ffi.typeof("uint8_t *"), ffi.typeof("int64_t *")
    local f32p, f64p = ffi.typeof("float *"), ffi.typeof("double *")
    local F32, F64, I64 = Lo.float32, Lo.float64, Lo.int64
    local M63 = 2 ^ 63

    -- the kind of one value (0 bool, 1 integer, 2 float), or nil
    local function kind_of(v)
      local tv = type(v)
      if tv == "number" then
        if v == floor(v) and v < M63 and v >= -M63 then return 1 end
        return 2
      end
      if tv == "boolean" then return 0 end
      return nil
    end

    -- value v as a number (booleans are 1/0)
    local function num(v)
      if v == true then return 1 end
      if v == false then return 0 end
      return v
    end

    local function fill(p, data, n)
      if n <= 3 then
        p[0] = num(rawget(data, 1))
        if n >= 2 then p[1] = num(rawget(data, 2)) end
        if n == 3 then p[2] = num(rawget(data, 3)) end
      else
        for i = 1, n do p[i - 1] = num(rawget(data, i)) end
      end
    end

    T.tensor = function(...)
      local data, opts = ...
      if opts == nil and type(data) == "table" then
        local n = #data
        local kind
        if n <= 3 then
          if n >= 1 then
            kind = kind_of(rawget(data, 1))
            if n >= 2 and kind ~= nil then
              local k2 = kind_of(rawget(data, 2))
              if k2 == nil then kind = nil elseif k2 > kind then kind = k2 end
            end
            if n == 3 and kind ~= nil then
              local k3 = kind_of(rawget(data, 3))
              if k3 == nil then kind = nil elseif k3 > kind then kind = k3 end
            end
          end
        elseif n < 2 ^ 31 then
          kind = -1
          for i = 1, n do
            local k = kind_of(rawget(data, i))
            if k == nil then kind = nil; break end
            if k > kind then kind = k end
          end
        end
        if kind ~= nil then
          local t, p, dt = tensor_flat(n, kind)
          if t == nil then return c_tensor(...) end -- a float16 default dtype
          if dt == F32 then fill(cast(f32p, p), data, n); return t end
          if dt == F64 then fill(cast(f64p, p), data, n); return t end
          if dt == I64 then fill(cast(i64p, p), data, n); return t end
          fill(cast(u8p, p), data, n) -- bool
          return t
        end
      end
      return c_tensor(...)
    end
  end

  -- for i, sub in t:iter() do ... end: sub-tensors along dim 1 (views).
  function M.iter(t, ...)
    nomore("iter", 1, ...)
    if t:dim() == 0 then error("iter: iteration over a 0-d tensor", 2) end
    local n, i = t:size(1), 0
    return function()
      i = i + 1
      if i <= n then return i, t[i] end
    end
  end

  T.newaxis = setmetatable({}, { __tostring = function() return "ember.newaxis" end })
end
