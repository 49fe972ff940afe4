-- Helpers shared by the file-format specs (npy, serialize, safetensors,
-- torch): reading and writing raw bytes, temporary paths, and a tensor's
-- values as a flat Lua list.
local T = require "ember"

local M = {}

-- the leaves of a nested table, in order
function M.flat(x, out)
  out = out or {}
  if type(x) ~= "table" then out[#out + 1] = x; return out end
  for _, v in ipairs(x) do M.flat(v, out) end
  return out
end

-- a tensor's values, row-major (half types as doubles)
function M.values(t)
  if t.dtype == T.float16 or t.dtype == T.bfloat16 then t = t:double() end
  return M.flat(t:tolist())
end

function M.readall(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

function M.writeall(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

-- a fresh path that does not exist yet, ending in suffix
function M.tmp(suffix)
  local p = os.tmpname()
  os.remove(p)
  return p .. (suffix or "")
end

return M
