#!/usr/bin/python3
"""write_test_modules.py OUT_DIR: the TorchScript modules the torch tests train and refuse.

The shipped examples (examples/torch/fashion_models.py) as OUT_DIR/<name>.pt, and modules that
gradshare must refuse or tell apart: frozen.pt (no trainable parameter), tuple.pt (forward
returns a tuple), renamed_mlp.pt (the MLP's shapes under other names: a checkpoint of the MLP
does not fit it), garbage.pt (not an archive).
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "examples", "torch"))
import torch  # noqa: E402
from torch import nn  # noqa: E402

import fashion_models  # noqa: E402


class Frozen(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(784, 10)
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        return self.linear(x.flatten(1))


class TupleOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(784, 10)

    def forward(self, x):
        y = self.linear(x.flatten(1))
        return y, y


class RenamedMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc3(torch.relu(self.fc2(x)))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in fashion_models.MODELS:
        torch.jit.script(fashion_models.make(name)).save(os.path.join(out, name + ".pt"))
    torch.jit.script(Frozen()).save(os.path.join(out, "frozen.pt"))
    torch.jit.script(TupleOut()).save(os.path.join(out, "tuple.pt"))
    torch.jit.script(RenamedMlp()).save(os.path.join(out, "renamed_mlp.pt"))
    with open(os.path.join(out, "garbage.pt"), "w") as f:
        f.write("not a TorchScript archive\n")


if __name__ == "__main__":
    main()
