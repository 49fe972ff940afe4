"""The training-step workloads shared by bench/train_step.py and the
`make bench` worker (bench/worker_py.py): the PyTorch side of
bench/train_models.lua (same models, batch, optimizers; a step is zero_grad,
forward, cross_entropy, backward, optimizer step)."""
import gzip
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


LM_V = 96


def batch(name=None):
    if name == "lstm_lm":  # as train_models.lua: 32 x 65 random ids, inputs and next ids
        torch.manual_seed(0)
        ids = torch.randint(0, LM_V, (32, 65))
        return ids[:, :64], ids[:, 1:].reshape(-1)
    if os.path.exists("data/digits.csv.gz"):
        with gzip.open("data/digits.csv.gz", "rt") as f:
            raw = np.loadtxt(f, delimiter=",", max_rows=32, dtype=np.float32)
        return torch.from_numpy(raw[:, :64]).reshape(32, 1, 8, 8) / 16, torch.from_numpy(raw[:, 64]).long()
    torch.manual_seed(0)
    return torch.rand(32, 1, 8, 8), torch.randint(0, 10, (32,))


class LstmLM(nn.Module):
    """embedding 64, LSTM 2 x 128 (batch_first), linear to the 96 ids"""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(LM_V, 64)
        self.lstm = nn.LSTM(64, 128, num_layers=2, batch_first=True)
        self.head = nn.Linear(128, LM_V)

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        return self.head(h).reshape(-1, LM_V)


MODELS = {
    "lstm_lm": LstmLM,
    "mlp": lambda: nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.2),
                                 nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10)),
    "cnn": lambda: nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Linear(128, 10)),
}

OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-3),
}


def step_fn(name, optname, x, y, device=None):
    """One training step of model `name` with optimizer `optname` (a fresh
    model, seeded, in training mode, on device when given)."""
    torch.manual_seed(0)
    model = MODELS[name]()
    if device is not None:
        model = model.to(device)
    model.train()
    opt = OPTIMIZERS[optname](model.parameters())

    def step():
        opt.zero_grad(set_to_none=True)  # as ember's default (1.13's default is False)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def random_batch(n, device):
    """A random digits-shaped batch of n on device (the GPU rows' batch 256)."""
    torch.manual_seed(0)
    return torch.rand(n, 1, 8, 8).to(device), torch.randint(0, 10, (n,)).to(device)


def transformer_step(N, device=None):
    """One step of bench/train_models.lua's transformer_step: a pre-norm
    encoder layer (d 128, 4 heads, ff 512, dropout 0.1) over (N, 64) tokens
    of a vocabulary of 64, embedding and head, SGD momentum."""
    torch.manual_seed(0)
    L, D, V = 64, 128, 64
    emb = nn.Embedding(V, D)
    layer = nn.TransformerEncoderLayer(D, 4, dim_feedforward=512, dropout=0.1,
                                       batch_first=True, norm_first=True)
    head = nn.Linear(D, V)
    if device is not None:
        emb, layer, head = emb.to(device), layer.to(device), head.to(device)
    params = list(emb.parameters()) + list(layer.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    ids = torch.randint(0, V, (N, L)).to(device or "cpu")
    tgt = torch.randint(0, V, (N * L,)).to(device or "cpu")
    mask = torch.nn.Transformer.generate_square_subsequent_mask(L).to(device or "cpu")

    def step():
        opt.zero_grad()
        h = layer(emb(ids), src_mask=mask)
        loss = F.cross_entropy(head(h).reshape(N * L, V), tgt)
        loss.backward()
        opt.step()
        return loss

    return step
