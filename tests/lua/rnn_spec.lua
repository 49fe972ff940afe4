-- The recurrent layers (lua/ember/nn/rnn.lua over engine/src/ops/rnn.c;
-- docs/rnn.md): outputs, states and every gradient against PyTorch 1.13
-- (tests/fixtures/rnn_cases.lua from gen_rnn.py) with the generator's
-- weights loaded by name, gradcheck of the C op in float64, the
-- nn.utils.rnn tools, dropout between layers, and bad input.
local T = require "ember"
local nn = T.nn
local U = nn.utils.rnn
local C = require "ember.core"
local cases = dofile("tests/fixtures/rnn_cases.lua")

local function tensor(rec)
  local t = T.tensor(rec.v, { dtype = T[rec.dtype] })
  return #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
end

local TOL = { float32 = 3e-5, float64 = 1e-11 }
local function close(got, rec, what)
  local want = tensor(rec)
  assert(T.is_tensor(got), what .. ": not a tensor")
  assert.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  assert.equal(want.dtype, got.dtype, what .. ": dtype")
  if want:numel() == 0 then return end
  local d = (got:detach() - want):abs():max():item()
  local tol = TOL[rec.dtype] * math.max(1, want:abs():max():item())
  assert(d <= tol, string.format("%s: max difference %g (tolerance %g)", what, d, tol))
end

local function build(c)
  local dt = T[c.dtype]
  local o = {}
  for k, v in pairs(c.opts) do o[k] = v end
  o.dtype = dt
  local m = nn[c.cls](3, 4, o)
  local sd = {}
  for k, rec in pairs(c.weights) do sd[k] = tensor(rec) end
  m:load_state_dict(sd)
  return m
end

