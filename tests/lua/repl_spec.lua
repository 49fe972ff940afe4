-- bin/ember with no arguments: an interactive prompt that prints results.
local function pipe_into_ember(lines)
  local input = os.tmpname()
  local f = assert(io.open(input, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  local p = assert(io.popen("bin/ember < " .. input .. " 2>&1; echo \"exit=$?\""))
  local out = p:read("*a")
  p:close()
  os.remove(input)
  return out
end

describe("the ember prompt", function()
  it("prints every value an expression returns, runs statements, and keeps going after errors", function()
    local out = pipe_into_ember {
      "1 + 1",                       -- an expression
      "x = T.ones(3)",               -- a statement prints nothing
      "x:numel()",
      "_ * 2",                       -- _ is the last value
      "1, 'a', nil",                 -- every value, tab-separated, nil included
      "T.zeros(-1)",                 -- an ember error: message, then go on
      "error('boom', 0)",
      "for i = 1,",                  -- incomplete: read more lines
      "  2 do print('line', i) end",
      "x:size()",                    -- tostring of the value
      "=10",                         -- Lua 5.1's =expr still works
      "print('still here')",
    }
    assert.equal(table.concat({
      "2", "3", "6", "1\ta\tnil",
      "zeros: negative dimension -1 in size [-1]",
      "boom",
      "line\t1", "line\t2",
      "ember.Size([3])",
      "10",
      "still here",
      "exit=0",
    }, "\n") .. "\n", out)
  end)

  it("reports a syntax error and an incomplete chunk at the end of input", function()
    local out = pipe_into_ember { "1 +* 2", "3", "function f(" }
    assert.matches("^stdin:1: unexpected symbol near '%*'\n3\nstdin:1: <name> or '...' expected near '<eof>'\nexit=0\n$", out)
  end)

  it("shows the banner and prompts when asked (as on a terminal)", function()
    local repl = require "ember.repl"
    local input = os.tmpname()
    local f = assert(io.open(input, "w"))
    f:write("if true then\nreturn 7 end\n")
    f:close()
    local output = os.tmpname()
    local saved = io.output()
    io.output(output)
    local inp = assert(io.open(input))
    local ok, err = pcall(repl.run, { input = inp, prompt = true })
    inp:close()
    io.output():close()
    io.output(saved)
    local text = assert(io.open(output)):read("*a")
    os.remove(input)
    os.remove(output)
    assert.is_true(ok, err)
    assert.matches("^ember .- T = require 'ember' is loaded", text)
    assert.matches("\n> >> 7\n> \n$", text)
  end)

  it("bin/ember script.lua runs a script with its arguments from any directory", function()
    local dir = os.tmpname()
    os.remove(dir)
    local rc = os.execute("mkdir " .. dir)
    assert(rc == 0 or rc == true)  -- LuaJIT returns 0, Lua 5.4 true
    local f = assert(io.open(dir .. "/s.lua", "w"))
    f:write('local T = require "ember"; print(T.ones(2, 3):numel(), ...)\n')
    f:close()
    local here = assert(io.popen("pwd")):read("*l")
    local p = assert(io.popen("cd " .. dir .. " && " .. here .. "/bin/ember s.lua a b 2>&1"))
    local out = p:read("*a")
    p:close()
    os.remove(dir .. "/s.lua")
    os.remove(dir)
    assert.equal("6\ta\tb\n", out)
  end)

  it("completes names, fields and tensor methods without calling anything", function()
    local repl = require "ember.repl"
    _G.T = _G.T or require "ember"
    local function has(list, x)
      for _, v in ipairs(list) do if v == x then return true end end
      return false
    end
    local z = repl.complete("T.zero")
    assert.is_true(has(z, "T.zeros") and has(z, "T.zeros_like"), table.concat(z, " "))
    for _, w in ipairs(z) do assert.equal("T.zero", w:sub(1, 6)) end
    assert.is_true(has(repl.complete("T.nn.Lin"), "T.nn.Linear"))
    _G.__repl_x = T.ones(2)
    local m = repl.complete("__repl_x:nume")
    assert.same({ "__repl_x:numel" }, m)
    assert.is_true(has(repl.complete("__repl_x:si"), "__repl_x:size"))
    assert.is_true(has(repl.complete("__repl_x.sha"), "__repl_x.shape"))
    _G.__repl_x = nil
    assert.is_true(has(repl.complete("pri"), "print"))
    assert.is_true(has(repl.complete("whi"), "while"))
    -- calls and unknown names complete nothing
    local called = false
    _G.__repl_f = function() called = true; return {} end
    assert.same({}, repl.complete("__repl_f().x"))
    assert.same({}, repl.complete("no_such_name.x"))
    assert.is_false(called)
    _G.__repl_f = nil
  end)

  -- a real terminal: `script` gives bin/ember a pty; keys typed with pauses
  local lineedit_built = io.open((os.getenv("EMBER_BUILD") or "build") .. "/ember/lineedit.so") ~= nil
  local has_script = os.execute("command -v script >/dev/null 2>&1")
  has_script = has_script == true or has_script == 0
  local run_pty = (lineedit_built and has_script) and it or pending
  run_pty("on a terminal: tab completion, history recall with the up arrow, and a history file", function()
    local hist = os.tmpname()
    os.remove(hist)
    local keys = os.tmpname()
    local f = assert(io.open(keys, "w"))
    -- x = T.arang<Tab>(3) ; x:nume<Tab>() ; <Up><Enter> ; Ctrl-D
    f:write("sleep 1.5; printf 'x = T.arang\\t(3)\\n'; sleep 0.4; printf 'x:nume\\t()\\n'; ",
      "sleep 0.4; printf '\\033[A\\n'; sleep 0.4; printf '\\004'; sleep 0.4\n")
    f:close()
    local p = assert(io.popen("(sh " .. keys .. ") | EMBER_HISTORY=" .. hist ..
      " timeout 20 script -qfc bin/ember /dev/null 2>&1"))
    local out = p:read("*a")
    p:close()
    os.remove(keys)
    local h = io.open(hist)
    local saved = h and h:read("*a") or ""
    if h then h:close() end
    os.remove(hist)
    -- the two completed lines ran: numel printed twice (typed, then recalled)
    local _, threes = out:gsub("\r?\n3\r?\n", "")
    assert.is_true(threes >= 1, out)
    assert.matches("x:numel%(%)\r?\n3", out)
    assert.truthy(saved:find("T.arange(3)", 1, true) or saved:find("T.arange\\040(3)", 1, true), saved)
    local _, n = saved:gsub("x:numel", "")
    assert.equal(2, n, saved)
  end)
end)
