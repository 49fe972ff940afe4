-- examples/char_lm.lua (issue 18, item 7): the character-level language
-- models train on the example's built-in text (no download, no
-- data/fortunes.txt), their loss falls, sampling gives text of the
-- vocabulary, and the per-step losses equal PyTorch 1.13's from the same
-- initial weights on the same batches (tests/fixtures/charlm_cases.lua,
-- written by tests/fixtures/gen_charlm.py).
local T = require "ember"
local cases = dofile("tests/fixtures/charlm_cases.lua")

local function load_example()
  local chunk = assert(loadfile("examples/char_lm.lua"))
  return chunk("--module")
end
local M = load_example()
local quiet = function() end

local function mean(t, i, j)
  local s = 0
  for k = i, j do s = s + t[k] end
  return s / (j - i + 1)
end

local function check_samples(r, n, len)
  assert.are.equal(n, #r.samples)
  local known = {}
  for _, c in ipairs(r.data.chars) do known[c] = true end
  for _, s in ipairs(r.samples) do
    assert.are.equal(len, #s)
    for i = 1, #s do assert.is_true(known[s:sub(i, i)], "sampled a character outside the vocabulary") end
  end
end

describe("examples/char_lm.lua", function()
  for _, model in ipairs({ "transformer", "lstm" }) do
    it(model .. ": --quick trains on the built-in text, the loss falls and sampling works", function()
      local o = M.parse_args({ "--quick", "--model", model, "--steps", "40", "--eval-every", "20",
        "--samples", "2", "--sample-len", "30" })
      local r = M.run(o, nil, quiet)
      assert.are.equal(40, #r.losses)
      local first, last = mean(r.losses, 1, 5), mean(r.losses, 36, 40)
      assert.is_true(first > math.log(r.data.vocab) - 0.5, "the first losses are near log(vocab)")
      assert.is_true(last < first - 0.4, ("the loss falls: %.3f -> %.3f"):format(first, last))
      assert.are.equal(2, #r.evals)
      assert.is_true(r.evals[2][2] < r.evals[1][2] + 0.05, "the held-out loss does not rise")
      assert.is_true(r.held_out < math.log(r.data.vocab) - 0.3, "the held-out loss is below the uniform one")
      check_samples(r, 2, 30)
    end)
  end

  for _, c in ipairs(cases) do
    it(("%s %s: the per-step losses equal PyTorch's from the same weights and batches"):format(c.model, c.dtype),
      function()
        local r = M.run(M.parse_args(c.args), nil, quiet)
        local tol = c.dtype == "float64" and 1e-10 or 1e-5
        assert.are.equal(#c.torch_losses, #r.losses)
        for s, l in ipairs(c.torch_losses) do
          assert.is_true(math.abs(r.losses[s] - l) <= tol,
            ("step %d: ember %.9g, torch %.9g"):format(s, r.losses[s], l))
        end
      end)
  end

  it("refuses bad arguments with a message naming them", function()
    local function err(argv)
      local ok, e = pcall(M.parse_args, argv)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.matches("unknown argument '%-%-nope'", err({ "--nope", "1" }))
    assert.matches("unknown argument 'steps'", err({ "steps", "1" }))
    assert.matches("%-%-model must be transformer or lstm, got 'gru'", err({ "--model", "gru" }))
    assert.matches("%-%-steps expects a number, got 'x'", err({ "--steps", "x" }))
    assert.matches("%-%-steps must be a positive integer", err({ "--steps", "0" }))
    assert.matches("%-%-width %(30%) must be a multiple of %-%-heads %(4%)", err({ "--width", "30" }))
    assert.matches("%-%-held%-out must be in %(0, 1%)", err({ "--held-out", "1" }))
    assert.matches("%-%-dtype must be float32 or float64", err({ "--dtype", "int8" }))
    assert.matches("%-%-seed needs a value", err({ "--seed" }))
    assert.matches("unknown option 'bogus'", tostring(select(2, pcall(M.resolve, { bogus = 1 }))))
    local _, help = M.parse_args({ "--help" })
    assert.matches("%-%-steps", help)
  end)

  it("refuses a text too short for the context and a missing file", function()
    local o = M.parse_args({ "--quick", "--steps", "1" })
    local ok, e = pcall(M.run, o, "abcdefgh", quiet)
    assert.is_false(ok)
    assert.matches("a text of 8 characters is too short for context 32", tostring(e))
    ok, e = pcall(M.read_text, "/nonexistent/fortunes.txt")
    assert.is_false(ok)
    assert.matches("cannot read /nonexistent/fortunes.txt %(run tools/fetch_fortunes.sh", tostring(e))
  end)

  it("batches are windows of the text and the learning rate warms up then decays", function()
    T.manual_seed(3)
    local ids = T.arange(1, 101)
    local b = M.batch(ids, 5, 10)
    assert.are.same({ 5, 11 }, b:size():totable())
    for i = 1, 5 do
      local row = b[i]:tolist()
      assert.is_true(row[1] >= 1 and row[11] <= 100)
      for j = 2, 11 do assert.are.equal(row[j - 1] + 1, row[j]) end
    end
    local o = M.parse_args({ "--steps", "100", "--warmup", "10", "--lr", "1e-3" })
    assert.are.equal(1e-4, M.lr_at(o, 1))
    assert.are.equal(1e-3, M.lr_at(o, 10))
    assert.is_true(math.abs(M.lr_at(o, 100) - 1e-4) < 1e-12)
    assert.is_true(M.lr_at(o, 50) < M.lr_at(o, 20))
  end)
end)
