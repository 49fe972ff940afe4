"""bench/lapack_paired.py: PyTorch's twin of bench/lapack_paired.lua.

    OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 /usr/bin/python3 bench/lapack_paired.py [threads] [rounds] [rows]

torch.linalg's call for each of issue 19's LAPACK rows against the same
routine called directly (ctypes, on the liblapack.so.3 that Debian's torch
links: OpenBLAS's), in one process, alternating blocks of calls. With
lapack_paired.lua's ember/direct ratio on the same routine, the quotient of
the two ratios compares ember with PyTorch without depending on how loaded
the shared machine was during either process's turn.
"""
import ctypes
import statistics
import sys
import time

import numpy as np
import torch

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
only = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else None
torch.set_num_threads(threads)

L = ctypes.CDLL("liblapack.so.3")
I = ctypes.c_int
P = ctypes.POINTER


def ip(v):
    return ctypes.byref(I(v))


def fp(a):
    return a.ctypes.data_as(P(ctypes.c_float))


def ipp(a):
    return a.ctypes.data_as(P(I))


rows = {}


def row(name, what):
    def deco(f):
        rows[name] = (what, f)
        return f
    return deco


def spd(n):
    a = torch.rand(n, n)
    return a @ a.t() / n + torch.eye(n)


@row("la_solve_1024", "solve (1024, 1024) x (1024, 1): sgesv")
def _():
    n = 1024
    a, b = torch.rand(n, n) + torch.eye(n) * n, torch.rand(n, 1)
    an, bn = a.numpy(), b.numpy()

    def direct():
        w, x = an.copy(), bn.copy()
        ipiv, info = np.empty(n, np.int32), I(0)
        L.sgesv_(ip(n), ip(1), fp(w), ip(n), ipp(ipiv), fp(x), ip(n), ctypes.byref(info))
    return (lambda: torch.linalg.solve(a, b)), direct


@row("la_inv_1024", "inv (1024, 1024): sgetrf + sgetri")
def _():
    n = 1024
    a = torch.rand(n, n) + torch.eye(n) * n
    an = a.numpy()

    def direct():
        w, ipiv, info, wq = an.copy(), np.empty(n, np.int32), I(0), np.zeros(1, np.float32)
        L.sgetrf_(ip(n), ip(n), fp(w), ip(n), ipp(ipiv), ctypes.byref(info))
        L.sgetri_(ip(n), fp(w), ip(n), ipp(ipiv), fp(wq), ip(-1), ctypes.byref(info))
        lw = int(wq[0])
        work = np.empty(lw, np.float32)
        L.sgetri_(ip(n), fp(w), ip(n), ipp(ipiv), fp(work), ip(lw), ctypes.byref(info))
    return (lambda: torch.linalg.inv(a)), direct


@row("la_cholesky_2048", "cholesky (2048, 2048): spotrf")
def _():
    n = 2048
    a = spd(n)
    an = a.numpy()

    def direct():
        w, info = an.copy(), I(0)
        L.spotrf_(b"U", ip(n), fp(w), ip(n), ctypes.byref(info), ctypes.c_size_t(1))
    return (lambda: torch.linalg.cholesky(a)), direct


@row("la_svd_512", "svd (512, 512), full_matrices = false: sgesdd")
def _():
    n = 512
    a = torch.rand(n, n)
    an = a.numpy()

    def direct():
        w = an.copy()
        s, u, vt = np.empty(n, np.float32), np.empty(n * n, np.float32), np.empty(n * n, np.float32)
        iw, info, wq = np.empty(8 * n, np.int32), I(0), np.zeros(1, np.float32)
        args = (ip(n), ip(n), fp(w), ip(n), fp(s), fp(u), ip(n), fp(vt), ip(n))
        L.sgesdd_(b"S", *args, fp(wq), ip(-1), ipp(iw), ctypes.byref(info), ctypes.c_size_t(1))
        lw = int(wq[0])
        work = np.empty(lw, np.float32)
        L.sgesdd_(b"S", *args, fp(work), ip(lw), ipp(iw), ctypes.byref(info), ctypes.c_size_t(1))
    return (lambda: torch.linalg.svd(a, full_matrices=False)), direct


