-- scaled_dot_product_attention (the fused kernel: engine/src/cpu/attention.c),
-- nn.MultiheadAttention and the transformer layers (lua/ember/nn/attention.lua)
-- against PyTorch 1.13 (tests/fixtures/attention_cases.lua from
-- gen_attention.py), gradcheck in float64, dropout, the modules and bad input.
local T = require "ember"
local F = T.nn.functional
local nn = T.nn
local unpack = table.unpack or unpack
local cases = dofile("tests/fixtures/attention_cases.lua")

-- x[i] = sin(0.37 i + c) * a, row-major: the generator's inputs
local function wave(shape, c, a, dt)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = math.sin(0.37 * i + c) * a end
  return T.tensor(v, { dtype = T.float64 }):reshape(shape):to(dt)
end

local TOL = { float32 = 3e-5, float64 = 1e-9 }
local function close_list(got, want, tol, what)
  local flat = got:detach():double():reshape(-1)
  assert.equal(#want, flat:numel(), what .. ": number of values")
  local w = T.tensor(want, { dtype = T.float64 })
  local scale = math.max(1, w:abs():max():item())
  local d = (flat - w):abs():max():item()
  assert(d <= tol * scale, string.format("%s: max difference %g (tolerance %g)", what, d, tol * scale))
end
local function close_sampled(got, rec, every, tol, what)
  local flat = got:detach():double():reshape(-1)
  local idx = T.arange(1, flat:numel() + 1, every, { dtype = T.int64 })
  close_list(flat:index_select(1, idx), rec.every, tol, what .. " (every " .. every .. "th)")
  local s = flat:abs():sum():item()
  assert(math.abs(s - rec.abs_sum) <= tol * 10 * math.max(1, rec.abs_sum),
    string.format("%s: sum of |values| %g, expected %g", what, s, rec.abs_sum))
end

local function make_inputs(c, dt)
  local q, k, v = wave(c.q, 0.1, 1.0, dt), wave(c.k, 0.7, 0.9, dt), wave(c.v, 1.3, 1.1, dt)
  if c.perm then  -- the same values in a transposed layout
    local function nc(t) return t:transpose(-2, -1):contiguous():transpose(-2, -1) end
    q, k, v = nc(q), nc(k), nc(v)
    assert.is_false(q:is_contiguous())
  end
  local mask
  if c.mask then
    local w = wave(c.mask.shape, 2.1, 1.0, dt)
    if c.mask.kind == "bool" then
      mask = w:gt(-0.3)
      mask:select(-1, 1):fill_(true)
    else
      mask = w
    end
  end
  return q:requires_grad_(), k:requires_grad_(), v:requires_grad_(), mask
end

describe("scaled_dot_product_attention against PyTorch's formula", function()
  for _, c in ipairs(cases.sdpa) do
    for _, dtn in ipairs(c.dtypes) do
      it(c.name .. " " .. dtn, function()
        local dt = T[dtn]
        local q, k, v, mask = make_inputs(c, dt)
        local out = F.scaled_dot_product_attention(q, k, v, { attn_mask = mask, is_causal = c.causal, scale = c.scale })
        assert.equal(dt, out.dtype)
        local g = wave(out.shape:totable(), 0.5, 1.0, dt)
        local gs = T.autograd.grad({ out }, { q, k, v }, { grad_outputs = { g } })
        local tol = TOL[dtn]
        local res = { out = out, gq = gs[1], gk = gs[2], gv = gs[3] }
        for _, key in ipairs({ "out", "gq", "gk", "gv" }) do
          if c.sample then close_sampled(res[key], c[key], c.sample, tol, key)
          else close_list(res[key], c[key], tol, key) end
        end
      end)
    end
  end
end)

describe("scaled_dot_product_attention", function()
  local function r(...) return T.randn(...):double():requires_grad_() end
  it("passes gradcheck (float64): plain, causal, masks, L != S", function()
    local q, k, v = r(2, 3, 4), r(2, 5, 4), r(2, 5, 3)
    assert.is_true(T.autograd.gradcheck(function(a, b, c) return F.scaled_dot_product_attention(a, b, c) end, { q, k, v }))
    local q2, k2, v2 = r(1, 2, 70, 3), r(1, 2, 70, 3), r(1, 2, 70, 2)
    assert.is_true(T.autograd.gradcheck(function(a, b, c)
      return F.scaled_dot_product_attention(a, b, c, { is_causal = true }) end, { q2, k2, v2 }))
    local fm = T.randn(3, 5):double()
    assert.is_true(T.autograd.gradcheck(function(a, b, c)
      return F.scaled_dot_product_attention(a, b, c, { attn_mask = fm, scale = 0.7 }) end, { q, k, v }))
  end)
  it("regenerates its dropout mask in the backward (gradcheck under a fixed seed)", function()
    local q, k, v = r(2, 6, 4), r(2, 7, 4), r(2, 7, 3)
    assert.is_true(T.autograd.gradcheck(function(a, b, c)
      T.manual_seed(11)
      return F.scaled_dot_product_attention(a, b, c, { dropout_p = 0.3 }) end, { q, k, v }))
  end)
  it("dropout: repeatable under manual_seed, drops about p, 0 at p = 1", function()
    local q, k = T.zeros(1, 200, 4), T.zeros(1, 200, 4)
    local v = T.ones(1, 200, 1)
    T.manual_seed(5)
    local a = F.scaled_dot_product_attention(q, k, v, { dropout_p = 0.25 })
    T.manual_seed(5)
    local b = F.scaled_dot_product_attention(q, k, v, { dropout_p = 0.25 })
    assert.is_true(T.equal(a, b))
    local c = F.scaled_dot_product_attention(q, k, v, { dropout_p = 0.25 })
    assert.is_false(T.equal(a, c))
    -- uniform attention over 200 keys of value 1: the mean of kept / (1 - p)
    assert.is_true(math.abs(a:mean():item() - 1) < 0.02)
    local z = F.scaled_dot_product_attention(q, k, v, { dropout_p = 1 })
    assert.equal(0, z:abs():sum():item())
  end)
  it("dropout keeps element idx when the top 24 bits of its Philox word are >= p (the documented rule)", function()
    -- the word of score element idx (row-major over batch, query, key) is
    -- word idx % 4 of block offset + idx / 4: what a float32 T.rand of the
    -- same size draws from the same offset, (w >> 8) / 2^24; rows longer
    -- than a batch of blocks and not multiples of 4 (B 2, L 7, S 301)
    for _, p in ipairs { 0.1, 0.5, 0.9 } do
      local q, k, v = T.randn(2, 7, 8), T.randn(2, 301, 8), T.randn(2, 301, 5)
      T.manual_seed(77)
      local got = F.scaled_dot_product_attention(q, k, v, { dropout_p = p })
      T.manual_seed(77)
      local u = T.rand(2, 7, 301)
      local keep = T.where(u:ge(p), T.full({ 1 }, 1 / (1 - p)), T.zeros(1))
      local w = T.softmax(T.matmul(q, k:transpose(2, 3)) / math.sqrt(8), 3)
      local want = T.matmul(w * keep, v)
      assert.is_true(T.allclose(got, want, 1e-4, 1e-5), "p = " .. p)
    end
  end)
  it("broadcasts the batch dims of query, key and value", function()
    local q, k, v = r(2, 3, 5, 4), r(1, 7, 4), r(3, 7, 2)
    local y = F.scaled_dot_product_attention(q, k, v)
    assert.same({ 2, 3, 5, 2 }, y.shape:totable())
    local ref = (q:matmul(k:transpose(-2, -1)) / 2):softmax(-1):matmul(v)
    assert.is_true((y - ref):abs():max():item() < 1e-12)
    local gs = T.autograd.grad({ y:sum() }, { k })
    local gr = T.autograd.grad({ ref:sum() }, { k })
    assert.is_true((gs[1] - gr[1]):abs():max():item() < 1e-12)
  end)
  it("gives NaN for a row whose keys are all masked, zeros with no keys", function()
    local q, k, v = T.randn(2, 3), T.randn(4, 3), T.randn(4, 2)
    local m = T.tensor({ { true, false, true, true }, { false, false, false, false } })
    local y = F.scaled_dot_product_attention(q, k, v, { attn_mask = m })
    assert.is_false(y[1][1]:item() ~= y[1][1]:item())
    assert.is_true(y[2][1]:item() ~= y[2][1]:item())
    local e = F.scaled_dot_product_attention(q, T.zeros(0, 3), T.zeros(0, 2))
    assert.same({ 2, 2 }, e.shape:totable())
    assert.equal(0, e:abs():sum():item())
  end)
  it("runs on meta tensors (shapes only)", function()
    local q = T.empty(2, 5, 4, { device = "meta" })
    local y = F.scaled_dot_product_attention(q, T.empty(2, 6, 4, { device = "meta" }), T.empty(2, 6, 3, { device = "meta" }))
    assert.same({ 2, 5, 3 }, y.shape:totable())
    assert.equal("meta", tostring(y.device))
  end)
  it("refuses bad input with clear errors", function()
    local q, k, v = T.randn(2, 3, 4), T.randn(2, 5, 4), T.randn(2, 5, 3)
    local function err(pat, f) local ok, e = pcall(f); assert.is_false(ok); assert.matches(pat, tostring(e)) end
    err("should not be set when is_causal", function()
      F.scaled_dot_product_attention(q, k, v, { attn_mask = T.ones(3, 5):bool(), is_causal = true }) end)
    err("unknown option 'causal'", function() F.scaled_dot_product_attention(q, k, v, { causal = true }) end)
    err("dropout_p has to be between 0 and 1", function() F.scaled_dot_product_attention(q, k, v, { dropout_p = 1.5 }) end)
    err("expected query %(%.%.%., L, E%)", function() F.scaled_dot_product_attention(q, T.randn(2, 5, 3), v) end)
    err("cannot be broadcast", function() F.scaled_dot_product_attention(q, k, v, { attn_mask = T.ones(4, 5):bool() }) end)
    err("dtype bool or float32", function() F.scaled_dot_product_attention(q, k, v, { attn_mask = T.ones(3, 5):long() }) end)
    err("expected key of dtype float32 or float64", function() F.scaled_dot_product_attention(q, k:long(), v) end)
    err("dtype float32 %(the input's%)", function() F.scaled_dot_product_attention(q, k:double(), v) end)
    err("at least 2 dims", function() F.scaled_dot_product_attention(T.randn(4), k, v) end)
    err("do not broadcast", function() F.scaled_dot_product_attention(T.randn(3, 3, 4), k, v) end)
    err("is_causal to be a boolean", function() F.scaled_dot_product_attention(q, k, v, { is_causal = 1 }) end)
    local qq = T.randn(2, 3, 4):requires_grad_()
    local y = F.scaled_dot_product_attention(qq, k, v)
    err("create_graph is not supported", function()
      T.autograd.grad({ y:sum() }, { qq }, { create_graph = true }) end)
  end)
end)

local function tensor(rec, dt)
  local t = T.tensor(rec.v, { dtype = T[rec.dtype] })
  t = #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
  if dt and t.dtype.is_floating_point then t = t:to(dt) end
  return t
end
local function close(got, rec, tol, what)
  assert(T.is_tensor(got), what .. ": not a tensor")
  assert.same(rec.shape, got.shape:totable(), what .. ": shape")
  close_list(got, rec.v, tol, what)
end
local MTOL = { float32 = 1e-4, float64 = 1e-9 }

-- the modules the fixtures build, in ember's spelling
local function build(c)
  if c.cls == "TransformerEncoder" then
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0 }), 2,
      { norm = nn.LayerNorm(8) })
  elseif c.cls == "Transformer" then
    return nn.Transformer(c.ctor.opts)
  end
  return nn[c.cls](c.ctor.args[1], c.ctor.args[2], c.ctor.opts)
