-- nn.Module and the list containers against PyTorch 1.13 (a differential
-- test's findings R1-R12): shared layers, list assignment and editing,
-- tied parameters through to(), frozen parameters, None buffers, train
-- overrides, printing, weight_norm, samplers. The literals in comments
-- are torch 1.13's output for the same program (0-based names there).
local T = require "ember"
local nn = T.nn

local function names(iter)
  local out = {}
  for n in iter do out[#out + 1] = n end
  return out
end
local function shapes(sd)
  local out = {}
  for _, k in ipairs(sd:keys()) do out[#out + 1] = k .. ":" .. table.concat(sd[k].shape:totable(), "x") end
  return out
end

describe("Module traversal with a layer used twice (R1)", function()
  -- lin = nn.Linear(2,2); s = nn.Sequential(lin, nn.ReLU(), lin)
  it("lists it once in modules, children, named_modules and apply; state_dict under both names", function()
    local lin = nn.Linear(2, 2)
    local s = nn.Sequential(lin, nn.ReLU(), lin)
    -- torch: ['', '0', '1'] 2 ['0.weight', '0.bias', '2.weight', '2.bias']
    assert.same({ "", "1", "2" }, names(s:named_modules()))
    assert.equal(3, #s:modules())
    assert.equal(2, #s:children())
    assert.same({ "1", "2" }, names(s:named_children()))
    assert.same({ "0.weight", "0.bias", "2.weight", "2.bias" }, s:state_dict { torch_names = true }:keys())
    assert.equal(2, #s:parameters())
    local k = 0
    s:apply(function() k = k + 1 end)
    assert.equal(3, k) -- torch: [3]
  end)
end)

describe("Sequential and ModuleList editing (R2-R4)", function()
  it("seq[i] = m replaces child i", function()
    local sq = nn.Sequential(nn.Linear(1, 1), nn.Linear(1, 1))
    sq[1] = nn.Linear(1, 5)
    -- torch: 2 ['0.weight', '0.bias', '1.weight', '1.bias'] [(5, 1), (5,), (1, 1), (1,)]
    assert.equal(2, sq:len())
    assert.same({ "0.weight:5x1", "0.bias:5", "1.weight:1x1", "1.bias:1" }, shapes(sq:state_dict { torch_names = true }))
    sq[-1] = nn.Linear(1, 3)
    assert.same({ 3, 1 }, sq[2].weight.shape:totable())
    assert.has_error(function() sq[3] = nn.ReLU() end, "Sequential: index 3 is out of range (2 modules)")
    assert.has_error(function() sq[-1] = 5 end, "Sequential: list[-1] must be a Module, got number")
  end)

  it("ml[i] = m replaces the registered module", function()
    local ml = nn.ModuleList { nn.Linear(1, 1) }
    ml[1] = nn.Linear(1, 5)
    -- torch: torch.Size([5, 1]) torch.Size([5, 1])
    assert.same({ 5, 1 }, ml[1].weight.shape:totable())
    assert.same({ 5, 1 }, ml:parameters()[1].shape:totable())
    assert.same({ "1.weight", "1.bias" }, ml:state_dict():keys())
    ml:double()
    assert.equal(T.float64, ml[1].weight.dtype)
    assert.equal(1, #ml)
  end)

  it("extend, insert, pop, negative indices and slice", function()
    local a, b, c = nn.Linear(1, 1), nn.ReLU(), nn.Tanh()
    local sq = nn.Sequential(a)
    assert.is_true(rawequal(sq, sq:extend { b, c }))
    assert.equal(3, sq:len())
    assert.equal(3, #sq)
    assert.is_true(rawequal(sq[-1], c))
    assert.is_true(rawequal(sq[-3], a))
    assert.is_nil(sq[-4])
    -- torch: sq[1:3] is Sequential((1): ReLU() (2): Tanh()); here renumbered from 1
    local sl = sq:slice(2, 3)
    assert.equal("Sequential", sl.__name)
    assert.is_true(rawequal(sl[1], b) and rawequal(sl[2], c))
    assert.equal(2, sq:slice(-2):len())
    assert.equal(0, sq:slice(3, 2):len())
    -- torch: Sequential(Linear, ReLU).insert(1, Tanh()) -> (0): Linear (1): Tanh (2): ReLU
    local s2 = nn.Sequential(nn.Linear(1, 1), nn.ReLU())
    s2:insert(2, nn.Tanh())
    assert.equal("Sequential(\n  (1): Linear(in_features=1, out_features=1, bias=true)\n  (2): Tanh()\n  (3): ReLU()\n)",
      tostring(s2))
    local popped = s2:pop(1)
    assert.equal("Linear", popped.__name)
    assert.equal("Sequential(\n  (1): Tanh()\n  (2): ReLU()\n)", tostring(s2))
    assert.equal("ReLU", s2:pop().__name)
    assert.equal(1, s2:len())
    assert.has_error(function() s2:pop(5) end, "Sequential.pop: index 5 is out of range (1 modules)")
    local ml = nn.ModuleList { nn.ReLU(), nn.Tanh() }
    ml:insert(2, nn.Sigmoid())
    -- torch: ModuleList((0): ReLU() (1): Sigmoid() (2): Tanh())
    assert.equal("ModuleList(\n  (1): ReLU()\n  (2): Sigmoid()\n  (3): Tanh()\n)", tostring(ml))
    ml:extend(nn.ModuleList { nn.ReLU() })
    assert.equal(4, ml:len())
    assert.equal("ModuleList", ml:slice(1, 2).__name)
    assert.has_error(function() ml:extend { 5 } end, "ModuleList.extend: entry 1 is a number, not a Module")
  end)

  it("extend on a class makes a subclass; on another instance it is an error", function()
    local MySeq = nn.Sequential:extend("MySeq")
    local m = MySeq(nn.ReLU())
    assert.equal("MySeq", m.__name)
    assert.equal(1, #m)
    assert.has_error(function() nn.Linear(1, 1):extend("X") end,
      'Module.extend: extend(name) makes a subclass and is called on a class (nn.Linear:extend("Name")), '
      .. "not on an instance of Linear")
  end)
end)

describe("to() and parameters (R5-R9)", function()
  it("keeps tied parameters tied and frozen ones frozen", function()
    local N = nn.Module:extend("N")
    function N:init()
      self.a = nn.Linear(3, 3)
      self.b = nn.Linear(3, 3)
      self.b.weight = self.a.weight
    end
    local n = N()
    -- torch: R5 3 True / after double: R5 3 True
    assert.equal(3, #n:parameters())
    n:double()
    assert.equal(3, #n:parameters())
    assert.is_true(rawequal(n.a.weight, n.b.weight))
    assert.equal(T.float64, n.b.weight.dtype)
    local lin = nn.Linear(2, 2)
    local s = nn.Sequential(lin, lin):double()
    assert.is_true(rawequal(s[1], s[2]))
    assert.equal(2, #s:parameters())
    -- torch: l.weight.requires_grad_(False); l.double() -> False
    local l = nn.Linear(2, 2)
    l.weight:requires_grad_(false)
    l:double()
    assert.is_false(l.weight.requires_grad)
    assert.is_true(l.bias.requires_grad)
    assert.equal(2, #l:parameters())
  end)

  it("nn.Parameter(t, false) registers a frozen parameter; a plain tensor is a field", function()
    local M = nn.Module:extend("M")
    function M:init()
      self.w = nn.Parameter(T.ones(2), false)
      self.t = T.ones(3)
    end
    local m = M()
    -- torch: ['w'] ['w']; after double: False torch.float64
    assert.same({ "w" }, names(m:named_parameters()))
    assert.same({ "w" }, m:state_dict():keys())
    assert.is_false(m.w.requires_grad)
    m:double()
    assert.is_false(m.w.requires_grad)
    assert.equal(T.float64, m.w.dtype)
    assert.same({ "w" }, names(m:named_parameters()))
    -- a frozen parameter of one module assigned to another stays a parameter
    local l = nn.Linear(2, 2)
    l.weight:requires_grad_(false)
    local o = nn.Linear(2, 2)
    o.extra = l.weight
    assert.same({ "weight", "bias", "extra" }, names(o:named_parameters()))
    assert.is_false(o.extra.requires_grad)
    -- a plain tensor given to register_parameter becomes a parameter requiring grad
    o:register_parameter("p", T.ones(1))
    assert.is_true(o.p.requires_grad)
    o:register_parameter("q", nn.Parameter(T.ones(1), false))
    assert.is_false(o.q.requires_grad)
    local t = T.ones(2):requires_grad_(true)
    local f = nn.Parameter(t, false)
    assert.is_false(f.requires_grad)
    assert.is_true(t.requires_grad)
  end)

  it("a None buffer is skipped by state_dict and load_state_dict", function()
    local B = nn.Module:extend("B")
    function B:init()
      self.l = nn.Linear(1, 1)
      self:register_buffer("x", nil)
    end
    local b = B()
    -- torch: ['l.weight', 'l.bias'] <All keys matched successfully>
    assert.same({ "l.weight", "l.bias" }, b:state_dict():keys())
    local missing, unexpected = b:load_state_dict(b:state_dict())
    assert.same({}, missing)
    assert.same({}, unexpected)
  end)

  it("requires_grad_ sets every parameter and returns the module", function()
    local m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    -- torch: True [False, False, False, False]
    assert.is_true(rawequal(m, m:requires_grad_(false)))
    for _, p in ipairs(m:parameters()) do assert.is_false(p.requires_grad) end
    m:requires_grad_()
    for _, p in ipairs(m:parameters()) do assert.is_true(p.requires_grad) end
    assert.has_error(function() m:requires_grad_(1) end, "requires_grad_: expected a boolean, got number")
  end)
end)

describe("train and load_state_dict (R11, norm layers, key order)", function()
  it("train/eval call each child's own train", function()
    local C = nn.Module:extend("C")
    function C:train(mode)
      rawset(self, "called", mode)
      return nn.Module.train(self, mode)
    end
    local P = nn.Sequential(C())
    P:eval()
    -- torch: R11 True
    assert.is_false(P[1].called)
    assert.is_false(P[1].training)
    P:train()
    assert.is_true(P[1].called)
    -- torch: ValueError training mode is expected to be boolean
    assert.has_error(function() P:train(1) end, "train: expected mode to be a boolean, got number")
  end)

  it("BatchNorm loads a dict without num_batches_tracked (set to 0)", function()
    local bn = nn.BatchNorm1d(3)
    local sd = {}
    for k, v in pairs(bn:state_dict()) do if k ~= "num_batches_tracked" then sd[k] = v end end
    bn.num_batches_tracked:fill_(5)
    -- torch (a dict without metadata): <All keys matched successfully> tensor(0)
    bn:load_state_dict(sd)
    assert.equal(0, bn.num_batches_tracked:item())
    -- torch: missing_keys=['bias', 'running_mean', 'running_var']
    local missing = nn.BatchNorm1d(3):load_state_dict({ weight = T.ones(3) }, false)
    assert.same({ "bias", "running_mean", "running_var" }, missing)
  end)

  it("lists missing keys in module order", function()
    local l = nn.Sequential(nn.Linear(1, 1), nn.BatchNorm1d(1))
    local missing, unexpected = l:load_state_dict({ zz = T.ones(1), aa = T.ones(1) }, { strict = false, torch_names = true })
    -- torch: missing_keys=['0.weight', '0.bias', '1.weight', '1.bias', '1.running_mean', '1.running_var'],
    -- unexpected_keys=['zz', 'aa'] (a Lua table has no order: sorted here)
    assert.same({ "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var" }, missing)
    assert.same({ "aa", "zz" }, unexpected)
  end)
end)

describe("registration order of the transformer layers (R10)", function()
  it("registers dropout1 before dropout2", function()
    -- torch: self_attn,linear1,dropout,linear2,norm1,norm2,dropout1,dropout2
    assert.same({ "self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2" },
      names(nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16 }):named_children()))
    -- torch: self_attn,multihead_attn,linear1,dropout,linear2,norm1,norm2,norm3,dropout1,dropout2,dropout3
    assert.same({ "self_attn", "multihead_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "norm3",
      "dropout1", "dropout2", "dropout3" }, names(nn.TransformerDecoderLayer(8, 2, { dim_feedforward = 16 }):named_children()))
  end)
end)

describe("printing as PyTorch (R12)", function()
  -- the right-hand texts are torch 1.13's, with ember's documented
  -- differences: booleans true/false, names and dims 1-based
  it("puts extra_repr lines and children on their own lines", function()
    local E = nn.Module:extend("E")
    function E:init() self.l = nn.Identity() end
    function E:extra_repr() return "k=1" end
    assert.equal("E(\n  k=1\n  (l): Identity()\n)", tostring(E()))
    assert.equal("Sequential(\n  (1): Sequential(\n    (1): Linear(in_features=1, out_features=1, bias=true)\n  )\n  (2): ReLU()\n)",
      tostring(nn.Sequential(nn.Sequential(nn.Linear(1, 1)), nn.ReLU())))
    assert.equal("ParameterList(  (1): Parameter containing: [ember.float32 of size 2])",
      tostring(nn.ParameterList { T.ones(2) }))
    assert.equal("ParameterList(\n    (1): Parameter containing: [ember.float32 of size 2]\n"
      .. "    (2): Parameter containing: [ember.float32 of size 3x2]\n)", tostring(nn.ParameterList { T.ones(2), T.ones(3, 2) }))
  end)

  it("prints the layers' arguments as torch's extra_repr", function()
    local cases = {
      { nn.Conv1d(2, 3, 5, { stride = 2 }), "Conv1d(2, 3, kernel_size=(5,), stride=(2,))" },
      { nn.Conv2d(1, 4, 3, { stride = 2, padding = 1, bias = false }),
        "Conv2d(1, 4, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=false)" },
      { nn.Conv2d(2, 4, { 3, 5 }, { dilation = 2, groups = 2, padding_mode = "reflect", padding = 1 }),
        "Conv2d(2, 4, kernel_size=(3, 5), stride=(1, 1), padding=(1, 1), dilation=(2, 2), groups=2, padding_mode=reflect)" },
      { nn.Conv2d(1, 4, 3, { padding = "same" }), "Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=same)" },
      { nn.Conv3d(1, 2, 2), "Conv3d(1, 2, kernel_size=(2, 2, 2), stride=(1, 1, 1))" },
      { nn.LayerNorm(8), "LayerNorm((8,), eps=1e-05, elementwise_affine=true)" },
      { nn.LayerNorm { 4, 5 }, "LayerNorm((4, 5), eps=1e-05, elementwise_affine=true)" },
      { nn.Dropout(0.25), "Dropout(p=0.25, inplace=false)" },
      { nn.EmbeddingBag(10, 3, { mode = "sum" }), "EmbeddingBag(10, 3, mode=sum)" },
      { nn.MaxUnpool1d(2), "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))" },
      { nn.Unflatten(2, { 1, 3 }), "Unflatten(dim=2, unflattened_size=(1, 3))" }, -- torch: dim=1
      { nn.Unfold(2), "Unfold(kernel_size=2, dilation=1, padding=0, stride=1)" },
      { nn.Fold({ 4, 4 }, 2), "Fold(output_size=(4, 4), kernel_size=2, dilation=1, padding=0, stride=1)" },
      { nn.ConstantPad1d(1, 0), "ConstantPad1d(padding=(1, 1), value=0)" },
      { nn.LSTM(3, 4, { num_layers = 2, batch_first = true, bidirectional = true }),
        "LSTM(3, 4, num_layers=2, batch_first=true, bidirectional=true)" },
      { nn.RNN(3, 4, { nonlinearity = "relu" }), "RNN(3, 4)" },
      { nn.MultiheadAttention(4, 2),
        "MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=4, out_features=4, bias=true)\n)" },
    }
    for _, c in ipairs(cases) do assert.equal(c[2], tostring(c[1])) end
  end)
end)

describe("nn.utils.weight_norm (torch 1.13's g/v reparametrisation)", function()
  local function list(t) return t:reshape(-1):tolist() end
  it("replaces weight by weight_g and weight_v, recomputed before each forward", function()
    local m = nn.Linear(3, 2)
    T.no_grad(function() m.weight:copy_(T.tensor { { 1, 2, 2 }, { 0, 3, 4 } }); m.bias:fill_(0.5) end)
    assert.is_true(rawequal(m, nn.utils.weight_norm(m)))
    -- torch: bias:2,weight_g:2x1,weight_v:2x3 / bias,weight_g,weight_v / [3.0, 5.0]
    assert.same({ "bias", "weight_g", "weight_v" }, names(m:named_parameters()))
    assert.same({ "bias:2", "weight_g:2x1", "weight_v:2x3" }, shapes(m:state_dict()))
    assert.same({ 3, 5 }, list(m.weight_g))
    T.no_grad(function() m.weight_g:mul_(2) end)
    local y = m(T.ones(1, 3))
    assert.same({ 10.5, 14.5 }, list(y)) -- torch: [10.5, 14.5]
    y:sum():backward()
    -- torch: [1.6666666269302368, 1.399999976158142]
    -- [0.888888955116272, -0.22222208976745605, -0.22222208976745605, 2.0, 0.3199999928474426, -0.24000000953674316]
    assert.is_true(T.allclose(m.weight_g.grad:reshape(-1), T.tensor { 1.6666666269302368, 1.399999976158142 }, 1e-6, 1e-6))
    assert.is_true(T.allclose(m.weight_v.grad:reshape(-1), T.tensor { 0.888888955116272, -0.22222208976745605,
      -0.22222208976745605, 2.0, 0.3199999928474426, -0.24000000953674316 }, 1e-6, 1e-6))
    assert.has_error(function() nn.utils.weight_norm(m) end,
      "weight_norm: Cannot register two weight_norm hooks on the same parameter weight")
    nn.utils.remove_weight_norm(m)
    -- torch: ['bias', 'weight'] [2.0, 4.0, 4.0, 0.0, 6.0, 8.0]
    assert.same({ "bias", "weight" }, names(m:named_parameters()))
    assert.same({ 2, 4, 4, 0, 6, 8 }, list(m.weight))
    assert.is_true(m.weight.requires_grad)
    assert.has_error(function() nn.utils.remove_weight_norm(m) end,
      "remove_weight_norm: weight_norm of 'weight' not found in Linear")
  end)

  it("takes a 1-based dim, false for one norm over the whole tensor", function()
    local function conv()
      local c = nn.Conv1d(2, 2, 2)
      T.no_grad(function() c.weight:copy_(T.arange(8, { dtype = T.float32 }):reshape { 2, 2, 2 }) end)
      return c
    end
    -- torch dim=None: 11.832159996032715 torch.Size([])
    local c = nn.utils.weight_norm(conv(), "weight", false)
    assert.same({}, c.weight_g.shape:totable())
    assert.is_true(math.abs(c.weight_g:item() - 11.832159996032715) < 1e-5)
    -- torch dim=1: [6.480740547180176, 9.899495124816895] torch.Size([1, 2, 1])
    local c2 = nn.utils.weight_norm(conv(), "weight", 2)
    assert.same({ 1, 2, 1 }, c2.weight_g.shape:totable())
    assert.is_true(T.allclose(c2.weight_g:reshape(-1), T.tensor { 6.480740547180176, 9.899495124816895 }, 1e-6, 1e-6))
    assert.has_error(function() nn.utils.weight_norm(conv(), "weight", 4) end,
      "weight_norm: dim 4 is out of range for a 3-d parameter (1-based; false: the whole tensor)")
  end)
end)

describe("Sequential and ModuleList arithmetic (PyTorch's __add__/__mul__)", function()
  local T = require "ember"
  local nn = T.nn
  it("a + b concatenates, seq * n repeats, the same module objects", function()
    local s = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    local t = s + s
    assert.equal(4, #t)
    assert.equal("Sequential", t.__name)
    assert.is_true(rawequal(t[3], s[1]))
    local u, v = s * 3, 2 * s
    assert.equal(6, #u)
    assert.equal(4, #v)
    assert.is_true(rawequal(u[5], s[1]))
    -- the repeated modules share their parameters: one set in parameters()
    assert.equal(2, #u:parameters())
    local x = T.randn(4, 2)
    local ref = s(s(x))
    assert.is_true(T.allclose(v(x), ref))
    local l = nn.ModuleList({ nn.ReLU() })
    assert.equal(2, #(l + { nn.Tanh() }))
    assert.equal(2, #(l + l))
    assert.has_error(function() return s + l end, "Sequential: + supports only another Sequential, got ModuleList")
    assert.has_error(function() return s * 0 end, "Sequential: non-positive multiplication factor 0 is not supported")
    assert.has_error(function() return s * 1.5 end, "Sequential: * needs an integer number of repeats, got 1.5")
    assert.has_error(function() return l * 2 end)
    assert.has_error(function() return nn.ReLU() + nn.ReLU() end)
  end)
end)

describe("T.data samplers, BatchSampler, ConcatDataset (1-based positions)", function()
  local D = T.data
  local ds = D.TensorDataset(T.arange(10, { dtype = T.float32 }):reshape { 10, 1 }, T.arange(10))
  it("SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler", function()
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, D.SequentialSampler(ds):indices():tolist())
    local r = D.RandomSampler(ds, { seed = 3 })
    local a, b = r:indices(), r:indices()
    assert.same(a:tolist(), D.RandomSampler(ds, { seed = 3 }):indices():tolist()) -- same seed, same first pass
    assert.is_false(T.equal(a, b))                                                  -- the generator carries on
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, a:sort():tolist())
    -- torch: num_samples > len without replacement: whole permutations, then a cut one
    local long = D.RandomSampler(ds, { num_samples = 13 }):indices()
    assert.equal(13, long:numel())
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, long:narrow(1, 1, 10):sort():tolist())
    local rep = D.RandomSampler(ds, { replacement = true, num_samples = 40 })
    assert.equal(40, rep:len())
    local v = rep:indices()
    assert.is_true(v:min():item() >= 1 and v:max():item() <= 10)
    assert.same({ 2, 4, 6 }, D.SubsetRandomSampler({ 2, 4, 6 }, { seed = 1 }):indices():sort():tolist())
    assert.same({ 3, 3, 3 }, D.WeightedRandomSampler({ 0, 0, 1 }, 3):indices():tolist())
    assert.has_error(function() D.RandomSampler(ds, { num_samples = 0 }) end,
      "RandomSampler: num_samples should be a positive integer value, but got num_samples=0")
  end)

  it("DataLoader takes sampler= and batch_sampler=", function()
    local bs = D.BatchSampler(D.SequentialSampler(ds), 3, false)
    local L = D.DataLoader(ds, { batch_sampler = bs })
    assert.equal(4, L:len())
    local got = {}
    for _, y in L:iter() do got[#got + 1] = table.concat(y:tolist(), ",") end
    assert.same({ "0,1,2", "3,4,5", "6,7,8", "9" }, got)
    assert.equal(3, D.DataLoader(ds, { batch_sampler = D.BatchSampler(D.SequentialSampler(ds), 3, true) }):len())
    -- torch: ValueError batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last
    assert.has_error(function() D.DataLoader(ds, { batch_sampler = bs, shuffle = true }) end,
      "DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
    local L2 = D.DataLoader(ds, { batch_size = 4, sampler = D.SubsetRandomSampler({ 1, 2, 3 }, { seed = 0 }) })
    local n = 0
    for _, y in L2:iter() do n = n + 1; assert.same({ 0, 1, 2 }, y:sort():tolist()) end
    assert.equal(1, n)
  end)

  it("ConcatDataset", function()
    local c = D.ConcatDataset { ds, D.TensorDataset(T.ones(2, 1), T.tensor { 100, 101 }) }
    assert.equal(12, c:len())
    assert.same({ 10, 12 }, c.cumulative_sizes)
    assert.equal(9, c:get(10)[2]:item())
    assert.equal(100, c:get(11)[2]:item())
    assert.equal(101, c:get(-1)[2]:item())
    assert.has_error(function() c:get(13) end, "ConcatDataset: index 13 is out of range (12 items)")
  end)
end)
