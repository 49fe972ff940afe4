-- Differences from PyTorch 1.13 found by the tenth round of differential
-- tests of nn.MultiheadAttention and the transformer modules (54 cases with
-- torch's weights loaded by name, float64 and float32: outputs and the
-- gradients of the inputs and of every parameter all agreed, batch_first,
-- norm_first, activation strings, functions and modules, layer_norm_eps,
-- kdim/vdim, bias_kv, zero_attn, bool and float masks 2-d and 3-d, float
-- key_padding_mask, unbatched inputs, stacks with and without a final norm,
-- custom encoders). What differed: MultiheadAttention's forward took no
-- positional masks (PyTorch's order), and errors raised inside a layer or a
-- stack named a line of attention.lua instead of the caller's.
local T = require "ember"
local U = require "specutil"
local err = U.err
local nn = T.nn

-- x[i] = sin(0.37 i + c) * a, row-major (the generator's formula)
local function wave(shape, c, a)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = math.sin(0.37 * i + c) * a end
  return T.tensor(v, { dtype = T.float64 }):reshape(shape)
end
local function close(got, want, tol)
  local w = T.tensor(want, { dtype = T.float64 })
  local d = (got:detach():double():reshape(-1) - w):abs():max():item()
  assert(d <= tol, string.format("max difference %g (tolerance %g)", d, tol))
end
-- the error of f, which must fail
local function msg_of(f)
  local ok, e = pcall(f)
  assert(not ok, "expected an error")
  return tostring(e)
end
local HERE = "difftest10_transformer_spec.lua:%d+: "

describe("difftest round 10: transformer (torch 1.13)", function()
  it("MultiheadAttention's forward takes PyTorch's positional arguments", function()
    -- torch: m(x, x, x, kpm, False) and m(x, x, x, kpm, True, am, False)
    -- (key_padding_mask, need_weights, attn_mask, average_attn_weights);
    -- ember said "expected an options table, got userdata"
    local m = nn.MultiheadAttention(4, 2):double()
    T.no_grad(function()
      local k = 0
      for _, p in m:named_parameters() do
        p:copy_(wave(p.shape:totable(), 0.5 * k, 0.5))
        k = k + 1
      end
    end)
    local x = wave({ 3, 2, 4 }, 1.0, 1.0)
    local kpm = T.tensor({ { false, false, true }, { false, false, false } })
    local am = T.tensor({ { false, true, false }, { false, false, false }, { true, false, false } })
    local out, w = m(x, x, x, kpm, false)
    assert.is_nil(w)
    close(out, { 0.202060161365, 0.921636925844, 0.76933470722, -0.121999284993, -0.0834903290197,
      0.497157517142, 0.977908722527, 0.340303613286, -0.378902849926, 0.0560630330999, 1.19333173661,
      0.820463606597, -0.127508707979, 0.491813763004, 1.02095804775, 0.353454071925, 0.216786115854,
      0.905830017637, 0.751742276641, -0.109382645304, -0.0651145610937, 0.504035611302, 0.960780250542,
      0.330319386367 }, 1e-10)
    out, w = m(x, x, x, kpm, true, am, false)
    close(out, { 0.160803617552, 0.964306112405, 0.818329019953, -0.155783683704, -0.00973811730347,
      0.498310639804, 0.904365621821, 0.325813945807, -0.378902849926, 0.0560630330999, 1.19333173661,
      0.820463606597, -0.127508707979, 0.491813763004, 1.02095804775, 0.353454071925, -0.448664635729,
      0.0348531634453, 1.25924725574, 0.853626810645, -0.0704203107437, 0.547743937099, 0.974012209998,
      0.289010587088 }, 1e-10)
    assert.same({ 2, 2, 3, 3 }, w.shape:totable())
    close(w, { 1, 0, 0, 0.054451323025, 0.945548676975, 0, 0, 1, 0, 1, 0, 0, 0.00687472176619,
      0.993125278234, 0, 0, 1, 0, 0.428994484374, 0, 0.571005515626, 0.318554736728, 0.378302316215,
      0.303142947057, 0, 0.269706384505, 0.730293615495, 0.529545062498, 0, 0.470454937502,
      0.335405933858, 0.449007153467, 0.215586912675, 0, 0.390858579193, 0.609141420807 }, 1e-10)
    -- the same as the options table; nil holds a place; too many is refused
    local o2 = m(x, x, x, { key_padding_mask = kpm, attn_mask = am, average_attn_weights = false })
    assert.is_true((o2 - out):abs():max():item() < 1e-12)
    local o3, w3 = m(x, x, x, nil, false)
    assert.is_nil(w3)
    assert.is_true((o3 - m(x, x, x, { need_weights = false })):abs():max():item() < 1e-12)
    err(function() m(x, x, x, nil, true, nil, true, false, 1) end, "takes at most 8 arguments")
  end)

  it("errors inside a layer, a stack or a Transformer name the caller's line", function()
    -- torch raises from the attention too (with a traceback); ember named
    -- attention.lua:340 (the layer's call of its MultiheadAttention)
    local l = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 12, dropout = 0 })
    local e = msg_of(function()
      local y = l(T.randn(3, 2, 8), T.randn(2, 2))
      return y
    end)
    -- torch: The shape of the 2D attn_mask is torch.Size([2, 2]), but should be (3, 3).
    assert.truthy(e:find(HERE .. "MultiheadAttention.forward: the shape of the 2%-d attn_mask"), e)
    e = msg_of(function()
      local y = nn.TransformerEncoder(l, 2)(T.randn(3, 2, 6))
      return y
    end)
    -- torch: was expecting embedding dimension of 8, but got 6
    assert.truthy(e:find(HERE .. "MultiheadAttention.forward: was expecting embedding dimension of 8, but got 6"), e)
    local tr = nn.Transformer(8, 2, { num_encoder_layers = 1, num_decoder_layers = 1, dim_feedforward = 8 })
    e = msg_of(function()
      local y = tr(T.randn(3, 2, 8), T.randn(4, 2, 8), { memory_key_padding_mask = T.zeros(2, 4):bool() })
      return y
    end)
    -- torch: expecting key_padding_mask shape of (2, 3), but got torch.Size([2, 4])
    assert.truthy(e:find(HERE .. "MultiheadAttention.forward: expected key_padding_mask of shape %(2, 3%)"), e)
    -- constructors: the layer's attention and activation
    e = msg_of(function()
      local y = nn.TransformerEncoderLayer(8, 3, {})
      return y
    end)
    -- torch: AssertionError: embed_dim must be divisible by num_heads
    assert.truthy(e:find(HERE .. "MultiheadAttention: embed_dim %(8%) must be divisible by num_heads %(3%)"), e)
    e = msg_of(function()
      local y = nn.TransformerDecoderLayer(8, 2, { activation = "tanh" })
      return y
    end)
    -- torch: RuntimeError: activation should be relu/gelu, not tanh
    assert.truthy(e:find(HERE .. "TransformerDecoderLayer: activation should be relu/gelu"), e)
  end)

  it("a key or value of the wrong width is refused by name, not by linear", function()
    -- torch: mat1 and mat2 shapes cannot be multiplied (from its in-projection);
    -- ember said the same from inside attention.lua
    local m = nn.MultiheadAttention(8, 2, { kdim = 3, vdim = 5 })
    local e = msg_of(function()
      local y = m(T.randn(4, 2, 8), T.randn(6, 2, 4), T.randn(6, 2, 5))
      return y
    end)
    assert.truthy(e:find(HERE .. "MultiheadAttention.forward: expected key and value of embedding dimensions 3 %(kdim%) "
      .. "and 5 %(vdim%), got 4 and 5"), e)
    local mb = nn.MultiheadAttention(8, 2, { batch_first = true })
    e = msg_of(function()
      local y = mb(T.randn(2, 4, 8), T.randn(2, 6, 8), T.randn(2, 6, 7), { need_weights = false })
      return y
    end)
    assert.truthy(e:find(HERE .. "MultiheadAttention.forward: expected key and value of embedding dimensions 8 %(kdim%) "
      .. "and 8 %(vdim%), got 8 and 7"), e)
  end)

  it("a stack refuses a non-integer number of layers", function()
    -- torch: TypeError: 'float' object cannot be interpreted as an integer;
    -- ember built one layer and kept num_layers = 1.5
    local l = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 12 })
    err(function() nn.TransformerEncoder(l, 1.5) end, "TransformerEncoder: num_layers must be a positive number, an integer, got 1.5")
    err(function() nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, {}), 2.5) end,
      "TransformerDecoder: num_layers must be a positive number, an integer, got 2.5")
    assert.equal(2, #nn.TransformerEncoder(l, 2).layers)
  end)
end)
