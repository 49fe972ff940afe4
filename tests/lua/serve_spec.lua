-- examples/serve/digits_server.lua and examples/digits_model.lua without
-- nginx: the checkpoint, the request checks and the prediction the handler
-- answers with. tests/serve/run.sh runs them inside nginx.
package.path = "examples/?.lua;examples/serve/?.lua;" .. package.path
local T = require "ember"
local digits = require "digits_model"
local server = require "digits_server"

local has_cjson = pcall(require, "cjson.safe")
local cjson_it = has_cjson and it or pending

local function image(v)
  local img = {}
  for j = 1, 64 do img[j] = v or (j * 7) % 17 end
  return img
end

local function saved_cnn()
  T.manual_seed(3)
  local model = digits.cnn(T)
  local path = os.tmpname()
  digits.save(T, path, model, 4.88, 6.02)
  return path, model
end

describe("examples/digits_model.lua", function()
  it("saves the CNN with its pixel normalisation and loads it in eval mode", function()
    local path, model = saved_cnn()
    local again, ck = digits.load(T, path)
    os.remove(path)
    assert.are.equal(4.88, ck.pixel_mean)
    assert.are.equal(6.02, ck.pixel_std)
    assert.is_false(again.training)
    model:eval()
    local x = T.rand(5, 64) * 16
    local c1, p1 = digits.predict(T, model, ck, x)
    local c2, p2 = digits.predict(T, again, ck, x)
    assert.are.same(c1, c2)
    assert.is_true(T.equal(p1, p2))
    assert.are.same({ 5, 10 }, p2:size():totable())
    assert.is_true(T.allclose(p2:sum(2), T.ones(5)))
    for _, c in ipairs(c2) do assert.is_true(c >= 0 and c <= 9 and c % 1 == 0) end
    -- the digit is the argmax column minus one
    assert.are.same((p2:argmax(2) - 1):tolist(), c2)
  end)

  it("refuses a file that is not its checkpoint, naming the path", function()
    local path = os.tmpname()
    T.save(path, digits.cnn(T):state_dict())   -- a bare state_dict
    local ok, err = pcall(digits.load, T, path)
    os.remove(path)
    assert.is_false(ok)
    assert.matches("is not a checkpoint of examples/train_digits.lua", err, 1, true)
    assert.matches(path, err, 1, true)
  end)
end)

describe("examples/serve/digits_server.lua", function()
  local function refused(value, fragment)
    local images, err = server.parse_request(value)
    assert.is_nil(images)
    assert.matches(fragment, err, 1, true)
  end

  it("takes one image or a batch of images", function()
    local one = server.parse_request(image())
    assert.are.equal(1, #one)
    assert.are.equal(64, #one[1])
    local three = server.parse_request({ image(), image(0), image(16) })
    assert.are.equal(3, #three)
    local max = {}
    for i = 1, 256 do max[i] = image() end
    assert.are.equal(256, #server.parse_request(max))
  end)

  it("refuses what is not 64 finite pixel values in 0..16, saying which", function()
    local function with(j, v) local img = image(); img[j] = v; return img end
    local short, long = image(), image()
    short[64] = nil
    long[65] = 1
    refused({}, "empty batch")
    refused(5, "expected a JSON array")
    refused("x", "expected a JSON array")
    refused({ pixels = image() }, "expected a JSON array")
    refused(short, "expected 64 pixel values (8x8), got 63")
    refused(long, "expected 64 pixel values (8x8), got 65")
    refused(with(5, 0 / 0), "pixel 4 is not finite (NaN)")
    refused(with(1, math.huge), "pixel 0 is not finite (Infinity)")
    refused(with(64, -math.huge), "pixel 63 is not finite (-Infinity)")
    refused(with(2, "3"), "pixel 1 is not a number (string)")
    refused(with(2, true), "pixel 1 is not a number (boolean)")
    refused(with(7, 16.5), "pixel 6 = 16.5 is outside 0..16")
    refused(with(7, -1), "pixel 6 = -1 is outside 0..16")
    refused({ {} }, "image 0: expected 64 pixel values (8x8), got 0")
    refused({ image(), short }, "image 1: expected 64 pixel values (8x8), got 63")
    refused({ image(), 3 }, "image 1: expected an array of 64 pixel values, got number")
    refused({ image(), { a = 1 } }, "image 1: expected an array of 64 pixel values, got an object")
    local over = {}
    for i = 1, 257 do over[i] = image() end
    refused(over, "batch of 257 images is over the limit of 256")
  end)

  cjson_it("init refuses unknown options and remembers a model it could not load", function()
    local ok, err = server.init { model = "x", thread = 2 }
    assert.is_false(ok)
    assert.matches("init: unknown option 'thread'", err, 1, true)
    ok, err = server.init { threads = 1 }
    assert.is_false(ok)
    assert.matches("option 'model'", err, 1, true)
    ok, err = server.init { model = "x", max_batch = 0 }
    assert.is_false(ok)
    assert.matches("max_batch must be a positive integer", err, 1, true)
    ok, err = server.init { model = "/nonexistent/cnn.ember" }
    assert.is_false(ok)
    assert.matches("/nonexistent/cnn.ember", err, 1, true)
  end)

  cjson_it("answers with digit values and per-digit probabilities, as the model does", function()
    local path, model = saved_cnn()
    local threads = T.get_num_threads()
    assert.is_true(server.init { model = path, threads = 1, max_batch = 3 })
    T.set_num_threads(threads)
    local images = { image(), image(0), image(16) }
    local answer = server.predict(assert(server.parse_request(images)))
    model:eval()
    local classes, probs = digits.predict(T, model, T.load(path), T.tensor(images, { dtype = T.float32 }))
    os.remove(path)
    assert.are.same(classes, answer.classes)
    assert.are.same(probs:tolist(), answer.probabilities)
    refused({ image(), image(), image(), image() }, "batch of 4 images is over the limit of 3")
    assert.is_true(server.init { model = "/nonexistent" } == false)
  end)
end)
