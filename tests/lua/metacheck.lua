-- metacheck: the one comparison the meta specs make. A result on meta must
-- have the CPU result's metadata: it is the ops' work alone (the meta
-- kernels compute no values), so sizes, strides and dtype must be equal.
local T = require "ember"
local assert = require "luassert"

local M = {}

function M.same_meta(cpu, meta, what)
  assert.is_true(T.is_tensor(meta), what)
  assert.are.equal("cpu", tostring(cpu.device), what)
  assert.are.equal("meta", tostring(meta.device), what)
  assert.are.equal(cpu.dtype, meta.dtype, what)
  assert.are.same(cpu:size(), meta:size(), what)
  assert.are.same(cpu:stride(), meta:stride(), what)
end

return M
