"""bench/worker_py.py MODE: the PyTorch (MODE=torch) or NumPy (MODE=numpy)
contender; same protocol as worker.lua (setup/time/threads/quit)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from protocol_py import serve  # noqa: E402

MODE = sys.argv[1]
import numpy as np
if MODE == "torch":
    import torch

M = 16 * 1024 * 1024
OPTIM_STEP = {"optim_step_adagrad": "Adagrad", "optim_step_nadam": "NAdam"}
TRAIN = {"train_mlp": ("mlp", "sgd"), "train_mlp_adam": ("mlp", "adam"), "train_cnn": ("cnn", "sgd"),
         "train_lstm": ("lstm_lm", "adam")}
S = {}
ATTN = ("sdpa_fwd_bwd", "train_transformer")


def attn_step(name, k):
    """The attention rows (bench/workloads.txt): one call of the returned
    function is one forward + backward (sdpa_fwd_bwd) or one training step
    (train_transformer); k shrinks the sizes in quick mode."""
    import math
    F = torch.nn.functional
    if name == "sdpa_fwd_bwd":
        L = 512 // k
        q, kk, v = (torch.randn(8, 8, L, 64, requires_grad=True) for _ in range(3))
        g = torch.randn(8, 8, L, 64)
        if hasattr(F, "scaled_dot_product_attention"):  # torch 2.x: its own fused op
            att = F.scaled_dot_product_attention
        else:  # torch 1.13: the explicit softmax attention
            def att(q, kk, v):
                return torch.softmax(q @ kk.transpose(-2, -1) * (1 / math.sqrt(64)), -1) @ v
        return lambda: torch.autograd.grad(att(q, kk, v), (q, kk, v), g)
    # a small causal transformer block (bench/train_models.py)
    import train_models
    return train_models.transformer_step(16 // k if k > 1 else 16)


def rand(*shape):
    if MODE == "torch":
        return torch.rand(*shape)
    return np.random.rand(*shape).astype(np.float32)


def empty(*shape):
    return torch.empty(*shape) if MODE == "torch" else np.empty(shape, np.float32)


def _np_sigmoid(a, c):
    np.negative(a, out=c)
    np.exp(c, out=c)
    c += 1
    np.reciprocal(c, out=c)


# the transcendental rows: (input range, torch body, NumPy body or None)
VM = {
    "vm_exp": ("unit", lambda a, c: torch.exp(a, out=c), lambda a, c: np.exp(a, out=c)),
    "vm_log": ("unit", lambda a, c: torch.log(a, out=c), lambda a, c: np.log(a, out=c)),
    "vm_sin": ("unit", lambda a, c: torch.sin(a, out=c), lambda a, c: np.sin(a, out=c)),
    "vm_tanh": ("sym", lambda a, c: torch.tanh(a, out=c), lambda a, c: np.tanh(a, out=c)),
    "vm_sigmoid": ("sym", lambda a, c: torch.sigmoid(a, out=c), _np_sigmoid),
    "vm_gelu": ("sym", lambda a, c: torch._C._nn.gelu(a, out=c), None),
    "vm_gelu_tanh": ("sym", lambda a, c: torch._C._nn.gelu(a, approximate="tanh", out=c), None),
    "vm_erf": ("sym", lambda a, c: torch.erf(a, out=c), None),
    "vm_pow": ("unit", lambda a, c: torch.pow(a, 2.5, out=c), lambda a, c: np.power(a, 2.5, out=c)),
    "vm_exp_f64": ("unit", lambda a, c: torch.exp(a, out=c), lambda a, c: np.exp(a, out=c)),
}


# the T.linalg rows (issue 19), float32; sizes shrink by k in quick mode
LA_ROWS = ("la_solve_1024", "la_inv_1024", "la_cholesky_2048", "la_svd_512", "la_eigh_512",
           "la_lstsq_4096x256", "la_solve_batch16", "fft_rfft_1m", "fft_rfft_1m_f64", "fft_fft2_1024", "fft_rfft_1m_out")


def la_setup(name, k):
    T = MODE == "torch"
    eye = (lambda n: torch.eye(n)) if T else (lambda n: np.eye(n, dtype=np.float32))
    tr = (lambda x: x.mT) if T else (lambda x: np.swapaxes(x, -1, -2))
    if name in ("la_solve_1024", "la_inv_1024"):
        n = 1024 // k
        S["a"], S["b"] = rand(n, n) + eye(n) * n, rand(n, 1)
    elif name == "la_cholesky_2048":
        n = 2048 // k
        a = rand(n, n)
        S["a"] = a @ tr(a) / n + eye(n)
    elif name == "la_svd_512":
        S["a"] = rand(512 // k, 512 // k)
    elif name == "la_eigh_512":
        a = rand(512 // k, 512 // k)
        S["a"] = a + tr(a)
    elif name == "la_lstsq_4096x256":
        S["a"], S["b"] = rand(4096 // k, 256 // k), rand(4096 // k, 1)
    elif name == "la_solve_batch16":
        S["a"], S["b"] = rand(1024 // k, 16, 16) + eye(16) * 16, rand(1024 // k, 16, 1)
    elif name == "fft_rfft_1m":
        S["a"] = rand(1048576 // k)
    elif name == "fft_rfft_1m_out":
        S["a"] = rand(1048576 // k)
        if T:
            S["o"] = torch.empty(1048576 // k // 2 + 1, dtype=torch.complex64)
    elif name == "fft_rfft_1m_f64":
        S["a"] = rand(1048576 // k).double() if T else rand(1048576 // k).astype(np.float64)
    elif name == "fft_fft2_1024":
        n = 1024 // k
        S["a"] = torch.complex(rand(n, n), rand(n, n)) if T else \
            (rand(n, n) + 1j * rand(n, n)).astype(np.complex64)


def la_body(name, a, b):
    T = MODE == "torch"
    L = torch.linalg if T else np.linalg
    if name in ("la_solve_1024", "la_solve_batch16"):
        return lambda: L.solve(a, b)
    if name == "la_inv_1024":
        return lambda: L.inv(a)
    if name == "la_cholesky_2048":
        return lambda: L.cholesky(a)
    if name == "la_svd_512":
        return (lambda: L.svd(a, full_matrices=False))
    if name == "la_eigh_512":
        return lambda: L.eigh(a)
    if name == "la_lstsq_4096x256":
        return (lambda: L.lstsq(a, b)) if T else (lambda: L.lstsq(a, b, rcond=None))
    FFT = torch.fft if T else np.fft
    if name in ("fft_rfft_1m", "fft_rfft_1m_f64"):
        return lambda: FFT.rfft(a)
    if name == "fft_rfft_1m_out":
        o = S["o"]
        return lambda: FFT.rfft(a, out=o)
    if name == "fft_fft2_1024":
        return lambda: FFT.fft2(a)


def setup(name, k):
    S.clear()
    if name in ATTN:
        if MODE != "torch":
            return "skip no NumPy counterpart"
        S["step"] = attn_step(name, k)
        return "ok"
    if name in TRAIN:
        if MODE != "torch":
            return "skip no NumPy counterpart"
        import train_models
        x, y = train_models.batch(TRAIN[name][0])
        S["step"] = train_models.step_fn(*TRAIN[name], x, y)
        return "ok"
    if name in OPTIM_STEP:
        if MODE != "torch":
            return "skip no NumPy counterpart"
        p = torch.rand(int(16 * 1024 * 1024 / 4 / k)).requires_grad_()
        p.grad = torch.rand(p.numel())
        S["opt"] = getattr(torch.optim, OPTIM_STEP[name])([p])
        return "ok"
    if name in ("percall_add1", "percall_item"):
        S["a"], S["b"] = rand(1), rand(1)
        S["t"] = S["a"]
    elif name.startswith("percall_"):
        S["t"] = rand(4, 4)
    elif name == "stream_add_out":
        S["a"], S["b"], S["c"] = rand(M // k), rand(M // k), empty(M // k)
    elif name in ("stream_add_alloc",):
        S["a"], S["b"] = rand(M // k), rand(M // k)
    elif name == "stream_exp":
        S["a"], S["c"] = rand(M // k), empty(M // k)
    elif name == "stream_sum":
        S["a"] = rand(M // k)
    elif name in ("stream_bcast_out", "stream_bcast_alloc"):
        n = 4096 // k
        S["a"], S["b"], S["c"] = rand(n, 1), rand(1, n), empty(n, n)
    elif name in ("layout_transpose", "layout_clone_slice", "layout_transpose_out"):
        n = 4096 // k
        S["t"] = rand(n, n)
        S["out"] = rand(n, n)
    elif name == "sel_index_select":
        S["t"] = rand(4 * 1024 * 1024 // k, 16)
        n = 1024 * 1024 // k
        if MODE == "torch":
            S["idx"] = torch.randint(0, S["t"].shape[0], (n,))
        else:
            S["idx"] = np.random.randint(0, S["t"].shape[0], n)
    elif name == "sel_masked_select":
        S["a"] = rand(M // k)
        S["mask"] = rand(M // k) < 0.5
    elif name in ("idx_mask_read", "idx_mask_write", "idx_mask_fill"):
        S["a"] = rand(M // k)
        S["mask"] = rand(M // k) < 0.5
    elif name in ("idx_rows_read", "idx_rows_write", "idx_rows_put", "idx_gather2d"):
        if name == "idx_rows_put" and MODE != "torch":
            return "skip no NumPy counterpart"
        S["t"] = rand(4 * 1024 * 1024 // k, 16)
        n = 1024 * 1024 // k
        ri = torch.randint if MODE == "torch" else (lambda lo, hi, sz: np.random.randint(lo, hi, sz))
        S["idx"] = ri(0, S["t"].shape[0], (n,))
        S["j"] = ri(0, 16, (n,))
        S["rows"] = rand(n, 16)
    elif name in ("asm_cat", "asm_stack"):
        S["list"] = [rand(16384 // k, 16) for _ in range(64)]
    elif name.startswith("mm_"):
        n = int(name[3:].split("_")[0])
        n = n // k if n > 256 else n
        S["a"], S["b"] = rand(n, n), rand(n, n)
        if name.endswith("_out"):
            S["c"] = torch.empty(n, n) if MODE == "torch" else np.empty((n, n), dtype=np.float32)
    elif name == "bmm_64x128":
        S["a"], S["b"] = rand(64, 128, 128), rand(64, 128, 128)
    elif name == "red_prod":
        S["a"] = rand(M // k) / 1024 + (1 - 1 / 2048)
    elif name.startswith("red_sum_"):
        n = 4096 // k
        S["t"] = rand(n, n)
    elif name.startswith("red_"):
        S["a"] = rand(M // k)
    elif name in VM:
        if MODE != "torch" and VM[name][2] is None:
            return "skip no NumPy counterpart"
        n = M // k
        a = rand(n)
        if VM[name][0] == "sym":
            a = a * 8 - 4
        if name.endswith("_f64"):
            a = a.double() if MODE == "torch" else a.astype(np.float64)
        S["a"], S["c"] = a, (torch.empty_like(a) if MODE == "torch" else np.empty_like(a))
    elif name in LA_ROWS:
        if name == "fft_rfft_1m_out" and MODE != "torch":
            return "skip NumPy's rfft has no out="
        la_setup(name, k)
    else:
        return "skip unknown workload"
    return "ok"


def body(name):
    if name in TRAIN or name in ATTN:
        return S["step"]
    if name in OPTIM_STEP:
        return S["opt"].step
    a, b, c, t = S.get("a"), S.get("b"), S.get("c"), S.get("t")
    T = MODE == "torch"
    if name == "percall_add1":
        return lambda: a + b
    if name == "percall_index":
        return lambda: t[0]
    if name == "percall_slice":
        return lambda: t[:, 1:3]
    if name == "percall_transpose":
        return (lambda: t.transpose(0, 1)) if T else (lambda: t.swapaxes(0, 1))
    if name == "percall_view":
        return (lambda: t.view(-1)) if T else (lambda: t.reshape(-1))
    if name == "percall_shape":
        return lambda: t.shape
    if name == "percall_tensor":
        return (lambda: torch.tensor([1, 2, 3])) if T else (lambda: np.array([1, 2, 3]))
    if name == "percall_item":
        return lambda: t.item()
    if name in ("stream_add_out", "stream_bcast_out"):
        return (lambda: torch.add(a, b, out=c)) if T else (lambda: np.add(a, b, out=c))
    if name in ("stream_add_alloc", "stream_bcast_alloc"):
        return lambda: a + b
    if name in VM:
        f = VM[name][1] if T else VM[name][2]
        return lambda: f(a, c)
    if name == "stream_exp":
        return (lambda: torch.exp(a, out=c)) if T else (lambda: np.exp(a, out=c))
    if name == "stream_sum":
        return lambda: a.sum()
    if name == "layout_transpose":
        return (lambda: t.t().contiguous()) if T else (lambda: np.ascontiguousarray(t.T))
    if name == "layout_transpose_out":
        o = S["out"]
        return (lambda: o.copy_(t.t())) if T else (lambda: np.copyto(o, t.T))
    if name == "layout_clone_slice":
        return (lambda: t[:, ::2].clone()) if T else (lambda: t[:, ::2].copy())
    if name == "sel_index_select":
        idx = S["idx"]
        return (lambda: t.index_select(0, idx)) if T else (lambda: np.take(t, idx, axis=0))
    if name == "sel_masked_select":
        m = S["mask"]
        return (lambda: a.masked_select(m)) if T else (lambda: a[m])
    if name == "idx_mask_read":
        m = S["mask"]
        return lambda: a[m]
    if name == "idx_mask_write":
        m = S["mask"]

        def f():
            a[m] = 0
        return f
    if name == "idx_mask_fill":
        m = S["mask"]
        return (lambda: a.masked_fill_(m, 0)) if T else (lambda: np.putmask(a, m, 0))
    if name == "idx_rows_read":
        idx = S["idx"]
        return lambda: t[idx]
    if name == "idx_rows_write":
        idx, rows = S["idx"], S["rows"]

        def f():
            t[idx] = rows
        return f
    if name == "idx_rows_put":
        key, rows = (S["idx"],), S["rows"]
        return lambda: t.index_put_(key, rows)
    if name == "idx_gather2d":
        i, j = S["idx"], S["j"]
        return lambda: t[i, j]
    if name == "asm_cat":
        L = S["list"]
        return (lambda: torch.cat(L, 0)) if T else (lambda: np.concatenate(L, 0))
    if name == "asm_stack":
        L = S["list"]
        return (lambda: torch.stack(L, 0)) if T else (lambda: np.stack(L, 0))
    if name.startswith("mm_") and name.endswith("_out"):
        c = S["c"]
        return (lambda: torch.mm(a, b, out=c)) if T else (lambda: np.matmul(a, b, out=c))
    if name.startswith("mm_"):
        return (lambda: torch.mm(a, b)) if T else (lambda: a @ b)
    if name == "bmm_64x128":
        return (lambda: torch.bmm(a, b)) if T else (lambda: np.matmul(a, b))
    if name.startswith("red_"):
        return red_body(name, a, t, T)
    if name in LA_ROWS:
        return la_body(name, a, b)
    return None


def red_body(name, a, t, T):
    if name in ("red_sum", "red_mean", "red_prod"):
        return getattr(a, name[4:])
    if name in ("red_amax", "red_amin"):
        if T:
            return a.amax if name == "red_amax" else a.amin
        return a.max if name == "red_amax" else a.min
    if name == "red_norm":
        return a.norm if T else (lambda: np.linalg.norm(a))
    if name in ("red_var", "red_std"):
        f = getattr(a, name[4:])
        return f if T else (lambda: f(ddof=1))
    if name == "red_sum_outer":
        return lambda: t.sum(0)
    if name == "red_sum_inner_strided":
        return (lambda: t.t().sum(1)) if T else (lambda: t.T.sum(1))
    return None


def set_threads(n):
    if MODE == "torch":
        torch.set_num_threads(n)


serve(setup, body, set_threads)
