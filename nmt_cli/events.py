"""What training reports through its `on_event` callback: plain dicts with a "kind".

    step      step, epoch, loss, lr, tokens, tokens_per_s, elapsed, fraction (of the limit)
    validate  step, val_loss, val_ppl, val_bleu, val_chrf, best, samples (source, reference,
              output); with several target languages also val_bleu_LANG, val_chrf_LANG for
              each; with an EMA, ema_val_loss ... ema_best
    skipped   step, skipped_steps, reason (a NaN/inf step, or an fp16 overflow)
    info, warning   message
    done      step, best_metric, best_score (validation.selection_score), run_dir

The same records (less `fraction` and `samples`) are appended to the run's metrics.jsonl.
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]


def info(message: str) -> Event:
    return {"kind": "info", "message": message}