describe("recurrent layers against PyTorch 1.13", function()
  for i, c in ipairs(cases) do
    it(string.format("#%d %s %s", i, c.name, c.dtype), function()
      local m = build(c)
      local x = tensor(c.x):requires_grad_()
      local hx
      if c.hx then
        local hs = {}
        for k, rec in ipairs(c.hx) do hs[k] = tensor(rec):requires_grad_() end
        hx = #hs == 2 and hs or hs[1]
      end
      local outs
      local cell = c.cls:match("Cell$")
      if cell then
        outs = { m(x, hx) }
      else
        local inp = x
        if c.lengths then
          inp = U.pack_padded_sequence(x, c.lengths, { batch_first = c.opts.batch_first,
            enforce_sorted = c.enforce_sorted })
        end
        local out, hn = m(inp, hx)
        if c.lengths then out = out.data end
        outs = { out }
        if T.is_tensor(hn) then outs[2] = hn else outs[2], outs[3] = hn[1], hn[2] end
      end
      assert.equal(#c.outs, #outs)
      local loss
      for k, rec in ipairs(c.outs) do
        close(outs[k], rec, "output " .. k)
        local l = (outs[k] * tensor(c.vs[k])):sum()
        loss = loss and loss + l or l
      end
      loss:backward()
      close(x.grad, c.gx, "grad input")
      if c.hx then
        local hs = T.is_tensor(hx) and { hx } or hx
        for k, rec in ipairs(c.ghx) do close(hs[k].grad, rec, "grad hx " .. k) end
      end
      local n = 0
      for name, rec in pairs(c.grads) do
        close(m._parameters[name].grad, rec, "grad " .. name)
        n = n + 1
      end
      assert.equal(#m._param_names, n)
    end)
  end
end)

describe("recurrent layers: the module", function()
  it("has PyTorch's parameter names, shapes and init range", function()
    T.manual_seed(3)
    local m = nn.LSTM(5, 6, { num_layers = 2, bidirectional = true, proj_size = 3 })
    local names = {}
    for _, k in ipairs(m._param_names) do names[#names + 1] = k end
    assert.same({ "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0",
      "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
      "weight_hr_l0_reverse", "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1",
      "weight_hr_l1", "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse",
      "bias_hh_l1_reverse", "weight_hr_l1_reverse" }, names)
    assert.same({ 24, 5 }, m.weight_ih_l0.shape:totable())
    assert.same({ 24, 3 }, m.weight_hh_l0.shape:totable())
    assert.same({ 3, 6 }, m.weight_hr_l0.shape:totable())
    assert.same({ 24, 6 }, m.weight_ih_l1.shape:totable())
    local k = 1 / math.sqrt(6)
    for _, n in ipairs(m._param_names) do
      assert.is_true(m._parameters[n]:abs():max():item() <= k)
    end
    local g = nn.GRU(2, 3, { bias = false })
    assert.same({ "weight_ih_l0", "weight_hh_l0" }, g._param_names)
    assert.same({ 9, 2 }, g.weight_ih_l0.shape:totable())
    local cell = nn.LSTMCell(2, 3)
    assert.same({ "weight_ih", "weight_hh", "bias_ih", "bias_hh" }, cell._param_names)
    assert.equal("LSTM(5, 6, proj_size=3, num_layers=2, bidirectional=true)", tostring(m):match("^[^\n]*"))
  end)

  it("returns output, h_n and for LSTM a table {h_n, c_n} of PyTorch's shapes", function()
    local x = T.randn(7, 2, 3)
    local o, h = nn.GRU(3, 4, { num_layers = 3 })(x)
    assert.same({ 7, 2, 4 }, o.shape:totable())
    assert.same({ 3, 2, 4 }, h.shape:totable())
    local o2, hc = nn.LSTM(3, 4, { batch_first = true, bidirectional = true, proj_size = 2 })(T.randn(2, 7, 3))
    assert.same({ 2, 7, 4 }, o2.shape:totable())
    assert.same({ 2, 2, 2 }, hc[1].shape:totable())
    assert.same({ 2, 2, 4 }, hc[2].shape:totable())
    -- the last step of the output is h_n of a one-directional layer
    local m = nn.RNN(3, 4)
    local y, hn = m(x)
    assert.is_true(T.allclose(y[7], hn[1]))
  end)

  it("feeds the state back: two halves equal the whole sequence", function()
    local m = nn.LSTM(3, 4, { num_layers = 2 })
    local x = T.randn(6, 2, 3)
    local y, hc = m(x)
    local y1, hc1 = m(x:narrow(1, 1, 3))
    local y2, hc2 = m(x:narrow(1, 4, 3), hc1)
    assert.is_true(T.allclose(T.cat({ y1, y2 }, 1), y, 1e-5, 1e-6))
    assert.is_true(T.allclose(hc2[1], hc[1], 1e-5, 1e-6))
    assert.is_true(T.allclose(hc2[2], hc[2], 1e-5, 1e-6))
  end)

  it("the cells are one step of the layer with the same weights", function()
    local cell, layer = nn.GRUCell(3, 4), nn.GRU(3, 4)
    layer:load_state_dict({ weight_ih_l0 = cell.weight_ih, weight_hh_l0 = cell.weight_hh,
      bias_ih_l0 = cell.bias_ih, bias_hh_l0 = cell.bias_hh })
    local x, h = T.randn(4, 2, 3), T.randn(2, 4)
    local y = layer(x, h:unsqueeze(1))
    for t = 1, 4 do h = cell(x[t], h) end
    assert.is_true(T.allclose(h, y[4], 1e-5, 1e-6))
    local lc = nn.LSTMCell(3, 4)
    local hh, cc = lc(T.randn(2, 3))
    assert.same({ 2, 4 }, hh.shape:totable())
    assert.same({ 2, 4 }, cc.shape:totable())
    local h1, c1 = lc(T.randn(3), { T.zeros(4), T.zeros(4) })
    assert.same({ 4 }, h1.shape:totable())
    assert.same({ 4 }, c1.shape:totable())
  end)

  it("dropout between layers: only in training, repeatable under manual_seed", function()
    local m = nn.LSTM(3, 4, { num_layers = 2, dropout = 0.5 })
    local x = T.randn(5, 2, 3)
    T.manual_seed(11)
    local a = m(x)
    T.manual_seed(11)
    local b = m(x)
    assert.is_true(T.equal(a, b))
    m:eval()
    local e1, e2 = m(x), m(x)
    assert.is_true(T.equal(e1, e2))
    assert.is_false(T.allclose(a, e1))
    -- p = 1 zeroes the second layer's input: its output is then the one of zeros
    local z = nn.GRU(3, 4, { num_layers = 2, dropout = 1 })
    local y = z(x)
    local top = nn.GRU(4, 4)
    top:load_state_dict({ weight_ih_l0 = z.weight_ih_l1, weight_hh_l0 = z.weight_hh_l1,
      bias_ih_l0 = z.bias_ih_l1, bias_hh_l0 = z.bias_hh_l1 })
    assert.is_true(T.allclose(y, top(T.zeros(5, 2, 4)), 1e-6, 1e-7))
  end)

  it("trains: the loss of a small LSTM falls under Adam", function()
    T.manual_seed(5)
    local m, head = nn.LSTM(2, 8), nn.Linear(8, 1)
    local ps = m:parameters()
    for _, p in ipairs(head:parameters()) do ps[#ps + 1] = p end
    local opt = T.optim.Adam(ps, { lr = 0.02 })
    local x = T.randn(6, 16, 2)
    local target = x:sum(1):sum(2, true) -- (16, 1): the sum of the sequence
    local first, last
    for step = 1, 60 do
      opt:zero_grad()
      local y = m(x)
      local loss = nn.functional.mse_loss(head(y[6]), target)
      loss:backward()
      opt:step()
      if step == 1 then first = loss:item() end
      last = loss:item()
    end
    assert.is_true(last < first * 0.5)
  end)

  it("empty sequences, an empty batch and input_size 0 give PyTorch's shapes", function()
    for _, cls in ipairs({ "RNN", "LSTM", "GRU" }) do
      local m = nn[cls](3, 4, cls == "LSTM" and { proj_size = 2 } or nil)
      local P = cls == "LSTM" and 2 or 4
      local x = T.randn(0, 2, 3):requires_grad_()
      local y, h = m(x, nil)
      h = T.is_tensor(h) and h or h[1]
      assert.same({ 0, 2, P }, y.shape:totable())
      assert.same({ 1, 2, P }, h.shape:totable())
      assert.is_true(T.equal(h, T.zeros(1, 2, P)))
      local y2 = m(T.randn(4, 0, 3))
      assert.same({ 4, 0, P }, y2.shape:totable())
      local z = nn[cls](0, 4)
      local y3 = z(T.randn(3, 2, 0):requires_grad_())
      y3:sum():backward()
      assert.same({ 3, 2, 4 }, y3.shape:totable())
      assert.is_true(T.isfinite(z.weight_hh_l0.grad):all():item())
    end
  end)

  it("runs on the meta device with the CPU's shapes", function()
    local m = nn.LSTM(3, 4, { bidirectional = true }):to("meta")
    local y, hc = m(T.empty(5, 2, 3, { device = "meta" }))
    assert.equal("meta", tostring(y.device))
    assert.same({ 5, 2, 8 }, y.shape:totable())
    assert.same({ 2, 2, 4 }, hc[2].shape:totable())
  end)
end)

describe("recurrent layers: gradcheck of the C op (float64)", function()
  local function r(...) return T.randn(T.Size { ... }, { dtype = T.float64 }):requires_grad_() end
  local modes = { "rnn_tanh", "rnn_relu", "lstm", "gru" }
  for _, mode in ipairs(modes) do
    for _, rev in ipairs({ false, true }) do
      for _, withlen in ipairs({ false, true }) do
        it(string.format("%s reverse=%s lengths=%s", mode, tostring(rev), tostring(withlen)), function()
          T.manual_seed(21)
          local G = mode == "lstm" and 4 or mode == "gru" and 3 or 1
          local H, P = 3, (mode == "lstm" and 2 or 3)
          local lstm = mode == "lstm"
          local ins = { r(4, 3, 2), r(3, P), lstm and r(3, H) or nil, r(G * H, 2), r(G * H, P),
            r(G * H), r(G * H), lstm and r(P, H) or nil }
          local lens = withlen and T.tensor({ 4, 1, 3 }) or nil
          local list = {}
          for k = 1, 8 do if ins[k] then list[#list + 1] = ins[k] end end
          local function f(...)
            local a, k = { ... }, 0
            local args = {}
            for j = 1, 8 do
              if ins[j] then k = k + 1; args[j] = a[k] end
            end
            local o, h, c = C._nn_rnn_layer(mode, args[1], args[2], args[3], args[4], args[5],
              args[6], args[7], args[8], lens, rev)
            local parts = { o:reshape(-1), h:reshape(-1) }
            if c then parts[3] = c:reshape(-1) end
            return T.cat(parts)
          end
          assert.is_true(T.autograd.gradcheck(f, list))
        end)
      end
    end
  end

  -- COMPOSED: rnn_math_spec runs these cases with the loop composed from
  -- ops (recorded step by step), whose backward is autograd's own
  if COMPOSED then
    it("create_graph works through the composed loop (a second derivative)", function()
      local x = T.randn(2, 1, 2, { dtype = T.float64 }):requires_grad_()
      local m = nn.GRU(2, 2):double()
      local g = T.autograd.grad((m(x) ^ 2):sum(), { x }, { create_graph = true })
      local gg = T.autograd.grad(g[1]:sum(), { x })
      assert.same({ 2, 1, 2 }, gg[1].shape:totable())
    end)
  else
    it("refuses create_graph through the fused backward", function()
      local x = T.randn(2, 1, 2, { dtype = T.float64 }):requires_grad_()
      local m = nn.GRU(2, 2):double()
      local y = m(x)
      assert.has_error(function() T.autograd.grad(y:sum(), { x }, { create_graph = true }) end,
        "GruLayerBackward0: the backward of a recurrent layer is fused and not differentiable (create_graph is not supported through it)")
    end)
  end
end)

describe("recurrent layers: the state_dict round trip into PyTorch", function()
  it("PyTorch loads ember's state_dict by name and gives ember's outputs (gen_rnn.py --check)", function()
    -- the modules of gen_rnn.py's ROUND
    local round = {
      { "lstm", "LSTM", { num_layers = 2, bidirectional = true, proj_size = 2 }, { 5, 2, 3 } },
      { "gru", "GRU", { batch_first = true, num_layers = 2 }, { 2, 5, 3 } },
      { "rnn", "RNN", { nonlinearity = "relu", bidirectional = true }, { 5, 2, 3 } },
      { "lstmcell", "LSTMCell", {}, { 2, 3 } },
      { "grucell", "GRUCell", { bias = false }, { 2, 3 } },
    }
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    T.manual_seed(9)
    for _, r in ipairs(round) do
      local m = nn[r[2]](3, 4, r[3])
      local x = T.randn(T.Size(r[4]))
      local a, b = m(x)
      local out = { a }
      if type(b) == "table" then out[2], out[3] = b[1], b[2] elseif b then out[2] = b end
      T.save_torch(dir .. "/" .. r[1] .. ".pt", { sd = m:state_dict { torch_names = true }, x = x, out = out })
    end
    local py = "env -u LD_PRELOAD /usr/bin/python3"
    local ok0 = os.execute(py .. " -c 'import torch' >/dev/null 2>&1")
    if ok0 ~= true and ok0 ~= 0 then
      os.execute("rm -rf " .. dir)
      pending("/usr/bin/python3 cannot import torch: PyTorch's side not checked")
      return
    end
    local h = io.popen(py .. " tests/fixtures/gen_rnn.py --check " .. dir .. " 2>&1")
    local got = h:read("*a")
    h:close()
    os.execute("rm -rf " .. dir)
    assert(got:match("5 passed, 0 failed"), "gen_rnn.py --check:\n" .. got)
  end)
end)

describe("nn.utils.rnn", function()
  local a, b, c = T.tensor { { 1, 2 }, { 3, 4 }, { 5, 6 } }, T.tensor { { 7, 8 } }, T.tensor { { 9, 10 }, { 11, 12 } }

  it("pad_sequence pads to the longest (time-major or batch_first, padding_value)", function()
    local p = U.pad_sequence({ a, b, c })
    assert.same({ 3, 3, 2 }, p.shape:totable())
    assert.same({ { 7, 8 }, { 0, 0 }, { 0, 0 } }, p:select(2, 2):tolist())
    local q = U.pad_sequence({ a, b }, { batch_first = true, padding_value = -1 })
    assert.same({ { { 1, 2 }, { 3, 4 }, { 5, 6 } }, { { 7, 8 }, { -1, -1 }, { -1, -1 } } }, q:tolist())
  end)

  it("pack_sequence / pad_packed_sequence: PyTorch's data, batch_sizes and indices", function()
    local p = U.pack_sequence({ b, a, c }, { enforce_sorted = false })
    assert.same({ 3, 2, 1 }, p.batch_sizes:tolist())
    assert.same({ 2, 3, 1 }, p.sorted_indices:tolist())
    assert.same({ 3, 1, 2 }, p.unsorted_indices:tolist())
    assert.same({ { 1, 2 }, { 9, 10 }, { 7, 8 }, { 3, 4 }, { 11, 12 }, { 5, 6 } }, p.data:tolist())
    local pad, lens = U.pad_packed_sequence(p, { batch_first = true, padding_value = 0, total_length = 4 })
    assert.same({ 1, 3, 2 }, lens:tolist())
    assert.same({ 3, 4, 2 }, pad.shape:totable())
    assert.same({ { 7, 8 }, { 0, 0 }, { 0, 0 }, { 0, 0 } }, pad[1]:tolist())
    assert.same({ { 9, 10 }, { 11, 12 }, { 0, 0 }, { 0, 0 } }, pad[3]:tolist())
  end)

  it("pack_padded_sequence enforces sorted lengths unless told not to", function()
    local x = U.pad_sequence({ b, a })
    assert.has_error(function() U.pack_padded_sequence(x, { 1, 3 }) end)
    local p = U.pack_padded_sequence(x, T.tensor { 1, 3 }, { enforce_sorted = false })
    assert.same({ 2, 1, 1 }, p.batch_sizes:tolist())
    assert.has_error(function() U.pack_padded_sequence(x, { 3, 0 }) end)
    assert.has_error(function() U.pack_padded_sequence(x, { 3 }) end)
    assert.has_error(function() U.pack_padded_sequence(x, { 3, 1 }, { zz = 1 }) end,
      "pack_padded_sequence: unknown option 'zz' (expected one of: batch_first, enforce_sorted)")
  end)

  it("gradients flow through packing into the padded input", function()
    local x = T.randn(3, 2, 2):requires_grad_()
    local p = U.pack_padded_sequence(x, { 3, 1 })
    p.data:sum():backward()
    assert.same({ { 1, 1 }, { 0, 0 } }, x.grad[2]:tolist())
  end)

  it("the packed layer matches running each sequence alone", function()
    local m = nn.LSTM(2, 3, { bidirectional = true, num_layers = 2 })
    local seqs = { T.randn(2, 2), T.randn(5, 2), T.randn(3, 2) }
    local out, hc = m(U.pack_sequence(seqs, { enforce_sorted = false }))
    local pad = U.pad_packed_sequence(out)
    for i, s in ipairs(seqs) do
      local y, hc1 = m(s)
      assert.is_true(T.allclose(pad:select(2, i):narrow(1, 1, s.shape[1]), y, 1e-5, 1e-6))
      assert.is_true(T.allclose(hc[1]:select(2, i), hc1[1], 1e-5, 1e-6))
      assert.is_true(T.allclose(hc[2]:select(2, i), hc1[2], 1e-5, 1e-6))
    end
  end)
end)

describe("recurrent layers: bad input", function()
  it("refuses unknown options and bad constructor values", function()
    assert.has_error(function() nn.LSTM(3, 4, { zz = 1 }) end)
    assert.has_error(function() nn.GRU(3, 4, { proj_size = 2 }) end)
    assert.has_error(function() nn.RNN(3, 4, { nonlinearity = "sigmoid" }) end,
      "RNN: Unknown nonlinearity 'sigmoid' (expected 'tanh' or 'relu')")
    assert.has_error(function() nn.LSTM(3, 4, { proj_size = 4 }) end,
      "LSTM: proj_size has to be smaller than hidden_size (got 4 >= 4)")
    assert.has_error(function() nn.LSTM(3, 4, { dropout = 2 }) end)
    assert.has_error(function() nn.LSTM(3, 4, { num_layers = 0 }) end)
    assert.has_error(function() nn.RNNCell(3, 4, { num_layers = 2 }) end)
    assert.equal(3, nn.GRU(3, 4, 3, { bidirectional = true }).num_layers) -- PyTorch's positional num_layers
    assert.has_error(function() nn.GRU(3, 4, 2, { num_layers = 2 }) end, "GRU: num_layers given twice")
    assert.has_error(function() nn.GRU(3, 4, 2, {}, 5) end)
  end)

  it("names the layer and the values on bad inputs and states", function()
    local m = nn.LSTM(3, 4)
    assert.has_error(function() m(T.randn(5, 2, 2)) end,
      "LSTM.forward: input.size(-1) must be equal to input_size. Expected 3, got 2")
    assert.has_error(function() m(T.randn(5, 2, 3, 1)) end,
      "LSTM.forward: Expected input to be 2D or 3D, got 4D instead")
    assert.has_error(function() m(T.randn(5, 2, 3), { T.zeros(1, 3, 4), T.zeros(1, 2, 4) }) end,
      "LSTM.forward: Expected hidden size (1, 2, 4), got [1, 3, 4] for hx")
    assert.has_error(function() m(T.randn(5, 2, 3), T.zeros(1, 2, 4)) end,
      "LSTM.forward: the initial state of an LSTM is a table {h0, c0}")
    assert.has_error(function() m(T.randn(5, 2, 3, { dtype = T.float64 })) end,
      "lstm: expected weight_ih to have dtype float64 (the input's), got float32")
    assert.has_error(function() nn.GRU(3, 4)(T.randn(5, 2, 3), { zz = 1 }) end,
      "GRU.forward: unknown option 'zz' (the initial state is a tensor)")
  end)

  it("the engine op checks shapes and lengths", function()
    local x, w = T.randn(4, 2, 3), T.randn(4, 3)
    assert.has_error(function() C._nn_rnn_layer("rnn_tanh", x, nil, nil, w, T.randn(4, 3)) end,
      "rnn_tanh: expected weight_hh of shape [4, 4], got [4, 3]")
    assert.has_error(function()
      C._nn_rnn_layer("rnn_tanh", x, nil, nil, w, T.randn(4, 4), nil, nil, nil, T.tensor { 5, 1 })
    end, "rnn_tanh: lengths[1] = 5 is outside 0..4 (the sequence length)")
    assert.has_error(function() C._nn_rnn_layer("gru", x, nil, nil, w, T.randn(4, 4)) end)
    assert.has_error(function() C._nn_rnn_layer("conv", x, nil, nil, w, w) end,
      "rnn_layer: unknown mode 'conv' (expected rnn_tanh, rnn_relu, lstm or gru)")
  end)
end)
