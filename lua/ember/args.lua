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

-- The error level of the user's code for an error raised by the function
-- that calls this: the first frame up the stack that is not ember's own
-- Lua (checks reached through helpers and tail calls of varying depth:
-- the distributions' constructors, the transformer layers); a C frame
-- (pcall) ends the walk: no position then. M.raise(msg) raises there.
function M.user_level()
  local l = 3 -- 1: user_level, 2: the raising function, 3: its caller
  while true do
    local info = debug.getinfo(l, "S")
    if not info or info.what == "C" then return l - 1 end
    local src = info.source
    if not (src:find("[@/\\]ember[/\\][%w_]+%.lua$") or src:find("[@/\\]ember[/\\]nn[/\\][%w_]+%.lua$")) then
      return l - 1
    end
    l = l + 1
  end
end
function M.raise(msg) error(msg, M.user_level()) end

-- An error caught by pcall, raised again at the user's line when it has no
-- position (a C function's error seen through pcall) or, with ember_too,
-- when its position is in ember's own Lua; any other error (a user
-- function's, with its own position) passes as it is.
function M.rethrow(e, ember_too)
  if type(e) == "string" and (not e:find("^[^\n]-:%d+: ")
      or (ember_too and e:find("^[^\n]-[/\\]ember[/\\][%w_/\\]-%.lua:%d+: "))) then
    M.raise((e:gsub("^[^\n]-:%d+: ", "", 1)))
  end
  error(e, 0)
end

-- PyTorch's positional arguments taken by name: the arguments from position
-- `first` on (passed as ...) fill `names` in order, and an options table
-- may follow them (f(a, b), f{x = a, y = b} and f(a, {y = b}) are one
-- call); returns the options table. A name given both ways is refused.
function M.positional(op, names, first, ...)
  local n, args = select("#", ...), { ... }
  while n > 0 and args[n] == nil do n = n - 1 end
  local tail
  if n > 0 and M.is_opts(args[n]) then tail, n = args[n], n - 1 end
  if n > #names then
    M.raise(fmt("%s: unexpected argument #%d (%s): %s takes at most %d arguments",
      op, first + #names, type(args[#names + 1]), op, first + #names - 1))
  end
  local o = {}
  for i = 1, n do
    if M.is_opts(args[i]) then refuse_table(op, args[i], first + i - 1) end
    o[names[i]] = args[i]
  end
  for k, v in pairs(tail or {}) do
    if o[k] ~= nil then
      local pos
      for i, nm in ipairs(names) do if nm == k then pos = first + i - 1 end end
      M.raise(fmt("%s: %s given twice (argument #%d and the options table)", op, tostring(k), pos))
    end
    o[k] = v
  end
  return o
end

-- A plain table (not a tensor, dtype, Size or other object with a
-- metatable): the shape an options table has.
function M.is_opts(v)
  return type(v) == "table" and getmetatable(v) == nil
end

return M
