-- The recurrent layers (issue 18, item 1; docs/rnn.md): nn.RNN, nn.LSTM,
-- nn.GRU, their cells, and nn.utils.rnn (pad_sequence, pack_padded_sequence,
-- pad_packed_sequence, pack_sequence, PackedSequence).
--
-- Each layer and direction is one engine op (C._nn_rnn_layer:
-- engine/src/ops/rnn.c, the time loop and its backward in C); this file
-- stacks layers and directions, applies the dropout between layers, and
-- turns packed sequences into the lengths the engine takes. Parameter
-- names, layouts, gate orders and the initialisation are PyTorch's, so a
-- PyTorch state_dict loads by name. Lengths are counts; sorted_indices and
-- unsorted_indices are 1-based positions.
return function(T, C, nn)
  local Module, F, init = nn.Module, nn.functional, nn.init
  local A = require "ember.args"
  local nomore = A.nomore
  local unpos = require("ember.argcheck")(T).unpos
  local fmt = string.format

  local function checkopts(name, o, allowed, level) return A.checkopts(name, o, allowed, level or 4) end
  local function opt(o, k, def)
    if o == nil or o[k] == nil then return def end
    return o[k]
  end
  local function param(shape, o)
    return T.empty(shape, { dtype = opt(o, "dtype", nil) or T.get_default_dtype(),
      device = opt(o, "device", nil) })
  end
  local function check_count(name, what, v, min)
    if type(v) ~= "number" or v ~= math.floor(v) or v < min then
      error(fmt("%s: %s must be an integer >= %d, got %s", name, what, min, tostring(v)), 4)
    end
  end

  -- -- PackedSequence and nn.utils.rnn --------------------------------------------
  local PackedSequence = {}
  PackedSequence.__index = function(p, k)
    if k == "is_cuda" then return rawget(p, "data").is_cuda end
    return PackedSequence[k]
  end
  PackedSequence.__name = "PackedSequence"
  -- PyTorch's constructor: without unsorted_indices they are the inverse
  -- permutation of sorted_indices (1-based positions both)
  local function invert_permutation(idx)
    if idx == nil then return nil end
    local out = T.empty_like(idx)
    out:scatter_(1, idx, T.arange(1, idx:numel() + 1, { dtype = idx.dtype, device = idx.device }))
    return out
  end
  setmetatable(PackedSequence, { __call = function(_, data, batch_sizes, sorted_indices, unsorted_indices)
    if unsorted_indices == nil then unsorted_indices = invert_permutation(sorted_indices) end
    return setmetatable({ data = data, batch_sizes = batch_sizes, sorted_indices = sorted_indices,
      unsorted_indices = unsorted_indices }, PackedSequence)
  end })
  -- PyTorch's PackedSequence.to: data converted or moved as Tensor.to does,
  -- the indices moved to data's device, batch_sizes kept (on the CPU); the
  -- same object back when data does not change
  local function with_data(self, data)
    if rawequal(data, self.data) then return self end
    local function mv(i) return i ~= nil and i:to(data.device) or nil end
    return setmetatable({ data = data, batch_sizes = self.batch_sizes, sorted_indices = mv(self.sorted_indices),
      unsorted_indices = mv(self.unsorted_indices) }, PackedSequence)
  end
  function PackedSequence:to(...) return with_data(self, self.data:to(...)) end
  for _, name in ipairs({ "double", "float", "half", "long", "int", "short", "char", "byte", "cpu", "cuda" }) do
    PackedSequence[name] = function(self, ...) return with_data(self, self.data[name](self.data, ...)) end
  end
  function PackedSequence:is_pinned() return self.data:is_pinned() end
  function PackedSequence.__tostring(p)
    return fmt("PackedSequence(data=%s, batch_sizes=%s, sorted_indices=%s, unsorted_indices=%s)",
      tostring(p.data), tostring(p.batch_sizes), tostring(p.sorted_indices), tostring(p.unsorted_indices))
  end
  local function is_packed(v) return getmetatable(v) == PackedSequence end

  local U = {}
  nn.utils.rnn = U
  U.PackedSequence = PackedSequence

  -- a list of counts from a table or an integer tensor
  local function counts(op, v, what)
    if T.is_tensor(v) then
      -- a floating tensor is taken when its values are whole (PyTorch casts
      -- lengths to int64; a fraction is refused below rather than truncated)
      if v.dtype.is_complex or v.dtype == T.bool or v.ndim ~= 1 then
        error(fmt("%s: %s must be a 1-d integer tensor or a list of counts", op, what), 3)
      end
      v = v:tolist()
    end
    if type(v) ~= "table" then error(fmt("%s: %s must be a 1-d integer tensor or a list of counts", op, what), 3) end
    local out = {}
    for i = 1, #v do
      local x = v[i]
      if type(x) ~= "number" or x ~= math.floor(x) then
        error(fmt("%s: %s[%d] must be an integer count, got %s", op, what, i, tostring(x)), 3)
      end
      out[i] = x
    end
    return out
  end
  local function int64(list) return T.tensor(list, { dtype = T.int64 }) end

  local PAD = { "batch_first", "padding_value" }
  function U.pad_sequence(sequences, o, ...)
    nomore("pad_sequence", 2, ...)
    o = checkopts("pad_sequence", o, PAD, 3)
    if T.is_tensor(sequences) then sequences = sequences:unbind(1) end
    if type(sequences) ~= "table" or #sequences == 0 then
      error("pad_sequence: expected a non-empty list of tensors", 2)
    end
    local pv, maxlen = o.padding_value or 0, 0
    for i, s in ipairs(sequences) do
      if not T.is_tensor(s) or s.ndim < 1 then
        error(fmt("pad_sequence: sequences[%d] must be a tensor of at least 1 dim", i), 2)
      end
      if s.shape[1] > maxlen then maxlen = s.shape[1] end
    end
    local function trailing(s)
      local sh = s.shape:totable()
      table.remove(sh, 1)
      return "[" .. table.concat(sh, ", ") .. "]"
    end
    local want = trailing(sequences[1])
    for i = 2, #sequences do
      if trailing(sequences[i]) ~= want then
        error(fmt("pad_sequence: sequences[%d] has trailing shape %s but sequences[1] has %s "
          .. "(every sequence is (L_i, *) with the same *)", i, trailing(sequences[i]), want), 2)
      end
    end
    local rows = {}
    for i, s in ipairs(sequences) do
      local n = s.shape[1]
      if n < maxlen then
        local shape = s.shape:totable()
        shape[1] = maxlen - n
        s = T.cat({ s, T.full(shape, pv, { dtype = s.dtype, device = s.device }) }, 1)
      end
      rows[i] = s
    end
    return T.stack(rows, o.batch_first and 1 or 2)
  end

  -- positions (1-based, time-major rows t * N + n) of the packed rows in a
  -- padded [L, N, ...] batch whose column b holds sorted sequence b
  local function packed_rows(batch_sizes, N)
    local idx = {}
    for t = 1, #batch_sizes do
      for b = 1, batch_sizes[t] do idx[#idx + 1] = (t - 1) * N + b end
    end
    return idx
  end

  local PACK = { "batch_first", "enforce_sorted" }
  function U.pack_padded_sequence(input, lengths, o, ...)
    local op = "pack_padded_sequence"
    nomore(op, 3, ...)
    o = checkopts(op, o, PACK, 3)
    if not T.is_tensor(input) or input.ndim < 2 then
      error(op .. ": expected input of at least 2 dims (L, N, *) or (N, L, *) with batch_first", 2)
    end
    local enforce = o.enforce_sorted
    if enforce == nil then enforce = true end
    if o.batch_first then input = input:transpose(1, 2) end
    local L, N = input.shape[1], input.shape[2]
    local lens = counts(op, lengths, "lengths")
    if #lens ~= N then
      error(fmt("%s: expected %d lengths (the batch size), got %d", op, N, #lens), 2)
    end
    for i, l in ipairs(lens) do
      if l < 1 or l > L then
        error(fmt("%s: lengths[%d] = %d is outside 1..%d (lengths are counts of valid steps, "
          .. "each at least 1 and at most the padded length)", op, i, l, L), 2)
      end
    end
    local order = {}
    for i = 1, N do order[i] = i end
    if enforce then
      for i = 2, N do
        if lens[i] > lens[i - 1] then
          error(op .. ": `lengths` array must be sorted in decreasing order when `enforce_sorted` "
            .. "is true. You can pass `enforce_sorted = false` to pack_padded_sequence and/or "
            .. "pack_sequence to sidestep this requirement if you do not need ONNX exportability.", 2)
        end
      end
    else
      table.sort(order, function(a, b)
        if lens[a] ~= lens[b] then return lens[a] > lens[b] end
        return a < b
      end)
    end
    local bs = {}
    for t = 1, lens[order[1]] do
      local c = 0
      for b = 1, N do if lens[order[b]] >= t then c = c + 1 end end
      bs[t] = c
    end
    local idx = {}
    for t = 1, #bs do
      for b = 1, bs[t] do idx[#idx + 1] = (t - 1) * N + order[b] end
    end
    local rest = input.shape:totable()
    table.remove(rest, 1)
    rest[1] = L * N
    local data = input:reshape(rest):index_select(1, int64(idx))
    if enforce then return PackedSequence(data, int64(bs), nil, nil) end
    local unsorted = {}
    for b = 1, N do unsorted[order[b]] = b end
    return PackedSequence(data, int64(bs), int64(order), int64(unsorted))
  end

  -- packed data -> padded [L, N, *] in the packed (sorted) column order
  local function unpack_sorted(p, pv, total)
    local bs = p.batch_sizes:tolist()
    local N, L = bs[1] or 0, math.max(#bs, total or 0)
    local data = p.data
    local rest = data.shape:totable()
    rest[1] = 1
    local padrow = T.full(rest, pv or 0, { dtype = data.dtype, device = data.device })
    local src = T.cat({ data, padrow }, 1)
    local pad = data.shape[1] + 1
    local idx, off = {}, 0
    for t = 1, L do
      local c = bs[t] or 0
      for b = 1, N do idx[#idx + 1] = b <= c and off + b or pad end
      off = off + c
    end
    local out = src:index_select(1, int64(idx))
    local shape = data.shape:totable()
    table.remove(shape, 1)
    table.insert(shape, 1, N)
    table.insert(shape, 1, L)
    local lens = {}
    for b = 1, N do
      local c = 0
      for t = 1, #bs do if bs[t] >= b then c = c + 1 end end
      lens[b] = c
    end
    return out:reshape(shape), lens
  end

  local UNPACK = { "batch_first", "padding_value", "total_length" }
  function U.pad_packed_sequence(sequence, o, ...)
    local op = "pad_packed_sequence"
    nomore(op, 2, ...)
    o = checkopts(op, o, UNPACK, 3)
    if not is_packed(sequence) then error(op .. ": expected a PackedSequence", 2) end
    local nsteps = sequence.batch_sizes.shape[1]
    local tl = o.total_length
    if tl ~= nil and (type(tl) ~= "number" or tl ~= math.floor(tl)) then
      error(fmt("%s: total_length must be an integer, got %s", op, tostring(tl)), 2)
    end
    if o.total_length ~= nil and o.total_length < nsteps then
      error(fmt("%s: Expected total_length to be at least the length of the longest sequence "
        .. "(%d), but got total_length=%s", op, nsteps, tostring(o.total_length)), 2)
    end
    local out, lens = unpack_sorted(sequence, o.padding_value, o.total_length)
    if sequence.unsorted_indices then
      out = out:index_select(2, sequence.unsorted_indices)
      local u, l2 = sequence.unsorted_indices:tolist(), {}
      for i = 1, #u do l2[i] = lens[u[i]] end
      lens = l2
    end
    if o.batch_first then out = out:transpose(1, 2) end
    return out, int64(lens)
  end

  local PACKSEQ = { "enforce_sorted" }
  function U.pack_sequence(sequences, o, ...)
    nomore("pack_sequence", 2, ...)
    o = checkopts("pack_sequence", o, PACKSEQ, 3)
    if type(sequences) ~= "table" or #sequences == 0 then
      error("pack_sequence: expected a non-empty list of tensors", 2)
    end
    local lens = {}
    for i, s in ipairs(sequences) do
      if not T.is_tensor(s) or s.ndim < 1 then
        error(fmt("pack_sequence: sequences[%d] must be a tensor of at least 1 dim", i), 2)
      end
      lens[i] = s.shape[1]
    end
    return U.pack_padded_sequence(U.pad_sequence(sequences), lens,
      { enforce_sorted = o.enforce_sorted })
  end

  -- -- the layers ----------------------------------------------------------------
  local GATES = { RNN_TANH = 1, RNN_RELU = 1, LSTM = 4, GRU = 3 }
  local KERNEL = { RNN_TANH = "rnn_tanh", RNN_RELU = "rnn_relu", LSTM = "lstm", GRU = "gru" }

  -- the initial state of a layer's or cell's forward: a tensor, or for an
  -- LSTM a table {h0, c0}; option-like keys are errors (raised at the
  -- forward's caller: the forward is tail-called by Module's __call)
  local function parse_hx(name, hx, lstm)
    local plain = type(hx) == "table" and not T.is_tensor(hx)
    if lstm and not plain then
      error(fmt("%s.forward: the initial state of an LSTM is a table {h0, c0}", name), 3)
    end
    if plain and not lstm and hx[1] ~= nil then
      error(fmt("%s.forward: the initial state is a tensor h0, not a table (a table {h0, c0} is an LSTM's)",
        name), 3)
    end
    if plain then
      for k in pairs(hx) do
        if not lstm or type(k) ~= "number" then
          error(fmt("%s.forward: unknown option '%s' (the initial state is %s)", name, tostring(k),
            lstm and "a table {h0, c0}" or "a tensor"), 3)
        end
      end
    end
    if lstm then return hx[1], hx[2] end
    return hx
  end

  -- PyTorch's: every parameter uniform in (-1/sqrt(hidden_size), 1/sqrt(hidden_size))
  local function reset_parameters(self, ...)
    nomore(self.__name .. ".reset_parameters", 0, ...)
    local k = 1 / math.sqrt(self.hidden_size)
    T.no_grad(function()
      for _, n in ipairs(self._param_names) do init.uniform_(self._parameters[n], -k, k) end
    end)
  end

  -- level: the caller's position (4 from the layers' prep, 3 from a cell's forward)
  local function check_state(name, what, t, want, x, level)
    if not T.is_tensor(t) then error(fmt("%s.forward: %s must be a tensor", name, what), level) end
    local s = t.shape:totable()
    local ok = #s == #want
    for i = 1, #want do ok = ok and s[i] == want[i] end
    if not ok then
      error(fmt("%s.forward: Expected hidden size (%s), got [%s] for %s", name,
        table.concat(want, ", "), table.concat(s, ", "), what), level)
    end
    if t.dtype ~= x.dtype then
      error(fmt("%s.forward: expected %s of dtype %s (the input's), got %s", name, what,
        tostring(x.dtype), tostring(t.dtype)), level)
    end
  end

  -- the engine op (its errors name it: "lstm: ..."), an error raised at the
  -- forward's caller rather than at this file's line: pass is tail-called
  -- from rnn_layer, called by the forward, tail-called by Module's __call
  local function pass(ok, ...)
    if ok then return ... end
    local e = ...
    if type(e) ~= "string" then error(e, 0) end
    error(unpos(e), 3)
  end
  local function rnn_layer(...) return pass(pcall(C._nn_rnn_layer, ...)) end

  local function rnn_class(name, fixed_mode)
    local cls = Module:extend(name)
    local OPTS = { "num_layers", "bias", "batch_first", "dropout", "bidirectional", "dtype", "device" }
    if name == "RNN" then OPTS[#OPTS + 1] = "nonlinearity" end
    if name == "LSTM" then OPTS[#OPTS + 1] = "proj_size" end
    function cls:init(input_size, hidden_size, o, ...)
      local layers_arg
      if type(o) == "number" then -- PyTorch's positional num_layers: (input, hidden, layers, opts)
        layers_arg, o = o, ...
        nomore(name, 4, select(2, ...))
      else
        nomore(name, 3, ...)
      end
      o = checkopts(name, o, OPTS)
      if layers_arg ~= nil then
        if o.num_layers ~= nil then error(fmt("%s: num_layers given twice", name), 3) end
        local c = { num_layers = layers_arg }
        for k, v in pairs(o) do c[k] = v end
        o = c
      end
      check_count(name, "input_size", input_size, 0)
      check_count(name, "hidden_size", hidden_size, 1)
      local mode = fixed_mode
      if name == "RNN" then
        local nl = opt(o, "nonlinearity", "tanh")
        if nl == "tanh" then mode = "RNN_TANH"
        elseif nl == "relu" then mode = "RNN_RELU"
        else error(fmt("%s: Unknown nonlinearity '%s' (expected 'tanh' or 'relu')", name, tostring(nl)), 3) end
        self.nonlinearity = nl
      end
      local L = opt(o, "num_layers", 1)
      check_count(name, "num_layers", L, 1)
      local dropout = opt(o, "dropout", 0)
      if type(dropout) ~= "number" or not (dropout >= 0 and dropout <= 1) then -- NaN too
        error(fmt("%s: dropout should be a number in range [0, 1] representing the probability of "
          .. "an element being zeroed, got %s", name, tostring(dropout)), 3)
      end
      local proj = opt(o, "proj_size", 0)
      check_count(name, "proj_size", proj, 0)
      if proj >= hidden_size then
        error(fmt("%s: proj_size has to be smaller than hidden_size (got %d >= %d)", name, proj, hidden_size), 3)
      end
      self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, L
      self.bias, self.batch_first = opt(o, "bias", true) and true or false, opt(o, "batch_first", false) and true or false
      self.dropout, self.bidirectional, self.proj_size = dropout, opt(o, "bidirectional", false) and true or false, proj
      local D, G, P = self.bidirectional and 2 or 1, GATES[mode], proj > 0 and proj or hidden_size
      local names = {}
      for l = 0, L - 1 do
        local isz = l == 0 and input_size or P * D
        for d = 1, D do
          local sfx = "_l" .. l .. (d == 2 and "_reverse" or "")
          local n = { w_ih = "weight_ih" .. sfx, w_hh = "weight_hh" .. sfx }
          self:register_parameter(n.w_ih, param({ G * hidden_size, isz }, o))
          self:register_parameter(n.w_hh, param({ G * hidden_size, P }, o))
          if self.bias then
            n.b_ih, n.b_hh = "bias_ih" .. sfx, "bias_hh" .. sfx
            self:register_parameter(n.b_ih, param({ G * hidden_size }, o))
            self:register_parameter(n.b_hh, param({ G * hidden_size }, o))
          end
          if proj > 0 then
            n.w_hr = "weight_hr" .. sfx
            self:register_parameter(n.w_hr, param({ proj, hidden_size }, o))
          end
          names[#names + 1] = n
        end
      end
      rawset(self, "_layer_names", names)
      self:reset_parameters()
    end
    cls.reset_parameters = reset_parameters

    function cls:forward(input, hx, ...)
      nomore(name .. ".forward", 2, ...)
      local lstm = self.mode == "LSTM"
      local D = self.bidirectional and 2 or 1
      local P = self.proj_size > 0 and self.proj_size or self.hidden_size
      local packed, lengths, sorted, unsorted = is_packed(input), nil, nil, nil
      local x, unbatched
      if packed then
        local lens
        x, lens = unpack_sorted(input, 0)
        lengths = int64(lens)
        sorted, unsorted = input.sorted_indices, input.unsorted_indices
      else
        if not T.is_tensor(input) then
          error(fmt("%s.forward: expected a tensor or a PackedSequence as input", name), 2)
        end
        if input.ndim ~= 2 and input.ndim ~= 3 then
          error(fmt("%s.forward: Expected input to be 2D or 3D, got %dD instead", name, input.ndim), 2)
        end
        unbatched = input.ndim == 2
        x = unbatched and input:unsqueeze(2) or (self.batch_first and input:transpose(1, 2) or input)
      end
      if x.shape[3] ~= self.input_size then
        error(fmt("%s.forward: input.size(-1) must be equal to input_size. Expected %d, got %d",
          name, self.input_size, x.shape[3]), 2)
      end
      local N = x.shape[2]
      local h0, c0
      if hx ~= nil then
        h0, c0 = parse_hx(name, hx, lstm)
        local function prep(t, what, size)
          if unbatched then
            check_state(name, what, t, { self.num_layers * D, size }, x, 4)
            return t:unsqueeze(2)
          end
          check_state(name, what, t, { self.num_layers * D, N, size }, x, 4)
          if sorted then return t:index_select(2, sorted) end
          return t
        end
        h0 = prep(h0, "hx", P)
        if lstm then c0 = prep(c0, "cx", self.hidden_size) end
      end
      local kmode, hs, cs = KERNEL[self.mode], {}, {}
      local names = self._layer_names
      for l = 1, self.num_layers do
        local outs = {}
        for d = 1, D do
          local i = (l - 1) * D + d
          local n, p = names[i], self._parameters
          local o, h, c = rnn_layer(kmode, x, h0 and h0:select(1, i), c0 and c0:select(1, i),
            p[n.w_ih], p[n.w_hh], n.b_ih and p[n.b_ih], n.b_hh and p[n.b_hh], n.w_hr and p[n.w_hr],
            lengths, d == 2)
          outs[d], hs[i], cs[i] = o, h, c
        end
        x = D == 2 and T.cat(outs, 3) or outs[1]
        if self.dropout > 0 and self.training and l < self.num_layers then
          x = F.dropout(x, self.dropout, true)
        end
      end
      local h_n, c_n = T.stack(hs, 1), lstm and T.stack(cs, 1) or nil
      local output
      if packed then
        local rest = x.shape:totable()
        local Lp = table.remove(rest, 1)
        rest[1] = Lp * N
        output = PackedSequence(x:reshape(rest):index_select(1, int64(packed_rows(input.batch_sizes:tolist(), N))),
          input.batch_sizes, sorted, unsorted)
        if unsorted then
          h_n = h_n:index_select(2, unsorted)
          if c_n then c_n = c_n:index_select(2, unsorted) end
        end
      elseif unbatched then
        output, h_n = x:squeeze(2), h_n:squeeze(2)
        if c_n then c_n = c_n:squeeze(2) end
      else
        output = self.batch_first and x:transpose(1, 2) or x
      end
      if lstm then return output, { h_n, c_n } end
      return output, h_n
    end

    function cls:extra_repr()
      local s = fmt("%d, %d", self.input_size, self.hidden_size)
      if self.proj_size > 0 then s = s .. fmt(", proj_size=%d", self.proj_size) end
      if self.num_layers ~= 1 then s = s .. fmt(", num_layers=%d", self.num_layers) end
      -- PyTorch's RNNBase.extra_repr (no nonlinearity there)
      if not self.bias then s = s .. ", bias=false" end
      if self.batch_first then s = s .. ", batch_first=true" end
      if self.dropout ~= 0 then s = s .. fmt(", dropout=%s", require("ember.pyfloat")(self.dropout)) end
      if self.bidirectional then s = s .. ", bidirectional=true" end
      return s
    end
    nn[name] = cls
  end
  rnn_class("RNN", nil)
  rnn_class("LSTM", "LSTM")
  rnn_class("GRU", "GRU")

  -- -- the cells: one step, the same engine op over a sequence of length 1 --
  local function cell_class(name, fixed_mode)
    local cls = Module:extend(name)
    local OPTS = { "bias", "dtype", "device" }
    if name == "RNNCell" then OPTS[#OPTS + 1] = "nonlinearity" end
    function cls:init(input_size, hidden_size, o, ...)
      nomore(name, 3, ...)
      o = checkopts(name, o, OPTS)
      check_count(name, "input_size", input_size, 0)
      check_count(name, "hidden_size", hidden_size, 1)
      local mode = fixed_mode
      if name == "RNNCell" then
        local nl = opt(o, "nonlinearity", "tanh")
        if nl == "tanh" then mode = "RNN_TANH"
        elseif nl == "relu" then mode = "RNN_RELU"
        else error(fmt("%s: Unknown nonlinearity: %s (expected 'tanh' or 'relu')", name, tostring(nl)), 3) end
        self.nonlinearity = nl
      end
      self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
      self.bias = opt(o, "bias", true) and true or false
      local G = GATES[mode]
      self:register_parameter("weight_ih", param({ G * hidden_size, input_size }, o))
      self:register_parameter("weight_hh", param({ G * hidden_size, hidden_size }, o))
      if self.bias then
        self:register_parameter("bias_ih", param({ G * hidden_size }, o))
        self:register_parameter("bias_hh", param({ G * hidden_size }, o))
      end
      self:reset_parameters()
    end
    cls.reset_parameters = reset_parameters
    function cls:forward(input, hx, ...)
      nomore(name .. ".forward", 2, ...)
      local lstm = self.mode == "LSTM"
      if not T.is_tensor(input) or (input.ndim ~= 1 and input.ndim ~= 2) then
        error(fmt("%s.forward: Expected input to be 1D or 2D, got %s instead", name,
          T.is_tensor(input) and (input.ndim .. "D") or type(input)), 2)
      end
      local unbatched = input.ndim == 1
      local x = unbatched and input:unsqueeze(1) or input
      if x.shape[2] ~= self.input_size then
        error(fmt("%s.forward: input has inconsistent input_size: got %d expected %d", name,
          x.shape[2], self.input_size), 2)
      end
      local N, H = x.shape[1], self.hidden_size
      local h0, c0
      if hx ~= nil then
        h0, c0 = parse_hx(name, hx, lstm)
        local want = unbatched and { H } or { N, H }
        check_state(name, "hx", h0, want, x, 3)
        if unbatched then h0 = h0:unsqueeze(1) end
        if lstm then
          check_state(name, "cx", c0, want, x, 3)
          if unbatched then c0 = c0:unsqueeze(1) end
        end
      end
      local p = self._parameters
      local _, h, c = rnn_layer(KERNEL[self.mode], x:unsqueeze(1), h0, c0, p.weight_ih,
        p.weight_hh, p.bias_ih, p.bias_hh, nil, nil, false)
      if unbatched then
        h = h:squeeze(1)
        if c then c = c:squeeze(1) end
      end
      if lstm then return h, c end
      return h
    end
    function cls:extra_repr()
      local s = fmt("%d, %d", self.input_size, self.hidden_size)
      if not self.bias then s = s .. ", bias=false" end
      if self.mode == "RNN_RELU" then s = s .. ", nonlinearity=relu" end
      return s
    end
    nn[name] = cls
  end
  cell_class("RNNCell", "RNN_TANH")
  cell_class("LSTMCell", "LSTM")
  cell_class("GRUCell", "GRU")
end
