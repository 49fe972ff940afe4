-- ember: a tensor engine in C, scripted from LuaJIT.
-- This module is the C module ember.core plus the pieces written in Lua.
-- Each lua/ember/<area>.lua file receives (T, C) and adds its part.
local C = require "ember.core"

local T = {}
for k, v in pairs(C) do
  if type(k) ~= "string" or k:sub(1, 1) ~= "_" then T[k] = v end
end
T._C = C
T.Tensor_methods = C._methods -- methods table shared by every tensor

-- The Lua parts, in dependency order.
for _, area in ipairs { "size", "tensor", "view", "creation", "math", "reduce", "select", "interop", "autograd", "nn", "optim", "data", "train", "print" } do
  require("ember." .. area)(T, C)
end

return T
