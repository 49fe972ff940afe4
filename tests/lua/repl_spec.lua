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
    assert(os.execute("mkdir " .. dir) == 0)
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
end)