end

describe("MultiheadAttention and the transformer layers against PyTorch 1.13", function()
  for _, c in ipairs(cases.modules) do
    for _, dtn in ipairs({ "float64", "float32" }) do
      it(c.name .. " " .. dtn, function()
        local dt = T[dtn]
        local m = build(c)
        m = dt == T.float64 and m:double() or m:float()
        -- PyTorch's state_dict, by name: every key and shape must match
        local sd = {}
        for _, e in ipairs(c.state) do sd[e.k] = tensor(e.t, dt) end
        m:load_state_dict(sd)
        local xs = {}
        for k, rec in ipairs(c.x) do xs[k] = tensor(rec, dt) end
        local diff = {}
        for _, k in ipairs(c.diff) do
          xs[k]:requires_grad_()
          diff[#diff + 1] = xs[k]
        end
        local function resolve(a)
          if type(a) ~= "table" then return a end
          if a.t then return xs[a.t] end
          local o = {}
          for k, v in pairs(a) do o[k] = resolve(v) end
          return o
        end
        local args = {}
        for i, a in ipairs(c.fargs) do args[i] = resolve(a) end
        local outs = { m(unpack(args, 1, #c.fargs)) }
        local tol = MTOL[dtn]
        for k = 1, #c.out do close(outs[k], c.out[k], tol, "output " .. k) end
        local params, names = {}, {}
        for n, p in m:named_parameters() do params[#params + 1], names[#names + 1] = p, n end
        local wrt = {}
        for i, x in ipairs(diff) do wrt[i] = x end
        for _, p in ipairs(params) do wrt[#wrt + 1] = p end
        local gs = T.autograd.grad({ outs[1] }, wrt, { grad_outputs = { tensor(c.g, dt) }, allow_unused = true })
        for i = 1, #diff do close(gs[i], c.gin[i], tol, "input gradient " .. i) end
        local want = {}
        for _, e in ipairs(c.gparams) do want[e.k] = e.t end
        assert.equal(#c.gparams, #params, "number of parameters")
        for i, n in ipairs(names) do
          local g = gs[#diff + i] or T.zeros_like(params[i])
          assert(want[n], "no PyTorch parameter named " .. n)
          close(g, want[n], tol, "gradient of " .. n)
        end
      end)
    end
  end
end)

describe("the attention modules", function()
  local function err(pat, f) local ok, e = pcall(f); assert.is_false(ok); assert.matches(pat, tostring(e)) end
  it("generate_square_subsequent_mask: -inf above the diagonal", function()
    local m = nn.Transformer.generate_square_subsequent_mask(3)
    assert.same({ { 0, -math.huge, -math.huge }, { 0, 0, -math.huge }, { 0, 0, 0 } }, m:tolist())
    assert.equal(T.float32, m.dtype)
    assert.equal(T.float64, nn.Transformer.generate_square_subsequent_mask(2, { dtype = T.float64 }).dtype)
  end)
  it("MultiheadAttention: PyTorch's parameters, weights nil without need_weights", function()
    local m = nn.MultiheadAttention(8, 2)
    local sd = m:state_dict()
    assert.same({ 24, 8 }, sd.in_proj_weight.shape:totable())
    assert.equal(0, sd.in_proj_bias:abs():sum():item())
    assert.equal(0, sd["out_proj.bias"]:abs():sum():item())
    local m2 = nn.MultiheadAttention(8, 2, { kdim = 3, vdim = 5, bias = false, add_bias_kv = true })
    local sd2 = m2:state_dict()
    assert.is_nil(sd2.in_proj_weight)
    assert.same({ 8, 3 }, sd2.k_proj_weight.shape:totable())
    assert.same({ 8, 5 }, sd2.v_proj_weight.shape:totable())
    assert.same({ 1, 1, 8 }, sd2.bias_k.shape:totable())
    assert.is_nil(sd2.in_proj_bias)
    assert.is_nil(sd2["out_proj.bias"])
    local x = T.randn(4, 2, 8)
    local y, w = m(x, x, x, { need_weights = false })
    assert.is_nil(w)
    local y2, w2 = m(x, x, x)
    assert.is_true((y - y2):abs():max():item() < 1e-5)
    assert.same({ 2, 4, 4 }, w2.shape:totable())
    -- the causal hint takes the fused kernel's causal path
    local cm = nn.Transformer.generate_square_subsequent_mask(4)
    local yc = m(x, x, x, { attn_mask = cm, is_causal = true, need_weights = false })
    local yr = m(x, x, x, { attn_mask = cm })
    assert.is_true((yc - yr):abs():max():item() < 1e-5)
    -- dropout inside the fused kernel, repeatable under a seed
    local md = nn.MultiheadAttention(8, 2, { dropout = 0.5 })
    T.manual_seed(3)
    local a = md(x, x, x, { need_weights = false })
    T.manual_seed(3)
    local b = md(x, x, x, { need_weights = false })
    assert.is_true(T.equal(a, b))
    md:eval()
    local e1 = md(x, x, x, { need_weights = false })
    assert.is_true(T.equal(e1, md(x, x, x, { need_weights = false })))
  end)
  it("transformer stacks: copies of the layer, PyTorch's names", function()
    local layer = nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8, bias = false })
    local enc = nn.TransformerEncoder(layer, 2)
    local sd = enc:state_dict({ torch_names = true })
    assert.is_not_nil(sd["layers.0.self_attn.in_proj_weight"])
    assert.is_not_nil(sd["layers.1.linear1.weight"])
    assert.is_nil(sd["layers.0.linear1.bias"])
    assert.is_nil(sd["layers.0.norm1.bias"])
    assert.is_not_nil(enc:state_dict()["layers.2.norm2.weight"])
    T.no_grad(function() enc.layers[1].linear1.weight:fill_(0) end)
    assert.is_true(enc.layers[2].linear1.weight:abs():sum():item() > 0)
    assert.is_true(layer.linear1.weight:abs():sum():item() > 0)
    local t = nn.Transformer(4, 2, { num_encoder_layers = 1, num_decoder_layers = 2, dim_feedforward = 8,
      activation = function(x) return x:tanh() end, batch_first = true })
    local y = t(T.randn(2, 5, 4), T.randn(2, 3, 4))
    assert.same({ 2, 3, 4 }, y.shape:totable())
    assert.is_not_nil(t:state_dict({ torch_names = true })["decoder.layers.1.multihead_attn.in_proj_weight"])
    assert.is_not_nil(t:state_dict()["encoder.norm.weight"])
  end)
  it("refuses bad input with clear errors", function()
    err("divisible by num_heads", function() nn.MultiheadAttention(6, 4) end)
    err("unknown option 'heads'", function() nn.MultiheadAttention(6, 2, { heads = 2 }) end)
    local m = nn.MultiheadAttention(4, 2)
    local x = T.randn(3, 2, 4)
    err("need attn_mask if specifying the is_causal hint", function() m(x, x, x, { is_causal = true }) end)
    err("unknown option 'mask'", function() m(x, x, x, { mask = x }) end)
    err("expecting embedding dimension of 4", function() m(T.randn(3, 2, 5), x, x) end)
    err("2%-d attn_mask is", function() m(x, x, x, { attn_mask = T.zeros(2, 3) }) end)
    err("expected key_padding_mask of shape %(2, 3%)", function() m(x, x, x, { key_padding_mask = T.zeros(3, 2):bool() }) end)
    err("activation should be relu/gelu", function() nn.TransformerEncoderLayer(4, 2, { activation = "tanh" }) end)
    err("unknown option 'nheads'", function() nn.Transformer({ nheads = 2 }) end)
    local l = nn.TransformerEncoderLayer(4, 2, { dim_feedforward = 8 })
    err("unknown option 'mask'", function() l(x, { mask = x }) end)
    err("unexpected argument #5", function() l(x, nil, nil, false, 1) end)
    err("num_layers must be a positive number", function() nn.TransformerEncoder(l, 0) end)
  end)
end)

describe("a PyTorch checkpoint of a TransformerEncoder", function()
  it("loads by PyTorch's names (layers.0...) and gives torch's output", function()
    local c
    for _, x in ipairs(cases.modules) do if x.cls == "TransformerEncoder" then c = x end end
    local sd = T.load_torch("tests/fixtures/torch/transformer_encoder.pt")
    assert.is_not_nil(sd["layers.0.self_attn.in_proj_weight"])
    local m = build(c):double()
    local ok = pcall(function() m:load_state_dict(sd) end)
    assert.is_false(ok) -- ember's own names are layers.1...
    m:load_state_dict(sd, { torch_names = true })
    local y = m(tensor(c.x[1], T.float64), tensor(c.x[2], T.float64))
    close(y, c.out[1], 1e-9, "output")
  end)
end)
