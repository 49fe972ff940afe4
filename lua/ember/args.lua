-- Argument checks shared by the Lua layer (docs/math.md, "Options"): an
-- option is honoured or refused, and an argument past the last one an entry
-- point takes is an error. The messages are the C layer's
-- (bindings/l_core.c: l_checkopts, l_checknomore).
local M = {}
local select, type, pairs, error, getmetatable = select, type, pairs, error, getmetatable
local fmt, concat = string.format, table.concat

-- o (nil or a table of options) against the list of names it may hold;
-- returns o, or an empty table for nil. level: error level (default: the
-- caller of the function that called this).
function M.checkopts(op, o, allowed, level)
  level = level or 3
  if o == nil then return {} end
  if type(o) ~= "table" then
    error(fmt("%s: expected an options table, got %s", op, type(o)), level)
  end
  for k in pairs(o) do
    if type(k) ~= "string" then
      error(fmt("%s: unexpected positional entry [%s] in the options table", op, tostring(k)), level)
    end
    local known = false
    for i = 1, #allowed do
      if allowed[i] == k then known = true; break end
    end
    if not known then
      error(fmt("%s: unknown option '%s' (expected one of: %s)", op, k, concat(allowed, ", ")), level)
    end
  end
  return o
end

local function refuse_table(op, v, pos)
  for k in pairs(v) do
    if type(k) == "string" then
      error(fmt("%s: unknown option '%s' (%s takes no options)", op, k, op), 4)
    end
  end
  error(fmt("%s: takes no options (got a table for argument #%d)", op, pos), 4)
end

-- The arguments from position `first` on (passed as ...): those up to n
-- are optional positional values (numbers, booleans, strings, tensors: a
-- plain table there is an options table and refused); every one after n
-- must be nil.
function M.nooptions(op, first, n, ...)
  for i = 1, select("#", ...) do
    local v, pos = select(i, ...), first + i - 1
    if v ~= nil then
      if type(v) == "table" and getmetatable(v) == nil then refuse_table(op, v, pos) end
      if pos > n then
        error(fmt("%s: unexpected argument #%d (%s): %s takes at most %d arguments",
          op, pos, type(v), op, n), 3)
      end
    end
  end
end

-- The arguments after the n-th (passed as ...) must all be nil.
function M.nomore(op, n, ...)
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if v ~= nil then
      if type(v) == "table" and getmetatable(v) == nil then refuse_table(op, v, n + i) end
      error(fmt("%s: unexpected argument #%d (%s): %s takes at most %d arguments",
        op, n + i, type(v), op, n), 3)
    end
  end
end

-- A plain table (not a tensor, dtype, Size or other object with a
-- metatable): the shape an options table has.
function M.is_opts(v)
  return type(v) == "table" and getmetatable(v) == nil
end

return M
