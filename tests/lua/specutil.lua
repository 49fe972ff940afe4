-- Helpers shared by the specs written from torch fixtures: a fixture's
-- tensor record ({v = flat values, shape =, dtype = "float64"}) as a
-- tensor, and an error check that the message holds a given text.
local T = require "ember"
local M = {}

function M.tensor(rec)
  return T.tensor(rec.v, { dtype = T[rec.dtype] }):reshape(rec.shape)
end

-- f must raise an error whose text contains msg (plain text)
function M.err(f, msg)
  local ok, e = pcall(f)
  assert(not ok, "expected an error: " .. msg)
  assert(tostring(e):find(msg, 1, true), ("expected %q in the error, got %q"):format(msg, tostring(e)))
end

return M
