-- Differences from PyTorch 1.13 found by the sixth round of differential
-- tests, nn.utils.rnn and the shape ops sequence code leans on: ember
-- against torch on the same inputs, each with torch's value or error.
-- Positions are 1-based in ember (dims, indices, sorted_indices): those
-- shifts are not differences.
local T = require "ember"
local U = require "specutil"
local err = U.err
local R = T.nn.utils.rnn

local list = U.flat
local function close(want, got, tol)
  assert.equal(#want, #got)
  for i = 1, #want do
    assert(math.abs(want[i] - got[i]) <= (tol or 1e-6), ("at %d: want %s, got %s"):format(i, want[i], got[i]))
  end
end

describe("difftest round 6: nn.utils.rnn and sequence shape ops (torch 1.13)", function()
  it("PackedSequence:to and the dtype/device shorthands convert data, keep batch_sizes and indices", function()
    local a = T.arange(15, { dtype = T.float32 }):reshape(5, 3)
    local b = T.arange(6, { dtype = T.float32 }):reshape(2, 3)
    local c = T.arange(12, { dtype = T.float32 }):reshape(4, 3)
    local p = R.pack_sequence({ a, b, c }, { enforce_sorted = false })
    -- torch: p.to(torch.float64).data.dtype == float64; batch_sizes [3, 3, 2, 2, 1];
    -- sorted_indices [0, 2, 1] (1-based here: 1, 3, 2)
    local q = p:to(T.float64)
    assert.equal(T.float64, q.data.dtype)
    assert.same(list(p.data), list(q.data))
    assert.same({ 3, 3, 2, 2, 1 }, list(q.batch_sizes))
    assert.same({ 1, 3, 2 }, list(q.sorted_indices))
    assert.same({ 1, 3, 2 }, list(q.unsorted_indices))
    assert.equal(T.float64, p:double().data.dtype)
    assert.equal(T.float16, p:half().data.dtype)
    assert.equal(T.int32, p:to(T.int32).data.dtype)   -- torch: int32, as Tensor.to
    assert.equal(T.int64, p:long().data.dtype)
    assert.equal(T.float32, q:float().data.dtype)
    -- unchanged data: the same object, as torch's `if data is self.data: return self`
    assert.equal(p, p:to(T.float32))
    assert.equal(p, p:cpu())
    assert.is_false(p.is_cuda)
    -- a converted PackedSequence still unpacks in the caller's order
    local padded, lens = R.pad_packed_sequence(q)
    assert.same({ 5, 2, 4 }, list(lens))
    assert.same(list(b:double()), list(padded:select(2, 2):narrow(1, 1, 2)))
  end)

  it("PackedSequence(data, batch_sizes, sorted_indices) fills unsorted_indices", function()
    -- torch: PackedSequence(data, tensor([3, 2, 1]), tensor([2, 0, 1])).unsorted_indices == [1, 2, 0]
    -- and pad_packed_sequence gives lengths [2, 1, 3]
    local data = T.arange(12, { dtype = T.float32 }):reshape(6, 2)
    local p = R.PackedSequence(data, T.tensor({ 3, 2, 1 }), T.tensor({ 3, 1, 2 }))
    assert.same({ 2, 3, 1 }, list(p.unsorted_indices))
    local padded, lens = R.pad_packed_sequence(p)
    assert.same({ 2, 1, 3 }, list(lens))
    -- column 3 of the result is sorted column 1 (the longest): rows 0 1 | 6 7 | 10 11
    assert.same({ 0, 1, 6, 7, 10, 11 }, list(padded:select(2, 3)))
    assert.same({ 4, 5, 0, 0, 0, 0 }, list(padded:select(2, 2)))
    -- and a layer returns h_n in the caller's order
    local m = T.nn.GRU(2, 3)
    local _, h = m(p)
    local _, h2 = m(R.pack_padded_sequence(padded, lens, { enforce_sorted = false }))
    close(list(h2), list(h), 1e-6)
  end)

  it("pack_padded_sequence takes a floating lengths tensor of whole values", function()
    local x = T.arange(30, { dtype = T.float32 }):reshape(5, 3, 2)
    -- torch: pack_padded_sequence(x, tensor([5., 3., 2.])).batch_sizes == [3, 3, 2, 1, 1]
    local p = R.pack_padded_sequence(x, T.tensor({ 5, 3, 2 }, { dtype = T.float32 }))
    assert.same({ 3, 3, 2, 1, 1 }, list(p.batch_sizes))
    local p2 = R.pack_padded_sequence(x, T.tensor({ 2, 5, 3 }, { dtype = T.float64 }), { enforce_sorted = false })
    assert.same({ 2, 3, 1 }, list(p2.sorted_indices))
    -- torch truncates 4.5 to 4; ember refuses a fraction
    err(function() R.pack_padded_sequence(x, T.tensor({ 4.5, 3, 2 }, { dtype = T.float32 })) end,
      "pack_padded_sequence: lengths[1] must be an integer count, got 4.5")
    err(function() R.pack_padded_sequence(x, T.tensor({ true, true, true })) end,
      "pack_padded_sequence: lengths must be a 1-d integer tensor or a list of counts")
  end)

  it("pad_packed_sequence refuses a total_length that is not an integer", function()
    local p = R.pack_sequence({ T.ones(3, 2), T.ones(2, 2) })
    -- torch: "_pad_packed_sequence(): argument 'total_length' (position 5) must be int, not float"
    err(function() R.pad_packed_sequence(p, { total_length = 4.5 }) end,
      "pad_packed_sequence: total_length must be an integer, got 4.5")
    err(function() R.pad_packed_sequence(p, { total_length = "4" }) end,
      "pad_packed_sequence: total_length must be an integer, got 4")
    assert.same({ 4, 2, 2 }, R.pad_packed_sequence(p, { total_length = 4 }).shape:totable())
  end)

  it("pad_sequence and pack_sequence name sequences of different trailing shapes", function()
    -- torch: "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
    err(function() R.pad_sequence({ T.ones(2, 3), T.ones(3, 4) }) end,
      "pad_sequence: sequences[2] has trailing shape [4] but sequences[1] has [3]")
    err(function() R.pack_sequence({ T.ones(2, 3), T.ones(3, 4) }, { enforce_sorted = false }) end,
      "pad_sequence: sequences[2] has trailing shape [4] but sequences[1] has [3]")
    -- torch broadcasts a (3) sequence into (3, 3) rows here; ember refuses
    err(function() R.pad_sequence({ T.ones(2, 3), T.ones(3) }) end,
      "pad_sequence: sequences[2] has trailing shape [] but sequences[1] has [3]")
  end)

  it("broadcast_shapes and broadcast_tensors name the mismatching arguments, 1-based", function()
    -- torch: "Shape mismatch: objects cannot be broadcast to a single shape. Mismatch is between arg 0 and arg 2."
    err(function() T.broadcast_shapes({ 3, 1 }, { 4 }, { 2, 4 }) end,
      "Mismatch is between arg 1 [3, 1] and arg 3 [2, 4]: size 3 vs 2 at dimension 1 of the result")
    -- torch: "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 0"
    err(function() T.broadcast_tensors(T.zeros(0), T.zeros(2)) end,
      "broadcast_tensors: Shape mismatch: objects cannot be broadcast to a single shape. Mismatch is between arg 1 [0] and arg 2 [2]")
    err(function() T.broadcast_tensors({ T.zeros(5, 1), T.zeros(1, 3), T.zeros(4, 1) }) end,
      "arg 1 [5, 1] and arg 3 [4, 1]: size 5 vs 4 at dimension 1")
  end)
end)
