"""bench/bench_cuda.py [--out FILE] [--reps N] [--dry-run]: the GPU rows
(bench/workloads_cuda.txt; issues 15 and 16) in ember (bench/worker_cuda.lua),
PyTorch (bench/worker_cuda_py.py under EMBER_BENCH_PYTHON, else the first
python3 that imports torch: PyTorch 2.x on a lent GPU machine) and the C reference (build/bench_cuda_ref:
the CUDA runtime and cuBLAS called directly), alternating the contenders as
bench/bench.py does (its Worker and measure). Writes a table of medians,
ratios and bandwidths, the device memory peak of the training steps, and
each row's target from the issues, met or missed.

--dry-run runs the same harness on the CPU at 1/64 of the sizes
(EMBER_BENCH_DEVICE=cpu): a check of the plumbing on a machine without a
GPU; its numbers mean nothing and say so.
"""
import argparse
import datetime
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench as B  # noqa: E402

HBM_PEAK = 4.8e12  # H200's vendor peak, bytes per second


def workloads():
    out = []
    for line in open(os.path.join(HERE, "workloads_cuda.txt")):
        if line.startswith("#") or not line.strip():
            continue
        name, group, nbytes, desc = line.split(None, 3)
        out.append((name, group, None if nbytes == "-" else int(nbytes), desc.strip()))
    return out


def torch_python():
    """EMBER_BENCH_PYTHON, else the first of python3 on PATH and Debian's
    that imports torch (the lent GPU machines' image has one)."""
    if os.environ.get("EMBER_BENCH_PYTHON"):
        return os.environ["EMBER_BENCH_PYTHON"]
    for py in ("python3", "/usr/bin/python3"):
        try:
            if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
                return py
        except OSError:
            pass
    return "python3"


def start_workers(build, device):
    env = dict(os.environ, EMBER_BUILD=build, EMBER_BENCH_DEVICE=device)
    py = torch_python()
    specs = [("ember", [os.path.join(ROOT, "bin", "ember"), os.path.join(HERE, "worker_cuda.lua")]),
             ("torch", [py, os.path.join(HERE, "worker_cuda_py.py")]),
             ("C", [os.path.join(build, "bench_cuda_ref")])]
    ws = []
    for name, argv in specs:
        try:
            w = B.Worker(name, argv, env)
            w.ask("threads 1")
            ws.append(w)
        except Exception as e:
            print("   (%s is not available: %s; its column stays empty)" % (name, e), file=sys.stderr)
    return ws


def gbs(nbytes, s):
    return "%.0f GB/s" % (nbytes / s / 1e9) if nbytes and s else "-"


