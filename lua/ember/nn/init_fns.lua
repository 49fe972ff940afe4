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
    nonlinearity = nonlinearity or "leaky_relu"
    local linear = { linear = 1, conv1d = 1, conv2d = 1, conv3d = 1, conv_transpose1d = 1,
      conv_transpose2d = 1, conv_transpose3d = 1, sigmoid = 1 }
    if linear[nonlinearity] then return 1 end
    if nonlinearity == "tanh" then return 5 / 3 end
    if nonlinearity == "relu" then return math.sqrt(2) end
    if nonlinearity == "leaky_relu" then
      local slope = param or 0.01
      return math.sqrt(2 / (1 + slope * slope))
    end
    if nonlinearity == "selu" then return 3 / 4 end
    error("calculate_gain: unsupported nonlinearity " .. tostring(nonlinearity), 2)
  end

  -- fan_in = size(2) * receptive field, fan_out = size(1) * receptive field
  function I._calculate_fan_in_and_fan_out(t)
    if t.ndim < 2 then
      error("init: fan in and fan out can not be computed for a tensor with fewer than 2 dimensions", 3)
    end
    local rf = 1
    for d = 3, t.ndim do rf = rf * t.shape[d] end
    return t.shape[2] * rf, t.shape[1] * rf
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
    local fi, fo = I._calculate_fan_in_and_fan_out(t)
    local std = (gain or 1) * math.sqrt(2 / (fi + fo))
    local a = math.sqrt(3) * std
    return I.uniform_(t, -a, a)
  end
  function I.xavier_normal_(t, gain, ...)
    nooptions("xavier_normal_", 2, 2, gain, ...)
    local fi, fo = I._calculate_fan_in_and_fan_out(t)
    return I.normal_(t, 0, (gain or 1) * math.sqrt(2 / (fi + fo)))
  end

  local function kaiming_std(t, o, op)
    o = o or {}
    local a, mode, nl = o.a or 0, o.mode or "fan_in", o.nonlinearity or "leaky_relu"
    local fi, fo = I._calculate_fan_in_and_fan_out(t)
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
  function I.kaiming_uniform_(t, a, mode, nl, ...)
    local bound = math.sqrt(3) * kaiming_std(t, kopts("kaiming_uniform_", a, mode, nl, ...), "kaiming_uniform_")
    return I.uniform_(t, -bound, bound)
  end
  function I.kaiming_normal_(t, a, mode, nl, ...)
    return I.normal_(t, 0, kaiming_std(t, kopts("kaiming_normal_", a, mode, nl, ...), "kaiming_normal_"))
  end
  return I
end
