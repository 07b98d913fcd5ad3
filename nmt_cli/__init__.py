"""nmt: a small, readable neural machine translation toolkit.

    from nmt_cli import Config, preset, train, Translator, evaluate
    run = train(preset("transformer"))
    print(Translator.from_run(run).translate(["I love machine learning."]))

The names that need PyTorch load it when first used, so that `import nmt_cli` (and with it
`nmt --help`) does not wait the second and a half that importing PyTorch takes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from . import before_torch  # noqa: F401, I001  (must run before anything imports torch)
from ._version import __version__
from .config import Config, DecodeConfig, ModelConfig, TrainConfig, preset, resolve_config
from .errors import UserError

USES_TORCH = {"Score": "evaluation", "evaluate": "evaluation", "evaluate_run": "evaluation",
              "train": "training", "Translator": "translate"}  # name: the module that holds it

if TYPE_CHECKING:
    from .evaluation import Score, evaluate, evaluate_run
    from .training import train
    from .translate import Translator

__all__ = ["Config", "DecodeConfig", "ModelConfig", "Score", "TrainConfig", "Translator",
           "UserError", "__version__", "evaluate", "evaluate_run", "preset", "resolve_config",
           "train"]


def __getattr__(name: str):
    """Import a name of USES_TORCH on its first use (PEP 562)."""
    if name not in USES_TORCH:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{USES_TORCH[name]}", __name__), name)
    globals()[name] = value
    return value
