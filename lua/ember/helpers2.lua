-- More of torch 1.13's surface, as compositions of ember's ops
-- (docs/helpers.md, "More helpers"): the torch.* spellings of in-place
-- methods (torch.abs_(t), ...) and of tensor queries (numel, detach, ...);
-- range, empty_strided, split_with_sizes and the unsafe_* splits; the
-- *_copy view-copy functions and the scatter-views (select_scatter,
-- slice_scatter, diagonal_scatter, as_strided_scatter); in-place forms of
-- addmm & co., cumsum/cumprod, igamma/igammac and sgn; index_reduce; the
-- deprecated torch.lu / torch.lu_solve. Positions and dims are 1-based.
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
  local AC = require("ember.argcheck")(T)
  local named = AC.named
  local function define(name, f) f = named(name, f); M[name], T[name] = f, f end
  local function fn(name, f) T[name] = named(name, f) end
  local function method(name, f) M[name] = named(name, f) end
  local function is_opts(v)
    if not ARGS.is_opts(v) then return false end
    for k in pairs(v) do if type(k) == "string" then return true end end
    return false
  end
  -- the arguments of a call and its trailing options table (checked
  -- against allowed), as (args, n, o)
  local function split_args(op, allowed, ...)
    local n = select("#", ...)
    local args = { ... }
    local o = {}
    if n > 0 and is_opts(args[n]) then
      o = ARGS.checkopts(op, args[n], allowed, 4)
      args[n], n = nil, n - 1
    end
    return args, n, o
  end
  local function norm_dim(op, d, nd, what)
    if type(d) ~= "number" or d % 1 ~= 0 then
      error(fmt("%s: expected an integer for %s, got %s", op, what or "dim", tostring(d)), 3)
    end
    local m = math.max(nd, 1)
    if d < -m or d > m or d == 0 then
      error(fmt("%s: Dimension out of range (expected to be in range of [%d, %d], but got %d)", op, -m, m, d), 3)
    end
    return d < 0 and d + m + 1 or d
  end
  local function sizes_of(op, s, what)
    if is_t(s) or type(s) ~= "table" then
      error(fmt("%s: expected a table of integers for %s, got %s", op, what, type(s)), 3)
    end
    s = s.totable and s:totable() or s
    for i = 1, #s do
      if type(s[i]) ~= "number" or s[i] % 1 ~= 0 or s[i] ~= s[i] then
        error(fmt("%s: expected integers in %s, got %s at position %d", op, what, tostring(s[i]), i), 3)
      end
    end
    return s
  end

  -- -- torch.* spellings of tensor methods ---------------------------------------
  -- torch.abs_(t), torch.clamp_(t, lo, hi), ...: the method itself
  for w in ([[abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_
      atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ detach_ erf_ erfc_ exp2_
      exp_ expm1_ fill_ fix_ floor_ frac_ gcd_ i0_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_
      nan_to_num_ neg_ negative_ reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_
      sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_ detach numel is_floating_point is_signed]]):gmatch("%S+") do
    T[w] = M[w]
  end
  -- torch.fill(t, value): a filled copy
  fn("fill", function(t, value, ...)
    ARGS.nooptions("fill", 3, 2, ...)
    check_tensor("fill", t)
    return T.full_like(t, value)
  end)
  -- ember keeps no lazy conjugate or negative bit (docs/dtypes.md): the
  -- questions answer false and resolve_* return the tensor itself
  for _, name in ipairs { "is_conj", "is_neg" } do
    define(name, function(t, ...)
      ARGS.nooptions(name, 2, 1, ...)
      check_tensor(name, t)
      return false
    end)
  end
  for _, name in ipairs { "resolve_conj", "resolve_neg" } do
    define(name, function(t, ...)
      ARGS.nooptions(name, 2, 1, ...)
      check_tensor(name, t)
      return t
    end)
  end
  -- conj_physical: conj (which materialises); a real tensor is returned itself
  define("conj_physical", function(t, ...)
    ARGS.nooptions("conj_physical", 2, 1, ...)
    check_tensor("conj_physical", t)
    if t:is_complex() then return t:conj() end
    return t
  end)
  define("conj_physical_", function(t, ...)
    ARGS.nooptions("conj_physical_", 2, 1, ...)
    check_tensor("conj_physical_", t)
    if t:is_complex() then t:copy_(t:conj()) end
    return t
  end)

  -- -- creation ---------------------------------------------------------------------
  -- range(start, end[, step], {dtype, device, requires_grad}): deprecated in
  -- torch; the end is included; the default dtype whatever the arguments.
  -- As torch's range_out: an integer dtype truncates the three numbers
  -- first and counts in int64 (so a step below 1 is 0); a floating dtype
  -- counts in double. 0-d real tensors stand for their values.
  fn("range", function(start, stop, step, o, ...)
    local op = "range"
    if is_opts(step) and o == nil then step, o = nil, step end
    ARGS.nomore(op, 4, ...)
    o = ARGS.checkopts(op, o, { "dtype", "device", "requires_grad" })
    step = step == nil and 1 or step
    local v = { start, stop, step }
    for i, name in ipairs { "start", "end", "step" } do
      local x = v[i]
      if T.is_tensor(x) and x:dim() == 0 and (x:is_floating_point() or (not x:is_complex() and x.dtype ~= T.bool)) then
        x = x:item()
        v[i] = x
      end
      if type(x) ~= "number" or x ~= x or math.abs(x) == math.huge then
        error(fmt("%s: expected a finite number for %s, got %s", op, name, tostring(x)), 2)
      end
    end
    local dt = o.dtype or T.get_default_dtype()
    if dt == T.bool or dt.is_complex then
      error(fmt("%s: not implemented for '%s'", op, dt.name), 2)
    end
    local integer = not dt.is_floating_point
    if integer then
      for i = 1, 3 do v[i] = v[i] < 0 and math.ceil(v[i]) or math.floor(v[i]) end
    end
    start, stop, step = v[1], v[2], v[3]
    if step == 0 then error("range: step must be nonzero", 2) end
    if (step > 0 and stop < start) or (step < 0 and stop > start) then
      error("range: upper bound and lower bound inconsistent with step sign", 2)
    end
    local q = (stop - start) / step
    local n = (q < 0 and math.ceil(q) or math.floor(q)) + 1
    local r
    if integer then
      r = (T.arange(0, n, { dtype = T.int64 }) * step + start):to(dt)
    else
      r = (T.arange(0, n, { dtype = T.float64 }) * step + start):to(dt)
    end
    if o.device ~= nil then r = r:to(o.device) end
    if o.requires_grad then r:requires_grad_() end
    return r
  end)
  -- empty_strided(size, stride, {dtype, device, requires_grad}): an
  -- uninitialised tensor with these strides (over the smallest storage)
  local function empty_strided(op, size, stride, o)
    size = sizes_of(op, size, "size")
    stride = sizes_of(op, stride, "stride")
    if #size ~= #stride then
      error(fmt("%s: mismatch in length of strides and shape (%d and %d)", op, #stride, #size), 3)
    end
    local n, empty = 1, false
    for i = 1, #size do
      if size[i] < 0 then error(fmt("%s: Trying to create tensor with negative dimension %d: %s", op,
        size[i], "{" .. table.concat(size, ", ") .. "}"), 3) end
      if stride[i] < 0 then error(fmt("%s: expected non-negative strides, got %d", op, stride[i]), 3) end
      if size[i] == 0 then empty = true end
      n = n + (size[i] - 1) * stride[i]
    end
    if empty then n = 0 end
    local base = T.empty(n, { dtype = o.dtype or T.get_default_dtype(), device = o.device })
    local r = base:as_strided(size, stride, 0)
    if o.requires_grad then r:requires_grad_() end
    return r
  end
  fn("empty_strided", function(size, stride, o, ...)
    ARGS.nomore("empty_strided", 3, ...)
    o = ARGS.checkopts("empty_strided", o, { "dtype", "device", "requires_grad" })
    return empty_strided("empty_strided", size, stride, o)
  end)
  method("new_empty_strided", function(t, size, stride, o, ...)
    ARGS.nomore("new_empty_strided", 4, ...)
    check_tensor("new_empty_strided", t, "self")
    o = ARGS.checkopts("new_empty_strided", o, { "dtype", "device", "requires_grad" })
    return empty_strided("new_empty_strided", size, stride,
      { dtype = o.dtype or t.dtype, device = o.device or t.device, requires_grad = o.requires_grad })
  end)

  -- -- splits -------------------------------------------------------------------------
  -- split_with_sizes(t, sizes[, dim]): split with a table of sizes, which
  -- must add up to the dim's size
  local function split_with_sizes(op, t, sizes, dim)
    check_tensor(op, t, "input", 2)
    sizes = sizes_of(op, sizes, "split_sizes")
    dim = norm_dim(op, dim == nil and 1 or dim, t:dim())
    local sum = 0
    for i = 1, #sizes do
      if sizes[i] < 0 then
        error(fmt("%s: split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={%s}",
          op, table.concat(sizes, ", ")), 3)
      end
      sum = sum + sizes[i]
    end
    if sum ~= t:size(dim) then
      error(fmt("%s: split_with_sizes expects split_sizes to sum exactly to %d (input tensor's size at dimension %d), but got split_sizes={%s}",
        op, t:size(dim), dim, table.concat(sizes, ", ")), 3)
    end
    return T.split(t, sizes, dim)
  end
  for _, name in ipairs { "split_with_sizes", "unsafe_split_with_sizes" } do
    define(name, function(t, sizes, dim, ...)
      ARGS.nooptions(name, 3, 3, dim, ...)
      return split_with_sizes(name, t, sizes, dim)
    end)
  end
  define("unsafe_split", function(t, ...) return T.split(t, ...) end)
  define("unsafe_chunk", function(t, ...) return T.chunk(t, ...) end)

  -- -- *_copy: the view ops, then a contiguous copy ------------------------------
  local function materialize(v)
    local r = v:clone()
    if not r:is_contiguous() then r = r:contiguous() end
    return r
  end
  local write = AC.finish
  -- slice(t, dim, start, end, step): 1-based inclusive positions, as the
  -- table keys of indexing ({first, last, step}); nil start/end: the ends
  local function slice(op, t, dim, start, stop, step)
    check_tensor(op, t, "input", 3)
    if t:dim() == 0 then error(fmt("%s: slice() cannot be applied to a 0-dim tensor.", op), 3) end
    dim = norm_dim(op, dim == nil and 1 or dim, t:dim())
    step = step == nil and 1 or step
    for _, v in ipairs { { start, "start" }, { stop, "end" }, { step, "step" } } do
      if v[1] ~= nil and (type(v[1]) ~= "number" or v[1] % 1 ~= 0) then
        error(fmt("%s: expected an integer or nil for %s, got %s", op, v[2], tostring(v[1])), 3)
      end
    end
    if step <= 0 then error(fmt("%s: slice step must be positive", op), 3) end
    local key = {}
    for i = 1, dim - 1 do key[i] = {} end
    key[dim] = { start == nil and 1 or start, stop == nil and t:size(dim) or stop, step }
    return t[key]
  end
  local VIEWS = {
    alias_copy = function(t, ...) ARGS.nooptions("alias_copy", 2, 1, ...); return t end,
    as_strided_copy = function(t, ...) return T.as_strided(t, ...) end,
    detach_copy = function(t, ...) return t:detach(...) end,
    diagonal_copy = function(t, ...) return T.diagonal(t, ...) end,
    expand_copy = function(t, ...) return t:expand(...) end,
    narrow_copy = function(t, ...) return T.narrow(t, ...) end,
    permute_copy = function(t, ...) return T.permute(t, ...) end,
    select_copy = function(t, ...) return T.select(t, ...) end,
    slice_copy = function(t, dim, start, stop, step, ...)
      ARGS.nooptions("slice_copy", 6, 5, ...)
      return slice("slice_copy", t, dim, start, stop, step)
    end,
    squeeze_copy = function(t, ...) return T.squeeze(t, ...) end,
    t_copy = function(t, ...) return T.t(t, ...) end,
    transpose_copy = function(t, ...) return T.transpose(t, ...) end,
    unfold_copy = function(t, ...) return t:unfold(...) end,
    unsqueeze_copy = function(t, ...) return T.unsqueeze(t, ...) end,
    view_copy = function(t, ...) return t:view(...) end,
    view_as_real_copy = function(t, ...) return T.view_as_real(t, ...) end,
    view_as_complex_copy = function(t, ...) return T.view_as_complex(t, ...) end,
  }
  for name, view in pairs(VIEWS) do
    local f = function(t, ...)
      check_tensor(name, t)
      local args, n, o = split_args(name, { "out" }, ...)
      return write(name, materialize(view(t, unpack(args, 1, n))), o)
    end
    if name == "narrow_copy" then define(name, f) else fn(name, f) end
  end
  local LIST_VIEWS = {
    split_copy = function(t, ...) return T.split(t, ...) end,
    split_with_sizes_copy = function(t, sizes, dim, ...)
      ARGS.nooptions("split_with_sizes_copy", 3, 3, dim, ...)
      return split_with_sizes("split_with_sizes_copy", t, sizes, dim)
    end,
    unbind_copy = function(t, ...) return T.unbind(t, ...) end,
  }
  for name, view in pairs(LIST_VIEWS) do
    fn(name, function(t, ...)
      check_tensor(name, t)
      local args, n, o = split_args(name, { "out" }, ...)
      if o.out ~= nil then error(fmt("%s: out= is not supported (the result is a list of tensors)", name), 2) end
      local parts = view(t, unpack(args, 1, n))
      local r = {}
      for i, p in ipairs(parts) do r[i] = materialize(p) end
      return r
    end)
  end

  -- -- scatter-views: a copy of t with the view's region replaced by src ---------
  -- t:clone(), then the view of the clone copied from src: differentiable
  -- with respect to both (the copy into the view is recorded)
  local function scatter_view(op, t, src, view, o)
    check_tensor(op, t, "input", 3)
    check_tensor(op, src, "src", 3)
    local r = t:clone()
    local v = view(r)
    if v.shape ~= src.shape then
      error(fmt("%s: expected src to have a size equal to the slice of self. src size = %s, slice size = %s",
        op, tostring(src.shape), tostring(v.shape)), 3)
    end
    v:copy_(src)
    return write(op, r, o)
  end
  define("select_scatter", function(t, src, dim, index, o, ...)
    ARGS.nomore("select_scatter", 5, ...)
    o = ARGS.checkopts("select_scatter", o, { "out" })
    return scatter_view("select_scatter", t, src, function(r) return r:select(dim, index) end, o)
  end)
  define("slice_scatter", function(t, src, ...)
    local args, n, o = split_args("slice_scatter", { "out" }, ...)
    ARGS.nooptions("slice_scatter", 3, 6, unpack(args, 1, n))
    return scatter_view("slice_scatter", t, src, function(r)
      return slice("slice_scatter", r, args[1], args[2], args[3], args[4])
    end, o)
  end)
  define("diagonal_scatter", function(t, src, ...)
    local args, n, o = split_args("diagonal_scatter", { "out" }, ...)
    ARGS.nooptions("diagonal_scatter", 3, 5, unpack(args, 1, n))
    local offset, d1, d2 = args[1] or 0, args[2] or 1, args[3] or 2
    return scatter_view("diagonal_scatter", t, src, function(r) return r:diagonal(offset, d1, d2) end, o)
  end)
  define("as_strided_scatter", function(t, src, size, stride, ...)
    local args, n, o = split_args("as_strided_scatter", { "out" }, ...)
    ARGS.nooptions("as_strided_scatter", 5, 5, unpack(args, 1, n))
    return scatter_view("as_strided_scatter", t, src, function(r)
      return r:as_strided(size, stride, args[1] or r:storage_offset())
    end, o)
  end)

  -- -- in-place forms ---------------------------------------------------------------
  -- t:op_(...) = t:copy_(t:op(...)): the result must have t's shape and cast
  -- to t's dtype (torch's checks); the options are the op's, but out
  local function inplace(name, base)
    method(name, function(t, ...)
      check_tensor(name, t, "self")
      local n = select("#", ...)
      local last = n > 0 and select(n, ...) or nil
      if is_opts(last) and last.out ~= nil then
        error(fmt("%s: unknown option 'out' (an in-place op writes self)", name), 2)
      end
      -- computed from a clone while recording (argcheck's inplace_source)
      local r = M[base](AC.inplace_source(t, ...), ...)
      if r.dtype ~= t.dtype and not T.can_cast(r.dtype, t.dtype) then
        error(fmt("%s: result type %s can't be cast to the desired output type %s", name,
          r.dtype.name, t.dtype.name), 2)
      end
      if r.shape ~= t.shape then
        error(fmt("%s: output with shape %s doesn't match the broadcast shape %s", name,
          tostring(t.shape), tostring(r.shape)), 2)
      end
      return t:copy_(r)
    end)
  end
  for _, base in ipairs { "addbmm", "addmm", "addmv", "addr", "baddbmm", "igamma", "igammac", "sgn" } do
    inplace(base .. "_", base)
  end
  -- cumsum_/cumprod_ accumulate in the tensor's own dtype (an integer one
  -- wraps, as PyTorch's; the out-of-place ops promote to int64)
  for _, base in ipairs { "cumsum", "cumprod" } do
    local name = base .. "_"
    method(name, function(t, dim, o, ...)
      check_tensor(name, t, "self")
      if is_opts(o) and o.out ~= nil then
        error(fmt("%s: unknown option 'out' (an in-place op writes self)", name), 2)
      end
      if is_opts(o) and o.dtype ~= nil and o.dtype ~= t.dtype then
        error(fmt("%s: Bad in-place call: input tensor dtype %s and output tensor dtype %s should match",
          name, t.dtype.name, T.is_dtype(o.dtype) and o.dtype.name or tostring(o.dtype)), 2)
      end
      ARGS.nomore(name, 3, ...)
      if t.dtype == T.bool then
        error(fmt("%s: Bad in-place call: input tensor dtype bool and output tensor dtype int64 should match", name), 2)
      end
      local opts = {}
      for k, v in pairs(o or {}) do opts[k] = v end
      opts.dtype = t.dtype
      return t:copy_(M[base](AC.inplace_source(t), dim, opts))
    end)
  end
  -- torch.addmv_(t, mat, vec): the function form of the new method
  T.addmv_ = M.addmv_
  -- torch.addmm/addmv/baddbmm(..., {out = o}): the engine op's result written
  -- into o by the out= rules of mm (docs/math.md: o's dtype exactly; an
  -- empty o is resized). The methods take no out, as torch's.
  for _, op in ipairs { "addmm", "addmv", "baddbmm" } do
    local raw = T[op]
    T[op] = named(op, function(input, a, b, o, ...)
      if is_opts(o) then o = ARGS.checkopts(op, o, { "beta", "alpha", "out" }) end
      if is_opts(o) and o.out ~= nil then
        local rest = {}
        for k, v in pairs(o) do if k ~= "out" then rest[k] = v end end
        return C._write_out(op, raw(input, a, b, rest, ...), o.out)
      end
      return raw(input, a, b, o, ...)
    end)
  end
  method("kron", function(t, other, ...) return T.kron(t, other, ...) end)

  -- -- index_reduce -------------------------------------------------------------------
  -- index_reduce(t, dim, index, source, reduce, {include_self}): the rows
  -- source[i] (along dim) reduced into t[index[i]], as scatter_reduce with
  -- index expanded to source's shape (so differentiable as scatter_reduce)
  local REDUCES = { prod = true, mean = true, amax = true, amin = true }
  local function index_reduce(op, t, dim, index, source, reduce, o)
    check_tensor(op, t, "self", 3)
    check_tensor(op, index, "index", 3)
    check_tensor(op, source, "source", 3)
    o = ARGS.checkopts(op, o, { "include_self" }, 4)
    if type(reduce) ~= "string" or not REDUCES[reduce] then
      error(fmt("%s: expected reduce to be one of prod, mean, amax or amin, got %s",
        op, tostring(reduce)), 3)
    end
    local include_self = o.include_self
    if include_self == nil then include_self = true end
    if type(include_self) ~= "boolean" then
      error(fmt("%s: expected a boolean for include_self, got %s", op, type(include_self)), 3)
    end
    dim = norm_dim(op, dim, t:dim())
    if index:dim() > 1 then error(fmt("%s: Index is supposed to be a vector", op), 3) end
    if index.dtype ~= T.int64 and index.dtype ~= T.int32 then
      error(fmt("%s: expected an int64 or int32 index tensor, got %s", op, index.dtype.name), 3)
    end
    if reduce == "mean" and t.dtype == T.bool then
      error(fmt("%s: reduce 'mean' is not supported for bool tensors", op), 3)
    end
    if source.dtype ~= t.dtype then
      error(fmt("%s: self (%s) and source (%s) must have the same dtype", op,
        t.dtype.name, source.dtype.name), 3)
    end
    local sd = math.max(source:dim(), 1)
    if math.max(t:dim(), 1) ~= sd then
      error(fmt("%s: source and self must have the same number of dimensions, got %d and %d",
        op, source:dim(), t:dim()), 3)
    end
    local ssize = source:dim() == 0 and 1 or source:size(dim)
    if index:numel() ~= ssize then
      error(fmt("%s: number of indices (%d) should be equal to source.size(dim) (%d)", op,
        index:numel(), ssize), 3)
    end
    for i = 1, source:dim() do
      if i ~= dim and source:size(i) ~= t:size(i) then
        error(fmt("%s: source %s and self %s must match in every dim but dim %d", op,
          tostring(source.shape), tostring(t.shape), dim), 3)
      end
    end
    local src = source:dim() == 0 and source:reshape(1) or source
    local vshape = {}
    for i = 1, src:dim() do vshape[i] = i == dim and index:numel() or 1 end
    local idx = index:to(T.int64):reshape(vshape):expand(src.shape)
    return src, idx, dim, include_self
  end
  define("index_reduce", function(t, dim, index, source, reduce, o, ...)
    ARGS.nomore("index_reduce", 6, ...)
    local src, idx, d, inc = index_reduce("index_reduce", t, dim, index, source, reduce, o)
    local base = t:dim() == 0 and t:reshape(1) or t
    return base:scatter_reduce(d, idx, src, reduce, { include_self = inc }):reshape(t.shape)
  end)
  method("index_reduce_", function(t, dim, index, source, reduce, o, ...)
    ARGS.nomore("index_reduce_", 6, ...)
    local src, idx, d, inc = index_reduce("index_reduce_", t, dim, index, source, reduce, o)
    if t:dim() == 0 then
      return t:copy_(t:reshape(1):scatter_reduce(d, idx, src, reduce, { include_self = inc }):reshape(t.shape))
    end
    return t:scatter_reduce_(d, idx, src, reduce, { include_self = inc })
  end)

  -- -- deprecated linear algebra spellings ------------------------------------------
  -- lu(A, pivot = true, get_infos = false) -> LU, pivots (, infos):
  -- linalg.lu_factor (_ex with get_infos); pivots 1-based, as LAPACK's
  define("lu", function(a, pivot, get_infos, ...)
    ARGS.nooptions("lu", 2, 3, pivot, get_infos, ...)
    check_tensor("lu", a)
    if pivot == nil then pivot = true end
    if get_infos then return T.linalg.lu_factor_ex(a, { pivot = pivot }) end
    -- torch.lu does not raise for a singular matrix (its info > 0 is
    -- ignored; only bad arguments raise)
    local LU, piv = T.linalg.lu_factor_ex(a, { pivot = pivot })
    return LU, piv
  end)
  -- lu_solve(B, LU, pivots) = linalg.lu_solve(LU, pivots, B)
  define("lu_solve", function(b, lu, piv, ...)
    ARGS.nooptions("lu_solve", 4, 3, ...)
    check_tensor("lu_solve", b)
    return T.linalg.lu_solve(lu, piv, b)
  end)

  -- torch.* spellings of nn.functional ops whose torch.* argument order is
  -- the functional's (torch.conv2d(input, weight, bias, stride, ...) ...).
  -- Left out on purpose: torch.batch_norm/instance_norm/embedding(_bag) and
  -- the torch.*_loss forms take their arguments in another order (or an
  -- integer reduction): use T.nn.functional's.
  for _, name in ipairs { "adaptive_avg_pool1d", "adaptive_max_pool1d", "alpha_dropout", "avg_pool1d",
    "bilinear", "celu", "celu_", "channel_shuffle", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "dropout", "feature_alpha_dropout", "group_norm",
    "hardshrink", "layer_norm", "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool3d",
    "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "prelu", "rrelu", "rrelu_", "selu",
    "selu_", "threshold", "threshold_" } do
    T[name] = T.nn.functional[name]
  end

  -- In-place shape ops: the out-of-place view's geometry given to t itself
  -- (as_strided_, which in grad mode records the change for a non-leaf and
  -- refuses a leaf that requires grad, as PyTorch); node: the name PyTorch
  -- gives the new grad_fn (a function of the arguments, or a string)
  local as_strided_ = M.as_strided_
  local function restride(name, view, node)
    define(name, function(t, ...)
      check_tensor(name, t)
      local v = view(t, ...)
      local ok, e = pcall(as_strided_, t, v:size(), v:stride(), v:storage_offset())
      if not ok then error((tostring(e):gsub("^.-as_strided_:", name .. ":", 1)), 2) end
      if t.requires_grad and T.is_grad_enabled() then
        C._name_grad_fn(t, type(node) == "function" and node(...) or node)
      end
      return t
    end)
  end
  local function nograd_view(f)
    return function(t, ...)
      local args = { n = select("#", ...), ... }
      local ok, v = pcall(T.no_grad, function() return f(t, (table.unpack or unpack)(args, 1, args.n)) end)
      if not ok then error(v, 0) end
      return v
    end
  end
  restride("squeeze_", nograd_view(function(t, ...) return t:squeeze(...) end),
    function(dim) return dim == nil and "SqueezeBackward2" or "SqueezeBackward3" end)
  restride("unsqueeze_", nograd_view(function(t, ...) return t:unsqueeze(...) end), "UnsqueezeBackward1")
  restride("t_", nograd_view(function(t, ...) return t:t(...) end), "TBackward1")
  restride("transpose_", nograd_view(function(t, ...) return t:transpose(...) end), "TransposeBackward1")
  restride("swapaxes_", nograd_view(function(t, ...) return t:transpose(...) end), "TransposeBackward1")
  restride("swapdims_", nograd_view(function(t, ...) return t:transpose(...) end), "TransposeBackward1")

  -- -- T.finfo / T.iinfo --------------------------------------------------------------
  -- PyTorch's numeric limits of a dtype: finfo(float dtype) -> {bits, eps,
  -- max, min, tiny, smallest_normal, resolution, dtype}; a complex dtype
  -- gives its parts'; iinfo(integer dtype) -> {bits, max, min, dtype}
  -- (int64's limits are exact: boxed int64_t under LuaJIT).
  local FINFO = {
    float16 = { 16, 2 ^ -10, 65504, 2 ^ -14, 1e-3 },
    bfloat16 = { 16, 2 ^ -7, (2 - 2 ^ -7) * 2 ^ 127, 2 ^ -126, 1e-2 },
    float32 = { 32, 2 ^ -23, (2 - 2 ^ -23) * 2 ^ 127, 2 ^ -126, 1e-6 },
    float64 = { 64, 2 ^ -52, 1.7976931348623157e308, 2 ^ -1022, 1e-15 },
  }
  local PARTS = { complex64 = "float32", complex128 = "float64" }
  local function info_repr(kind, i)
    local keys = kind == "finfo" and { "resolution", "min", "max", "eps", "smallest_normal", "tiny" }
      or { "min", "max" }
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. tostring(i[k]) end
    return fmt("%s(%s, dtype=%s)", kind, table.concat(parts, ", "), i.dtype)
  end
  -- a dtype's name ("float16", "ember.float16") stands for it, as wherever
  -- ember takes a dtype
  local function named_dtype(op, dt)
    if type(dt) ~= "string" then return dt end
    local d = AC.dtype_named(dt)
    if not d then error(fmt("%s: unknown dtype '%s'", op, dt), 3) end
    return d
  end
  function T.finfo(dt, ...)
    ARGS.nomore("finfo", 1, ...)
    if dt == nil then dt = T.get_default_dtype() end
    dt = named_dtype("finfo", dt)
    if not T.is_dtype(dt) then error("finfo: expected a dtype, got " .. type(dt), 2) end
    local name = PARTS[dt.name] or dt.name
    local f = FINFO[name]
    if not f then error(fmt("finfo: %s is not a floating point dtype (use T.iinfo)", dt.name), 2) end
    local i = { bits = f[1], eps = f[2], max = f[3], min = -f[3], tiny = f[4], smallest_normal = f[4],
      resolution = f[5], dtype = name }
    return setmetatable(i, { __tostring = function(t) return info_repr("finfo", t) end })
  end
  local IINFO = { uint8 = { 8, 0, 255 }, int8 = { 8, -128, 127 }, int16 = { 16, -32768, 32767 },
    int32 = { 32, -2147483648, 2147483647 } }
  function T.iinfo(dt, ...)
    ARGS.nomore("iinfo", 1, ...)
    dt = named_dtype("iinfo", dt)
    if not T.is_dtype(dt) then error("iinfo: expected a dtype, got " .. type(dt), 2) end
    local i
    if dt == T.int64 then
      local lo = T.full({}, -2 ^ 63, { dtype = T.int64 })
      i = { bits = 64, min = lo:item(), max = (lo - 1):item(), dtype = "int64" }
    else
      local v = IINFO[dt.name]
      if not v then error(fmt("iinfo: %s is not an integer dtype (use T.finfo)", dt.name), 2) end
      i = { bits = v[1], min = v[2], max = v[3], dtype = dt.name }
    end
    return setmetatable(i, { __tostring = function(t) return info_repr("iinfo", t) end })
  end

  -- outer(a, b): PyTorch's is a broadcast mul, so mixed dtypes promote and
  -- bool gives bool; the engine's product wants one non-bool dtype
  for _, tbl in ipairs { T, M } do
    local real = tbl.outer
    if real then
      tbl.outer = named("outer", function(a, b, ...)
        -- (with out= too: real's options check and out rules)
        if is_t(a) and is_t(b) and (a.dtype ~= b.dtype or a.dtype == T.bool) and select("#", ...) <= 1 then
          local dt = T.promote_types(a.dtype, b.dtype)
          if dt == T.bool then
            if a.ndim ~= 1 or b.ndim ~= 1 then return real(a, b) end  -- its error
            local o = ARGS.checkopts("outer", (...), { "out" })
            local r = a:unsqueeze(2):logical_and(b:unsqueeze(1))
            return AC.finish("outer", r, o)
          end
          return real(a:to(dt), b:to(dt), ...)
        end
        return real(a, b, ...)
      end)
    end
  end
end