def target(name, med, nbytes, peak):
    """The issues' target for a row: (text, met or None when not measured)."""
    e, t, c = med.get("ember"), med.get("torch"), med.get("C")
    if name in ("cu_copy", "cu_add_out"):
        return ">= 80% of HBM peak (4.8 TB/s)", (nbytes / e >= 0.8 * HBM_PEAK) if e else None
    if name == "cu_h2d_pinned":
        return ">= 80% of the link (the C copy)", (c / e >= 0.8) if e and c else None
    if name in ("cu_sum", "cu_softmax"):
        return "<= 1/0.9 of PyTorch's time", (e / t <= 1 / 0.9) if e and t else None
    if name == "cu_add1":
        return "<= 0.5x PyTorch's per-op time", (e / t <= 0.5) if e and t else None
    if name in ("cu_sgemm_4096", "cu_bf16_gemm_4096"):
        ok = (e / c <= 1 / 0.95 and e / t <= 1 / 0.9) if e and c and t else None
        return ">= 0.95x cuBLAS from C, >= 0.9x PyTorch", ok
    if name == "cu_mm_256":
        return "<= 1.2x PyTorch's time", (e / t <= 1.2) if e and t else None
    if name == "cu_rfft":
        return "<= PyTorch's time (both on cuFFT)", (e <= t) if e and t else None
    if name in ("cu_solve_batched", "cu_linalg"):
        return "<= PyTorch's time", (e <= t) if e and t else None
    if name == "cu_train_cnn_nocudnn":
        return "- (read against cu_train_cnn: which conv path ember keeps)", None
    if name.startswith("cu_train_"):
        pe, pt = peak.get("ember"), peak.get("torch")
        ok = None
        if e and t:
            ok = e <= t and (pe is None or pt is None or pe <= 1.2 * pt)
        return "<= PyTorch's step; peak memory <= 1.2x", ok
    return "-", None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "results-cuda.md"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build-release"))
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dry-run", action="store_true", help="the CPU at 1/64 of the sizes: the harness only")
    args = ap.parse_args()
    device = "cpu" if args.dry_run else "cuda"
    scale, target_s, warmup = (64, 0.005, 0.0) if args.dry_run else (1, 0.05, 0.2)
    wl = workloads()
    if args.only:
        keep = set(args.only.split(","))
        wl = [w for w in wl if w[0] in keep]
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True) \
        if not args.dry_run and subprocess.run(["sh", "-c", "command -v nvidia-smi"],
                                               capture_output=True).returncode == 0 else None
    py = torch_python()
    tv = subprocess.run([py, "-c", "import torch; print(torch.__version__, torch.version.cuda)"],
                        capture_output=True, text=True).stdout.strip() or "missing"
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = ["# ember GPU benchmarks", "",
             "%s, run %s UTC at commit %s%s." % (
                 gpu.stdout.strip() if gpu and gpu.returncode == 0 else "no GPU",
                 datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), commit,
                 " (DRY RUN: the CPU at 1/64 of the sizes; the harness only, not a measurement)"
                 if args.dry_run else ""),
             "", "PyTorch %s (torch.__version__, CUDA)." % tv, "",
             "Medians of %d repetitions after a warm-up, contenders alternating; each timing ends "
             "when the device is idle (synchronize). Ratios are ember's time divided by the peer's. "
             "C ref: the CUDA runtime and cuBLAS called directly (bench/cuda_ref.c)." % args.reps, "",
             "| workload | ember | PyTorch | C ref | ember/PyTorch | ember/C | ember | PyTorch | C | target | met |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    B.SETTLE = 0.0
    ws = start_workers(args.build, device)
    peaks = {}
    for name, group, nbytes, desc in wl:
        med, notes = B.measure(ws, name, scale, args.reps, target_s, warmup)
        peak = {}
        if name.startswith("cu_train_") and not args.dry_run:
            for w in ws:
                if w.name in ("ember", "torch"):
                    try:
                        if w.ask("setup %s 1" % name) == "ok":
                            r = w.ask("peak %s 5" % name)
                            if r.startswith("v "):
                                peak[w.name] = float(r[2:])
                    except Exception as e:
                        notes[w.name] = str(e)
            peaks[name] = peak
        e, t, c = med.get("ember"), med.get("torch"), med.get("C")
        nb = nbytes / scale if nbytes else None
        tgt, ok = target(name, med, nb, peak)
        row = "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            desc, B.fmt_time(e), B.fmt_time(t), B.fmt_time(c), B.ratio(e, t), B.ratio(e, c),
            gbs(nb, e), gbs(nb, t), gbs(nb, c), tgt,
            "-" if ok is None or args.dry_run else ("met" if ok else "MISSED"))
        lines.append(row)
        print(row, flush=True)
        for who, why in notes.items():
            if not (who == "C" and "no C reference" in why):
                print("   (%s skipped %s: %s)" % (who, name, why), file=sys.stderr)
    for w in ws:
        w.close()
    if peaks:
        lines += ["", "## Device memory of the training steps", "",
                  "Peak allocated device memory over 5 steps after a reset "
                  "(T.cuda.max_memory_allocated, torch.cuda.max_memory_allocated):", ""]
        for name, p in peaks.items():
            pe, pt = p.get("ember"), p.get("torch")
            lines.append("- %s: ember %s, PyTorch %s%s" % (
                name, "%.1f MB" % (pe / 1e6) if pe else "-", "%.1f MB" % (pt / 1e6) if pt else "-",
                ", ratio %.2f" % (pe / pt) if pe and pt else ""))
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
