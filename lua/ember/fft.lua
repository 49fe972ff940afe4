-- T.fft (issue 19, item 2; docs/fft.md): PyTorch's torch.fft with 1-based
-- dims, over one engine primitive, C._fft_c2c (a complex transform along one
-- dim on pocketfft, ops/fft.c), and rfft's fast path C._fft_r2c. The real (rfft/irfft), Hermitian (hfft/ihfft)
-- and n-dimensional forms are built here from it, the views and cat/flip.
return function(T, C)
  local A = require "ember.args"
  local fmt, floor, sqrt = string.format, math.floor, math.sqrt
  local unpack = table.unpack or unpack
  local F = {}

  local function is_complex(x) return x:is_complex() end

  local function to_complex(x)
    if is_complex(x) then return x end
    return x:to(x.dtype == T.float64 and T.complex128 or T.complex64)
  end

  local function check_real(op, x)
    if is_complex(x) then
      error(fmt("%s: expects a real input tensor, but got %s", op, tostring(x.dtype)), 4)
    end
  end

  -- dim (1-based, negative from the end) as a positive position
  local function wrap(op, x, d)
    local nd = x:dim()
    if type(d) ~= "number" or d ~= floor(d) then
      error(fmt("%s: expected an integer dim, got %s", op, tostring(d)), 4)
    end
    if nd == 0 or d == 0 or d < -nd or d > nd then
      error(fmt("%s: dimension %d out of range (expected to be in range of [%d, %d])",
        op, d, -math.max(nd, 1), math.max(nd, 1)), 4)
    end
    return d < 0 and d + nd + 1 or d
  end

  -- the scale of one dim of n points (PyTorch's norm modes)
  local function scale(op, norm, n, forward)
    if norm == nil or norm == "backward" then return forward and 1 or 1 / n end
    if norm == "forward" then return forward and 1 / n or 1 end
    if norm == "ortho" then return 1 / sqrt(n) end
    error(fmt("%s: Invalid normalization mode: \"%s\" (expected \"backward\", \"ortho\" " ..
      "or \"forward\")", op, tostring(norm)), 4)
  end
  local dual = { backward = "forward", forward = "backward", ortho = "ortho" }

  -- x with dim d of size n: trimmed, or zero-padded at the end
  local function check_n(op, n)
    if type(n) ~= "number" or n ~= floor(n) or n < 1 or n == math.huge then
      error(fmt("%s: Invalid number of data points (%s) specified", op, tostring(n)), 5)
    end
  end
  local function resize(op, x, d, n)
    check_n(op, n)
    local m = x:size(d)
    if n == m then return x end
    if n < m then return x:narrow(d, 1, n) end
    local sz = {}
    for i = 1, x:dim() do sz[i] = x:size(i) end
    sz[d] = n - m
    return T.cat({ x, T.zeros(sz, { dtype = x.dtype, device = x.device }) }, d)
  end

  local function c2c(op, x, d, forward, norm)
    return C._fft_c2c(x, d, forward, scale(op, norm, x:size(d), forward))
  end

  local function real_part(y) return T.view_as_real(y):select(-1, 1):contiguous() end

  -- out=: the result written into out as every out= op writes it
  -- (C._write_out: an empty out is resized); rfft's fast path writes
  -- straight into a contiguous out of the right shape
  local finish = require("ember.argcheck")(T).write_out

  -- The positional form may end with an options table that holds only out
  -- (PyTorch's keyword-only out=): (x, n, dim, norm, {out=}). Of the
  -- arguments after x, the first plain table with named entries and no
  -- list part is that table (a list there is s or dim); nothing may follow
  -- it. Returns the positional arguments as a table, their count, and out.
  local OUT = { "out" }
  -- out as an options table gave it (nil or a tensor); level as error's,
  -- counted from the caller
  local function check_out(op, out, level)
    if out ~= nil and not T.is_tensor(out) then
      error(fmt("%s: expected a tensor for out, got %s", op, type(out)), level + 1)
    end
    return out
  end
  local function trailing_out(op, ...)
    local cnt = select("#", ...)
    local args = { ... }
    for i = 1, cnt do
      local v = args[i]
      if type(v) == "table" and getmetatable(v) == nil and v[1] == nil and next(v) ~= nil then
        A.nomore(op, i + 1, unpack(args, i + 1, cnt))
        local out = check_out(op, A.checkopts(op, v, OUT, 4).out, 4)
        for j = i, cnt do args[j] = nil end
        return args, i - 1, out
      end
    end
    return args, cnt, nil
  end

  -- (x, n, dim, norm[, {out=}]) or (x, {n=, dim=, norm=, out=})
  local ONE = { "n", "dim", "norm", "out" }
  local function args1(op, x, n, dim, norm, ...)
    local out
    if not T.is_tensor(x) then
      error(fmt("%s: expected a tensor for argument #1, got %s", op, type(x)), 3)
    end
    if A.is_opts(n) then
      A.nomore(op, 2, dim, norm, ...)
      local o = A.checkopts(op, n, ONE, 3)
      n, dim, norm, out = o.n, o.dim, o.norm, check_out(op, o.out, 3)
    else
      local args, cnt
      args, cnt, out = trailing_out(op, n, dim, norm, ...)
      A.nooptions(op, 2, 4, unpack(args, 1, cnt))
      n, dim, norm = args[1], args[2], args[3]
    end
    return x, n, wrap(op, x, dim or -1), norm, out
  end

  local function cfft(op, forward)
    return function(...)
      local x, n, d, norm, out = args1(op, ...)
      local y = to_complex(x)
      if n then y = resize(op, y, d, n) end
      return finish(op, c2c(op, y, d, forward, norm), out)
    end
  end
  F.fft = cfft("fft", true)
  F.ifft = cfft("ifft", false)

  -- out: only rfft itself passes one (written in place where it fits)
  local function rfft1(op, x, n, d, norm, out)
    check_real(op, x)
    if not (x.requires_grad and T.is_grad_enabled()) then
      -- the real transform (C._fft_r2c): half the work, no complex copy
      local xr = x
      if xr.dtype ~= T.float32 and xr.dtype ~= T.float64 then xr = xr:to(T.float32) end
      if n then xr = resize(op, xr, d, n) end
      return C._fft_r2c(xr, d, scale(op, norm, xr:size(d), true), out)
    end
    if out ~= nil then return finish(op, rfft1(op, x, n, d, norm), out) end
    local y = to_complex(x)
    if n then y = resize(op, y, d, n) end
    local m = y:size(d)
    return c2c(op, y, d, true, norm):narrow(d, 1, floor(m / 2) + 1):contiguous()
  end

  -- the inverse of rfft: n real outputs from the first n//2+1 of a Hermitian
  -- spectrum (the rest are the conjugates, mirrored)
  local function irfft1(op, x, n, d, norm)
    if n ~= nil then check_n(op, n) end
    local y = to_complex(x)
    n = n or 2 * (y:size(d) - 1)
    if n < 1 then
      error(fmt("%s: Invalid number of data points (%d) specified", op, n), 4)
    end
    local half = floor(n / 2) + 1
    y = resize(op, y, d, half)
    if n - half > 0 then
      local tail = y:narrow(d, 2, n - half):flip({ d }):conj()
      y = T.cat({ y, tail }, d)
    end
    return real_part(c2c(op, y, d, false, norm))
  end

  F.rfft = function(...) return rfft1("rfft", args1("rfft", ...)) end
  F.irfft = function(...)
    local x, n, d, norm, out = args1("irfft", ...)
    return finish("irfft", irfft1("irfft", x, n, d, norm), out)
  end
  F.hfft = function(...)
    local x, n, d, norm, out = args1("hfft", ...)
    scale("hfft", norm, 1, true)
    return finish("hfft", irfft1("hfft", to_complex(x):conj(), n, d, dual[norm or "backward"]), out)
  end
  F.ihfft = function(...)
    local x, n, d, norm, out = args1("ihfft", ...)
    scale("ihfft", norm, 1, true)
    return finish("ihfft", rfft1("ihfft", x, n, d, dual[norm or "backward"]):conj(), out)
  end

  -- n-dimensional forms: (x, s, dim, norm[, {out=}]) or (x, {s=, dim=, norm=, out=})
  local NDIM = { "s", "dim", "norm", "out" }
  local function list_of(op, what, v, x)
    if type(v) == "number" then return { v } end
    if type(v) ~= "table" then
      error(fmt("%s: expected a list of integers for %s, got %s", op, what, type(v)), 4)
    end
    local r = {}
    for i = 1, #v do r[i] = v[i] end
    return r
  end
  -- c2r: the last dim is the Hermitian one (irfftn, hfftn): a -1 there
  -- means its default length 2 (m - 1), not the input's size (torch's
  -- canonicalize_fft_c2r_shape_and_dim_args)
  local function argsn(op, default_dims, c2r, x, s, dim, norm, ...)
    if not T.is_tensor(x) then
      error(fmt("%s: expected a tensor for argument #1, got %s", op, type(x)), 3)
    end
    local out
    -- an options table: a plain table with no list part, where an empty
    -- one followed by more arguments is an empty s (fftn(x, {}, {}))
    if type(s) == "table" and getmetatable(s) == nil and s[1] == nil
      and (next(s) ~= nil or (dim == nil and norm == nil and select("#", ...) == 0)) then
      A.nomore(op, 2, dim, norm, ...)
      local o = A.checkopts(op, s, NDIM, 3)
      s, dim, norm, out = o.s, o.dim, o.norm, check_out(op, o.out, 3)
    else
      local args, cnt
      args, cnt, out = trailing_out(op, s, dim, norm, ...)
      A.nomore(op, 4, unpack(args, 4, cnt))
      s, dim, norm = args[1], args[2], args[3]
    end
    local dims
    if dim ~= nil then
      dims = list_of(op, "dim", dim)
    elseif default_dims then -- the *2 forms: (-2, -1), and s must have 2 entries
      dims = { -2, -1 }
    elseif s ~= nil then
      local k = #list_of(op, "s", s)
      if k > x:dim() then
        error(fmt("%s: Got shape with %d values but input tensor only has %d dimensions.", op, k, x:dim()), 3)
      end
      dims = {}
      for i = 1, k do dims[i] = -k + i - 1 end
    else
      if x:dim() == 0 then error(fmt("%s: expected a tensor of at least 1 dimension, got a 0-d tensor", op), 3) end
      dims = {}
      for i = 1, x:dim() do dims[i] = i end
    end
    local seen = {}
    for i = 1, #dims do
      dims[i] = wrap(op, x, dims[i])
      if seen[dims[i]] then error(fmt("%s: dims must be unique (dim %d repeats)", op, dims[i]), 3) end
      seen[dims[i]] = true
    end
    local sizes
    if s ~= nil then
      sizes = list_of(op, "s", s)
      if #sizes ~= #dims then
        error(fmt("%s: When given, dim and shape arguments must have the same length " ..
          "(got %d and %d)", op, #dims, #sizes), 3)
      end
      for i = 1, #sizes do
        if sizes[i] == -1 then
          if c2r and i == #sizes then sizes[i] = false else sizes[i] = x:size(dims[i]) end
        end
      end
    end
    return x, sizes, dims, norm, out
  end

  local function cfftn(op, forward, two)
    return function(...)
      local x, s, dims, norm, out = argsn(op, two, false, ...)
      local y = to_complex(x)
      for i = 1, #dims do
        if s then y = resize(op, y, dims[i], s[i]) end
        if i > 1 and not s and not (y.requires_grad and T.is_grad_enabled()) then
          -- y is the previous dim's fresh contiguous result: in place
          local d = dims[i]
          y = C._fft_c2c_(y, d, forward, scale(op, norm, y:size(d), forward))
        else
          y = c2c(op, y, dims[i], forward, norm)
        end
      end
      if #dims == 0 then y = y:clone() end
      return finish(op, y, out)
    end
  end
  F.fftn, F.ifftn = cfftn("fftn", true, false), cfftn("ifftn", false, false)
  F.fft2, F.ifft2 = cfftn("fft2", true, true), cfftn("ifft2", false, true)

  local function rfftn_core(op, x, s, dims, norm)
    check_real(op, x)
    local k = #dims
    if k == 0 then error(fmt("%s: must transform at least one axis", op), 3) end
    local y = rfft1(op, x, s and s[k], dims[k], norm)
    for i = 1, k - 1 do
      if s then y = resize(op, y, dims[i], s[i]) end
      y = c2c(op, y, dims[i], true, norm)
    end
    return y
  end
  local function rfftn(op, two)
    return function(...)
      local x, s, dims, norm, out = argsn(op, two, false, ...)
      return finish(op, rfftn_core(op, x, s, dims, norm), out)
    end
  end
  F.rfftn, F.rfft2 = rfftn("rfftn", false), rfftn("rfft2", true)

  local function irfftn_core(op, x, s, dims, norm)
    local k = #dims
    if k == 0 then error(fmt("%s: must transform at least one axis", op), 3) end
    local y = to_complex(x)
    for i = 1, k - 1 do
      if s then y = resize(op, y, dims[i], s[i]) end
      y = c2c(op, y, dims[i], false, norm)
    end
    return irfft1(op, y, s and s[k] or nil, dims[k], norm)
  end
  local function irfftn(op, two)
    return function(...)
      local x, s, dims, norm, out = argsn(op, two, true, ...)
      return finish(op, irfftn_core(op, x, s, dims, norm), out)
    end
  end
  F.irfftn, F.irfft2 = irfftn("irfftn", false), irfftn("irfft2", true)

  -- the n-dimensional Hermitian forms, as torch 1.13 composes them: hfftn
  -- is the c2c transform over all dims but the last, conj, then c2r on the
  -- last (irfftn of conj(x) with the dual norm); ihfftn is r2c on the last
  -- dim, conj, then the inverse c2c over the others (conj of rfftn with the
  -- dual norm). Real outputs of hfftn have s[last] (default 2 (n - 1)) points.
  local function hfftn(op, two)
    return function(...)
      local x, s, dims, norm, out = argsn(op, two, true, ...)
      scale(op, norm, 1, true)
      return finish(op, irfftn_core(op, to_complex(x):conj(), s, dims, dual[norm or "backward"]), out)
    end
  end
  F.hfftn, F.hfft2 = hfftn("hfftn", false), hfftn("hfft2", true)
  local function ihfftn(op, two)
    return function(...)
      local x, s, dims, norm, out = argsn(op, two, false, ...)
      scale(op, norm, 1, true)
      return finish(op, rfftn_core(op, x, s, dims, dual[norm or "backward"]):conj(), out)
    end
  end
  F.ihfftn, F.ihfft2 = ihfftn("ihfftn", false), ihfftn("ihfft2", true)

  -- fftfreq(n, d=1, {dtype=, device=, requires_grad=, out=})
  local FREQ = { "dtype", "device", "requires_grad", "out" }
  local function freqs(op, real)
    return function(n, d, opts, ...)
      if A.is_opts(d) then opts, d = d, nil end
      A.nomore(op, 3, ...)
      local o = A.checkopts(op, opts, FREQ, 3)
      if type(n) ~= "number" or n ~= floor(n) or math.abs(n) == math.huge then
        error(fmt("%s: expected an integer n, got %s", op, tostring(n)), 2)
      end
      d = d or 1
      if type(d) ~= "number" then error(fmt("%s: expected a number d, got %s", op, type(d)), 2) end
      local dtype = o.dtype or T.get_default_dtype()
      if not dtype.is_floating_point then -- torch 1.13 refuses complex too (arange has no complex kernel)
        error(fmt("%s: %s requires a floating point dtype, got %s", op, op, dtype.name), 2)
      end
      -- PyTorch 1.13's arithmetic: arange(k) in dtype (k = n, or n / 2 + 1
      -- in C's truncating division for rfftfreq, so rfftfreq(-1) is [-0.]
      -- and rfftfreq(0) [nan]), times 1 / (n d)
      local k = real and (n >= 0 and floor(n / 2) or -floor(-n / 2)) + 1 or n
      if k < 0 then
        error(fmt("%s: Trying to create tensor with negative dimension %d: [%d]", op, k, k), 2)
      end
      local r = T.arange(0, k, { dtype = dtype })
      if not real and n > 0 then
        local pos = floor((n - 1) / 2) + 1  -- how many non-negative ones
        r = T.cat({ r:narrow(1, 1, pos), T.arange(-floor(n / 2), 0, { dtype = dtype }) }, 1)
      end
      r = r * (1 / (n * d))
      if o.device then r = r:to(o.device) end
      if o.requires_grad then r:requires_grad_() end
      return finish(op, r, o.out)
    end
  end
  F.fftfreq, F.rfftfreq = freqs("fftfreq", false), freqs("rfftfreq", true)

  -- fftshift(x, dim): roll by n//2 on dims (all by default); ifftshift undoes it
  local function shift(op, inverse)
    return function(x, dim, ...)
      if not T.is_tensor(x) then
        error(fmt("%s: expected a tensor for argument #1, got %s", op, type(x)), 2)
      end
      if A.is_opts(dim) and dim[1] == nil then
        A.nomore(op, 2, ...)
        dim = A.checkopts(op, dim, { "dim" }, 2).dim
      else
        A.nomore(op, 2, ...)
      end
      local dims
      if dim == nil then
        dims = {}
        for i = 1, x:dim() do dims[i] = i end
      else
        dims = type(dim) == "table" and dim or { dim }
      end
      if #dims == 0 then return x:clone() end
      local shifts, ds = {}, {}
      for i = 1, #dims do
        ds[i] = wrap(op, x, dims[i])
        local n = x:size(ds[i])
        shifts[i] = inverse and -floor(n / 2) or floor(n / 2)
      end
      return x:roll(shifts, ds)
    end
  end
  F.fftshift, F.ifftshift = shift("fftshift", false), shift("ifftshift", true)

  -- every error under the name called: an inner op's message (the 1-d
  -- transform under fftn, an allocation) names the function of T.fft
  local named = require("ember.argcheck")(T).named
  for name, f in pairs(F) do F[name] = named(name, f) end

  T.fft = F
end
