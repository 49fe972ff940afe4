local T = require "ember"

-- Errors of the distributions' constructors and checks are raised at the
-- user's line (the level is found by walking up past ember's own files:
-- the constructors reach their checks through helpers and tail calls).
describe("distribution errors", function()
  it("name the caller's line for unknown options and invalid parameters", function()
    local D = T.distributions
    local cases = {
      function() D.Normal(0, 1, { foo = 1 }) end,
      function() D.Normal(0, -1) end,
      function() D.Weibull(-1, 1) end,
      function() D.Pareto(1, -1) end,
      function() D.Kumaraswamy(1, 1, 5) end,
      function() D.TanhTransform({ foo = 1 }) end,
      function() D.Normal(0, 1):log_prob(T.tensor{ 0.5 }):sum() D.Beta(1, 1):log_prob(T.tensor{ 2.0 }) end,
    }
    for i, f in ipairs(cases) do
      local ok, msg = pcall(f)
      assert.is_false(ok, "case " .. i)
      assert.truthy(tostring(msg):find("distribution_errors_spec.lua:%d+: "), "case " .. i .. ": " .. tostring(msg))
    end
  end)
end)
