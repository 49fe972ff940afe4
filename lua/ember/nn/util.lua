-- Small argument helpers shared by the nn files (no tensors involved).
local M = {}

-- padding_idx of F.embedding / F.embedding_bag and their modules: a 1-based
-- row, or counting from the end when negative (-1 is the last row:
-- PyTorch's padding_idx + num_embeddings, 1-based); 0 and anything outside
-- -num..num is PyTorch's "Padding_idx must be within num_embeddings".
-- Returns the positive row (nil for nil); errors at level + 1.
function M.padding_idx(op, pi, num, level)
  if pi == nil then return nil end
  if type(pi) ~= "number" or pi ~= math.floor(pi) then
    error(string.format("%s: padding_idx must be an integer, got %s", op, tostring(pi)), level + 1)
  end
  if pi < -num or pi > num or pi == 0 then
    error(string.format("%s: Padding_idx must be within num_embeddings (got %d for %d embeddings: 1..%d, "
      .. "or -%d..-1 from the end)", op, pi, num, num, num), level + 1)
  end
  return pi < 0 and pi + num + 1 or pi
end

-- A size tuple as PyTorch's module reprs print it, "(3, None)": a T.None
-- (or false) entry is a size left as the input's
function M.size_repr(T, v)
  local parts = {}
  for i = 1, #v do parts[i] = (v[i] == T.None or v[i] == false) and "None" or tostring(v[i]) end
  return "(" .. table.concat(parts, ", ") .. ")"
end

-- ids of F.embedding / F.embedding_bag: int64 or int32, each in 1..num
-- (the engine's check, made in Lua where a step comes before the lookup:
-- max_norm's renormalisation, embedding_bag's index_select, which would
-- take a negative id from the end); errors at level + 1
function M.check_ids(T, op, ids, num, level)
  if ids.dtype ~= T.int64 and ids.dtype ~= T.int32 then
    error(string.format("%s: expected ids of dtype int64 or int32, got %s", op,
      (tostring(ids.dtype):gsub("^ember%.", ""))), level + 1)
  end
  if tostring(ids.device) == "meta" or ids:numel() == 0 then return end
  local lo, hi = ids:min():item(), ids:max():item()
  local bad = lo < 1 and lo or hi > num and hi or nil
  if bad then
    error(string.format("%s: id %d is out of range for %d rows (ids are 1..%d)", op, bad, num, num), level + 1)
  end
end

-- scale_grad_by_freq: weight, or (when it records a gradient) an alias of it
-- whose gradient is divided row by row by the number of times the ids name
-- the row, PyTorch's scaling, by a hook on the alias (a retained out.grad
-- stays unscaled, as PyTorch's)
function M.freq_scaled(T, weight, ids)
  if not weight.requires_grad or not T.is_grad_enabled() then return weight end
  local flat = ids:reshape(-1):to(T.int64)
  local opts = { dtype = weight.dtype, device = weight.device }
  local counts = T.zeros(weight.shape[1], opts):index_add_(1, flat, T.ones(flat:numel(), opts))
  local scale = counts:clamp_min(1):reciprocal():unsqueeze(2)
  local alias = weight:view(weight.shape)
  alias:register_hook(function(g) return g * scale end)
  return alias
end

return M
