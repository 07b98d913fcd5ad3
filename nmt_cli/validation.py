"""Scoring the model during training: teacher-forced loss and perplexity, and the BLEU of its
greedy translations of the validation set."""

from __future__ import annotations

import math

import torch

from .config import DecodeConfig, TrainConfig
from .corpus import TrainingCorpus
from .data import make_batch, token_batches
from .devices import mixed_precision
from .evaluate import bleu
from .loss import teacher_forced_loss
from .models import Seq2Seq
from .search import translate_ids

GREEDY = DecodeConfig(beam=1, batch_size=128)


@torch.inference_mode()
def validate(model: Seq2Seq, corpus: TrainingCorpus, t: TrainConfig,
             device: torch.device) -> dict[str, float]:
    """Loss per target token and perplexity (no label smoothing), and BLEU."""
    model.eval()
    total_loss, total_tokens = 0.0, 0
    for indices in token_batches(*corpus.val.lengths(), t.batch_tokens):
        batch = make_batch(corpus.val, indices).to(device)
        with mixed_precision(device, t.precision):
            total_loss += teacher_forced_loss(model, batch.src, batch.tgt_in, batch.tgt_out,
                                              positions=batch.tgt_positions).item()
        total_tokens += batch.num_tgt_tokens
    loss = total_loss / max(total_tokens, 1)
    hypotheses = translate_greedy(model, corpus, corpus.val_text.src, t.precision, device)
    return {"val_loss": loss, "val_ppl": math.exp(min(loss, 50.0)),
            "val_bleu": bleu(hypotheses, corpus.val_text.tgt)}


def translate_greedy(model: Seq2Seq, corpus: TrainingCorpus, lines: list[str], precision: str,
                     device: torch.device) -> list[str]:
    with mixed_precision(device, precision):
        ids = translate_ids(model, corpus.tokenizer.encode_src(lines), GREEDY, device)
    return corpus.tokenizer.decode_tgt(ids)
