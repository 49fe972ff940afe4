-- nn ops: second derivatives against PyTorch (tests/fixtures/
-- nn_double_cases.lua from gen_nn_double.py). Per case: the first
-- gradients g_i of <op(x), v> taken with create_graph, then the gradients
-- of sum_i <g_i, u_i> w.r.t. every x_i and w.r.t. v, all to 1e-10.
local T = require "ember"
local unpack = table.unpack or unpack  -- Lua 5.4 has only table.unpack
local F = T.nn.functional
local cases = dofile("tests/fixtures/nn_double_cases.lua")

local function tensor(rec)
  if not rec then return nil end
  local t = T.tensor(rec.v, { dtype = T[rec.dtype] })
  return #rec.shape == 0 and t:reshape({}) or t:reshape(rec.shape)
end

local function close(got, rec, what)
  local want = tensor(rec)
  assert(got ~= nil, what .. ": missing")
  assert.same(want.shape:totable(), got.shape:totable(), what .. ": shape")
  local d = (got:detach() - want):abs():max():item()
  assert(d <= 1e-10 * math.max(1, want:abs():max():item()), string.format("%s: max difference %g", what, d))
end

local ops = {
  conv2d = function(c, x, w, b) return F.conv2d(x, w, b, c.opts) end,
  conv1d = function(c, x, w, b) return F.conv1d(x, w, b, c.opts) end,
  gelu = function(_, x) return F.gelu(x) end,
  gelu_tanh = function(_, x) return F.gelu(x, "tanh") end,
  tanh = function(_, x) return F.tanh(x) end,
  sigmoid = function(_, x) return F.sigmoid(x) end,
  softmax = function(c, x) return F.softmax(x, c.opts.dim) end,
  log_softmax = function(c, x) return F.log_softmax(x, c.opts.dim) end,
  linear = function(_, x, w, b) return F.linear(x, w, b) end,
  cross_entropy = function(c, x)
    return F.cross_entropy(x, tensor(c.consts.target), { weight = tensor(c.opts.weight),
      reduction = c.opts.reduction, ignore_index = c.opts.ignore_index, label_smoothing = c.opts.label_smoothing })
  end,
  cross_entropy_prob = function(c, x, t)
    return F.cross_entropy(x, t, { weight = tensor(c.opts.weight), reduction = c.opts.reduction,
      label_smoothing = c.opts.label_smoothing })
  end,
  nll_loss = function(c, x)
    return F.nll_loss(x, tensor(c.consts.target), { weight = tensor(c.opts.weight) })
  end,
  mse_loss = function(c, a, b) return F.mse_loss(a, b, { reduction = c.opts and c.opts.reduction }) end,
  binary_cross_entropy_with_logits = function(c, a, b)
    return F.binary_cross_entropy_with_logits(a, b, { pos_weight = tensor(c.opts.pos_weight) })
  end,
  layer_norm = function(c, x, w, b) return F.layer_norm(x, c.opts.shape, w, b) end,
  batch_norm = function(_, x, w, b) return F.batch_norm(x, nil, nil, w, b, true) end,
  avg_pool2d = function(c, x)
    return F.avg_pool2d(x, c.opts.kernel, { stride = c.opts.stride, padding = c.opts.padding })
  end,
  max_pool2d = function(c, x) return F.max_pool2d(x, c.opts.kernel) end,
  embedding = function(c, w) return F.embedding(tensor(c.consts.ids), w, { padding_idx = c.opts.padding_idx }) end,
}

describe("nn ops: double backward against PyTorch", function()
  for i, c in ipairs(cases) do
    it(string.format("%s #%d", c.op, i), function()
      local xs = {}
      for k, rec in ipairs(c.x) do xs[k] = tensor(rec):requires_grad_(true) end
      local v = tensor(c.v):requires_grad_(true)
      local y = ops[c.op](c, unpack(xs))
      close(y, c.out, "output")
      local g = T.autograd.grad({ y }, xs, { grad_outputs = { v }, create_graph = true, allow_unused = true })
      local s
      for k = 1, #xs do
        if c.g[k] then
          close(g[k], c.g[k], "first gradient " .. k)
          local term = (g[k] * tensor(c.u[k])):sum()
          s = s and s + term or term
        end
      end
      local targets = {}
      for k = 1, #xs do targets[k] = xs[k] end
      targets[#xs + 1] = v
      local h = T.autograd.grad({ s }, targets, { allow_unused = true })
      for k = 1, #xs do close(h[k] or T.zeros_like(xs[k]), c.hx[k], "second derivative w.r.t. input " .. k) end
      close(h[#xs + 1] or T.zeros_like(v), c.hv, "second derivative w.r.t. the grad_output")
    end)
  end
end)
