"""What torchrun starts in the distributed tests: the nmt CLI, with one rank sabotaged on request.

FAIL_AT_STEP=S  rank 1 raises a UserError when it is about to take step S.
GUARD_WRITES=1  ranks other than 0 raise on any attempt to write in the run directory.
RANK_1_READS=A=B  rank 1 is given B for each argument A: another corpus or run directory, as a
                  machine with its own copy would have.
"""

import builtins
import os
import sys
from pathlib import Path

from nmt_cli import training
from nmt_cli.cli import app
from nmt_cli.config import UserError
from nmt_cli.tokenizer import Tokenizer

RANK = int(os.environ["RANK"])

if RANK == 1 and os.environ.get("FAIL_AT_STEP"):
    train_step = training.Trainer.train_step

    def failing_train_step(self, indices):
        if self.progress.step + 1 >= int(os.environ["FAIL_AT_STEP"]):
            raise UserError("rank 1 failed on purpose")
        return train_step(self, indices)

    training.Trainer.train_step = failing_train_step

if RANK != 0 and os.environ.get("GUARD_WRITES"):
    run_dir = Path(os.environ["GUARD_WRITES"]).resolve()
    open_file = builtins.open

    def guarded_open(file, mode="r", *args, **kwargs):
        inside = isinstance(file, (str, os.PathLike)) and run_dir in Path(file).resolve().parents
        if inside and any(flag in mode for flag in "wax+"):
            raise AssertionError(f"rank {RANK} wrote {file}")
        return open_file(file, mode, *args, **kwargs)

    def no_tokenizer_training(*args, **kwargs):
        raise AssertionError(f"rank {RANK} trained the tokenizer")

    builtins.open = guarded_open
    Tokenizer.train = staticmethod(no_tokenizer_training)

if RANK == 1 and os.environ.get("RANK_1_READS"):
    given, instead = os.environ["RANK_1_READS"].split("=")
    sys.argv = [instead if arg == given else arg for arg in sys.argv]

app(prog_name="nmt")
