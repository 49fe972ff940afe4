"""bench/bench.py [--quick] [--out FILE]: runs every workload of
bench/workloads.txt in ember (Lua), PyTorch, NumPy and the C reference,
alternating the contenders, at 1 thread and at all cores, and writes a table
of medians and ratios (bench/results.md by default).

The C reference is two contenders: bench_cref (hand-written C loops and
cblas_sgemm) for the kernel rows, and the per-call floor ("Clua":
bench/floor_worker.lua on bench/floor.c, a minimal Lua C-API binding) for
the per-call rows; the "C ref" column shows whichever has the row.

Each contender is a long-lived worker process speaking a line protocol on
stdin/stdout (setup NAME SCALE / time NAME INNER / threads N / quit); the
worker times INNER calls with its own monotonic clock, so process start-up
and pipe latency are not measured. Run by `make bench` with Debian's python3.
"""
import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# the per-call rows that bench/floor_worker.lua has (t.shape and t:item()
# make no tensor: no floor)
FLOOR_ROWS = {"percall_add1", "percall_index", "percall_slice", "percall_transpose",
              "percall_view", "percall_tensor"}


def workloads():
    out = []
    for line in open(os.path.join(HERE, "workloads.txt")):
        if line.startswith("#") or not line.strip():
            continue
        name, group, desc = line.split(None, 2)
        out.append((name, group, desc.strip()))
    return out


class Worker:
    def __init__(self, name, argv, env):
        self.name = name
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)

    def ask(self, line):
        if self.p.poll() is not None:
            raise RuntimeError("%s worker has exited" % self.name)
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        reply = self.p.stdout.readline().strip()
        if not reply:
            raise RuntimeError("%s worker died on %r" % (self.name, line))
        return reply

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
            self.p.wait(timeout=30)
        except Exception:
            self.p.kill()


def start_workers(threads, build, baseline=None):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = str(threads)
    env["EMBER_BUILD"] = build
    py = "/usr/bin/python3"
    specs = [("ember", [os.path.join(ROOT, "bin", "ember"), os.path.join(HERE, "worker.lua")]),
             ("torch", [py, os.path.join(HERE, "worker_py.py"), "torch"]),
             ("numpy", [py, os.path.join(HERE, "worker_py.py"), "numpy"]),
             ("C", [os.path.join(build, "bench_cref")]),
             # the per-call floor: plain LuaJIT loading build/floor.so (no ember)
             ("Clua", ["luajit", os.path.join(HERE, "floor_worker.lua")])]
    if baseline:
        # ember as it was: another checkout with its own Release build, its
        # own Lua layer and worker (bench.py --baseline DIR)
        specs.insert(1, ("ember0", [os.path.join(baseline, "bin", "ember"),
                                    os.path.join(baseline, "bench", "worker.lua")]))
    ws = []
    for name, argv in specs:
        # a missing peer (no torch, no bench_cref) leaves its column empty
        try:
            wenv = env
            if name == "ember0":
                wenv = dict(env, EMBER_BUILD=os.path.join(baseline, "build-release"))
            w = Worker(name, argv, wenv)
            w.ask("threads %d" % threads)
            ws.append(w)
        except Exception as e:
            print("   (%s is not available: %s; its column stays empty)" % (name, e), file=sys.stderr)
    return ws


# Seconds of rest before each of a repetition's timings at more than one
# thread: an idle contender's BLAS workers keep spinning for a while after
# its turn (OpenBLAS's pthread workers yield-spin for 2^28 cycles, about
# 0.1 s on the dev VM, by default; PyTorch's and NumPy's do), and on a
# 2-core machine that spin took a core from the next contender's timing:
# ember's 2-thread CNN step read 6.0 ms with no peer running and 6.9-13.6 ms
# right after PyTorch's turn (bench/results-2026-12-04.md). Set per thread
# count by main(); 0 at 1 thread (no worker threads to spin).
SETTLE = 0.0


