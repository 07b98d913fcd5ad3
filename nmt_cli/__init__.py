"""nmt: a small, readable neural machine translation toolkit.

    from nmt_cli import Config, preset, train, Translator, evaluate
    run = train(preset("transformer"))
    print(Translator.from_run(run).translate(["I love machine learning."]))
"""

__version__ = "0.1.0"

from .config import Config, DecodeConfig, ModelConfig, TrainConfig, UserError, preset  # noqa: E402
from .evaluate import Score, evaluate  # noqa: E402
from .training import train  # noqa: E402
from .translate import Translator  # noqa: E402

__all__ = ["Config", "DecodeConfig", "ModelConfig", "Score", "TrainConfig", "Translator",
           "UserError", "__version__", "evaluate", "preset", "train"]
