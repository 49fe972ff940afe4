-- reductions and linear algebra (issue 5): the parts written in Lua.
-- t:max(other) / t:min(other) with a tensor argument are PyTorch's
-- elementwise maximum/minimum; every other form is the C reduction.
return function(T, C)
  local M = T.Tensor_methods
  for _, pair in ipairs { { "max", "maximum" }, { "min", "minimum" } } do
    local name, elementwise = pair[1], pair[2]
    local reduce = M[name]
    local function f(t, other, ...)
      if T.is_tensor(other) then
        local g = T[elementwise]
        if not g then error(name .. ": elementwise " .. elementwise .. " is not available", 2) end
        return g(t, other, ...)
      end
      return reduce(t, other, ...)
    end
    M[name] = f
    T[name] = f
  end

  -- aminmax: (min, max) in one call, with the reductions' dim/keepdim
  -- (t[, dim[, keepdim]]) or (t, {dim=, keepdim=}); no out (two results)
  local A = require "ember.args"
  local AMM = { "dim", "keepdim" }
  local function aminmax(t, dim, keepdim, ...)
    if A.is_opts(dim) then
      A.nomore("aminmax", 2, keepdim, ...)
      A.checkopts("aminmax", dim, AMM)
    else
      A.nomore("aminmax", 3, ...)
    end
    -- an empty reduced dim is refused under aminmax's own name (as PyTorch),
    -- not amin's with this file's position
    local ok, mn = pcall(M.amin, t, dim, keepdim)
    if not ok then
      local msg = require("ember.argcheck")(T).unpos(mn)
      if msg:find("Expected reduction dim to be specified", 1, true) then
        msg = "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."
      else
        msg = msg:gsub("^amin%(%)", "aminmax()"):gsub("^amin:", "aminmax:")
      end
      error(msg, 2)
    end
    return mn, M.amax(t, dim, keepdim)
  end
  M.aminmax = aminmax
  T.aminmax = aminmax
end
