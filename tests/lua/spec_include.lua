-- tests/lua/spec_include.lua: running another spec file's describe blocks
-- inside the calling spec's busted environment (its describe, it, setup ...).
--   run(path, vars, env): vars (a table, optional) visible to that file as
--     globals;
--   composed(title, path, env): that file's cases under `title` with the
--     composed paths forced (C._nn_force_math; ops/composed.h) and the
--     global COMPOSED set, so a case can tell (attention_math_spec,
--     rnn_math_spec, unique_math_spec).
-- env: the caller's environment (getfenv and getfenv(1) or _ENV).
local M = {}

function M.run(path, vars, env)
  local e = setmetatable(vars or {}, { __index = env })
  if setfenv then
    local f = assert(loadfile(path))
    setfenv(f, e)
    return f()
  end
  return assert(loadfile(path, "t", e))()
end

function M.composed(title, path, env)
  local C = require "ember.core"
  env.describe(title, function()
    env.setup(function() C._nn_force_math(true) end)
    env.teardown(function() C._nn_force_math(false) end)
    M.run(path, { COMPOSED = true }, env)
  end)
end

return M