@row("la_eigh_512", "eigh (512, 512): ssyevd")
def _():
    n = 512
    r = torch.rand(n, n)
    a = r + r.t()
    an = a.numpy()

    def direct():
        w, ev, info, wq, iq = an.copy(), np.empty(n, np.float32), I(0), np.zeros(1, np.float32), I(0)
        one = ctypes.c_size_t(1)
        L.ssyevd_(b"V", b"U", ip(n), fp(w), ip(n), fp(ev), fp(wq), ip(-1), ctypes.byref(iq), ip(-1),
                  ctypes.byref(info), one, one)
        lw, liw = int(wq[0]), iq.value
        work, iw = np.empty(lw, np.float32), np.empty(liw, np.int32)
        L.ssyevd_(b"V", b"U", ip(n), fp(w), ip(n), fp(ev), fp(work), ip(lw), ipp(iw), ip(liw),
                  ctypes.byref(info), one, one)
    return (lambda: torch.linalg.eigh(a)), direct


@row("la_lstsq_4096x256", "lstsq (4096, 256) x (4096, 1): sgelsy")
def _():
    m, n = 4096, 256
    a, b = torch.rand(m, n), torch.rand(m, 1)
    an, bn = np.asfortranarray(a.numpy()), b.numpy()  # column-major, made once (as lapack_paired.lua)

    def direct():
        w, x = an.copy(order="F"), bn.copy()
        jp, info, rank, wq = np.zeros(n, np.int32), I(0), I(0), np.zeros(1, np.float32)
        rcond = ctypes.c_float(1.1920929e-07 * m)
        args = (ip(m), ip(n), ip(1), fp(w), ip(m), fp(x), ip(m), ipp(jp), ctypes.byref(rcond), ctypes.byref(rank))
        L.sgelsy_(*args, fp(wq), ip(-1), ctypes.byref(info))
        lw = int(wq[0])
        work = np.empty(lw, np.float32)
        L.sgelsy_(*args, fp(work), ip(lw), ctypes.byref(info))
    return (lambda: torch.linalg.lstsq(a, b)), direct


@row("la_solve_batch16", "solve (1024, 16, 16) x (1024, 16, 1): sgesv per matrix")
def _():
    B, n = 1024, 16
    a, b = torch.rand(B, n, n) + torch.eye(n) * n, torch.rand(B, n, 1)
    an, bn = a.numpy(), b.numpy()

    def direct():
        w, x = an.copy(), bn.copy()
        ipiv, info = np.empty(B * n, np.int32), I(0)
        N, one = ip(n), ip(1)
        base_w, base_x, base_p = w.ctypes.data, x.ctypes.data, ipiv.ctypes.data
        for i in range(B):
            L.sgesv_(N, one, ctypes.c_void_p(base_w + 4 * i * n * n), N, ctypes.c_void_p(base_p + 4 * i * n),
                     ctypes.c_void_p(base_x + 4 * i * n), N, ctypes.byref(info))
    return (lambda: torch.linalg.solve(a, b)), direct


def block(f, k):
    t0 = time.perf_counter()
    for _ in range(k):
        f()
    return (time.perf_counter() - t0) / k


print("threads %d, %d rounds of alternating blocks (>= 0.1 s each)" % (threads, rounds))
print("| row | PyTorch | direct | median of round ratios | best ÷ best |")
print("|---|---|---|---|---|")
for name, (what, setup) in rows.items():
    if only and name not in only:
        continue
    torch.manual_seed(1)
    tf, direct = setup()
    tf()
    direct()
    k = max(1, int(np.ceil(0.1 / block(direct, 1))))
    te, td, ratio = [], [], []
    for r in range(rounds):
        if r % 2 == 0:
            e = block(tf, k)
            d = block(direct, k)
        else:
            d = block(direct, k)
            e = block(tf, k)
        te.append(e)
        td.append(d)
        ratio.append(e / d)
    print("| %s | %.2f ms | %.2f ms | %.3f | %.3f |" % (what, statistics.median(te) * 1e3, statistics.median(td) * 1e3,
                                                      statistics.median(ratio), min(te) / min(td)))
