#!/usr/bin/python3
"""One training step of the digits MLP and CNN in PyTorch 1.13, one thread:
the counterpart of bench/train_step.lua (same models, same batch, same
optimizer). Prints the median milliseconds per step.

    /usr/bin/python3 bench/train_step.py [steps]
"""
import gzip
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50

if os.path.exists("data/digits.csv.gz"):
    with gzip.open("data/digits.csv.gz", "rt") as f:
        raw = np.loadtxt(f, delimiter=",", max_rows=32, dtype=np.float32)
    x = torch.from_numpy(raw[:, :64]).reshape(32, 1, 8, 8) / 16
    y = torch.from_numpy(raw[:, 64]).long()
else:
    x, y = torch.rand(32, 1, 8, 8), torch.randint(0, 10, (32,))

models = {
    "mlp": lambda: nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.2),
                                 nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10)),
    "cnn": lambda: nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Linear(128, 10)),
}

for name in ("mlp", "cnn"):
    model = models[name]()
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1000)
    print("torch %s train step: %.3f ms (median of %d)" % (name, statistics.median(times), steps))
