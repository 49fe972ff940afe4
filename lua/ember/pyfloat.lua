-- pyfloat(v): a number as Python's repr of a float writes it ("1.0",
-- "0.25", "1e-05"), for module printouts that match PyTorch's
-- (lua/ember/nn/activations.lua, nn/extra_layers.lua, nn/layers.lua).
return function(v)
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" end
  if v == -math.huge then return "-inf" end
  if v == math.floor(v) and math.abs(v) < 1e16 then return string.format("%.1f", v) end
  local s
  for prec = 1, 17 do
    s = string.format("%." .. prec .. "g", v)
    if tonumber(s) == v then break end
  end
  -- Python writes exponents with two digits at least and no "+"
  local m, e = s:match("^(.-)e([-+]%d+)$")
  if m then
    local n = tonumber(e)
    if n >= -4 and n < 16 then return s end
    s = string.format("%se%s%02d", m, n < 0 and "-" or "+", math.abs(n))
  end
  return s
end
