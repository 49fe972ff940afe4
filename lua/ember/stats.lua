-- stats: statistics helpers of issue 19 item 3 (docs/math.md,
-- "Statistics helpers"), over tensor ops (autograd runs through the
-- differentiable ones). Positions are 1-based: searchsorted/bucketize
-- return PyTorch's insertion index + 1 (1..n+1), mode and
-- unique_consecutive's indices are 1-based, bincount counts the values
-- 1..K (result[v] counts v; a value below 1 is an error).
return function(T, C)
  local M = C._methods
  local A = require("ember.argcheck")(T)
  local is_opts, check_opts, check_tensor, named = A.is_opts, A.check_opts, A.check_tensor, A.named
  local fmt = string.format

  local function both(name, f)
    f = named(name, f)
    M[name] = f
    T[name] = f
  end
  local finish = A.finish
  local function is_float(dt) return dt == T.float32 or dt == T.float64 or dt == T.float16 or dt == T.bfloat16 end
  local function dtname(dt) return (tostring(dt):gsub("^ember%.", "")) end
  local function wrap_dim(op, d, ndim)
    local n = math.max(ndim, 1)
    if type(d) ~= "number" or d ~= math.floor(d) or d == 0 or d < -n or d > n then
      error(fmt("%s: dimension %s out of range (expected to be in range of [%d, %d])", op, tostring(d), -n, n), 4)
    end
    return d < 0 and d + n + 1 or d
  end
  local function has_values(t) return t:numel() > 0 and tostring(t.device) ~= "meta" end
  -- positional arguments then an options table: returns the positional
  -- values (as a list, nil-padded to n) and the options
  local function args(op, n, allowed, ...)
    local a = { ... }
    local o
    for i = 1, n + 1 do
      if is_opts(a[i]) then
        o = a[i]
        for j = i, n do a[j] = nil end
        break
      end
    end
    o = check_opts(op, o, A.set(allowed), 4)
    return a, o
  end

  -- -- diff ------------------------------------------------------------------------
  both("diff", function(x, ...)
    local a, o = args("diff", 4, { "n", "dim", "prepend", "append", "out" }, ...)
    check_tensor("diff", x, "input", 2)
    local n, dim = a[1] or o.n or 1, a[2] or o.dim or -1
    local pre, app = a[3] or o.prepend, a[4] or o.append
    if x.ndim == 0 then error("diff: expects input to be at least one-dimensional", 2) end
    if type(n) ~= "number" or n < 0 or n ~= math.floor(n) then
      error(fmt("diff: order must be non-negative but got %s", tostring(n)), 2)
    end
    dim = wrap_dim("diff", dim, x.ndim)
    -- order 0 is x itself, prepend/append ignored (PyTorch and NumPy)
    if n == 0 then return finish("diff", x, o) end
    local parts = {}
    local function side(v)
      if v == nil then return end
      if type(v) == "number" then
        local s = x.shape:totable(); s[dim] = 1
        v = T.full(s, v, { dtype = x.dtype, device = x.device })
      end
      check_tensor("diff", v, "prepend/append", 4)
      if v.ndim ~= x.ndim then
        error(fmt("diff: expects prepend or append to have the same number of dimensions as input (%d), got %d", x.ndim, v.ndim), 4)
      end
      parts[#parts + 1] = v
    end
    side(pre); parts[#parts + 1] = x; side(app)
    local r = #parts > 1 and T.cat(parts, dim) or x
    for _ = 1, n do
      local len = r.shape[dim]
      if len == 0 then break end
      local hi, lo = r:narrow(dim, 2, len - 1), r:narrow(dim, 1, len - 1)
      r = r.dtype == T.bool and hi:logical_xor(lo) or hi - lo
    end
    return finish("diff", r, o)
  end)

  -- -- cov / corrcoef -------------------------------------------------------------------
  local function cov(op, x, o)
    check_tensor(op, x, "input", 3)
    if x.ndim > 2 then error(fmt("%s: expected input to have two or fewer dimensions but got an input with %d dimensions", op, x.ndim), 3) end
    if x.ndim < 2 then x = x:reshape(1, -1) end
    if x.dtype == T.bool then error(fmt("%s: bool dtype is not supported for input", op), 3) end
    -- complex input keeps its dtype (the product takes the conjugate)
    if not is_float(x.dtype) and not x:is_complex() then x = x:to(T.get_default_dtype()) end
    local nobs = x.shape[2]
    local correction = o.correction == nil and 1 or o.correction
    -- the weights stay real (complex input: its real counterpart)
    local function real_dt(dt)
      if dt == T.complex64 then return T.float32 elseif dt == T.complex128 then return T.float64 end
      return dt
    end
    local w = nil
    local fw, aw = o.fweights, o.aweights
    if fw ~= nil then
      check_tensor(op, fw, "fweights", 3)
      if fw.ndim > 1 or fw:numel() ~= nobs then
        error(fmt("%s: expected fweights to have one dimension with %d elements (the number of observations)", op, nobs), 3)
      end
      if is_float(fw.dtype) or fw:is_complex() or fw.dtype == T.bool then
        error(fmt("%s: expected fweights to have integral dtype, got %s", op, dtname(fw.dtype)), 3)
      end
      if has_values(fw) and fw:lt(0):any():item() then error(fmt("%s: fweights cannot be negative", op), 3) end
      w = fw:to(real_dt(x.dtype))
    end
    if aw ~= nil then
      check_tensor(op, aw, "aweights", 3)
      if aw.ndim > 1 or aw:numel() ~= nobs then
        error(fmt("%s: expected aweights to have one dimension with %d elements (the number of observations)", op, nobs), 3)
      end
      if not is_float(aw.dtype) then
        error(fmt("%s: expected aweights to have floating point dtype, got %s", op, dtname(aw.dtype)), 3)
      end
      if has_values(aw) and aw:lt(0):any():item() then error(fmt("%s: aweights cannot be negative", op), 3) end
      -- the result takes aweights' dtype into its promotion (PyTorch)
      local dt = T.promote_types(x.dtype, aw.dtype)
      x = x:to(dt)
      local wdt = real_dt(dt)
      w = w and w:to(wdt) * aw or aw:to(wdt)
    end
    local avg, wsum
    if w then
      wsum = w:sum()
      if has_values(wsum) and wsum:eq(0):item() then error(fmt("%s: weights sum to zero, can't be normalized", op), 3) end
      avg = (x * w):sum(2) / wsum
    else
      wsum = nobs
      avg = x:mean(2)
    end
    local norm
    if w and correction ~= 0 then
      if aw then norm = wsum - (w * aw):sum() * correction / wsum else norm = wsum - correction end
    else
      norm = wsum - correction
    end
    if T.is_tensor(norm) then norm = norm:clamp(0) elseif norm < 0 then norm = 0 end
    local xm = x - avg:unsqueeze(2)
    local rhs = (w and xm * w or xm):t()
    if rhs:is_complex() then rhs = rhs:conj() end
    local c = xm:matmul(rhs) / norm
    return c:squeeze()
  end
  local COV = { "correction", "fweights", "aweights" }
  both("cov", function(x, o)
    o = check_opts("cov", o, A.set(COV), 2)
    return cov("cov", x, o)
  end)
  both("corrcoef", function(x, o)
    check_opts("corrcoef", o, {}, 2)
    local c = cov("corrcoef", x, {})
    if c.ndim == 0 then return c / c end
    local d = c:diagonal()
    local s = (d:is_complex() and T.real(d) or d):sqrt()
    c = c / s:unsqueeze(2)
    c = c / s:unsqueeze(1)
    -- complex: the real and imaginary parts each clipped (PyTorch)
    if c:is_complex() then return T.complex(T.real(c):clamp(-1, 1), T.imag(c):clamp(-1, 1)) end
    return c:clamp(-1, 1)
  end)

  -- -- quantile / nanquantile ----------------------------------------------------------------
  local INTERP = { linear = true, lower = true, higher = true, midpoint = true, nearest = true }
  local function quantile(op, ignore_nan, x, q, ...)
    check_tensor(op, x, "input", 3)
    local a, o = args(op, 3, { "dim", "keepdim", "interpolation", "out" }, ...)
    local dim, keepdim = a[1] or o.dim, a[2] or o.keepdim or false
    local interp = a[3] or o.interpolation or "linear"
    if not INTERP[interp] then
      error(fmt("%s: interpolation must be one of linear, lower, higher, midpoint or nearest, got %s", op, tostring(interp)), 3)
    end
    if x.dtype ~= T.float32 and x.dtype ~= T.float64 then
      error(fmt("%s: input tensor must be either float or double dtype, got %s", op, dtname(x.dtype)), 3)
    end
    if x:numel() == 0 then error(fmt("%s: input tensor must be non-empty", op), 3) end
    local qs, scalar_q
    if T.is_tensor(q) then
      if q.ndim > 1 then error(fmt("%s: q must be a scalar or 1D tensor", op), 3) end
      if q.dtype ~= x.dtype then error(fmt("%s: q tensor must be same dtype as the input tensor", op), 3) end
      scalar_q = q.ndim == 0
      qs = q:reshape(-1):tolist()
    elseif type(q) == "number" then
      qs, scalar_q = { q }, true
    else
      error(fmt("%s: expected a number or a tensor for q, got %s", op, type(q)), 3)
    end
    for _, v in ipairs(qs) do
      if not (v >= 0 and v <= 1) then error(fmt("%s: q values must be in the range [0, 1]", op), 3) end
    end
    local xs, outshape
    if dim == nil then
      xs = x:reshape(-1)
      outshape = {}
      if keepdim then for i = 1, x.ndim do outshape[i] = 1 end end
    else
      dim = wrap_dim(op, dim, x.ndim)
      xs = x:movedim(dim, -1)
      outshape = x.shape:totable()
      -- a 0-d input gives a 0-d result with keepdim too (as PyTorch)
      if x.ndim == 0 then outshape = {}
      elseif keepdim then outshape[dim] = 1 else table.remove(outshape, dim) end
    end
    if xs.ndim == 0 then xs = xs:reshape(1) end
    local sorted = xs:sort(-1)
    local n = sorted.shape[sorted.ndim]
    local nan = xs:isnan()
    local cnt
    if ignore_nan then cnt = nan:logical_not():sum(-1, true):to(x.dtype) else cnt = T.full(sorted.shape:totable(), n, { dtype = x.dtype }):narrow(-1, 1, 1) end
    local anynan = nan:any(-1, true)
    local res = {}
    for i, qv in ipairs(qs) do
      local rank = ((cnt - 1) * qv):clamp(0)
      local lo, hi = rank:floor(), rank:ceil()
      if interp == "nearest" then
        lo = rank:round(); hi = lo
      end
      local li, hi_i = (lo + 1):long():clamp(1, n), (hi + 1):long():clamp(1, n)
      local vlo, vhi = sorted:gather(-1, li), sorted:gather(-1, hi_i)
      local v
      if interp == "linear" then v = T.lerp(vlo, vhi, rank - lo)
      elseif interp == "lower" or interp == "nearest" then v = vlo
      elseif interp == "higher" then v = vhi
      else v = (vlo + vhi) * 0.5 end
      local bad = ignore_nan and cnt:eq(0) or anynan
      v = T.where(bad, 0 / 0, v)
      res[i] = v:squeeze(-1):reshape(outshape)
    end
    local r
    if scalar_q then r = res[1]
    elseif #res == 0 then
      -- an empty q: (0, outshape...), still in x's graph (as PyTorch)
      local sh = { 0 }
      for i = 1, #outshape do sh[i + 1] = outshape[i] end
      r = x:reshape(-1):narrow(1, 1, 0):reshape(sh)
    else r = T.stack(res, 1) end
    return finish(op, r, o)
  end
  both("quantile", function(x, q, ...) return quantile("quantile", false, x, q, ...) end)
  both("nanquantile", function(x, q, ...) return quantile("nanquantile", true, x, q, ...) end)

  -- -- bincount / histc / histogram ----------------------------------------------------------
  both("bincount", function(x, ...)
    local a, o = args("bincount", 2, { "weights", "minlength" }, ...)
    check_tensor("bincount", x, "input", 2)
    local w, minlength = a[1] or o.weights, a[2] or o.minlength or 0
    if x.ndim ~= 1 or is_float(x.dtype) or x.dtype == T.bool then
      error(fmt("bincount: only 1-d integer tensors are supported, got %d-d %s", x.ndim, dtname(x.dtype)), 2)
    end
    if type(minlength) ~= "number" or minlength < 0 then error("bincount: minlength should be >= 0", 2) end
    if w ~= nil then
      check_tensor("bincount", w, "weights", 2)
      if w.ndim ~= 1 or w:numel() ~= x:numel() then
        error("bincount: weights should be 1-d and have the same length as input", 2)
      end
    end
    local len = minlength
    if has_values(x) then
      local lo = x:min():item()
      if lo < 1 then
        error(fmt("bincount: values must be >= 1 (class ids are 1-based: result[v] counts v), got %d", lo), 2)
      end
      len = math.max(len, x:max():item())
    end
    local dt = w and (w.dtype == T.float32 and T.float32 or T.float64) or T.int64
    local r = T.zeros(len, { dtype = dt, device = x.device })
    if x:numel() == 0 then return r end
    local src = w and w:to(dt) or T.ones(x:numel(), { dtype = dt, device = x.device })
    return r:index_add(1, x:long(), src)
  end)

  -- widen: how far an empty range is widened each way (histc 1, histogram
  -- 0.5 as NumPy)
  local function minmax_range(op, x, lo, hi, widen)
    if lo == hi and has_values(x) then lo, hi = x:min():item(), x:max():item() end
    if lo == hi then lo, hi = lo - widen, hi + widen end
    if lo > hi then error(fmt("%s: max must be larger than min", op), 4) end
    if lo ~= lo or hi ~= hi or lo == -1 / 0 or hi == 1 / 0 then
      -- (nan spelled alike under LuaJIT and Lua 5.4, which prints -nan)
      local function str(v) return v ~= v and "nan" or tostring(v) end
      error(fmt("%s: range of [%s, %s] is not finite", op, str(lo), str(hi)), 4)
    end
    return lo, hi
  end
  -- counts (or weights) of x in `bins` equal bins over [lo, hi] (hi closed).
  -- The bin is PyTorch's: (x - lo) * bins / (hi - lo) in x's dtype; with
  -- edges (histogram) it is then moved by one where x lies outside that
  -- bin's edges (its local search), so the counts agree with the edges
  local function equal_bins(x, bins, lo, hi, w, dt, edges)
    local xf = x:reshape(-1)
    local f = xf:to(T.float64)
    local inside = f:ge(lo):logical_and(f:le(hi))
    local b = ((xf - lo) * bins / (hi - lo)):floor():to(T.float64):clamp(0, bins - 1):long()
    if edges then
      local e = edges:to(T.float64)
      local left, right = e:gather(1, b + 1), e:gather(1, b + 2)
      b = T.where(f:lt(left), b - 1, T.where(f:ge(right):logical_and(b:lt(bins - 1)), b + 1, b))
      b = b:clamp(0, bins - 1)
    end
    b = b + 1
    local src = w and w:reshape(-1):to(dt) or T.ones(f:numel(), { dtype = dt, device = x.device })
    src = T.where(inside, src, 0)
    return T.zeros(bins, { dtype = dt, device = x.device }):index_add(1, b, src)
  end
  both("histc", function(x, ...)
    local a, o = args("histc", 3, { "bins", "min", "max", "out" }, ...)
    check_tensor("histc", x, "input", 2)
    if not is_float(x.dtype) then error(fmt("histc: not implemented for %s tensors", dtname(x.dtype)), 2) end
    local bins, lo, hi = a[1] or o.bins or 100, a[2] or o.min or 0, a[3] or o.max or 0
    if type(bins) ~= "number" or bins ~= math.floor(bins) then
      error(fmt("histc: bins must be an integer, got %s", tostring(bins)), 2)
    end
    if bins <= 0 then error(fmt("histc: bins must be > 0, but got %d", bins), 2) end
    lo, hi = minmax_range("histc", x, lo, hi, 1)
    return finish("histc", equal_bins(x, bins, lo, hi, nil, x.dtype), o)
  end)
  both("histogram", function(x, bins, o)
    if is_opts(bins) then o, bins = bins, nil end
    o = check_opts("histogram", o, A.set { "bins", "range", "weight", "density" }, 2)
    check_tensor("histogram", x, "input", 2)
    if not is_float(x.dtype) then error(fmt("histogram: not implemented for %s tensors", dtname(x.dtype)), 2) end
    bins = bins or o.bins or 100
    local w = o.weight
    if w ~= nil and (not T.is_tensor(w) or w.shape:totable()[1] ~= nil and w:numel() ~= x:numel()) then
      error("histogram: if weight tensor is provided it should have the same shape as the input tensor", 2)
    end
    local hist, edges
    if T.is_tensor(bins) then
      if o.range ~= nil then error("histogram: range cannot be given with a tensor of bin edges", 2) end
      if bins.ndim ~= 1 or bins:numel() < 2 then
        error(fmt("histogram: bins tensor should have one dimension and at least 2 elements (one bin), got shape [%s]",
          table.concat(bins.shape:totable(), ", ")), 2)
      end
      edges = bins:to(x.dtype)
      local nb = edges:numel() - 1
      local f = x:reshape(-1)
      local e = edges:to(T.float64)
      local fv = f:to(T.float64)
      local pos = fv:unsqueeze(2):ge(e:unsqueeze(1)):sum(2) -- edges <= v
      local last = fv:eq(e[nb + 1])
      pos = T.where(last, nb, pos)
      local inside = fv:ge(e[1]):logical_and(fv:le(e[nb + 1]))
      local src = w and w:reshape(-1):to(x.dtype) or T.ones(f:numel(), { dtype = x.dtype })
      src = T.where(inside, src, 0)
      hist = T.zeros(nb, { dtype = x.dtype }):index_add(1, pos:clamp(1, math.max(nb, 1)), src)
    else
      if type(bins) ~= "number" or bins <= 0 or bins ~= math.floor(bins) then error("histogram: bins must be > 0", 2) end
      -- NumPy's and PyTorch's: the given range, else the data's, else
      -- [0, 1] for no data; an empty range widens by 0.5 each way
      local lo, hi
      if o.range ~= nil then
        local r = o.range
        if type(r) ~= "table" or type(r[1]) ~= "number" or type(r[2]) ~= "number" or r[3] ~= nil then
          error("histogram: range should be a table of two numbers {min, max}", 2)
        end
        lo, hi = r[1], r[2]
        if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end
      elseif has_values(x) then
        lo, hi = minmax_range("histogram", x, 0, 0, 0.5)
      else
        lo, hi = 0, 1
      end
      lo, hi = minmax_range("histogram", x, lo, hi, 0.5)
      edges = T.linspace(lo, hi, bins + 1, { dtype = x.dtype })
      hist = equal_bins(x, bins, lo, hi, w, x.dtype, edges)
    end
    if o.density then
      local widths = edges:narrow(1, 2, edges:numel() - 1) - edges:narrow(1, 1, edges:numel() - 1)
      hist = hist / (hist:sum() * widths)
    end
    return hist, edges
  end)

  -- histogramdd(x, bins[, {range=, weight=, density=}]): the D-dimensional
  -- histogram of the rows of x (*, D), as torch.histogramdd: bins a number
  -- (each dim), a list of D numbers, or a list of D edge tensors; range a
  -- flat list {min1, max1, ..., minD, maxD} (with counts only; else each
  -- dim's data range, an empty one widened by 0.5 each way, [0, 1] for no
  -- data). A row counts where it lies inside every dim's edges (each last
  -- edge closed); the bins are torch's in each dim (histogram's above).
  -- Returns hist (the bin counts, shape {bins...}) and a list of D edge tensors.
  both("histogramdd", function(x, bins, o)
    local op = "histogramdd"
    if is_opts(bins) and not T.is_tensor(bins[1]) and type(bins[1]) ~= "number" then o, bins = bins, nil end
    o = check_opts(op, o, A.set { "bins", "range", "weight", "density" }, 2)
    check_tensor(op, x, "input", 2)
    if not is_float(x.dtype) then error(fmt("%s: not implemented for %s tensors", op, dtname(x.dtype)), 2) end
    if x.ndim < 1 then error(op .. ": input should have at least 1 dimension (its last: the point's coordinates)", 2) end
    bins = bins or o.bins
    if bins == nil then error(op .. ": bins is required (a number, a list of numbers or a list of edge tensors)", 2) end
    local D = x:size(-1)
    local pts = x:reshape(-1, D)
    local N = pts:size(1)
    local w = o.weight
    if w ~= nil then
      check_tensor(op, w, "weight", 2)
      local ws = w.shape:totable()
      local xs = x.shape:totable()
      local ok = #ws == #xs - 1
      for i = 1, #ws do ok = ok and ws[i] == xs[i] end
      if not ok then
        error(fmt("%s: expected weight to have the input's shape without its last dim, [%s], got [%s]", op,
          table.concat(xs, ", ", 1, #xs - 1), table.concat(ws, ", ")), 2)
      end
    end
    -- the bins per dim: counts or edge tensors
    local per = {}
    if type(bins) == "number" then
      for d = 1, D do per[d] = bins end
    elseif type(bins) == "table" and not T.is_tensor(bins) then
      if #bins ~= D then
        error(fmt("%s: expected %d bin specifications (one per dim of the points), got %d", op, D, #bins), 2)
      end
      for d = 1, D do per[d] = bins[d] end
    else
      error(fmt("%s: bins must be a number, a list of numbers or a list of edge tensors, got %s", op,
        T.is_tensor(bins) and "a tensor" or type(bins)), 2)
    end
    local range = o.range
    if range ~= nil then
      if type(range) ~= "table" or #range ~= 2 * D then
        error(fmt("%s: for a %d-dimensional histogram range should have %d elements, but got %s", op, D, 2 * D,
          type(range) == "table" and tostring(#range) or type(range)), 2)
      end
    end
    local edges, idx, inside, shape = {}, nil, nil, {}
    local stride = 1
    for d = D, 1, -1 do
      local b = per[d]
      local v = pts:select(2, d)
      local vf = v:to(T.float64)
      local e, pos, ins
      if T.is_tensor(b) then
        if range ~= nil then error(op .. ": range cannot be given with tensors of bin edges", 2) end
        if b.ndim ~= 1 or b:numel() < 2 then
          error(fmt("%s: the bin edges of dim %d should be a 1-d tensor of at least 2 elements", op, d), 2)
        end
        e = b:to(x.dtype)
        local nb = e:numel() - 1
        local ef = e:to(T.float64)
        pos = vf:unsqueeze(2):ge(ef:unsqueeze(1)):sum(2)
        pos = T.where(vf:eq(ef[nb + 1]), nb, pos):clamp(1, nb)
        ins = vf:ge(ef[1]):logical_and(vf:le(ef[nb + 1]))
        shape[d] = nb
      else
        if type(b) ~= "number" or b <= 0 or b ~= math.floor(b) then
          error(fmt("%s: the bin count of dim %d must be a positive integer, got %s", op, d, tostring(b)), 2)
        end
        local lo, hi
        if range ~= nil then
          lo, hi = range[2 * d - 1], range[2 * d]
          if type(lo) ~= "number" or type(hi) ~= "number" then
            error(fmt("%s: range should hold numbers, got %s and %s for dim %d", op, type(lo), type(hi), d), 2)
          end
          if lo == hi then lo, hi = lo - 0.5, hi + 0.5 end
        elseif has_values(v) then
          lo, hi = minmax_range(op, v, 0, 0, 0.5)
        else
          lo, hi = 0, 1
        end
        lo, hi = minmax_range(op, v, lo, hi, 0.5)
        e = T.linspace(lo, hi, b + 1, { dtype = x.dtype })
        -- torch's linear bin, then moved by one where v lies outside its edges
        local ef = e:to(T.float64)
        local p0 = ((v - lo) * b / (hi - lo)):floor():to(T.float64):clamp(0, b - 1):long()
        local left, right = ef:gather(1, p0 + 1), ef:gather(1, p0 + 2)
        p0 = T.where(vf:lt(left), p0 - 1, T.where(vf:ge(right):logical_and(p0:lt(b - 1)), p0 + 1, p0))
        pos = p0:clamp(0, b - 1) + 1
        ins = vf:ge(lo):logical_and(vf:le(hi))
        shape[d] = b
      end
      edges[d] = e
      local term = (pos:long() - 1) * stride
      idx = idx and idx + term or term
      inside = inside and inside:logical_and(ins) or ins
      stride = stride * shape[d]
    end
    local total = stride
    local src = w and w:reshape(-1):to(x.dtype) or T.ones(N, { dtype = x.dtype, device = x.device })
    local hist = T.zeros(total, { dtype = x.dtype, device = x.device })
    if N > 0 then hist = hist:index_add(1, idx + 1, T.where(inside, src, 0)) end
    hist = hist:reshape(shape)
    if o.density then
      -- each bin's count over the total and the bin's volume
      local vol = nil
      for d = 1, D do
        local e = edges[d]
        local wd = e:narrow(1, 2, e:numel() - 1) - e:narrow(1, 1, e:numel() - 1)
        local vs = {}
        for k = 1, D do vs[k] = 1 end
        vs[d] = wd:numel()
        wd = wd:reshape(vs)
        vol = vol and vol * wd or wd
      end
      hist = hist / (hist:sum() * vol)
    end
    return hist, edges
  end)

  -- -- searchsorted / bucketize (1-based positions) ----------------------------------------------
  -- a binary search over the last dim, all values at once: ceil(log2(n+1))
  -- rounds of gather and compare (PyTorch's cus_lower_bound/upper_bound:
  -- go right while !(mid >= v), or !(mid > v) for right, so a NaN value
  -- lands after every number). Compared in int64 when both are integral,
  -- else float64 (a Lua number keeps its fraction against integer
  -- boundaries, as PyTorch's promotion does).
  local function positions(op, seq, v, right, o)
    local scalar = type(v) == "number"
    if scalar then
      v = T.full({}, v, { dtype = v == math.floor(v) and math.abs(v) < 2 ^ 53 and not seq.dtype.is_floating_point
        and T.int64 or T.float64, device = seq.device })
    end
    check_tensor(op, v, "input", 4)
    -- complex values have no order: refused, as PyTorch
    for _, t in ipairs { seq, v } do
      if t:is_complex() then error(fmt("%s: not implemented for %s tensors", op, t.dtype.name), 4) end
    end
    local integral = not seq.dtype.is_floating_point and not v.dtype.is_floating_point
    local cdt = integral and T.int64 or T.float64
    local s, vv = seq:to(cdt), v:to(cdt)
    local n = s.shape[s.ndim]
    local vshape = vv.shape:totable()
    local flat
    if s.ndim == 1 then
      flat = vv:reshape(-1)
    else
      flat = vv:reshape(-1, vv.shape[vv.ndim] or 1)
      s = s:reshape(-1, n)
    end
    local lo = T.zeros(flat.shape:totable(), { dtype = T.int64, device = seq.device })
    local hi = T.full(flat.shape:totable(), n, { dtype = T.int64, device = seq.device })
    if n > 0 and flat:numel() > 0 then
      local rounds = math.floor(math.log(n) / math.log(2)) + 1
      for _ = 1, rounds do
        local open = lo:lt(hi)
        local mid = T.div(lo + hi, 2, { rounding_mode = "floor" })
        local at = s:gather(s.ndim, (mid:clamp(0, n - 1) + 1))
        local go_right = right and at:gt(flat):logical_not() or at:ge(flat):logical_not()
        lo = T.where(open:logical_and(go_right), mid + 1, lo)
        hi = T.where(open:logical_and(go_right:logical_not()), mid, hi)
      end
    end
    local r = lo:reshape(vshape) + 1
    if o.out_int32 then r = r:int() end
    return r
  end
  both("searchsorted", function(seq, v, o)
    o = check_opts("searchsorted", o, A.set { "right", "side", "sorter", "out_int32", "out" }, 2)
    check_tensor("searchsorted", seq, "sorted_sequence", 2)
    if type(v) == "number" and seq.ndim ~= 1 then
      error(fmt("searchsorted: input value can be a scalar only when boundaries tensor dimension is 1, " ..
        "but we got boundaries tensor dim(%d)", seq.ndim), 2)
    end
    local right = o.right or false
    if o.side ~= nil then
      if o.side ~= "left" and o.side ~= "right" then
        error(fmt("searchsorted: side can only be 'left' or 'right' but got %s", tostring(o.side)), 2)
      end
      if o.right and o.side == "left" then
        error("searchsorted: side and right can't be set to opposites, got side of left while right was true", 2)
      end
      right = o.side == "right"
    end
    if o.sorter ~= nil then
      check_tensor("searchsorted", o.sorter, "sorter", 2)
      if o.sorter.dtype ~= T.int64 and o.sorter.dtype ~= T.int32 then
        error(fmt("searchsorted: sorter must be a tensor of int64 (or int32) dtype but got dtype %s",
          dtname(o.sorter.dtype)), 2)
      end
      if table.concat(o.sorter.shape:totable(), ",") ~= table.concat(seq.shape:totable(), ",") then
        error(fmt("searchsorted: boundary and sorter must have the same size, but got boundary tensor [%s] " ..
          "and sorter tensor [%s]", table.concat(seq.shape:totable(), ", "),
          table.concat(o.sorter.shape:totable(), ", ")), 2)
      end
      seq = seq:gather(seq.ndim, o.sorter:long())
    end
    if seq.ndim == 0 then error("searchsorted: sorted_sequence must be at least one-dimensional", 2) end
    if T.is_tensor(v) and seq.ndim > 1 then
      local a, b = seq.shape:totable(), v.shape:totable()
      table.remove(a); table.remove(b)
      if #a ~= #b or table.concat(a, ",") ~= table.concat(b, ",") then
        error("searchsorted: boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
          .. "tensor and input value tensor must match", 2)
      end
    end
    return finish("searchsorted", positions("searchsorted", seq, v, right, o), o)
  end)
  both("bucketize", function(v, boundaries, o)
    o = check_opts("bucketize", o, A.set { "right", "out_int32", "out" }, 2)
    check_tensor("bucketize", boundaries, "boundaries", 2)
    if boundaries.ndim ~= 1 then
      error(fmt("bucketize: boundaries tensor must be 1 dimension, but got dim(%d)", boundaries.ndim), 2)
    end
    return finish("bucketize", positions("bucketize", boundaries, v, o.right or false, o), o)
  end)

  -- -- trapezoid / cumulative_trapezoid ----------------------------------------------------
  local function trap_parts(op, y, x, o)
    check_tensor(op, y, "y", 4)
    if y.ndim == 0 then error(fmt("%s: expected y to have at least one dimension, got a 0-d tensor", op), 4) end
    local xt = T.is_tensor(x)
    if y.dtype == T.bool or xt and x.dtype == T.bool then
      error(fmt("%s: received a bool input for `x` or `y`, but bool is not supported", op), 4)
    end
    local dim = wrap_dim(op, o.dim or -1, y.ndim)
    local n = y.shape[dim]
    if n == 0 then return nil, dim end
    local avg = (y:narrow(dim, 2, n - 1) + y:narrow(dim, 1, n - 1)) * 0.5
    if x == nil then return avg * (o.dx or 1), dim end
    if type(x) == "number" then return avg * x, dim end
    check_tensor(op, x, "x", 4)
    local dx
    if x.ndim == 1 then
      if x.shape[1] ~= n then
        error(fmt("%s: there must be one `x` value for each sample point: x has %d, y has %d along dim %d",
          op, x.shape[1], n, dim), 4)
      end
      dx = x:diff()
      local s = {}
      for i = 1, y.ndim do s[i] = 1 end
      s[dim] = n - 1
      dx = dx:reshape(s)
    else
      -- fewer dims than y: leading dims of size 1 (PyTorch's), then the
      -- differences along y's dim broadcast against y's
      if x.ndim < y.ndim then
        local s = x.shape:totable()
        for _ = 1, y.ndim - x.ndim do table.insert(s, 1, 1) end
        x = x:reshape(s)
      end
      dx = x:diff(1, dim)
    end
    return avg * dx, dim
  end
  local function trapezoid(op, y, x, o)
    if is_opts(x) then o, x = x, nil end
    o = check_opts(op, o, A.set { "dx", "dim" }, 3)
    if x ~= nil and o.dx ~= nil then error(fmt("%s: cannot take both x and dx", op), 3) end
    local p, dim = trap_parts(op, y, x, o)
    if not p then
      -- no samples: zeros in y's dtype (PyTorch's zeros_like_except)
      local s = y.shape:totable(); table.remove(s, dim)
      return T.zeros(s, { dtype = y.dtype, device = y.device })
    end
    return p:sum(dim)
  end
  both("trapezoid", function(y, x, o) return trapezoid("trapezoid", y, x, o) end)
  both("trapz", function(y, x, o) return trapezoid("trapz", y, x, o) end)
  both("cumulative_trapezoid", function(y, x, o)
    if is_opts(x) then o, x = x, nil end
    o = check_opts("cumulative_trapezoid", o, A.set { "dx", "dim" }, 2)
    local p, dim = trap_parts("cumulative_trapezoid", y, x, o)
    if not p then
      -- no samples: an empty result of the dtype the products would have
      local e = y:narrow(dim, 1, 0)
      if not is_float(e.dtype) and not e:is_complex() then e = e:to(T.get_default_dtype()) end
      return e * 1
    end
    return p:cumsum(dim)
  end)

  -- -- logcumsumexp --------------------------------------------------------------------------
  -- a scan of logaddexp (exact for every prefix, however far below the
  -- maximum). float32/16/bf16 scan in double and round once (as PyTorch's
  -- CPU kernel, whose accumulator is double): a float scan drifts (5e-5
  -- relative after 1e5 steps)
  local function lcse_scan(x, dim)
    local odt = x.dtype
    if odt ~= T.float64 then x = x:double() end
    local n = x.shape[dim]
    local acc = x:narrow(dim, 1, 1)
    local parts = { acc }
    for i = 2, n do
      acc = T.logaddexp(acc, x:narrow(dim, i, 1))
      parts[i] = acc
    end
    local r = n == 1 and acc * 1 or T.cat(parts, dim)
    if odt ~= T.float64 then r = r:to(odt) end
    return r
  end
  -- the gradient is PyTorch's logcumsumexp_backward (one node, not a chain
  -- of logaddexp nodes, whose exp(inf - inf) made every gradient before a
  -- +inf input NaN): the positive and negative parts of the output's
  -- gradient, each a reversed logcumsumexp of log|g| - result, plus x,
  -- exponentiated; double backward runs through these ops
  local LogCumSumExp = T.autograd.Function:extend("Logcumsumexp")
  function LogCumSumExp.forward(ctx, x, dim)
    local r = lcse_scan(x, dim)
    ctx.dim = dim
    ctx:save_for_backward(x, r)
    return r
  end
  function LogCumSumExp.backward(ctx, g)
    local x, r = ctx.saved_tensors[1], ctx.saved_tensors[2]
    local dim = ctx.dim
    local lowest = T.finfo(g.dtype).min
    local function rev(t) return T.logcumsumexp(t:flip({ dim }), dim):flip({ dim }) end
    local lg = g:abs():log()
    local pos = T.where(g:gt(0), lg, lowest)
    local neg = T.where(g:lt(0), lg, lowest)
    return (rev(pos - r) + x):exp() - (rev(neg - r) + x):exp(), nil
  end
  both("logcumsumexp", function(x, dim, o)
    if is_opts(dim) then o, dim = dim, nil end
    o = check_opts("logcumsumexp", o, A.set { "dim", "out" }, 2)
    check_tensor("logcumsumexp", x, "input", 2)
    dim = dim or o.dim
    if dim == nil then error("logcumsumexp: missing the dim argument", 2) end
    dim = wrap_dim("logcumsumexp", dim, x.ndim)
    -- complex is refused (torch 1.13 has no complex kernel; converting to
    -- a real dtype dropped the imaginary parts)
    if x.dtype.is_complex then error("logcumsumexp: not implemented for complex input, got " .. x.dtype.name, 2) end
    if not is_float(x.dtype) then x = x:to(T.get_default_dtype()) end
    if x.ndim == 0 then return finish("logcumsumexp", x * 1, o) end
    if x:numel() == 0 then return finish("logcumsumexp", x * 1, o) end
    local r
    if x.requires_grad then r = LogCumSumExp.apply(x, dim) else r = lcse_scan(x, dim) end
    return finish("logcumsumexp", r, o)
  end)

  -- -- dist / renorm ----------------------------------------------------------------------------
  both("dist", function(a, b, p, o)
    if is_opts(p) then o, p = p, nil end
    check_opts("dist", o, {}, 2)
    check_tensor("dist", a, "input", 2)
    check_tensor("dist", b, "other", 2)
    p = p or 2
    local d = (a - b)
    if not is_float(d.dtype) and not d:is_complex() then
      error(fmt("dist: expected a floating point or complex tensor, got %s", dtname(d.dtype)), 2)
    end
    local ad = d:abs() -- a complex difference: the norm of |a - b| (real, as torch)
    -- +-inf norms of nothing are 0 (PyTorch's)
    if (p == 1 / 0 or p == -1 / 0) and ad:numel() == 0 then return T.zeros({}, { dtype = ad.dtype, device = ad.device }) end
    if p == 1 / 0 then return ad:max() end
    if p == -1 / 0 then return ad:min() end
    if p == 0 then return ad:ne(0):to(ad.dtype):sum() end
    -- the norm op: its gradient is 0 where a = b (PyTorch's), not 0 * inf
    return d:reshape(-1):norm(p)
  end)
  local function renorm(op, x, p, dim, maxnorm)
    check_tensor(op, x, "input", 3)
    if type(p) ~= "number" or p <= 0 then error(fmt("%s: non-positive-norm not supported", op), 3) end
    if type(maxnorm) ~= "number" or maxnorm < 0 then error(fmt("%s: expected maxnorm to be >= 0 but got %s", op, tostring(maxnorm)), 3) end
    if x.ndim <= 1 then error(fmt("%s: input needs at least 2 dimensions, got %d dimensions", op, x.ndim), 3) end
    dim = wrap_dim(op, dim, x.ndim)
    local dims = {}
    for i = 1, x.ndim do if i ~= dim then dims[#dims + 1] = i end end
    -- vector_norm: its gradient at a zero slice is 0, as PyTorch's
    -- renorm_backward (pow(1 / p) there gave 0 * inf = NaN)
    local norm = T.linalg.vector_norm(x, p, { dim = dims, keepdim = true })
    local factor = T.where(norm:gt(maxnorm), maxnorm / (norm + 1e-7), 1)
    return x * factor
  end
  both("renorm", function(x, p, dim, maxnorm, o)
    check_opts("renorm", o, {}, 2)
    return renorm("renorm", x, p, dim, maxnorm)
  end)
  M.renorm_ = named("renorm_", function(x, p, dim, maxnorm, o)
    check_opts("renorm_", o, {}, 2)
    -- computed from a clone while recording: the norm's node saves x,
    -- which copy_ overwrites (PyTorch's renorm_ backward runs)
    return x:copy_(renorm("renorm_", A.inplace_source(x), p, dim, maxnorm))
  end)

  -- -- median, nanmedian, max, min of the whole tensor: PyTorch's gradient --------------------
  -- torch splits the gradient of a whole-tensor median/nanmedian evenly
  -- between the elements equal to the result, and sends the gradient of a
  -- NaN max()/min() to the NaN elements (its evenly_distribute_backward);
  -- the engine's nodes give it to one element (median) or spread NaN (max).
  -- When x requires grad: the value is the engine's, the gradient that of
  -- s = sum(where(mask, x, 0)) / count, added as s - s:detach() (0).
  local TM = getmetatable(T.empty(0))
  local function evenly(name, nan_only, node)
    local real = M[name]
    local function f(x, ...)
      if select("#", ...) > 0 or getmetatable(x) ~= TM or not x.requires_grad
         or not T.is_grad_enabled() then
        return real(x, ...)
      end
      -- max/min keep the engine's node (its tie split is torch's) unless
      -- the result is NaN; median's value is taken without one
      local v = nan_only and real(x) or T.no_grad(function() return real(x) end)
      local isnan = v.dtype.is_floating_point and v:isnan():item()
      if nan_only and not isnan then return v end
      local mask = isnan and x:isnan() or x:eq(v)
      local cnt = mask:sum():to(x.dtype)
      local s = T.where(mask, x, T.zeros({}, { dtype = x.dtype, device = x.device })):sum() / cnt
      return C._name_grad_fn(v:detach() + (s - s:detach()), node)
    end
    M[name], T[name] = f, f
  end
  evenly("median", false, "MedianBackward0")
  evenly("nanmedian", false, "NanmedianBackward0")
  evenly("max", true, "MaxBackward1")
  evenly("min", true, "MinBackward1")

  -- -- mode -------------------------------------------------------------------------------------
  -- The most frequent value along dim (the smallest of a tie; NaNs count
  -- as one value) and the 1-based position of its last occurrence.
  both("mode", function(x, dim, keepdim, o)
    if is_opts(dim) then o, dim = dim, nil elseif is_opts(keepdim) then o, keepdim = keepdim, nil end
    o = check_opts("mode", o, A.set { "dim", "keepdim" }, 2)
    check_tensor("mode", x, "input", 2)
    dim = dim or o.dim or -1
    if keepdim == nil then keepdim = o.keepdim or false end
    local xs = x.ndim == 0 and x:reshape(1) or x
    local d = wrap_dim("mode", dim, xs.ndim)
    local mv = xs:movedim(d, -1)
    local n = mv.shape[mv.ndim]
    if n == 0 then error("mode: expected a non-empty dimension", 2) end
    -- runs of equal values in the (stable) sorted lane, O(n log n): each
    -- run's length is read at its last element, whose sort index is the
    -- value's last occurrence. NaNs count as one value (sorted last).
    local float = mv.dtype.is_floating_point
    local sorted, sidx = mv:sort(-1)
    local one = T.ones(sorted.shape:totable(), { dtype = T.bool, device = x.device }):narrow(-1, 1, 1)
    local starts, ends = one, one
    if n > 1 then
      local a, b = sorted:narrow(-1, 1, n - 1), sorted:narrow(-1, 2, n - 1)
      local differ = a:ne(b)
      if float then differ = differ:logical_and(a:isnan():logical_and(b:isnan()):logical_not()) end
      starts, ends = T.cat({ one, differ }, -1), T.cat({ differ, one }, -1)
    end
    local pos = T.arange(1, n + 1, { device = x.device }):expand(mv.shape)
    local first = T.where(starts, pos, 0):cummax(-1)
    local counts = T.where(ends, pos - first + 1, 0)
    local best = counts:argmax(-1, true) -- first maximum: the smallest value of a tie
    local idx = sidx:gather(-1, best)
    -- the value read at the returned position, so its gradient goes there (torch's)
    local val = mv:gather(-1, idx)
    val, idx = val:squeeze(-1), idx:squeeze(-1)
    if x.ndim == 0 then return val:reshape({}), idx:reshape({}) end
    if keepdim then val, idx = val:unsqueeze(d), idx:unsqueeze(d) end
    return val, idx
  end)

  -- -- unique_consecutive ---------------------------------------------------------------------------
  both("unique_consecutive", function(x, o)
    o = check_opts("unique_consecutive", o, A.set { "return_inverse", "return_counts", "dim" }, 2)
    check_tensor("unique_consecutive", x, "input", 2)
    local dim = o.dim
    local rows, n
    if dim == nil then
      rows = x:reshape(-1, 1)
    else
      if x.ndim == 0 then
        error(fmt("unique_consecutive: Dimension specified as %s but tensor has no dimensions", tostring(dim)), 2)
      end
      dim = wrap_dim("unique_consecutive", dim, x.ndim)
      if x:numel() == 0 and x.shape[dim] ~= 0 then
        error(fmt("unique_consecutive: the tensor of size [%s] has a dim of size 0 other than dim %d, so unique_consecutive along dim %d cannot be applied",
          table.concat(x.shape:totable(), ", "), dim, dim), 2)
      end
      -- the other dims' product spelled out (-1 is ambiguous for 0 elements)
      local other = 1
      for i = 1, x.ndim do if i ~= dim then other = other * x.shape[i] end end
      rows = x:movedim(dim, 1):reshape(x.shape[dim], other)
    end
    n = rows.shape[1]
    local keep
    if n == 0 then
      keep = T.zeros(0, { dtype = T.bool })
    else
      local change = rows:narrow(1, 2, n - 1):ne(rows:narrow(1, 1, n - 1)):any(2)
      keep = T.cat({ T.ones(1, { dtype = T.bool }), change })
    end
    local values
    if dim == nil then
      values = x:reshape(-1)[keep]
    else
      local idx = keep:nonzero():reshape(-1)
      values = x:index_select(dim, idx)
    end
    local res = { values }
    if o.return_inverse then
      local inv = keep:long():cumsum(1)
      if dim == nil then inv = inv:reshape(x.shape) end
      res[#res + 1] = inv
    end
    if o.return_counts then
      local starts = keep:nonzero():reshape(-1)
      if starts:numel() == 0 then
        res[#res + 1] = T.zeros(0, { dtype = T.int64 })
      else
        local ends = T.cat({ starts:narrow(1, 2, starts:numel() - 1), T.tensor { n + 1 } })
        res[#res + 1] = ends - starts
      end
    end
    return (table.unpack or unpack)(res)
  end)

  -- -- gradient -----------------------------------------------------------------------------------
  -- Central differences inside, one-sided (edge_order 1 or 2) at the ends;
  -- spacing: a number, a list of numbers (one per dim) or a list of
  -- coordinate tensors. Returns one tensor per dim, as PyTorch's tuple.
  both("gradient", function(y, o)
    o = check_opts("gradient", o, A.set { "spacing", "dim", "edge_order" }, 2)
    check_tensor("gradient", y, "input", 2)
    local eo = o.edge_order or 1
    if eo ~= 1 and eo ~= 2 then error("gradient: torch.gradient only supports edge_order=1 and edge_order=2.", 2) end
    local dims = {}
    if o.dim == nil then for i = 1, y.ndim do dims[i] = i end
    elseif type(o.dim) == "number" then dims = { wrap_dim("gradient", o.dim, y.ndim) }
    else
      local seen = {}
      for i, d in ipairs(o.dim) do
        dims[i] = wrap_dim("gradient", d, y.ndim)
        if seen[dims[i]] then error(fmt("gradient: dim %d appears multiple times in the list of dims", d), 2) end
        seen[dims[i]] = true
      end
    end
    local sp = o.spacing
    if sp == nil then sp = 1 end
    -- a 0-d tensor is a scalar spacing (alone or in the list)
    if T.is_tensor(sp) and sp.ndim == 0 then sp = sp:item() end
    if type(sp) == "table" and not T.is_tensor(sp) then
      local l = {}
      for i, v in ipairs(sp) do l[i] = T.is_tensor(v) and v.ndim == 0 and v:item() or v end
      sp = l
    end
    if type(sp) == "number" then
      local s = sp; sp = {}
      for i = 1, #dims do sp[i] = s end
    end
    if #sp ~= #dims then
      error(fmt("gradient: expected spacing to be unspecified, a scalar or a list of length %d but got a list of length %d", #dims, #sp), 2)
    end
    -- complex input keeps its dtype (its parts differentiate apart)
    local yf = (is_float(y.dtype) or y:is_complex()) and y or y:to(T.get_default_dtype())
    for k, h in ipairs(sp) do
      if T.is_tensor(h) then
        if h.ndim ~= 1 then
          error(fmt("gradient: expected each element of spacing to have one dimension, but got an element with %d dimensions", h.ndim), 2)
        end
        if h:numel() ~= y.shape[dims[k]] then
          error(fmt("gradient: expected the coordinates for dim %d to have %d elements (the input's size), got %d",
            dims[k], y.shape[dims[k]], h:numel()), 2)
        end
      end
    end
    local out = {}
    for k, d in ipairs(dims) do
      local n = yf.shape[d]
      if n < eo + 1 then
        error(fmt("gradient: each dimension of input must have at least edge_order+1 elements (dim %d has %d)", d, n), 2)
      end
      local yd = yf -- this dim's input (promoted with its coordinates)
      local function at(i, len) return yd:narrow(d, i, len or 1) end
      local h = sp[k]
      local g
      if type(h) == "number" then
        local inner = n > 2 and (at(3, n - 2) - at(1, n - 2)) / (2 * h) or nil
        local first, last
        if eo == 1 then
          first = (at(2) - at(1)) / h
          last = (at(n) - at(n - 1)) / h
        else
          first = (at(1) * -1.5 + at(2) * 2 - at(3) * 0.5) / h
          last = (at(n - 2) * 0.5 - at(n - 1) * 2 + at(n) * 1.5) / h
        end
        local parts = { first }
        if inner then parts[#parts + 1] = inner end
        parts[#parts + 1] = last
        g = T.cat(parts, d)
      else
        -- coordinates: NumPy's second-order formula on uneven spacing
        -- the coordinates' floating dtype takes part in the result's
        -- (PyTorch: float32 input, float64 coordinates -> float64)
        local x = h
        if is_float(x.dtype) or x:is_complex() then
          local dt = T.promote_types(yd.dtype, x.dtype)
          yd, x = yd:to(dt), x:to(dt)
        else
          x = x:to(yd.dtype)
        end
        local s = {}
        for i = 1, yd.ndim do s[i] = 1 end
        local function c(i, len) local v = x:narrow(1, i, len or 1); s[d] = v:numel(); return v:reshape(s) end
        local parts = {}
        local dx1, dx2
        if eo == 1 then
          parts[1] = (at(2) - at(1)) / (c(2) - c(1))
        else
          dx1, dx2 = c(2) - c(1), c(3) - c(2)
          local a = -(dx1 * 2 + dx2) / (dx1 * (dx1 + dx2))
          local b = (dx1 + dx2) / (dx1 * dx2)
          local cc = -dx1 / (dx2 * (dx1 + dx2))
          parts[1] = a * at(1) + b * at(2) + cc * at(3)
        end
        if n > 2 then
          dx1, dx2 = c(2, n - 2) - c(1, n - 2), c(3, n - 2) - c(2, n - 2)
          local a = -dx2 / (dx1 * (dx1 + dx2))
          local b = (dx2 - dx1) / (dx1 * dx2)
          local cc = dx1 / (dx2 * (dx1 + dx2))
          parts[#parts + 1] = a * at(1, n - 2) + b * at(2, n - 2) + cc * at(3, n - 2)
        end
        if eo == 1 then
          parts[#parts + 1] = (at(n) - at(n - 1)) / (c(n) - c(n - 1))
        else
          dx1, dx2 = c(n - 1) - c(n - 2), c(n) - c(n - 1)
          local a = dx2 / (dx1 * (dx1 + dx2))
          local b = -(dx2 + dx1) / (dx1 * dx2)
          local cc = (2 * dx2 + dx1) / (dx2 * (dx1 + dx2))
          parts[#parts + 1] = a * at(n - 2) + b * at(n - 1) + cc * at(n)
        end
        g = T.cat(parts, d)
      end
      out[k] = g
    end
    return out
  end)
end
