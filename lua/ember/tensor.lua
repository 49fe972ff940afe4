-- Tensor methods written in Lua on top of ember.core, and the tensor
-- metatable's __index/__newindex.
return function(T, C)
  local M = C._methods
  local mt, cindex, index_get = C._Tensor_mt, C._tensor_index, C._index_get
  local type = type

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
      return index_get(t, k)
    end
  end

  -- FFI fast paths. `ffi.cast(ptr, userdata)` gives a full userdata's
  -- payload address, which for a tensor is its em_tensor pointer; the
  -- fields are read at byte offsets that C._layout takes from the structs
  -- of engine/src/internal.h (so there is one declaration of the layout).
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

    local function dim(t)
      local h = header(t)
      if h == nil then return c_dim(t) end
      return cast(i32p, h + O_NDIM)[0]
    end
    M.dim, M.ndimension = dim, dim

    M.size = function(t, d)
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
    local function numel(t)
      local h = header(t)
      if h == nil then return c_numel(t) end
      local nd = cast(i32p, h + O_NDIM)[0]
      local sz = cast(i64p, h + O_SIZES)
      local n = I64_ONE
      for i = 0, nd - 1 do
        local s = sz[i]
        if s == 0 then return 0 end
        n = n * s
      end
      return tonumber(n)
    end
    M.numel, M.nelement = numel, numel

    -- item: exactly one element (every size is 1), on the CPU, of a dtype
    -- read here; int64 only when the value is exact as a Lua number
    M.item = function(t)
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
          if dt == F32 then return tonumber(cast(f32p, data)[off]) end
          if dt == F64 then return tonumber(cast(f64p, data)[off]) end
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

  -- for i, sub in t:iter() do ... end: sub-tensors along dim 1 (views).
  function M.iter(t)
    if t:dim() == 0 then error("iter: iteration over a 0-d tensor", 2) end
    local n, i = t:size(1), 0
    return function()
      i = i + 1
      if i <= n then return i, t[i] end
    end
  end

  T.newaxis = setmetatable({}, { __tostring = function() return "ember.newaxis" end })
end
