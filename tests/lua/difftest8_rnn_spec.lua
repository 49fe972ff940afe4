-- Differences from PyTorch 1.13 found by the eighth round of differential
-- tests, recurrent layers (nn.RNN tanh/relu, nn.LSTM with proj_size, nn.GRU
-- and the three cells against torch with the same weights: outputs, final
-- states and the gradients w.r.t. the input, the initial states and every
-- parameter over 1-3 layers, bidirectional, batch_first, bias = false,
-- dropout in eval mode, unbatched input, omitted states, empty batches,
-- float32 and float64 all agreed). Each case has torch's value or error.
local T = require "ember"
local U = require "specutil"
local err = U.err
local nn = T.nn

local close = U.close_list

-- the file and line of an error raised by f (nil when the message has none)
local function where(f)
  local ok, e = pcall(f)
  assert.is_false(ok)
  return tostring(e):match("^(.-:%d+): ")
end

describe("difftest round 8: recurrent layers (torch 1.13)", function()
  it("a NaN dropout is refused, as torch's `not 0 <= dropout <= 1` refuses it", function()
    -- torch.nn.LSTM(3, 4, dropout=float('nan')) -> ValueError: dropout should be a
    -- number in range [0, 1] representing the probability of an element being zeroed
    for _, name in ipairs({ "RNN", "LSTM", "GRU" }) do
      err(function() nn[name](3, 4, { num_layers = 2, dropout = 0 / 0 }) end,
        name .. ": dropout should be a number in range [0, 1]")
    end
    -- the ends of the range are taken
    assert.equal(1, nn.GRU(3, 4, { num_layers = 2, dropout = 1 }).dropout)
    assert.equal(0, nn.GRU(3, 4, { num_layers = 2, dropout = 0 }).dropout)
  end)

  it("forward errors are raised at the caller's line, not inside nn/rnn.lua or nowhere", function()
    local here = debug.getinfo(1, "S").short_src
    local R = T.randn
    -- the engine op's own error (the input's dtype is not the weights'):
    -- torch: RuntimeError: mat1 and mat2 must have the same dtype
    local m32 = nn.GRU(3, 4)
    local e64 = R(5, 2, 3, { dtype = T.float64 })
    local pos = where(function() local o = m32(e64); return o end)
    assert.is_truthy(pos and pos:find(here, 1, true), tostring(pos))
    err(function() local o = m32(e64); return o end, "gru: expected weight_ih to have dtype float64")
    local cell = nn.LSTMCell(3, 4)
    pos = where(function() local h = cell(R(2, 3, { dtype = T.float64 })); return h end)
    assert.is_truthy(pos and pos:find(here, 1, true), tostring(pos))
    -- the state's kind: torch's LSTM takes a tuple (h0, c0)
    local lstm = nn.LSTM(3, 4)
    pos = where(function() local o = lstm(R(5, 2, 3), R(1, 2, 4)); return o end)
    assert.is_truthy(pos and pos:find(here, 1, true), tostring(pos))
    local gru = nn.GRU(3, 4)
    pos = where(function() local o = gru(R(5, 2, 3), { R(1, 2, 4) }); return o end)
    assert.is_truthy(pos and pos:find(here, 1, true), tostring(pos))
    -- a cell's state of the wrong shape:
    -- torch: RuntimeError: Input batch size 2 doesn't match hidden0 batch size 3
    local rc = nn.RNNCell(3, 4)
    pos = where(function() local h = rc(R(2, 3), R(3, 4)); return h end)
    assert.is_truthy(pos and pos:find(here, 1, true), tostring(pos))
    err(function() local h = rc(R(2, 3), R(3, 4)); return h end,
      "RNNCell.forward: Expected hidden size (2, 4), got [3, 4] for hx")
    local lc = nn.LSTMCell(3, 4)
    pos = where(function() local h = lc(R(2, 3), { R(2, 4), R(2, 5) }); return h end)
    assert.is_truthy(pos and pos:find(here, 1, true), tostring(pos))
    -- a layer's state (already at the caller's line)
    pos = where(function() local o = gru(R(5, 2, 3), R(1, 3, 4)); return o end)
    assert.is_truthy(pos and pos:find(here, 1, true), tostring(pos))
  end)

  it("a 3-layer bidirectional LSTM with proj_size, batch_first and dropout in eval mode", function()
    -- torch.nn.LSTM(2, 3, num_layers=3, bidirectional=True, proj_size=2, dropout=0.5,
    -- batch_first=True).eval(), float64, parameter k (named_parameters order, from 1)
    -- = 0.5 * sin(0.7 * arange(numel) + k); loss = sum of the outputs and states
    -- weighted by sin(2.1 * arange(numel)) (/tmp/rnn/spec_vals.py)
    local f64 = { dtype = T.float64 }
    local m = nn.LSTM(2, 3, { num_layers = 3, bidirectional = true, proj_size = 2, dropout = 0.5,
      batch_first = true, dtype = T.float64 })
    m:eval()
    local k = 0
    T.no_grad(function()
      for _, p in m:named_parameters() do
        k = k + 1
        p:copy_(((T.arange(p:numel(), f64) * 0.7 + k):sin() * 0.5):reshape(p.shape))
      end
    end)
    assert.equal(30, k)
    local x = (T.arange(8, f64) * 0.9):cos():reshape(2, 2, 2):requires_grad_()
    local h0 = ((T.arange(24, f64) * 1.3):sin() * 0.5):reshape(6, 2, 2):requires_grad_()
    local c0 = ((T.arange(36, f64) * 0.4):cos() * 0.5):reshape(6, 2, 3):requires_grad_()
    local out, st = m(x, { h0, c0 })
    local function w(t) return (T.arange(t:numel(), f64) * 2.1):sin():reshape(t.shape) end
    local loss = (out * w(out)):sum() + (st[1] * w(st[1])):sum() + (st[2] * w(st[2])):sum()
    loss:backward()
    close(out, {-0.081153604355170175, -0.039895054535217168, -0.13207145325655439, 0.16988267185543032, -0.11955619103751745, -0.0035663842615233764, -0.13985160970662774, 0.16470391424352446, -0.028673227446907455, 0.013435749403090752, -0.1309369338921722, 0.14390414267694523, -0.070588259661775024, 0.029461861312357424, -0.12487052166073458, 0.1336235325219518}, 1e-12, "out")
    close(st[1], {-0.076136762233932245, 0.13500044511086173, -0.12286233097793338, 0.1135655132108368, -0.19089285854789156, 0.00098691001232443414, -0.07981453759475407, 0.06035808211304898, -0.19790118147949332, 0.28023073703848339, -0.13085556080902253, 0.2359974142334498, -0.32035833939246233, 0.32424332200665823, -0.42085516616808766, 0.4026654297938701, -0.11955619103751745, -0.0035663842615233764, -0.070588259661775024, 0.029461861312357424, -0.13207145325655439, 0.16988267185543032, -0.1309369338921722, 0.14390414267694523}, 1e-12, "h_n")
    close(st[2], {0.41396008609349444, 0.36527096799602782, 0.26250911213632733, 0.39411681510776325, 0.14916663667974919, 0.061117481624519798, 0.36313996623590916, 0.26632747467700635, 0.18181702708003758, -0.065229473025602197, 0.24162344130304345, 0.28444899161464066, -0.78100315376142881, -0.28911476102341238, 0.25969418976182373, -0.49022731512405815, -0.3421558502065904, 0.14706536772885898, -0.26836521175192007, -0.62578529432819252, -0.66318063934430449, -0.45240944317794884, -0.8539411843952216, -0.87075739662649521, 0.0027833940247571076, -0.31227327494638635, -0.45593132141130516, 0.20503344662422884, -0.11119444582731922, -0.28027685647568756, 0.45810809196745672, 0.41737209042820189, 0.40533401803756025, 0.46911680971362846, 0.38428196285174204, 0.2072196757125449}, 1e-12, "c_n")
    close(x.grad, {0.17617429913924151, 0.023001272704434618, 0.10992445286640791, 0.017045316720764155, 0.16434892626714015, 0.021503584614927847, -0.069782607870311278, -0.21875703043414457}, 1e-12, "x.grad")
    close(h0.grad, {-0.03539310075028413, -0.0053210133802827023, -0.069075320655313563, -0.16012859218126682, 0.064963268888991343, 0.0640910356083913, -0.11768634049146795, -0.15043561578601913, 0.050885887307132303, -0.0012908595399972473, 0.24628994810471369, 0.1287729158883954, 0.08247521606632835, 0.13703096241284485, 0.074217497836030821, 0.1130656137850834, -0.062626287367403499, 0.048261157505017097, -0.066244582940161376, 0.08068789207792669, -0.054268068876308161, -0.062862490254197809, -0.03828701586001089, -0.10799049285186917}, 1e-12, "h0.grad")
    close(c0.grad, {0.011721438435586696, 0.21720604700255908, -0.35821112840354902, 0.046523730545424975, 0.24228891437194686, -0.44122734074701953, 0.002002016227234876, 0.050387514124553973, -0.14131941664288331, -0.009926519621059459, 0.08986059272069824, -0.10635464953217094, 0.019832317320032784, 0.1371278175865574, -0.081290353439602614, 0.14760994528623453, 0.099306741110135974, -0.18245393430066681, 0.031261674074600079, 0.2842899912630128, -0.29738390547896104, -0.031356145432106533, 0.25843901286031568, -0.25520211419828198, 0.023466346803648251, 0.43210185680565999, -0.29755723944110374, 0.13341145894547551, 0.333530734308842, -0.68105265718445662, 0.091696252117294347, 0.33376768836331128, -0.28531315847388644, 0.017315045606272172, 0.11621332304940644, -0.40250849674493666}, 1e-12, "c0.grad")
    close(m.weight_hr_l2_reverse.grad, {-0.18068696928150879, -0.1578851574625752, -0.14285416371166024, -0.14410944543691268, -0.11426062248775534, -0.014281338004796848}, 1e-12, "weight_hr_l2_reverse.grad")
    close(m.weight_ih_l1.grad, {0.011486344304527073, -0.010762959915226314, 0.0056492264254880331, 0.0046459091851532332, 0.019639397382415269, -0.022981649194603264, 0.0088119931084790059, 0.00028354185466337143, 0.012820708529467796, -0.014998860409482938, 0.0076835259356441005, 0.0021433911499444507, -0.0012258778063882849, 0.0016942930697378517, -0.0028704750063706969, 0.0038697160505987787, 0.0018098712505679195, -0.0021157049467315928, -0.0047832948801351579, 0.0038434904069429609, 0.013319094031615556, -0.017868715509277988, 0.0094749283562587747, -0.0084916398855921019, -0.035151424507623964, 0.033410428146784465, -0.019778214630862854, -0.0079511462497201171, -0.1510982180875948, 0.17949971923230662, -0.066420137624125519, 0.0045174227076263933, 0.15872731760530187, -0.18261800775636711, 0.075598714426792668, -0.0038403300934703307, 0.008454931770800941, -0.0059077442960789655, 0.0037422181127545681, 0.0098845486520015638, 0.0026460212680453508, -0.0024705047975249811, 0.00018086755187742511, 0.0021968480054206673, 0.0018248072004894281, -0.0010501712571849716, 0.0028831824878282229, 0.0020038690160432498}, 1e-12, "weight_ih_l1.grad")
  end)
end)
