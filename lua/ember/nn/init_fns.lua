-- T.nn.init: in-place initialisers with PyTorch's formulas. Each fills a
-- tensor (without recording gradients) and returns it. The checks of each
-- entry point come first and raise at the user's call (level 3 from a
-- helper called by the entry point).
return function(T, C)
  local I = {}
  local function no_grad(fn)
    if T.no_grad then return T.no_grad(fn) end
    return fn()
  end

  local A = require "ember.args"
  local nomore, nooptions = A.nomore, A.nooptions
  local fmt = string.format
  local function dtname(t) return (tostring(t.dtype):gsub("^ember%.", "")) end

  -- the tensor argument; floating: the random initialisers refuse integer
  -- and bool tensors, as PyTorch's kernels do ("normal_kernel_cpu" not
  -- implemented for 'Long')
  local function tensor_arg(op, t, floating)
    if not T.is_tensor(t) then error(fmt("%s: expected a tensor, got %s", op, type(t)), 3) end
    if floating and not (t.dtype.is_floating_point or t:is_complex()) then
      error(fmt("%s: expects a floating-point tensor, got %s", op, dtname(t)), 3)
    end
  end
  -- a number argument (nil: the default); a one-element tensor is its value
  -- (PyTorch computes with it)
  local function number_arg(op, v, what, default)
    if v == nil then return default end
    if T.is_tensor(v) and v:numel() == 1 then v = v:item() end
    if type(v) ~= "number" then
      error(fmt("%s: expected %s to be a number, got %s", op, what, T.is_tensor(v) and
        fmt("a tensor of %d elements", v:numel()) or type(v)), 3)
    end
    return v
  end

  -- the gain of calculate_gain; errors at `level` (from this function)
  local LINEAR = { linear = 1, conv1d = 1, conv2d = 1, conv3d = 1, conv_transpose1d = 1,
    conv_transpose2d = 1, conv_transpose3d = 1, sigmoid = 1 }
  local function gain_of(op, nonlinearity, param, level)
    if LINEAR[nonlinearity] then return 1 end
    if nonlinearity == "tanh" then return 5 / 3 end
    if nonlinearity == "relu" then return math.sqrt(2) end
    if nonlinearity == "leaky_relu" then
      if param ~= nil and type(param) ~= "number" then
        error(op .. ": negative_slope " .. tostring(param) .. " not a valid number", level)
      end
      local slope = param or 0.01
      return math.sqrt(2 / (1 + slope * slope))
    end
    if nonlinearity == "selu" then return 3 / 4 end
    error(op .. ": unsupported nonlinearity " .. tostring(nonlinearity), level)
  end
  function I.calculate_gain(nonlinearity, param, ...)
    nooptions("calculate_gain", 1, 2, nonlinearity, param, ...)
    if nonlinearity == nil then
      error("calculate_gain: expected a nonlinearity name (\"relu\", \"tanh\", ...) for argument #1", 2)
    end
    local g = gain_of("calculate_gain", nonlinearity, param, 3) -- not a tail call: level 3 is the user's
    return g
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

  local function fill_uniform(t, a, b)
    return no_grad(function() return t:uniform_(a, b) end)
  end
  local function fill_normal(t, mean, std)
    return no_grad(function() return t:normal_(mean, std) end)
  end
  function I.uniform_(t, a, b, ...)
    nooptions("uniform_", 2, 3, a, b, ...)
    tensor_arg("uniform_", t, true)
    return fill_uniform(t, a or 0, b or 1)
  end
  function I.normal_(t, mean, std, ...)
    nooptions("normal_", 2, 3, mean, std, ...)
    tensor_arg("normal_", t, true)
    return fill_normal(t, mean or 0, std or 1)
  end
  function I.constant_(t, v, ...)
    nomore("constant_", 2, ...)
    tensor_arg("constant_", t)
    return no_grad(function() return t:fill_(v) end)
  end
  function I.zeros_(t, ...)
    nomore("zeros_", 1, ...)
    tensor_arg("zeros_", t)
    return no_grad(function() return t:fill_(0) end)
  end
  function I.ones_(t, ...)
    nomore("ones_", 1, ...)
    tensor_arg("ones_", t)
    return no_grad(function() return t:fill_(1) end)
  end

  function I.xavier_uniform_(t, gain, ...)
    nooptions("xavier_uniform_", 2, 2, gain, ...)
    local fi, fo = fans("xavier_uniform_", t, 3)
    tensor_arg("xavier_uniform_", t, true)
    local std = number_arg("xavier_uniform_", gain, "gain", 1) * math.sqrt(2 / (fi + fo))
    local a = math.sqrt(3) * std
    return fill_uniform(t, -a, a)
  end
  function I.xavier_normal_(t, gain, ...)
    nooptions("xavier_normal_", 2, 2, gain, ...)
    local fi, fo = fans("xavier_normal_", t, 3)
    tensor_arg("xavier_normal_", t, true)
    return fill_normal(t, 0, number_arg("xavier_normal_", gain, "gain", 1) * math.sqrt(2 / (fi + fo)))
  end

  -- errors at the user's call (level 4 from here: entry point, kaiming_std)
  local function kaiming_std(t, o, op)
    local a, mode, nl = o.a or 0, o.mode or "fan_in", o.nonlinearity or "leaky_relu"
    if type(mode) == "string" then mode = mode:lower() end
    local fi, fo = fans(op, t, 4)
    local fan
    if mode == "fan_in" then fan = fi elseif mode == "fan_out" then fan = fo
    else error(op .. ": mode " .. tostring(mode) .. " not supported, please use fan_in or fan_out", 3) end
    return gain_of(op, nl, a, 4) / math.sqrt(fan)
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
    tensor_arg("kaiming_uniform_", t)
    if t:numel() == 0 then return t end
    tensor_arg("kaiming_uniform_", t, true)
    local bound = math.sqrt(3) * kaiming_std(t, o, "kaiming_uniform_")
    return fill_uniform(t, -bound, bound)
  end
  function I.kaiming_normal_(t, a, mode, nl, ...)
    local o = kopts("kaiming_normal_", a, mode, nl, ...)
    tensor_arg("kaiming_normal_", t)
    if t:numel() == 0 then return t end
    tensor_arg("kaiming_normal_", t, true)
    return fill_normal(t, 0, kaiming_std(t, o, "kaiming_normal_"))
  end

  -- orthogonal_(t, gain = 1): a (semi-)orthogonal matrix from the QR of a
  -- normal one, the signs of R's diagonal folded into Q (PyTorch's). float32
  -- and float64 (PyTorch's QR has no float16 / bfloat16 kernel either)
  function I.orthogonal_(t, gain, ...)
    nooptions("orthogonal_", 2, 2, gain, ...)
    tensor_arg("orthogonal_", t, true)
    gain = number_arg("orthogonal_", gain, "gain", 1)
    if t.ndim < 2 then error("orthogonal_: Only tensors with 2 or more dimensions are supported", 2) end
    if t.dtype == T.float16 or t.dtype == T.bfloat16 then
      error("orthogonal_: the QR it takes needs a float32 or float64 tensor, got " .. dtname(t), 2)
    end
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
      if gain ~= 1 then t:mul_(gain) end
      return t
    end)
  end
  function I.eye_(t, ...)
    nomore("eye_", 1, ...)
    tensor_arg("eye_", t)
    if t.ndim ~= 2 then error("eye_: Only tensors with 2 dimensions are supported", 2) end
    return no_grad(function() return t:copy_(T.eye(t.shape[1], t.shape[2], { dtype = t.dtype, device = t.device })) end)
  end
  -- dirac_(t, groups = 1): the identity of a convolution (3-, 4- or 5-d);
  -- groups a positive integer dividing dim 1 (PyTorch's dim 0)
  function I.dirac_(t, groups, ...)
    nooptions("dirac_", 2, 2, groups, ...)
    tensor_arg("dirac_", t)
    groups = groups == nil and 1 or groups
    if type(groups) ~= "number" or groups ~= math.floor(groups) or groups < 1 then
      error("dirac_: expected groups to be a positive integer, got " .. tostring(groups), 2)
    end
    local nd = t.ndim
    if nd < 3 or nd > 5 then error("dirac_: Only tensors with 3, 4, or 5 dimensions are supported", 2) end
    if t.shape[1] % groups ~= 0 then
      error(fmt("dirac_: dim 1 must be divisible by groups (size %d, groups %d)", t.shape[1], groups), 2)
    end
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
  -- inverse CDF of a uniform draw between the bounds' CDFs (PyTorch's);
  -- std > 0 and a <= b (PyTorch divides by std, and its uniform_ refuses
  -- the bounds' CDFs the wrong way round)
  function I.trunc_normal_(t, mean, std, a, b, ...)
    local op = "trunc_normal_"
    nooptions(op, 2, 5, mean, std, a, b, ...)
    tensor_arg(op, t, true)
    mean, std = number_arg(op, mean, "mean", 0), number_arg(op, std, "std", 1)
    a, b = number_arg(op, a, "a", -2), number_arg(op, b, "b", 2)
    if not (std > 0) then error(fmt("%s: expected std > 0, got %s", op, tostring(std)), 2) end
    if not (a <= b) then error(fmt("%s: expected a <= b, got a=%s, b=%s", op, tostring(a), tostring(b)), 2) end
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
  -- column has ceil(sparsity * rows) zeros at random rows (every row from
  -- a sparsity of 1 on); a negative sparsity is refused (PyTorch's slice
  -- [:negative] would zero all rows but that many)
  function I.sparse_(t, sparsity, std, ...)
    nooptions("sparse_", 2, 3, sparsity, std, ...)
    tensor_arg("sparse_", t, true)
    if t.ndim ~= 2 then error("sparse_: Only tensors with 2 dimensions are supported", 2) end
    if type(sparsity) ~= "number" then error("sparse_: expected a number for sparsity, got " .. type(sparsity), 2) end
    if not (sparsity >= 0) then error("sparse_: expected sparsity >= 0, got " .. tostring(sparsity), 2) end
    std = number_arg("sparse_", std, "std", 0.01)
    local rows, cols = t.shape[1], t.shape[2]
    local nz = math.min(rows, math.ceil(sparsity * rows))
    return no_grad(function()
      t:normal_(0, std)
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
