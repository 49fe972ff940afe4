-- A character-level language model on the text of Debian's `fortunes`
-- package (tools/fetch_fortunes.sh fetches it to data/fortunes.txt): a small
-- causal transformer (token and position embeddings, a stack of pre-norm
-- nn.TransformerEncoderLayer with a causal mask, a final LayerNorm and a
-- linear head) or, with --model lstm, an nn.LSTM language model. Trains with
-- AdamW (linear warm-up, cosine decay, gradient clipping) on random windows
-- of the first 95% of the text, prints the training loss, the loss on the
-- held-out last 5% every --eval-every steps, and a few sampled lines
-- (temperature sampling with T.multinomial) at the end. docs/examples.md
-- has the loss levels measured runs reach and the parity check with PyTorch.
--
--   tools/fetch_fortunes.sh && bin/ember examples/char_lm.lua [--steps N] [--model transformer|lstm] ...
--   bin/ember examples/char_lm.lua --quick        -- a few seconds, on a built-in text (no download)
--   bin/ember examples/char_lm.lua --help         -- every option
--
-- Loaded with loadfile(path)("--module") it returns its functions instead of
-- running (tests/lua/char_lm_spec.lua, tools/charlm_parity.sh use that).
local T = require "ember"
local nn, F = T.nn, T.nn.functional
local fmt = string.format

local M = {}

-- -- options -------------------------------------------------------------------------------
-- name, default, what it is; nil defaults are filled from the model kind
M.OPTIONS = {
  { "model", "transformer", "transformer or lstm" },
  { "text", "data/fortunes.txt", "the training text, or 'builtin' (a short text in this file)" },
  { "steps", 2000, "training steps" },
  { "batch", 32, "sequences per step" },
  { "context", 128, "characters per sequence" },
  { "layers", nil, "transformer layers (4) or LSTM layers (2)" },
  { "heads", 4, "attention heads (transformer)" },
  { "width", nil, "model width: 128 (transformer), 256 (LSTM)" },
  { "ff", nil, "feed-forward width (transformer; 4 * width)" },
  { "dropout", 0.1, "dropout (transformer layers; between LSTM layers)" },
  { "lr", nil, "peak learning rate: 1e-3 (transformer), 2e-3 (LSTM)" },
  { "weight-decay", 0.01, "AdamW's weight decay" },
  { "warmup", 100, "steps of linear learning-rate warm-up" },
  { "clip", 1.0, "gradient norm clipping (0: none)" },
  { "held-out", 0.05, "fraction of the text (its end) held out" },
  { "eval-every", 200, "steps between held-out evaluations (0: only at the end)" },
  { "eval-batches", 16, "batches per held-out evaluation" },
  { "samples", 3, "lines sampled at the end" },
  { "sample-len", 200, "characters per sample" },
  { "temperature", 0.8, "sampling temperature" },
  { "seed", 0, "T.manual_seed" },
  { "device", "cpu", "cpu, cuda, ..." },
  { "dtype", "float32", "float32 or float64" },
  { "threads", 0, "T.set_num_threads (0: ember's default)" },
  { "log-every", 50, "steps between training-loss lines" },
  { "dump", "", "write DIR/charlm_<model>.pt (initial weights, batches, losses) for tools/charlm_parity.sh" },
  { "quick", false, "tiny settings on the built-in text: a smoke test in a few seconds" },
}
local DEFAULTS = {}
for _, o in ipairs(M.OPTIONS) do DEFAULTS[o[1]] = o[2] end
local QUICK = { text = "builtin", steps = 60, batch = 16, context = 32, layers = 2, width = 48, heads = 2,
  ["eval-every"] = 30, ["eval-batches"] = 4, ["log-every"] = 10, ["sample-len"] = 80, warmup = 10, lr = 3e-3,
  threads = 1 }

