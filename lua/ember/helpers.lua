-- The everyday helpers PyTorch users reach for, written as compositions of
-- ember's ops (so differentiable where those are; docs/helpers.md):
-- the new_* constructors and type_as; reshaping and splitting helpers
-- (ravel, fliplr/flipud, hsplit/vsplit/dsplit, atleast_nd, column_stack,
-- block_diag, broadcast_tensors/broadcast_shapes, take_along_dim,
-- sum_to_size, diagflat); combinatorics (cartesian_prod, combinations,
-- tril_indices/triu_indices, 1-based); tests (isin, isneginf, isposinf,
-- signbit, is_signed, is_nonzero, is_same_size); fmax/fmin, addr/ger,
-- msort, rsub, scalar_tensor/as_tensor; the window functions; the torch.*
-- spellings of linear algebra (det, inverse, svd with V, qr, cholesky_solve
-- ...) and vander. Every entry checks its options and argument count.
return function(T, C)
  local M = C._methods
  local ARGS = require("ember.args")
  local fmt, unpack = string.format, table.unpack or unpack
  local TM = getmetatable(T.empty(0))
  local function is_t(v) return getmetatable(v) == TM end
  local function check_tensor(op, t, name, lvl)
    if not is_t(t) then
      error(fmt("%s: expected a tensor for %s, got %s", op, name or "input", type(t)), (lvl or 2) + 1)
    end
  end
  -- every helper's errors name it (argcheck's named: a message from an op
  -- it composes is re-raised under the helper's name)
  local A = require("ember.argcheck")(T)
  local named = A.named
  local function define(name, f) f = named(name, f); M[name], T[name] = f, f end
  local function fn(name, f) T[name] = named(name, f) end
  local function method(name, f) M[name] = named(name, f) end
  -- an options table: a plain table holding a string key
  local function is_opts(v)
    if not ARGS.is_opts(v) then return false end
    for k in pairs(v) do if type(k) == "string" then return true end end
    return false
  end
  -- the functions of any number of arguments take no options: a trailing
  -- options table is refused by its first key
  local function no_trailing_opts(op, ...)
    local n = select("#", ...)
    local last = n > 0 and select(n, ...) or nil
    if is_opts(last) then
      local k
      for key in pairs(last) do if type(key) == "string" then k = key; break end end
      error(fmt("%s: unknown option '%s' (%s takes no options)", op, k, op), 3)
    end
  end
  -- a list of tensors (a plain array) or the tensors as arguments
  local function tensor_list(op, first, ...)
    no_trailing_opts(op, first, ...)
    local list
    if is_t(first) then list = { first, ... } else list = first end
    if type(list) ~= "table" or is_t(list) then
      error(fmt("%s: expected tensors or a list of tensors, got %s", op, type(first)), 3)
    end
    for i = 1, #list do check_tensor(op, list[i], "tensor #" .. i, 2) end
    return list
  end

  -- -- new_* and type_as --------------------------------------------------------
  -- t:new_zeros(sizes..., {dtype, device, requires_grad}) and friends: the
  -- dtype and device of t unless the options say otherwise
  local NEW_OPTS = { "dtype", "device", "requires_grad" }
  local function split_opts(op, n, args)
    local o = {}
    if n > 0 and is_opts(args[n]) then
      o = args[n]
      n = n - 1
    end
    ARGS.checkopts(op, o, NEW_OPTS, 4)
    return n, o
  end
  for name, maker in pairs { new_zeros = "zeros", new_ones = "ones", new_empty = "empty" } do
    method(name, function(t, ...)
      check_tensor(name, t, "self")
      local args = { ... }
      local n, o = split_opts(name, select("#", ...), args)
      args[n + 1] = { dtype = o.dtype or t.dtype, device = o.device or t.device, requires_grad = o.requires_grad }
      return T[maker](unpack(args, 1, n + 1))
    end)
  end
  method("new_full", function(t, size, value, o, ...)
    ARGS.nomore("new_full", 4, ...)
    check_tensor("new_full", t, "self")
    o = ARGS.checkopts("new_full", o, NEW_OPTS)
    -- a number, a boolean, an int64 cdata, or a 0-d tensor standing for its
    -- value (T.full checks it), as PyTorch's Scalar fill_value
    local tv = type(value)
    if tv ~= "number" and tv ~= "boolean" and tv ~= "cdata" and not (is_t(value) and value:dim() == 0) then
      error(fmt("new_full: expected a number for fill_value, got %s",
        is_t(value) and fmt("a %d-d tensor", value:dim()) or tv), 2)
    end
    return T.full(size, value, { dtype = o.dtype or t.dtype, device = o.device or t.device,
      requires_grad = o.requires_grad })
  end)
  method("new_tensor", function(t, data, o, ...)
    ARGS.nomore("new_tensor", 3, ...)
    check_tensor("new_tensor", t, "self")
    o = ARGS.checkopts("new_tensor", o, NEW_OPTS)
    local opts = { dtype = o.dtype or t.dtype, device = o.device or t.device }
    local r
    if is_t(data) then r = data:detach():to(opts):clone() else r = T.tensor(data, opts) end
    if o.requires_grad then r:requires_grad_() end
    return r
  end)
  method("type_as", function(t, other, ...)
    ARGS.nomore("type_as", 2, ...)
    check_tensor("type_as", t, "self")
    check_tensor("type_as", other, "other")
    return t:to({ dtype = other.dtype, device = other.device })
  end)

  -- t:type() -> "ember.FloatTensor" (PyTorch's legacy type names, prefixed
  -- "ember." as ember's dtypes are; "ember.cuda.FloatTensor" on cuda);
  -- t:type(dtype or name[, {non_blocking}]) -> t itself when nothing changes,
  -- else t:to(...). A type name ("ember.IntTensor", or torch's spelling
  -- "torch.IntTensor") names the device too (cpu unless ".cuda." is in it),
  -- as PyTorch's; a dtype (or dtype name) keeps t's device.
  local TYPE_NAMES = { bool = "Bool", uint8 = "Byte", int8 = "Char", int16 = "Short", int32 = "Int",
    int64 = "Long", float16 = "Half", bfloat16 = "BFloat16", float32 = "Float", float64 = "Double",
    complex64 = "ComplexFloat", complex128 = "ComplexDouble" }
  local TYPE_DTYPES = {}
  for dname, tname in pairs(TYPE_NAMES) do TYPE_DTYPES[tname .. "Tensor"] = dname end
  method("type", function(t, dtype, o, ...)
    ARGS.nomore("type", 3, ...)
    check_tensor("type", t, "self")
    o = ARGS.checkopts("type", o, { "non_blocking" })
    local dev = t.device.type
    if dtype == nil then
      local base = TYPE_NAMES[t.dtype.name] .. "Tensor"
      return dev == "cpu" and "ember." .. base or fmt("ember.%s.%s", dev, base)
    end
    local to = {}
    if type(dtype) == "string" then
      local pre, cuda, base = dtype:match("^(%a+)%.(cuda%.?)(%w+)$")
      if not pre then pre, base = dtype:match("^(%a+)%.(%w+)$") end
      if (pre == "ember" or pre == "torch") and TYPE_DTYPES[base] then
        to.dtype = T[TYPE_DTYPES[base]]
        to.device = (cuda and cuda ~= "") and "cuda" or "cpu"
      else
        to.dtype = A.dtype_named(dtype)
        if not to.dtype then error(fmt("type: invalid type: '%s'", dtype), 2) end
      end
    elseif T.is_dtype(dtype) then
      to.dtype = dtype
    else
      error(fmt("type: dtype must be a dtype or a type name, got %s", type(dtype)), 2)
    end
    if to.dtype == t.dtype and (to.device == nil or to.device == dev) then return t end
    to.non_blocking = o.non_blocking
    return t:to(to)
  end)
  -- T.is_storage(obj): obj is a storage object (t:untyped_storage())
  local STORAGE_MT = getmetatable(T.empty(0):untyped_storage())
  T.is_storage = function(obj, ...)
    ARGS.nomore("is_storage", 1, ...)
    return getmetatable(obj) == STORAGE_MT
  end

  -- -- shapes ---------------------------------------------------------------------
  define("ravel", function(t, ...)
    ARGS.nooptions("ravel", 2, 1, ...)
    check_tensor("ravel", t)
    return t:contiguous():view(-1)   -- PyTorch's: a ViewBackward0 node
  end)
  for name, dim in pairs { fliplr = 2, flipud = 1 } do
    define(name, function(t, ...)
      ARGS.nooptions(name, 2, 1, ...)
      check_tensor(name, t)
      if t:dim() < dim then
        error(fmt("%s: Input must be >= %d-d.", name, dim), 2)
      end
      return t:flip({ dim })
    end)
  end
  -- hsplit/vsplit/dsplit(t, sections or split positions): tensor_split
  -- along dim 2 (dim 1 for a 1-d hsplit), 1 and 3
  for name, spec in pairs { hsplit = { 2, 1 }, vsplit = { 1, 2 }, dsplit = { 3, 3 } } do
    define(name, function(t, sections, ...)
      ARGS.nooptions(name, 3, 2, ...)
      check_tensor(name, t)
      local dim, need = spec[1], spec[2]
      if name == "hsplit" and t:dim() == 1 then dim = 1 end
      if t:dim() < need then
        error(fmt("torch.%s requires a tensor with at least %d dimension, but got a tensor with %d dimensions!",
          name, need, t:dim()):gsub("^torch%.", name .. ": torch."), 2)
      end
      if type(sections) == "number" then
        if sections % 1 ~= 0 then
          error(fmt("%s: expected an integer number of sections, got %s", name, tostring(sections)), 2)
        end
        if sections < 1 or t:size(dim) % sections ~= 0 then
          error(fmt("%s: torch.%s attempted to split along dimension %d, but the size of the dimension %d " ..
            "is not divisible by the split_size %s!", name, name, dim, t:size(dim), tostring(sections)), 2)
        end
      elseif type(sections) ~= "table" then
        error(fmt("%s: expected a number of sections or a table of split positions, got %s", name,
          type(sections)), 2)
      end
      return T.tensor_split(t, sections, dim)
    end)
  end
  for nd = 1, 3 do
    local name = "atleast_" .. nd .. "d"
    local function one(t)
      local d = t:dim()
      if d >= nd then return t end
      if nd == 1 then return t:reshape(1) end
      if nd == 2 then return d == 0 and t:reshape(1, 1) or t:unsqueeze(1) end
      if d == 0 then return t:reshape(1, 1, 1) end
      if d == 1 then return t:unsqueeze(1):unsqueeze(3) end
      return t:unsqueeze(3)
    end
    fn(name, function(first, ...)
      if is_t(first) and select("#", ...) == 0 then return one(first) end
      no_trailing_opts(name, first, ...)
      local list = tensor_list(name, first, ...)
      local out = {}
      for i = 1, #list do out[i] = one(list[i]) end
      return out
    end)
  end
  fn("column_stack", function(list, o, ...)
    ARGS.nomore("column_stack", 2, ...)
    if is_t(list) then error("column_stack: expected a list of tensors, got a tensor", 2) end
    list = tensor_list("column_stack", list)
    o = ARGS.checkopts("column_stack", o, { "out" })
    if #list == 0 then error("column_stack: expects a non-empty TensorList", 2) end
    local cols = {}
    for i, t in ipairs(list) do
      if t:dim() <= 1 then cols[i] = t:reshape(t:numel(), 1) else cols[i] = t end
    end
    return T.hstack(cols, o.out and { out = o.out } or nil)
  end)
  fn("block_diag", function(...)
    no_trailing_opts("block_diag", ...)
    local list = { ... }
    for i = 1, #list do check_tensor("block_diag", list[i], "tensor #" .. i) end
    local rows, cols, dt, dev = 0, 0, nil, nil
    local mats = {}
    for i, t in ipairs(list) do
      if t:dim() > 2 then
        error(fmt("block_diag: Input tensors must have 2 or fewer dimensions. Input %d has %d dimensions",
          i, t:dim()), 2)
      end
      local m = t:dim() == 2 and t or t:reshape(1, t:numel())
      mats[i] = m
      rows, cols = rows + m:size(1), cols + m:size(2)
      dt = dt and T.promote_types(dt, t.dtype) or t.dtype
      dev = dev or t.device
    end
    local r = T.zeros(rows, cols, { dtype = dt or T.get_default_dtype(), device = dev })
    local i0, j0 = 0, 0
    local parts = {}
    for i, m in ipairs(mats) do
      -- each block placed by a padded copy so the result is differentiable
      parts[i] = T.nn.functional.pad(m:to(r.dtype), { j0, cols - j0 - m:size(2), i0, rows - i0 - m:size(1) })
      i0, j0 = i0 + m:size(1), j0 + m:size(2)
    end
    -- no blocks: torch 1.13 returns a 1 x 0 tensor
    if #parts == 0 then return T.zeros(1, 0, { dtype = r.dtype, device = r.device }) end
    local s = parts[1]
    for i = 2, #parts do s = s + parts[i] end
    return s
  end)
  fn("broadcast_shapes", function(...)
    no_trailing_opts("broadcast_shapes", ...)
    local shapes = { ... }
    local nd = 0
    for i, s in ipairs(shapes) do
      if type(s) == "number" then s = { s } end
      if type(s) ~= "table" then
        error(fmt("broadcast_shapes: expected a shape (a table of sizes) for argument #%d, got %s", i, type(s)), 2)
      end
      shapes[i] = s.totable and s:totable() or s
      nd = math.max(nd, #shapes[i])
    end
    local out, from = {}, {}
    for d = 1, nd do out[d] = 1 end
    local function show(s) return "[" .. table.concat(s, ", ") .. "]" end
    for i, s in ipairs(shapes) do
      local off = nd - #s
      for d = 1, #s do
        local v, cur = s[d], out[off + d]
        if type(v) == "number" and v % 1 ~= 0 then
          error(fmt("broadcast_shapes: expected integer sizes, got %s (argument #%d, entry %d)", tostring(v), i, d), 2)
        end
        -- an integral float (6 / 2 in Lua 5.4) is stored as an integer
        if type(v) == "number" and math.tointeger then v = math.tointeger(v) or v end
        if type(v) ~= "number" or v < 0 then
          error(fmt("broadcast_shapes: Trying to create tensor with negative dimension %s", tostring(v)), 2)
        end
        if cur == 1 then out[off + d], from[off + d] = v, i
        elseif v ~= 1 and v ~= cur then
          -- name the two arguments (1-based) and the dimension of the result
          local j = from[off + d]
          error(fmt("broadcast_shapes: Shape mismatch: objects cannot be broadcast to a single shape. " ..
            "Mismatch is between arg %d %s and arg %d %s: size %d vs %d at dimension %d of the result.",
            j, show(shapes[j]), i, show(s), cur, v, off + d), 2)
        end
      end
    end
    return T.Size(out)
  end)
  fn("broadcast_tensors", function(first, ...)
    if first == nil and select("#", ...) == 0 then return {} end -- torch's () for no tensors
    local list = tensor_list("broadcast_tensors", first, ...)
    local shapes = {}
    for i, t in ipairs(list) do shapes[i] = t.shape:totable() end
    local ok, sh = pcall(T.broadcast_shapes, unpack(shapes))
    if not ok then error((A.unpos(sh):gsub("^broadcast_shapes", "broadcast_tensors")), 2) end
    local out = {}
    for i, t in ipairs(list) do out[i] = t:expand(sh) end
    return out
  end)
  -- take_along_dim(t, indices, dim): gather with indices broadcast against
  -- t (but dim); no dim: along the flattened t
  define("take_along_dim", function(t, idx, dim, ...)
    local op = "take_along_dim"
    ARGS.nooptions(op, 4, 3, ...)
    check_tensor(op, t)
    check_tensor(op, idx, "indices")
    if idx.dtype ~= T.int64 then
      error(fmt("%s: dtype of indices should be Long but got %s", op, idx.dtype.name), 2)
    end
    if dim == nil then return t:reshape(-1):gather(1, idx:reshape(-1)) end
    local nd = t:dim()
    if type(dim) ~= "number" or dim % 1 ~= 0 then error(fmt("%s: expected an integer dim, got %s", op, tostring(dim)), 2) end
    if nd == 0 then error(fmt("%s: Dimension specified as %d but tensor has no dimensions", op, dim), 2) end
    local d = dim < 0 and dim + nd + 1 or dim
    if d < 1 or d > nd then
      error(fmt("%s: Dimension out of range (expected to be in range of [%d, %d], but got %d)", op, -nd, nd, dim), 2)
    end
    if idx:dim() ~= nd then
      error(fmt("%s: input and indices should have the same number of dimensions, but got %d dimensions for input, and %d dimensions for indices",
        op, nd, idx:dim()), 2)
    end
    local ts, is = t.shape:totable(), idx.shape:totable()
    local bt, bi = {}, {}
    for i = 1, nd do
      if i == d then bt[i], bi[i] = ts[i], is[i]
      else
        local ok, s = pcall(T.broadcast_shapes, { ts[i] }, { is[i] })
        if not ok then error(fmt("%s: shape mismatch: indices %s cannot be broadcast against input %s", op,
          tostring(idx.shape), tostring(t.shape)), 2) end
        bt[i], bi[i] = s[1], s[1]
      end
    end
    return t:expand(bt):gather(d, idx:expand(bi))
  end)
  method("sum_to_size", function(t, ...)
    local op = "sum_to_size"
    no_trailing_opts(op, ...)
    local size = ...
    if select("#", ...) > 1 or type(size) == "number" then size = { ... } end
    if type(size) ~= "table" then error(fmt("%s: expected a size, got %s", op, type(size)), 2) end
    size = size.totable and size:totable() or size
    for i = 1, #size do
      if type(size[i]) ~= "number" or size[i] < 0 or size[i] % 1 ~= 0 then
        error(fmt("%s: expected non-negative integer sizes, got %s at position %d", op, type(size[i]), i), 2)
      end
    end
    local nd, ns = t:dim(), #size
    if ns > nd then error(fmt("%s: size {%s} is not expandable to size %s", op, table.concat(size, ", "), tostring(t.shape)), 2) end
    local r = t
    local lead = {}
    for i = 1, nd - ns do lead[i] = i end
    if #lead > 0 then r = r:sum(lead) end
    for i = 1, ns do
      local want = size[i]
      if want == 1 and r:size(i) ~= 1 then r = r:sum(i, true)
      elseif want ~= r:size(i) then
        error(fmt("%s: size {%s} is not expandable to size %s", op, table.concat(size, ", "), tostring(t.shape)), 2)
      end
    end
    if r == t then r = t:view(t.shape) end
    return r
  end)
  define("diagflat", function(t, offset, ...)
    ARGS.nooptions("diagflat", 2, 2, offset, ...)
    check_tensor("diagflat", t)
    return T.diag(t:reshape(-1), offset or 0)
  end)

  -- -- combinatorics (positions 1-based) ------------------------------------------
  local function tri_indices(name, lower)
    fn(name, function(row, col, offset, o, ...)
      if is_opts(offset) and o == nil then offset, o = nil, offset end
      ARGS.nomore(name, 4, ...)
      o = ARGS.checkopts(name, o, { "dtype", "device" })
      for _, v in ipairs { row, col } do
        if type(v) ~= "number" or v < 0 or v % 1 ~= 0 then
          error(fmt("%s: expected non-negative integers for row and col, got %s", name, tostring(v)), 2)
        end
      end
      offset = offset or 0
      if o.dtype ~= nil and o.dtype ~= T.int64 and o.dtype ~= T.int32 then
        -- torch 1.13 dispatches the index types only
        error(fmt("%s: dtype must be int64 or int32, got %s", name, tostring(o.dtype):gsub("^ember%.", "")), 2)
      end
      local r = T.arange(1, row + 1):reshape(row, 1):expand(row, col)
      local c = T.arange(1, col + 1):reshape(1, col):expand(row, col)
      local keep = lower and (c - r):le(offset) or (c - r):ge(offset)
      local out = T.stack({ r:masked_select(keep), c:masked_select(keep) })
      return out:to({ dtype = o.dtype or T.int64, device = o.device })
    end)
  end
  tri_indices("tril_indices", true)
  tri_indices("triu_indices", false)
  fn("cartesian_prod", function(...)
    no_trailing_opts("cartesian_prod", ...)
    local list = { ... }
    for i = 1, #list do
      check_tensor("cartesian_prod", list[i], "tensor #" .. i)
      if list[i]:dim() ~= 1 then
        error(fmt("cartesian_prod: Expect a 1D vector, but got shape %s", tostring(list[i].shape)), 2)
      end
    end
    if #list == 1 then return list[1] end
    local grids = T.meshgrid(list, { indexing = "ij" })
    local cols = {}
    for i, g in ipairs(grids) do cols[i] = g:reshape(-1) end
    return T.stack(cols, 2)
  end)
  fn("combinations", function(t, r, o, ...)
    local op = "combinations"
    if is_opts(r) and o == nil then r, o = nil, r end
    ARGS.nomore(op, 3, ...)
    check_tensor(op, t)
    o = ARGS.checkopts(op, o, { "r", "with_replacement" })
    r = r or o.r or 2
    if t:dim() ~= 1 then error(fmt("%s: Expect a 1D vector, but got shape %s", op, tostring(t.shape)), 2) end
    if type(r) ~= "number" or r < 0 or r % 1 ~= 0 then error(fmt("%s: Expect a non-negative number, but got %s", op, tostring(r)), 2) end
    local n, rep = t:size(1), o.with_replacement == true
    if r == 0 then return T.empty(0, { dtype = t.dtype, device = t.device }) end
    -- the index tuples in lexicographic order, then one gather
    local rows, cur = {}, {}
    local function rec(k, start)
      if k > r then
        local row = {}
        for i = 1, r do row[i] = cur[i] end
        rows[#rows + 1] = row
        return
      end
      for i = start, n do
        cur[k] = i
        rec(k + 1, rep and i or i + 1)
      end
    end
    rec(1, 1)
    if #rows == 0 then return T.empty(0, r, { dtype = t.dtype, device = t.device }) end
    local idx = T.tensor(rows, { dtype = T.int64 }):to(t.device)
    return t:index_select(1, idx:reshape(-1)):reshape(#rows, r)
  end)

  -- -- tests ----------------------------------------------------------------------
  fn("isin", function(elements, test, o, ...)
    local op = "isin"
    ARGS.nomore(op, 3, ...)
    o = ARGS.checkopts(op, o, { "assume_unique", "invert" })
    if not is_t(elements) and not is_t(test) then
      error(fmt("%s: expected at least one tensor, got %s and %s", op, type(elements), type(test)), 2)
    end
    local e = is_t(elements) and elements or T.tensor(elements)
    local s = is_t(test) and test or T.tensor(test)
    local r
    if s:numel() == 0 or e:numel() == 0 then
      r = T.zeros(e.shape, { dtype = T.bool, device = e.device })
    else
      local sorted = s:reshape(-1):sort()
      -- NaN equals nothing: drop the test's NaNs (sorted last), whose place
      -- in the sequence would throw the binary search off
      local n = sorted:numel()
      if sorted:is_floating_point() then n = n - sorted:isnan():sum():item() end
      if n == 0 then
        r = T.zeros(e.shape, { dtype = T.bool, device = e.device })
      else
        sorted = sorted:narrow(1, 1, n)
        -- each element's position in the sorted test values, then equality
        local pos = T.searchsorted(sorted, e:reshape(-1):to(sorted.dtype)):clamp(1, n)
        r = sorted:index_select(1, pos):eq(e:reshape(-1)):reshape(e.shape)
      end
    end
    if o.invert then r = r:logical_not() end
    return r
  end)
  for name, sign in pairs { isposinf = 1, isneginf = -1 } do
    define(name, function(t, o, ...)
      ARGS.nomore(name, 2, ...)
      check_tensor(name, t)
      o = ARGS.checkopts(name, o, { "out" })
      if t:is_complex() then error(fmt("%s: does not support complex inputs.", name), 2) end
      local r
      if t.dtype.is_floating_point then r = t:eq(sign * math.huge)
      else r = T.zeros(t.shape, { dtype = T.bool, device = t.device }) end
      return A.finish(name, r, o)
    end)
  end
  define("signbit", function(t, o, ...)
    ARGS.nomore("signbit", 2, ...)
    check_tensor("signbit", t)
    o = ARGS.checkopts("signbit", o, { "out" })
    if t:is_complex() then error("signbit: signbit is not implemented for complex tensors.", 2) end
    local r
    if t.dtype.is_floating_point then
      -- -0.0 and negative NaNs count: copysign(1, x) < 0
      r = T.copysign(T.ones_like(t), t):lt(0)
    elseif t.dtype == T.bool or t.dtype == T.uint8 then
      r = T.zeros(t.shape, { dtype = T.bool, device = t.device })
    else
      r = t:lt(0)
    end
    return A.finish("signbit", r, o)
  end)
  method("is_signed", function(t, ...)
    ARGS.nooptions("is_signed", 2, 1, ...)
    return t.dtype ~= T.bool and t.dtype ~= T.uint8
  end)
  define("is_nonzero", function(t, ...)
    ARGS.nooptions("is_nonzero", 2, 1, ...)
    check_tensor("is_nonzero", t)
    local n = t:numel()
    if n == 0 then error("is_nonzero: Boolean value of Tensor with no values is ambiguous", 2) end
    if n > 1 then error("is_nonzero: Boolean value of Tensor with more than one value is ambiguous", 2) end
    return t:reshape(-1)[1]:ne(0):item()
  end)
  define("is_same_size", function(t, other, ...)
    ARGS.nooptions("is_same_size", 3, 2, ...)
    check_tensor("is_same_size", t)
    check_tensor("is_same_size", other, "other")
    return t.shape == other.shape
  end)

  -- -- arithmetic -----------------------------------------------------------------
  -- fmax/fmin: maximum/minimum where a NaN loses to a number; as
  -- PyTorch's, a picks where a >= b (a <= b) or b is NaN, so a tie's
  -- gradient goes to a
  for name, pick in pairs { fmax = "ge", fmin = "le" } do
    define(name, function(a, b, o, ...)
      ARGS.nomore(name, 3, ...)
      check_tensor(name, a)
      check_tensor(name, b, "other")
      o = ARGS.checkopts(name, o, { "out" })
      if a:is_complex() or b:is_complex() then
        error(fmt("%s: %s not implemented for complex tensors.", name, name), 2)
      end
      local keep = a[pick](a, b)
      if T.promote_types(a.dtype, b.dtype).is_floating_point then keep = keep:logical_or(b:isnan()) end
      local r = T.where(keep, a, b)
      if o.out ~= nil then
        -- cast into out as the elementwise ops' out= (can_cast, PyTorch's
        -- fmax(int32, int32, out=float32)): maximum(r, r) is r, written by
        -- the C op's out= rules, its messages renamed
        local ok, res = pcall(T.maximum, r, r, { out = o.out })
        if not ok then error((tostring(res):gsub("^.-maximum:", name .. ":", 1)), 2) end
        return res
      end
      return r
    end)
  end
  -- beta M + alpha p for the add* composites (o: checked {beta, alpha, out});
  -- beta = 0 ignores M's values (NaN included), as PyTorch, and M's
  -- gradient is then zeros (torch's grad * beta), not absent. M must
  -- broadcast to p's shape (torch expands it). same_dtype: M must have p's
  -- dtype (addbmm, as torch's; addr promotes). For an integer result beta and
  -- alpha must be integers (as addmm/addmv/baddbmm); a boolean one takes
  -- boolean or number beta/alpha and is (beta and M) or (alpha and p), as
  -- torch's addr.
  local function beta_alpha(op, m, p, o, same_dtype)
    local beta, alpha = o.beta == nil and 1 or o.beta, o.alpha == nil and 1 or o.alpha
    if same_dtype and m.dtype ~= p.dtype then
      error(fmt("%s: self and mat2 must have the same dtype, but got: %s != %s", op,
        tostring(m.dtype):gsub("^ember%.", ""), (tostring(p.dtype):gsub("^ember%.", ""))), 3)
    end
    local dt = T.promote_types(m.dtype, p.dtype)
    for name, v in pairs { beta = beta, alpha = alpha } do
      if type(v) == "boolean" then
        if dt ~= T.bool then error(fmt("%s: Boolean %s only supported for Boolean results.", op, name), 3) end
      elseif type(v) ~= "number" then
        error(fmt("%s: %s must be a number, got %s", op, name, type(v)), 3)
      end
    end
    local shape = p.shape:totable()
    local okx, mx = pcall(m.expand, m, shape)
    if not okx then
      error(fmt("%s: input of shape [%s] cannot be broadcast to the result shape [%s]", op,
        table.concat(m.shape:totable(), ", "), table.concat(shape, ", ")), 3)
    end
    local r
    if dt == T.bool then
      -- torch's addr refuses a fractional beta/alpha for a bool result, as
      -- for an integer one
      if (type(beta) == "number" and beta % 1 ~= 0) or (type(alpha) == "number" and alpha % 1 ~= 0) then
        error(fmt("%s: for integer tensors beta and alpha must be integers, got beta=%s alpha=%s",
          op, tostring(beta), tostring(alpha)), 3)
      end
      local b, a = beta ~= false and beta ~= 0, alpha ~= false and alpha ~= 0
      r = a and p:to(dt) or T.zeros(shape, { dtype = dt, device = p.device })
      if b then r = mx:to(dt):logical_or(r) end
      return A.finish(op, r, o)
    end
    if not (dt.is_floating_point or dt.is_complex) then
      if beta % 1 ~= 0 or alpha % 1 ~= 0 then
        error(fmt("%s: for integer tensors beta and alpha must be integers, got beta=%s alpha=%s",
          op, tostring(beta), tostring(alpha)), 3)
      end
      if math.tointeger then beta, alpha = math.tointeger(beta), math.tointeger(alpha) end
    end
    if alpha == 0 and same_dtype then
      -- addbmm: alpha = 0 does not read the batches (torch's addmm per
      -- batch with alpha 0), so NaN/Inf in them do not propagate; they stay
      -- in the graph with a zero gradient
      p = p:masked_fill(T.tensor(true), 0)
    elseif alpha ~= 1 then
      p = p * alpha
    end
    if beta == 0 then
      r = p:expand(shape) + 0
      -- zeros whatever M holds, but in M's graph: its gradient is zeros
      if m.requires_grad then r = r + mx:masked_fill(T.tensor(true), 0) end
    else
      r = (beta == 1 and m or m * beta) + p
    end
    return A.finish(op, r, o)
  end
  -- addr(M, v1, v2, {beta, alpha}) = beta M + alpha outer(v1, v2); ger = outer
  define("addr", function(m, v1, v2, o, ...)
    local op = "addr"
    ARGS.nomore(op, 4, ...)
    check_tensor(op, m)
    check_tensor(op, v1, "vec1")
    check_tensor(op, v2, "vec2")
    o = ARGS.checkopts(op, o, { "beta", "alpha", "out" })
    if v1:dim() ~= 1 or v2:dim() ~= 1 then
      error(fmt("%s: addr: Expected 1-D argument vec1, but got %d-D", op, v1:dim() ~= 1 and v1:dim() or v2:dim()), 2)
    end
    return beta_alpha(op, m, T.outer(v1, v2), o)
  end)
  define("ger", function(a, b, o, ...)
    ARGS.nomore("ger", 3, ...)
    o = ARGS.checkopts("ger", o, { "out" }, 4)
    if o.out ~= nil then return T.outer(a, b, { out = o.out }) end
    return T.outer(a, b)
  end)
  -- index_put(t, indices, values[, accumulate]): index_put_ on a copy
  define("index_put", function(t, indices, values, accumulate, ...)
    ARGS.nomore("index_put", 4, ...)
    check_tensor("index_put", t)
    return t:clone():index_put_(indices, values, accumulate)
  end)
  -- cross(a, b[, dim]): linalg.cross; without dim, torch.cross's (deprecated)
  -- default, the first dim of size 3 of the broadcast shape
  define("cross", function(a, b, dim, ...)
    ARGS.nomore("cross", 3, ...)
    check_tensor("cross", a)
    check_tensor("cross", b, "other")
    if is_opts(dim) then dim = ARGS.checkopts("cross", dim, { "dim" }).dim end
    if dim == nil then
      -- PyTorch 1.13: the first dim of size 3 of the input's own shape
      local shape = a.shape:totable()
      for i = 1, #shape do
        if shape[i] == 3 then dim = i; break end
      end
      if dim == nil then
        error(fmt("cross: no dimension of size 3 in input of shape %s", tostring(shape)), 2)
      end
    end
    local ok, r = pcall(T.linalg.cross, a, b, { dim = dim })
    if not ok then error((tostring(r):gsub("^.-linalg%.cross:", "cross:", 1)), 2) end
    return r
  end)
  -- addbmm(M, b1, b2, {beta, alpha}) = beta M + alpha sum_i b1[i] @ b2[i]
  define("addbmm", function(m, b1, b2, o, ...)
    local op = "addbmm"
    ARGS.nomore(op, 4, ...)
    check_tensor(op, m)
    check_tensor(op, b1, "batch1")
    check_tensor(op, b2, "batch2")
    o = ARGS.checkopts(op, o, { "beta", "alpha", "out" })
    if b1:dim() ~= 3 or b2:dim() ~= 3 then
      error(fmt("%s: batch1 and batch2 must be 3-D tensors, got %d-D and %d-D", op, b1:dim(), b2:dim()), 2)
    end
    return beta_alpha(op, m, T.bmm(b1, b2):sum(1), o, true)
  end)
  -- chain_matmul(a, b, ...): linalg.multi_dot of its arguments (deprecated in torch)
  fn("chain_matmul", function(...)
    local n = select("#", ...)
    local ms, o = { ... }, {}
    if n > 0 and is_opts(ms[n]) then
      o = ARGS.checkopts("chain_matmul", ms[n], { "out" })
      ms[n], n = nil, n - 1
    end
    if n == 0 then error("chain_matmul: expected one or more tensors", 2) end
    for i = 1, n do check_tensor("chain_matmul", ms[i], "matrices[" .. i .. "]") end
    -- every operand 2-D (only linalg.multi_dot takes 1-D ends)
    for i = 1, n do
      if ms[i]:dim() ~= 2 then
        error(fmt("chain_matmul: tensor %d must be 2D, got %dD", i, ms[i]:dim()), 2)
      end
    end
    if n == 1 then
      local r = ms[1]:clone()
      return A.finish("chain_matmul", r, o)
    end
    local ok, r = pcall(T.linalg.multi_dot, ms)
    if not ok then error((tostring(r):gsub("^.-multi_dot:", "chain_matmul:", 1)), 2) end
    return A.finish("chain_matmul", r, o)
  end)
  -- pdist(x[, p]): the distances between the rows of an (N, M) x, the
  -- upper triangle of cdist(x, x, p) in row-major order (N (N - 1) / 2)
  local function pdist(x, p, ...)
    ARGS.nomore("pdist", 2, ...)
    check_tensor("pdist", x)
    if is_opts(p) then p = ARGS.checkopts("pdist", p, { "p" }).p end
    p = p == nil and 2 or p
    if type(p) ~= "number" or p < 0 or p ~= p then
      error(fmt("pdist: only supports non-negative p values, got %s", tostring(p)), 2)
    end
    if x:dim() ~= 2 then error(fmt("pdist: only supports 2D tensors, got: %dD", x:dim()), 2) end
    if not x.dtype.is_floating_point then
      error(fmt("pdist: only supports floating-point dtypes, got %s", tostring(x.dtype)), 2)
    end
    local n = x:size(1)
    -- no pairs: an empty result still in x's graph (a zero gradient)
    if n < 2 then return x:reshape(-1):narrow(1, 1, 0):clone() end
    local ij = T.triu_indices(n, n, 1, { device = x.device })
    return T.cdist(x, x, p)[{ ij[1], ij[2] }]
  end
  fn("pdist", pdist)
  T.nn.functional.pdist = named("pdist", pdist)
  define("msort", function(t, o, ...)
    ARGS.nomore("msort", 2, ...)
    check_tensor("msort", t)
    o = ARGS.checkopts("msort", o, { "out" })
    local r = t:dim() == 0 and t:clone() or (t:sort(1))
    return A.finish("msort", r, o)
  end)
  -- rsub(a, b, {alpha}) = b - alpha a
  fn("rsub", function(a, b, o, ...)
    ARGS.nomore("rsub", 3, ...)
    check_tensor("rsub", a)
    o = ARGS.checkopts("rsub", o, { "alpha" })
    if is_t(b) then return T.sub(b, a, { alpha = o.alpha }) end
    if type(b) ~= "number" then error(fmt("rsub: expected a tensor or a number for other, got %s", type(b)), 2) end
    return T.sub(T.full({}, b, { dtype = T.result_type(a, b), device = a.device }), a, { alpha = o.alpha })
  end)
  fn("scalar_tensor", function(v, o, ...)
    ARGS.nomore("scalar_tensor", 2, ...)
    if type(v) ~= "number" and type(v) ~= "boolean" then
      error(fmt("scalar_tensor: expected a number, got %s", type(v)), 2)
    end
    o = ARGS.checkopts("scalar_tensor", o, { "dtype", "device", "requires_grad" })
    return T.full({}, v, { dtype = o.dtype or T.get_default_dtype(), device = o.device, requires_grad = o.requires_grad })
  end)
  -- as_tensor/asarray: a tensor given is returned as is when dtype and
  -- device already match (shared), else converted; other data via T.tensor
  for _, name in ipairs { "as_tensor", "asarray" } do
    fn(name, function(data, o, ...)
      ARGS.nomore(name, 2, ...)
      o = ARGS.checkopts(name, o, { "dtype", "device" })
      if is_t(data) then
        if (o.dtype == nil or o.dtype == data.dtype) and (o.device == nil or tostring(o.device) == tostring(data.device)) then
          return data
        end
        return data:to({ dtype = o.dtype or data.dtype, device = o.device or data.device })
      end
      return T.tensor(data, o)
    end)
  end

  -- -- window functions -----------------------------------------------------------
  -- PyTorch's definitions (periodic: the window of length n + 1 without its
  -- last point); computed in float64, returned in the dtype asked for
  local function window(name, extra, f)
    fn(name, function(n, periodic, o, ...)
      if is_opts(periodic) and o == nil then periodic, o = nil, periodic end
      ARGS.nomore(name, 3, ...)
      local allowed = { "periodic", "dtype", "device", "requires_grad" }
      for _, k in ipairs(extra) do allowed[#allowed + 1] = k end
      o = ARGS.checkopts(name, o, allowed)
      if periodic == nil then periodic = o.periodic end
      if periodic == nil then periodic = true end
      if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then
        error(fmt("%s: requires non-negative window_length, got window_length=%s", name, tostring(n)), 2)
      end
      if type(periodic) ~= "boolean" then error(fmt("%s: expected a boolean for periodic, got %s", name, type(periodic)), 2) end
      local dt = o.dtype or T.get_default_dtype()
      if not dt.is_floating_point then
        error(fmt("%s: expects floating point dtypes, got: %s", name, dt.name), 2)
      end
      local opts = { dtype = dt, device = o.device, requires_grad = o.requires_grad }
      if n == 0 then return T.empty(0, opts) end
      if n == 1 then return T.ones(1, opts) end
      local N = periodic and n + 1 or n
      local k = T.arange(0, n, { dtype = T.float64 })
      local w = f(k, N, o)
      w = w:to(dt):to(o.device or "cpu")
      if o.requires_grad then w:requires_grad_() end
      return w
    end)
  end
  local function cosine_sum(a) -- sum_j (-1)^j a_j cos(2 pi j k / (N - 1))
    return function(k, N)
      local w = T.zeros(k.shape, { dtype = T.float64 })
      for j, aj in ipairs(a) do
        w = w + ((j - 1) % 2 == 0 and aj or -aj) * (k * (2 * math.pi * (j - 1) / (N - 1))):cos()
      end
      return w
    end
  end
  window("hann_window", {}, cosine_sum { 0.5, 0.5 })
  window("hamming_window", { "alpha", "beta" }, function(k, N, o)
    local alpha, beta = o.alpha or 0.54, o.beta or 0.46
    return alpha - beta * (k * (2 * math.pi / (N - 1))):cos()
  end)
  window("blackman_window", {}, cosine_sum { 0.42, 0.5, 0.08 })
  window("bartlett_window", {}, function(k, N)
    return 1 - (k * (2 / (N - 1)) - 1):abs()
  end)
  window("kaiser_window", { "beta" }, function(k, N, o)
    local beta = o.beta or 12.0
    local r = (k - (N - 1) / 2) * (2 / (N - 1))
    return T.special.i0(((1 - r * r):clamp(0) * beta * beta):sqrt()) / T.special.i0(T.tensor(beta, { dtype = T.float64 }))
  end)

  -- -- torch.* spellings of linear algebra ---------------------------------------
  local LA = T.linalg
  define("det", function(a, ...) ARGS.nooptions("det", 2, 1, ...); return LA.det(a) end)
  define("logdet", function(a, ...)
    ARGS.nooptions("logdet", 2, 1, ...)
    check_tensor("logdet", a)
    local sign, logabs = LA.slogdet(a)
    if a:is_complex() then return logabs + sign:angle() * T.complex(T.tensor(0, { dtype = logabs.dtype }), T.tensor(1, { dtype = logabs.dtype })) end
    -- a negative determinant: nan; a zero one: -inf (torch's logdet)
    return T.where(sign:lt(0), T.full({}, 0 / 0, { dtype = logabs.dtype }), logabs)
  end)
  define("slogdet", function(a, ...) ARGS.nooptions("slogdet", 2, 1, ...); return LA.slogdet(a) end)
  define("inverse", function(a, ...) ARGS.nooptions("inverse", 2, 1, ...); return LA.inv(a) end)
  define("pinverse", function(a, rcond, ...)
    ARGS.nooptions("pinverse", 2, 2, rcond, ...)
    return LA.pinv(a, { rtol = rcond or 1e-15 })
  end)
  define("matrix_power", function(a, k, ...) ARGS.nooptions("matrix_power", 3, 2, ...); return LA.matrix_power(a, k) end)
  define("matrix_exp", function(a, ...) ARGS.nooptions("matrix_exp", 2, 1, ...); return LA.matrix_exp(a) end)
  -- svd(A, some = true, compute_uv = true) -> U, S, V (V, not V^H)
  define("svd", function(a, some, compute_uv, ...)
    ARGS.nooptions("svd", 2, 3, some, compute_uv, ...)
    check_tensor("svd", a)
    if some == nil then some = true end
    if compute_uv == false then
      local S = LA.svdvals(a)
      local m, n = a:size(-2), a:size(-1)
      local shU, shV = a.shape:totable(), a.shape:totable()
      shU[#shU - 1], shU[#shU] = m, some and math.min(m, n) or m
      shV[#shV - 1], shV[#shV] = n, some and math.min(m, n) or n
      return T.zeros(shU, { dtype = a.dtype }), S, T.zeros(shV, { dtype = a.dtype })
    end
    local U, S, Vh = LA.svd(a, { full_matrices = not some })
    local V = Vh:transpose(-2, -1)
    if V:is_complex() then V = V:conj() end
    return U, S, V
  end)
  define("qr", function(a, some, ...)
    ARGS.nooptions("qr", 2, 2, some, ...)
    return LA.qr(a, { mode = (some == false) and "complete" or "reduced" })
  end)
  -- cholesky_solve(B, L, upper = false): A X = B with A = L L^H
  define("cholesky_solve", function(b, l, upper, ...)
    ARGS.nooptions("cholesky_solve", 3, 3, upper, ...)
    check_tensor("cholesky_solve", b)
    check_tensor("cholesky_solve", l, "input2")
    for _, v in ipairs { { b, "b" }, { l, "A" } } do
      if v[1]:dim() < 2 then
        error(fmt("cholesky_solve: %s should have at least 2 dimensions, but has %d dimensions instead",
          v[2], v[1]:dim()), 2)
      end
    end
    if upper then
      local y = LA.solve_triangular(l:transpose(-2, -1):conj(), b, { upper = false })
      return LA.solve_triangular(l, y, { upper = true })
    end
    local y = LA.solve_triangular(l, b, { upper = false })
    local lh = l:transpose(-2, -1)
    if lh:is_complex() then lh = lh:conj() end
    return LA.solve_triangular(lh, y, { upper = true })
  end)
  define("cholesky_inverse", function(l, upper, ...)
    ARGS.nooptions("cholesky_inverse", 2, 2, upper, ...)
    check_tensor("cholesky_inverse", l)
    if l:dim() < 2 or l:size(-1) ~= l:size(-2) then
      error(fmt("cholesky_inverse: A must be batches of square matrices, but got shape %s", tostring(l.shape)), 2)
    end
    local n = l:size(-1)
    return T.cholesky_solve(T.eye(n, { dtype = l.dtype, device = l.device }):expand(l.shape), l, upper)
  end)
  -- vander(x, N, increasing): columns x^(N-1) ... x^0 (reversed if increasing)
  local function vander(op, x, n, increasing)
    check_tensor(op, x, "x", 3)
    if x:dim() ~= 1 and op == "vander" then error("vander: x must be a one-dimensional tensor.", 3) end
    n = n or x:size(-1)
    if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then error(fmt("%s: N must be non-negative.", op), 3) end
    local p = T.arange(0, n, { dtype = T.int64, device = x.device })
    if not increasing then p = p:flip({ 1 }) end
    local xd = x.dtype == T.bool and x:to(T.int64) or x
    if n == 0 then
      local sh = xd.shape:totable()
      sh[#sh + 1] = 0
      return T.empty(sh, { dtype = xd.dtype, device = x.device })
    end
    return xd:unsqueeze(-1):pow(p:to(xd.dtype.is_floating_point and xd.dtype or (xd:is_complex() and xd.dtype or T.int64)))
  end
  -- vander(x, N, increasing) or vander(x, {N =, increasing =}) (torch's
  -- keywords)
  fn("vander", function(x, n, increasing, ...)
    if ARGS.is_opts(n) then
      ARGS.nomore("vander", 2, increasing, ...)
      local o = ARGS.checkopts("vander", n, { "N", "increasing" })
      n, increasing = o.N, o.increasing
    else
      ARGS.nooptions("vander", 2, 3, n, increasing, ...)
    end
    return vander("vander", x, n, increasing)
  end)
  LA.vander = named("linalg.vander", function(x, o, ...)
    ARGS.nomore("linalg.vander", 2, ...)
    o = ARGS.checkopts("linalg.vander", o, { "N" })
    check_tensor("linalg.vander", x, "x")
    if x:dim() < 1 then error("linalg.vander: x must have at least one dimension.", 2) end
    -- torch 1.13: no bool input, and at least 2 columns (torch.vander takes 0 and 1)
    if x.dtype == T.bool then
      error("linalg.vander: supports floating point, complex, and integer tensors, but got bool", 2)
    end
    local n = o.N == nil and x:size(-1) or o.N
    if type(n) == "number" and n <= 1 then error(fmt("linalg.vander: N must be greater than 1, got %s", tostring(n)), 2) end
    return vander("linalg.vander", x, o.N, true)
  end)
end
