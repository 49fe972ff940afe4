-- The interactive prompt of `bin/ember` (run with no arguments), also
-- usable as `luajit -e 'require("ember.repl").run()'`.
--
-- `T` is ember. Each line is first tried as an expression (`return <line>`)
-- and every value it returns is printed with tostring, tab-separated; else
-- it runs as a statement. A chunk that is incomplete (Lua reports `<eof>`)
-- keeps reading lines under the `>>` prompt. Errors print their message and
-- the prompt goes on. `_` holds the first value of the last expression.
-- Prompts and the banner are shown only when stdin is a terminal, so piped
-- input gives just the results. On a terminal, when the module
-- ember.lineedit was built (libedit), lines are read with line editing,
-- history (kept in $EMBER_HISTORY, default ~/.ember_history) and tab
-- completion of names (`T.ze<Tab>`) and tensor methods (`x:si<Tab>`);
-- without it the prompt reads plain lines.
local M = {}
local unpack = table.unpack or unpack
local has_lineedit, lineedit = pcall(require, "ember.lineedit")
if not has_lineedit then lineedit = nil end

local function stdin_is_tty()
  if lineedit then return lineedit.isatty(0) end
  local ok, ffi = pcall(require, "ffi")
  if not ok then return false end
  pcall(ffi.cdef, "int isatty(int fd);")
  local ok2, r = pcall(function() return ffi.C.isatty(0) end)
  return ok2 and r == 1
end

-- -- Tab completion -------------------------------------------------------------

local KEYWORDS = { "and", "break", "do", "else", "elseif", "end", "false", "for",
  "function", "goto", "if", "in", "local", "nil", "not", "or", "repeat", "return",
  "then", "true", "until", "while" }

-- The names reachable on v: a table's string keys and those of the tables
-- its metatables' __index chain holds; for a tensor, its methods (and
-- properties after '.').
local function names_of(v, sep, out)
  local seen = 0
  while v ~= nil and seen < 8 do
    seen = seen + 1
    if type(v) == "table" then
      for k, x in pairs(v) do
        if type(k) == "string" and k:match("^[%a_][%w_]*$") and
           (sep ~= ":" or type(x) == "function") then
          out[k] = true
        end
      end
    end
    if type(v) == "userdata" and _G.T and T.is_tensor and T.is_tensor(v) then
      local C = package.loaded["ember.core"]
      if C then
        for k in pairs(C._methods or {}) do if type(k) == "string" then out[k] = true end end
        if sep == "." then
          for k in pairs(C._props or {}) do if type(k) == "string" then out[k] = true end end
        end
      end
      return
    end
    local mt = getmetatable(v)
    v = type(mt) == "table" and type(rawget(mt, "__index")) == "table" and rawget(mt, "__index") or nil
  end
end

-- The completions of word, the text before the cursor up to a break
-- character: "T.ze" -> {"T.zeros", "T.zeros_like"}; "x:si" -> {"x:sin",
-- "x:sinh", "x:size", ...}; a bare name completes globals and keywords. Only
-- chains of names are followed (never a call), so completing runs no code
-- beyond the __index of what the names hold.
function M.complete(word)
  local prefix, sep, partial = word:match("^(.*)([%.:])([%w_]*)$")
  local names = {}
  if not prefix then
    partial = word:match("^[%a_][%w_]*$") or (word == "" and "")
    if not partial then return {} end
    names_of(_G, ".", names)
    for _, k in ipairs(KEYWORDS) do names[k] = true end
    prefix, sep = "", ""
  else
    if not prefix:match("^[%a_][%w_]*$") and not prefix:match("^[%a_][%w_%.]*[%w_]$") then
      return {}
    end
    local v = _G
    for name in prefix:gmatch("[^%.]+") do
      local ok, x = pcall(function() return v[name] end)
      if not ok or x == nil then return {} end
      v = x
    end
    names_of(v, sep, names)
  end
  local list = {}
  for k in pairs(names) do
    if k:sub(1, #partial) == partial then list[#list + 1] = prefix .. sep .. k end
  end
  table.sort(list)
  return list
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
  local fn, experr = load("return " .. buffer, "=stdin")
  if fn then return fn, true end
  local err
  fn, err = load(buffer, "=stdin")
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
  -- line editing: on a terminal, reading stdin, with ember.lineedit
  local edit = interactive and lineedit and input == io.stdin and opts.lineedit ~= false
  local history
  if edit then
    history = os.getenv("EMBER_HISTORY") or ((os.getenv("HOME") or ".") .. "/.ember_history")
    lineedit.read_history(history)
    lineedit.set_completer(function(word) return M.complete(word) end)
  end
  while true do
    local line
    if edit then
      line = lineedit.readline(buffer and ">> " or "> ")
      if line and line:match("%S") then
        lineedit.add_history(line)
        lineedit.write_history(history)
      end
    else
      if interactive then
        io.write(buffer and ">> " or "> ")
        io.flush()
      end
      line = input:read("*l")
    end
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
