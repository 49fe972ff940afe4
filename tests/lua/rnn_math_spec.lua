-- A recurrent layer's time loop composed from ops (engine/src/ops/
-- rnn_math.c): the path a device without the fused loop takes (cuda today).
-- Every case of rnn_spec.lua (PyTorch's outputs and gradients, gradcheck of
-- the C op with and without lengths, reverse, the module, packing, meta,
-- bad input) runs again with that path forced on the CPU, and the two paths
-- are held against each other.
local C = require "ember.core"
local S = require "spec_include"

S.composed("recurrent layers composed from ops", "tests/lua/rnn_spec.lua", getfenv and getfenv(1) or _ENV)

describe("the fused loop and the composed loop", function()
  local T = require "ember"
  it("agree on outputs, states and gradients for every mode, reverse and lengths", function()
    for _, dt in ipairs { T.float32, T.float64 } do
      local tol = dt == T.float64 and 1e-12 or 1e-5
      for _, mode in ipairs { "rnn_tanh", "rnn_relu", "lstm", "gru" } do
        for _, rev in ipairs { false, true } do
          for _, withlen in ipairs { false, true } do
            T.manual_seed(3)
            local G = mode == "lstm" and 4 or mode == "gru" and 3 or 1
            local H, P, lstm = 5, mode == "lstm" and 3 or 5, mode == "lstm"
            local function r(...) return T.randn(T.Size { ... }, { dtype = dt }) end
            local base = { r(6, 4, 3), r(4, P), lstm and r(4, H) or false, r(G * H, 3), r(G * H, P),
              r(G * H), r(G * H), lstm and r(P, H) or false }
            local lens = withlen and T.tensor({ 6, 2, 0, 5 }) or nil
            local function run(composed)
              C._nn_force_math(composed)
              local ins = {}
              for k = 1, 8 do ins[k] = base[k] and base[k]:clone():requires_grad_() or nil end
              local ok, o, h, c = pcall(C._nn_rnn_layer, mode, ins[1], ins[2], ins[3], ins[4], ins[5],
                ins[6], ins[7], ins[8], lens, rev)
              C._nn_force_math(false)
              assert(ok, o)
              local loss = (o * o):sum() + (h * h * 2):sum() + (c and (c * c * 3):sum() or 0)
              local want = {}
              for k = 1, 8 do if ins[k] then want[#want + 1] = ins[k] end end
              return { o, h, c }, T.autograd.grad({ loss }, want)
            end
            local fv, fg = run(false)
            local cv, cg = run(true)
            local what = string.format("%s %s reverse=%s lengths=%s", tostring(dt), mode, tostring(rev), tostring(withlen))
            for k = 1, 3 do
              if fv[k] then assert.is_true(T.allclose(cv[k]:detach(), fv[k]:detach(), tol, tol), what .. " value " .. k) end
            end
            for k = 1, #fg do assert.is_true(T.allclose(cg[k], fg[k], tol, tol), what .. " gradient " .. k) end
          end
        end
      end
    end
  end)
end)
