#!/usr/bin/python3
"""One training step of the digits MLP and CNN in PyTorch 1.13, one thread:
the counterpart of bench/train_step.lua (same models, same batch, same
optimizers, from bench/train_models.py). Prints the median milliseconds per
step.

    /usr/bin/python3 bench/train_step.py [steps]
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_models as W  # noqa: E402

torch.set_num_threads(1)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
x, y = W.batch()

for name, optname in (("mlp", "sgd"), ("mlp", "adam"), ("cnn", "sgd")):
    step = W.step_fn(name, optname, x, y)
    cold = []
    for _ in range(20):
        t0 = time.perf_counter()
        step()
        cold.append((time.perf_counter() - t0) * 1000)
    w0 = time.perf_counter()
    while time.perf_counter() - w0 < 1:  # a second of warm-up, as train_step.lua
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1000)
    print("torch %s train step (%s): %.3f ms (median of %d; first 20 steps: %.3f ms)"
          % (name, optname, statistics.median(times), steps, statistics.median(cold)))
