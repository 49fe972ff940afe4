-- T.linalg (issue 19): PyTorch's torch.linalg on the LAPACK primitives of
-- engine/src/ops/linalg_lapack.c (C._linalg_*), plus T.trace, T.kron and
-- T.tensordot. The decompositions' derivatives are PyTorch's formulas,
-- recorded as nodes whose backward is written here with ember's own ops
-- (C._autograd_custom); everything else is a composite of differentiable
-- ops. docs/linalg.md has the user's view and the decisions.
return function(T, C)
  local L = {}
  T.linalg = L
  local ARGS = require "ember.args"
  -- out= of the Lua-composed ops (kron, tensordot, multi_dot, vdot)
  local finish = require("ember.argcheck")(T).finish
  local unpack = table.unpack or unpack
  local fmt = string.format
  local INF = math.huge

  local function mT(t) return t:transpose(-2, -1) end
  local function eps_of(dt)
    return (dt == T.float64 or dt == T.complex128) and 2.220446049250313e-16 or 1.1920928955078125e-07
  end

  local function check_tensor(op, t, name)
    if not T.is_tensor(t) then
      error(fmt("%s: expected a tensor for %s, got %s", op, name or "A", type(t)), 3)
    end
  end
  local function check_bool(op, v, name)
    if v ~= nil and type(v) ~= "boolean" then
      error(fmt("%s: expected %s to be a boolean, got %s", op, name, type(v)), 4)
    end
  end
  local function check_num(op, v, name)
    if v ~= nil and type(v) ~= "number" and not T.is_tensor(v) then
      error(fmt("%s: expected %s to be a number, got %s", op, name, type(v)), 4)
    end
  end
  -- the options table at argument position pos (plain table or nil)
  local function opts_of(op, o, allowed)
    return ARGS.checkopts(op, o, allowed, 4)
  end
  local function eye_like(n, ref)
    return T.eye(n, { dtype = ref.dtype, device = ref.device })
  end

  local function needs_grad_early(t)
    return T.is_grad_enabled() and T.is_tensor(t) and t.requires_grad
  end

  -- -- complex input (docs/linalg.md, "Complex") ------------------------------
  local function is_cx(t) return t:is_complex() end
  local function value_dtype(dt)
    if dt == T.complex64 then return T.float32 end
    if dt == T.complex128 then return T.float64 end
    return dt
  end
  -- tril/triu of any float or complex tensor (the engine's tril refuses
  -- complex: a complex X is multiplied by the 0/1 mask)
  local function tri(X, k, upper)
    if not is_cx(X) then
      if upper then return X:triu(k or 0) end
      return X:tril(k or 0)
    end
    local mask = T.ones(X:size(-2), X:size(-1), { dtype = value_dtype(X.dtype), device = X.device })
    mask = upper and mask:triu(k or 0) or mask:tril(k or 0)
    return X * mask + 0 -- + 0: the -0 of a negative part times 0 becomes 0
  end
  local function tril(X, k) return tri(X, k, false) end
  local function triu(X, k) return tri(X, k, true) end
  -- the conjugate transpose of the last two dims (mT for a real tensor)
  local function mH(t)
    if is_cx(t) then return T.conj(t:transpose(-2, -1)) end
    return t:transpose(-2, -1)
  end
  -- the product over the last dim (the engine's prod refuses complex)
  local function prod_last(d)
    if not is_cx(d) then return d:prod(-1) end
    local n = d:size(-1)
    if n == 0 then return T.ones(d:narrow(-1, 1, 0):sum(-1).shape, { dtype = d.dtype, device = d.device }) end
    local p = d:select(-1, 1)
    for i = 2, n do p = p * d:select(-1, i) end
    return p
  end
  -- g summed down to shape (the adjoint of broadcasting)
  local function reduce_to(g, shape)
    local nd, ns = g:dim(), #shape
    if nd > ns then
      local dims = {}
      for i = 1, nd - ns do dims[i] = i end
      g = g:sum(dims)
    end
    for i = 1, ns do
      if shape[i] == 1 and g:size(i) ~= 1 then g = g:sum(i, true) end
    end
    return g
  end

  local function needs_grad(...)
    if not T.is_grad_enabled() then return false end
    for i = 1, select("#", ...) do
      local t = select(i, ...)
      if T.is_tensor(t) and t.requires_grad then return true end
    end
    return false
  end

  -- Records out as the result of inputs (a list, holes allowed: n slots)
  -- with backward(g) -> list of gradients.
  -- The decompositions' backwards use their saved factors as constants, so
  -- their second derivatives would be wrong: run under create_graph (grad
  -- mode on inside the backward), they raise instead (inv's is exact: its
  -- formula is made of its own recorded output)
  -- (solve, solve_triangular, det and slogdet recompute their formulas with
  -- recorded ops under create_graph, so theirs are exact too)
  local EXACT_SECOND = { LinalgInvExBackward0 = true, LinalgSolveExBackward0 = true,
    LinalgSolveTriangularBackward0 = true, LinalgDetBackward0 = true, LinalgSlogdetBackward0 = true }
  local function record(name, inputs, out, backward)
    local bw = backward
    if not EXACT_SECOND[name] then
      bw = function(...)
        if T.is_grad_enabled() then
          error(name .. ": second derivatives (create_graph through this node) are not implemented: " ..
            "its backward treats the saved factors as constants", 0)
        end
        return backward(...)
      end
    end
    return C._autograd_custom(name, inputs, out, bw)
  end
  -- Several differentiable outputs: one packed node, the outputs views of
  -- it; backward(grads) receives one gradient per output. Real outputs next
  -- to complex ones (svd's S, eigh's L, slogdet's logabsdet) are packed as
  -- complex and come back as the real part (exact: the imaginary part is
  -- 0), their gradients as real tensors.
  local function record_multi(name, inputs, outs, backward)
    local flat, shapes, sizes, real = {}, {}, {}, {}
    local cx
    for _, o in ipairs(outs) do if is_cx(o) then cx = o.dtype end end
    for i, o in ipairs(outs) do
      shapes[i] = o.shape
      sizes[i] = o:numel()
      real[i] = cx ~= nil and not is_cx(o)
      flat[i] = real[i] and o:reshape(-1):to(cx) or o:reshape(-1)
    end
    local packed = record(name, inputs, T.cat(flat), function(g)
      local gs, off = {}, 1
      for i = 1, #outs do
        gs[i] = g:narrow(1, off, sizes[i]):view(shapes[i])
        if real[i] then gs[i] = T.real(gs[i]) end
        off = off + sizes[i]
      end
      return backward(gs)
    end)
    local res, off = {}, 1
    for i = 1, #outs do
      res[i] = packed:narrow(1, off, sizes[i]):view(shapes[i])
      if real[i] then res[i] = T.real(res[i]):contiguous() end
      off = off + sizes[i]
    end
    return res
  end

  local function skew(X) return X - mH(X) end -- X - X^H (X - X^T for real X)

  -- -- solve, inv ----------------------------------------------------------
  local function solve_raw(A, B, check)
    local X, info = C._linalg_solve(A, B, check)
    return X, info
  end

  -- X with A X = B (B broadcast as matrices), differentiable
  local function solve_mat(A, B, check)
    local X, info = solve_raw(A, B, check)
    if needs_grad(A, B) then
      local Xd = X
      X = record("LinalgSolveExBackward0", { n = 2, A, B }, X, function(g)
        if T.is_grad_enabled() then -- create_graph: the formula recorded
          local gB = solve_mat(mH(A), g, 1)
          local gA = -(gB:matmul(mH((solve_mat(A, B, 1)))))
          return { reduce_to(gA, A.shape), reduce_to(gB, B.shape) }
        end
        local gB = solve_raw(mH(A), g, 1)
        local gA = -(gB:matmul(mH(Xd)))
        return { reduce_to(gA, A.shape), reduce_to(gB, B.shape) }
      end)
    end
    return X, info
  end

  local function solve_impl(op, A, B, o, check, allowed)
    check_tensor(op, A, "A")
    check_tensor(op, B, "B")
    o = opts_of(op, o, allowed)
    check_bool(op, o.left, "left")
    local left = o.left ~= false
    local vector = B:dim() == 1 or (B:dim() == A:dim() - 1 and A:dim() >= 2 and (function()
      for i = 1, B:dim() do if B:size(i) ~= A:size(i) then return false end end
      return true
    end)())
    if A:dim() < 2 then
      error(fmt("%s: The input tensor A must have at least 2 dimensions.", op), 3)
    end
    local Bm = vector and B:unsqueeze(-1) or B
    -- the matrix LAPACK factors (a singular A's info and inf/NaN depend on
    -- it): PyTorch 1.13's A^T where A is contiguous and real, else A; the
    -- engine chooses so from what it is given, which for XA = B is A^T
    local fat = A:is_contiguous() and not A:is_complex()
    local info_of = function(X, info)
      -- info has A's batch shape, as PyTorch's (B's batch dims broadcast
      -- copies of A, each with the same info)
      local extra = info:dim() - (A:dim() - 2)
      for _ = 1, extra do info = info:select(1, 1) end
      for d = 1, info:dim() do
        if A:size(d) == 1 and info:size(d) ~= 1 then info = info:narrow(d, 1, 1) end
      end
      return X, info
    end
    if not left then
      -- a vector B is a column for XA = B too, so the shapes do not fit
      -- (PyTorch 1.13 raises)
      if vector then
        error(fmt("%s: Incompatible shapes of A and B for the equation XA = B (%dx%d and %dx1)", op,
          A:size(-2), A:size(-1), B:size(-1)), 3)
      end
      -- mT(A)'s row-major copy is A, its column-major one A^T
      local X, info = solve_mat(mT(A), mT(Bm), check + (fat and 4 or 8))
      return info_of(mT(X), info)
    end
    local X, info = solve_mat(A, Bm, check + (fat and 8 or 4))
    return info_of(vector and X:squeeze(-1) or X, info)
  end

  function L.solve(A, B, o, ...)
    ARGS.nomore("linalg.solve", 3, ...)
    return (solve_impl("linalg.solve", A, B, o, 1, { "left" }))
  end
  -- X, info; check_errors = true raises as solve does
  function L.solve_ex(A, B, o, ...)
    ARGS.nomore("linalg.solve_ex", 3, ...)
    local ce = ARGS.is_opts(o) and o.check_errors
    check_bool("linalg.solve_ex", ce, "check_errors")
    return solve_impl("linalg.solve_ex", A, B, o, ce and 1 or 0, { "left", "check_errors" })
  end

  local function inv_impl(op, A, check)
    check_tensor(op, A)
    if A:dim() < 2 then
      error(fmt("%s: The input tensor A must have at least 2 dimensions.", op), 3)
    end
    if A:size(-1) ~= A:size(-2) then
      error(fmt("%s: A must be batches of square matrices, but they are %d by %d matrices",
        op, A:size(-2), A:size(-1)), 3)
    end
    local X, info = C._linalg_inv(A, check)
    if needs_grad(A) then
      local Xd = X
      X = record("LinalgInvExBackward0", { n = 1, A }, X, function(g)
        return { -(mH(Xd):matmul(g):matmul(mH(Xd))) }
      end)
    end
    return X, info
  end
  function L.inv(A, ...)
    ARGS.nooptions("linalg.inv", 2, 1, ...)
    return (inv_impl("linalg.inv", A, 2))
  end
  function L.inv_ex(A, o, ...)
    ARGS.nomore("linalg.inv_ex", 2, ...)
    o = opts_of("linalg.inv_ex", o, { "check_errors" })
    check_bool("linalg.inv_ex", o.check_errors, "check_errors")
    return inv_impl("linalg.inv_ex", A, o.check_errors and 2 or 0)
  end

  -- -- LU ---------------------------------------------------------------------
  -- the permutation (a list, 1-based) that the 1-based swaps piv make
  local function perm_of(piv, m)
    local p = {}
    for i = 1, m do p[i] = i end
    for i = 1, #piv do
      local j = piv[i]
      p[i], p[j] = p[j], p[i]
    end
    return p
  end
  -- P (the batch of permutation matrices, A = P L U) from pivots
  local function pivots_to_P(pivots, m, ref)
    local bshape = {}
    for i = 1, pivots:dim() - 1 do bshape[i] = pivots:size(i) end
    local flat, nb = {}, 0
    if pivots:size(-1) > 0 then
      flat = pivots:reshape(-1, pivots:size(-1)):tolist()
      nb = #flat
    else
      nb = 1
      for i = 1, #bshape do nb = nb * bshape[i] end
      flat = {}
      for b = 1, nb do flat[b] = {} end
    end
    local shape = {}
    for i = 1, #bshape do shape[i] = bshape[i] end
    shape[#shape + 1] = m
    shape[#shape + 1] = m
    if nb == 0 or m == 0 then return T.zeros(shape, { dtype = ref.dtype, device = ref.device }) end
    -- A = P L U: P[:, i] = e_{p[i]}, i.e. P[p[i], i] = 1 (a scatter of
    -- ones into the rows)
    local perms = {}
    for b = 1, nb do perms[b] = perm_of(flat[b], m) end
    local idx = T.tensor(perms, { dtype = T.int64 }):view(nb, 1, m)
    return T.zeros(nb, m, m, { dtype = ref.dtype }):scatter_(2, idx, 1):reshape(shape):to(ref.device)
  end

  local function unpack_LU(LU)
    local m, n = LU:size(-2), LU:size(-1)
    local k = math.min(m, n)
    local Lm = tril(LU:narrow(-1, 1, k), -1)
    local I = T.eye(m, k, { dtype = LU.dtype, device = LU.device })
    Lm = Lm + I
    local U = triu(LU:narrow(-2, 1, k))
    return Lm, U
  end

  -- the gradient with respect to B = L U of a square LU (L unit lower, U
  -- upper): L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H (real or complex)
  local function lu_core(gL, gU, Lm, U)
    local phi = tril(mH(Lm):matmul(gL), -1) + triu(gU:matmul(mH(U)))
    local X = C._linalg_solve_triangular(mH(Lm), phi, true, true, true)
    return C._linalg_solve_triangular(mH(U), X, false, false, false)
  end
  -- the derivative through A = P L U (packed LU), PyTorch's
  -- linalg_lu_backward: P lu_core for a square A; a wide A = P L [U1 | U2]
  -- is the square LU of its first m columns with U2 = L^-1 P^T A2, a tall
  -- A = P [L1; L2] U the square LU of its first n rows (of P^T A) with
  -- L2 = B2 U^-1
  local function lu_backward(gLU, LU, P)
    local m, n = LU:size(-2), LU:size(-1)
    local k = math.min(m, n)
    local Lm, U = unpack_LU(LU)
    local gL, gU = tril(gLU:narrow(-1, 1, k), -1), triu(gLU:narrow(-2, 1, k))
    if m == n then return P:matmul(lu_core(gL, gU, Lm, U)) end
    if m < n then
      local U2, gU2 = U:narrow(-1, k + 1, n - k), gU:narrow(-1, k + 1, n - k)
      local Y = C._linalg_solve_triangular(mH(Lm), gU2, true, true, true) -- L^-H gU2
      local gB1 = lu_core(gL - Y:matmul(mH(U2)), gU:narrow(-1, 1, k), Lm, U:narrow(-1, 1, k))
      return P:matmul(T.cat({ gB1, Y }, -1))
    end
    local L2, gL2 = Lm:narrow(-2, k + 1, m - k), gL:narrow(-2, k + 1, m - k)
    local Z = C._linalg_solve_triangular(mH(U), gL2, false, false, false) -- gL2 U^-H
    local gB1 = lu_core(gL:narrow(-2, 1, k), gU - mH(L2):matmul(Z), Lm:narrow(-2, 1, k), U)
    return P:matmul(T.cat({ gB1, Z }, -2))
  end

  local function lu_factor_impl(op, A, o, check)
    check_tensor(op, A)
    check_bool(op, o.pivot, "pivot")
    if o.pivot == false then
      error(fmt("%s: LU without pivoting is not implemented on the CPU", op), 3)
    end
    local LU, piv, info = C._linalg_lu_factor(A, check)
    if needs_grad(A) then
      local LUd = LU
      LU = record("LinalgLuFactorExBackward0", { n = 1, A }, LU, function(g)
        local P = pivots_to_P(piv, LUd:size(-2), LUd)
        return { lu_backward(g, LUd, P) }
      end)
    end
    return LU, piv, info
  end
  function L.lu_factor(A, o, ...)
    ARGS.nomore("linalg.lu_factor", 2, ...)
    o = opts_of("linalg.lu_factor", o, { "pivot" })
    local LU, piv = lu_factor_impl("linalg.lu_factor", A, o, true)
    return LU, piv
  end
  function L.lu_factor_ex(A, o, ...)
    ARGS.nomore("linalg.lu_factor_ex", 2, ...)
    o = opts_of("linalg.lu_factor_ex", o, { "pivot", "check_errors" })
    check_bool("linalg.lu_factor_ex", o.check_errors, "check_errors")
    return lu_factor_impl("linalg.lu_factor_ex", A, o, o.check_errors or false)
  end

  -- P, L, U with A = P L U
  function L.lu(A, o, ...)
    ARGS.nomore("linalg.lu", 2, ...)
    o = opts_of("linalg.lu", o, { "pivot" })
    local LU, piv = lu_factor_impl("linalg.lu", A, o, false)
    local P = pivots_to_P(piv, A:size(-2), A)
    local Lm, U = unpack_LU(LU)
    return P, Lm, U
  end

  -- T.lu_unpack(LU, pivots[, unpack_data[, unpack_pivots]]): P, L, U of
  -- lu_factor's packed result (torch.lu_unpack); a part not unpacked is an
  -- empty tensor, as torch's. Differentiable in LU (through tril/triu).
  -- pivots: any integer dtype (torch takes int32 only), LAPACK's 1-based
  -- positions, each checked to lie in 1..m.
  function T.lu_unpack(LU, pivots, unpack_data, unpack_pivots, ...)
    local op = "lu_unpack"
    ARGS.nooptions(op, 3, 4, unpack_data, unpack_pivots, ...)
    check_tensor(op, LU, "LU_data")
    check_tensor(op, pivots, "LU_pivots")
    check_bool(op, unpack_data, "unpack_data")
    check_bool(op, unpack_pivots, "unpack_pivots")
    if LU:dim() < 2 then error(fmt("%s: LU_data must have at least 2 dimensions, got %d", op, LU:dim()), 2) end
    local m, n = LU:size(-2), LU:size(-1)
    local k = math.min(m, n)
    if pivots:is_floating_point() or pivots:is_complex() or pivots.dtype == T.bool then
      error(fmt("%s: LU_pivots must be an integer tensor (as linalg.lu_factor gives it), got %s", op,
        tostring(pivots.dtype)), 2)
    end
    local want = {}
    for i = 1, LU:dim() - 2 do want[i] = LU:size(i) end
    want[#want + 1] = k
    local ok_shape = pivots:dim() == #want
    for i = 1, #want do ok_shape = ok_shape and pivots:size(i) == want[i] end
    if not ok_shape then
      error(fmt("%s: expected LU_pivots of shape %s for LU_data of shape %s, got %s", op,
        tostring(T.Size(want)), tostring(LU.shape), tostring(pivots.shape)), 2)
    end
    local empty = T.empty(0, { dtype = LU.dtype, device = LU.device })
    local P = empty
    if unpack_pivots ~= false then
      if pivots:numel() > 0 then
        local lo, hi = pivots:min():item(), pivots:max():item()
        if lo < 1 or hi > m then
          error(fmt("%s: pivots must be between 1 and LU_data.size(-2) = %d inclusive, got %d", op, m,
            lo < 1 and lo or hi), 2)
        end
      end
      P = pivots_to_P(pivots, m, LU)
    end
    if unpack_data == false then return P, empty, empty end
    local Lm, U = unpack_LU(LU)
    return P, Lm, U
  end

  -- X with A X = B (left) or X A = B, A = P L U given by (LU, pivots);
  -- adjoint: A^H X = B
  function L.lu_solve(LU, pivots, B, o, ...)
    local op = "linalg.lu_solve"
    ARGS.nomore(op, 4, ...)
    check_tensor(op, LU, "LU")
    check_tensor(op, pivots, "pivots")
    check_tensor(op, B, "B")
    o = opts_of(op, o, { "left", "adjoint" })
    check_bool(op, o.left, "left")
    check_bool(op, o.adjoint, "adjoint")
    local left, adj = o.left ~= false, o.adjoint == true
    -- tr: A^H (the engine's trans; A^T for a real A)
    local function raw(LUx, Bx, tr)
      if left then return C._linalg_lu_solve(LUx, pivots, Bx, tr) end
      -- X A = B  <=>  A^H X^H = B^H (and X A^H = B <=> A X^H = B^H)
      return mH(C._linalg_lu_solve(LUx, pivots, mH(Bx), not tr))
    end
    local X = raw(LU, B, adj)
    if needs_grad(LU, B) then
      local Xd = X
      X = record("LinalgLuSolveBackward0", { n = 3, LU, nil, B }, X, function(g)
        -- gB: the same solve with A's adjoint; then gA and its LU part
        local gB = raw(LU, g, not adj)
        local gA
        if left then gA = -(gB:matmul(mH(Xd))) else gA = -(mH(Xd):matmul(gB)) end
        if adj then gA = mH(gA) end
        local gLU = nil
        if LU.requires_grad then
          local P = pivots_to_P(pivots, LU:size(-2), LU)
          local Lm, U = unpack_LU(LU)
          local PtgA = mT(P):matmul(gA)
          gLU = tril(PtgA:matmul(mH(U)), -1) + triu(mH(Lm):matmul(PtgA))
          gLU = reduce_to(gLU, LU.shape)
        end
        return { gLU, nil, reduce_to(gB, B.shape) }
      end)
    end
    return X
  end

  -- -- LDL (Bunch-Kaufman: sytrf/hetrf, sytrs/hetrs) -----------------------------
  -- Not differentiable, as in torch 1.13: the results require grad and
  -- their backward raises.
  local function not_implemented(what)
    return function() error("the derivative for '" .. what .. "' is not implemented", 0) end
  end
  local function ldl_factor_impl(op, A, o, check)
    check_tensor(op, A)
    check_bool(op, o.hermitian, "hermitian")
    local LD, piv, info = C._linalg_ldl_factor(A, o.hermitian == true, check)
    if needs_grad(A) then
      LD = record("LinalgLdlFactorExBackward0", { n = 1, A }, LD, not_implemented("linalg_ldl_factor_ex"))
    end
    return LD, piv, info
  end
  -- LD, pivots with A = L D L^T (L D L^H when hermitian) from A's lower triangle
  function L.ldl_factor(A, o, ...)
    ARGS.nomore("linalg.ldl_factor", 2, ...)
    o = opts_of("linalg.ldl_factor", o, { "hermitian" })
    local LD, piv = ldl_factor_impl("linalg.ldl_factor", A, o, true)
    return LD, piv
  end
  function L.ldl_factor_ex(A, o, ...)
    ARGS.nomore("linalg.ldl_factor_ex", 2, ...)
    o = opts_of("linalg.ldl_factor_ex", o, { "hermitian", "check_errors" })
    check_bool("linalg.ldl_factor_ex", o.check_errors, "check_errors")
    return ldl_factor_impl("linalg.ldl_factor_ex", A, o, o.check_errors and 2 or 0)
  end
  -- X with A X = B, A given by ldl_factor's (LD, pivots)
  function L.ldl_solve(LD, pivots, B, o, ...)
    local op = "linalg.ldl_solve"
    ARGS.nomore(op, 4, ...)
    check_tensor(op, LD, "LD")
    check_tensor(op, pivots, "pivots")
    check_tensor(op, B, "B")
    o = opts_of(op, o, { "hermitian" })
    check_bool(op, o.hermitian, "hermitian")
    local X = C._linalg_ldl_solve(LD, pivots, B, o.hermitian == true)
    if needs_grad(LD, B) then
      X = record("LinalgLdlSolveBackward0", { n = 3, LD, nil, B }, X, not_implemented("linalg_ldl_solve"))
    end
    return X
  end

  -- -- tensorinv, tensorsolve (torch 1.13's composites of reshape and inv/solve)
  local function prod_of(shape, i, j)
    local p = 1
    for k = i, j do p = p * shape[k] end
    return p
  end
  -- the inverse of A as a map from A.shape[ind+1:] to A.shape[:ind] (ind
  -- leading dims), of shape A.shape[ind+1:] .. A.shape[:ind]
  function L.tensorinv(A, ind, o, ...)
    local op = "linalg.tensorinv"
    if ARGS.is_opts(ind) then
      ARGS.nomore(op, 2, o, ...)
      o = opts_of(op, ind, { "ind" })
      ind = o.ind
    else
      ARGS.nomore(op, 3, ...)
      opts_of(op, o, {})
    end
    check_tensor(op, A)
    if ind == nil then ind = 2 end
    if type(ind) ~= "number" or ind ~= math.floor(ind) then
      error(fmt("%s: expected an integer ind, got %s", op, tostring(ind)), 2)
    end
    if ind <= 0 then
      error(fmt("%s: Expected a strictly positive integer for 'ind', but got %d", op, ind), 2)
    end
    local sh, nd = A.shape, A:dim()
    if ind > nd then
      error(fmt("%s: ind (%d) exceeds the number of dims of A (%d)", op, ind, nd), 2)
    end
    local front, back = prod_of(sh, 1, ind), prod_of(sh, ind + 1, nd)
    if front ~= back then
      error(fmt("%s: Expected self to satisfy the requirement prod(self.shape[ind:]) == " ..
        "prod(self.shape[:ind]), but got %d != %d", op, back, front), 2)
    end
    local rs = {}
    for k = ind + 1, nd do rs[#rs + 1] = sh[k] end
    for k = 1, ind do rs[#rs + 1] = sh[k] end
    return L.inv(A:reshape(front, back)):reshape(rs)
  end

  -- X with tensordot(A, X, X.ndim) = B; dims: A's dims (1-based) moved to
  -- the end first
  function L.tensorsolve(A, B, dims, o, ...)
    local op = "linalg.tensorsolve"
    if ARGS.is_opts(dims) and (dims.dims ~= nil or next(dims) ~= nil and dims[1] == nil) then
      ARGS.nomore(op, 3, o, ...)
      o = opts_of(op, dims, { "dims" })
      dims = o.dims
    else
      ARGS.nomore(op, 4, ...)
      opts_of(op, o, {})
    end
    check_tensor(op, A)
    check_tensor(op, B, "B")
    local nd = A:dim()
    if dims ~= nil then
      if type(dims) == "number" then dims = { dims } end
      if type(dims) ~= "table" then
        error(fmt("%s: expected a list of dims, got %s", op, type(dims)), 2)
      end
      local dest = {}
      for k = 1, #dims do dest[k] = nd - #dims + k end
      A = A:movedim(dims, dest)
    end
    local sh, bn = A.shape, B:dim()
    local rs = {}
    for k = bn + 1, nd do rs[#rs + 1] = sh[k] end
    local rp, bp = prod_of(sh, bn + 1, nd), B:numel()
    if rp ~= bp then
      error(fmt("%s: Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == " ..
        "prod(self.shape[:other.ndim]), but got %d != %d", op, rp, bp), 2)
    end
    return L.solve(A:reshape(rp, rp), B:flatten()):reshape(rs)
  end

  -- -- det, slogdet -------------------------------------------------------------
  local function check_square(op, A)
    check_tensor(op, A)
    if A:dim() < 2 then
      error(fmt("%s: The input tensor A must have at least 2 dimensions.", op), 4)
    end
    if A:size(-1) ~= A:size(-2) then
      error(fmt("%s: A must be batches of square matrices, but they are %d by %d matrices",
        op, A:size(-2), A:size(-1)), 4)
    end
  end
  -- sign of each batch element's permutation (+1/-1) from LU pivots
  local function perm_sign(piv)
    local n = piv:size(-1)
    local ar = T.arange(1, n + 1, { dtype = T.int32, device = piv.device })
    local swaps = piv:ne(ar):sum(-1)
    return (swaps:remainder(2):to(T.float64) * -2 + 1)
  end
  -- conj(det) A^{-H} (det A^{-T} for a real A): the adjugate's conjugate
  -- transpose, the derivative of det. From the forward's LU (det and the
  -- solve share the factors, which keeps det A^-1 accurate as A nears a
  -- singular matrix, as PyTorch's lu_solve of the same LU); through the
  -- SVD when some matrix of the batch has an exactly zero pivot
  local function det_grad_factor(A, det, LU, piv)
    local n = A:size(-1)
    if not LU:diagonal(0, -2, -1):abs():eq(0):any():item() then
      local X = C._linalg_lu_solve(LU, piv, eye_like(n, A), true)
      local d = is_cx(det) and T.conj(det) or det
      return X * d:unsqueeze(-1):unsqueeze(-1)
    end
    -- A = U S Vh: adj(A)^T = det(U) det(V) U diag(prod_{j~=i} s_j) Vh
    local U, S, Vh = C._linalg_svd(A, false, true)
    local Sr = {}
    for i = 1, n do
      local mask = T.ones(n, { dtype = A.dtype, device = A.device })
      mask[i] = 0
      local others = S * mask + (1 - mask)
      Sr[i] = others:prod(-1, true)
    end
    local cof = T.cat(Sr, -1)
    local function sdet(M)
      local LUm, pv = C._linalg_lu_factor(M, false)
      return LUm:diagonal(0, -2, -1):prod(-1) * perm_sign(pv):to(M.dtype)
    end
    local s = sdet(U) * sdet(mT(Vh))
    local G = (U * cof:unsqueeze(-2)):matmul(Vh) * s:unsqueeze(-1):unsqueeze(-1)
    return is_cx(G) and T.conj(G) or G
  end

  function L.det(A, ...)
    local op = "linalg.det"
    ARGS.nooptions(op, 2, 1, ...)
    check_square(op, A)
    local LU, piv = C._linalg_lu_factor(A, false)
    local det = prod_last(LU:diagonal(0, -2, -1)) * perm_sign(piv):to(A.dtype)
    if needs_grad(A) then
      local d = det
      det = record("LinalgDetBackward0", { n = 1, A }, det, function(g)
        if T.is_grad_enabled() then
          -- create_graph: g conj(det) A^-H with det and the solve recorded
          -- (a singular A raises there, as the solve does)
          local dd = L.det(A)
          if is_cx(dd) then dd = T.conj(dd) end
          local rhs = eye_like(A:size(-1), A) * (g * dd):unsqueeze(-1):unsqueeze(-1)
          return { (L.solve(mH(A), rhs)) }
        end
        -- complex: conj(det) A^-H g (PyTorch's conjugate-Wirtinger form)
        local dX = det_grad_factor(A, d, LU, piv)
        return { dX * g:unsqueeze(-1):unsqueeze(-1) }
      end)
    end
    return det
  end

  function L.slogdet(A, ...)
    local op = "linalg.slogdet"
    ARGS.nooptions(op, 2, 1, ...)
    check_square(op, A)
    local LU, piv = C._linalg_lu_factor(A, false)
    local d = LU:diagonal(0, -2, -1)
    local sign, logabs
    if is_cx(d) then
      -- sign: the product of d / |d| (0 for a zero pivot), a complex number
      local ad = d:abs()
      sign = prod_last(d / (ad + ad:eq(0):to(ad.dtype))) * perm_sign(piv):to(A.dtype)
      logabs = ad:log():sum(-1)
    else
      sign = d:sign():prod(-1) * perm_sign(piv):to(A.dtype)
      logabs = d:abs():log():sum(-1)
    end
    if needs_grad(A) then
      local sgn = sign
      local outs = record_multi("LinalgSlogdetBackward0", { n = 1, A }, { sign, logabs }, function(gs)
        -- gA = g A^-H; complex: g = g_logabs - i Im(conj(g_sign) sign)
        -- (PyTorch's slogdet_backward; the sign's gradient is 0 for real A)
        local create = T.is_grad_enabled()
        local X
        if create then -- the solve recorded (create_graph)
          X = L.solve(mH(A), eye_like(A:size(-1), A))
        else
          X = C._linalg_solve(mH(A), eye_like(A:size(-1), A), 0)
        end
        local g = gs[2]
        if is_cx(A) then
          local sg = create and (L.slogdet(A)) or sgn
          g = T.complex(g, -T.imag(T.conj(gs[1]) * sg))
        end
        return { X * g:unsqueeze(-1):unsqueeze(-1) }
      end)
      sign, logabs = outs[1], outs[2]
    end
    return sign, logabs
  end

  -- -- Cholesky --------------------------------------------------------------------
  -- PyTorch's cholesky_backward (real or complex): with
  -- phi = tril(L^H gL), gA = L^-H (phi + tril(phi, -1)^H) / 2 L^-1
  local function cholesky_backward(gL, Lm)
    local Lh = mH(Lm)
    local gA = tril(Lh:matmul(gL))
    gA = (gA + mH(tril(gA, -1))) * 0.5
    gA = C._linalg_solve_triangular(Lh, gA, true, true, false)
    gA = C._linalg_solve_triangular(Lm, gA, false, false, false)
    return gA
  end
  local function cholesky_impl(op, A, o, check)
    check_tensor(op, A)
    check_bool(op, o.upper, "upper")
    local Lm, info = C._linalg_cholesky(A, check) -- its upper triangle is zeros
    if needs_grad(A) then
      local Ld = Lm
      Lm = record("LinalgCholeskyExBackward0", { n = 1, A }, Lm, function(g)
        return { cholesky_backward(g, Ld) }
      end)
    end
    if o.upper then Lm = mH(Lm) end
    return Lm, info
  end
  function L.cholesky(A, o, ...)
    ARGS.nomore("linalg.cholesky", 2, ...)
    o = opts_of("linalg.cholesky", o, { "upper" })
    return (cholesky_impl("linalg.cholesky", A, o, true))
  end
  function L.cholesky_ex(A, o, ...)
    ARGS.nomore("linalg.cholesky_ex", 2, ...)
    o = opts_of("linalg.cholesky_ex", o, { "upper", "check_errors" })
    check_bool("linalg.cholesky_ex", o.check_errors, "check_errors")
    return cholesky_impl("linalg.cholesky_ex", A, o, o.check_errors or false)
  end

  -- -- triangular solve -----------------------------------------------------------
  function L.solve_triangular(A, B, o, ...)
    local op = "linalg.solve_triangular"
    ARGS.nomore(op, 3, ...)
    check_tensor(op, A, "A")
    check_tensor(op, B, "B")
    o = opts_of(op, o, { "upper", "left", "unitriangular" })
    if o.upper == nil then error(op .. ": the option 'upper' is required (true or false)", 2) end
    check_bool(op, o.upper, "upper")
    check_bool(op, o.left, "left")
    check_bool(op, o.unitriangular, "unitriangular")
    local upper, left, unit = o.upper, o.left ~= false, o.unitriangular == true
    -- float A and B of different dtypes: computed in the promoted one (PyTorch)
    if A.dtype ~= B.dtype and (A.dtype.is_floating_point or is_cx(A)) and (B.dtype.is_floating_point or is_cx(B)) then
      local dt = T.promote_types(A.dtype, B.dtype)
      A, B = A:to(dt), B:to(dt)
    end
    local X = C._linalg_solve_triangular(A, B, upper, left, unit)
    if needs_grad(A, B) then
      local Xd = X
      X = record("LinalgSolveTriangularBackward0", { n = 2, A, B }, X, function(g)
        -- PyTorch's linalg_solve_triangular_backward: gB = A^-H g,
        -- gA = -gB X^H (left) or -X^H gB, on A's triangle; under
        -- create_graph the solves are recorded
        local gB
        if T.is_grad_enabled() then
          local tri_o = { upper = upper, left = left, unitriangular = unit }
          Xd = L.solve_triangular(A, B, tri_o)
          gB = L.solve_triangular(mH(A), g, { upper = not upper, left = left, unitriangular = unit })
        else
          gB = C._linalg_solve_triangular(mH(A), g, not upper, left, unit)
        end
        local gA
        if left then gA = -(gB:matmul(mH(Xd))) else gA = -(mH(Xd):matmul(gB)) end
        if upper then gA = triu(gA, unit and 1 or 0) else gA = tril(gA, unit and -1 or 0) end
        return { reduce_to(gA, A.shape), reduce_to(gB, B.shape) }
      end)
    end
    return X
  end

  -- -- QR -------------------------------------------------------------------------
  -- X + X^H with half the (real) diagonal
  local function syminvadj(X)
    local r = X + mH(X)
    return r - r:diagonal(0, -2, -1):diag_embed() * 0.5
  end
  -- PyTorch's linalg_qr_backward, A = Q R with m >= n (reduced), real or
  -- complex: gA = (gQ + Q syminvadj(triu(gR R^H - Q^H gQ))) R^-H
  local function qr_backward_tall(gQ, gR, Q, R)
    local gA = gR:matmul(mH(R)) - mH(Q):matmul(gQ)
    gA = Q:matmul(syminvadj(triu(gA))) + gQ
    return C._linalg_solve_triangular(mH(R), gA, false, false, false)
  end
  local function qr_backward(gQ, gR, Q, R)
    local m, n = Q:size(-2), R:size(-1)
    if m >= n then return qr_backward_tall(gQ, gR, Q, R) end
    -- wide: A = [X | Y], R = [U | V] with X = Q U, V = Q^H Y
    local U, V = R:narrow(-1, 1, m), R:narrow(-1, m + 1, n - m)
    local Y = Q:matmul(V)
    local gU, gV = gR:narrow(-1, 1, m), gR:narrow(-1, m + 1, n - m)
    local gX = qr_backward_tall(gQ + Y:matmul(mH(gV)), gU, Q, U)
    return T.cat({ gX, Q:matmul(gV) }, -1)
  end

  local function householder_raw(A, tau) return C._linalg_householder_product(A, tau) end
  -- Q of geqrf's (QR, tau) in the shape mode asks for
  local function q_of(QR, tau, m, n, complete)
    local k = math.min(m, n)
    if complete and m > n then
      local sh = QR.shape
      local full = {}
      for i = 1, #sh do full[i] = sh[i] end
      full[#full] = m
      local buf = T.zeros(full, { dtype = QR.dtype, device = QR.device })
      buf:narrow(-1, 1, n):copy_(QR)
      return householder_raw(buf, tau)
    end
    return householder_raw(QR:narrow(-1, 1, k), tau)
  end

  function L.qr(A, o, ...)
    local op = "linalg.qr"
    ARGS.nomore(op, 2, ...)
    check_tensor(op, A)
    if type(o) == "string" then o = { mode = o } end
    o = opts_of(op, o, { "mode" })
    local mode = o.mode or "reduced"
    if mode ~= "reduced" and mode ~= "complete" and mode ~= "r" then
      error(fmt("qr received unrecognized mode '%s' but expected one of 'reduced' (default), " ..
        "'r', or 'complete'", tostring(mode)), 2)
    end
    local QR, tau = C._linalg_geqrf(A)
    local m, n = A:size(-2), A:size(-1)
    local k = math.min(m, n)
    local R = triu(QR:narrow(-2, 1, mode == "complete" and m or k))
    if mode == "complete" and m > n then R = triu(QR) end
    local grad = needs_grad(A)
    if mode == "r" and not grad then
      return T.empty(0, { dtype = A.dtype, device = A.device }), R
    end
    local Q = q_of(QR, tau, m, n, mode == "complete")
    if grad then
      -- complete with m > n: Q's last m - n columns are not determined by
      -- A, so (as PyTorch) the forward runs and the backward raises
      local undiff = mode == "complete" and m > n
      local Qd, Rd = Q, R
      local outs = record_multi("LinalgQrBackward0", { n = 1, A }, { Q, R }, function(gs)
        if undiff then
          error("linalg_qr_backward: The QR decomposition is not differentiable when " ..
            "mode='complete' and nrows > ncols.", 0)
        end
        return { qr_backward(gs[1], gs[2], Qd, Rd) }
      end)
      Q, R = outs[1], outs[2]
      if mode == "r" then return T.empty(0, { dtype = A.dtype, device = A.device }), R end
    end
    return Q, R
  end

  -- the product of Householder reflectors H_1 ... H_k (first n columns)
  function L.householder_product(A, tau, ...)
    local op = "linalg.householder_product"
    ARGS.nooptions(op, 3, 2, ...)
    check_tensor(op, A, "A")
    check_tensor(op, tau, "tau")
    local Q = householder_raw(A, tau)
    if needs_grad(A, tau) then
      -- differentiable composite: Q = (I - t_1 v_1 v_1^H) ... (I - t_k v_k v_k^H) I[:, :n]
      -- (LAPACK's ungqr reflectors; v^H = v^T for real A)
      local m, n, k = A:size(-2), A:size(-1), tau:size(-1)
      local below = tril(A, -1) + T.eye(m, n, { dtype = A.dtype, device = A.device })
      -- I with A's batch dims (k = 0 leaves it as it is)
      local bs = A.shape:totable()
      bs[#bs - 1], bs[#bs] = m, m
      local H = eye_like(m, A):expand(bs)
      for i = 1, k do
        local v = below:narrow(-1, i, 1)
        local t = tau:narrow(-1, i, 1):unsqueeze(-1)
        H = H - (H:matmul(v) * t):matmul(mH(v))
      end
      Q = H:narrow(-1, 1, n)
      -- no reflector: the identity's columns, in the graph with zero
      -- gradients (as torch's)
      if k == 0 then Q = Q + A * 0 + tau:sum(-1):unsqueeze(-1):unsqueeze(-1) * 0 end
    end
    return Q
  end

  -- T.geqrf(A): LAPACK's (QR, tau) as torch.geqrf gives them (R on and above
  -- the diagonal, the reflectors below it; the input of householder_product).
  -- Not differentiable, as in torch: the backward raises.
  local function geqrf(A, ...)
    local op = "geqrf"
    ARGS.nooptions(op, 2, 1, ...)
    check_tensor(op, A)
    local QR, tau = C._linalg_geqrf(A)
    if needs_grad(A) then
      local outs = record_multi("GeqrfBackward0", { n = 1, A }, { QR, tau }, function()
        error("geqrf: the derivative for 'geqrf' is not implemented (use T.linalg.qr)", 0)
      end)
      QR, tau = outs[1], outs[2]
    end
    return QR, tau
  end
  T.geqrf = geqrf
  T.Tensor_methods.geqrf = geqrf

  -- torch.orgqr(input, tau): linalg.householder_product under its LAPACK name
  local function orgqr(A, tau, ...)
    ARGS.nooptions("orgqr", 3, 2, ...)
    return L.householder_product(A, tau)
  end
  -- their errors under their own names (the bad-input matrix's rule), the
  -- householder_product's messages included
  local OWN = { strip = "^[%w_%.]+: " }
  local named = require("ember.argcheck")(T).named
  T.orgqr = named("orgqr", orgqr, OWN)
  T.Tensor_methods.orgqr = T.orgqr

  -- T.ormqr(input, tau, other[, left[, transpose]]) (or {left=, transpose=}):
  -- Q other, Q^H other (transpose), other Q or other Q^H (left = false), Q
  -- the m x m product of geqrf's reflectors (m = input.shape[-2]), as
  -- torch.ormqr; computed here as the full Q (householder_product of the
  -- reflectors padded to m columns, tau padded with zeros: identity
  -- reflectors) times other. Differentiable (torch 1.13's raises).
  local ORMQR = { "left", "transpose" }
  local function ormqr(A, tau, B, ...)
    local op = "ormqr"
    local o = ARGS.checkopts(op, ARGS.positional(op, ORMQR, 4, ...), ORMQR, 2)
    check_tensor(op, A, "input")
    check_tensor(op, tau, "tau")
    check_tensor(op, B, "other")
    check_bool(op, o.left, "left")
    check_bool(op, o.transpose, "transpose")
    local left, trans = o.left ~= false, o.transpose == true
    if A:dim() < 2 then error(op .. ": input must have at least 2 dimensions.", 2) end
    if B:dim() ~= A:dim() then
      error(fmt("%s: Expected other to have the same number of dimensions as input, but got other.ndim " ..
        "equal to %d and input.ndim is equal to %d", op, B:dim(), A:dim()), 2)
    end
    if tau:dim() ~= A:dim() - 1 then
      error(fmt("%s: Expected tau to have one dimension less than input, but got tau.ndim equal to %d " ..
        "and input.ndim is equal to %d", op, tau:dim(), A:dim()), 2)
    end
    for i = 1, A:dim() - 2 do
      if B:size(i) ~= A:size(i) or tau:size(i) ~= A:size(i) then
        error(fmt("%s: Expected batch dimensions of other and tau to be equal to input.shape[:-2] = %s, " ..
          "but got %s and %s", op, tostring(A.shape), tostring(B.shape), tostring(tau.shape)), 2)
      end
    end
    if not (A:is_floating_point() or A:is_complex()) then
      error(fmt("%s: Expected a floating point or complex tensor as input. Got %s", op, tostring(A.dtype)), 2)
    end
    if A.dtype ~= B.dtype or A.dtype ~= tau.dtype then
      error(fmt("%s: Expected input, tau and other to have the same dtype, but got %s, %s and %s", op,
        tostring(A.dtype), tostring(tau.dtype), tostring(B.dtype)), 2)
    end
    local m, n, k = A:size(-2), A:size(-1), tau:size(-1)
    if k > n then error(op .. ": tau.shape[-1] must be less than or equal to input.shape[-1]", 2) end
    if k > m then error(op .. ": tau.shape[-1] must be less than or equal to input.shape[-2]", 2) end
    if left and B:size(-2) ~= m then error(op .. ": other.shape[-2] must be equal to input.shape[-2]", 2) end
    if not left and B:size(-1) ~= m then error(op .. ": other.shape[-1] must be equal to input.shape[-2]", 2) end
    -- the reflectors in the first k columns, then zeros up to m columns
    local V = A:narrow(-1, 1, k)
    local tz = tau
    if k < m then
      local vs, ts = V.shape:totable(), tau.shape:totable()
      vs[#vs], ts[#ts] = m - k, m - k
      V = T.cat({ V, T.zeros(vs, { dtype = A.dtype, device = A.device }) }, -1)
      tz = T.cat({ tau, T.zeros(ts, { dtype = A.dtype, device = A.device }) }, -1)
    end
    local Q = L.householder_product(V, tz)
    if trans then Q = mH(Q) end
    if left then return Q:matmul(B) end
    return B:matmul(Q)
  end
  T.ormqr = named("ormqr", ormqr, OWN)
  T.Tensor_methods.ormqr = T.ormqr

  -- -- SVD ------------------------------------------------------------------------
  -- PyTorch's svd_backward (real or complex). Complex singular vectors are
  -- defined up to a phase per pair (U diag(e^{i phi}), V diag(e^{i phi})):
  -- the loss must not depend on it (Im diag(U^H gU) = -Im diag(V^H gV)),
  -- else an error as torch; the phase-invariant gradient adds
  -- i Im diag(U^H gU) / S to the diagonal.
  local function svd_backward(gU, gS, gVh, U, S, Vh)
    local m, n, k = U:size(-2), Vh:size(-1), S:size(-1)
    if gU == nil and gVh == nil then
      return (U * gS:unsqueeze(-2)):matmul(Vh)
    end
    local cx = is_cx(U)
    local V, gV = mH(Vh), gVh and mH(gVh)
    local S2 = S * S
    local E = S2:unsqueeze(-2) - S2:unsqueeze(-1)
    E = E + eye_like(k, S)
    local ret
    local UhgU = gU and skew(mH(U):matmul(gU))
    local VhgV = gV and skew(mH(V):matmul(gV))
    if cx and k > 0 then
      local imU = UhgU and T.imag(UhgU:diagonal(0, -2, -1)) or T.zeros_like(S)
      local imV = VhgV and T.imag(VhgV:diagonal(0, -2, -1)) or T.zeros_like(S)
      -- torch's allclose(imU, -imV, rtol = 1e-2, atol = 1e-2)
      if (imU + imV):abs():gt(imV:abs() * 1e-2 + 1e-2):any():item() then
        error("svd_backward: The singular vectors in the complex case are specified up to " ..
          "multiplication by e^{i phi}. The specified loss function depends on this phase " ..
          "term, making it ill-defined.", 0)
      end
    end
    if gU and gV then
      ret = (UhgU * S:unsqueeze(-2) + S:unsqueeze(-1) * VhgV) / E
    elseif gU then
      ret = (UhgU / E) * S:unsqueeze(-2)
    else
      ret = S:unsqueeze(-1) * (VhgV / E)
    end
    -- the diagonal of ret is 0 for real input (skew parts); add gS
    if gS then ret = ret + gS:diag_embed() end
    if cx and gU and gV then ret = ret + (UhgU:diagonal(0, -2, -1) / (S * 2)):diag_embed() end
    local gA
    if m > k and gU then
      gA = U:matmul(ret)
      local gUSinv = gU / S:unsqueeze(-2)
      gA = gA + gUSinv - U:matmul(mH(U):matmul(gUSinv))
      gA = gA:matmul(Vh)
    elseif n > k and gV then
      gA = ret:matmul(Vh)
      local SinvgVh = gVh / S:unsqueeze(-1)
      gA = gA + SinvgVh - SinvgVh:matmul(V):matmul(Vh)
      gA = U:matmul(gA)
    else
      gA = U:matmul(ret):matmul(Vh)
    end
    return gA
  end

  function L.svd(A, o, ...)
    local op = "linalg.svd"
    ARGS.nomore(op, 2, ...)
    check_tensor(op, A)
    o = opts_of(op, o, { "full_matrices" })
    check_bool(op, o.full_matrices, "full_matrices")
    local full = o.full_matrices ~= false
    local U, S, Vh = C._linalg_svd(A, full, true)
    if needs_grad(A) then
      local k = S:size(-1)
      local Ud, Sd, Vd = U:narrow(-1, 1, k), S, Vh:narrow(-2, 1, k)
      local outs = record_multi("LinalgSvdBackward0", { n = 1, A }, { U, S, Vh }, function(gs)
        local gU, gVh = gs[1]:narrow(-1, 1, k), gs[3]:narrow(-2, 1, k)
        return { svd_backward(gU, gs[2], gVh, Ud, Sd, Vd) }
      end)
      U, S, Vh = outs[1], outs[2], outs[3]
    end
    return U, S, Vh
  end

  function L.svdvals(A, ...)
    local op = "linalg.svdvals"
    ARGS.nooptions(op, 2, 1, ...)
    check_tensor(op, A)
    if needs_grad(A) then
      local U, S, Vh = C._linalg_svd(A, false, true)
      return record("LinalgSvdvalsBackward0", { n = 1, A }, S, function(g)
        return { svd_backward(nil, g, nil, U, S, Vh) }
      end)
    end
    local _, S = C._linalg_svd(A, false, false)
    return S
  end

  -- -- eigh ---------------------------------------------------------------------
  local function uplo_of(op, o)
    local u = o.UPLO or "L"
    if type(u) == "string" then u = u:upper() end -- PyTorch takes "l" and "u" too
    if u ~= "L" and u ~= "U" then
      error(fmt("%s: Expected UPLO argument to be 'L' or 'U', but got %s", op, tostring(u)), 4)
    end
    return u == "U"
  end
  -- The loss must not depend on the complex eigenvectors' phases: torch's
  -- error (named by its backward, name) when Im diag(V^H gV) exceeds 1e-2
  local function check_eigvec_phase(name, VhgV)
    local im = T.imag(VhgV):diagonal(0, -2, -1)
    if im:numel() > 0 and im:abs():amax():item() > 1e-2 then
      error(name .. ": The eigenvectors in the complex case are specified up to " ..
        "multiplication by e^{i phi}. The specified loss function depends on this quantity, " ..
        "so it is ill-defined.", 0)
    end
  end
  -- PyTorch's linalg_eig_backward for a Hermitian A (real or complex):
  -- gA = V (skew(V^H gV) / 2 / E, gL on the diagonal) V^H. Complex
  -- eigenvectors are defined up to a phase each: a loss that depends on it
  -- (Im diag(V^H gV) beyond 1e-2) is an error, as torch.
  local function eigh_backward(gL, gV, Lw, V)
    local n = Lw:size(-1)
    if gV == nil then return (V * gL:unsqueeze(-2)):matmul(mH(V)) end
    local VhgV = mH(V):matmul(gV)
    local cx = is_cx(V)
    if cx then check_eigvec_phase("linalg_eigh_backward", VhgV) end
    VhgV = (VhgV - mH(VhgV)) * 0.5
    local E = Lw:unsqueeze(-2) - Lw:unsqueeze(-1) + eye_like(n, Lw)
    local ret = VhgV / E
    -- the diagonal is gL (the skew part's diagonal, i Im diag(V^H gV), is 0
    -- for a real A and dropped for a complex one, as torch)
    if cx then ret = ret - ret:diagonal(0, -2, -1):diag_embed() end
    if gL then ret = ret + gL:diag_embed() end
    return V:matmul(ret):matmul(mH(V))
  end
  function L.eigh(A, o, ...)
    local op = "linalg.eigh"
    ARGS.nomore(op, 2, ...)
    check_tensor(op, A)
    if type(o) == "string" then o = { UPLO = o } end
    o = opts_of(op, o, { "UPLO" })
    local Lw, V = C._linalg_eigh(A, uplo_of(op, o), true)
    if needs_grad(A) then
      local Ld, Vd = Lw, V
      local outs = record_multi("LinalgEighBackward0", { n = 1, A }, { Lw, V }, function(gs)
        return { eigh_backward(gs[1], gs[2], Ld, Vd) }
      end)
      Lw, V = outs[1], outs[2]
    end
    return Lw, V
  end
  function L.eigvalsh(A, o, ...)
    local op = "linalg.eigvalsh"
    ARGS.nomore(op, 2, ...)
    check_tensor(op, A)
    if type(o) == "string" then o = { UPLO = o } end
    o = opts_of(op, o, { "UPLO" })
    local up = uplo_of(op, o)
    if needs_grad(A) then
      local Lw, V = C._linalg_eigh(A, up, true)
      return record("LinalgEighBackward0", { n = 1, A }, Lw, function(g)
        return { eigh_backward(g, nil, Lw, V) }
      end)
    end
    return (C._linalg_eigh(A, up, false))
  end

  -- -- eig, eigvals (general square matrices; LAPACK geev) -----------------
  -- The derivative of (L, V) = eig(A), PyTorch 1.13's linalg_eig_backward
  -- (FunctionsManual.cpp), written with ember's ops for when complex
  -- tensors can carry gradients (docs/linalg.md, "eig"): gL, gV the
  -- incoming gradients (either may be nil), L, V the saved results; the
  -- result is gA, complex (its real part for a real A, PyTorch's
  -- handle_r_to_c). eig_impl records it.
  function L._eig_backward(gL, gV, Lw, V, real_input)
    local n = Lw:size(-1)
    local Vh = mH(V)
    local gA
    if gV == nil then
      -- V^-H diag(gL) V^H
      gA = C._linalg_solve(Vh, gL:unsqueeze(-1) * Vh, 0)
    else
      local VhgV = Vh:matmul(gV)
      check_eigvec_phase("linalg_eig_backward", VhgV)
      local diag_re = T.real(VhgV):diagonal(0, -2, -1)
      -- V^H gV - V^H V diag(re(V^H gV)), divided by conj(L_j - L_i) off the diagonal
      local ret = VhgV - Vh:matmul(V * diag_re:unsqueeze(-2))
      local Lc = T.conj(Lw)
      local E = Lc:unsqueeze(-2) - Lc:unsqueeze(-1) + eye_like(n, Lc)
      ret = ret / E
      if gL ~= nil then
        local I = eye_like(n, ret)
        ret = ret * (1 - T.real(I)) + gL:unsqueeze(-1) * I
      end
      gA = C._linalg_solve(Vh, ret:matmul(Vh), 0)
    end
    if real_input then return T.real(gA):contiguous() end
    return gA
  end

  -- eig records one node for (L, V) (gL and gV arrive together: an unused
  -- output's gradient is zero); eigvals computes V too when A requires grad,
  -- as the derivative needs it (PyTorch does the same)
  local function eig_impl(op, A, compute_v)
    check_tensor(op, A)
    if not needs_grad(A) then return C._linalg_eig(A, compute_v) end
    local real_input = not is_cx(A)
    local ok, Lw, V = pcall(C._linalg_eig, A, true)
    if not ok then -- eigvals's errors name eigvals
      error(compute_v and Lw or (tostring(Lw):gsub("linalg%.eig:", "linalg.eigvals:", 1)), 0)
    end
    local Ld, Vd = Lw, V
    if not compute_v then
      return record("LinalgEigBackward0", { n = 1, A }, Lw, function(g)
        return { L._eig_backward(g, nil, Ld, Vd, real_input) }
      end)
    end
    local outs = record_multi("LinalgEigBackward0", { n = 1, A }, { Lw, V }, function(gs)
      return { L._eig_backward(gs[1], gs[2], Ld, Vd, real_input) }
    end)
    return outs[1], outs[2]
  end
  -- L, V with A V = V diag(L): complex64/complex128 for real or complex A
  function L.eig(A, ...)
    ARGS.nooptions("linalg.eig", 2, 1, ...)
    return eig_impl("linalg.eig", A, true)
  end
  function L.eigvals(A, ...)
    ARGS.nooptions("linalg.eigvals", 2, 1, ...)
    return (eig_impl("linalg.eigvals", A, false))
  end

  -- -- pinv, matrix_rank, lstsq ----------------------------------------------
  -- (atol, rtol) as PyTorch settles them: rtol defaults to eps * max(m, n)
  -- when atol is not given (or 0), else to 0
  local function tolerances(op, A, o)
    check_num(op, o.atol, "atol")
    check_num(op, o.rtol, "rtol")
    local atol, rtol = o.atol, o.rtol
    if rtol == nil then
      local atol_pos = atol ~= nil and (T.is_tensor(atol) or atol > 0)
      rtol = atol_pos and 0 or eps_of(A.dtype) * math.max(A:size(-2), A:size(-1))
    end
    return atol or 0, rtol
  end
  local function as_batch_scalar(v, ref)
    if T.is_tensor(v) then return v:to(ref.dtype):unsqueeze(-1) end
    return v
  end
  -- the cut-off per batch element, broadcast against S [..., k]
  local function cutoff(S, smax, atol, rtol)
    local a, r = as_batch_scalar(atol, S), as_batch_scalar(rtol, S)
    local c = smax * r
    if T.is_tensor(a) then return T.maximum(c, a:expand(c.shape)) end
    if a > 0 then return c:clamp(a) end
    return c
  end

  function L.pinv(A, o, ...)
    local op = "linalg.pinv"
    ARGS.nomore(op, 2, ...)
    check_tensor(op, A)
    if A:dim() < 2 then
      error(fmt("%s: The input tensor A must have at least 2 dimensions.", op), 2)
    end
    o = opts_of(op, o, { "atol", "rtol", "hermitian" })
    check_bool(op, o.hermitian, "hermitian")
    local atol, rtol = tolerances(op, A, o)
    if A:numel() == 0 then
      -- in the graph when A requires grad (an empty gradient), as PyTorch
      if needs_grad(A) then return mT(A) * 0 end
      local sh = {}
      for i = 1, A:dim() do sh[i] = A:size(i) end
      sh[#sh - 1], sh[#sh] = sh[#sh], sh[#sh - 1]
      return T.zeros(sh, { dtype = A.dtype, device = A.device })
    end
    if o.hermitian then
      local w, V = L.eigh(A)
      local aw = w:abs()
      local c = cutoff(aw, aw:amax(-1, true), atol, rtol)
      local keep = aw:gt(c)
      local winv = T.where(keep, w:reciprocal(), T.zeros({}, { dtype = w.dtype, device = A.device }))
      local P = (V * winv:unsqueeze(-2)):matmul(mH(V))
      if P.requires_grad and keep:all():item() then
        -- nothing cut: PyTorch's pinv_backward (the derivative of the
        -- pseudo-inverse of a general A, so the gradient has PyTorch's
        -- non-Hermitian part too; eigh's would differ there). With
        -- eigenvalues cut the composite's gradient stays: PyTorch's formula
        -- is not the derivative of the truncated pseudo-inverse there
        local Pd, Ad = P:detach(), A:detach()
        P = record("LinalgPinvBackward0", { n = 1, A }, Pd, function(g)
          local gH, PH = mH(g), mH(Pd)
          local K = gH:matmul(Pd)
          local KPH = K:matmul(PH)
          return { -mH(Pd:matmul(K)) + KPH - Ad:matmul(Pd):matmul(KPH) +
            PH:matmul(Pd):matmul(gH - K:matmul(Ad)) }
        end)
      end
      return P
    end
    local U, S, Vh = L.svd(A, { full_matrices = false })
    local c = cutoff(S, S:amax(-1, true), atol, rtol)
    local sinv = T.where(S:gt(c), S:reciprocal(), T.zeros({}, { dtype = S.dtype, device = A.device }))
    return (mH(Vh) * sinv:unsqueeze(-2)):matmul(mH(U))
  end

  function L.matrix_rank(A, o, ...)
    local op = "linalg.matrix_rank"
    ARGS.nomore(op, 2, ...)
    check_tensor(op, A)
    if A:dim() < 2 then
      error(fmt("%s: The input tensor A must have at least 2 dimensions.", op), 2)
    end
    o = opts_of(op, o, { "atol", "rtol", "hermitian", "tol" })
    check_bool(op, o.hermitian, "hermitian")
    if o.tol ~= nil and (o.atol ~= nil or o.rtol ~= nil) then
      error(fmt("%s: tol cannot be given together with atol or rtol", op), 2)
    end
    if o.tol ~= nil then o = { atol = o.tol, rtol = 0, hermitian = o.hermitian } end
    local atol, rtol = tolerances(op, A, o)
    -- an empty matrix has rank 0, hermitian or not (PyTorch 1.13 answers
    -- before the squareness check of eigvalsh: 0 x 3 is rank 0)
    if A:size(-1) == 0 or A:size(-2) == 0 then
      local sh = {}
      for i = 1, A:dim() - 2 do sh[i] = A:size(i) end
      return T.zeros(sh, { dtype = T.int64, device = A.device })
    end
    local S
    if o.hermitian then S = L.eigvalsh(A):abs() else S = L.svdvals(A) end
    S = S:detach()
    local c = cutoff(S, S:amax(-1, true), atol, rtol)
    return S:gt(c):sum(-1)
  end

  local DRIVERS = { gels = 0, gelsy = 1, gelsd = 2, gelss = 3 }
  -- {solution=, residuals=, rank=, singular_values=}: PyTorch's named tuple
  function L.lstsq(A, B, o, ...)
    local op = "linalg.lstsq"
    ARGS.nomore(op, 3, ...)
    check_tensor(op, A, "A")
    check_tensor(op, B, "B")
    o = opts_of(op, o, { "rcond", "driver" })
    check_num(op, o.rcond, "rcond")
    local driver = o.driver or "gelsy"
    if DRIVERS[driver] == nil then
      error(fmt("%s: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got %s",
        op, tostring(driver)), 2)
    end
    if A:dim() < 2 then
      error(fmt("%s: input must have at least 2 dimensions.", op), 2)
    end
    local vector = B:dim() == A:dim() - 1
    local Bm = vector and B:unsqueeze(-1) or B
    if Bm:dim() < 2 or A:dim() < B:dim() then
      error(fmt("%s: input.dim() must be greater or equal to other.dim() and (input.dim() - " ..
        "other.dim()) <= 1", op), 2)
    end
    local m, n = A:size(-2), A:size(-1)
    local rcond = o.rcond
    if rcond == nil then rcond = eps_of(A.dtype) * math.max(m, n) end
    local X, rank, S, R = C._linalg_lstsq(A, Bm, rcond, DRIVERS[driver])
    local empty = T.empty(0, { dtype = value_dtype(A.dtype), device = A.device })
    local residuals = empty
    if m > n and driver ~= "gelsy" then
      local full = driver == "gels" or (rank and rank:eq(n):all():item())
      if full then
        -- n = 0: nothing is fitted, the residuals are B's squared norms
        -- (PyTorch 1.13 gives those for gelsd/gelss, zeros for gels)
        local r = n > 0 and R:narrow(-2, n + 1, m - n) or Bm
        if is_cx(r) then r = r:abs() end
        residuals = r:square():sum(-2)
        if n == 0 then
          local sh = X.shape:totable()
          table.remove(sh, #sh - 1)
          residuals = residuals:detach():expand(sh):contiguous()
        end
      end
    end
    if needs_grad(A, B) then
      -- the gradient is that of the minimum-norm solution pinv(A) B (as
      -- PyTorch's); the value stays the driver's (rcond, gelsy's rank)
      local P = L.pinv(A):matmul(Bm)
      X = X + (P - P:detach())
    end
    if vector then X = X:squeeze(-1) end
    return {
      solution = X,
      residuals = residuals,
      rank = rank or T.empty(0, { dtype = T.int64, device = A.device }),
      singular_values = S or empty,
    }
  end

  -- -- matrix functions ---------------------------------------------------------
  function L.matrix_power(A, k, ...)
    local op = "linalg.matrix_power"
    ARGS.nooptions(op, 3, 2, ...)
    check_square(op, A)
    -- (an infinite exponent would square forever)
    if type(k) ~= "number" or k ~= math.floor(k) or k == math.huge or k == -math.huge then
      error(fmt("%s: expected an integer exponent, got %s", op, tostring(k)), 2)
    end
    if k == 0 then
      local I = eye_like(A:size(-1), A):expand(A.shape):clone()
      -- in A's graph with a zero gradient, as PyTorch's (its result requires grad)
      if needs_grad(A) then I = I + A * 0 end
      return I
    end
    local base = A
    if k < 0 then
      base = L.inv(A)
      k = -k
    end
    local res
    while k > 0 do
      if k % 2 == 1 then res = res and res:matmul(base) or base end
      k = math.floor(k / 2)
      if k > 0 then base = base:matmul(base) end
    end
    if res == A then res = A:clone() end
    return res
  end

  -- Higham's scaling and squaring with the [13/13] Pade approximant
  -- (expm in SciPy and PyTorch); differentiable as a composite
  local PADE13 = { 64764752532480000, 32382376266240000, 7771770303897600, 1187353796428800,
    129060195264000, 10559470521600, 670442572800, 33522128640, 1323241920, 40840800,
    960960, 16380, 182, 1 }
  local THETA13 = 5.371920351148152
  function L.matrix_exp(A, ...)
    local op = "linalg.matrix_exp"
    ARGS.nooptions(op, 2, 1, ...)
    check_square(op, A)
    if not (A.dtype.is_floating_point or is_cx(A)) then
      error(fmt("%s: Expected a floating point or complex tensor as input. Got %s", op, tostring(A.dtype)), 2)
    end
    local n = A:size(-1)
    if A:numel() == 0 then return A:clone() end
    local norm1 = A:detach():abs():sum(-2):amax(-1):amax():item()
    local s = 0
    if norm1 > THETA13 then s = math.max(0, math.ceil(math.log(norm1 / THETA13) / math.log(2))) end
    local As = s > 0 and A / (2 ^ s) or A
    local I = eye_like(n, A)
    local b = PADE13
    local A2 = As:matmul(As)
    local A4 = A2:matmul(A2)
    local A6 = A4:matmul(A2)
    local U = As:matmul(A6:matmul(A6 * b[14] + A4 * b[12] + A2 * b[10]) + A6 * b[8] + A4 * b[6] +
      A2 * b[4] + I * b[2])
    local V = A6:matmul(A6 * b[13] + A4 * b[11] + A2 * b[9]) + A6 * b[7] + A4 * b[5] +
      A2 * b[3] + I * b[1]
    local R = L.solve(V - U, V + U)
    for _ = 1, s do R = R:matmul(R) end
    return R
  end

  -- -- norms -------------------------------------------------------------------
  local function ord_value(op, ord)
    if ord == "inf" then return INF end
    if ord == "-inf" then return -INF end
    return ord
  end
  local function dims_list(dim)
    if dim == nil then return nil end
    if type(dim) == "number" then return { dim } end
    return dim
  end

  local vector_norm_raw
  -- PyTorch's node name, whichever ember op computed the norm
  local function vector_norm_impl(...)
    return C._name_grad_fn(vector_norm_raw(...), "LinalgVectorNormBackward0")
  end
  function vector_norm_raw(op, x, ord, dim, keepdim, dtype)
    check_tensor(op, x, "x")
    ord = ord_value(op, ord)
    if ord == nil then ord = 2 end
    if type(ord) ~= "number" then
      error(fmt("%s: expected ord to be a number, got %s", op, tostring(ord)), 3)
    end
    if ord == 0 and needs_grad(x) then
      -- the count of non-zeros: a node whose gradient is none (PyTorch
      -- 1.13's undefined one: x.grad stays nil, autograd.grad calls x
      -- unused), also through dtype= and a complex x
      local res = vector_norm_raw(op, x:detach(), ord, dim, keepdim, dtype)
      return C._autograd_custom("LinalgVectorNormBackward0", { n = 1, x }, res,
        function() return { nil } end)
    end
    -- the input must be floating or complex whatever dtype says, and dtype
    -- may only widen it (PyTorch's checks)
    if not (x.dtype.is_floating_point or is_cx(x)) then
      error(fmt("%s: Expected a floating point or complex tensor as input. Got %s", op, tostring(x.dtype)), 3)
    end
    if dtype and dtype ~= x.dtype and T.promote_types(x.dtype, dtype) ~= dtype then
      error(fmt("%s: dtype %s should be convertible from the input's %s without narrowing", op,
        tostring(dtype), tostring(x.dtype)), 3)
    end
    if dtype then x = x:to(dtype) end
    -- a complex x: the norm of |x| (a real result, as PyTorch)
    if is_cx(x) then x = x:abs() end
    if x.dtype ~= T.float32 and x.dtype ~= T.float64 and x.dtype ~= T.float16 and x.dtype ~= T.bfloat16 then
      error(fmt("%s: Expected a floating point or complex tensor as input. Got %s", op,
        tostring(x.dtype)), 3)
    end
    local dims = dims_list(dim)
    local function red(t, f)
      if dims then return f(t, dims, keepdim) end
      if keepdim then
        local all = {}
        for i = 1, t:dim() do all[i] = i end
        return f(t, all, true)
      end
      return f(t)
    end
    if ord == INF then return red(x:abs(), function(t, d, kd) return t:amax(d or {}, kd) end) end
    if ord == -INF then return red(x:abs(), function(t, d, kd) return t:amin(d or {}, kd) end) end
    if dims then return x:norm(ord, dims, keepdim or false) end
    if keepdim then
      local all = {}
      for i = 1, x:dim() do all[i] = i end
      return x:norm(ord, all, true)
    end
    return x:norm(ord)
  end

  function L.vector_norm(x, ord, o, ...)
    local op = "linalg.vector_norm"
    if ARGS.is_opts(ord) and o == nil then ord, o = nil, ord end
    ARGS.nomore(op, 3, ...)
    o = opts_of(op, o, { "ord", "dim", "keepdim", "dtype" })
    if o.ord ~= nil then ord = o.ord end
    check_bool(op, o.keepdim, "keepdim")
    return vector_norm_impl(op, x, ord, o.dim, o.keepdim, o.dtype)
  end

  local function matrix_norm_impl(op, A, ord, dim, keepdim, dtype)
    check_tensor(op, A)
    ord = ord_value(op, ord)
    if ord == nil then ord = "fro" end
    if A:dim() < 2 then
      error(fmt("%s: The input tensor A must have at least 2 dimensions.", op), 3)
    end
    if not (A.dtype.is_floating_point or is_cx(A)) then
      error(fmt("%s: Expected a floating point or complex tensor as input. Got %s", op, tostring(A.dtype)), 3)
    end
    if dtype then A = A:to(dtype) end
    local d = dims_list(dim) or { -2, -1 }
    if #d ~= 2 then error(fmt("%s: dim must be a 2-tuple. Got %d dims", op, #d), 3) end
    local nd = A:dim()
    local d1 = d[1] < 0 and d[1] + nd + 1 or d[1]
    local d2 = d[2] < 0 and d[2] + nd + 1 or d[2]
    if d1 == d2 then
      error(fmt("%s: dims must be different. Got (%d, %d)", op, d[1], d[2]), 3)
    end
    -- complex A: every order but the spectral ones is that of |A|
    if is_cx(A) and ord ~= "nuc" and ord ~= 2 and ord ~= -2 then A = A:abs() end
    if ord == "fro" then return A:norm(2, { d1, d2 }, keepdim or false) end
    local function to_last(t)
      -- move d1, d2 to the end (in that order)
      local perm = {}
      for i = 1, nd do if i ~= d1 and i ~= d2 then perm[#perm + 1] = i end end
      perm[#perm + 1] = d1
      perm[#perm + 1] = d2
      return t:permute(perm)
    end
    local function keep(r)
      if not keepdim then return r end
      local lo, hi = math.min(d1, d2), math.max(d1, d2)
      return r:unsqueeze(lo):unsqueeze(hi)
    end
    if ord == "nuc" or ord == 2 or ord == -2 then
      local S = L.svdvals(to_last(A))
      if ord == "nuc" then return keep(S:sum(-1)) end
      if ord == 2 then return keep(S:amax(-1)) end
      return keep(S:amin(-1))
    end
    if ord == 1 or ord == -1 or ord == INF or ord == -INF then
      local sum_dim, max_dim = d1, d2
      if ord == INF or ord == -INF then sum_dim, max_dim = d2, d1 end
      local s = A:abs():sum(sum_dim, true)
      local r = (ord > 0) and s:amax(max_dim, true) or s:amin(max_dim, true)
      if keepdim then return r end
      return r:squeeze(math.max(d1, d2)):squeeze(math.min(d1, d2))
    end
    error(fmt("%s: Order %s not supported.", op, tostring(ord)), 3)
  end

  function L.matrix_norm(A, ord, o, ...)
    local op = "linalg.matrix_norm"
    if ARGS.is_opts(ord) and o == nil then ord, o = nil, ord end
    ARGS.nomore(op, 3, ...)
    o = opts_of(op, o, { "ord", "dim", "keepdim", "dtype" })
    if o.ord ~= nil then ord = o.ord end
    check_bool(op, o.keepdim, "keepdim")
    return matrix_norm_impl(op, A, ord, o.dim, o.keepdim, o.dtype)
  end

  function L.norm(A, ord, o, ...)
    local op = "linalg.norm"
    if ARGS.is_opts(ord) and o == nil then ord, o = nil, ord end
    ARGS.nomore(op, 3, ...)
    o = opts_of(op, o, { "ord", "dim", "keepdim", "dtype" })
    if o.ord ~= nil then ord = o.ord end
    check_tensor(op, A)
    check_bool(op, o.keepdim, "keepdim")
    local dims = dims_list(o.dim)
    if ord ~= nil then
      if dims == nil and A:dim() ~= 1 and A:dim() ~= 2 then
        error(fmt("%s: If dim is not specified but ord is, the input must be 1D or 2D. Got %dD.",
          op, A:dim()), 2)
      end
      local is_matrix = (dims and #dims == 2) or (dims == nil and A:dim() == 2)
      if is_matrix then return matrix_norm_impl(op, A, ord, dims, o.keepdim, o.dtype) end
      return vector_norm_impl(op, A, ord, dims, o.keepdim, o.dtype)
    end
    if dims and #dims == 2 then return matrix_norm_impl(op, A, "fro", dims, o.keepdim, o.dtype) end
    return vector_norm_impl(op, A, 2, dims, o.keepdim, o.dtype)
  end

  function L.cond(A, p, ...)
    local op = "linalg.cond"
    ARGS.nooptions(op, 2, 2, p, ...)
    check_tensor(op, A)
    p = ord_value(op, p)
    if A:dim() >= 2 and A:size(-1) == 0 and A:size(-2) == 0 then
      -- a batch of 0 x 0 matrices: condition number 0 for every p (PyTorch)
      local sh = {}
      for i = 1, A:dim() - 2 do sh[i] = A:size(i) end
      local rdt = is_cx(A) and value_dtype(A.dtype) or A.dtype
      return T.zeros(sh, { dtype = rdt, device = A.device })
    end
    if p == nil or p == 2 or p == -2 then
      local S = L.svdvals(A)
      if p == -2 then return S:amin(-1) / S:amax(-1) end
      return S:amax(-1) / S:amin(-1)
    end
    check_square(op, A)
    local Ainv, info = L.inv_ex(A)
    -- a singular matrix has condition number inf; its inverse (getrs's
    -- inf/NaN) is zeroed first, as the nuclear norm's SVD refuses NaN
    local singular = info:numel() > 0 and info:ne(0):any():item()
    if singular then Ainv = Ainv:masked_fill(info:ne(0):unsqueeze(-1):unsqueeze(-1), 0) end
    local res = matrix_norm_impl(op, A, p) * matrix_norm_impl(op, Ainv, p)
    if singular then res = res:masked_fill(info:ne(0), INF) end
    return res
  end

  -- -- products ------------------------------------------------------------------
  function L.cross(a, b, o, ...)
    local op = "linalg.cross"
    if type(o) == "number" then o = { dim = o } end
    ARGS.nomore(op, 3, ...)
    check_tensor(op, a, "input")
    check_tensor(op, b, "other")
    o = opts_of(op, o, { "dim" })
    local dim = o.dim or -1
    if a:dim() ~= b:dim() then
      error(fmt("%s: inputs must have the same number of dimensions.", op), 2)
    end
    local nd = a:dim()
    local d = dim < 0 and dim + nd + 1 or dim
    if d < 1 or d > nd then
      error(fmt("%s: dimension %d out of range (expected to be in range of [%d, %d])", op, dim,
        -nd, nd), 2)
    end
    if a:size(d) ~= 3 or b:size(d) ~= 3 then
      error(fmt("%s: inputs dimension %d must have length 3. Got %d and %d", op, dim, a:size(d),
        b:size(d)), 2)
    end
    -- PyTorch 1.13 promotes nothing here: "expected scalar type Float but
    -- found Double", "\"cross\" not implemented for 'Bool'"
    if a.dtype ~= b.dtype then
      error(fmt("%s: expected input and other to have the same dtype, but got %s and %s", op,
        tostring(a.dtype), tostring(b.dtype)), 2)
    end
    if a.dtype == T.bool then error(fmt("%s: not implemented for 'bool' tensors", op), 2) end
    local function c(t, i) return t:narrow(d, i, 1) end
    return T.cat({
      c(a, 2) * c(b, 3) - c(a, 3) * c(b, 2),
      c(a, 3) * c(b, 1) - c(a, 1) * c(b, 3),
      c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1),
    }, d)
  end

  function L.multi_dot(list, o, ...)
    local op = "linalg.multi_dot"
    ARGS.nomore(op, 2, ...)
    o = opts_of(op, o, { "out" })
    if type(list) ~= "table" or #list < 2 then
      error(fmt("%s: expected at least 2 tensors but got %d", op, type(list) == "table" and #list or 0), 2)
    end
    local n = #list
    local ts = {}
    for i = 1, n do
      check_tensor(op, list[i], "tensor " .. i)
      ts[i] = list[i]
    end
    local first_vec, last_vec = ts[1]:dim() == 1, ts[n]:dim() == 1
    if first_vec then ts[1] = ts[1]:unsqueeze(1) end
    if last_vec then ts[n] = ts[n]:unsqueeze(2) end
    for i = 1, n do
      if ts[i]:dim() ~= 2 then
        error(fmt("%s: tensor %d must be 2D but got %dD", op, i, list[i]:dim()), 2)
      end
    end
    -- the cheapest order (dynamic programming over the chain)
    local p = { ts[1]:size(1) }
    for i = 1, n do p[i + 1] = ts[i]:size(2) end
    local cost, split = {}, {}
    for i = 1, n do cost[i] = { [i] = 0 }; split[i] = {} end
    for len = 2, n do
      for i = 1, n - len + 1 do
        local j = i + len - 1
        cost[i][j] = INF
        for k = i, j - 1 do
          local c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
          if c < cost[i][j] then cost[i][j], split[i][j] = c, k end
        end
      end
    end
    local function chain(i, j)
      if i == j then return ts[i] end
      local k = split[i][j]
      return T.mm(chain(i, k), chain(k + 1, j))
    end
    local r = chain(1, n)
    if first_vec then r = r:squeeze(1) end
    if last_vec then r = r:squeeze(-1) end
    return finish(op, r, o)
  end

  function L.diagonal(A, o, ...)
    local op = "linalg.diagonal"
    ARGS.nomore(op, 2, ...)
    check_tensor(op, A)
    o = opts_of(op, o, { "offset", "dim1", "dim2" })
    return A:diagonal(o.offset or 0, o.dim1 or -2, o.dim2 or -1)
  end

  function L.matmul(a, b, ...)
    ARGS.nooptions("linalg.matmul", 3, 2, ...)
    return T.matmul(a, b)
  end

  function L.vecdot(x, y, o, ...)
    local op = "linalg.vecdot"
    ARGS.nomore(op, 3, ...)
    check_tensor(op, x, "x")
    check_tensor(op, y, "y")
    o = opts_of(op, o, { "dim" })
    -- PyTorch's vecdot conjugates x: sum(conj(x) * y)
    if is_cx(x) then x = T.conj(x) end
    return (x * y):sum(o.dim or -1)
  end

  -- dot(conj(a), b) (torch.vdot): the first operand conjugated when complex
  local function vdot(a, b, o, ...)
    ARGS.nomore("vdot", 3, ...)
    o = ARGS.checkopts("vdot", o, { "out" }, 4)
    check_tensor("vdot", a, "input")
    check_tensor("vdot", b, "other")
    if a:dim() ~= 1 or b:dim() ~= 1 then
      error(fmt("vdot: 1D tensors expected, but got %dD and %dD tensors", a:dim(), b:dim()), 2)
    end
    if a.dtype ~= b.dtype then
      error(fmt("vdot: expected both vectors to have same dtype, but found %s and %s",
        tostring(a.dtype):gsub("^ember%.", ""), tostring(b.dtype):gsub("^ember%.", "")), 2)
    end
    if a.dtype == T.bool then error("vdot: not implemented for 'bool' tensors", 2) end
    if is_cx(a) then a = T.conj(a) end
    return finish("vdot", T.dot(a, b), o)
  end
  vdot = require("ember.argcheck")(T).named("vdot", vdot)
  T.vdot = vdot
  T.Tensor_methods.vdot = vdot

  -- -- T.trace, T.kron, T.tensordot ------------------------------------------------
  function T.trace(t, ...)
    ARGS.nooptions("trace", 2, 1, ...)
    check_tensor("trace", t, "input")
    if t:dim() ~= 2 then error(fmt("trace: expected a matrix, but got tensor with dim %d", t:dim()), 2) end
    -- torch 1.13's trace kernel takes no bool tensor
    if t.dtype == T.bool then error("trace: not implemented for 'bool' tensors", 2) end
    return t:diagonal(0, 1, 2):sum()
  end

  local named = require("ember.argcheck")(T).named
  -- kron(a, b, {out}), tensordot(a, b[, dims], {out}): out= as mm's (its
  -- dtype exactly, an empty out resized)
  local kron
  T.kron = named("kron", function(a, b, o, ...)
    ARGS.nomore("kron", 3, ...)
    o = ARGS.checkopts("kron", o, { "out" }, 4)
    local r = kron(a, b)
    return finish("kron", r, o)
  end)
  function kron(a, b)
    check_tensor("kron", a, "input")
    check_tensor("kron", b, "other")
    local nd = math.max(a:dim(), b:dim())
    local sa, sb = {}, {}
    for i = 1, nd do
      local ia, ib = i - (nd - a:dim()), i - (nd - b:dim())
      sa[i] = ia >= 1 and a:size(ia) or 1
      sb[i] = ib >= 1 and b:size(ib) or 1
    end
    -- a as [a1, 1, a2, 1, ...], b as [1, b1, 1, b2, ...]
    local va, vb, out = {}, {}, {}
    for i = 1, nd do
      va[2 * i - 1], va[2 * i] = sa[i], 1
      vb[2 * i - 1], vb[2 * i] = 1, sb[i]
      out[i] = sa[i] * sb[i]
    end
    if nd == 0 then return a * b end
    return (a:reshape(va) * b:reshape(vb)):reshape(out)
  end

  local tensordot
  T.tensordot = named("tensordot", function(a, b, dims, o, ...)
    local op = "tensordot"
    -- a table without the two lists is the options table
    if ARGS.is_opts(dims) and dims[1] == nil and next(dims) ~= nil then
      ARGS.nomore(op, 3, o, ...)
      dims, o = nil, dims
    end
    ARGS.nomore(op, 4, ...)
    o = ARGS.checkopts(op, o, { "out" }, 4)
    local r = tensordot(a, b, dims)
    return finish(op, r, o)
  end)
  function tensordot(a, b, dims)
    local op = "tensordot"
    check_tensor(op, a, "a")
    check_tensor(op, b, "b")
    if a.dtype ~= b.dtype then
      error(fmt("%s: expected both tensors to have the same dtype, but got %s and %s", op,
        a.dtype.name, b.dtype.name), 2)
    end
    local da, db = {}, {}
    if dims == nil then dims = 2 end
    if type(dims) == "number" then
      if dims < 0 or dims ~= math.floor(dims) then
        error(fmt("%s: expects dims >= 0, but got dims=%s", op, tostring(dims)), 2)
      end
      if dims > a:dim() or dims > b:dim() then
        error(fmt("%s: dims (%d) exceeds the number of dims of a (%d) or b (%d)", op, dims,
          a:dim(), b:dim()), 2)
      end
      for i = 1, dims do
        da[i] = a:dim() - dims + i
        db[i] = i
      end
    elseif T.is_tensor(dims) and dims:dim() == 0 and not dims.dtype.is_floating_point then
      return tensordot(a, b, dims:item())
    elseif T.is_tensor(dims) then
      error(fmt("%s: dims as a tensor must be a 0-d integer tensor; pass a number or two lists", op), 2)
    elseif type(dims) == "table" and type(dims[1]) == "table" and type(dims[2]) == "table" then
      for i, d in ipairs(dims[1]) do da[i] = d < 0 and d + a:dim() + 1 or d end
      for i, d in ipairs(dims[2]) do db[i] = d < 0 and d + b:dim() + 1 or d end
      if #da ~= #db then
        error(fmt("%s: both dimension lists should have same length", op), 2)
      end
      for _, side in ipairs { { da, dims[1], a, "a" }, { db, dims[2], b, "b" } } do
        local seen = {}
        for i, d in ipairs(side[1]) do
          local n = side[3]:dim()
          if type(d) ~= "number" or d % 1 ~= 0 or d < 1 or d > n then
            error(fmt("%s: dimension %s of %s out of range (expected to be in range of [%d, %d]%s)", op,
              tostring(side[2][i]), side[4], -n, n, side[2][i] == 0 and ", dims are 1-based" or ""), 2)
          end
          if seen[d] then error(fmt("%s: dimension %d appears more than once in the dims of %s", op, side[2][i], side[4]), 2) end
          seen[d] = true
        end
      end
    else
      error(fmt("%s: dims must be a number or a pair of lists { {dims of a}, {dims of b} }", op), 2)
    end
    local ca, cb = {}, {}
    for i = 1, #da do
      -- a contracted dim of size 1 on one side against n on the other is
      -- summed over the other side first (PyTorch's tensordot broadcasts it)
      if a:size(da[i]) == 1 and b:size(db[i]) ~= 1 then b = b:sum(db[i], true) end
      if b:size(db[i]) == 1 and a:size(da[i]) ~= 1 then a = a:sum(da[i], true) end
      if a:size(da[i]) ~= b:size(db[i]) then
        error(fmt("%s: contracted dimensions need to match, but first has size %d in dim %d " ..
          "and second has size %d in dim %d", op, a:size(da[i]), da[i], b:size(db[i]), db[i]), 2)
      end
      ca[da[i]], cb[db[i]] = true, true
    end
    local pa, pb, out, k = {}, {}, {}, 1
    local mrows, ncols = 1, 1
    for i = 1, a:dim() do
      if not ca[i] then pa[#pa + 1] = i; out[#out + 1] = a:size(i); mrows = mrows * a:size(i) end
    end
    for i = 1, #da do pa[#pa + 1] = da[i]; k = k * a:size(da[i]) end
    for i = 1, #db do pb[#pb + 1] = db[i] end
    for i = 1, b:dim() do
      if not cb[i] then pb[#pb + 1] = i; out[#out + 1] = b:size(i); ncols = ncols * b:size(i) end
    end
    local A2 = (#pa > 0 and a:permute(pa) or a):reshape(mrows, k)
    local B2 = (#pb > 0 and b:permute(pb) or b):reshape(k, ncols)
    local r = A2:matmul(B2)
    if #out == 0 then return r:reshape({}) end
    return r:reshape(out)
  end

  -- -- T.svd_lowrank, T.pca_lowrank ----------------------------------------------
  -- torch.svd_lowrank / torch.pca_lowrank (torch/_lowrank.py, Halko, Martinsson
  -- and Tropp 2009, algorithms 4.4 and 5.1): a rank-q basis of A's range from
  -- A times a Gaussian (n, q) matrix (T.randn: T.manual_seed repeats it),
  -- refined by niter power iterations, each step re-orthonormalised by QR;
  -- then the SVD of the small projected matrix. The transpose is worked on
  -- when m < n or n > q, as torch's. Differentiable (matmul, qr, svd).
  local function floating(A)
    if A:is_floating_point() or A:is_complex() then return A end
    return A:to(T.float32)
  end
  local function basis(A, q, niter, M)
    local R = T.randn(A:size(-1), q, { dtype = A.dtype, device = A.device })
    local AH, MH = mH(A), M and mH(M)
    local function qr_q(X) return (L.qr(X)) end
    local Q = qr_q(M and (A:matmul(R) - M:matmul(R)) or A:matmul(R))
    for _ = 1, niter do
      Q = qr_q(M and (AH:matmul(Q) - MH:matmul(Q)) or AH:matmul(Q))
      Q = qr_q(M and (A:matmul(Q) - M:matmul(Q)) or A:matmul(Q))
    end
    return Q
  end
  local function svd_lowrank_impl(A, q, niter, M)
    local m, n = A:size(-2), A:size(-1)
    local Mt = M and mT(M)
    if m < n or n > q then
      local Q = basis(mT(A), q, niter, Mt)
      local Qc = Q:conj()
      local Bt = M and (A:matmul(Qc) - M:matmul(Qc)) or A:matmul(Qc)
      local U, S, Vh = L.svd(Bt, { full_matrices = false })
      -- A ~ A conj(Q) Q^T (conj(Q) spans A's row space, range(A^H)), so V is
      -- conj(Q) Vh^H; torch writes Q Vh^H, the same for real A (torch 1.13
      -- takes no complex A here)
      return U, S, Qc:matmul(mH(Vh))
    end
    local Q = basis(A, q, niter, M)
    local Qc = Q:conj()
    local B = M and (mT(A):matmul(Qc) - Mt:matmul(Qc)) or mT(A):matmul(Qc)
    local U, S, Vh = L.svd(mT(B), { full_matrices = false })
    return Q:matmul(U), S, mH(Vh)
  end
  local function lowrank_q(op, q, m, n, default)
    if q == nil then return default end
    if type(q) ~= "number" or q ~= math.floor(q) or q < 0 or q > math.min(m, n) then
      error(fmt("%s: q(=%s) must be non-negative integer and not greater than min(m, n)=%d", op, tostring(q),
        math.min(m, n)), 0)
    end
    return q
  end
  local function lowrank_niter(op, niter)
    if niter == nil then return 2 end
    if type(niter) ~= "number" or niter ~= math.floor(niter) or niter < 0 then
      error(fmt("%s: niter(=%s) must be non-negative integer", op, tostring(niter)), 0)
    end
    return niter
  end
  local function lowrank_A(op, A)
    check_tensor(op, A, "A")
    if A:dim() < 2 then error(fmt("%s: A must have at least 2 dimensions, got %d", op, A:dim()), 0) end
    return floating(A)
  end

  local SVDLR = { "q", "niter", "M" }
  -- T.svd_lowrank(A[, q = 6[, niter = 2[, M]]]) or (A, {q=, niter=, M=}): U, S, V
  -- with A - M ~ U diag(S) V^H (V, not V^H, as torch)
  T.svd_lowrank = named("svd_lowrank", function(A, ...)
    local op = "svd_lowrank"
    local o = ARGS.checkopts(op, ARGS.positional(op, SVDLR, 2, ...), SVDLR, 0)
    A = lowrank_A(op, A)
    local m, n = A:size(-2), A:size(-1)
    local q = lowrank_q(op, o.q, m, n, 6)
    if o.q == nil and q > math.min(m, n) then
      error(fmt("%s: the default q = 6 is greater than min(m, n)=%d: give q", op, math.min(m, n)), 0)
    end
    local M = o.M
    if M ~= nil then
      check_tensor(op, M, "M")
      M = M:to(A.dtype):expand(A.shape)
    end
    return svd_lowrank_impl(A, q, lowrank_niter(op, o.niter), M)
  end)

  local PCALR = { "q", "center", "niter" }
  -- T.pca_lowrank(A[, q = min(6, m, n)[, center = true[, niter = 2]]]) or
  -- (A, {q=, center=, niter=}): U, S, V of A less its column means
  -- (center); the principal directions are V's columns, A's projections
  -- onto them A_centered V[:, 1..k]
  T.pca_lowrank = named("pca_lowrank", function(A, ...)
    local op = "pca_lowrank"
    local o = ARGS.checkopts(op, ARGS.positional(op, PCALR, 2, ...), PCALR, 0)
    A = lowrank_A(op, A)
    local m, n = A:size(-2), A:size(-1)
    local q = lowrank_q(op, o.q, m, n, math.min(6, m, n))
    check_bool(op, o.center, "center")
    local niter = lowrank_niter(op, o.niter)
    if o.center == false then return svd_lowrank_impl(A, q, niter, nil) end
    return svd_lowrank_impl(A - A:mean(-2, { keepdim = true }), q, niter, nil)
  end)

  -- -- torch 1.13's deprecated forms: T.cholesky, T.triangular_solve, T.symeig --
  -- (torch warns that they are deprecated; ember keeps them for ported
  -- scripts, with torch's argument orders and defaults)
  local DEPRECATED = { strip = "^[%w_%.]+: " }
  -- T.cholesky(A[, upper = false]): L, or U = L^H when upper
  local function cholesky_old(A, upper, ...)
    ARGS.nooptions("cholesky", 2, 2, upper, ...)
    check_bool("cholesky", upper, "upper")
    local Lm = L.cholesky(A)
    if upper then return mH(Lm):contiguous() end
    return Lm
  end
  T.cholesky = named("cholesky", cholesky_old, DEPRECATED)
  T.Tensor_methods.cholesky = T.cholesky
  -- T.triangular_solve(b, A[, upper = true[, transpose = false[, unitriangular = false]]]):
  -- X with A X = b (A^T X = b when transpose), and A's clone broadcast to
  -- the batch shape (torch's cloned_coefficient)
  local function triangular_solve_old(b, A, upper, transpose, unitriangular, ...)
    local op = "triangular_solve"
    ARGS.nooptions(op, 3, 5, upper, transpose, unitriangular, ...)
    check_tensor(op, b, "b")
    check_tensor(op, A, "A")
    check_bool(op, upper, "upper")
    check_bool(op, transpose, "transpose")
    check_bool(op, unitriangular, "unitriangular")
    if b:dim() < 2 then
      error(fmt("%s: Expected b to have at least 2 dimensions, but it has %d dimensions instead", op, b:dim()), 0)
    end
    if A:dim() < 2 then
      error(fmt("%s: Expected A to have at least 2 dimensions, but it has %d dimensions instead", op, A:dim()), 0)
    end
    if b.dtype ~= A.dtype then
      error(fmt("%s: Expected b and A to have the same dtype, but found b of type %s and A of type %s instead.",
        op, tostring(b.dtype), tostring(A.dtype)), 0)
    end
    local up = upper ~= false
    local Ax = transpose and mT(A) or A
    local X = L.solve_triangular(Ax, b, { upper = (up ~= (transpose == true)), unitriangular = unitriangular == true })
    local sh = X.shape:totable()
    sh[#sh - 1], sh[#sh] = A:size(-2), A:size(-1)
    return X, A:expand(sh):clone()
  end
  T.triangular_solve = named("triangular_solve", triangular_solve_old, DEPRECATED)
  T.Tensor_methods.triangular_solve = T.triangular_solve
  -- T.symeig(A[, eigenvectors = false[, upper = true]]): ascending eigenvalues
  -- and, when asked, the eigenvectors (else an empty tensor), from A's upper
  -- triangle by default (linalg.eigh reads the lower one by default)
  local function symeig_old(A, eigenvectors, upper, ...)
    local op = "symeig"
    ARGS.nooptions(op, 2, 3, eigenvectors, upper, ...)
    check_bool(op, eigenvectors, "eigenvectors")
    check_bool(op, upper, "upper")
    local uplo = upper == false and "L" or "U"
    if eigenvectors then return L.eigh(A, { UPLO = uplo }) end
    return L.eigvalsh(A, { UPLO = uplo }), T.empty(0, { dtype = A.dtype, device = A.device })
  end
  T.symeig = named("symeig", symeig_old, DEPRECATED)
  T.Tensor_methods.symeig = T.symeig

  -- every function of T.linalg raises its errors under its own name, at
  -- the caller's position: an inner linalg op's message keeps its name, as
  -- PyTorch's ("linalg.matrix_power: linalg.inv: The diagonal element 2 is
  -- zero ..."), another op's loses it ("mul: shapes ..." under linalg.cross
  -- is "linalg.cross: shapes ...")
  local RULE = { keep = "^linalg%.[%w_]+: ", strip = "^[%w_]+%(?%)?: " }
  for name, f in pairs(L) do
    if type(name) == "string" and name:sub(1, 1) ~= "_" and type(f) == "function" then
      L[name] = named("linalg." .. name, f, RULE)
    end
  end
end
