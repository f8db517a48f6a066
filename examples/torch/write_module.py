#!/usr/bin/python3
"""write_module.py: saves one of the example modules as TorchScript for gradshare.

usage: write_module.py {mlp,cnn,resnet,lstm,transformer} OUT.pt [--seed N]

The file is what `model.torchscript` names; gradshare trains the module's parameters from the
values saved here. Save your own module the same way: torch.jit.script(module).save(path)
(or torch.jit.trace with an example batch when scripting fails).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

import fashion_models  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=sorted(fashion_models.MODELS))
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    module = fashion_models.make(args.model, args.seed)
    scripted = torch.jit.script(module)
    scripted.save(args.out)
    print(f"{args.out}: {args.model}, {fashion_models.parameter_count(module):,} parameters, "
          f"input {fashion_models.input_shape(args.model)}")


if __name__ == "__main__":
    main()