local function usage()
  local lines = { "usage: bin/ember examples/char_lm.lua [--option value ...]" }
  for _, o in ipairs(M.OPTIONS) do
    lines[#lines + 1] = fmt("  --%-13s %s%s", o[1], o[3], (o[2] ~= nil and o[2] ~= "") and fmt(" (default %s)", tostring(o[2])) or "")
  end
  return table.concat(lines, "\n")
end

-- argv (a list of strings) to an options table; errors name the option
function M.parse_args(argv)
  local o, i = {}, 1
  while i <= #argv do
    local a = argv[i]
    local name = a:match("^%-%-([%w%-]+)$")
    if a == "--help" or a == "-h" then return nil, usage() end
    if not name or DEFAULTS[name] == nil and not M.option_known(name) then
      error(fmt("char_lm: unknown argument '%s'\n%s", a, usage()), 0)
    end
    if type(DEFAULTS[name]) == "boolean" then
      o[name], i = true, i + 1
    else
      local v = argv[i + 1]
      if v == nil then error(fmt("char_lm: --%s needs a value", name), 0) end
      o[name], i = v, i + 2
    end
  end
  return M.resolve(o)
end
function M.option_known(name)
  for _, x in ipairs(M.OPTIONS) do if x[1] == name then return true end end
  return false
end

-- fills the defaults (quick ones first, then the model's) and checks the values
function M.resolve(given)
  local o = {}
  for k, v in pairs(given) do
    if not M.option_known(k) then error(fmt("char_lm: unknown option '%s'", k), 0) end
    o[k] = v
  end
  if o.quick then for k, v in pairs(QUICK) do if o[k] == nil then o[k] = v end end end
  local lstm = (o.model or DEFAULTS.model) == "lstm"
  local model_defaults = { layers = lstm and 2 or 4, width = lstm and 256 or 128, lr = lstm and 2e-3 or 1e-3 }
  for _, x in ipairs(M.OPTIONS) do
    local k = x[1]
    local default = DEFAULTS[k]
    if default == nil then default = model_defaults[k] end
    if o[k] == nil then o[k] = default end
    local want = type(default)
    if want == "number" and type(o[k]) ~= "number" then
      local n = tonumber(o[k])
      if n == nil then error(fmt("char_lm: --%s expects a number, got '%s'", k, tostring(o[k])), 0) end
      o[k] = n
    end
  end
  if o.ff == nil then o.ff = 4 * o.width end
  o.ff = tonumber(o.ff)
  if o.model ~= "transformer" and o.model ~= "lstm" then
    error(fmt("char_lm: --model must be transformer or lstm, got '%s'", tostring(o.model)), 0)
  end
  if o.dtype ~= "float32" and o.dtype ~= "float64" then
    error(fmt("char_lm: --dtype must be float32 or float64, got '%s'", tostring(o.dtype)), 0)
  end
  for _, k in ipairs({ "steps", "batch", "context", "layers", "heads", "width", "ff", "eval-batches" }) do
    if o[k] < 1 or o[k] % 1 ~= 0 then error(fmt("char_lm: --%s must be a positive integer, got %s", k, tostring(o[k])), 0) end
  end
  if o.model == "transformer" and o.width % o.heads ~= 0 then
    error(fmt("char_lm: --width (%d) must be a multiple of --heads (%d)", o.width, o.heads), 0)
  end
  if o["held-out"] <= 0 or o["held-out"] >= 1 then
    error(fmt("char_lm: --held-out must be in (0, 1), got %s", tostring(o["held-out"])), 0)
  end
  if o.temperature <= 0 then error(fmt("char_lm: --temperature must be > 0, got %s", tostring(o.temperature)), 0) end
  return o
end

-- -- data -----------------------------------------------------------------------------------
-- A short text for --quick and the tests (written for this file).
M.BUILTIN = [[
The quick brown fox jumps over the lazy dog.
%
A cat sat on the mat and watched the rain fall on the garden.
%
The early bird catches the worm, but the second mouse gets the cheese.
%
Never put off until tomorrow what you can do the day after tomorrow.
%
If at first you do not succeed, read the manual, then try again.
%
The sun rose over the hills, and the dog ran down to the river.
%
A fool and his money are soon parted; a wise man and his money are soon audited.
%
Time flies like an arrow; fruit flies like a banana.
%
]]

-- text (a string) to {ids = int64 tensor of 1-based ids, chars = {id -> byte string}, vocab = n}
function M.encode(text)
  local seen = {}
  for i = 1, #text do seen[text:byte(i)] = true end
  local bytes = {}
  for b = 0, 255 do if seen[b] then bytes[#bytes + 1] = b end end
  local id_of, chars = {}, {}
  for i, b in ipairs(bytes) do id_of[b], chars[i] = i, string.char(b) end
  local ids = {}
  for i = 1, #text do ids[i] = id_of[text:byte(i)] end
  return { ids = T.tensor(ids, { dtype = "int64" }), chars = chars, id_of = id_of, vocab = #bytes }
end

function M.read_text(path)
  if path == "builtin" then return M.BUILTIN:rep(8) end
  local f = io.open(path, "rb")
  if not f then
    error(fmt("char_lm: cannot read %s (run tools/fetch_fortunes.sh, or pass --text FILE or --text builtin)", path), 0)
  end
  local s = f:read("*a")
  f:close()
  return s
end

-- the train and held-out id tensors; each must hold at least context + 1 ids
function M.split(ids, held_out, context)
  local n = ids:numel()
  local nh = math.floor(n * held_out)
  if nh < context + 1 or n - nh < context + 1 then
    error(fmt("char_lm: a text of %d characters is too short for context %d with %.0f%% held out", n, context,
      100 * held_out), 0)
  end
  return ids:narrow(1, 1, n - nh), ids:narrow(1, n - nh + 1, nh)
end

-- B random windows of context + 1 ids: (B, context + 1), 1-based ids
function M.batch(ids, B, context)
  local starts = T.randint(1, ids:numel() - context + 1, { B, 1 })   -- 1 .. n - context
  local idx = starts + T.arange(0, context + 1):reshape(1, context + 1)
  return ids:index_select(1, idx:reshape(-1)):reshape(B, context + 1)
end

-- -- models ---------------------------------------------------------------------------------
local CharTransformer = nn.Module:extend("CharTransformer")
function CharTransformer:init(o, vocab)
  local fo = { dtype = o.dtype }
  self.context = o.context
  self.tok = nn.Embedding(vocab, o.width, fo)
  self.pos = nn.Embedding(o.context, o.width, fo)
  local layer = nn.TransformerEncoderLayer(o.width, o.heads, { dim_feedforward = o.ff, dropout = o.dropout,
    activation = "gelu", batch_first = true, norm_first = true, dtype = o.dtype })
  self.encoder = nn.TransformerEncoder(layer, o.layers, { norm = nn.LayerNorm(o.width, fo) })
  self.head = nn.Linear(o.width, vocab, fo)
  self._masks = {}
end
-- x (B, L) ids, L <= context -> logits (B, L, vocab)
function CharTransformer:forward(x)
  local L = x:size(2)
  local mask = self._masks[L]
  if mask == nil or tostring(mask.device) ~= tostring(x.device) then
    mask = nn.Transformer.generate_square_subsequent_mask(L, { dtype = self.head.weight.dtype, device = x.device })
    self._masks[L] = mask
  end
  local pos = T.arange(1, L + 1, { device = x.device })
  local h = self.tok(x) + self.pos(pos)
  h = self.encoder(h, { mask = mask, is_causal = true })
  return self.head(h)
end

local CharLSTM = nn.Module:extend("CharLSTM")
function CharLSTM:init(o, vocab)
  local fo = { dtype = o.dtype }
  self.tok = nn.Embedding(vocab, o.width, fo)
  self.lstm = nn.LSTM(o.width, o.width, { num_layers = o.layers, batch_first = true,
    dropout = o.layers > 1 and o.dropout or 0, dtype = o.dtype })
  self.head = nn.Linear(o.width, vocab, fo)
end
-- x (B, L) ids[, state] -> logits (B, L, vocab), state
function CharLSTM:forward(x, state)
  local h, s = self.lstm(self.tok(x), state)
  return self.head(h), s
end

function M.build_model(o, vocab)
  if o.model == "lstm" then return CharLSTM(o, vocab) end
  return CharTransformer(o, vocab)
end

-- the learning rate of step s (1-based): linear warm-up, then cosine to a tenth
function M.lr_at(o, s)
  local peak, w = o.lr, o.warmup
  if w > 0 and s <= w then return peak * s / w end
  local t = (s - w) / math.max(1, o.steps - w)
  return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * math.min(1, t))))
end

local function loss_of(model, b, vocab)
  local L = b:size(2) - 1
  local x, y = b:narrow(2, 1, L), b:narrow(2, 2, L)
  local logits = model(x)
  return F.cross_entropy(logits:reshape(-1, vocab), y:reshape(-1))
end

-- mean loss over n batches of held-out windows (the generator is saved and
-- restored, so evaluating does not change the training batches)
function M.evaluate(model, ids, o, vocab, dev)
  local state = T.get_rng_state and T.get_rng_state()
  T.manual_seed(1234)
  model:eval()
  local sum = 0
  T.no_grad(function()
    for _ = 1, o["eval-batches"] do
      sum = sum + loss_of(model, M.batch(ids, o.batch, o.context):to(dev), vocab):item()
    end
  end)
  model:train()
  if state then T.set_rng_state(state) end
  return sum / o["eval-batches"]
end

-- n characters from the model after `prompt` (a string of known characters)
function M.sample(model, data, o, prompt, n, dev)
  model:eval()
  local out = {}
  local ids = {}
  for i = 1, #prompt do ids[i] = data.id_of[prompt:byte(i)] or 1 end
  local temp = o.temperature
  T.no_grad(function()
    local state, last
    if o.model == "lstm" then
      local logits
      logits, state = model(T.tensor({ ids }, { dtype = "int64" }):to(dev))
      last = logits:select(2, logits:size(2))
    end
    for _ = 1, n do
      if o.model ~= "lstm" then
        local from = math.max(1, #ids - o.context + 1)
        local window = {}
        for i = from, #ids do window[#window + 1] = ids[i] end
        local logits = model(T.tensor({ window }, { dtype = "int64" }):to(dev))
        last = logits:select(2, logits:size(2))
      end
      local p = F.softmax(last:double() / temp, 2):cpu()
      local id = T.multinomial(p, 1):reshape(-1)[1]:item()
      ids[#ids + 1] = id
      out[#out + 1] = data.chars[id]
      if o.model == "lstm" then
        local logits
        logits, state = model(T.tensor({ { id } }, { dtype = "int64" }):to(dev), state)
        last = logits:select(2, 1)
      end
    end
  end)
  model:train()
  return table.concat(out)
end

-- -- training -------------------------------------------------------------------------------
-- Trains with options o (M.resolve's); text overrides o.text when given.
-- print (default: print) receives the progress lines. Returns
-- {losses = {...}, evals = {{step, loss}, ...}, held_out = last held-out
-- loss, samples = {...}, model = ..., data = ..., seconds = ...}.
function M.run(o, text, print_fn)
  local say = print_fn or print
  local dev = o.device
  T.manual_seed(o.seed)
  local data = M.encode(text or M.read_text(o.text))
  local train_ids, held_ids = M.split(data.ids, o["held-out"], o.context)
  local threads_before = T.get_num_threads()
  if o.threads > 0 then T.set_num_threads(o.threads) end
  local model = M.build_model(o, data.vocab)
  if dev ~= "cpu" then model:to(dev) end
  model:train()
  say(fmt("char_lm: %s, %d layers, width %d, context %d; %d parameters; %d characters (%d held out), vocabulary %d",
    o.model, o.layers, o.width, o.context, model:num_parameters(), data.ids:numel(), held_ids:numel(), data.vocab))
  local dump
  if o.dump ~= "" then
    dump = { init = {}, batches = {}, losses = {}, lrs = {} }
    local sd = model:state_dict({ torch_names = true })
    for _, k in ipairs(sd.keys()) do dump.init[k] = sd[k]:cpu():clone() end
  end
  local opt = T.optim.AdamW(model:parameters(), { lr = o.lr, weight_decay = o["weight-decay"] })
  local params = model:parameters()
  local losses, evals = {}, {}
  local t0 = os.clock()
  local wall0 = T.train and T.train.clock and T.train.clock() or os.time()
  local run_sum, run_n = 0, 0
  for s = 1, o.steps do
    local lr = M.lr_at(o, s)
    for _, g in ipairs(opt.param_groups) do g.lr = lr end
    local b = M.batch(train_ids, o.batch, o.context)
    if dump then dump.batches[s] = b - 1; dump.lrs[s] = lr end   -- torch's 0-based ids
    b = b:to(dev)
    opt:zero_grad()
    local loss = loss_of(model, b, data.vocab)
    loss:backward()
    if o.clip > 0 then nn.utils.clip_grad_norm_(params, o.clip) end
    opt:step()
    local l = loss:item()
    losses[s] = l
    if dump then dump.losses[s] = l end
    run_sum, run_n = run_sum + l, run_n + 1
    if s % o["log-every"] == 0 or s == o.steps then
      say(fmt("step %5d  lr %.2e  train loss %.4f", s, lr, run_sum / run_n))
      run_sum, run_n = 0, 0
    end
    if (o["eval-every"] > 0 and s % o["eval-every"] == 0) or s == o.steps then
      local h = M.evaluate(model, held_ids, o, data.vocab, dev)
      evals[#evals + 1] = { s, h }
      say(fmt("step %5d  held-out loss %.4f (%.2f bits per character)", s, h, h / math.log(2)))
    end
  end
  local wall = (T.train and T.train.clock and T.train.clock() or os.time()) - wall0
  say(fmt("char_lm: %d steps in %.1f s (%.1f s of CPU time)", o.steps, wall, os.clock() - t0))
  local samples = {}
  for i = 1, o.samples do
    samples[i] = M.sample(model, data, o, "\n", o["sample-len"], dev)
    say(fmt("--- sample %d (temperature %.2f) ---\n%s", i, o.temperature, samples[i]))
  end
  if dump then
    local path = o.dump .. "/charlm_" .. o.model .. ".pt"
    T.save_torch(path, {
      init = dump.init, batches = T.stack(dump.batches), losses = T.tensor(dump.losses, { dtype = "float64" }),
      lrs = T.tensor(dump.lrs, { dtype = "float64" }),
      config = { model = o.model, vocab = data.vocab, layers = o.layers, heads = o.heads, width = o.width,
        ff = o.ff, context = o.context, batch = o.batch, dropout = o.dropout, weight_decay = o["weight-decay"], clip = o.clip,
        dtype = o.dtype },
    })
    say("char_lm: wrote " .. path)
  end
  T.set_num_threads(threads_before)
  return { losses = losses, evals = evals, held_out = evals[#evals][2], samples = samples, model = model,
    data = data, seconds = wall }
end

if (...) == "--module" then return M end

local argv = {}
for i = 1, select("#", ...) do argv[i] = select(i, ...) end
if #argv == 0 and arg then argv = arg end
io.stdout:setvbuf("line") -- progress lines show as they come when piped (tee, a log file)
local ok, o, help = pcall(M.parse_args, argv)
if not ok then
  io.stderr:write(tostring(o), "\n")
  os.exit(2)
end
if help then print(help) return end
M.run(o)
