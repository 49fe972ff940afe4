-- Differences from PyTorch 1.13's torch.nn.Module found by the sixth round
-- of differential tests (ember against torch on the same modules), each
-- with torch's behaviour in a comment. Children of a Sequential are named
-- from 1 in ember (torch's "0" is "1"): that shift is not a difference.
local T = require "ember"
local U = require "specutil"
local err = U.err
local nn = T.nn

local function names(it)
  local o = {}
  for n in it do o[#o + 1] = n end
  return table.concat(o, ",")
end

describe("difftest round 6: nn.Module API (torch 1.13)", function()
  it("register_parameter / register_buffer / add_module check the name", function()
    local B = nn.Module:extend("B")
    function B:init()
      self:register_buffer("a", T.zeros(1))
      self.w = nn.Parameter(T.ones(2))
    end
    local b = B()
    -- KeyError: 'buffer name can\'t contain "."'
    err(function() b:register_buffer("a.b", T.zeros(1)) end, "buffer name can't contain \".\"")
    -- KeyError: 'buffer name can\'t be empty string ""'
    err(function() b:register_buffer("", T.zeros(1)) end, "buffer name can't be empty string")
    -- KeyError: "attribute 'w' already exists"
    err(function() b:register_buffer("w", T.zeros(1)) end, "attribute 'w' already exists")
    -- TypeError: buffer name should be a string. Got int
    err(function() b:register_buffer(1, T.zeros(1)) end, "buffer name should be a string")
    -- TypeError: cannot assign 'int' object to buffer 'x' (torch Tensor or None required)
    err(function() b:register_buffer("x", 5) end, "cannot assign a number to buffer 'x'")
    err(function() b:register_parameter("a.b", nil) end, "parameter name can't contain \".\"")
    err(function() b:register_parameter("", nil) end, "parameter name can't be empty string")
    err(function() b:register_parameter("a", nn.Parameter(T.zeros(1))) end, "attribute 'a' already exists")
    -- KeyError: 'module name can\'t contain ".", got: a.b'
    err(function() b:add_module("a.b", nn.ReLU()) end, "module name can't contain \".\", got: a.b")
    err(function() b:add_module("", nn.ReLU()) end, "module name can't be empty string")
    err(function() b:add_module("w", nn.ReLU()) end, "attribute 'w' already exists")
    -- a method's name is an attribute too (torch: hasattr(self, "forward"))
    err(function() b:register_buffer("forward", T.zeros(1)) end, "attribute 'forward' already exists")
    -- ModuleDict's d["d.e"] = m goes through add_module
    local md = nn.ModuleDict()
    err(function() md["d.e"] = nn.ReLU() end, "module name can't contain \".\"")
    -- re-registering under the same kind is allowed
    b:register_buffer("a", T.ones(3))
    assert.equal("3", tostring(b.a:numel()))
    assert.equal("w,a", table.concat(b:state_dict():keys(), ","))
  end)

  it("assigning to a buffer or submodule name follows torch's __setattr__", function()
    local D = nn.Module:extend("D")
    function D:init()
      self.l = nn.Linear(1, 1)
      self.w = nn.Parameter(T.ones(1))
      self:register_buffer("bb", T.ones(1))
    end
    local d = D()
    -- TypeError: cannot assign 'int' as buffer 'bb' (torch.Tensor or None expected)
    err(function() d.bb = 5 end, "cannot assign a number as buffer 'bb'")
    -- a Parameter assigned to a submodule's name replaces the submodule
    d.l = nn.Parameter(T.ones(1))
    assert.equal("w,l", names(d:named_parameters()))
    assert.equal("", names(d:named_children()))
    -- a module assigned to a buffer's name replaces the buffer
    d = D()
    d.bb = nn.ReLU()
    assert.equal("l,bb", names(d:named_children()))
    assert.equal("", names(d:named_buffers()))
    -- a Parameter assigned to a buffer's name becomes a parameter
    d = D()
    d.bb = nn.Parameter(T.zeros(2))
    assert.equal("w,bb,l.weight,l.bias", names(d:named_parameters()))
    assert.equal("w,bb,l.weight,l.bias", table.concat(d:state_dict():keys(), ","))
  end)

  it("register_module, get_submodule, get_parameter, get_buffer", function()
    local m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Sequential(nn.Linear(3, 1)))
    -- m.get_submodule('2.0') -> Linear (ember's names are 1-based)
    assert.equal("Linear", m:get_submodule("3.1").__name)
    assert.equal(m, m:get_submodule(""))
    -- AttributeError: Sequential has no attribute `3`
    err(function() m:get_submodule("4") end, "Sequential has no attribute `4`")
    -- AttributeError: `weight` is not an nn.Module
    err(function() m:get_submodule("1.weight") end, "`weight` is not an nn.Module")
    assert.equal(m[3][1].weight, m:get_parameter("3.1.weight"))
    err(function() m:get_parameter("3.1.nope") end, "Linear has no attribute `nope`")
    err(function() m:get_parameter("2.running_mean") end, "`running_mean` is not an nn.Parameter")
    err(function() m:get_parameter("6.weight") end, "Sequential has no attribute `6`")
    assert.equal(m[2].running_mean, m:get_buffer("2.running_mean"))
    err(function() m:get_buffer("2.weight") end, "`weight` is not a buffer")
    err(function() m:get_buffer("2.nope") end, "BatchNorm1d has no attribute `nope`")
    local b = nn.Module:extend("Holder")()
    b:register_module("r", nn.ReLU())
    assert.equal("r", names(b:named_children()))
    err(function() b:register_module("r.x", nn.ReLU()) end, "module name can't contain \".\"")
  end)

  it("named_modules / named_parameters / named_buffers take prefix and remove_duplicate", function()
    local m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    -- [n for n, _ in m.named_modules(prefix='root')]
    assert.equal("root,root.1,root.2", names(m:named_modules({ prefix = "root" })))
    assert.equal("root.1.weight,root.1.bias,root.2.weight,root.2.bias",
      names(m:named_parameters({ prefix = "root" })))
    assert.equal("r.running_mean,r.running_var,r.num_batches_tracked",
      names(m[2]:named_buffers({ prefix = "r", recurse = false })))
    local l = nn.Linear(2, 2)
    local s = nn.Sequential(l, l)
    assert.equal(",1", names(s:named_modules()))
    -- s.named_modules(remove_duplicate=False) -> ['', '0', '1']
    assert.equal(",1,2", names(s:named_modules({ remove_duplicate = false })))
    err(function() s:named_modules({ memo = {} }) end, "unknown option 'memo'")
  end)

  it("half / bfloat16 convert floating parameters and buffers, not integer buffers", function()
    local bn = nn.BatchNorm1d(3):half()
    -- torch.float16 torch.float16 torch.int64
    assert.equal(T.float16, bn.weight.dtype)
    assert.equal(T.float16, bn.running_mean.dtype)
    assert.equal(T.int64, bn.num_batches_tracked.dtype)
    assert.equal(T.bfloat16, nn.Linear(2, 2):bfloat16().weight.dtype)
  end)

  it("to() refuses an integer dtype and converts the gradients", function()
    local l = nn.Linear(2, 2)
    -- TypeError: nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=torch.int64
    err(function() l:to(T.int64) end, "only floating point or complex dtypes are accepted")
    assert.equal(T.float32, l.weight.dtype)
    l(T.ones(1, 2)):sum():backward()
    l:double()
    -- l.weight.grad.dtype -> torch.float64 (the gradient is kept and converted)
    assert.equal(T.float64, l.weight.grad.dtype)
    assert.equal(4, l.weight.grad:sum():item())
  end)

  it("load_state_dict names every bad value and copies nothing when one is bad", function()
    local t = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    local before = t[1].weight:clone()
    local sd = {}
    for k, v in pairs(t:state_dict()) do sd[k] = v:clone() end
    sd["1.weight"] = T.ones(3, 2)
    sd["2.weight"] = T.zeros(5)
    sd["2.bias"] = 5
    -- torch: size mismatch for 1.weight: copying a param with shape torch.Size([5]) from checkpoint,
    -- the shape in current model is torch.Size([1, 3]).
    -- While copying the parameter named "1.bias", expected torch.Tensor or Tensor-like object ...
    err(function() t:load_state_dict(sd) end, "size mismatch for 2.weight")
    err(function() t:load_state_dict(sd) end, "2.bias is not a tensor")
    assert.is_true(T.equal(before, t[1].weight))
  end)

  it("ParameterList / ParameterDict keep a frozen parameter frozen", function()
    -- nn.ParameterList([nn.Parameter(t, requires_grad=False)])[0].requires_grad -> False
    local pl = nn.ParameterList({ nn.Parameter(T.ones(2), false) })
    assert.is_false(pl[1].requires_grad)
    local pd = nn.ParameterDict({ a = nn.Parameter(T.ones(2), false) })
    assert.is_false(pd.a.requires_grad)
    -- a plain tensor becomes Parameter(t): requires grad
    assert.is_true(nn.ParameterList({ T.ones(2) })[1].requires_grad)
  end)
end)
