-- A short tour of ember: run with `make demo` or `bin/ember examples/tour.lua`.
local T = require "ember"

print("-- creation infers dtypes as PyTorch does")
local ids = T.tensor{1, 2, 3}
local feats = T.tensor{{0.5, 1.5}, {2.5, 3.5}}
print(ids, ids.dtype)
print(feats, feats.dtype, feats.shape)

print("-- to() returns the same object when nothing changes")
print("feats:to(T.float32) == feats:", feats:to(T.float32) == feats)
print("feats:double() == feats:", feats:double() == feats)

print("-- T.Tensor shares, T.tensor copies")
local shared, copied = T.Tensor(ids), T.tensor(ids)
shared[1] = 100
print("after shared[1] = 100, ids =", ids, " copy =", copied)
