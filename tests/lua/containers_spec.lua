-- nn.ModuleDict, nn.ParameterList, nn.ParameterDict (issue 18 item 4;
-- lua/ember/nn/containers.lua): registration, order, state_dict names
-- (PyTorch's with torch_names), to(), errors.
local T = require "ember"
local nn = T.nn

describe("containers", function()
  it("ModuleDict keeps the order of {key, module} pairs and sorts a map's keys", function()
    local d = nn.ModuleDict { { "b", nn.Linear(2, 3) }, { "a", nn.ReLU() } }
    assert.same({ "b", "a" }, d:keys())
    assert.equal(2, d:len())
    assert.is_true(d:contains("a"))
    assert.equal(d.b, d:get("b"))
    local m = nn.ModuleDict { z = nn.Tanh(), y = nn.Linear(1, 1) }
    assert.same({ "y", "z" }, m:keys())
    d:set("c", nn.Linear(3, 1))
    d.e = nn.Sigmoid()
    assert.same({ "b", "a", "c", "e" }, d:keys())
    assert.same({ "b.weight", "b.bias", "c.weight", "c.bias" }, d:state_dict():keys())
    local popped = d:pop("a")
    assert.equal("ReLU()", tostring(popped))
    assert.same({ "b", "c", "e" }, d:keys())
    assert.equal(3, #d:values())
    assert.equal("b", d:items()[1][1])
    assert.has_error(function() d:set("x", 5) end, "ModuleDict: x is not a Module")
    assert.has_error(function() d:set("x.y", nn.ReLU()) end, "ModuleDict: key \"x.y\" can't contain \".\"")
    assert.has_error(function() d:forward() end)
    local y = d.c(d.b(T.ones(4, 2)))
    assert.same({ 4, 1 }, y.shape:totable())
  end)

  it("ParameterList registers its tensors as parameters named from 1 (0 for PyTorch)", function()
    local pl = nn.ParameterList { T.ones(2), T.zeros(3, 1) }
    pl:append(T.full({ 1 }, 5.5))
    assert.equal(3, pl:len())
    assert.is_true(pl[1].requires_grad)
    assert.same({ 3, 1 }, pl[2].shape:totable())
    local n = 0
    for _, p in ipairs(pl) do n = n + p:numel() end
    assert.equal(6, n)
    assert.same({ "1", "2", "3" }, pl:state_dict():keys())
    assert.same({ "0", "1", "2" }, pl:state_dict { torch_names = true }:keys())
    local outer = nn.Sequential(nn.Linear(1, 1))
    outer.extra = pl
    assert.same({ "0.weight", "0.bias", "extra.0", "extra.1", "extra.2" }, outer:state_dict { torch_names = true }:keys())
    local sd = pl:state_dict { torch_names = true }
    sd["0"] = T.full({ 2 }, 7.0, { dtype = T.float32 })
    pl:load_state_dict(sd, { torch_names = true })
    assert.same({ 7, 7 }, pl[1]:tolist())
    pl:double()
    assert.equal(T.float64, pl[1].dtype)
    local k = 0
    for _, p in ipairs(pl) do k = k + 1; assert.equal(T.float64, p.dtype) end
    assert.equal(3, k)
    assert.equal(3, #pl:parameters())
    assert.matches("%(1%): Parameter containing: %[ember.float64 of size 2%]", tostring(pl))
    assert.has_error(function() pl:append(3) end, "ParameterList: expected a tensor, got number")
  end)

  it("ParameterDict", function()
    local pd = nn.ParameterDict { { "w", T.ones(2, 2) }, { "b", T.zeros(2) } }
    assert.same({ "w", "b" }, pd:keys())
    assert.is_true(pd.w.requires_grad)
    assert.same({ "w", "b" }, pd:state_dict():keys())
    pd:update { c = T.ones(1) }
    assert.same({ "w", "b", "c" }, pd:keys())
    assert.equal(pd:get("c"), pd:pop("c"))
    assert.equal(2, pd:len())
    assert.equal(2, #pd:parameters())
    assert.matches("%(w%): Parameter containing: %[ember.float32 of size 2x2%]", tostring(pd))
    assert.has_error(function() pd:set("q", {}) end, "ParameterDict: q is not a tensor")
  end)
end)
