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

return M
