-- Differences from PyTorch 1.13 found by the sixth round of differential
-- tests, printing and type promotion (ember against torch on the same
-- inputs), each with torch's output or error.
local T = require "ember"
local U = require "specutil"
local err = U.err

describe("difftest round 6: printing (torch 1.13)", function()
  after_each(function() T.set_printoptions { profile = "default" } end)

  it("prints with any precision Python formats (was an error past 100)", function()
    -- torch.set_printoptions(precision=120); torch.tensor([1.5, 2.25])
    T.set_printoptions { precision = 120 }
    assert.equal("tensor([1.5" .. string.rep("0", 119) .. ",\n        2.25" .. string.rep("0", 118) .. "])",
      tostring(T.tensor { 1.5, 2.25 }))
    -- torch.set_printoptions(precision=1000, sci_mode=False)
    -- torch.tensor([1/3], dtype=torch.float64): the exact binary value, then zeros
    T.set_printoptions { precision = 1000, sci_mode = false }
    assert.equal("tensor([0.333333333333333314829616256247390992939472198486328125" .. string.rep("0", 946)
      .. "],\n       dtype=ember.float64)", tostring(T.tensor({ 1 / 3 }, { dtype = T.float64 })))
  end)

  it("pads to any width (was no padding past 200 characters)", function()
    -- torch.set_printoptions(precision=250, sci_mode=True)
    -- torch.tensor([1.5, -20.25, nan], dtype=torch.float64): the width comes
    -- from the fixed notation (254), NaN padded to it
    T.set_printoptions { precision = 250, sci_mode = true }
    assert.equal("tensor([1.5" .. string.rep("0", 249) .. "e+00,\n        -2.025" .. string.rep("0", 247)
      .. "e+01,\n" .. string.rep(" ", 259) .. "nan],\n       dtype=ember.float64)",
      tostring(T.tensor({ 1.5, -20.25, 0 / 0 }, { dtype = T.float64 })))
    -- Python's "precision too big" past INT_MAX is refused when it is set
    err(function() T.set_printoptions { precision = 2 ^ 31 } end, "precision too big")
    T.set_printoptions { precision = 2 ^ 31 - 1 }
    assert.equal(2 ^ 31 - 1, T.get_printoptions().precision)
  end)

  it("a parameter prints as PyTorch's Parameter does", function()
    -- print(torch.nn.Parameter(torch.ones(2)))
    -- -> Parameter containing:\ntensor([1., 1.], requires_grad=True)
    assert.equal("Parameter containing:\ntensor([1., 1.], requires_grad=True)",
      tostring(T.nn.Parameter(T.ones(2))))
    -- a frozen one: Parameter containing:\ntensor([1., 1.])
    assert.equal("Parameter containing:\ntensor([1., 1.])", tostring(T.nn.Parameter(T.ones(2), false)))
    -- a module's parameters, also after a dtype change; what is computed from
    -- them is a plain tensor (l.weight * 1, l.weight.detach())
    local l = T.nn.Linear(2, 1)
    assert.matches("^Parameter containing:\ntensor%(%[%[", tostring(l.weight))
    assert.matches("^tensor%(", tostring(l.weight * 1))
    assert.matches("^tensor%(", tostring(l.weight:detach()))
    l:double()
    assert.matches("^Parameter containing:\ntensor%(%[.*dtype=ember.float64, requires_grad=True%)$", tostring(l.bias))
    assert.matches("^tensor%(", tostring(T.ones(2):requires_grad_()))
  end)
end)
