-- T.nn.init: in-place initialisers with PyTorch's formulas. Each fills a
-- tensor (without recording gradients) and returns it.
return function(T, C)
  local I = {}
  local function no_grad(fn)
    if T.no_grad then return T.no_grad(fn) end
    return fn()
  end

  local A = require "ember.args"
  local nomore, nooptions = A.nomore, A.nooptions
  function I.calculate_gain(nonlinearity, param, ...)
    nooptions("calculate_gain", 1, 2, nonlinearity, param, ...)
    if nonlinearity == nil then
      error("calculate_gain: expected a nonlinearity name (\"relu\", \"tanh\", ...) for argument #1", 2)
    end
    local linear = { linear = 1, conv1d = 1, conv2d = 1, conv3d = 1, conv_transpose1d = 1,
      conv_transpose2d = 1, conv_transpose3d = 1, sigmoid = 1 }
    if linear[nonlinearity] then return 1 end
    if nonlinearity == "tanh" then return 5 / 3 end
    if nonlinearity == "relu" then return math.sqrt(2) end
    if nonlinearity == "leaky_relu" then
      if param ~= nil and type(param) ~= "number" then
        error("calculate_gain: negative_slope " .. tostring(param) .. " not a valid number", 2)
      end
      local slope = param or 0.01
      return math.sqrt(2 / (1 + slope * slope))
    end
    if nonlinearity == "selu" then return 3 / 4 end
    error("calculate_gain: unsupported nonlinearity " .. tostring(nonlinearity), 2)
  end

  -- fan_in = size(2) * receptive field, fan_out = size(1) * receptive field
  -- (level: the error's position, the user's call)
  local function fans(op, t, level)
    if not T.is_tensor(t) then error(op .. ": expected a tensor, got " .. type(t), level) end
    if t.ndim < 2 then
      error(string.format("%s: Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
        .. "(got %d-d)", op, t.ndim), level)
    end
    local rf = 1
    for d = 3, t.ndim do rf = rf * t.shape[d] end
    return t.shape[2] * rf, t.shape[1] * rf
  end
  function I._calculate_fan_in_and_fan_out(t)
    return fans("_calculate_fan_in_and_fan_out", t, 3)
  end

  function I.uniform_(t, a, b, ...)
    nooptions("uniform_", 2, 3, a, b, ...)
    return no_grad(function() return t:uniform_(a or 0, b or 1) end)
  end
  function I.normal_(t, mean, std, ...)
    nooptions("normal_", 2, 3, mean, std, ...)
    return no_grad(function() return t:normal_(mean or 0, std or 1) end)
  end
  function I.constant_(t, v, ...)
    nomore("constant_", 2, ...)
    return no_grad(function() return t:fill_(v) end)
  end
  function I.zeros_(t, ...)
    nomore("zeros_", 1, ...)
    return I.constant_(t, 0)
  end
  function I.ones_(t, ...)
    nomore("ones_", 1, ...)
    return I.constant_(t, 1)
  end

  function I.xavier_uniform_(t, gain, ...)
    nooptions("xavier_uniform_", 2, 2, gain, ...)
    local fi, fo = fans("xavier_uniform_", t, 3)
    local std = (gain or 1) * math.sqrt(2 / (fi + fo))
    local a = math.sqrt(3) * std
    return I.uniform_(t, -a, a)
  end
  function I.xavier_normal_(t, gain, ...)
    nooptions("xavier_normal_", 2, 2, gain, ...)
    local fi, fo = fans("xavier_normal_", t, 3)
    return I.normal_(t, 0, (gain or 1) * math.sqrt(2 / (fi + fo)))
  end

  local function kaiming_std(t, o, op)
    o = o or {}
    local a, mode, nl = o.a or 0, o.mode or "fan_in", o.nonlinearity or "leaky_relu"
    if type(mode) == "string" then mode = mode:lower() end
    local fi, fo = fans(op, t, 4)
    local fan
    if mode == "fan_in" then fan = fi elseif mode == "fan_out" then fan = fo
    else error(op .. ": mode " .. tostring(mode) .. " not supported, please use fan_in or fan_out", 3) end
    return I.calculate_gain(nl, a) / math.sqrt(fan)
  end
  -- kaiming_uniform_(t, {a=, mode=, nonlinearity=}) or (t, a, mode, nonlinearity)
  local KAIMING = { "a", "mode", "nonlinearity" }
  local function kopts(op, a, mode, nl, ...)
    if type(a) == "table" then
      nomore(op, 2, mode, nl, ...)
      return A.checkopts(op, a, KAIMING, 4)
    end
    nomore(op, 4, ...)
    return { a = a, mode = mode, nonlinearity = nl }
  end
  -- a tensor without elements is left as it is (PyTorch warns "Initializing
  -- zero-element tensors is a no-op")
  function I.kaiming_uniform_(t, a, mode, nl, ...)
    local o = kopts("kaiming_uniform_", a, mode, nl, ...)
    if t:numel() == 0 then return t end
    local bound = math.sqrt(3) * kaiming_std(t, o, "kaiming_uniform_")
    return I.uniform_(t, -bound, bound)
  end
  function I.kaiming_normal_(t, a, mode, nl, ...)
    local o = kopts("kaiming_normal_", a, mode, nl, ...)
    if t:numel() == 0 then return t end
    return I.normal_(t, 0, kaiming_std(t, o, "kaiming_normal_"))
  end

  -- orthogonal_(t, gain = 1): a (semi-)orthogonal matrix from the QR of a
  -- normal one, the signs of R's diagonal folded into Q (PyTorch's)
  function I.orthogonal_(t, gain, ...)
    nooptions("orthogonal_", 2, 2, gain, ...)
    if t.ndim < 2 then error("orthogonal_: Only tensors with 2 or more dimensions are supported", 2) end
    if t:numel() == 0 then return t end
    local rows = t.shape[1]
    local cols = t:numel() / rows
    return no_grad(function()
      local flat = T.empty(rows, cols, { dtype = t.dtype, device = t.device }):normal_(0, 1)
      if rows < cols then flat = flat:t() end
      local q, r = T.linalg.qr(flat)
      q = q * r:diagonal():sign():unsqueeze(1)
      if rows < cols then q = q:t() end
      t:copy_(q:reshape(t.shape))
      if gain ~= nil and gain ~= 1 then t:mul_(gain) end
      return t
    end)
  end
  function I.eye_(t, ...)
    nomore("eye_", 1, ...)
    if t.ndim ~= 2 then error("eye_: Only tensors with 2 dimensions are supported", 2) end
    return no_grad(function() return t:copy_(T.eye(t.shape[1], t.shape[2], { dtype = t.dtype, device = t.device })) end)
  end
  -- dirac_(t, groups = 1): the identity of a convolution (3-, 4- or 5-d)
  function I.dirac_(t, groups, ...)
    nooptions("dirac_", 2, 2, groups, ...)
    groups = groups or 1
    local nd = t.ndim
    if nd < 3 or nd > 5 then error("dirac_: Only tensors with 3, 4, or 5 dimensions are supported", 2) end
    if t.shape[1] % groups ~= 0 then error("dirac_: dim 0 must be divisible by groups", 2) end
    local per = t.shape[1] / groups
    local m = math.min(per, t.shape[2])
    return no_grad(function()
      t:zero_()
      for g = 0, groups - 1 do
        for d = 1, m do
          local key = { g * per + d, d }
          for k = 3, nd do key[k] = math.floor(t.shape[k] / 2) + 1 end
          t[key] = 1
        end
      end
      return t
    end)
  end
  -- trunc_normal_(t, mean, std, a, b): normal values within [a, b] by the
  -- inverse CDF of a uniform draw between the bounds' CDFs (PyTorch's)
  function I.trunc_normal_(t, mean, std, a, b, ...)
    nooptions("trunc_normal_", 2, 5, mean, std, a, b, ...)
    mean, std, a, b = mean or 0, std or 1, a or -2, b or 2
    local function cdf(x) return (1 + T.erf(T.tensor(x / math.sqrt(2), { dtype = T.float64 })):item()) / 2 end
    local l, u = cdf((a - mean) / std), cdf((b - mean) / std)
    return no_grad(function()
      t:uniform_(2 * l - 1, 2 * u - 1)
      t:erfinv_()
      t:mul_(std * math.sqrt(2)):add_(mean)
      t:clamp_(a, b)
      return t
    end)
  end
  -- sparse_(t, sparsity, std = 0.01): a 2-d normal(0, std) whose every
  -- column has ceil(sparsity * rows) zeros at random rows
  function I.sparse_(t, sparsity, std, ...)
    nooptions("sparse_", 2, 3, sparsity, std, ...)
    if t.ndim ~= 2 then error("sparse_: Only tensors with 2 dimensions are supported", 2) end
    if type(sparsity) ~= "number" then error("sparse_: expected a number for sparsity, got " .. type(sparsity), 2) end
    local rows, cols = t.shape[1], t.shape[2]
    -- the zeros per column: ceil(sparsity * rows), at most every row
    -- (PyTorch's slice clamps; a negative sparsity makes none here)
    local nz = math.min(rows, math.ceil(sparsity * rows))
    return no_grad(function()
      t:normal_(0, std or 0.01)
      for c = 1, cols do
        if nz > 0 then
          local idx = T.randperm(rows):narrow(1, 1, nz)
          t:select(2, c):index_fill_(1, idx, 0)
        end
      end
      return t
    end)
  end
  return I
end
