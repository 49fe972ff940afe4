-- Differences from PyTorch 1.13 found by the twelfth round of differential
-- tests (convolutions), each with torch's values. Positions are 1-based in
-- ember (dims, indices): those shifts are not differences.
local T = require "ember"
local F = T.nn.functional

local function close(t, expected, tol)
  local got = t:double():tolist()
  local function walk(g, e, path)
    if type(e) == "table" then
      assert.are.equal(#e, #g, "length at " .. path)
      for i = 1, #e do walk(g[i], e[i], path .. "[" .. i .. "]") end
    else
      assert(math.abs(g - e) <= (tol or 1e-12) * (1 + math.abs(e)),
        string.format("at %s: got %.17g, expected %.17g", path, g, e))
    end
  end
  walk(got, expected, "")
end
local function f64(v) return T.tensor(v, { dtype = T.float64 }) end

describe("difftest round 12: conv_transpose's output_padding below the dilation with a padding", function()
  it("conv_transpose1d keeps the full output's rows past the padding (torch 1.13)", function()
    -- stride 1, dilation 2, padding 1, output_padding 1: the last output row is the full
    -- transposed conv's (not a zero), ember gave the shifted window and zeros
    local x = T.arange(1, 11, { dtype = T.float64 }):reshape(1, 2, 5):requires_grad_()
    local w = (T.arange(0, 12, { dtype = T.float64 }):reshape(2, 2, 3) / 4 - 1):requires_grad_()
    local b = f64({ 0.5, -1 }):requires_grad_()
    local y = F.conv_transpose1d(x, w, b, { stride = 1, padding = 1, output_padding = 1, dilation = 2 })
    close(y, { { { 2.0, 5.25, 4.75, 9.75, 10.25, 10.75, 7.5, 8.0 },
      { 7.25, 17.25, 19.75, 33.0, 25.25, 28.75, 15.75, 17.75 } } })
    local r = T.arange(1, y:numel() + 1, { dtype = T.float64 }):reshape(y.shape)
    local loss = (y * r):sum()
    loss:backward()
    close(x.grad, { { { -0.5, -4.75, -7.0, -9.25, -11.5 }, { 41.5, 58.25, 65.0, 71.75, 78.5 } } })
    close(w.grad, { { { 40, 70, 100 }, { 152, 190, 220 } }, { { 90, 170, 250 }, { 362, 490, 570 } } })
    close(b.grad, { 36, 100 })
  end)

  it("conv_transpose2d and conv_transpose3d likewise", function()
    local x2 = T.arange(1, 13, { dtype = T.float64 }):reshape(1, 1, 3, 4)
    local w2 = f64({ { { { 1, -1 }, { 2, 0.5 } } } })
    local y2 = F.conv_transpose2d(x2, w2, nil, { stride = { 1, 2 }, padding = { 2, 1 }, output_padding = { 2, 1 },
      dilation = { 3, 1 } })
    close(y2, { { { { -9.0, 10.0, -10.0, 11.0, -11.0, 12.0, -12.0 }, { 0.5, 4.0, 1.0, 6.0, 1.5, 8.0, 2.0 },
      { 2.5, 12.0, 3.0, 14.0, 3.5, 16.0, 4.0 }, { 4.5, 20.0, 5.0, 22.0, 5.5, 24.0, 6.0 } } } })
    local x3 = T.arange(1, 9, { dtype = T.float64 }):reshape(1, 1, 2, 2, 2)
    local y3 = F.conv_transpose3d(x3, T.ones(1, 1, 2, 2, 2, { dtype = T.float64 }), nil,
      { stride = 1, padding = 1, output_padding = 1, dilation = 2 })
    close(y3, { { { { { 8, 7, 8 }, { 6, 5, 6 }, { 8, 7, 8 } }, { { 4, 3, 4 }, { 2, 1, 2 }, { 4, 3, 4 } },
      { { 8, 7, 8 }, { 6, 5, 6 }, { 8, 7, 8 } } } } })
  end)
end)

describe("difftest round 12: F.conv_tbc (torch 1.13)", function()
  local function args()
    local x = T.arange(1, 13, { dtype = T.float64 }):reshape(3, 2, 2):requires_grad_()
    local w = f64({ { { 1, 0, -1 }, { 0.5, 2, 1 } }, { { -1, 1, 0 }, { 1, 1, 1 } } }):requires_grad_()
    local b = f64({ 0, 1, -1 }):requires_grad_()
    return x, w, b
  end

  it("is conv1d over the time axis, with its gradients", function()
    local x, w, b = args()
    local y = F.conv_tbc(x, w, b, 1)
    close(y, { { { 1.0, 4.0, 1.0 }, { 1.0, 8.0, 3.0 } }, { { 3.0, 16.0, 6.0 }, { 6.0, 24.0, 8.0 } },
      { { 9.0, 32.0, 10.0 }, { 12.0, 40.0, 12.0 } }, { { 14.0, 21.0, 0.0 }, { 17.0, 25.0, 0.0 } } })
    y:sum():backward()
    close(x.grad, { { { 0, 6.5 }, { 0, 6.5 } }, { { 0, 6.5 }, { 0, 6.5 } }, { { 0, 6.5 }, { 0, 6.5 } } })
    close(w.grad, { { { 36, 36, 36 }, { 42, 42, 42 } }, { { 36, 36, 36 }, { 42, 42, 42 } } })
    close(b.grad, { 8, 8, 8 })
  end)

  it("a negative pad cuts the input, a length of 0 is empty, a negative one an error", function()
    local x, w, b = args()
    close(F.conv_tbc(x, w:narrow(1, 1, 1), b, -1), { { { 8, 13, 0 }, { 11, 17, 0 } } })
    assert.are.same({ 0, 2, 3 }, F.conv_tbc(x:narrow(1, 1, 1), w, b):size():totable())
    -- torch: Trying to create tensor with negative dimension -1: [-1, 2, 3]
    assert.has_error(function() F.conv_tbc(x:narrow(1, 1, 1), w, b, -1) end)
    -- torch: Input dim 2 (input channels) is not == dim 1 in the weight tensor
    local ok, e = pcall(F.conv_tbc, x, w:narrow(2, 1, 1), b)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("conv_tbc: Input dim 3 (input channels, 2) is not == dim 2 in the weight tensor (1)",
      1, true))
  end)
end)
