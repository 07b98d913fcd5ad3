"""nmt: a small, readable neural machine translation toolkit.

    from nmt_cli import Config, preset, train, Translator, evaluate
    run = train(preset("transformer"))
    print(Translator.from_run(run).translate(["I love machine learning."]))
"""

from ._version import __version__
from .config import Config, DecodeConfig, ModelConfig, TrainConfig, UserError, preset
from .evaluate import Score, evaluate
from .training import train
from .translate import Translator

__all__ = ["Config", "DecodeConfig", "ModelConfig", "Score", "TrainConfig", "Translator",
           "UserError", "__version__", "evaluate", "preset", "train"]
