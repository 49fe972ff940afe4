-- nn.MultiheadAttention and the transformer layers (docs/attention.md), with
-- PyTorch's constructor arguments, parameter names, layouts and
-- initialisation, so a PyTorch state_dict loads by name (children of a
-- TransformerEncoder/Decoder are `layers.1...` in ember, `layers.0...` with
-- {torch_names = true}). The attention itself is F.scaled_dot_product_attention
-- (the fused kernel) when no weights are asked for; with need_weights the
-- weights are computed explicitly, as PyTorch does.
return function(T, C, nn)
  local Module, F, init = nn.Module, nn.functional, nn.init
  local A = require "ember.args"
  local nomore = A.nomore
  local fmt = string.format
  local function checkopts(name, o, allowed) return A.checkopts(name, o, allowed, 4) end
  local function opt(o, k, def)
    if o == nil or o[k] == nil then return def end
    return o[k]
  end
  local function param(shape, o)
    return T.empty(shape, { dtype = opt(o, "dtype", nil) or T.get_default_dtype(),
      device = opt(o, "device", nil) })
  end
  -- an error at the user's line (a layer reaches MultiheadAttention's
  -- checks, and a Transformer the layers', through frames of varying depth)
  local raise = require("ember.argcheck")(T).raise
  local function tensor_or_nil(op, what, t)
    if t ~= nil and not T.is_tensor(t) then
      raise(fmt("%s: expected %s to be a tensor, got %s", op, what, type(t)))
    end
    return t
  end

  -- a mask as an additive float mask of dtype dt: bool true (PyTorch's
  -- MultiheadAttention convention: true = not allowed) becomes -inf
  local function float_mask(op, what, m, dt)
    if m == nil then return nil end
    if m.dtype == T.bool then
      return T.zeros(m.shape, { dtype = dt, device = m.device }):masked_fill(m, -math.huge)
    end
    if not m.dtype.is_floating_point then
      raise(fmt("%s: only bool and floating types of %s are supported, got %s", op, what, tostring(m.dtype)))
    end
    return m:to(dt)
  end
  -- one more key: a zero column at the end of a mask's last dim
  local function pad_key(m)
    if m == nil then return nil end
    local sz = m.shape:totable()
    sz[#sz] = 1
    return T.cat({ m, T.zeros(sz, { dtype = m.dtype, device = m.device }) }, m.ndim)
  end

  -- -- MultiheadAttention -----------------------------------------------------
  -- attn_mask's shape checked against (L, S) or (N * H, L, S)
  local function check_attn_mask(op, am, L, S, N, H)
    if am == nil then return nil end
    if am.ndim == 2 then
      if am.shape[1] ~= L or am.shape[2] ~= S then
        raise(fmt("%s: the shape of the 2-d attn_mask is %s, but should be (%d, %d)", op, tostring(am.shape), L, S))
      end
    elseif am.ndim == 3 then
      if am.shape[1] ~= N * H or am.shape[2] ~= L or am.shape[3] ~= S then
        raise(fmt("%s: the shape of the 3-d attn_mask is %s, but should be (%d, %d, %d)", op,
          tostring(am.shape), N * H, L, S))
      end
    else
      raise(fmt("%s: attn_mask's dimension %d is not supported", op, am.ndim))
    end
    return am
  end
  -- the out_proj of MultiheadAttention: a Linear, named as PyTorch's
  -- (NonDynamicallyQuantizableLinear) so that the printout matches
  local OutProj = nn.Linear:extend("NonDynamicallyQuantizableLinear")
  local MHA = Module:extend("MultiheadAttention")
  local MHA_O = { "dropout", "bias", "add_bias_kv", "add_zero_attn", "kdim", "vdim", "batch_first",
    "dtype", "device" }
  function MHA:init(embed_dim, num_heads, o, ...)
    nomore("MultiheadAttention", 3, ...)
    checkopts("MultiheadAttention", o, MHA_O)
    if type(embed_dim) ~= "number" or embed_dim <= 0 or embed_dim % 1 ~= 0 or type(num_heads) ~= "number"
      or num_heads <= 0 or num_heads % 1 ~= 0 then
      raise(fmt("MultiheadAttention: embed_dim and num_heads must be positive integers, got %s and %s",
        tostring(embed_dim), tostring(num_heads)))
    end
    local E = embed_dim
    self.embed_dim, self.num_heads = E, num_heads
    self.kdim, self.vdim = opt(o, "kdim", E), opt(o, "vdim", E)
    self._qkv_same_embed_dim = self.kdim == E and self.vdim == E
    self.dropout, self.batch_first = opt(o, "dropout", 0.0), opt(o, "batch_first", false)
    self.head_dim = math.floor(E / num_heads)
    if self.head_dim * num_heads ~= E then
      raise(fmt("MultiheadAttention: embed_dim (%d) must be divisible by num_heads (%d)", E, num_heads))
    end
    local bias = opt(o, "bias", true)
    if self._qkv_same_embed_dim then
      self.in_proj_weight = init.xavier_uniform_(param({ 3 * E, E }, o)):requires_grad_(true)
    else
      self.q_proj_weight = init.xavier_uniform_(param({ E, E }, o)):requires_grad_(true)
      self.k_proj_weight = init.xavier_uniform_(param({ E, self.kdim }, o)):requires_grad_(true)
      self.v_proj_weight = init.xavier_uniform_(param({ E, self.vdim }, o)):requires_grad_(true)
    end
    if bias then self.in_proj_bias = init.zeros_(param({ 3 * E }, o)):requires_grad_(true) end
    self.out_proj = OutProj(E, E, { bias = bias, dtype = opt(o, "dtype", nil), device = opt(o, "device", nil) })
    if bias then T.no_grad(function() self.out_proj.bias:zero_() end) end
    if opt(o, "add_bias_kv", false) then
      self.bias_k = init.xavier_normal_(param({ 1, 1, E }, o)):requires_grad_(true)
      self.bias_v = init.xavier_normal_(param({ 1, 1, E }, o)):requires_grad_(true)
    end
    self.add_zero_attn = opt(o, "add_zero_attn", false)
  end

  local MHA_F = { "key_padding_mask", "need_weights", "attn_mask", "average_attn_weights", "is_causal" }
  -- forward(query, key, value, {key_padding_mask, need_weights = true,
  -- attn_mask, average_attn_weights = true, is_causal = false}) or
  -- forward(query, key, value, key_padding_mask, need_weights, attn_mask,
  -- average_attn_weights, is_causal) (PyTorch's order) -> output, weights
  -- (nil when need_weights is false)
  function MHA:forward(query, key, value, ...)
    local op = "MultiheadAttention.forward"
    local n, o = select("#", ...), ...
    if n > 1 or T.is_tensor(o) or (n == 1 and type(o) ~= "table" and o ~= nil) then
      if n > #MHA_F then nomore(op, 3 + #MHA_F, select(#MHA_F + 1, ...)) end
      local a = { ... }
      o = {}
      for i, k in ipairs(MHA_F) do o[k] = a[i] end
    else
      o = checkopts(op, o, MHA_F)
    end
    for i, t in ipairs({ query, key, value }) do
      if not T.is_tensor(t) then
        raise(fmt("%s: expected %s to be a tensor, got %s", op, ({ "query", "key", "value" })[i], type(t)))
      end
    end
    local kpm = tensor_or_nil(op, "key_padding_mask", o.key_padding_mask)
    local am = tensor_or_nil(op, "attn_mask", o.attn_mask)
    local need_weights = o.need_weights ~= false
    local average = o.average_attn_weights ~= false
    local is_causal = o.is_causal == true
    if is_causal and am == nil then
      raise(op .. ": need attn_mask if specifying the is_causal hint")
    end
    local batched = query.ndim == 3
    if not batched and query.ndim ~= 2 then
      raise(fmt("%s: expected query to be 2-d (unbatched) or 3-d (batched), got %d-d", op, query.ndim))
    end
    if key.ndim ~= query.ndim or value.ndim ~= query.ndim then
      raise(fmt("%s: expected key and value to be %d-d as query is, got %d-d and %d-d", op, query.ndim,
        key.ndim, value.ndim))
    end
    if query.shape[query.ndim] ~= self.embed_dim then
      raise(fmt("%s: was expecting embedding dimension of %d, but got %d", op, self.embed_dim,
        query.shape[query.ndim]))
    end
    if key.shape[key.ndim] ~= self.kdim or value.shape[value.ndim] ~= self.vdim then
      raise(fmt("%s: expected key and value of embedding dimensions %d (kdim) and %d (vdim), got %d and %d", op,
        self.kdim, self.vdim, key.shape[key.ndim], value.shape[value.ndim]))
    end
    if batched and self.batch_first and not need_weights and self.bias_k == nil and not self.add_zero_attn then
      local out, w = self:_forward_batch_first(query, key, value, kpm, am, is_causal)
      return out, w
    end
    if batched then
      if self.batch_first then query, key, value = query:transpose(1, 2), key:transpose(1, 2), value:transpose(1, 2) end
    else
      query, key, value = query:unsqueeze(2), key:unsqueeze(2), value:unsqueeze(2)
      if kpm ~= nil and kpm.ndim ~= 1 then
        raise(fmt("%s: for an unbatched (2-d) query, expected key_padding_mask to be nil or 1-d, got %d-d", op,
          kpm.ndim))
      end
      if kpm ~= nil then kpm = kpm:unsqueeze(1) end
    end
    local L, N, E = query.shape[1], query.shape[2], query.shape[3]
    local S, H, hd = key.shape[1], self.num_heads, self.head_dim
    if E ~= self.embed_dim then
      raise(fmt("%s: was expecting embedding dimension of %d, but got %d", op, self.embed_dim, E))
    end
    if key.shape[2] ~= N or value.shape[2] ~= N or value.shape[1] ~= S then
      raise(fmt("%s: key %s and value %s do not match query %s (sequence, batch)", op, tostring(key.shape),
        tostring(value.shape), tostring(query.shape)))
    end
    local dt = query.dtype
    local q, k, v = self:_project(query, key, value, E)
    -- the masks, additive
    local causal_hint = is_causal and kpm == nil and not need_weights
    if causal_hint then
      am = nil
    else
      am = check_attn_mask(op, float_mask(op, "attn_mask", am, dt), L, S, N, H)
      if am ~= nil and am.ndim == 2 then am = am:unsqueeze(1) end
      if kpm ~= nil then is_causal = false end
    end
    kpm = float_mask(op, "key_padding_mask", kpm, dt)
    if kpm ~= nil and (kpm.ndim ~= 2 or kpm.shape[1] ~= N or kpm.shape[2] ~= S) then
      raise(fmt("%s: expected key_padding_mask of shape (%d, %d), got %s", op, N, S, tostring(kpm.shape)))
    end
    if self.bias_k ~= nil then
      k = T.cat({ k, self.bias_k:expand(1, N, E) }, 1)
      v = T.cat({ v, self.bias_v:expand(1, N, E) }, 1)
      am, kpm = pad_key(am), pad_key(kpm)
    end
    -- heads: (L, N, E) -> (N * H, L, hd)
    q = q:reshape(L, N * H, hd):transpose(1, 2)
    k = k:reshape(k.shape[1], N * H, hd):transpose(1, 2)
    v = v:reshape(v.shape[1], N * H, hd):transpose(1, 2)
    if self.add_zero_attn then
      k = T.cat({ k, T.zeros(N * H, 1, hd, { dtype = dt, device = k.device }) }, 2)
      v = T.cat({ v, T.zeros(N * H, 1, hd, { dtype = dt, device = v.device }) }, 2)
      am, kpm = pad_key(am), pad_key(kpm)
    end
    S = k.shape[2]
    if kpm ~= nil then
      kpm = kpm:reshape(N, 1, 1, S):expand(N, H, 1, S):reshape(N * H, 1, S)
      am = am == nil and kpm or am + kpm
    end
    local p = self.training and self.dropout or 0
    local out, weights
    if need_weights then
      local s = (q * (1 / math.sqrt(hd))):matmul(k:transpose(2, 3))
      if am ~= nil then s = s + am end
      weights = s:softmax(3)
      if p > 0 then weights = F.dropout(weights, p) end
      out = weights:matmul(v)
    else
      out = F.scaled_dot_product_attention(q, k, v, { attn_mask = am, dropout_p = p, is_causal = causal_hint })
    end
    out = out:transpose(1, 2):reshape(L * N, E)
    out = F.linear(out, self.out_proj.weight, self.out_proj.bias):reshape(L, N, E)
    if weights ~= nil then
      weights = weights:reshape(N, H, L, S)
      if average then weights = weights:mean(2) end
    end
    if not batched then
      out = out:squeeze(2)
      if weights ~= nil then weights = weights:squeeze(1) end
    elseif self.batch_first then
      out = out:transpose(1, 2)
    end
    return out, weights
  end
  -- The batch_first path without weights (a transformer layer's): the
  -- projections run on the (N, L, E) layout and the fused attention on
  -- (N, H, L, hd) views, so no (L, N, E) transposes of the inputs or the
  -- output are made (each a copy in the backward); same values as forward's.
  function MHA:_forward_batch_first(query, key, value, kpm, am, is_causal)
    local op = "MultiheadAttention.forward"
    local N, L, E = query.shape[1], query.shape[2], query.shape[3]
    local S, H, hd = key.shape[2], self.num_heads, self.head_dim
    if E ~= self.embed_dim then
      raise(fmt("%s: was expecting embedding dimension of %d, but got %d", op, self.embed_dim, E))
    end
    if key.shape[1] ~= N or value.shape[1] ~= N or value.shape[2] ~= S then
      raise(fmt("%s: key %s and value %s do not match query %s (batch, sequence)", op, tostring(key.shape),
        tostring(value.shape), tostring(query.shape)))
    end
    local dt = query.dtype
    local q, k, v = self:_project(query, key, value, E)
    local causal_hint = is_causal and kpm == nil
    if causal_hint then
      am = nil
    else
      am = check_attn_mask(op, float_mask(op, "attn_mask", am, dt), L, S, N, H)
      if am ~= nil and am.ndim == 3 then am = am:reshape(N, H, L, S) end
    end
    kpm = float_mask(op, "key_padding_mask", kpm, dt)
    if kpm ~= nil then
      if kpm.ndim ~= 2 or kpm.shape[1] ~= N or kpm.shape[2] ~= S then
        raise(fmt("%s: expected key_padding_mask of shape (%d, %d), got %s", op, N, S, tostring(kpm.shape)))
      end
      kpm = kpm:reshape(N, 1, 1, S)
      am = am == nil and kpm or am + kpm
    end
    q = q:reshape(N, L, H, hd):transpose(2, 3)
    k = k:reshape(N, S, H, hd):transpose(2, 3)
    v = v:reshape(N, S, H, hd):transpose(2, 3)
    local p = self.training and self.dropout or 0
    local out = F.scaled_dot_product_attention(q, k, v, { attn_mask = am, dropout_p = p, is_causal = causal_hint })
    out = out:transpose(2, 3):reshape(N * L, E)
    return F.linear(out, self.out_proj.weight, self.out_proj.bias):reshape(N, L, E), nil
  end
  -- the input projections of query, key and value (E: the embedding size)
  function MHA:_project(query, key, value, E)
    local b = self.in_proj_bias
    local bq, bk, bv
    if b ~= nil then bq, bk, bv = b:narrow(1, 1, E), b:narrow(1, E + 1, E), b:narrow(1, 2 * E + 1, E) end
    if self._qkv_same_embed_dim then
      local W = self.in_proj_weight
      return F.linear(query, W:narrow(1, 1, E), bq), F.linear(key, W:narrow(1, E + 1, E), bk),
        F.linear(value, W:narrow(1, 2 * E + 1, E), bv)
    end
    return F.linear(query, self.q_proj_weight, bq), F.linear(key, self.k_proj_weight, bk),
      F.linear(value, self.v_proj_weight, bv)
  end
  -- no extra_repr: PyTorch prints MultiheadAttention( (out_proj): ... )
  nn.MultiheadAttention = MHA

  -- -- the transformer layers -----------------------------------------------------
  -- a copy of a module with its own tensors (PyTorch's copy.deepcopy of a layer)
  local function deepcopy(v, seen)
    if T.is_tensor(v) then
      if seen[v] then return seen[v] end
      local c = v:detach():clone()
      if v.requires_grad then c:requires_grad_(true) end
      seen[v] = c
      return c
    end
    if type(v) ~= "table" then return v end
    if seen[v] then return seen[v] end
    if not Module._is_module(v) and getmetatable(v) ~= nil then return v end -- a class or a shared object
    local c = {}
    seen[v] = c
    for k, x in next, v do rawset(c, deepcopy(k, seen), deepcopy(x, seen)) end
    return setmetatable(c, getmetatable(v))
  end

  local function activation_of(name, a)
    if a == nil or a == "relu" then return F.relu, "relu" end
    if a == "gelu" then return F.gelu, "gelu" end
    if type(a) == "function" or (type(a) == "table" and Module._is_module(a)) then return a, "custom" end
    raise(fmt("%s: activation should be relu/gelu or a function, not %s", name, tostring(a)))
  end
  local function layer_norm(d, eps, bias, o)
    local n = nn.LayerNorm(d, { eps = eps, dtype = opt(o, "dtype", nil), device = opt(o, "device", nil) })
    if not bias then n:register_parameter("bias", nil) end
    return n
  end

  local LAYER_O = { "dim_feedforward", "dropout", "activation", "layer_norm_eps", "batch_first",
    "norm_first", "bias", "dtype", "device" }
  local function layer_init(self, name, d_model, nhead, o, cross)
    checkopts(name, o, LAYER_O)
    local ff, p = opt(o, "dim_feedforward", 2048), opt(o, "dropout", 0.1)
    local eps, bias = opt(o, "layer_norm_eps", 1e-5), opt(o, "bias", true)
    local fo = { dtype = opt(o, "dtype", nil), device = opt(o, "device", nil) }
    local mo = { dropout = p, bias = bias, batch_first = opt(o, "batch_first", false), dtype = fo.dtype, device = fo.device }
    self.self_attn = MHA(d_model, nhead, mo)
    if cross then self.multihead_attn = MHA(d_model, nhead, mo) end
    self.linear1 = nn.Linear(d_model, ff, { bias = bias, dtype = fo.dtype, device = fo.device })
    self.dropout = nn.Dropout(p)
    self.linear2 = nn.Linear(ff, d_model, { bias = bias, dtype = fo.dtype, device = fo.device })
    self.norm_first = opt(o, "norm_first", false)
    self.norm1 = layer_norm(d_model, eps, bias, o)
    self.norm2 = layer_norm(d_model, eps, bias, o)
    if cross then self.norm3 = layer_norm(d_model, eps, bias, o) end
    -- separate statements: registration order is child order (LuaJIT
    -- assigns a multiple assignment right to left)
    self.dropout1 = nn.Dropout(p)
    self.dropout2 = nn.Dropout(p)
    if cross then self.dropout3 = nn.Dropout(p) end
    self.activation, self.activation_name = activation_of(name, opt(o, "activation", "relu"))
  end
  local function ff_block(self, x, drop)
    return drop(self.linear2(self.dropout(self.activation(self.linear1(x)))))
  end
  local function sa_block(self, attn, x, mem, mask, kpm, causal, drop)
    local y = attn(x, mem or x, mem or x, { attn_mask = mask, key_padding_mask = kpm, is_causal = causal,
      need_weights = false })
    return drop(y)
  end
  -- forward's arguments: positional in PyTorch's order, or one options table
  local function fwd_args(op, names, first, ...)
    local n = select("#", ...)
    local a1 = ...
    if n == 1 and type(a1) == "table" and not T.is_tensor(a1) then
      local o = checkopts(op, a1, names)
      local r = {}
      for i, k in ipairs(names) do r[i] = o[k] end
      return r
    end
    if n > #names then nomore(op, first + #names - 1, select(#names + 1, ...)) end
    return { ... }
  end

  local Enc = Module:extend("TransformerEncoderLayer")
  function Enc:init(d_model, nhead, o, ...)
    nomore("TransformerEncoderLayer", 3, ...)
    layer_init(self, "TransformerEncoderLayer", d_model, nhead, o, false)
  end
  local ENC_F = { "src_mask", "src_key_padding_mask", "is_causal" }
  -- forward(src, src_mask, src_key_padding_mask, is_causal) or forward(src, {...})
  function Enc:forward(src, ...)
    local a = fwd_args("TransformerEncoderLayer.forward", ENC_F, 2, ...)
    local mask, kpm, causal = a[1], a[2], a[3]
    local x = src
    if self.norm_first then
      x = x + sa_block(self, self.self_attn, self.norm1(x), nil, mask, kpm, causal, self.dropout1)
      x = x + ff_block(self, self.norm2(x), self.dropout2)
    else
      x = self.norm1(x + sa_block(self, self.self_attn, x, nil, mask, kpm, causal, self.dropout1))
      x = self.norm2(x + ff_block(self, x, self.dropout2))
    end
    return x
  end
  nn.TransformerEncoderLayer = Enc

  local Dec = Module:extend("TransformerDecoderLayer")
  function Dec:init(d_model, nhead, o, ...)
    nomore("TransformerDecoderLayer", 3, ...)
    layer_init(self, "TransformerDecoderLayer", d_model, nhead, o, true)
  end
  local DEC_F = { "tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask",
    "tgt_is_causal", "memory_is_causal" }
  -- forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
  -- memory_key_padding_mask, tgt_is_causal, memory_is_causal) or forward(tgt, memory, {...})
  function Dec:forward(tgt, memory, ...)
    local a = fwd_args("TransformerDecoderLayer.forward", DEC_F, 3, ...)
    if not T.is_tensor(memory) then
      raise("TransformerDecoderLayer.forward: expected memory to be a tensor, got " .. type(memory))
    end
    local tm, mm, tk, mk, tc, mc = a[1], a[2], a[3], a[4], a[5], a[6]
    local x = tgt
    if self.norm_first then
      x = x + sa_block(self, self.self_attn, self.norm1(x), nil, tm, tk, tc, self.dropout1)
      x = x + sa_block(self, self.multihead_attn, self.norm2(x), memory, mm, mk, mc, self.dropout2)
      x = x + ff_block(self, self.norm3(x), self.dropout3)
    else
      x = self.norm1(x + sa_block(self, self.self_attn, x, nil, tm, tk, tc, self.dropout1))
      x = self.norm2(x + sa_block(self, self.multihead_attn, x, memory, mm, mk, mc, self.dropout2))
      x = self.norm3(x + ff_block(self, x, self.dropout3))
    end
    return x
  end
  nn.TransformerDecoderLayer = Dec

  local function stack_init(self, name, layer, num_layers, o)
    checkopts(name, o, { "norm", "enable_nested_tensor", "mask_check" })
    if not Module._is_module(layer) then raise(name .. ": expected a layer module") end
    if type(num_layers) ~= "number" or num_layers < 1 or num_layers % 1 ~= 0 then
      raise(fmt("%s: num_layers must be a positive number, an integer, got %s", name, tostring(num_layers)))
    end
    local list = {}
    for i = 1, num_layers do list[i] = deepcopy(layer, {}) end
    self.layers = nn.ModuleList(list)
    self.num_layers = num_layers
    if opt(o, "norm", nil) ~= nil then self.norm = o.norm end
  end

  local EncS = Module:extend("TransformerEncoder")
  -- enable_nested_tensor and mask_check are PyTorch's fast-path switches:
  -- accepted, with no effect on the values (ember has no nested tensors)
  function EncS:init(layer, num_layers, o, ...)
    nomore("TransformerEncoder", 3, ...)
    stack_init(self, "TransformerEncoder", layer, num_layers, o)
  end
  local ENCS_F = { "mask", "src_key_padding_mask", "is_causal" }
  function EncS:forward(src, ...)
    local a = fwd_args("TransformerEncoder.forward", ENCS_F, 2, ...)
    local x = src
    for _, l in ipairs(self.layers) do x = l(x, a[1], a[2], a[3]) end
    if self.norm ~= nil then x = self.norm(x) end
    return x
  end
  nn.TransformerEncoder = EncS

  local DecS = Module:extend("TransformerDecoder")
  function DecS:init(layer, num_layers, o, ...)
    nomore("TransformerDecoder", 3, ...)
    stack_init(self, "TransformerDecoder", layer, num_layers, o)
  end
  function DecS:forward(tgt, memory, ...)
    local a = fwd_args("TransformerDecoder.forward", DEC_F, 3, ...)
    local x = tgt
    for _, l in ipairs(self.layers) do x = l(x, memory, a[1], a[2], a[3], a[4], a[5], a[6]) end
    if self.norm ~= nil then x = self.norm(x) end
    return x
  end
  nn.TransformerDecoder = DecS

  local Tr = Module:extend("Transformer")
  local TR_O = { "d_model", "nhead", "num_encoder_layers", "num_decoder_layers", "dim_feedforward",
    "dropout", "activation", "custom_encoder", "custom_decoder", "layer_norm_eps", "batch_first",
    "norm_first", "bias", "dtype", "device" }
  -- Transformer({d_model = 512, nhead = 8, ...}) or Transformer(d_model, nhead, {...})
  function Tr:init(d_model, nhead, o, ...)
    if type(d_model) == "table" then
      nomore("Transformer", 1, nhead, o, ...)
      o = d_model
      d_model, nhead = nil, nil
    else
      nomore("Transformer", 3, ...)
    end
    checkopts("Transformer", o, TR_O)
    d_model = d_model or opt(o, "d_model", 512)
    nhead = nhead or opt(o, "nhead", 8)
    local lo = {
      dim_feedforward = opt(o, "dim_feedforward", 2048), dropout = opt(o, "dropout", 0.1),
      activation = opt(o, "activation", "relu"), layer_norm_eps = opt(o, "layer_norm_eps", 1e-5),
      batch_first = opt(o, "batch_first", false), norm_first = opt(o, "norm_first", false),
      bias = opt(o, "bias", true), dtype = opt(o, "dtype", nil), device = opt(o, "device", nil),
    }
    local eps, bias = lo.layer_norm_eps, lo.bias
    if opt(o, "custom_encoder", nil) ~= nil then
      self.encoder = o.custom_encoder
    else
      self.encoder = EncS(Enc(d_model, nhead, lo), opt(o, "num_encoder_layers", 6),
        { norm = layer_norm(d_model, eps, bias, o) })
    end
    if opt(o, "custom_decoder", nil) ~= nil then
      self.decoder = o.custom_decoder
    else
      self.decoder = DecS(Dec(d_model, nhead, lo), opt(o, "num_decoder_layers", 6),
        { norm = layer_norm(d_model, eps, bias, o) })
    end
    self.d_model, self.nhead, self.batch_first = d_model, nhead, lo.batch_first
    for _, p in ipairs(self:parameters()) do
      if p.ndim > 1 then init.xavier_uniform_(p) end
    end
  end
  local TR_F = { "src_mask", "tgt_mask", "memory_mask", "src_key_padding_mask", "tgt_key_padding_mask",
    "memory_key_padding_mask", "src_is_causal", "tgt_is_causal", "memory_is_causal" }
  -- forward(src, tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask,
  -- tgt_key_padding_mask, memory_key_padding_mask, src_is_causal,
  -- tgt_is_causal, memory_is_causal) or forward(src, tgt, {...})
  function Tr:forward(src, tgt, ...)
    local a = fwd_args("Transformer.forward", TR_F, 3, ...)
    if not T.is_tensor(src) or not T.is_tensor(tgt) then
      raise("Transformer.forward: expected src and tgt to be tensors")
    end
    local bdim = self.batch_first and 1 or 2
    if src.ndim == 3 and tgt.ndim == 3 and src.shape[bdim] ~= tgt.shape[bdim] then
      raise("Transformer.forward: the batch number of src and tgt must be equal")
    end
    if src.shape[src.ndim] ~= self.d_model or tgt.shape[tgt.ndim] ~= self.d_model then
      raise("Transformer.forward: the feature number of src and tgt must be equal to d_model")
    end
    local memory = self.encoder(src, a[1], a[4], a[7])
    return self.decoder(tgt, memory, a[2], a[3], a[5], a[6], a[8], a[9])
  end
  -- a float mask of n x n: -inf above the diagonal, 0 elsewhere
  local SQ = { "dtype", "device" }
  function Tr.generate_square_subsequent_mask(n, o, ...)
    nomore("generate_square_subsequent_mask", 2, ...)
    o = A.checkopts("generate_square_subsequent_mask", o, SQ)
    if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then
      raise("generate_square_subsequent_mask: expected an integer size >= 0, got " .. tostring(n))
    end
    return T.full({ n, n }, -math.huge, { dtype = o.dtype or T.get_default_dtype(), device = o.device }):triu(1)
  end
  nn.Transformer = Tr
end
