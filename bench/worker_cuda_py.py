"""bench/worker_cuda_py.py: the PyTorch contender of the GPU rows
(bench/workloads_cuda.txt, bench/bench_cuda.py), speaking bench/protocol.lua's
line protocol (setup / time / threads / peak / quit). The device is
EMBER_BENCH_DEVICE (default "cuda"; "cpu" for the harness's dry run). A
timing covers INNER calls and then torch.cuda.synchronize(); "peak NAME
STEPS" answers torch.cuda.max_memory_allocated() over STEPS calls."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_models as TM  # noqa: E402
from protocol_py import serve  # noqa: E402

DEV = os.environ.get("EMBER_BENCH_DEVICE", "cuda")
GPU = DEV.startswith("cuda")
N = 256 * 1024 * 1024
S = {}


def sync():
    if GPU:
        torch.cuda.synchronize()


def setup(name, k):
    S.clear()
    if GPU:
        torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's default since 1.12; ember's too
    if name == "cu_copy":
        S["a"], S["o"] = torch.rand(N // k, device=DEV), torch.empty(N // k, device=DEV)
    elif name == "cu_add_out":
        S["a"], S["b"] = torch.rand(N // k, device=DEV), torch.rand(N // k, device=DEV)
        S["o"] = torch.empty(N // k, device=DEV)
    elif name == "cu_h2d_pinned":
        h = torch.rand(64 * 1024 * 1024 // k)
        S["h"] = h.pin_memory() if GPU else h
    elif name == "cu_sum":
        S["a"] = torch.rand(N // k, device=DEV)
    elif name == "cu_softmax":
        S["a"] = torch.randn(8192 // k, 32768, device=DEV)
    elif name == "cu_add1":
        S["a"], S["b"] = torch.rand(1, device=DEV), torch.rand(1, device=DEV)
    elif name == "cu_sgemm_4096":
        n = 4096 // k
        S["a"], S["b"] = torch.rand(n, n, device=DEV), torch.rand(n, n, device=DEV)
    elif name == "cu_bf16_gemm_4096":
        n = 4096 // k
        S["a"] = torch.rand(n, n, device=DEV).to(torch.bfloat16)
        S["b"] = torch.rand(n, n, device=DEV).to(torch.bfloat16)
    elif name == "cu_mm_256":
        S["a"], S["b"] = torch.rand(256, 256, device=DEV), torch.rand(256, 256, device=DEV)
    elif name == "cu_rfft":
        S["a"] = torch.randn(64 // k, 65536, device=DEV)
        S["b"] = torch.complex(torch.randn(2048 // k, 2048), torch.randn(2048 // k, 2048)).to(DEV)
    elif name == "cu_solve_batched":
        S["a"] = torch.randn(1024 // k, 16, 16, device=DEV) + torch.eye(16, device=DEV) * 4
        S["b"] = torch.randn(1024 // k, 16, 1, device=DEV)
    elif name == "cu_linalg":
        def spd(n):
            m = torch.randn(n, n, device=DEV)
            return m @ m.mT + torch.eye(n, device=DEV) * n
        S["c"], S["s"] = spd(2048 // k), torch.randn(512 // k, 512 // k, device=DEV)
        S["e"], S["q"] = spd(512 // k), torch.randn(1024 // k, 1024 // k, device=DEV)
    elif name in ("cu_train_mlp", "cu_train_cnn"):
        x, y = TM.random_batch(256 // k, DEV)
        S["step"] = TM.step_fn("mlp" if name == "cu_train_mlp" else "cnn", "sgd", x, y, DEV)
    elif name == "cu_train_transformer":
        S["step"] = TM.transformer_step(256 // k, DEV)
    elif name == "cu_train_cnn_nocudnn":
        x, y = TM.random_batch(256 // k, DEV)
        step = TM.step_fn("cnn", "sgd", x, y, DEV)

        def nocudnn():
            with torch.backends.cudnn.flags(enabled=False):
                return step()
        S["step"] = nocudnn
    else:
        return "skip unknown workload"
    sync()
    return "ok"


def body(name):
    a, b, o = S.get("a"), S.get("b"), S.get("o")
    if name == "cu_copy":
        return lambda: o.copy_(a)
    if name == "cu_add_out":
        return lambda: torch.add(a, b, out=o)
    if name == "cu_h2d_pinned":
        h = S["h"]
        return lambda: h.to(DEV, non_blocking=True)
    if name == "cu_sum":
        return lambda: a.sum()
    if name == "cu_softmax":
        return lambda: torch.softmax(a, -1)
    if name == "cu_add1":
        return lambda: a + b
    if name in ("cu_sgemm_4096", "cu_bf16_gemm_4096", "cu_mm_256"):
        return lambda: torch.mm(a, b)
    if name == "cu_rfft":
        return lambda: (torch.fft.rfft(a), torch.fft.fft2(b))
    if name == "cu_solve_batched":
        return lambda: torch.linalg.solve(a, b)
    if name == "cu_linalg":
        L = torch.linalg
        return lambda: (L.cholesky(S["c"]), L.svd(S["s"], full_matrices=False), L.eigh(S["e"]),
                        L.qr(S["q"]))
    return S["step"]


def peak(name, n, timed):
    if not GPU:
        raise RuntimeError("no device memory to measure on " + DEV)
    sync()
    torch.cuda.reset_peak_memory_stats()
    timed(name, n)
    return torch.cuda.max_memory_allocated()


serve(setup, body, torch.set_num_threads, sync, peak)
