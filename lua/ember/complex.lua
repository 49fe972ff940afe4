-- The complex dtypes' parts written in Lua (issue 19; docs/dtypes.md,
-- "Complex"): sum and mean of a complex tensor, as the real reductions of
-- its view_as_real (the trailing (re, im) dim kept); every other form goes
-- to the C reduction, which refuses complex naming the op.
return function(T, C)
  local M = T.Tensor_methods
  for _, name in ipairs { "sum", "mean" } do
    local real = M[name]
    local function f(t, dim, ...)
      if T.is_tensor(t) and t:is_complex() then
        local r = T.view_as_real(t)
        if dim == nil and select("#", ...) == 0 then
          return T.view_as_complex(real(r:reshape(-1, 2), 1))
        end
        if type(dim) == "table" and getmetatable(dim) == nil and dim[1] == nil then
          error(name .. ": an options table is not implemented for complex tensors " ..
            "(pass dim and keepdim as arguments)", 2)
        end
        local function shift(d)
          if type(d) == "number" and d < 0 then return d - 1 end
          return d
        end
        if type(dim) == "table" and getmetatable(dim) == nil and dim[1] ~= nil then
          local ds = {}
          for i = 1, #dim do ds[i] = shift(dim[i]) end
          dim = ds
        else
          dim = shift(dim)
        end
        return T.view_as_complex(real(r, dim, ...):contiguous())
      end
      return real(t, dim, ...)
    end
    M[name] = f
    T[name] = f
  end
end
