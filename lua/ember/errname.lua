-- named(op, f): f with its errors naming op, for the functions written in
-- Lua on top of engine ops (lua/ember/tools.lua, nn/activations.lua): an
-- error raised inside by an engine op ("masked_fill_: ...") is re-raised as
-- "op: ...", and every error is raised at the caller's position, as a C
-- function's is.
local function rethrow(op, e)
  if type(e) ~= "string" then error(e, 0) end
  local m = e:gsub("^[^\n]-:%d+: ", "")
  if m:sub(1, #op + 1) ~= op .. ":" then m = op .. ": " .. m:gsub("^[%w_]+: ", "") end
  error(m, 3)
end

return function(op, f)
  local function pass(ok, ...)
    if ok then return ... end
    rethrow(op, (...))
  end
  return function(...) return pass(pcall(f, ...)) end
end
