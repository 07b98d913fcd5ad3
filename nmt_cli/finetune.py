"""Fine-tuning: a new run that starts from a trained run, its parent, instead of from random
weights; e.g. a model trained on a large general corpus, adapted to a small one of your domain.

`nmt train --finetune PARENT --data CORPUS` (train.finetune_from) starts from the parent's best
weights (model.safetensors; `nmt average` makes a run of averaged or EMA weights) and keeps its
tokenizer, whose files are copied, not trained again on the new corpus: the weights know its
pieces only. The model settings that shape the weights come from the parent too. What is the
new run's own: the corpus, the training settings (a new optimizer, learning-rate schedule and
step count, from step 0), dropout, and whether the embeddings stay frozen.

Its first validation, at step 0, scores the parent on the new validation set: the mark the
fine-tuned weights must beat to become the run's best weights.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .checkpoint import BEST_WEIGHTS, CONFIG_FILE, read_config
from .config import Config
from .data import corpus_dir
from .errors import UserError
from .languages import check_tags
from .prepared import TOKENIZER_MADE_WITH, is_prepared
from .tokenizer import Tokenizer, tokenizer_files

# Model settings a fine-tuning run sets for itself: they shape no weight.
OWN_MODEL_SETTINGS = ("dropout", "freeze_embeddings")


def parent_arch(parent: Path) -> str | None:
    """The parent's model family, whose preset a fine-tuning run starts from unless told
    otherwise; None when it is not a run (parent_of then says why)."""
    try:
        return read_config(Path(parent))[0].model.arch
    except UserError:
        return None


def parent_of(config: Config) -> Path | None:
    """The run that `config` fine-tunes, checked to be a trained run; None for a new model."""
    if not config.train.finetune_from:
        return None
    parent = Path(config.train.finetune_from)
    if not (parent / CONFIG_FILE).is_file() or not (parent / BEST_WEIGHTS).is_file():
        raise UserError(f"--finetune {parent}: not a trained run directory (no {CONFIG_FILE} "
                        f"and {BEST_WEIGHTS})")
    if config.model.src_embeddings or config.model.tgt_embeddings:
        raise UserError(f"--finetune {parent}: the embeddings come from its weights; leave "
                        "model.src_embeddings and model.tgt_embeddings empty")
    folder = corpus_dir(config.data.data_dir)
    # a prepared corpus holds the token ids of its own tokenizer: it must be the parent's
    if is_prepared(folder) and tokenizer_files(folder) != tokenizer_files(parent):
        raise UserError(f"--finetune {parent}: {folder} was prepared with another tokenizer, "
                        "whose pieces the parent's weights do not know; prepare it with "
                        f"`nmt data prepare --tokenizer {parent}`")
    return parent


def check_parent_languages(parent: Path, tgt_lang: str) -> None:
    """The parent's tokenizer holds the tag of each target language, and tags sources only
    if the run has several."""
    check_tags(Tokenizer.load(parent), tgt_lang, f"--finetune {parent}",
               "fine-tune it into the languages it knows")


def adopt_parent(config: Config, parent: Path) -> tuple[Config, list[str]]:
    """`config` with the parent's model settings (but OWN_MODEL_SETTINGS) and the settings its
    tokenizer was made with; also the settings that changed, as `section.key=value`."""
    theirs = read_config(parent)[0]
    if config.data.max_len > (most := theirs.model.max_positions):
        raise UserError(f"--finetune {parent}: its model reads at most {most} tokens "
                        f"(model.max_positions), fewer than data.max_len {config.data.max_len}"
                        f"; give --set data.max_len={most}")
    model = dataclasses.replace(
        theirs.model, src_embeddings="", tgt_embeddings="",  # loaded once, into the parent
        **{key: getattr(config.model, key) for key in OWN_MODEL_SETTINGS})
    tokenizer = dataclasses.replace(
        config.tokenizer, **{key: getattr(theirs.tokenizer, key) for key in TOKENIZER_MADE_WITH})
    adopted = dataclasses.replace(config, model=model, tokenizer=tokenizer)
    changed = [f"{section}.{key}={value!r}" for section in ("model", "tokenizer")
               for key, value in dataclasses.asdict(getattr(adopted, section)).items()
               if value != getattr(getattr(config, section), key)]
    return adopted, changed

