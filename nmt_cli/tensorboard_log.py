"""The training log as TensorBoard scalars (train.tensorboard), for `tensorboard --logdir`.

RUN/tensorboard holds the records of RUN/metrics.jsonl, each number under the tag
SECTION/KEY: `train/loss`, `train/lr`, `train/tokens_per_s` for steps, `valid/val_bleu`,
`valid/val_loss`, `valid/ema_val_bleu` ... for validations, `train/skipped_steps` for skipped
steps; and at each validation the pictures of train.attention_plots, as images
`attention/K`. metrics.jsonl stays the record: when training starts or resumes, the event
files are written anew from it (a resumed run has cut it back to its saved step), so
TensorBoard never shows the steps a resumed run trains again, and a run may turn the log on
when it resumes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .checkpoint import ATTENTION_DIR, METRICS_FILE, metrics_records
from .errors import UserError
from .pictures import read_png

LOG_DIR = "tensorboard"
SECTIONS = {"step": "train", "validate": "valid", "skipped": "train"}  # by record kind
NOT_SCALARS = ("kind", "step")


def summary_writer() -> type:
    """torch's SummaryWriter, or a one-line error when TensorBoard is not installed."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # what torch raises when the tensorboard package is missing
        raise UserError('train.tensorboard needs TensorBoard: pip install '
                        '"nmt-cli[tensorboard]"') from None
    return SummaryWriter


class TensorBoardLog:
    def __init__(self, run_dir: Path):
        """Start RUN/tensorboard afresh with the records of RUN/metrics.jsonl."""
        self.run_dir = Path(run_dir)
        folder = self.run_dir / LOG_DIR
        for old in folder.glob("events.out.tfevents.*"):
            old.unlink()
        self.writer = summary_writer()(str(folder), flush_secs=30)
        metrics = self.run_dir / METRICS_FILE
        for _, record in metrics_records(metrics) if metrics.is_file() else []:
            self.write(record)
        self.writer.flush()

    def write(self, record: dict[str, Any]) -> None:
        section = SECTIONS.get(record.get("kind", ""))
        if section is None:
            return
        for key, value in record.items():
            if key not in NOT_SCALARS and isinstance(value, (int, float)) \
                    and not isinstance(value, bool):
                self.writer.add_scalar(f"{section}/{key}", value, record["step"])
        if section == "valid":  # validations are rare: show them at once
            for picture in sorted((self.run_dir / ATTENTION_DIR).glob(
                    f"step-{record['step']:06d}-*.png")):
                self.writer.add_image(f"attention/{picture.stem.rsplit('-', 1)[1]}",
                                      read_png(picture), record["step"], dataformats="HWC")
            self.writer.flush()

    def close(self) -> None:
        self.writer.close()
