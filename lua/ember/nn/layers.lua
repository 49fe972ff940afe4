-- The layers of T.nn, each a Module subclass whose forward calls
-- T.nn.functional. Initialisation is PyTorch's default for each.
return function(T, C, nn)
  local Module, F, init = nn.Module, nn.functional, nn.init
  local A = require "ember.args"
  local nomore, nooptions = A.nomore, A.nooptions
  -- a constructor's options table against the names it takes (honoured or
  -- refused: docs/nn.md)
  local function checkopts(name, o, allowed) return A.checkopts(name, o, allowed, 4) end

  local function opt(o, k, def)
    if o == nil or o[k] == nil then return def end
    return o[k]
  end
  local function param(shape, o)
    return T.empty(shape, { dtype = opt(o, "dtype", nil) or T.get_default_dtype(),
      device = opt(o, "device", nil) })
  end
  local function pair(v)
    if type(v) == "number" then return { v, v } end
    return v
  end
  -- a Python tuple's repr: (5,) for one element, (2, 2) for two
  local function fmt(v)
    if type(v) == "table" then return "(" .. table.concat(v, ", ") .. (#v == 1 and ",)" or ")") end
    return tostring(v)
  end
  -- an int argument as the n-tuple PyTorch stores (_single/_pair/_triple)
  local function ntuple(v, n)
    if type(v) ~= "number" then return v end
    local t = {}
    for i = 1, n do t[i] = v end
    return t
  end
  local function all_equal(v, x)
    if type(v) == "number" then return v == x end
    if type(v) ~= "table" then return false end
    for _, e in ipairs(v) do if e ~= x then return false end end
    return true
  end

  -- -- containers --------------------------------------------------------------
  -- Sequential and ModuleList keep their modules in the instance's array
  -- slots (Module's slot store): ipairs(list), #list, list[i] are plain
  -- reads, list[i] = m replaces module i, list[-1] is the last. PyTorch's
  -- insert, pop, extend and slicing (list:slice(i, j)) are methods.
  local is_module = Module._is_module
  local function list_abs(self, op, i, extra)
    if type(i) ~= "number" or i ~= math.floor(i) then
      error(string.format("%s: expected an integer index, got %s", op, type(i) == "number" and tostring(i) or type(i)), 3)
    end
    local n = #self._module_names
    local j = i < 0 and n + 1 + i or i
    if j < 1 or j > n + (extra or 0) then
      error(string.format("%s: index %d is out of range (%d modules)", op, i, n), 3)
    end
    return j
  end
  -- the modules of the list, in order
  local function list_items(self)
    local out = {}
    for i, n in ipairs(self._module_names) do out[i] = self._modules[n] end
    return out
  end
  -- renumber: the list becomes mods (modules named "1".."n")
  local function list_reset(self, mods)
    for i = #self._module_names, 1, -1 do self:add_module(tostring(i), nil) end
    for i, m in ipairs(mods) do self:add_module(tostring(i), m) end
  end
  local function list_class(name)
    local L = Module:extend(name)
    L._slot_modules = true
    L._torch_zero_based = true -- PyTorch names the children "0", "1", ...
    function L:append(m, ...)
      nomore(name .. ".append", 1, ...)
      if not is_module(m) then
        error(string.format("%s.append: expected a Module, got %s", name, type(m)), 2)
      end
      self:add_module(tostring(#self._module_names + 1), m)
      return self
    end
    -- list:extend(mods) appends each module of mods (an array or another
    -- Sequential / ModuleList); on the class, extend(name) makes a subclass
    function L:extend(mods, ...)
      if not is_module(self) then return Module.extend(self, mods, ...) end
      nomore(name .. ".extend", 1, ...)
      if type(mods) ~= "table" or (is_module(mods) and not mods._slot_modules) then
        error(string.format("%s.extend: expected an array of modules, got %s", name,
          is_module(mods) and mods.__name or type(mods)), 2)
      end
      for i, m in ipairs(mods) do
        if not is_module(m) then
          error(string.format("%s.extend: entry %d is a %s, not a Module", name, i, type(m)), 2)
        end
      end
      for _, m in ipairs(mods) do self:add_module(tostring(#self._module_names + 1), m) end
      return self
    end
    -- insert(i, m): m becomes module i (1 <= i <= len + 1; negative from the end)
    function L:insert(i, m, ...)
      nomore(name .. ".insert", 2, ...)
      local j = list_abs(self, name .. ".insert", i, 1)
      if not is_module(m) then
        error(string.format("%s.insert: expected a Module, got %s", name, type(m)), 2)
      end
      local mods = list_items(self)
      table.insert(mods, j, m)
      list_reset(self, mods)
      return self
    end
    -- pop([i = -1]): removes module i and returns it
    function L:pop(i, ...)
      nooptions(name .. ".pop", 2, 2, i, ...)
      local j = list_abs(self, name .. ".pop", i == nil and -1 or i)
      local mods = list_items(self)
      local m = table.remove(mods, j)
      list_reset(self, mods)
      return m
    end
    -- slice(i [, j = -1]): a new list of modules i..j (inclusive, negative
    -- from the end) sharing them: PyTorch's list[i-1:j]
    function L:slice(i, j, ...)
      nooptions(name .. ".slice", 2, 3, i, j, ...)
      local n = #self._module_names
      local a = list_abs(self, name .. ".slice", i, 1)
      local b = j == nil and n or (j < 0 and n + 1 + j or math.min(j, n))
      local mods = {}
      for k = a, b do mods[#mods + 1] = self._modules[tostring(k)] end
      local out = L()
      for _, m in ipairs(mods) do out:append(m) end
      return out
    end
    function L:len(...)
      nomore(name .. ".len", 1, ...)
      return #self._module_names
    end
    -- a + b: a new list of a's modules then b's (the same module objects);
    -- b is a list of the same class (a ModuleList also takes an array)
    function L._list_add(a, b)
      local ok = is_module(b) and b._list_add == L._list_add and b.__name == a.__name
      if not ok and not (name == "ModuleList" and type(b) == "table" and not is_module(b)) then
        error(string.format("%s: + supports only another %s, got %s", name,
          name, is_module(b) and b.__name or type(b)), 3)
      end
      local out = L()
      for _, m in ipairs(list_items(a)) do out:append(m) end
      if is_module(b) then
        for _, m in ipairs(list_items(b)) do out:append(m) end
      else
        out:extend(b)
      end
      return out
    end
    -- list[i] = m for a slot that is not there: a negative i; past the end
    -- is an error (append adds)
    function L._set_index(self, i, m)
      local j = list_abs(self, name, i)
      if m == nil then
        error(string.format("%s: list[%d] = nil does not remove a module; use pop(%d)", name, i, i), 2)
      end
      if not is_module(m) then error(string.format("%s: list[%d] must be a Module, got %s", name, i, type(m)), 2) end
      self:add_module(tostring(j), m)
    end
    return L
  end

  local Sequential = list_class("Sequential")
  -- seq * n (or n * seq): the modules n times over, the same objects
  function Sequential._list_repeat(a, n)
    if type(n) ~= "number" or n ~= math.floor(n) then
      error(string.format("Sequential: * needs an integer number of repeats, got %s",
        type(n) == "number" and tostring(n) or type(n)), 3)
    end
    if n <= 0 then
      error(string.format("Sequential: non-positive multiplication factor %d is not supported", n), 3)
    end
    local out = Sequential()
    for _ = 1, n do
      for _, m in ipairs(list_items(a)) do out:append(m) end
    end
    return out
  end
  function Sequential:init(...)
    local mods = { ... }
    if #mods == 1 and type(mods[1]) == "table" and not Module._is_module(mods[1]) then mods = mods[1] end
    for i = 1, select("#", ...) do
      local m = select(i, ...)
      if i > 1 and A.is_opts(m) and not Module._is_module(m) then nomore("Sequential", i - 1, m) end
    end
    for i, m in ipairs(mods) do self:add_module(tostring(i), m) end
  end
  function Sequential:forward(x, ...)
    nomore("Sequential.forward", 1, ...)
    for _, n in ipairs(self._module_names) do x = self._modules[n](x) end
    return x
  end
  nn.Sequential = Sequential

  local ModuleList = list_class("ModuleList")
  function ModuleList:init(mods, ...)
    nomore("ModuleList", 1, ...)
    for _, m in ipairs(mods or {}) do self:append(m) end
  end
  function ModuleList:forward() error("nn.ModuleList: a ModuleList has no forward; call its modules", 2) end
  nn.ModuleList = ModuleList

  -- -- linear and convolution ----------------------------------------------------------
  local Linear = Module:extend("Linear")
  local LINEAR = { "bias", "dtype", "device" }
  function Linear:init(in_features, out_features, o, ...)
    nomore("Linear", 3, ...)
    checkopts("Linear", o, LINEAR)
    self.in_features, self.out_features = in_features, out_features
    local w = param({ out_features, in_features }, o)
    init.kaiming_uniform_(w, math.sqrt(5))
    self.weight = w:requires_grad_(true)
    if opt(o, "bias", true) then
      local b = param({ out_features }, o)
      local bound = in_features > 0 and 1 / math.sqrt(in_features) or 0
      init.uniform_(b, -bound, bound)
      self.bias = b:requires_grad_(true)
    end
  end
  function Linear:forward(x, ...)
    nomore("Linear.forward", 1, ...)
    return F.linear(x, self.weight, self.bias) end
  function Linear:extra_repr()
    return string.format("in_features=%d, out_features=%d, bias=%s", self.in_features,
      self.out_features, tostring(self.bias ~= nil))
  end
  nn.Linear = Linear

  local Identity = Module:extend("Identity")
  function Identity:init(...) nomore("Identity", 0, ...) end
  function Identity:forward(x, ...)
    nomore("Identity.forward", 1, ...)
    return x
  end
  nn.Identity = Identity

  local function conv_class(name, nd)
    local Conv = Module:extend(name)
    local CONV = { "stride", "padding", "dilation", "groups", "bias", "padding_mode", "dtype", "device" }
    local MODES = { zeros = true, reflect = true, replicate = true, circular = true }
    function Conv:init(cin, cout, kernel, o, ...)
      nomore(name, 4, ...)
      checkopts(name, o, CONV)
      local mode = opt(o, "padding_mode", "zeros")
      if not MODES[mode] then
        error(string.format("%s: padding_mode must be one of zeros, reflect, replicate, circular, but got "
          .. "padding_mode='%s'", name, tostring(mode)), 3)
      end
      self.padding_mode = mode
      local groups = opt(o, "groups", 1)
      if type(groups) ~= "number" or groups < 1 or groups % 1 ~= 0 then
        error(string.format("%s: groups must be a positive integer, got %s", name, tostring(groups)), 3)
      end
      if cin % groups ~= 0 then error(name .. ": in_channels must be divisible by groups", 3) end
      if cout % groups ~= 0 then error(name .. ": out_channels must be divisible by groups", 3) end
      local k
      if nd == 3 then
        k = type(kernel) == "table" and { kernel[1], kernel[2] or kernel[1], kernel[3] or kernel[1] }
          or { kernel, kernel, kernel }
      else
        k = nd == 2 and pair(kernel) or { type(kernel) == "table" and kernel[1] or kernel }
      end
      self.in_channels, self.out_channels, self.kernel_size = cin, cout, k
      self.stride, self.padding = opt(o, "stride", 1), opt(o, "padding", 0)
      self.dilation, self.groups = opt(o, "dilation", 1), groups
      local pd = self.padding
      if pd ~= "same" and pd ~= "valid" and type(pd) ~= "number" and type(pd) ~= "table" then
        error(string.format("%s: invalid padding string '%s', should be one of {'valid', 'same'}", name,
          tostring(pd)), 3)
      end
      if pd == "same" then
        local st = type(self.stride) == "table" and self.stride or { self.stride }
        for _, v in ipairs(st) do
          if v ~= 1 then error(name .. ": padding='same' is not supported for strided convolutions", 3) end
        end
      end
      -- the explicit padding F.pad applies for a padding_mode other than
      -- zeros, last dim first (PyTorch's _reversed_padding_repeated_twice;
      -- 'same' puts an odd total's extra one after)
      if mode ~= "zeros" then
        local dl = self.dilation
        local function at(v, i) if type(v) == "table" then return v[i] or v[1] end return v end
        local rp = {}
        for i = nd, 1, -1 do
          local before, after
          if pd == "same" then
            local total = at(dl, i) * (k[i] - 1)
            before = math.floor(total / 2)
            after = total - before
          elseif pd == "valid" then before, after = 0, 0
          else before = at(pd, i); after = before end
          rp[#rp + 1], rp[#rp + 2] = before, after
        end
        self._mode_pad = rp
      end
      local shape = { cout, cin / groups }
      for i = 1, nd do shape[#shape + 1] = k[i] end
      local w = param(shape, o)
      init.kaiming_uniform_(w, math.sqrt(5))
      self.weight = w:requires_grad_(true)
      if opt(o, "bias", true) then
        local fan_in = init._calculate_fan_in_and_fan_out(w)
        local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
        local b = param({ cout }, o)
        init.uniform_(b, -bound, bound)
        self.bias = b:requires_grad_(true)
      end
    end
    local fname = "conv" .. nd .. "d" -- F.conv3d is defined later (nn/layers3d.lua)
    function Conv:forward(x, ...)
      nomore(name .. ".forward", 1, ...)
      local f = F[fname]
      if self.padding_mode ~= "zeros" then
        -- PyTorch's: F.pad in that mode, then the convolution without padding
        local unbatched = T.is_tensor(x) and x.ndim == nd + 1
        if unbatched then x = x:unsqueeze(1) end
        local ok, xp = pcall(F.pad, x, self._mode_pad, self.padding_mode)
        if not ok then
          -- F.pad's refusal (a padding too large for the mode) under the layer's name
          local unpos = require("ember.argcheck")(T).unpos
          error(string.format("%s: %s (padding_mode='%s')", name, (unpos(xp):gsub("^pad: ", "")),
            self.padding_mode), 2)
        end
        local y = f(xp, self.weight, self.bias,
          { stride = self.stride, padding = 0, dilation = self.dilation, groups = self.groups })
        return unbatched and y:squeeze(1) or y
      end
      return f(x, self.weight, self.bias, { stride = self.stride, padding = self.padding,
        dilation = self.dilation, groups = self.groups })
    end
    function Conv:extra_repr()
      -- PyTorch's _ConvNd.extra_repr: int arguments shown as nd-tuples
      local s = string.format("%d, %d, kernel_size=%s, stride=%s", self.in_channels, self.out_channels,
        fmt(self.kernel_size), fmt(ntuple(self.stride, nd)))
      if not all_equal(self.padding, 0) then s = s .. ", padding=" .. fmt(ntuple(self.padding, nd)) end
      if not all_equal(self.dilation, 1) then s = s .. ", dilation=" .. fmt(ntuple(self.dilation, nd)) end
      if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
      if self.bias == nil then s = s .. ", bias=false" end
      if self.padding_mode ~= "zeros" then s = s .. ", padding_mode=" .. self.padding_mode end
      return s
    end
    return Conv
  end
  nn.Conv1d = conv_class("Conv1d", 1)
  nn.Conv2d = conv_class("Conv2d", 2)
  nn.Conv3d = conv_class("Conv3d", 3)

  -- -- pooling -----------------------------------------------------------------------
  local MaxPool2d = Module:extend("MaxPool2d")
  local MAXPOOL = { "stride", "padding", "dilation", "ceil_mode", "return_indices" }
  function MaxPool2d:init(kernel, o, ...)
    nomore("MaxPool2d", 2, ...)
    if type(o) == "number" then o = { stride = o } end
    checkopts("MaxPool2d", o, MAXPOOL)
    self.kernel_size, self.stride = kernel, opt(o, "stride", kernel)
    self.padding, self.dilation = opt(o, "padding", 0), opt(o, "dilation", 1)
    self.ceil_mode, self.return_indices = opt(o, "ceil_mode", false), opt(o, "return_indices", false)
  end
  function MaxPool2d:forward(x, ...)
    nomore("MaxPool2d.forward", 1, ...)
    return F.max_pool2d(x, self.kernel_size, { stride = self.stride, padding = self.padding,
      dilation = self.dilation, ceil_mode = self.ceil_mode, return_indices = self.return_indices })
  end
  function MaxPool2d:extra_repr()
    return string.format("kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s",
      fmt(self.kernel_size), fmt(self.stride), fmt(self.padding), fmt(self.dilation), tostring(self.ceil_mode))
  end
  nn.MaxPool2d = MaxPool2d

  local AvgPool2d = Module:extend("AvgPool2d")
  local AVGPOOL = { "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override" }
  function AvgPool2d:init(kernel, o, ...)
    nomore("AvgPool2d", 2, ...)
    if type(o) == "number" then o = { stride = o } end
    checkopts("AvgPool2d", o, AVGPOOL)
    self.kernel_size, self.stride, self.padding = kernel, opt(o, "stride", kernel), opt(o, "padding", 0)
    self.ceil_mode, self.count_include_pad = opt(o, "ceil_mode", false), opt(o, "count_include_pad", true)
    self.divisor_override = opt(o, "divisor_override", nil)
  end
  function AvgPool2d:forward(x, ...)
    nomore("AvgPool2d.forward", 1, ...)
    return F.avg_pool2d(x, self.kernel_size, { stride = self.stride, padding = self.padding,
      ceil_mode = self.ceil_mode, count_include_pad = self.count_include_pad,
      divisor_override = self.divisor_override })
  end
  function AvgPool2d:extra_repr()
    return string.format("kernel_size=%s, stride=%s, padding=%s", fmt(self.kernel_size), fmt(self.stride),
      fmt(self.padding))
  end
  nn.AvgPool2d = AvgPool2d

  -- -- embedding and normalisation ------------------------------------------------------
  local Embedding = Module:extend("Embedding")
  local EMB = { "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse", "dtype", "device",
    "_weight" }
  function Embedding:init(num, dim, o, ...)
    nomore("Embedding", 3, ...)
    checkopts("Embedding", o, EMB)
    if o and o.sparse then
      error("Embedding: sparse gradients are not supported (sparse = true): ember has no sparse tensors", 3)
    end
    self.num_embeddings, self.embedding_dim = num, dim
    self.padding_idx = require("ember.nn.util").padding_idx("Embedding", opt(o, "padding_idx", nil), num, 3)
    self.max_norm, self.norm_type = opt(o, "max_norm", nil), opt(o, "norm_type", 2)
    self.scale_grad_by_freq, self.sparse = opt(o, "scale_grad_by_freq", false) and true or false, false
    if o and o._weight ~= nil then   -- PyTorch's _weight: the given tensor, as is
      self.weight = o._weight
      return
    end
    local w = param({ num, dim }, o)
    init.normal_(w, 0, 1)
    if self.padding_idx then w[self.padding_idx]:fill_(0) end
    self.weight = w:requires_grad_(true)
  end
  function Embedding:forward(ids, ...)
    nomore("Embedding.forward", 1, ...)
    return F.embedding(ids, self.weight, { padding_idx = self.padding_idx, max_norm = self.max_norm,
      norm_type = self.norm_type, scale_grad_by_freq = self.scale_grad_by_freq })
  end
  function Embedding:extra_repr()
    local s = string.format("%d, %d", self.num_embeddings, self.embedding_dim)
    if self.padding_idx then s = s .. ", padding_idx=" .. self.padding_idx end
    if self.max_norm then s = s .. ", max_norm=" .. require("ember.pyfloat")(self.max_norm) end
    if self.norm_type ~= 2 then s = s .. ", norm_type=" .. require("ember.pyfloat")(self.norm_type) end
    if self.scale_grad_by_freq then s = s .. ", scale_grad_by_freq=True" end
    return s
  end
  nn.Embedding = Embedding

  -- Embedding.from_pretrained(embeddings, {freeze = true, padding_idx, ...})
  -- and EmbeddingBag's: a module whose weight shares the given 2-d
  -- tensor's memory (PyTorch's Parameter(embeddings)), a leaf that requires
  -- grad unless frozen; the padding row is left as given
  function nn._from_pretrained(cls, name, keys, emb, o, level)
    local full = name .. ".from_pretrained"
    if not T.is_tensor(emb) or emb.ndim ~= 2 then
      error(string.format("%s: Embeddings parameter is expected to be 2-dimensional, got %s", full,
        T.is_tensor(emb) and (emb.ndim .. "-d") or type(emb)), level + 1)
    end
    local known = { freeze = true }
    for _, k in ipairs(keys) do known[k] = true end
    local pass = {}
    for k, v in pairs(o or {}) do
      if not known[k] then
        local list = { "freeze" }
        for _, kk in ipairs(keys) do list[#list + 1] = kk end
        error(string.format("%s: unknown option '%s' (expected one of: %s)", full, tostring(k),
          table.concat(list, ", ")), level + 1)
      end
      if k ~= "freeze" then pass[k] = v end
    end
    local freeze = o == nil or o.freeze == nil or o.freeze
    pass._weight = emb:detach():requires_grad_(not freeze)
    return cls(emb.shape[1], emb.shape[2], pass)
  end
  function Embedding.from_pretrained(emb, o, ...)
    nomore("Embedding.from_pretrained", 2, ...)
    return nn._from_pretrained(Embedding, "Embedding",
      { "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse" }, emb, o, 2)
  end

  local LayerNorm = Module:extend("LayerNorm")
  local LN = { "eps", "elementwise_affine", "dtype", "device" }
  function LayerNorm:init(shape, o, ...)
    nomore("LayerNorm", 2, ...)
    checkopts("LayerNorm", o, LN)
    if type(shape) == "number" then shape = { shape } end
    local s = {}
    for i = 1, #shape do s[i] = shape[i] end
    self.normalized_shape, self.eps = s, opt(o, "eps", 1e-5)
    self.elementwise_affine = opt(o, "elementwise_affine", true)
    if self.elementwise_affine then
      self.weight = init.ones_(param(s, o)):requires_grad_(true)
      self.bias = init.zeros_(param(s, o)):requires_grad_(true)
    end
  end
  function LayerNorm:forward(x, ...)
    nomore("LayerNorm.forward", 1, ...)
    return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps) end
  function LayerNorm:extra_repr()
    return string.format("%s, eps=%g, elementwise_affine=%s", fmt(self.normalized_shape), self.eps,
      tostring(self.elementwise_affine))
  end
  nn.LayerNorm = LayerNorm

  local function bn_class(name, dims)
    local BN = Module:extend(name)
    local BNO = { "eps", "momentum", "affine", "track_running_stats", "dtype", "device" }
    function BN:init(n, o, ...)
      nomore(name, 2, ...)
      checkopts(name, o, BNO)
      self.num_features, self.eps, self.momentum = n, opt(o, "eps", 1e-5), opt(o, "momentum", 0.1)
      self.affine, self.track_running_stats = opt(o, "affine", true), opt(o, "track_running_stats", true)
      if self.affine then
        self.weight = init.ones_(param({ n }, o)):requires_grad_(true)
        self.bias = init.zeros_(param({ n }, o)):requires_grad_(true)
      end
      if self.track_running_stats then
        local dt, dev = opt(o, "dtype", nil) or T.get_default_dtype(), opt(o, "device", nil)
        self:register_buffer("running_mean", T.zeros({ n }, { dtype = dt, device = dev }))
        self:register_buffer("running_var", T.ones({ n }, { dtype = dt, device = dev }))
        self:register_buffer("num_batches_tracked", T.zeros({}, { dtype = T.int64, device = dev }))
      end
    end
    function BN:forward(x, ...)
      nomore(name .. ".forward", 1, ...)
      local ok = false
      for _, d in ipairs(dims) do ok = ok or x.ndim == d end
      if not ok then
        error(string.format("%s: expected %s input (got %dD input)", name,
          #dims == 2 and "2D or 3D" or dims[1] .. "D", x.ndim), 2)
      end
      local momentum = self.momentum
      if self.training and self.track_running_stats then
        self._buffers.num_batches_tracked:add_(1)
        if momentum == false then -- cumulative moving average (PyTorch's momentum=None)
          momentum = 1 / self._buffers.num_batches_tracked:item()
        end
      end
      local rm, rv = self.running_mean, self.running_var -- nil when not tracked
      return F.batch_norm(x, rm, rv, self.weight, self.bias, self.training or rm == nil,
        momentum or 0.1, self.eps)
    end
    BN._state_defaults = Module._nbt_defaults
    function BN:extra_repr()
      return string.format("%d, eps=%g, momentum=%s, affine=%s, track_running_stats=%s", self.num_features,
        self.eps, tostring(self.momentum), tostring(self.affine), tostring(self.track_running_stats))
    end
    return BN
  end
  nn.BatchNorm1d = bn_class("BatchNorm1d", { 2, 3 })
  nn.BatchNorm2d = bn_class("BatchNorm2d", { 4 })
  nn.BatchNorm3d = bn_class("BatchNorm3d", { 5 })

  local Dropout = Module:extend("Dropout")
  local DROP = { "p", "inplace" }
  -- Dropout(p=0.5, inplace=false) or Dropout{p, inplace}, PyTorch's
  function Dropout:init(p, inplace, ...)
    nomore("Dropout", 2, ...)
    if type(p) == "table" then
      nomore("Dropout", 1, inplace, ...)
      local o = checkopts("Dropout", p, DROP)
      p, inplace = o.p, o.inplace
    elseif type(inplace) == "table" then
      inplace = checkopts("Dropout", inplace, { "inplace" }).inplace
    end
    p = p or 0.5
    if type(p) ~= "number" or not (p >= 0 and p <= 1) then
      error(string.format("Dropout: dropout probability has to be between 0 and 1, but got %s", tostring(p)), 3)
    end
    if inplace ~= nil and type(inplace) ~= "boolean" then
      error(string.format("Dropout: expected a boolean for inplace, got %s", type(inplace)), 3)
    end
    self.p, self.inplace = p, inplace or false
  end
  function Dropout:forward(x, ...)
    nomore("Dropout.forward", 1, ...)
    return F.dropout(x, self.p, self.training, self.inplace) end
  function Dropout:extra_repr()
    return string.format("p=%s, inplace=%s", require("ember.pyfloat")(self.p), tostring(self.inplace))
  end
  nn.Dropout = Dropout

  -- -- activations and shape ------------------------------------------------------------
  local function simple(name, fn, repr)
    local M = Module:extend(name)
    local op = name .. ".forward"
    M.forward = function(self, x, ...)
      nomore(op, 1, ...)
      return fn(self, x)
    end
    function M:init(...) nomore(name, 0, ...) end
    if repr then M.extra_repr = repr end
    nn[name] = M
    return M
  end
  -- ReLU(inplace=false), SiLU(inplace=false): positionally or {inplace = }
  local INPLACE = { "inplace" }
  for _, nm in ipairs { "ReLU", "SiLU" } do
    local fn = nm == "ReLU" and F.relu or F.silu
    local M = simple(nm, function(self, x) return fn(x, self.inplace) end,
      function(self) return self.inplace and "inplace=true" or "" end)
    function M:init(inplace, ...)
      nomore(nm, 1, ...)
      if type(inplace) == "table" then inplace = checkopts(nm, inplace, INPLACE).inplace end
      if inplace ~= nil and type(inplace) ~= "boolean" then
        error(string.format("%s: expected a boolean for inplace, got %s", nm, type(inplace)), 2)
      end
      self.inplace = inplace or false
    end
  end
  simple("Tanh", function(_, x) return F.tanh(x) end)
  simple("Sigmoid", function(_, x) return F.sigmoid(x) end)
  local GELU = simple("GELU", function(self, x) return F.gelu(x, self.approximate) end,
    function(self) return "approximate='" .. (self.approximate or "none") .. "'" end)
  local GELU_O = { "approximate" }
  function GELU:init(o, ...)
    nomore("GELU", 1, ...)
    if type(o) == "string" then o = { approximate = o } end
    checkopts("GELU", o, GELU_O)
    self.approximate = opt(o, "approximate", "none")
  end
  local LeakyReLU = simple("LeakyReLU", function(self, x) return F.leaky_relu(x, self.negative_slope, self.inplace) end,
    function(self) return "negative_slope=" .. self.negative_slope .. (self.inplace and ", inplace=true" or "") end)
  local LEAKY = { "negative_slope", "inplace" }
  -- LeakyReLU(negative_slope=0.01, inplace=false), or a table of those, or
  -- (negative_slope, {inplace = })
  function LeakyReLU:init(s, inplace, ...)
    nomore("LeakyReLU", 2, ...)
    if type(s) == "table" then
      nomore("LeakyReLU", 1, inplace)
      local o = checkopts("LeakyReLU", s, LEAKY)
      s, inplace = o.negative_slope, o.inplace
    elseif type(inplace) == "table" then
      inplace = checkopts("LeakyReLU", inplace, INPLACE).inplace
    end
    if s ~= nil and type(s) ~= "number" then
      error("LeakyReLU: expected a number for negative_slope, got " .. type(s), 2)
    end
    if inplace ~= nil and type(inplace) ~= "boolean" then
      error("LeakyReLU: expected a boolean for inplace, got " .. type(inplace), 2)
    end
    self.negative_slope = s or 0.01
    self.inplace = inplace or false
  end
  for _, nm in ipairs { "Softmax", "LogSoftmax" } do
    local f = nm == "Softmax" and F.softmax or F.log_softmax
    local M = simple(nm, function(self, x) return f(x, self.dim) end,
      function(self) return "dim=" .. tostring(self.dim) end)
    function M:init(dim, ...)
      nomore(nm, 1, ...)
      if type(dim) == "table" then dim = checkopts(nm, dim, { "dim" }).dim end
      self.dim = dim
    end
  end
  local Flatten = simple("Flatten", function(self, x) return x:flatten(self.start_dim, self.end_dim) end,
    function(self) return string.format("start_dim=%d, end_dim=%d", self.start_dim, self.end_dim) end)
  local FLAT = { "start_dim", "end_dim" }
  function Flatten:init(s, e, ...)
    if type(s) == "table" then
      nomore("Flatten", 1, e, ...)
      local o = checkopts("Flatten", s, FLAT)
      s, e = o.start_dim, o.end_dim
    else
      nomore("Flatten", 2, ...)
    end
    self.start_dim, self.end_dim = s or 2, e or -1
  end
  local Unflatten = simple("Unflatten", function(self, x) return x:unflatten(self.dim, self.sizes) end)
  function Unflatten:init(dim, sizes, ...)
    nomore("Unflatten", 2, ...)
    self.dim, self.sizes = dim, sizes
  end
  function Unflatten:extra_repr()
    return string.format("dim=%s, unflattened_size=%s", tostring(self.dim),
      type(self.sizes) == "table" and fmt(self.sizes) or tostring(self.sizes))
  end

  -- -- losses as modules ----------------------------------------------------------------
  local function loss_class(name, fn, keys)
    local L = Module:extend(name)
    function L:init(o, ...)
      nomore(name, 1, ...)
      o = checkopts(name, o, keys)
      self.opts = {}
      for _, k in ipairs(keys) do self.opts[k] = o[k] end
    end
    function L:forward(input, target, ...)
      nomore(name .. ".forward", 2, ...)
      return fn(input, target, self.opts)
    end
    nn[name] = L
  end
  loss_class("CrossEntropyLoss", F.cross_entropy, { "weight", "ignore_index", "reduction", "label_smoothing" })
  loss_class("NLLLoss", F.nll_loss, { "weight", "ignore_index", "reduction" })
  loss_class("MSELoss", F.mse_loss, { "reduction" })
  loss_class("L1Loss", F.l1_loss, { "reduction" })
  loss_class("BCELoss", F.binary_cross_entropy, { "weight", "reduction" })
  loss_class("BCEWithLogitsLoss", F.binary_cross_entropy_with_logits, { "weight", "reduction", "pos_weight" })
end