def measure(ws, name, scale, reps, target, warmup):
    """Median seconds per call for each worker (None when it skips)."""
    live, inner, samples, notes = [], {}, {}, {}
    for w in list(ws):
        try:
            r = w.ask("setup %s %d" % (name, scale))
        except Exception as e:
            notes[w.name] = str(e)
            ws.remove(w)
            continue
        if r != "ok":
            notes[w.name] = r[5:]
            continue
        # calibrate: grow INNER until one timing takes at least `target`
        n = 1
        while True:
            try:
                r = w.ask("time %s %d" % (name, n))
            except Exception as e:
                r = "skip " + str(e)
                ws.remove(w)
            if not r.startswith("t "):
                notes[w.name] = r[5:]
                break
            t = float(r[2:])
            if t >= target or n >= 1 << 24:
                inner[w.name] = n
                live.append(w)
                break
            n = max(n * 2, int(n * target / max(t, 1e-9) * 1.2))
    # warm-up: keep calling for WARMUP seconds more. ember's temporaries are
    # freed by the Lua collector, which runs when 256 MiB of them are live,
    # so the first 256 MiB of a process are fresh blocks (page faults); from
    # then on freed blocks are reused (docs/memory.md). The steady state is
    # what is measured, for every contender alike.
    for w in list(live):
        spent = 0.0
        while spent < warmup:
            try:
                r = w.ask("time %s %d" % (name, inner[w.name]))
            except Exception as e:
                notes[w.name] = str(e)
                live.remove(w)
                break
            if not r.startswith("t "):
                break
            spent += float(r[2:])
    for w in live:
        samples[w.name] = []
    for _ in range(reps):  # alternate the contenders within each repetition
        for w in list(live):
            if SETTLE > 0:
                time.sleep(SETTLE)  # the previous contender's threads go idle
            try:
                r = w.ask("time %s %d" % (name, inner[w.name]))
            except Exception as e:
                notes[w.name] = str(e)
                live.remove(w)
                if w in ws:
                    ws.remove(w)
                continue
            if r.startswith("t "):
                samples[w.name].append(float(r[2:]) / inner[w.name])
    med = {w.name: statistics.median(samples[w.name]) for w in live if samples[w.name]}
    return med, notes


MEMORY_SCRIPTS = {
    "ember": ("lua", "local T = require 'ember'\nfor i = 1, {n} do local t = T.ones(16 * 1024 * 1024) end\n"
              "for l in io.lines('/proc/self/status') do local v = l:match('^VmHWM:%s*(%d+)') if v then print(v) end end\n"),
    "torch": ("py", "import torch\nfor i in range({n}):\n    t = torch.ones(16 * 1024 * 1024)\n"
              "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])\n"),
    "numpy": ("py", "import numpy as np\nfor i in range({n}):\n    t = np.ones(16 * 1024 * 1024, np.float32)\n"
              "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])\n"),
}


def memory_peaks(n, build):
    out = {}
    env = dict(os.environ, EMBER_BUILD=build)
    for name, (kind, src) in MEMORY_SCRIPTS.items():
        code = src.replace("{n}", str(n))
        argv = ([os.path.join(ROOT, "bin", "ember"), "-e", code] if kind == "lua"
                else ["/usr/bin/python3", "-c", code])
        try:
            r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1200)
            out[name] = int(r.stdout.strip().splitlines()[-1]) / 1024.0 if r.returncode == 0 else None
        except Exception:
            out[name] = None
    return out


def fmt_time(s):
    if s is None:
        return "-"
    if s < 1e-6:
        return "%.0f ns" % (s * 1e9)
    if s < 1e-3:
        return "%.2f µs" % (s * 1e6)
    if s < 1:
        return "%.2f ms" % (s * 1e3)
    return "%.2f s" % s


def ratio(a, b):
    return "%.2f" % (a / b) if a and b else "-"


def versions(build):
    v = {}
    v["cpu"] = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                     if l.startswith("model name")), platform.processor())
    v["cores"] = os.cpu_count()
    v["luajit"] = subprocess.run(["luajit", "-v"], capture_output=True, text=True).stdout.split(" --")[0]
    for mod in ("torch", "numpy"):
        r = subprocess.run(["/usr/bin/python3", "-c", "import %s; print(%s.__version__)" % (mod, mod)],
                           capture_output=True, text=True)
        v[mod] = r.stdout.strip() or "missing"
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libopenblas0-pthread"],
                       capture_output=True, text=True)
    v["openblas"] = r.stdout.strip() or "?"
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    v["commit"] = r.stdout.strip()
    return v


