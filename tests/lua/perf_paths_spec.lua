-- perf_paths_spec.lua: the fast paths of issue 7 give the same results as
-- the general ones, and the block cache is visible through T.memory_stats.
local T = require "ember"

describe("block cache", function()
  it("reuses a freed large block, which is not live, and empties on request", function()
    collectgarbage()
    T.empty_cache()
    local s0 = T.memory_stats()
    assert.are.equal(0, s0.cached_bytes)
    local t = T.ones(1024 * 1024) -- 4 MiB
    assert.are.equal(s0.live_bytes + 4 * 1024 * 1024, T.memory_stats().live_bytes)
    t = nil
    collectgarbage()
    local s1 = T.memory_stats()
    assert.are.equal(s0.live_bytes, s1.live_bytes)
    assert.is_true(s1.cached_bytes >= 4 * 1024 * 1024)
    local u = T.zeros(1024 * 1024 - 7)
    local s2 = T.memory_stats()
    assert.are.equal(s1.cache_hits + 1, s2.cache_hits)
    assert.are.equal(0, u:sum():item()) -- reused memory is filled as asked
    u = nil
    collectgarbage()
    T.empty_cache()
    assert.are.equal(0, T.memory_stats().cached_bytes)
  end)
end)

describe("index_select fast path", function()
  it("equals the strided path on every dim, with negative positions", function()
    local x = T.arange(1, 3 * 5 * 4 + 1):view(3, 5, 4)
    local xs = T.empty(3, 5, 8)[{ {}, {}, { 1, 4 } }] -- same values, not contiguous
    xs:copy_(x)
    assert.is_false(xs:is_contiguous())
    for dim = 1, 3 do
      local idx = T.tensor { 1, -1, 2, 2 }
      local a, b = x:index_select(dim, idx), xs:index_select(dim, idx)
      assert.is_true(T.equal(a, b))
      assert.are.same(b:size(), a:size())
    end
    assert.is_true(T.equal(x:index_select(2, T.tensor({}, { dtype = T.int64 })),
                           T.empty(3, 0, 4, { dtype = x.dtype })))
    assert.has_error(function() x:index_select(1, T.tensor { 4 }) end,
      "index_select: index 4 is out of bounds for dimension 1 with size 3")
  end)
end)

describe("tiled transposed copies", function()
  -- the tiled path (AVX2 8x8 blocks for 4-byte types, scalar tiles for
  -- the others, split across threads) against a copy through another
  -- dtype, which takes the untiled cast loop
  local unpack = table.unpack or unpack
  local shapes = { { 16, 16 }, { 17, 23 }, { 33, 40 }, { 100, 9 }, { 257, 129 }, { 300, 300 },
    { 3, 40, 50 }, { 64, 300, 2 } }
  for _, dt in ipairs { T.float32, T.int32, T.float64, T.int16, T.uint8, T.bfloat16 } do
    it(tostring(dt) .. ": every element lands where the untiled copy puts it, at 1 and 2 threads", function()
      local threads = T.get_num_threads()
      for _, nt in ipairs { 1, 2 } do
        T.set_num_threads(nt)
        for _, sh in ipairs(shapes) do
          local n = 1
          for _, v in ipairs(sh) do n = n * v end
          local x = T.arange(n):remainder(251):to(dt):view(unpack(sh))
          local y = x:transpose(1, #sh)
          local ref = y:double():contiguous():to(dt)
          assert.is_true(T.equal(y:contiguous(), ref), table.concat(sh, "x"))
          local out = T.empty(y.shape, { dtype = dt })
          assert.is_true(T.equal(out:copy_(y), ref), table.concat(sh, "x"))
        end
      end
      T.set_num_threads(threads)
    end)
  end
end)
