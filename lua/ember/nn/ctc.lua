-- F.ctc_loss and nn.CTCLoss (issue 18, item 4; docs/nn.md, "CTCLoss").
--
-- The forward (alpha) recursion of connectionist temporal classification in
-- log space, over all samples and extended-label positions at once, one
-- time step after another: a composite of engine ops, so autograd gives
-- the exact gradient of the loss (an O(T) chain of small ops: right for the
-- sequence lengths of tests and small models, not a fused kernel). Class
-- ids, and so blank, are 1-based (blank = 1 is PyTorch's blank = 0);
-- lengths are counts.
return function(T, C, nn)
  local F, Module = nn.functional, nn.Module
  local A = require("ember.argcheck")(T)
  local nomore = require("ember.args").nomore
  local named, set = A.named, A.set

  local NEG = -math.huge

  -- log(sum(exp(x), dim)) that is -inf with a zero gradient where every
  -- entry is -inf (logsumexp's own backward would give 0 * NaN there)
  local function lse(x, dim)
    local m = x:detach():amax(dim, true)
    local finite = m:gt(NEG)
    m = T.where(finite, m, 0)
    local s = (x - m):exp():sum(dim, true)
    local pos = s:gt(0)
    local r = T.where(pos, T.where(pos, s, 1):log(), NEG) + m
    return r:squeeze(dim)
  end

  local function lengths_of(op, v, what, n)
    local out = {}
    if T.is_tensor(v) then
      if v.dtype.is_floating_point then
        error(string.format("%s: %s must be integers, got %s", op, what, tostring(v.dtype)), 3)
      end
      if v.ndim > 1 then error(string.format("%s: %s must be a 1-d tensor or a list", op, what), 3) end
      v = v:reshape(-1):tolist()
    end
    if type(v) == "number" then v = { v } end
    if type(v) ~= "table" then error(string.format("%s: %s must be a tensor or a list of counts", op, what), 3) end
    if #v ~= n then
      error(string.format("%s: expected %s to have %d entries (one per sample), got %d", op, what, n, #v), 3)
    end
    for i = 1, n do
      local x = v[i]
      if type(x) ~= "number" or x < 0 or x ~= math.floor(x) then
        error(string.format("%s: %s[%d] must be a non-negative integer, got %s", op, what, i, tostring(x)), 3)
      end
      out[i] = x
    end
    return out
  end

  local CTC = set { "blank", "reduction", "zero_infinity" }
  function F.ctc_loss(log_probs, targets, input_lengths, target_lengths, o)
    local op = "ctc_loss"
    A.check_tensor(op, log_probs, "log_probs", 2)
    A.check_tensor(op, targets, "targets", 2)
    o = A.check_opts(op, o, CTC, 2)
    local blank, red = o.blank or 1, o.reduction or "mean"
    if red ~= "mean" and red ~= "sum" and red ~= "none" then
      error(string.format("%s: %s is not a valid value for reduction", op, tostring(red)), 2)
    end
    if not log_probs.dtype.is_floating_point then
      error(string.format("%s: expected floating log_probs, got %s", op, tostring(log_probs.dtype)), 2)
    end
    if tostring(log_probs.device) == "meta" then
      error(op .. ": the meta device is not supported (the lengths and targets are read)", 2)
    end
    local unbatched = log_probs.ndim == 2
    if unbatched then -- (T, C) with a 1-d target
      log_probs = log_probs:unsqueeze(2)
      if targets.ndim == 1 then targets = targets:unsqueeze(1) end
    end
    if log_probs.ndim ~= 3 then
      error(string.format("%s: expected log_probs of shape (T, N, C) or (T, C), got %d-d", op, log_probs.ndim), 2)
    end
    local Tn, N, Cn = log_probs.shape[1], log_probs.shape[2], log_probs.shape[3]
    -- an identity whose gradient hook (below) can mark impossible samples
    local hooked = not o.zero_infinity and log_probs.requires_grad and T.is_grad_enabled()
    if hooked then log_probs = log_probs:view_as(log_probs) end
    if blank < 1 or blank > Cn then
      error(string.format("%s: blank must be in label range: 1 <= blank <= %d, got %s", op, Cn, tostring(blank)), 2)
    end
    local il = lengths_of(op, input_lengths, "input_lengths", N)
    local tl = lengths_of(op, target_lengths, "target_lengths", N)
    local tgt = targets:to(T.int64)
    local L = 0
    for i = 1, N do
      if il[i] > Tn then
        error(string.format("%s: expected input_lengths to have value at most %d, but got value %d", op, Tn, il[i]), 2)
      end
      L = math.max(L, tl[i])
    end
    -- padded (N, L) targets from either layout
    local padded
    if tgt.ndim == 2 then
      if tgt.shape[1] ~= N then error(string.format("%s: expected %d rows of targets, got %d", op, N, tgt.shape[1]), 2) end
      if L > tgt.shape[2] then
        error(string.format("%s: target length %d is longer than the targets' %d columns", op, L, tgt.shape[2]), 2)
      end
      padded = tgt:narrow(2, 1, L)
    elseif tgt.ndim == 1 then
      local total = 0
      for i = 1, N do total = total + tl[i] end
      if total ~= tgt:numel() then
        error(string.format("%s: the target lengths sum to %d but the concatenated targets have %d entries", op, total,
          tgt:numel()), 2)
      end
      local rows, start = {}, 1
      for i = 1, N do
        local row = T.full({ L }, blank, { dtype = T.int64 })
        if tl[i] > 0 then row:narrow(1, 1, tl[i]):copy_(tgt:narrow(1, start, tl[i])) end
        rows[i] = row
        start = start + tl[i]
      end
      padded = N > 0 and T.stack(rows) or T.zeros(0, L, { dtype = T.int64 })
    else
      error(string.format("%s: expected targets of 1 or 2 dims, got %d", op, tgt.ndim), 2)
    end
    -- positions past each target's length hold blank (their states never
    -- reach the final ones); class ids must be in range
    local col = T.arange(1, L + 1):view(1, -1)
    local within = col:le(T.tensor(tl, { dtype = T.int64 }):view(-1, 1))
    padded = T.where(within, padded, blank)
    if padded:numel() > 0 then
      local lo, hi = padded:min():item(), padded:max():item()
      if lo < 1 or hi > Cn then
        error(string.format("%s: target class ids must be in 1..%d, got %d", op, Cn, lo < 1 and lo or hi), 2)
      end
    end
    -- extended labels: blank, l1, blank, l2, ..., blank (N, S)
    local S = 2 * L + 1
    local ext = T.full({ N, S }, blank, { dtype = T.int64 })
    if L > 0 then ext:narrow(2, 2, 2 * L):view(N, L, 2):select(3, 1):copy_(padded) end
    -- transitions from s - 2: onto a label position (even s), not between
    -- equal labels (PyTorch's rule by position: a target id equal to blank,
    -- which PyTorch accepts, is skipped onto as any other label)
    local skip = T.zeros({ N, S }, { dtype = T.bool })
    if S > 2 then
      local cur, prev = ext:narrow(2, 3, S - 2), ext:narrow(2, 1, S - 2)
      local label_pos = T.arange(3, S + 1):remainder(2):eq(0):view(1, -1)
      skip:narrow(2, 3, S - 2):copy_(cur:ne(prev):logical_and(label_pos))
    end
    local lp = log_probs:gather(3, ext:unsqueeze(1):expand(Tn, N, S)) -- (T, N, S)
    local neg = T.full({ N, 1 }, NEG, { dtype = log_probs.dtype })
    local neg2 = T.full({ N, 2 }, NEG, { dtype = log_probs.dtype })
    local alive = T.tensor(il, { dtype = T.int64 }):view(-1, 1)
    -- t = 1: the first blank or the first label
    local init = T.full({ N, S }, NEG, { dtype = log_probs.dtype })
    init:narrow(2, 1, math.min(2, S)):fill_(0)
    local alpha = T.where(init:gt(NEG), lp[1], NEG)
    if Tn == 0 then alpha = init end
    for t = 2, Tn do
      local s1 = T.cat({ neg, alpha:narrow(2, 1, S - 1) }, 2)
      local s2 = S > 1 and T.cat({ neg2, alpha:narrow(2, 1, S - 2) }, 2) or T.full({ N, S }, NEG, { dtype = alpha.dtype })
      s2 = T.where(skip, s2, NEG)
      local nxt = lse(T.stack({ alpha, s1, s2 }, 3), 3) + lp[t]
      alpha = T.where(alive:ge(t), nxt, alpha) -- frozen past each input's length
    end
    -- -log p: the last label or the last blank at each input's last step
    local last = (T.tensor(tl, { dtype = T.int64 }) * 2 + 1):view(-1, 1)
    local a1 = alpha:gather(2, last)
    local a2 = T.where(last:gt(1), alpha:gather(2, (last - 1):clamp_min(1)), NEG)
    local loss = -lse(T.cat({ a1, a2 }, 2), 2)
    local empty_in = alive:view(-1):eq(0)
    if empty_in:any():item() then
      -- no time steps: probability 1 for an empty target, 0 otherwise
      local empty_t = T.tensor(tl, { dtype = T.int64 }):eq(0)
      loss = loss:masked_fill(empty_in:logical_and(empty_t), 0)
      loss = loss:masked_fill(empty_in:logical_and(empty_t:logical_not()), math.huge)
    end
    if o.zero_infinity then loss = loss:masked_fill(loss:eq(math.huge), 0) end
    if hooked then
      -- PyTorch's CTC backward gives an impossible alignment's sample (an
      -- infinite loss) a NaN gradient at each of its time steps (exp(-inf +
      -- inf)), whatever the incoming gradient; the recursion above gives 0
      local bad = loss:detach():eq(math.huge)
      if bad:any():item() then
        local steps = T.arange(1, Tn + 1):view(-1, 1):le(alive:view(1, -1)) -- (T, N)
        local mask = steps:logical_and(bad:view(1, -1)):unsqueeze(3):expand(Tn, N, Cn)
        log_probs:register_hook(function(g) return g:masked_fill(mask, 0 / 0) end)
      end
    end
    if unbatched and red == "none" then loss = loss:squeeze(1) end
    if red == "none" then return loss end
    if red == "sum" then return loss:sum() end
    local tlt = T.tensor(tl, { dtype = log_probs.dtype }):clamp_min(1)
    return (loss / tlt):mean()
  end
  F.ctc_loss = named("ctc_loss", F.ctc_loss)

  local CTCLoss = Module:extend("CTCLoss")
  function CTCLoss:init(o)
    o = A.check_opts("CTCLoss", o, CTC, 3)
    self.blank, self.reduction, self.zero_infinity = o.blank or 1, o.reduction or "mean", o.zero_infinity or false
  end
  function CTCLoss:forward(log_probs, targets, input_lengths, target_lengths, ...)
    nomore("CTCLoss.forward", 4, ...)
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths,
      { blank = self.blank, reduction = self.reduction, zero_infinity = self.zero_infinity })
  end
  nn.CTCLoss = CTCLoss
end
