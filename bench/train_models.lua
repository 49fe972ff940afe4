-- The training-step workloads shared by bench/train_step.lua and the
-- `make bench` worker (bench/worker.lua); bench/train_models.py is the same
-- in PyTorch. A step is: zero_grad, forward, cross_entropy, backward,
-- optimizer step, on one batch of 32 digits (8x8 images, 10 classes).
-- zero_grad sets the gradients to none on both sides (ember's default and
-- PyTorch 2's; PyTorch 1.13's default zeroes them in place, so it is
-- spelled out there).
--
-- The batch is the first 32 rows of data/digits.csv.gz when
-- tools/fetch_digits.sh has fetched it, else a seeded random batch of the
-- same shape (the time of a step does not depend on the values).
return function(T)
  local nn, F = T.nn, T.nn.functional
  local M = {}

  -- the LSTM language model's batch (train_lstm): 32 random sequences of
  -- 65 character ids in 1..96; inputs the first 64, targets the next ones
  local LM_V = 96
  local function lm_batch()
    T.manual_seed(0)
    local ids = T.randint(1, LM_V + 1, { 32, 65 })
    return ids:narrow(2, 1, 64), ids:narrow(2, 2, 64):reshape(-1)
  end
  local LstmLM = nn.Module:extend("LstmLM")
  function LstmLM:init()
    self.emb = nn.Embedding(LM_V, 64)
    self.lstm = nn.LSTM(64, 128, { num_layers = 2, batch_first = true })
    self.head = nn.Linear(128, LM_V)
  end
  function LstmLM:forward(x)
    local h = self.lstm(self.emb(x))
    return self.head(h):reshape(-1, LM_V)
  end

  function M.batch(name)
    if name == "lstm_lm" then return lm_batch() end
    local f = io.open("data/digits.csv.gz")
    if f then
      f:close()
      local raw = T.data.read_csv("data/digits.csv.gz"):narrow(1, 1, 32)
      return raw:narrow(2, 1, 64):reshape(32, 1, 8, 8) / 16, raw:select(2, 65):long() + 1
    end
    T.manual_seed(0)
    return T.rand(32, 1, 8, 8), T.randint(1, 11, { 32 })
  end

  M.models = {
    mlp = function()
      return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    end,
    cnn = function()
      return nn.Sequential(
        nn.Conv2d(1, 32, 3, { padding = 1 }), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, { padding = 1 }), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Linear(128, 10))
    end,
    -- embedding 64, LSTM 2 x 128 (batch_first), linear to the 96 ids
    lstm_lm = function() return LstmLM() end,
  }

  M.optimizers = {
    sgd = function(params) return T.optim.SGD(params, { lr = 0.01, momentum = 0.9 }) end,
    adam = function(params) return T.optim.Adam(params, { lr = 1e-3 }) end,
  }

  -- A function running one training step of model `name` with optimizer
  -- `optname` (a fresh model, seeded, in training mode).
  function M.step_fn(name, optname, x, y, device)
    T.manual_seed(0)
    local model = M.models[name]()
    if device then model = model:to(device) end
    model:train()
    local opt = M.optimizers[optname or "sgd"](model:parameters())
    return function()
      opt:zero_grad(true) -- set_to_none, as the PyTorch side (ember's default, not 1.13's)
      local loss = F.cross_entropy(model(x), y)
      loss:backward()
      opt:step()
      return loss
    end
  end

  -- A random digits-shaped batch of n on device (the GPU rows' batch 256).
  function M.random_batch(n, device)
    T.manual_seed(0)
    return T.rand(n, 1, 8, 8):to(device), T.randint(1, 11, { n }):to(device)
  end

  -- One step of a small causal transformer block (the train_transformer
  -- rows): a pre-norm encoder layer (d 128, 4 heads, ff 512, dropout 0.1)
  -- over (N, 64) tokens of a vocabulary of 64, embedding and head, SGD
  -- momentum; bench/train_models.py has the same model.
  function M.transformer_step(N, device)
    T.manual_seed(0)
    local L, D, V = 64, 128, 64
    local emb = nn.Embedding(V, D)
    local layer = nn.TransformerEncoderLayer(D, 4, { dim_feedforward = 512, dropout = 0.1, batch_first = true,
      norm_first = true })
    local head = nn.Linear(D, V)
    if device then
      emb, layer, head = emb:to(device), layer:to(device), head:to(device)
    end
    local params = {}
    for _, m in ipairs({ emb, layer, head }) do
      for _, p in ipairs(m:parameters()) do params[#params + 1] = p end
    end
    local opt = T.optim.SGD(params, { lr = 0.01, momentum = 0.9 })
    local ids = T.randint(1, V + 1, { N, L }):to(device or "cpu")
    local tgt = T.randint(1, V + 1, { N * L }):to(device or "cpu")
    local mask = nn.Transformer.generate_square_subsequent_mask(L):to(device or "cpu")
    return function()
      opt:zero_grad()
      local h = layer(emb(ids), { src_mask = mask, is_causal = true })
      local loss = F.cross_entropy(head(h):reshape(N * L, V), tgt)
      loss:backward()
      opt:step()
      return loss
    end
  end
  return M
end
