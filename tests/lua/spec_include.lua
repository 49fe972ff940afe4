-- tests/lua/spec_include.lua: runs another spec file's describe blocks inside
-- the calling spec's busted environment (its describe, it, setup ...), with
-- vars (a table, optional) visible to it as globals: a spec that runs
-- another's cases under a different engine setting (attention_math_spec,
-- rnn_math_spec) tells them so.
return function(path, vars, env)
  local e = setmetatable(vars or {}, { __index = env })
  if setfenv then
    local f = assert(loadfile(path))
    setfenv(f, e)
    return f()
  end
  return assert(loadfile(path, "t", e))()
end
