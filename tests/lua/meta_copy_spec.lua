-- meta_copy: meta tensors as values seen from Lua: device values, moving
-- to and from meta, copies across devices, printing, and every path that
-- reads values (which refuses: a meta tensor has no data).
local T = require "ember"

local function meta(...) return T.empty({ ... }, { device = "meta" }) end

describe("the meta device from Lua", function()
  it("is a device value like cpu", function()
    assert.are.equal("meta", tostring(T.device("meta")))
    local m = T.zeros(2, { device = T.device("meta") })
    assert.are.equal("meta", m.device.type)
    assert.is_true(m.device == T.device("meta"))
  end)

  it("to('meta') keeps sizes and dtype, gives contiguous strides, and is itself on meta", function()
    local c = T.arange(12, { dtype = T.float64 }):view(3, 4):t()
    local m = c:to("meta")
    assert.are.equal("meta", tostring(m.device))
    assert.are.same({ 4, 3 }, m:size():totable())
    assert.are.equal(T.float64, m.dtype)
    assert.are.same(c:clone():stride(), m:stride()) -- what clone keeps: the dense layout
    assert.is_true(rawequal(m:to("meta"), m))
    assert.are.equal(T.int32, m:to(T.int32).dtype)
  end)

  it("copy_ into meta from the cpu checks the broadcast as on one device", function()
    local m = meta(2, 3)
    m:copy_(T.ones(3))
    assert.has_error(function() meta(3):copy_(T.ones(4)) end, "copy_: shape [4] cannot be broadcast to [3]")
    assert.has_error(function() T.ones(3):copy_(meta(4)) end, "copy_: shape [4] cannot be broadcast to [3]")
    assert.has_error(function() T.ones(3):copy_(T.ones(4)) end, "copy_: shape [4] cannot be broadcast to [3]")
  end)

  it("values cannot leave meta", function()
    local m = meta(1)
    assert.has_error(function() m:to("cpu") end, "copy_: a meta tensor has no data")
    assert.has_error(function() m:cpu() end, "copy_: a meta tensor has no data")
    assert.has_error(function() T.ones(1):copy_(m) end, "copy_: a meta tensor has no data")
    assert.has_error(function() m:item() end, "item: a meta tensor has no data")
    assert.has_error(function() m:tolist() end, "tolist: a meta tensor has no data")
    assert.has_error(function() T.save(os.tmpname(), m) end, "save: tensor 1 is a meta tensor: it has no data")
    assert.has_error(function() T.save_npy(os.tmpname(), m) end, "save_npy: a meta tensor has no data")
    if jit then assert.has_error(function() m:data() end, "data: a meta tensor has no data") end
  end)

  it("prints as PyTorch prints it", function()
    assert.are.equal("tensor(..., device='meta', size=(2, 3))", tostring(meta(2, 3)))
    assert.are.equal("tensor(..., device='meta', size=(3,), dtype=ember.int64)",
      tostring(T.empty(3, { device = "meta", dtype = T.int64 })))
    assert.are.equal("tensor(..., device='meta', size=())", tostring(T.empty({}, { device = "meta" })))
    assert.are.equal("tensor(..., device='meta', size=(0, 2))", tostring(meta(0, 2)))
    local a = T.empty(2, { device = "meta", requires_grad = true })
    assert.are.equal("tensor(..., device='meta', size=(2,), requires_grad=True)", tostring(a))
    assert.are.equal("tensor(..., device='meta', size=(2,), grad_fn=<MulBackward0>)", tostring(a * 2))
  end)

  it("mixes with no other device, in ops and in backward", function()
    assert.has_error(function() return T.ones(2) + meta(2) end,
      "add: expected all tensors to be on the same device, but found at least two devices, cpu and meta")
    local a = T.empty(2, { device = "meta", requires_grad = true })
    assert.has_error(function() (a * 2):backward(T.ones(2)) end,
      "backward: gradient 1 is on cpu, but output 1 is on meta")
    ;(a * 2):backward(meta(2))
    assert.are.equal("meta", tostring(a.grad.device))
  end)
end)
