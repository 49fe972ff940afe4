-- Sharing memory with the outside, the Lua half (docs/interop.md):
-- t:data() and T.from_ffi over LuaJIT's FFI. The C half (ember.core) has
-- .npy/.npz, T.save/T.load, DLPack capsules and the owner anchors of
-- T.from_ffi.
return function(T, C)
  local M = C._methods
  local has_ffi, ffi = pcall(require, "ffi")
  if not has_ffi then ffi = nil end

  -- the FFI pointer type of each dtype; the half types have no C type, so
  -- their pointers are uint16_t* over the raw bits
  local pointer_ctype = {
    bool = "bool *", uint8 = "uint8_t *", int8 = "int8_t *", int16 = "int16_t *",
    int32 = "int32_t *", int64 = "int64_t *", float16 = "uint16_t *",
    bfloat16 = "uint16_t *", float32 = "float *", float64 = "double *",
  }
  if ffi then
    for k, v in pairs(pointer_ctype) do pointer_ctype[k] = ffi.typeof(v) end
  end

  local function need_ffi(op)
    if not ffi then
      error(op .. ": needs LuaJIT's FFI (this Lua has no 'ffi' module)", 0)
    end
  end

  -- t:data(): a typed pointer to the first element, sharing the storage.
  -- The pointer keeps the tensor (so its memory) alive while it is itself
  -- reachable; pointers derived from it by arithmetic do not.
  function M.data(t, ...)
    require("ember.args").nomore("data", 1, ...)
    if not T.is_tensor(t) then
      error("data: expected a tensor for argument #1, got " .. type(t), 0)
    end
    if t.requires_grad then
      error("Can't call data() on Tensor that requires grad. Use t:detach():data() instead.", 0)
    end
    if t.device.type == "meta" then error("data: a meta tensor has no data", 0) end
    if t.device.type ~= "cpu" then
      error(("Can't call data() on a tensor on %s: use :cpu() first"):format(tostring(t.device)), 0)
    end
    need_ffi("data")
    local p = ffi.cast(pointer_ctype[t.dtype.name], t:data_ptr())
    local keep = t
    return ffi.gc(p, function() keep = nil end)
  end

  -- element types as ffi.typeof prints them
  local elem_dtype = {
    bool = T.bool, uint8_t = T.uint8, ["unsigned char"] = T.uint8,
    int8_t = T.int8, char = T.int8, ["signed char"] = T.int8,
    int16_t = T.int16, short = T.int16, int32_t = T.int32, int = T.int32,
    int64_t = T.int64, ["long long"] = T.int64, long = T.int64,
    float = T.float32, double = T.float64,
  }
  local function todtype(d)
    if T.is_dtype(d) then return d end
    if type(d) == "string" then
      local v = T[d:gsub("^ember%.", "")]
      if T.is_dtype(v) then return v end
      error(("from_ffi: unknown dtype '%s'"):format(d), 0)
    end
    error("from_ffi: expected a dtype for option 'dtype', got " .. type(d), 0)
  end

  local from_ffi_opts = { dtype = true, strides = true, owner = true, nbytes = true }

  -- T.from_ffi(ptr, sizes, {dtype=, strides=, owner=, nbytes=}): a CPU
  -- tensor over foreign memory, without copying. owner (default: ptr
  -- itself, so an ffi.new array stays alive) is kept alive until the last
  -- view of the memory dies.
  function T.from_ffi(ptr, sizes, opts)
    need_ffi("from_ffi")
    if type(ptr) ~= "cdata" then
      error(("from_ffi: expected an FFI pointer or array for argument #1, got %s"):format(type(ptr)), 0)
    end
    if type(sizes) == "table" and getmetatable(sizes) == nil and opts == nil
        and next(sizes) ~= nil and #sizes == 0 then
      sizes, opts = nil, sizes -- T.from_ffi(array, {dtype = ...})
    end
    opts = opts or {}
    if type(opts) ~= "table" then
      error("from_ffi: expected an options table, got " .. type(opts), 0)
    end
    for k in pairs(opts) do
      if not from_ffi_opts[k] then error(("from_ffi: unknown option '%s'"):format(tostring(k)), 0) end
    end
    local ct = tostring(ffi.typeof(ptr))
    local elem, shape = ct:match("^ctype<(.-)%s*([%*%[])")
    if not elem then
      error(("from_ffi: expected an FFI pointer or array, got %s"):format(ct), 0)
    end
    elem = elem:gsub("^const ", ""):gsub("^volatile ", "")
    local is_array = shape == "["
    local inferred = elem_dtype[elem]
    local dtype = opts.dtype ~= nil and todtype(opts.dtype) or nil
    if dtype and inferred and dtype ~= inferred then
      error(("from_ffi: dtype %s does not match the pointer's element type %s"):format(tostring(dtype), elem), 0)
    elseif dtype and not inferred and elem ~= "void" then
      local ok = (elem == "uint16_t" or elem == "unsigned short") and dtype.itemsize == 2
        and dtype.is_floating_point
      if not ok then
        error(("from_ffi: dtype %s does not match the pointer's element type %s"):format(tostring(dtype), elem), 0)
      end
    elseif not dtype and not inferred then
      if elem == "void" then
        error("from_ffi: a void pointer needs the dtype option", 0)
      elseif elem == "uint16_t" or elem == "unsigned short" then
        error("from_ffi: a uint16_t pointer needs dtype = T.float16 or T.bfloat16", 0)
      end
      error(("from_ffi: unsupported element type '%s'"):format(elem), 0)
    end
    dtype = dtype or inferred
    local nbytes = opts.nbytes
    if nbytes == nil and is_array then nbytes = ffi.sizeof(ptr) end
    if type(sizes) == "number" then
      sizes = { sizes }
    elseif sizes == nil then
      if not is_array then error("from_ffi: sizes are required for a pointer", 0) end
      sizes = { math.floor(nbytes / dtype.itemsize) }
    elseif type(sizes) ~= "table" then
      error("from_ffi: expected sizes (a number or a table), got " .. type(sizes), 0)
    end
    local owner = opts.owner
    if owner == nil then owner = ptr end
    local addr = tonumber(ffi.cast("uintptr_t", ptr))
    return C._from_ffi(addr, dtype, sizes, opts.strides, owner, nbytes)
  end

  -- T.from_dlpack also takes a DLManagedTensor* from another library as an
  -- FFI pointer (or the light userdata of capsule:release()), and takes
  -- ownership of it on success.
  local from_dlpack = C.from_dlpack
  function T.from_dlpack(x, ...)
    require("ember.args").nomore("from_dlpack", 1, ...)
    if ffi and type(x) == "cdata" then
      return C._from_dlpack_address(tonumber(ffi.cast("uintptr_t", ffi.cast("void *", x))))
    end
    return from_dlpack(x)
  end

end