def main():
    global SETTLE
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes, 1 repetition (CI smoke run)")
    ap.add_argument("--out", default=os.path.join(HERE, "results.md"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build-release"))
    ap.add_argument("--only", default="", help="comma-separated workload names (\"memory\" for the memory row)")
    ap.add_argument("--threads", default="", help="comma-separated thread counts (default: 1 and all cores)")
    ap.add_argument("--reps", type=int, default=0, help="repetitions (default 5, 1 in quick mode)")
    ap.add_argument("--baseline", default="", help="a checkout of an earlier ember with a Release build "
                    "in DIR/build-release: measured as a contender of its own (\"before\")")
    args = ap.parse_args()
    scale, reps, target, warmup = (16, 1, 0.002, 0.0) if args.quick else (1, 5, 0.1, 1.0)
    wl = workloads()
    if args.only:
        keep = set(args.only.split(","))
        wl = [w for w in wl if w[0] in keep]
    if args.reps:
        reps = args.reps
    thread_counts = (sorted({int(x) for x in args.threads.split(",")}) if args.threads
                     else sorted({1, os.cpu_count() or 1}))
    v = versions(args.build)
    lines = ["# ember benchmarks", "",
             "%s, run %s UTC at commit %s%s." % (
                 v["cpu"], datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), v["commit"],
                 " (QUICK MODE: small sizes, 1 repetition; not a measurement)" if args.quick else ""),
             "", "Versions: %s, PyTorch %s, NumPy %s, OpenBLAS %s; %d cores." % (
                 v["luajit"], v["torch"], v["numpy"], v["openblas"], v["cores"]),
             "", "Medians of %d repetitions after a warm-up (calibration, then %g s of calls per contender), contenders alternating; time per call. "
             "Ratios are ember's time divided by the peer's: below 1 means ember is faster." % (reps, warmup), "",
             "C ref: for the kernel rows, hand-written C loops compiled with -O3 and `cblas_sgemm` "
             "called directly (bench/cref.c). For the per-call rows, the floor of any tensor made "
             "through Lua's C API: the same loop body, from LuaJIT, on the tensors of a minimal "
             "binding (bench/floor.c: an 8-byte userdata box pointing to a malloc'd header of "
             "about em_tensor's size and a refcounted storage, a __gc that releases them, the argument "
             "checks a binding must do, `a + b` and `t[k]` through metamethods, methods through a "
             "Lua __index as ember's); there ember/C says how far above that floor ember's call is. "
             "`t.shape` and `t:item()` make no tensor and have no floor row.", ""]
    if args.baseline:
        bc = subprocess.run(["git", "-C", args.baseline, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "?"
        lines += ["'before' is ember at commit %s: its own Release build and Lua layer (%s), "
                  "measured in the same run as a contender alternating with the others; "
                  "ember/before below 1 means the current ember is faster." % (bc, args.baseline), ""]
    for th in thread_counts:
        SETTLE = 0.25 if th > 1 else 0.0
        ws = start_workers(th, args.build, args.baseline or None)
        base_cols = " before | ember/before |" if args.baseline else ""
        lines += ["## %d thread%s" % (th, "" if th == 1 else "s"), "",
                  "| workload | ember | PyTorch | NumPy | C ref | ember/PyTorch | ember/NumPy | ember/C |" + base_cols,
                  "|---|---|---|---|---|---|---|---|" + ("---|---|" if args.baseline else "")]
        for name, group, desc in wl:
            med, notes = measure(ws, name, scale, reps, target, warmup)
            e = med.get("ember")
            # the C ref column: the per-call floor for per-call rows, else bench_cref
            cref = med.get("Clua") if name.startswith("percall_") else med.get("C")
            row = "| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                desc, fmt_time(e), fmt_time(med.get("torch")), fmt_time(med.get("numpy")),
                fmt_time(cref), ratio(e, med.get("torch")), ratio(e, med.get("numpy")),
                ratio(e, cref))
            if args.baseline:
                row += " %s | %s |" % (fmt_time(med.get("ember0")), ratio(e, med.get("ember0")))
            lines.append(row)
            print(row, flush=True)
            for who, why in notes.items():
                # expected gaps: no C per-call or training workloads, no NumPy
                # training, a per-call floor only for the per-call rows that
                # make a tensor
                expected = (who == "C" and name.startswith(("percall_", "train_", "sdpa_"))) or \
                    (who == "numpy" and name.startswith(("train_", "sdpa_"))) or \
                    (who == "Clua" and name not in FLOOR_ROWS)
                if not expected:
                    print("   (%s skipped %s: %s)" % (who, name, why), file=sys.stderr)
        for w in ws:
            w.close()
        lines.append("")
    # the memory row runs in a full run, or when --only names "memory"
    if not args.only or "memory" in args.only.split(","):
        n = 20 if args.quick else 2000
        peaks = memory_peaks(n, args.build)
        lines += ["## Memory", "", "Peak resident memory (VmHWM) of a loop making %d temporaries of 64 MB:" % n, ""]
        for who, mb in peaks.items():
            lines.append("- %s: %s" % (who, "%.0f MB" % mb if mb else "failed"))
        lines.append("")
    text = "\n".join(lines)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
