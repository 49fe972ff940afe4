-- special: the special functions and elementwise helpers of issue 19
-- (docs/math.md, "Special functions"). The kernels are engine ops
-- (engine/src/cpu/special.c, bound in bindings/l_math.c: erfc, erfinv,
-- lgamma, digamma, polygamma, i0, sinc, logit, xlogy, hypot, copysign,
-- nextafter, gcd, lcm, heaviside, logaddexp(2), and the T.special-only
-- i0e, i1, i1e, ndtr, ndtri, log_ndtr, entr, xlog1py, zeta). Here: the
-- compositions of engine ops (mvlgamma, float_power, addcmul, addcdiv,
-- frexp, ldexp; autograd goes through them) and the T.special namespace.
return function(T, C)
  local M = C._methods
  local A = require("ember.argcheck")(T)
  local is_opts, check_opts, check_tensor, named = A.is_opts, A.check_opts, A.check_tensor, A.named
  local fmt = string.format

  local finish = A.finish
  local function both(name, f)
    f = named(name, f)
    M[name] = f
    T[name] = f
  end
  local function check_int(op, v, what)
    if type(v) ~= "number" or v ~= math.floor(v) or v ~= v or v == math.huge or v == -math.huge then
      error(fmt("%s: expected an integer for %s, got %s", op, what, tostring(v)), 3)
    end
    return v
  end
  local function is_float(dt) return dt == T.float32 or dt == T.float64 or dt == T.float16 or dt == T.bfloat16 end

  -- -- mvlgamma(x, p): sum_j lgamma(x - j/2) + p(p-1)/4 log(pi) ----------------
  local OUT = A.set { "out" }
  local function mvlgamma(op, x, p, o)
    check_tensor(op, x, "argument #1", 3)
    if is_opts(p) then o, p = p, nil end
    o = check_opts(op, o, OUT, 3)
    check_int(op, p, "p")
    if p < 1 then error(fmt("%s: p has to be greater than or equal to 1, got %d", op, p), 3) end
    -- PyTorch 1.13 refuses a bool input but does not check the domain
    -- (x > (p-1)/2; older versions did, at the cost of a device sync): an
    -- element at or below it gives lgamma's values (inf at the poles), NaN
    -- stays NaN
    if x.dtype == T.bool then
      error(fmt("%s: the input tensor may not be a boolean tensor", op), 3)
    end
    local xf = is_float(x.dtype) and x or x:to(T.get_default_dtype())
    -- one op over the p terms (a huge p is an allocation error, not a loop)
    local j = T.arange(p, { dtype = xf.dtype, device = xf.device }) * 0.5
    local r = (xf:unsqueeze(-1) - j):lgamma():sum(-1)
    return r + p * (p - 1) / 4 * math.log(math.pi)
  end
  both("mvlgamma", function(x, p, o) return finish("mvlgamma", mvlgamma("mvlgamma", x, p, o), is_opts(p) and p or o) end)
  M.mvlgamma_ = named("mvlgamma_", function(x, p, o)
    if is_opts(p) and p.out ~= nil or is_opts(o) and o.out ~= nil then
      error("mvlgamma_: an in-place op takes no out= option", 2)
    end
    return x:copy_(mvlgamma("mvlgamma_", x, p, o))
  end)

  -- -- float_power: both operands as float64 (complex128 when either is
  -- complex, as torch), then pow ---------------------------------------------
  local function cx(v) return T.is_tensor(v) and v:is_complex() end
  local function as(v, dt) if T.is_tensor(v) then return v:to(dt) end return v end
  both("float_power", function(a, b, o)
    if not T.is_tensor(a) and not T.is_tensor(b) then
      error("float_power: expected a tensor for argument #1 or #2", 2)
    end
    o = check_opts("float_power", o, OUT, 2)
    local to = (cx(a) or cx(b)) and T.complex128 or T.float64
    if not T.is_tensor(a) then a = T.full({}, a, { dtype = to, device = b.device }) end
    return finish("float_power", T.pow(as(a, to), as(b, to)), o)
  end)
  M.float_power_ = named("float_power_", function(a, b, o)
    check_tensor("float_power_", a, "argument #1", 2)
    check_opts("float_power_", o, {}, 2)
    local want = (cx(a) or cx(b)) and T.complex128 or T.float64
    if a.dtype ~= want then
      error(fmt("float_power_: the base given to float_power_ has dtype %s but the operation's "
        .. "result requires dtype %s", tostring(a.dtype):gsub("^ember%.", ""),
        tostring(want):gsub("^ember%.", "")), 2)
    end
    return a:pow_(as(b, want))
  end)

  -- -- addcmul / addcdiv: input + value * t1 (* or /) t2 ------------------------
  local VALUE = A.set { "value", "out" }
  local function addc(name, div)
    local function compute(op, x, t1, t2, o)
      check_tensor(op, x, "input", 3)
      check_tensor(op, t1, "tensor1", 3)
      check_tensor(op, t2, "tensor2", 3)
      o = check_opts(op, o, VALUE, 3)
      local v = o.value == nil and 1 or o.value
      if type(v) == "boolean" then v = v and 1 or 0 end -- a Python bool is a number
      if type(v) ~= "number" then error(fmt("%s: expected a number for option 'value', got %s", op, type(v)), 3) end
      if div and not is_float(t1.dtype) and not is_float(t2.dtype) and not t1:is_complex() and not t2:is_complex() then
        error(fmt("%s: integer division with addcdiv is no longer supported; cast tensor1 or "
          .. "tensor2 to a floating dtype", op), 3)
      end
      -- PyTorch's kernel: the three tensors' common dtype, value converted
      -- to it (so truncated towards zero for integer tensors; it never
      -- promotes), then self + value * t1 (* or /) t2 in that dtype
      local dt = T.result_type(x, t1, t2)
      if dt == T.bool then error(fmt("%s: not implemented for bool tensors", op), 3) end
      if not is_float(dt) and not x:is_complex() and not t1:is_complex() and not t2:is_complex() then
        if v ~= v or v >= 2 ^ 63 or v < -2 ^ 63 then
          error(fmt("%s: value %s cannot be converted to %s without overflow", op, v ~= v and "nan" or tostring(v),
            (tostring(dt):gsub("^ember%.", ""))), 3)
        end
        v = (v < 0 and math.ceil(v) or math.floor(v)) + 0 -- no -0.0 (a float scalar)
        if math.tointeger then v = math.tointeger(v) or v end
      end
      local p = div and as(t1, dt) / as(t2, dt) or as(t1, dt) * as(t2, dt)
      if v ~= 1 then p = p * v end
      return p, o
    end
    both(name, function(x, t1, t2, o)
      local p
      p, o = compute(name, x, t1, t2, o)
      return finish(name, x + p, o)
    end)
    M[name .. "_"] = named(name .. "_", function(x, t1, t2, o)
      local p
      p, o = compute(name .. "_", x, t1, t2, o)
      if o.out ~= nil then error(name .. "_: an in-place op takes no out= option", 2) end
      return x:add_(p)
    end)
  end
  addc("addcmul", false)
  addc("addcdiv", true)

  -- -- frexp / ldexp ------------------------------------------------------------
  -- frexp: x = mantissa * 2^exponent, |mantissa| in [0.5, 1), exponent int32;
  -- 0, inf and NaN give (x, 0) as C's frexp does.
  both("frexp", function(x, o)
    check_tensor("frexp", x, "argument #1", 2)
    check_opts("frexp", o, {}, 2)
    if not is_float(x.dtype) then
      error(fmt("frexp: only supports floating-point dtypes, got %s", tostring(x.dtype):gsub("^ember%.", "")), 2)
    end
    local d = x:detach():double()
    local a = d:abs()
    local special = a:eq(0):logical_or(d:isfinite():logical_not())
    local safe = T.where(special, 1, a)
    local e = safe:log2():floor() + 1
    -- 2^e can overflow in the top binade: divide by 2^(e-1), then by 2
    local m = a / (e - 1):exp2() / 2
    -- log2 rounding at the edges: bring |m| into [0.5, 1)
    local hi, lo = m:ge(1), m:lt(0.5)
    e = e + hi:double() - lo:double()
    e = T.where(special, 0, e)
    local mant = T.where(special, x, x / (e - 1):exp2():to(x.dtype) / 2)
    return mant, e:to(T.int32)
  end)
  both("ldexp", function(x, other, o)
    check_tensor("ldexp", x, "argument #1", 2)
    o = check_opts("ldexp", o, OUT, 2)
    -- PyTorch's x * pow(2.0, other): 2^other in other's float dtype (the
    -- default one for an integer other), then the product promotes
    local two = T.is_tensor(other) and other:to(is_float(other.dtype) and other.dtype or T.get_default_dtype()):exp2()
      or 2 ^ other
    return finish("ldexp", T.mul(x, two), o)
  end)
  M.ldexp_ = named("ldexp_", function(x, other, o)
    check_opts("ldexp_", o, {}, 2)
    local two = T.is_tensor(other) and other:to(x.dtype):exp2() or 2 ^ other
    return x:mul_(two)
  end)

  -- -- nextafter on float16/bfloat16 ---------------------------------------------
  -- The engine computes half types in float32 and rounds back, which undoes
  -- a float32 step: the next value is taken on the 16-bit pattern instead
  -- (+1 moves away from zero whatever the sign: the pattern is
  -- sign-magnitude; from 0 the smallest subnormal with y's sign).
  local HALF = { [T.float16] = true, [T.bfloat16] = true }
  local function half_next(x, y)
    local bits = x:view(T.int16):to(T.int32)
    local away = y:gt(x):eq(x:gt(0))
    local stepped = (bits + T.where(away, 1, -1)):to(T.int16):view(x.dtype)
    local tiny = T.where(y:gt(0), 1, -32767):to(T.int16):view(x.dtype)
    local r = T.where(x:eq(0), tiny, stepped)
    r = T.where(x:eq(y), y, r)
    return T.where(x:isnan():logical_or(y:isnan()), x + y, r)
  end
  for _, tbl in ipairs { T, M } do
    local real = tbl.nextafter
    if real then
      tbl.nextafter = function(x, y, ...)
        if T.is_tensor(x) and T.is_tensor(y) and x.dtype == y.dtype and HALF[x.dtype] then
          local o = ...
          if o == nil and select("#", ...) <= 1 then
            return T.no_grad(function()
              local b = T.broadcast_tensors(x, y)
              local bx, by = b[1], b[2]
              return half_next(bx:contiguous(), by:contiguous())
            end)
          end
        end
        return real(x, y, ...)
      end
    end
  end

  -- -- T.special ------------------------------------------------------------------
  local S = {}
  for _, n in ipairs { "erf", "erfc", "erfinv", "digamma", "polygamma", "i0", "sinc", "logit",
    "xlogy", "log1p", "exp2", "expm1", "logsumexp", "softmax", "log_softmax" } do
    S[n] = T[n]
  end
  -- torch.special.round has no integer or bool kernel where torch.round
  -- returns an integer tensor unchanged ("round_vml_cpu" not implemented
  -- for 'Long'): refused here, by dtype
  S.round = named("special_round", function(x, ...)
    if T.is_tensor(x) and (not is_float(x.dtype) and not x:is_complex()) then
      error(fmt("special_round: not implemented for %s tensors",
        (tostring(x.dtype):gsub("^ember%.", ""))), 2)
    end
    return T.round(x, ...)
  end)
  -- SciPy's spellings: errors under the name called
  S.psi = named("psi", T.digamma)
  S.gammaln = named("gammaln", T.lgamma)
  S.expit = named("expit", T.sigmoid)
  S.multigammaln = named("multigammaln", T.mvlgamma)
  for _, n in ipairs { "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "entr", "xlog1py", "zeta",
    "gammainc", "gammaincc", "erfcx", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1" } do
    S[n] = C["_special_" .. n]
  end
  -- the modified Bessel functions of the second kind (plain and scaled),
  -- Airy's Ai, the spherical Bessel j0 and the orthogonal polynomials
  -- (x, n): C, none differentiable (PyTorch 1.13's)
  for _, n in ipairs { "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "airy_ai", "spherical_bessel_j0",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p" } do
    S[n] = C["_special_" .. n]
  end
  -- Laguerre's and Legendre's recurrences take n steps per element where
  -- |x| is small (as PyTorch's): an n past 2^31 - 1 would run for hours, so
  -- it is refused (a number n, or the largest of a tensor n)
  local NMAX = 2 ^ 31 - 1
  for _, n in ipairs { "laguerre_polynomial_l", "legendre_polynomial_p" } do
    local f, op = S[n], "special_" .. n
    S[n] = function(x, k, ...)
      local big = k
      if T.is_tensor(k) then
        big = nil
        if k:numel() > 0 and tostring(k.device) ~= "meta" and not k:is_complex() then
          big = k:to(T.float64):max():item()
        end
      end
      if type(big) == "number" and big > NMAX then
        error(fmt("%s: n = %s is too large (the recurrence takes n steps; at most 2^31 - 1)", op,
          tostring(big)), 2)
      end
      return f(x, k, ...)
    end
  end
  -- PyTorch's other spellings: the modified Bessel functions of order 0
  -- and 1 are i0 and i1, whose results under these names do not require
  -- grad (torch.special.modified_bessel_i0/i1 are not differentiable);
  -- torch.igamma/igammac are gammainc/gammaincc
  local named = require("ember.argcheck")(T).named
  for name, f in pairs { modified_bessel_i0 = T.i0, modified_bessel_i1 = S.i1 } do
    S[name] = named("special_" .. name, function(...) return T.no_grad(f, ...) end)
  end
  for name, f in pairs { igamma = S.gammainc, igammac = S.gammaincc } do
    f = named(name, f) -- errors under PyTorch's name for this spelling
    T[name] = f
    T.Tensor_methods[name] = f
  end
  T.special = S
end
