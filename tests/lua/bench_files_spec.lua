-- The benchmark scripts are not run by the tests (make bench is not part of
-- CI), so a merge that breaks one would only show at the next `make bench`
-- as an empty ember column. This spec compiles every bench/*.lua file.
describe("bench scripts", function()
  local dir = (os.getenv("EMBER_ROOT") or ".") .. "/bench/"
  local names = {}
  local p = io.popen('ls "' .. dir .. '"')
  for f in p:lines() do if f:match("%.lua$") then names[#names + 1] = f end end
  p:close()
  it("finds the scripts", function() assert.is_true(#names >= 5) end)
  for _, f in ipairs(names) do
    it(f .. " compiles", function()
      local fn, err = loadfile(dir .. f)
      assert.is_nil(err)
      assert.is_function(fn)
    end)
  end
end)
