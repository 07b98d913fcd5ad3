"""What training reports through its `on_event` callback: plain dicts with a "kind".

    step      step, epoch, loss, lr, tokens, tokens_per_s, elapsed, fraction (of the limit)
    validate  step, val_loss, val_ppl, val_bleu, val_chrf, best, samples (source, reference,
              output); with several target languages also val_bleu_LANG, val_chrf_LANG for
              each; with an EMA, ema_val_loss ... ema_best
    skipped   step, skipped_steps, reason (a NaN/inf step, or an fp16 overflow)
    info, warning   message
    done      step, best_metric, best_score (validation.selection_score), run_dir

The same records (less `fraction` and `samples`) are appended to the run's metrics.jsonl,
as json_text writes them: a skipped step's loss, NaN, as null.
"""

from __future__ import annotations

import json
import math
from typing import Any

Event = dict[str, Any]


def info(message: str) -> Event:
    return {"kind": "info", "message": message}


def json_text(value: Any, **options: Any) -> str:
    """`value` as strict JSON, with each NaN or infinite number as null: json.dumps would
    write a bare NaN, which jq, JavaScript and other strict readers refuse."""
    return json.dumps(finite(value), allow_nan=False, **options)


def finite(value: Any) -> Any:
    """`value` with each NaN or infinite float in it, however deep, replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value
