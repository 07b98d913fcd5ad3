"""nmt: a small, readable neural machine translation toolkit.

    from nmt_cli import Config, preset, train, Translator, evaluate
    run = train(preset("transformer"))
    print(Translator.from_run(run).translate(["I love machine learning."]))
"""

from . import before_torch  # noqa: F401, I001  (must run before anything imports torch)
from ._version import __version__
from .config import Config, DecodeConfig, ModelConfig, TrainConfig, preset, resolve_config
from .errors import UserError
from .evaluate import Score, evaluate, evaluate_run
from .training import train
from .translate import Translator

__all__ = ["Config", "DecodeConfig", "ModelConfig", "Score", "TrainConfig", "Translator",
           "UserError", "__version__", "evaluate", "evaluate_run", "preset", "resolve_config",
           "train"]
