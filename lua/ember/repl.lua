-- The interactive prompt of `bin/ember` (run with no arguments), also
-- usable as `luajit -e 'require("ember.repl").run()'`.
--
-- `T` is ember. Each line is first tried as an expression (`return <line>`)
-- and every value it returns is printed with tostring, tab-separated; else
-- it runs as a statement. A chunk that is incomplete (Lua reports `<eof>`)
-- keeps reading lines under the `>>` prompt. Errors print their message and
-- the prompt goes on. `_` holds the first value of the last expression.
-- Prompts and the banner are shown only when stdin is a terminal, so piped
-- input gives just the results. Line editing: run it under `rlwrap`.
local M = {}

local function stdin_is_tty()
  local ok, ffi = pcall(require, "ffi")
  if not ok then return false end
  pcall(ffi.cdef, "int isatty(int fd);")
  local ok2, r = pcall(function() return ffi.C.isatty(0) end)
  return ok2 and r == 1
end

local function pack(...) return { n = select("#", ...), ... } end

local function show(results)
  if results.n == 0 then return end
  local parts = {}
  for i = 1, results.n do
    local ok, s = pcall(tostring, results[i])
    parts[i] = ok and s or ("<tostring failed: " .. tostring(s) .. ">")
  end
  io.write(table.concat(parts, "\t"), "\n")
end

-- As lua.c decides: the parser stopped at the end of the input.
local function is_incomplete(err)
  return err:find("'<eof>'$") ~= nil or err:find("<eof>$") ~= nil
end

-- Compiles the buffered chunk: first as an expression, then as statements.
-- Returns fn, or nil and "incomplete", or nil and an error message.
local function compile(buffer)
  local fn, experr = loadstring("return " .. buffer, "=stdin")
  if fn then return fn, true end
  local err
  fn, err = loadstring(buffer, "=stdin")
  if fn then return fn, false end
  if is_incomplete(err) then return nil, "incomplete", err end
  -- "1 +* 2" is neither: the expression's complaint ("near '*'") says more
  -- than the statement's ("unexpected symbol near '1'")
  if err:find("unexpected symbol near") and not is_incomplete(experr) then
    return nil, experr
  end
  return nil, err
end

local function traceback(err)
  if type(err) ~= "string" then
    local ok, s = pcall(tostring, err)
    return ok and s or "(error object is not a string)"
  end
  return err
end

-- Runs the loop on the given input/output (defaults: io.stdin, io.stdout).
-- opts.prompt forces the prompts on or off.
function M.run(opts)
  opts = opts or {}
  local input = opts.input or io.stdin
  local interactive = opts.prompt
  if interactive == nil then interactive = stdin_is_tty() end
  _G.T = _G.T or require "ember"
  if interactive then
    io.write("ember ", T.__version or "0.1", " on ", jit and jit.version or _VERSION,
      " -- T = require 'ember' is loaded. Expressions print their values;",
      " Ctrl-D leaves.\n")
  end
  local buffer, pending_error = nil, nil
  while true do
    if interactive then
      io.write(buffer and ">> " or "> ")
      io.flush()
    end
    local line = input:read("*l")
    if line == nil then
      if buffer then io.write(pending_error or "stdin: incomplete chunk", "\n") end
      if interactive then io.write("\n") end
      break
    end
    if not buffer and line:sub(1, 1) == "=" then line = line:sub(2) end -- Lua 5.1's =expr
    buffer = buffer and (buffer .. "\n" .. line) or line
    local fn, how, err = compile(buffer)
    pending_error = err
    if fn then
      buffer = nil
      local results = pack(xpcall(fn, traceback))
      if results[1] then
        local values = pack(select(2, unpack(results, 1, results.n)))
        if how and values.n > 0 then _G._ = values[1] end
        show(values)
      else
        io.write(tostring(results[2]), "\n")
      end
    elseif how == "incomplete" then
      -- keep reading under the continuation prompt
    else
      buffer = nil
      io.write(how, "\n")
    end
    io.flush()
  end
end

return M
