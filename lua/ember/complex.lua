-- The complex dtypes' parts written in Lua (issue 19; docs/dtypes.md,
-- "Complex"): sum and mean of a complex tensor (or of any tensor with a
-- complex `dtype` option), as the real reductions of its view_as_real (the
-- trailing (re, im) dim kept). Every argument form of the real reductions
-- is taken: the checks (dims in range, keepdim, option names) are the real
-- reduction's, run on a meta tensor of the input's shape; `dtype` converts
-- the input first and `out` receives the result, as for real input.
-- var, std and norm of a complex tensor give torch's real results: var is
-- var(re) + var(im) (|z - mean|^2 splits into the parts), std its root,
-- norm the real norm of |z| (every vector p-norm depends only on |z|);
-- var_mean/std_mean that variance (or its root) with the complex mean.
-- The tests and comparisons (isnan/isinf/isfinite, equal, isclose,
-- allclose), where, masked_fill(_) (so tril/triu), cumsum, nan_to_num,
-- count_nonzero, any, all, nonzero, argwhere and lerp are composed from
-- the real and imaginary parts, with torch's definitions; sigmoid, rsqrt,
-- log2, log10, sinh, cosh, tan and sgn from the complex family's ops
-- (differentiable as their compositions). T.inner, cfloat/cdouble and the
-- trace method are torch's spellings for every dtype.
return function(T, C)
  local M = T.Tensor_methods
  local ARGS = require("ember.args")
  local unpack = table.unpack or unpack
  local function plain(v) return type(v) == "table" and getmetatable(v) == nil end
  -- an options table: a plain table with a string key
  local function is_opts(v)
    if not plain(v) then return false end
    for k in pairs(v) do if type(k) == "string" then return true end end
    return false
  end
  local function is_cx(dt) return dt == T.complex64 or dt == T.complex128 end
  -- a complex tensor? (one metatable for every tensor box: cheaper than
  -- T.is_tensor and a method call, on the path every real call takes)
  local TM = getmetatable(T.empty(0))
  local function cxt(v) return getmetatable(v) == TM and is_cx(v.dtype) end

  -- the options table among args[1..n] (the last that is one), replaced
  -- there by a copy without the keys of drop: the original and its index
  local function strip(args, n, drop)
    for i = n, 1, -1 do
      if is_opts(args[i]) then
        local o, rest = args[i], {}
        for k, v in pairs(o) do
          if not drop[k] then rest[k] = v end
        end
        args[i] = rest
        return o, i
      end
    end
  end
  local DT_OUT, OUT = { dtype = true, out = true }, { out = true }
  -- r, or r written into out (resized and cast as the real ops do)
  local give = require("ember.argcheck")(T).write_out
  local function define(name, f) M[name], T[name] = f, f end
  -- an error message without the position a Lua error() put in front
  local unpos = require("ember.argcheck")(T).unpos
  -- an argument for an error message: a tensor's dtype, else its Lua type
  local function what(v)
    if getmetatable(v) == TM then return "a " .. v.dtype.name .. " tensor" end
    return type(v)
  end

  -- A reduction's arguments (after t; n of them) when t or its dtype
  -- option is complex: the real reduction's checks run on a meta tensor of
  -- t's shape; returns t (converted to the dtype option), its positive dims
  -- (every dim when none is given), keepdim and out; nil when the real
  -- reduction should run instead.
  local function cx_reduce_args(name, real, t, n, ...)
    if getmetatable(t) == TM and not is_cx(t.dtype) then
      -- real input: complex only through a dtype option (the last argument)
      if n == 0 then return nil end
      local last = select(n, ...)
      if not (plain(last) and is_cx(last.dtype)) then return nil end
    end
    -- dtype and out are applied here; the rest goes to the real reduction
    local args = { ... }
    local o, oi = strip(args, n, DT_OUT)
    local want, out = o and o.dtype, o and o.out
    if not (cxt(t) or is_cx(want)) then return nil end
    if want ~= nil and not is_cx(want) then
      error(("%s: a complex input needs a complex dtype, got %s"):format(name, tostring(want)), 3)
    end
    local ok, err = pcall(real, T.empty(t.shape, { device = "meta" }), unpack(args, 1, n))
    if not ok then error(err, 3) end
    if want then t = t:to(want) end
    -- the dims (nil: every dim) and keepdim, as the real forms read them
    local a1, dims, keepdim = args[1], nil, false
    if type(a1) == "number" then
      dims = { a1 }
    elseif plain(a1) and not is_opts(a1) then
      dims = #a1 > 0 and a1 or nil
    elseif is_opts(a1) then
      local d = a1.dim
      dims = type(d) == "number" and { d } or (plain(d) and #d > 0 and d) or nil
      keepdim = a1.keepdim == true
    end
    if type(args[2]) == "boolean" then keepdim = args[2] end
    if oi and oi > 1 and args[oi].keepdim ~= nil then keepdim = args[oi].keepdim == true end
    local nd, ds = t:dim(), {}
    if dims then
      for i = 1, #dims do ds[i] = dims[i] < 0 and dims[i] + nd + 1 or dims[i] end
    else
      for i = 1, nd do ds[i] = i end
    end
    return t, ds, keepdim, out
  end

  for _, name in ipairs { "sum", "mean" } do
    local real = M[name]
    local function f(t, ...)
      local n = select("#", ...)
      local z, ds, keepdim, out = cx_reduce_args(name, real, t, n, ...)
      if not z then return real(t, ...) end
      local res
      if z:dim() == 0 then
        res = z:clone()
      else
        res = T.view_as_complex(real(T.view_as_real(z), ds, keepdim):contiguous())
      end
      return give(name, res, out)
    end
    define(name, f)
  end

  -- prod of a complex tensor: the dims halved in turn, each step the
  -- product of the two halves (an odd element carried), so log2(n) complex
  -- multiplications of shrinking tensors; differentiable as that
  -- composition (exact at zeros, where PyTorch's formula divides)
  local function halve_prod(z, d)
    local n = z:size(d)
    if n == 0 then
      local sh = z.shape:totable()
      sh[d] = 1
      return T.ones(sh, { dtype = z.dtype, device = z.device })
    end
    while n > 1 do
      local h = math.floor(n / 2)
      local p = z:narrow(d, 1, h) * z:narrow(d, h + 1, h)
      if n % 2 == 1 then p = T.cat({ p, z:narrow(d, n, 1) }, d) end
      z, n = p, p:size(d)
    end
    return z
  end
  do
    local real = M.prod
    local function prod(t, ...)
      local n = select("#", ...)
      local z, ds, keepdim, out = cx_reduce_args("prod", real, t, n, ...)
      if not z then return real(t, ...) end
      local r = z
      table.sort(ds)
      for i = #ds, 1, -1 do
        r = halve_prod(r, ds[i])
        if not keepdim then r = r:squeeze(ds[i]) end
      end
      if r == z then r = z:clone() end
      return give("prod", r, out)
    end
    define("prod", prod)
  end

  -- args without the out option of their options table, and that out
  local function take_out(args, n)
    local o = strip(args, n, OUT)
    return o and o.out
  end
  for _, name in ipairs { "var", "std" } do
    local real = M.var
    local rootf = name == "std"
    local realf = M[name]
    local function f(t, ...)
      if not cxt(t) then return realf(t, ...) end
      local n, args = select("#", ...), { ... }
      local out = take_out(args, n)
      -- the real op's errors as the caller's (not this file's position)
      local ok, vr = pcall(real, t.real, unpack(args, 1, n))
      if not ok then error(unpos(vr), 2) end
      local v = vr + real(t.imag, unpack(args, 1, n))
      if rootf then v = v:sqrt() end
      return give(name, v, out)
    end
    define(name, f)
  end
  -- var_mean / std_mean of a complex tensor: the variance as var above
  -- (the parts' var_mean run the real op's checks) and the complex mean
  do
    local real_vm = M.var_mean
    for _, name in ipairs { "var_mean", "std_mean" } do
      local realf = M[name]
      local rootf = name == "std_mean"
      local function f(t, ...)
        if not cxt(t) then return realf(t, ...) end
        local ok, vr, mr = pcall(real_vm, t.real, ...)
        if not ok then error(unpos(vr), 2) end
        local vi, mi = real_vm(t.imag, ...)
        local v = vr + vi
        if rootf then v = v:sqrt() end
        return v, T.complex(mr, mi)
      end
      define(name, f)
    end
  end
  local real_norm = M.norm
  local function norm(t, p, ...)
    if p == "nuc" and getmetatable(t) == TM then
      -- torch.norm(x, "nuc"): a 2-d input, or two dims given; the sum of
      -- the singular values (T.linalg.matrix_norm)
      local dim, keepdim = ...
      ARGS.nomore("norm", 4, select(3, ...))
      if type(dim) == "table" and not plain(dim) then dim = nil end
      if dim == nil and t:dim() ~= 2 then
        error(("norm: the nuclear norm needs a 2-d input or two dims, got a %d-d input"):format(t:dim()), 2)
      end
      local ok, r = pcall(T.linalg.matrix_norm, t, "nuc", { dim = dim, keepdim = keepdim == true })
      if not ok then error("norm: " .. unpos(r), 2) end
      return r
    end
    if not cxt(t) then return real_norm(t, p, ...) end
    return real_norm(t:abs(), p, ...)
  end
  define("norm", norm)

  -- what an in-place form composed as z:copy_(f(z)) computes f from
  local source = require("ember.argcheck")(T).inplace_source

  -- -- the parts' compositions -------------------------------------------------
  -- name in T and in the methods: f(real, ...) when one of the first two
  -- arguments is complex (the tensors of every wrapped function)
  local function wrap(name, f)
    for _, tbl in ipairs { T, M } do
      local real = tbl[name]
      if real then
        tbl[name] = function(...)
          local a, b = ...
          if cxt(a) or cxt(b) then return f(real, ...) end
          return real(...)
        end
      end
    end
  end
  -- a tensor's or a number's (re, im)
  local function parts(v)
    if cxt(v) then return v.real, v.imag end
    if getmetatable(v) == TM then return v, T.zeros_like(v) end
    return v, 0
  end

  wrap("isnan", function(real, t) return real(t.real):logical_or(real(t.imag)) end)
  wrap("isinf", function(real, t) return real(t.real):logical_or(real(t.imag)) end)
  wrap("isfinite", function(real, t) return real(t.real):logical_and(real(t.imag)) end)

  -- equal: the same shape and values (NaN unequal), in the common dtype
  wrap("equal", function(real, a, b, ...)
    if select("#", ...) > 0 then return real(a, b, ...) end -- its own error
    if not (T.is_tensor(a) and T.is_tensor(b)) then return real(a, b) end
    local dt = T.promote_types(a.dtype, b.dtype)
    return real(T.view_as_real(a:to(dt)), T.view_as_real(b:to(dt)))
  end)

  -- isclose as torch's: a == b, or both NaN with equal_nan, or a finite
  -- |a - b| <= atol + rtol |b| (complex moduli)
  local function close_args(op, ...)
    local n, args = select("#", ...), { ... }
    local rtol, atol, en, i = 1e-5, 1e-8, false, 1
    if type(args[i]) == "number" then rtol, i = args[i], i + 1 end
    if type(args[i]) == "number" then atol, i = args[i], i + 1 end
    if type(args[i]) == "boolean" then en, i = args[i], i + 1 end
    if plain(args[i]) then
      local o = args[i]
      for k in pairs(o) do
        if k ~= "rtol" and k ~= "atol" and k ~= "equal_nan" then
          error(("%s: unknown option '%s' (expected one of: rtol, atol, equal_nan)"):format(op, tostring(k)), 4)
        end
      end
      rtol, atol = o.rtol or rtol, o.atol or atol
      if o.equal_nan ~= nil then en = o.equal_nan end
      i = i + 1
    end
    if i <= n then error(("%s: unexpected argument #%d (%s)"):format(op, i + 2, type(args[i])), 4) end
    return rtol, atol, en
  end
  local function isclose(op, a, b, ...)
    if not (T.is_tensor(a) and T.is_tensor(b)) then
      error(("%s: expected two tensors, got %s and %s"):format(op, what(a), what(b)), 3)
    end
    if a.dtype ~= b.dtype then
      error(("%s: expected the same dtype, got %s and %s"):format(op, tostring(a.dtype), tostring(b.dtype)), 3)
    end
    local rtol, atol, en = close_args(op, ...)
    local close = a:eq(b)
    if en then close = close:logical_or(T.isnan(a):logical_and(T.isnan(b))) end
    local err = (a - b):abs()
    local ok = T.isfinite(err):logical_and(err:le(b:abs() * rtol + atol))
    return close:logical_or(ok)
  end
  wrap("isclose", function(_, a, b, ...) return isclose("isclose", a, b, ...) end)
  wrap("allclose", function(_, a, b, ...) return isclose("allclose", a, b, ...):all():item() end)

  -- where(cond, a, b): the parts picked apart (promotion as the parts')
  local real_where = T.where
  T.where = function(cond, ...)
    local a, b = ...
    if select("#", ...) == 2 and (cxt(a) or cxt(b)) then
      local ar, ai = parts(a)
      local br, bi = parts(b)
      local re, im = real_where(cond, ar, br), real_where(cond, ai, bi)
      -- a float16/bfloat16 part with a 0-d complex: the result is complex64
      local rt = T.result_type(a, b) == T.complex128 and T.float64 or T.float32
      return T.complex(re:to(rt), im:to(rt))
    end
    -- where(cond) alone is nonzero{as_tuple = true}: either part nonzero
    if select("#", ...) == 0 and cxt(cond) then return real_where(cond:ne(0)) end
    return real_where(cond, ...)
  end

  -- masked_fill_(z, mask, v): each part filled (v a number: (v, 0)); the
  -- out-of-place form on a clone, and tril/triu through it
  local function fill_parts(real_inplace, z, mask, v, ...)
    if select("#", ...) > 0 then return real_inplace(z, mask, v, ...) end -- its own error
    local vr, vi = parts(v)
    real_inplace(z.real, mask, vr)
    real_inplace(z.imag, mask, vi)
    return z
  end
  local real_fill_ = M.masked_fill_
  -- with a gradient recorded, the parts are filled out of place and
  -- rejoined (an in-place write through z.real would be refused: the
  -- storage is viewed as another dtype in the graph); masked_fill_ then
  -- copies that result into z
  local real_fill = M.masked_fill
  local function grad_fill(z, mask, v, ...)
    if select("#", ...) > 0 then return real_fill(z, mask, v, ...) end -- its own error
    local vr, vi = parts(v)
    local re, im = real_fill(z.real, mask, vr), real_fill(z.imag, mask, vi)
    return T.complex(re, im)
  end
  local function recording(z, v)
    return T.is_grad_enabled() and (z.requires_grad or (cxt(v) or T.is_tensor(v)) and v.requires_grad)
  end
  wrap("masked_fill_", function(real, z, mask, v, ...)
    if not cxt(z) then return real(z, mask, v, ...) end -- its own error
    if recording(z, v) then return z:copy_(grad_fill(z:clone(), mask, v, ...)) end
    return fill_parts(real, z, mask, v, ...)
  end)
  wrap("masked_fill", function(real, z, mask, v, ...)
    if not cxt(z) then return real(z, mask, v, ...) end
    if recording(z, v) then return grad_fill(z, mask, v, ...) end
    return fill_parts(real_fill_, z:clone(), mask, v, ...)
  end)

  -- an options table of only `out` (the composed unary functions take no
  -- other option), and the result written there
  local function only_out(op, o, lvl)
    if o == nil then return nil end
    if not plain(o) then error(("%s: expected an options table, got %s"):format(op, type(o)), lvl) end
    for k in pairs(o) do
      if k ~= "out" then error(("%s: unknown option '%s' (expected one of: out)"):format(op, tostring(k)), lvl) end
    end
    return o.out
  end
  local function unary(name, f)
    wrap(name, function(_, z, o, ...)
      if select("#", ...) > 0 or not cxt(z) then
        error(("%s: expected a complex tensor and an options table, got %s and %s"):format(
          name, what(z), what(o)), 3)
      end
      local out = only_out(name, o, 4)
      local r = f(z)
      return give(name, r, out)
    end)
    -- the in-place form, as torch's: z:copy_(f(z))
    wrap(name .. "_", function(_, z, ...)
      if select("#", ...) > 0 then
        error(("%s_: expected a complex tensor and no other argument, got %d more"):format(
          name, select("#", ...)), 3)
      end
      return z:copy_(f(source(z)))
    end)
  end
  local LN2, LN10 = math.log(2), math.log(10)
  unary("sigmoid", function(z) return (T.exp(-z) + 1):reciprocal() end)
  unary("rsqrt", function(z) return T.sqrt(z):reciprocal() end)
  -- the parts scaled apart: a complex product with (1/ln b + 0i) would
  -- make log(0)'s -inf times 0 a NaN imaginary part
  local function log_base(ln)
    return function(z)
      local l = T.log(z)
      return T.complex(l.real / ln, l.imag / ln)
    end
  end
  unary("log2", log_base(LN2))
  unary("log10", log_base(LN10))
  -- through the engine's C99 csin/ccos/ctanh at i z = -y + i x (Annex G's
  -- infinities and overflow; the products of parts would make inf * 0 a
  -- NaN): sinh z = -i sin(i z), cosh z = cos(i z), tan z = -i tanh(i z);
  -- multiplying by +-i only moves the parts
  local function times_i(z) return T.complex(-z.imag, z.real) end
  local function times_minus_i(w) return T.complex(w.imag, -w.real) end
  unary("sinh", function(z) return times_minus_i(T.sin(times_i(z))) end)
  unary("cosh", function(z) return T.cos(times_i(z)) end)
  unary("tan", function(z) return times_minus_i(T.tanh(times_i(z))) end)

  -- sgn: z / |z| (0 at 0), torch's complex sign; sign for real input
  local function sgn(t, o, ...)
    if select("#", ...) > 0 then error("sgn: expected a tensor and an options table", 2) end
    local out = only_out("sgn", o, 3)
    if not T.is_tensor(t) then error(("sgn: expected a tensor, got %s"):format(type(t)), 2) end
    local r
    if t:is_complex() then
      -- |z| replaced by 1 at 0 in the division, so that its gradient
      -- there is 0 (torch's sgn_backward), not 0/0
      local a = t:abs()
      local z = a:eq(0)
      r = T.where(z, 0, t / T.where(z, 1, a):to(t.dtype))
    else
      local ok, res = pcall(T.sign, t)
      if not ok then error((tostring(res):gsub("^.-sign:", "sgn: sign:", 1)), 2) end
      r = res
    end
    return give("sgn", r, out)
  end
  define("sgn", sgn)

  -- the parts' own reductions and scans
  -- a scan's (dim, options) on complex z: the real scan's checks on a meta
  -- tensor, then z in the dtype option's complex dtype, the options left
  -- for the real scan, and out
  local function scan_args(name, real, z, dim, o)
    local one = { o }
    local opts = strip(one, 1, DT_OUT)
    local ok, err = pcall(real, T.empty(z.shape, { device = "meta" }), dim, one[1])
    if not ok then error(err, 3) end
    if opts and opts.dtype ~= nil then
      if not is_cx(opts.dtype) then
        error(("%s: a complex input needs a complex dtype, got %s"):format(name, tostring(opts.dtype)), 3)
      end
      z = z:to(opts.dtype)
    end
    return z, one[1], opts and opts.out
  end
  wrap("cumsum", function(real, z, dim, o, ...)
    if not cxt(z) or select("#", ...) > 0 then return real(z, dim, o, ...) end
    local out
    z, o, out = scan_args("cumsum", real, z, dim, o)
    local r = T.complex(real(z.real, dim, o), real(z.imag, dim, o))
    return give("cumsum", r, out)
  end)
  -- cumprod: log2(n) doubling steps (y[i] *= y[i - s] for s = 1, 2, 4, ...)
  wrap("cumprod", function(real, z, dim, o, ...)
    if not cxt(z) or select("#", ...) > 0 then return real(z, dim, o, ...) end
    local out
    z, o, out = scan_args("cumprod", real, z, dim, o)
    local y = z
    if y:dim() > 0 then
      local d = dim < 0 and dim + y:dim() + 1 or dim
      local n, s = y:size(d), 1
      while s < n do
        y = T.cat({ y:narrow(d, 1, s), y:narrow(d, s + 1, n - s) * y:narrow(d, 1, n - s) }, d)
        s = s * 2
      end
    end
    if y == z then y = z:clone() end
    return give("cumprod", y, out)
  end)
  wrap("nan_to_num", function(real, z, ...)
    if not cxt(z) then return real(z, ...) end
    local n, args = select("#", ...), { ... }
    local out = take_out(args, n)
    local r = T.complex(real(z.real, unpack(args, 1, n)), real(z.imag, unpack(args, 1, n)))
    return give("nan_to_num", r, out)
  end)
  -- (nonzero/argwhere: a complex element is nonzero when either part is,
  -- torch's rule, not the real part alone)
  for _, name in ipairs { "count_nonzero", "any", "all", "nonzero", "argwhere" } do
    wrap(name, function(real, z, ...)
      if not cxt(z) then return real(z, ...) end
      return real(z:ne(0), ...)
    end)
  end
  -- lerp and lerp_: PyTorch's rule, end and a tensor weight of start's dtype
  -- (torch: "expected dtype c10::complex<float> for `end` but got dtype float")
  local function lerp_check(name, a, b, w)
    for _, v in ipairs { { b, "end" }, { w, "weight" } } do
      if T.is_tensor(v[1]) and v[1].dtype ~= a.dtype then
        error(("%s: expected dtype %s for `%s` but got dtype %s"):format(name, a.dtype.name, v[2],
          v[1].dtype.name), 4)
      end
    end
  end
  for name, in_place in pairs { lerp = false, lerp_ = true } do
    wrap(name, function(real, a, b, w, ...)
      if select("#", ...) > 0 or not T.is_tensor(a) then return real(a, b, w, ...) end
      if w == nil then return real(a, b, w) end -- its own error
      lerp_check(name, a, b, w)
      local r = a + (b - a) * w
      if in_place then return a:copy_(r) end
      return r
    end)
  end

  -- the index ops that move or add values, on the parts: each runs the
  -- real op on the real and on the imaginary parts (index and mask
  -- arguments shared; a complex value argument split; a number value v is
  -- v + 0i), then T.complex joins them (differentiable as that). vals: the
  -- positions, after self, of the value arguments. The in-place form
  -- writes the out-of-place result into self (copy_).
  local function split_value(name, z, v)
    if cxt(v) then return v.real, v.imag end
    if getmetatable(v) == TM then
      error(("%s: self is %s but the value is %s: both must have the same dtype"):format(
        name, z.dtype.name, v.dtype.name), 4)
    end
    if type(v) == "number" then return v, 0 end
    return v, v
  end
  local function on_parts(name, vals)
    local real_of = { T = T[name], M = M[name] }
    local function run(real, z, n, args)
      local out = take_out(args, n)
      local o = args[n]
      if plain(o) and o.reduce ~= nil and o.reduce ~= "add" and o.reduce ~= "sum" and o.reduce ~= "mean" then
        error(("%s: reduce '%s' is not implemented for %s tensors"):format(name, tostring(o.reduce),
          z.dtype.name), 3)
      end
      -- scatter_reduce's reduction is its 4th argument: only the linear ones
      if name == "scatter_reduce" and args[4] ~= "sum" and args[4] ~= "mean" then
        error(("%s: reduce '%s' is not implemented for %s tensors (sum and mean are)"):format(name,
          tostring(args[4]), z.dtype.name), 3)
      end
      local re, im = {}, {}
      for i = 1, n do re[i], im[i] = args[i], args[i] end
      for _, i in ipairs(vals) do
        if i <= n then re[i], im[i] = split_value(name, z, args[i]) end
      end
      local r = T.complex(real(z.real, unpack(re, 1, n)), real(z.imag, unpack(im, 1, n)))
      return r, out
    end
    wrap(name, function(real, z, ...)
      if not cxt(z) then return real(z, ...) end
      local n = select("#", ...)
      local r, out = run(real, z, n, { ... })
      return give(name, r, out)
    end)
    -- the in-place form
    local ip = name .. "_"
    for key, tbl in pairs { T = T, M = M } do
      local real_ip, real = tbl[ip], real_of[key] or real_of.M
      if real_ip then
        tbl[ip] = function(z, ...)
          if not cxt(z) then return real_ip(z, ...) end
          local n = select("#", ...)
          local r = run(real, source(z), n, { ... })
          return z:copy_(r)
        end
      end
    end
  end
  on_parts("gather", {})
  on_parts("take", {})
  on_parts("scatter", { 3 })
  on_parts("scatter_add", { 3 })
  on_parts("index_add", { 3 })
  on_parts("index_copy", { 3 })
  on_parts("index_fill", { 3 })
  on_parts("put", { 2 })
  on_parts("masked_scatter", { 2 })
  on_parts("scatter_reduce", { 3 })

  -- isreal (every dtype) and polar
  local function isreal(t, ...)
    ARGS.nooptions("isreal", 2, 1, ...)
    if not T.is_tensor(t) then error(("isreal: expected a tensor, got %s"):format(type(t)), 2) end
    if cxt(t) then return t.imag:eq(0) end
    return T.ones(t.shape, { dtype = T.bool, device = t.device })
  end
  define("isreal", isreal)
  -- angle of a real tensor: pi where x < 0, else 0, NaN kept; integers
  -- give the default float dtype (PyTorch's); its gradient is zero
  for _, tbl in ipairs { T, M } do
    local real_angle = tbl.angle
    tbl.angle = function(x, ...)
      if getmetatable(x) ~= TM or x:is_complex() then return real_angle(x, ...) end
      ARGS.nomore("angle", 1, ...)
      local f = x.dtype.is_floating_point and x or x:to(T.get_default_dtype())
      local r = T.no_grad(function()
        -- pi in f's dtype (a float64 x gets float64's pi)
        return T.where(f:isnan(), f, f:lt(0):to(f.dtype):mul(math.pi))
      end)
      -- a zero gradient, finite also where x is infinite
      if f.requires_grad then r = r + T.where(f:isfinite(), f, 0) * 0 end
      return r
    end
  end

  T.polar = function(abs, angle, o, ...)
    ARGS.nomore("polar", 3, ...)
    local out = only_out("polar", o, 3)
    if not (T.is_tensor(abs) and T.is_tensor(angle)) then
      error(("polar: expected two tensors, got %s and %s"):format(what(abs), what(angle)), 2)
    end
    local da, dg = abs.dtype, angle.dtype
    if da ~= dg or (da ~= T.float32 and da ~= T.float64) then
      error(("polar: Expected both inputs to be Float or Double tensors but got %s and %s"):format(
        da.name, dg.name), 2)
    end
    local ok, r = pcall(function() return T.complex(abs * angle:cos(), abs * angle:sin()) end)
    if not ok then error("polar: " .. unpos(r), 2) end
    return give("polar", r, out)
  end

  -- every dtype: T.inner (the last dims contracted), cfloat/cdouble, trace
  local function inner(a, b, o, ...)
    if select("#", ...) > 0 then error("inner: expected two tensors and an options table", 2) end
    local out = only_out("inner", o, 3)
    if not (T.is_tensor(a) and T.is_tensor(b)) then
      error(("inner: expected two tensors, got %s and %s"):format(what(a), what(b)), 2)
    end
    local r
    if a:dim() == 0 or b:dim() == 0 then
      r = a * b
    else
      if a:size(-1) ~= b:size(-1) then
        error(("inner: inputs' last dimensions must match, got %d and %d"):format(a:size(-1), b:size(-1)), 2)
      end
      local ok, res = pcall(T.tensordot, a, b, { { a:dim() }, { b:dim() } })
      if not ok then error("inner: " .. (unpos(res):gsub("^tensordot: ", "")), 2) end
      r = res
    end
    return give("inner", r, out)
  end
  -- (named: every error at the caller's line, under Lua 5.4 too)
  define("inner", require("ember.argcheck")(T).named("inner", inner))
  for name, dt in pairs { cfloat = T.complex64, cdouble = T.complex128 } do
    M[name] = function(t, ...)
      if select("#", ...) > 0 then
        local o = ...
        local k = plain(o) and next(o) or type(o)
        error(("%s: unknown option '%s' (%s takes no options)"):format(name, tostring(k), name), 2)
      end
      return t:to(dt)
    end
  end
  if not M.trace then M.trace = T.trace end
end
