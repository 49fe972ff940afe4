-- T.linalg host-staged (engine/src/ops/linalg_lapack.c, "Host staging"):
-- the path of a device with values but no LAPACK kernel for a routine
-- (cuda's lstsq and eig): the inputs cross to the CPU, the CPU op runs, each
-- result crosses back. C._nn_force_math(true) stages CPU tensors too (a
-- copy each way), so every case of linalg_lapack_spec.lua and
-- linalg_complex_spec.lua (values and gradients against PyTorch 1.13,
-- factors' invariants, gradcheck, errors with 1-based batch positions,
-- meta shapes) runs again through it here.
local C = require "ember.core"
local S = require "spec_include"
local env = getfenv and getfenv(1) or _ENV

S.composed("T.linalg host-staged", "tests/lua/linalg_lapack_spec.lua", env)
S.composed("complex T.linalg host-staged", "tests/lua/linalg_complex_spec.lua", env)

describe("host staging", function()
  local T = require "ember"
  local LA = T.linalg
  after_each(function() C._nn_force_math(false) end)

  it("runs every LAPACK entry through the staged path when forced, and none otherwise", function()
    local A = T.tensor({ { 4, 1, 0 }, { 1, 3, 1 }, { 0, 1, 2 } }, { dtype = T.float64 })
    local B = T.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, { dtype = T.float64 })
    local calls = {
      function() return LA.lu_factor(A) end,
      function() local LU, piv = LA.lu_factor(A); return LA.lu_solve(LU, piv, B) end,
      function() return LA.solve(A, B) end,
      function() return LA.inv(A) end,
      function() return LA.cholesky(A) end,
      function() return LA.solve_triangular(A:triu(), B, { upper = true }) end,
      function() return LA.qr(A) end,
      function() return LA.svd(A) end,
      function() return LA.svdvals(A) end,
      function() return LA.eigh(A) end,
      function() return LA.eigvalsh(A) end,
      function() return LA.eig(A) end,
      function() return LA.lstsq(A, B) end,
      function() return LA.ldl_factor(A) end,
      function() local LD, piv = LA.ldl_factor(A); return LA.ldl_solve(LD, piv, B) end,
    }
    for i, f in ipairs(calls) do
      local before = C._linalg_staged()
      local plain = { f() }
      assert.equal(before, C._linalg_staged(), "call " .. i .. " staged without force")
      C._nn_force_math(true)
      local staged = { f() }
      C._nn_force_math(false)
      assert.is_true(C._linalg_staged() > before, "call " .. i .. " not staged when forced")
      for k, v in ipairs(plain) do
        if T.is_tensor(v) then
          local same = v:is_complex() and T.equal(T.view_as_real(v), T.view_as_real(staged[k]))
              or T.equal(v, staged[k])
          assert.is_true(same, "call " .. i .. " result " .. k .. " differs")
          assert.are_not.equal(v:data_ptr(), staged[k]:data_ptr())
        end
      end
    end
  end)

  it("keeps the mixed-device error and the errors of the CPU op", function()
    C._nn_force_math(true)
    local A = T.zeros(2, 2, { dtype = T.float64 })
    local ok, err = pcall(LA.solve, A, T.ones(2, 1, { dtype = T.float64 }))
    assert.is_false(ok)
    assert.matches("linalg.solve: The solver failed because the input matrix is singular", err, 1, true)
    ok, err = pcall(LA.cholesky, T.zeros(3, 2, 2, { dtype = T.float64 }))
    assert.is_false(ok)
    assert.matches("(Batch element 1)", err, 1, true)
    local m = T.eye(2, { device = "meta", dtype = T.float64 })
    assert.same({ 2, 2 }, LA.inv(m).shape:totable()) -- meta is never staged
    C._nn_force_math(false)
  end)
end)
