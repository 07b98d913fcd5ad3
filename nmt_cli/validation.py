"""Scoring the model during training: teacher-forced loss and perplexity, and the BLEU and
chrF of its greedy translations of the validation set (and of each target language's part, for
a run with several), which are written to the run directory (valid/step-000500.txt) and three
of which are shown. One of them, train.best_metric, ranks
the validations (`selection_score`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path

import torch

from .config import DecodeConfig, TrainConfig
from .corpus import TrainingCorpus
from .data import make_batch, token_batches
from .devices import mixed_precision
from .errors import UserError
from .evaluation import bleu, bleu_tokenizer, evaluate
from .files import atomic_write_text
from .languages import interleaved, target_languages
from .loss import teacher_forced_loss
from .models import Seq2Seq
from .search import translate_ids
from .stopping import ValidationStopped

GREEDY = DecodeConfig(beam=1, batch_size=128)
SAMPLES = 3  # validation pairs shown with the model's output at every validation


@torch.inference_mode()
def validate(model: Seq2Seq, corpus: TrainingCorpus, t: TrainConfig, device: torch.device,
             outputs: Path, stopping: Callable[[], bool] = lambda: False
             ) -> tuple[dict[str, float], list[dict[str, str]]]:
    """Loss per target token and perplexity (no label smoothing), BLEU and chrF; the
    translations go to the file `outputs`. Returns the scores and a few (source, reference,
    output). Raises ValidationStopped between two batches once `stopping()`: a run told to
    stop saves at once, not after a validation that may outlast its grace period (torchrun
    and container runtimes kill after SIGTERM's 30 seconds)."""

    def check() -> None:
        if stopping():
            raise ValidationStopped

    model.eval()
    total_loss, total_tokens = 0.0, 0
    for indices in token_batches(*corpus.val.lengths(), t.batch_tokens):
        check()
        batch = make_batch(corpus.val, indices, model.length_multiple).to(device)
        with mixed_precision(device, t.precision):
            total_loss += teacher_forced_loss(model, batch.src, batch.tgt_in, batch.tgt_out,
                                              positions=batch.tgt_positions).item()
        total_tokens += batch.num_tgt_tokens
    loss = total_loss / max(total_tokens, 1)
    text = corpus.val_text
    check()
    hypotheses = translate_greedy(model, corpus, text.src, t.precision, device, check)
    outputs.parent.mkdir(exist_ok=True)
    atomic_write_text(outputs, "".join(f"{line}\n" for line in hypotheses))
    groups = corpus.val_rows
    tokenizers = {language: validation_tokenizer(language) for language in groups}
    alike = len(set(tokenizers.values())) == 1
    bleu, chrf = (s.score for s in evaluate(hypotheses, text.tgt, ("bleu", "chrf"), False,
                                            next(iter(tokenizers.values())) if alike else "13a"))
    metrics = {"val_loss": loss, "val_ppl": math.exp(min(loss, 50.0)), "val_bleu": bleu,
               "val_chrf": chrf}
    if len(groups) > 1:  # several target languages: the scores of each too
        for language, rows in groups.items():
            scores = evaluate([hypotheses[i] for i in rows], [text.tgt[i] for i in rows],
                              ("bleu", "chrf"), False, tokenizers[language])
            metrics |= {f"val_bleu_{language}": scores[0].score,
                        f"val_chrf_{language}": scores[1].score}
        if not alike:  # no one tokenizer splits them all (de and zh): each its own, averaged
            metrics["val_bleu"] = sum(metrics[f"val_bleu_{language}"]
                                      for language in groups) / len(groups)
    samples = [{"source": text.src[i], "reference": text.tgt[i], "output": hypotheses[i]}
               for i in interleaved(groups, SAMPLES)]
    return metrics, samples


@functools.cache  # once a process: each validation asks again
def validation_tokenizer(language: str) -> str:
    """The tokenizer of validation BLEU into `language`: sacreBLEU's for it, or char where
    that one needs MeCab and MeCab is not installed (a validation must not stop the run)."""
    tokenize = bleu_tokenizer(language)
    try:
        bleu(tokenize=tokenize)
    except UserError:
        return "char"
    return tokenize


def tokenizer_warnings(tgt_lang: str) -> list[str]:
    """What validation BLEU into the languages of `tgt_lang` cannot score as sacreBLEU does."""
    return [f"validation BLEU into {language} counts characters (tok:char): sacreBLEU's "
            f"tok:{wanted} needs MeCab (pip install \"sacrebleu[{language}]\")"
            for language in target_languages(tgt_lang)
            if (wanted := bleu_tokenizer(language)) != validation_tokenizer(language)]


def selection_score(metrics: dict[str, float], metric: str) -> float:
    """The score of a validation by `metric` (train.best_metric), higher being better: its
    BLEU, its chrF, or minus its loss; -inf for a NaN or infinite loss."""
    score = shown_score(metrics[f"val_{metric}"], metric)
    return score if math.isfinite(score) else -math.inf


def shown_score(score: float, metric: str) -> float:
    """A selection score as the metric reads (a loss again positive), and the other way."""
    return -score if metric == "loss" else score


def translate_greedy(model: Seq2Seq, corpus: TrainingCorpus, lines: list[str], precision: str,
                     device: torch.device, after_batch: Callable[[], None] = lambda: None
                     ) -> list[str]:
    with mixed_precision(device, precision):
        ids = translate_ids(model, corpus.tokenizer.encode_src(lines), GREEDY, device,
                            after_batch=after_batch)
    return corpus.tokenizer.decode_tgt(ids)
