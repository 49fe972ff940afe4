-- Differences from PyTorch 1.13 found by the eighth round of differential
-- tests, embeddings (F.embedding / nn.Embedding with padding_idx positive and
-- negative, max_norm under norm types 1, 2, 3, 0.5, 0 and inf with repeated
-- ids, from_pretrained with freeze and padding_idx, int32/int64, 0-d, empty
-- and 3-d ids, weight gradients with repeated ids; F.embedding_bag /
-- nn.EmbeddingBag in sum/mean/max with empty bags, 2-d input,
-- include_last_offset, padding_idx, per_sample_weights and max_norm, with
-- the gradients of the weight and of the per-sample weights; F.one_hot all
-- agreed). Each case has torch's value or error.
local T = require "ember"
local U = require "specutil"
local err = U.err
local nn, F = T.nn, T.nn.functional

local close = U.close_list
local function L(t) return T.tensor(t, { dtype = T.int64 }) end
local function W() return (T.arange(18, { dtype = T.float64 }):reshape(6, 3) / 10):requires_grad_() end

describe("difftest round 8: embeddings (torch 1.13)", function()
  it("F.embedding honours scale_grad_by_freq: each row's gradient divided by its count", function()
    -- torch: F.embedding([0,2,2,5,2], w, scale_grad_by_freq=True).backward(arange(15).view(5,3)*0.3+1)
    -- w.grad = [1,1.3,1.6, 0,0,0, 3.1,3.4,3.7, 0..., 3.7,4.0,4.3]; o.grad[1] (retained) = [1.9,2.2,2.5]
    local w = W()
    local o = F.embedding(L { 1, 3, 3, 6, 3 }, w, { scale_grad_by_freq = true })
    o:retain_grad()
    o:backward(T.arange(15, { dtype = T.float64 }):reshape(5, 3) * 0.3 + 1)
    close(w.grad, { 1, 1.3, 1.6, 0, 0, 0, 3.1, 3.4, 3.7, 0, 0, 0, 0, 0, 0, 3.7, 4.0, 4.3 }, 1e-12, "grad")
    close(o.grad[2], { 1.9, 2.2, 2.5 }, 1e-12, "retained out.grad is unscaled")
    -- positional form (PyTorch's order), 2-d ids: torch gives ones on rows 0 and 2
    local w2 = W()
    F.embedding(L { { 1, 3 }, { 3, 3 } }, w2, nil, nil, 2, true):sum():backward()
    close(w2.grad, { 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, 1e-12, "grad 2-d")
  end)

  it("scale_grad_by_freq with padding_idx, and nn.Embedding's option and repr", function()
    -- torch: padding_idx=0 over ids [0,2,2,5,2,0]: row 0 gets no gradient, the others as above
    local w = W()
    F.embedding(L { 1, 3, 3, 6, 3, 1 }, w, { padding_idx = 1, scale_grad_by_freq = true })
      :backward(T.arange(18, { dtype = T.float64 }):reshape(6, 3) * 0.3 + 1)
    close(w.grad, { 0, 0, 0, 0, 0, 0, 3.1, 3.4, 3.7, 0, 0, 0, 0, 0, 0, 3.7, 4.0, 4.3 }, 1e-12, "grad")
    -- torch: Embedding(3, 2, padding_idx=1, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True)
    local m = nn.Embedding(3, 2, { padding_idx = 2, max_norm = 2, norm_type = 1, scale_grad_by_freq = true })
    assert.equal("Embedding(3, 2, padding_idx=2, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True)", tostring(m))
    local e = nn.Embedding.from_pretrained(W():detach(), { freeze = false, scale_grad_by_freq = true })
    e(L { 3, 3 }):sum():backward()
    close(e.weight.grad[3], { 1, 1, 1 }, 1e-12, "from_pretrained")
    -- torch: EmbeddingBag(3, 2, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True, mode=mean)
    assert.equal("EmbeddingBag(3, 2, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True, mode=mean)",
      tostring(nn.EmbeddingBag(3, 2, { scale_grad_by_freq = true, norm_type = 1, max_norm = 2 })))
    -- sparse stays refused (ember has no sparse tensors)
    err(function() F.embedding(L { 1 }, W(), { sparse = true }) end, "embedding: sparse gradients are not supported")
  end)

  it("embedding_bag honours scale_grad_by_freq in sum and mean, refuses it in max", function()
    -- the gradient F.embedding(scale_grad_by_freq=True) summed per bag gives: row 5 (seen once)
    -- gets 1000, 10000, 100000. torch 1.13's embedding_bag gives 333.33..: it divides row 5 by
    -- the count of row 2 (_embedding_bag_dense_backward_cpu_sum_mean reads counts[indices[i]]
    -- with i the group number), a torch bug ember does not copy.
    local w = W()
    F.embedding_bag(L { 1, 3, 3, 6, 3, 2 }, w, L { 1, 4 }, { mode = "sum", scale_grad_by_freq = true })
      :backward(T.tensor({ { 1, 10, 100 }, { 1000, 10000, 100000 } }, { dtype = T.float64 }))
    close(w.grad, { 1, 10, 100, 1000, 10000, 100000, 334, 3340, 33400, 0, 0, 0, 0, 0, 0, 1000, 10000, 100000 },
      1e-12, "grad")
    -- torch: ValueError: max mode does not support scaling the gradient by the frequency
    err(function() F.embedding_bag(L { 1 }, W(), L { 1 }, { mode = "max", scale_grad_by_freq = true }) end,
      "embedding_bag: max mode does not support scaling the gradient by the frequency")
  end)

  it("max_norm checks the ids before renormalising any row", function()
    -- torch: index out of range in self (the weight's rows are not touched)
    -- ember before: index_select's error, and id -1 (0 and below wrapped) renormalised the last row first
    local w = W():detach() * 10
    local before = w:clone()
    err(function() F.embedding(L { 1, -1 }, w, { max_norm = 1 }) end,
      "embedding: id -1 is out of range for 6 rows (ids are 1..6)")
    err(function() F.embedding(L { 1, 7 }, w, { max_norm = 1 }) end,
      "embedding: id 7 is out of range for 6 rows (ids are 1..6)")
    assert.is_true(T.equal(w, before))
  end)

  it("embedding_bag refuses ids outside 1..num (a negative id read the last row)", function()
    -- torch: embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be -1
    for _, mode in ipairs { "sum", "mean", "max" } do
      err(function() F.embedding_bag(L { 1, -1 }, W(), L { 1 }, { mode = mode }) end,
        "embedding_bag: id -1 is out of range for 6 rows (ids are 1..6)")
    end
    err(function() F.embedding_bag(L { 1, 7 }, W(), L { 1 }) end, "embedding_bag: id 7 is out of range")
  end)

  it("embedding_bag checks per_sample_weights' shape and dtype", function()
    -- torch: If per_sample_weights (torch.Size([6])) is not None, then it must have the same shape
    -- as the input (torch.Size([2, 3])); ember summed the 2-d bags with them
    local ids = L { { 1, 3, 6 }, { 2, 2, 4 } }
    err(function() F.embedding_bag(ids, W(), { mode = "sum", per_sample_weights = T.ones(6, { dtype = T.float64 }) }) end,
      "embedding_bag: per_sample_weights (shape [6]) must have the same shape as the ids ([2, 3])")
    err(function() F.embedding_bag(L { 1, 2 }, W(), L { 1 }, { mode = "sum", per_sample_weights = T.ones(3, { dtype = T.float64 }) }) end,
      "embedding_bag: per_sample_weights (shape [3]) must have the same shape as the ids ([2])")
    -- torch: Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1
    -- 'per_sample_weights'; ember promoted the result to float64
    err(function() F.embedding_bag(L { 1, 2 }, W():float(), L { 1 }, { mode = "sum", per_sample_weights = T.ones(2, { dtype = T.float64 }) }) end,
      "embedding_bag: per_sample_weights (ember.float64) must have the weight's dtype (ember.float32)")
  end)

  it("embedding_bag refuses an integer weight and float offsets", function()
    -- torch: Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, Float, Double
    err(function() F.embedding_bag(L { 1, 3 }, T.arange(12):reshape(6, 2), L { 1 }, { mode = "sum" }) end,
      "embedding_bag: expected a floating-point weight, got ember.int64")
    -- torch: Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int
    err(function() F.embedding_bag(L { 1, 2 }, W(), T.tensor({ 1 }, { dtype = T.float32 })) end,
      "embedding_bag: expected int64 or int32 offsets, got ember.float32")
  end)

  it("embedding_bag max mode with only empty bags stays on the graph", function()
    -- torch: zeros (2, 3) with grad_fn EmbeddingBagBackward0; backward gives a zero weight gradient
    -- ember before: a constant, and backward failed (does not require grad)
    local w = W()
    local o = F.embedding_bag(T.zeros(0, { dtype = T.int64 }), w, L { 1, 1 }, { mode = "max" })
    assert.same({ { 0, 0, 0 }, { 0, 0, 0 } }, o:tolist())
    assert.is_true(o.requires_grad)
    o:sum():backward()
    assert.same(U.flat(T.zeros(6, 3, { dtype = T.float64 })), U.flat(w.grad))
  end)
end)
