"""nmt: a small, readable neural machine translation toolkit.

    from nmt_cli import Config, preset, train, Translator, evaluate
    run = train(preset("transformer"))
    print(Translator.from_run(run).translate(["I love machine learning."]))
"""

import os

# oneDNN (PyTorch's CPU kernels for bf16 matrix products) caches a compiled kernel for every
# new tensor shape, 1,024 of them by default; with batches of varying shapes that cache grew a
# bf16 training process by 2 GB in 60 steps on Multi30k. Sixteen entries kept memory flat at
# the same speed (bench/RESULTS.md). Read when torch loads, so set before it is imported.
os.environ.setdefault("LRU_CACHE_CAPACITY", "16")
os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16")

from ._version import __version__  # noqa: E402
from .config import Config, DecodeConfig, ModelConfig, TrainConfig, UserError, preset  # noqa: E402
from .evaluate import Score, evaluate  # noqa: E402
from .training import train  # noqa: E402
from .translate import Translator  # noqa: E402

__all__ = ["Config", "DecodeConfig", "ModelConfig", "Score", "TrainConfig", "Translator",
           "UserError", "__version__", "evaluate", "preset", "train"]
