"""bench/protocol_py.py: the Python side of bench/protocol.lua's line
protocol, shared by the CPU workers (worker_py.py) and the GPU one
(worker_cuda_py.py): setup NAME K / time NAME N / threads N / peak NAME N /
quit. A contender that cannot run a workload (or a command) answers
"skip REASON" and the harness leaves its cell empty."""
import sys
import time


def serve(setup, body, set_threads, sync=lambda: None, peak=None):
    """setup(name, k) -> the line to answer; body(name) -> a callable timed
    N times (then sync()); set_threads(n); peak(name, n) -> bytes or None
    when this contender measures no peak memory."""
    def timed(name, n):
        f = body(name)
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        sync()
        return time.perf_counter() - t0

    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        cmd = parts[0]
        try:
            if cmd == "quit":
                break
            if cmd == "threads":
                set_threads(int(parts[1]))
                print("ok", flush=True)
            elif cmd == "setup":
                print(setup(parts[1], int(parts[2]) if len(parts) > 2 else 1), flush=True)
            elif cmd == "time":
                print("t %.9f" % timed(parts[1], int(parts[2])), flush=True)
            elif cmd == "peak" and peak is not None:
                print("v %d" % peak(parts[1], int(parts[2]), timed), flush=True)
            else:
                print("skip unknown command " + cmd, flush=True)
        except Exception as e:  # a contender that cannot run a workload skips it
            print("skip", str(e).replace("\n", " "), flush=True)
