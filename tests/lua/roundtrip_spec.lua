-- The ember -> PyTorch state_dict round trip of issue 18's modules: each
-- module is built in ember (its own initialisation, float64), run in eval
-- mode, and saved with T.save_torch (state_dict with PyTorch's names, the
-- inputs, the outputs); tests/fixtures/gen_roundtrip.py --check loads each
-- state_dict strictly into the same PyTorch 1.13 class and compares the
-- outputs. (rnn_spec.lua does the same for the recurrent layers.)
local T = require "ember"
local nn = T.nn
local unpack = table.unpack or unpack

local D, H, FF = 8, 2, 16
local function r(...) return T.randn(T.Size({ ... }), { dtype = T.float64 }) end
local function enc_layer(o)
  o = o or {}
  o.dim_feedforward, o.dropout = FF, 0
  return nn.TransformerEncoderLayer(D, H, o)
end

-- name, module, inputs, forward -> list of outputs (the names, options and
-- calls of gen_roundtrip.py's CASES)
local CASES = {
  { "mha", function() return nn.MultiheadAttention(D, H, { batch_first = true }) end,
    function() return { r(2, 3, D), r(2, 5, D), r(2, 5, D) } end,
    function(m, q, k, v) return { m(q, k, v) } end },
  { "mha_kv", function() return nn.MultiheadAttention(D, H, { kdim = 6, vdim = 5, add_bias_kv = true }) end,
    function() return { r(3, 2, D), r(4, 2, 6), r(4, 2, 5) } end,
    function(m, q, k, v) return { m(q, k, v, { average_attn_weights = false }) } end },
  { "enc_layer", function() return enc_layer { batch_first = true, norm_first = true, activation = "gelu" } end,
    function() return { r(2, 5, D) } end,
    function(m, x) return { m(x) } end },
  { "dec_layer", function() return nn.TransformerDecoderLayer(D, H, { dim_feedforward = FF, dropout = 0 }) end,
    function() return { r(4, 2, D), r(6, 2, D) } end,
    function(m, t, mem) return { m(t, mem) } end },
  { "encoder", function() return nn.TransformerEncoder(enc_layer(), 2, { norm = nn.LayerNorm(D) }) end,
    function() return { r(5, 2, D) } end,
    function(m, x) return { m(x) } end },
  { "transformer", function()
      return nn.Transformer { d_model = D, nhead = H, num_encoder_layers = 2, num_decoder_layers = 1,
        dim_feedforward = FF, dropout = 0, batch_first = true } end,
    function() return { r(2, 5, D), r(2, 3, D) } end,
    function(m, s, t) return { m(s, t) } end },
  { "groupnorm", function() return nn.GroupNorm(2, 4) end,
    function() return { r(3, 4, 5) } end,
    function(m, x) return { m(x) } end },
  { "convt2d", function() return nn.ConvTranspose2d(2, 3, 3, { stride = 2, padding = 1, output_padding = 1 }) end,
    function() return { r(1, 2, 4, 4) } end,
    function(m, x) return { m(x) } end },
  { "convt1d", function() return nn.ConvTranspose1d(2, 3, 3, { stride = 2, bias = false }) end,
    function() return { r(2, 2, 5) } end,
    function(m, x) return { m(x) } end },
  -- running statistics made by two training forwards, then eval
  { "batchnorm3d", function()
      local m = nn.BatchNorm3d(3)
      m:double()
      m(r(2, 3, 2, 2, 2)); m(r(2, 3, 2, 2, 2) * 3 + 1)
      return m
    end,
    function() return { r(2, 3, 2, 2, 2) } end,
    function(m, x) return { m(x) } end },
  { "instancenorm1d", function()
      local m = nn.InstanceNorm1d(3, { affine = true, track_running_stats = true })
      m:double()
      m(r(2, 3, 6) * 2 - 1)
      return m
    end,
    function() return { r(2, 3, 6) } end,
    function(m, x) return { m(x) } end },
  { "prelu", function()
      local m = nn.PReLU(3)
      T.no_grad(function() m.weight:copy_(T.tensor({ 0.1, -0.5, 2 }, { dtype = T.float32 })) end)
      return m
    end,
    function() return { r(2, 3, 4) } end,
    function(m, x) return { m(x) } end },
  -- ids are 1-based in ember (padding_idx 3 is PyTorch's 2); gen_roundtrip.py subtracts 1
  { "embbag", function() return nn.EmbeddingBag(10, 4, { mode = "max" }) end,
    function() return { T.randint(1, 11, { 3, 5 }) } end,
    function(m, ids) return { m(ids) } end },
  { "embedding", function() return nn.Embedding(7, 3, { padding_idx = 3 }) end,
    function() return { T.tensor({ { 1, 3, 7 }, { 2, 2, 3 } }) } end,
    function(m, ids) return { m(ids) } end },
}

describe("state_dict round trip ember -> PyTorch (issue 18's modules)", function()
  it("each module's state_dict loads strictly into PyTorch's class and gives ember's outputs", function()
    local py = "env -u LD_PRELOAD /usr/bin/python3"
    local ok0 = os.execute(py .. " -c 'import torch' >/dev/null 2>&1")
    if ok0 ~= true and ok0 ~= 0 then
      pending("/usr/bin/python3 cannot import torch: PyTorch's side not checked")
      return
    end
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    T.manual_seed(18)
    for _, c in ipairs(CASES) do
      local m = c[2]()
      m:double()
      m:eval()
      local x = c[3]()
      local outs = T.no_grad(function() return c[4](m, unpack(x)) end)
      T.save_torch(dir .. "/" .. c[1] .. ".pt", { sd = m:state_dict { torch_names = true }, x = x, out = outs })
    end
    local h = io.popen(py .. " tests/fixtures/gen_roundtrip.py --check " .. dir .. " 2>&1")
    local got = h:read("*a")
    h:close()
    os.execute("rm -rf " .. dir)
    assert(got:match(#CASES .. " passed, 0 failed"), "gen_roundtrip.py --check:\n" .. got)
  end)
end)
