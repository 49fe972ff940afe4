-- Printing: tostring(t). (A minimal form until the PyTorch-exact formatter.)
return function(T, C)
  C._Tensor_mt.__tostring = function(t)
    local function fmt(v)
      if type(v) == "table" then
        local parts = {}
        for i = 1, #v do parts[i] = fmt(v[i]) end
        return "[" .. table.concat(parts, ", ") .. "]"
      end
      return tostring(v)
    end
    return "tensor(" .. fmt(t:tolist()) .. ", dtype=" .. tostring(t.dtype) .. ")"
  end
end
