-- The autocast lists of the ops written in Lua (docs/amp.md): the engine's
-- ops cast their own inputs (engine/src/ops/autocast.c); an op composed in
-- Lua gets the same treatment here, by wrapping its entry points (T.*,
-- T.linalg.*, T.nn.functional.* and the methods that are the same
-- functions). Loaded last, when every area has defined its functions.
--   fp32:  half (float16/bfloat16) tensor arguments on a device with
--          autocast on become float32, and the op runs with autocast off
--          inside, as PyTorch's fp32 policy (its ops run below the
--          autocast key);
--   lower: float32/float16/bfloat16 tensor arguments become the autocast
--          dtype (float64 never);
--   plain: the op runs with autocast off inside (PyTorch's own kernel
--          does not see autocast: F.bilinear stays float32).
-- The lists follow PyTorch 1.13's CPU autocast, probed op by op
-- (tests/lua/difftest7_amp_spec.lua). A call with out= is left alone, as
-- PyTorch's autocast leaves the out= overloads.
return function(T, C)
  local unpack = table.unpack or unpack
  local F = T.nn.functional
  local M = T.Tensor_methods

  local DEV = { "cpu", "cuda" }
  -- the device types with autocast on, or nil when none
  local function active()
    local on
    for _, d in ipairs(DEV) do
      local e, dt = C._autocast_get(d)
      if e then
        on = on or {}
        on[d] = dt
      end
    end
    return on
  end

  local function has_out(args)
    for i = 1, args.n do
      local a = args[i]
      if type(a) == "table" and not T.is_tensor(a) and getmetatable(a) == nil and a.out ~= nil then
        return true
      end
    end
    return false
  end

  local HALF = { float16 = true, bfloat16 = true }
  local LOW = { float32 = true, float16 = true, bfloat16 = true }

  -- runs fn(unpack(args)) with autocast off for the device types in on
  local function off_inside(on, fn, args)
    for d in pairs(on) do C._autocast_set(d, false, on[d]) end
    local r = { n = 0 }
    local function keep(ok, ...) r.ok, r.n = ok, select("#", ...); for i = 1, r.n do r[i] = select(i, ...) end end
    keep(pcall(fn, unpack(args, 1, args.n)))
    for d in pairs(on) do C._autocast_set(d, true, on[d]) end
    if not r.ok then error(r[1], 0) end
    return unpack(r, 1, r.n)
  end

  local function wrap(kind, fn)
    return function(...)
      local on = active()
      if not on then return fn(...) end
      local args = { n = select("#", ...), ... }
      if has_out(args) then return fn(...) end
      for i = 1, args.n do
        local a = args[i]
        if T.is_tensor(a) then
          local want = on[a.device.type]
          local name = a.dtype.name
          if want and kind == "fp32" and HALF[name] then
            args[i] = a:to(T.float32)
          elseif want and kind == "lower" and LOW[name] and a.dtype ~= want then
            args[i] = a:to(want)
          end
        end
      end
      if kind == "lower" then return fn(unpack(args, 1, args.n)) end
      return off_inside(on, fn, args)
    end
  end

  -- the aliases of a wrapped function (T.conv_transpose2d is
  -- F.conv_transpose2d, x:trace() is T.trace) are the wrapped one too
  local HOMES = { T, F, T.linalg, M }
  local function apply(tbl, kind, names)
    for _, name in ipairs(names) do
      local old = tbl[name]
      if old then
        local new = wrap(kind, old)
        for _, h in ipairs(HOMES) do
          if rawget(h, name) == old then h[name] = new end
        end
      end
    end
  end

  apply(T, "fp32", { "trace", "cdist", "quantile", "nanquantile", "polar", "view_as_complex",
    "cholesky_inverse", "cholesky_solve", "inverse", "pinverse", "geqrf", "orgqr", "ormqr", "qr",
    "svd", "lu_solve", "triangular_solve", "cholesky" })
  apply(T.linalg, "fp32", { "cond", "matrix_rank", "solve", "cholesky", "cholesky_ex", "svdvals",
    "eigvals", "eigvalsh", "inv", "inv_ex", "householder_product", "tensorinv", "tensorsolve",
    "matrix_norm", "qr", "svd", "eigh", "eig", "lstsq" })
  apply(F, "fp32", { "smooth_l1_loss", "huber_loss", "kl_div", "cosine_embedding_loss",
    "margin_ranking_loss", "triplet_margin_loss", "poisson_nll_loss", "soft_margin_loss",
    "hinge_embedding_loss", "multi_margin_loss", "multilabel_margin_loss", "ctc_loss",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "avg_pool3d", "max_pool3d",
    "adaptive_avg_pool3d", "adaptive_max_pool3d", "fractional_max_pool2d", "fractional_max_pool3d",
    "grid_sample", "max_unpool1d", "max_unpool2d", "max_unpool3d" })
  apply(F, "plain", { "bilinear" })
  apply(T, "lower", { "addbmm" })

  -- F.pad: PyTorch 1.13 lists reflection_pad1d/2d and replication_pad1d/2d/3d
  -- as fp32; the constant and circular pads and reflection_pad3d are not
  local pad, pad32 = F.pad, wrap("fp32", F.pad)
  function F.pad(x, p, mode, ...)
    if T.is_tensor(x) and (mode == "replicate" or (mode == "reflect" and type(p) == "table" and #p <= 4)) then
      return pad32(x, p, mode, ...)
    end
    return pad(x, p, mode, ...)
  end
  if rawget(T, "pad") == pad then T.pad = F.pad end
end
