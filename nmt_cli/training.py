"""The training loop: teacher forcing, label-smoothed cross-entropy, validation, checkpoints.

Each step feeds the decoder the reference prefix (<sos> y1 .. yn, data.Batch) and takes the
softmax cross-entropy against y1 .. yn <eos> (loss.py); the Updater clips the gradient, takes an
AdamW step and sets the rate (optim.py). Every `validate_every` steps validation.py scores the
model; the best weights by train.best_metric (BLEU by default) are kept. Progress goes to an
`on_event` callback.

A run can stop at any moment and go on exactly where it was (progress.py, checkpoint.py);
SIGINT/SIGTERM finish the current step, save, and raise `TrainingInterrupted`. Under torchrun
the same loop trains data-parallel (distributed.py); rank 0 alone writes, validates, reports.
"""

from __future__ import annotations

import gc
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import averaging, checkpoint, distributed, finetune
from .attention_maps import draw_validation_attention
from .checkpoint import ATTENTION_DIR, BEST_WEIGHTS, load_weights, new_run_dir, prepare_run_dir
from .config import PATHS, Config, flatten, to_dict, with_absolute_paths
from .corpus import SHARED, load_training_corpus
from .data import BatchLoader, token_batches
from .devices import fast_kernels, keep_freed_memory, mixed_precision, resolve_device
from .errors import UserError
from .events import Event, info
from .languages import interleaved
from .loss import TeacherForcedLoss
from .models import build_model, compile_features
from .optim import Step, Updater
from .progress import TokenRate, TrainingProgress
from .random_state import capture_rng, seed_everything
from .stopping import TrainingInterrupted, ValidationStopped, stop_at_once, stop_signals
from .tensorboard_log import TensorBoardLog, summary_writer
from .validation import selection_score, tokenizer_warnings
from .word_vectors import freeze_embeddings, initialise_embeddings


class Trainer:
    def __init__(self, config: Config, run_dir: Path, on_event: Callable[[Event], None],
                 state: dict[str, Any] | None = None):
        """A new run, or with `state` (a loaded training state) the continuation of one."""
        self.world = distributed.init(resolve_device(config.train.device))
        self.device = self.world.device
        self.config, self.run_dir = config, run_dir
        self.emit = on_event if self.world.is_main else (lambda event: None)
        if config.train.tensorboard and self.world.is_main:
            summary_writer()  # fails before the data work when TensorBoard is missing
        seed_everything(config.train.seed)
        parent = finetune.parent_of(config) if state is None else None  # resumed: in its state
        if parent is not None:
            config, changed = finetune.adopt_parent(config, parent)
            self.emit(info(f"fine-tuning {parent}: from its weights and tokenizer"
                           + (f"; its settings {', '.join(changed)}" if changed else "")))
        recorded = checkpoint.corpus_record(run_dir) if state is not None else None
        self.corpus = load_training_corpus(config, run_dir, self.world, state is None,
                                           lambda message: self.emit(info(message)), parent,
                                           recorded)
        config = self.config = self.corpus.config
        tokenizer = self.corpus.tokenizer
        if self.world.is_main:
            checkpoint.save_config(run_dir, config, tokenizer, self.corpus.record)
        vocab = tokenizer.src_vocab_size, tokenizer.tgt_vocab_size, tokenizer.joint
        self.model = build_model(config.model, *vocab).to(self.device)
        fast_kernels(self.device)
        if self.device.type == "cpu":
            keep_freed_memory()
        if parent is not None:
            load_weights(self.model, parent / BEST_WEIGHTS)
        elif state is None:  # a resumed run has its embeddings in its state
            for message in initialise_embeddings(self.model, tokenizer, config.model):
                self.emit(info(message))
        freeze_embeddings(self.model, config.model, bool(config.train.finetune_from))
        self.averages = averaging.Averages(self.model, config.train, state)  # before compiling
        self.parallel_loss = distributed.wrap(TeacherForcedLoss(self.model), self.world)
        if config.train.compile and not compile_features(self.model):
            self.emit(info("train.compile: the GRU runs eagerly (its loop breaks graphs)"))
        elif config.train.compile and config.guided():
            self.emit(info("train.compile: guided alignment reads attention weights, which "
                           "the compiled features do not give; training runs eagerly"))
        self.batches = BatchLoader(self.corpus.train, self.device, self.model.length_multiple)
        self.updater = Updater(self.model, config, self.device)
        self.optimizer, self.scaler = self.updater.optimizer, self.updater.scaler
        self.progress, self.last_step = TrainingProgress(), Step.TAKEN
        self.received: list[int] = []  # the stop signal, once one has come here (in run)
        self.stopped = False  # stopping on a signal, which may have come to another rank
        if state is not None:  # also drops log records past the saved step
            self.progress = checkpoint.restore_training(run_dir, state, self.model, self.updater,
                                                        TrainingProgress, self.world)
        # metrics.jsonl is cut back to the saved step by now: the TensorBoard log starts from it
        self.board = (TensorBoardLog(run_dir) if config.train.tensorboard and self.world.is_main
                      else None)
        where = f"resuming at step {self.progress.step}" if state else "starting"
        self.emit(info(f"{config.model.arch}: {sum(p.numel() for p in self.model.parameters()):,} "
                       f"parameters on {self.device.type}; {where}; run directory {run_dir}"))
        for warning in tokenizer_warnings(config.data.tgt_lang):
            self.emit({"kind": "warning", "message": warning})

    def epoch_batches(self, epoch: int) -> list[np.ndarray]:
        """The batches of `epoch`, over its segmentation of the training text (each epoch's
        own under subword sampling), in the order it trains them; one seed draws both."""
        seed = (self.config.train.seed * 100_003 + epoch) % 2**64  # torch's range, as it wraps
        generator = torch.Generator().manual_seed(seed)
        self.batches.data = data = self.corpus.for_epoch(seed)
        return token_batches(*data.lengths(), self.config.train.batch_tokens, generator)

    def train_step(self, batches: list[np.ndarray]) -> tuple[float, int]:
        """One update on `batches` (train.accum of them per rank); returns the mean loss per
        target token and the count. A NaN/inf loss or gradient skips the update (the loss
        comes back as NaN)."""
        self.model.train()
        t = self.config.train
        indices = np.concatenate(batches)
        tokens = int(self.corpus.target_lengths()[indices].sum()) + len(indices)  # with <eos>
        mine, weighted = self.world.share(batches)
        self.updater.zero_grad()
        total = torch.zeros((), device=self.device)
        for n, indices in enumerate(mine):
            batch = self.batches.get(indices)
            last = n == len(mine) - 1  # ranks average their gradients after the last batch
            with self.world.no_sync(self.parallel_loss, last):
                with mixed_precision(self.device, t.precision):
                    loss_sum = self.parallel_loss(batch.src, batch.tgt_in, batch.tgt_out,
                                                  t.teacher_forcing_ratio, t.label_smoothing,
                                                  batch.tgt_positions, batch.alignment,
                                                  t.alignment_weight)
                loss_sum = loss_sum if weighted else loss_sum * 0.0
                # DDP averages over N ranks: scaled by N, the average is the whole update's.
                self.updater.backward(loss_sum * (self.world.size / tokens))
            total += loss_sum.detach()
        self.last_step, loss = self.updater.step(self.world.total(total) / tokens)
        return (loss if self.last_step is Step.TAKEN else float("nan")), tokens

    def as_run(self) -> checkpoint.Run:
        """The model being trained, as a loaded run (for translating without a reload)."""
        return checkpoint.Run(self.run_dir, self.config, self.corpus.tokenizer, self.model.eval())

    def save(self, best: bool) -> None:
        """Save the training state and weights: every rank sends its random states, rank 0
        writes. A failed write is reported and the previous files stay as they were."""
        rng = self.world.gather(capture_rng(self.device))
        if not self.world.is_main:
            return
        update_batches = self.world.size * self.config.train.accum  # resume compares it
        try:
            self.averages.save_training(self.run_dir, asdict(self.progress), self.model,
                                        self.updater, rng, best,
                                        {"update_batches": update_batches})
        except OSError as e:
            if not (self.run_dir / checkpoint.TRAIN_STATE).is_file():  # none to go back to
                raise UserError(f"{self.run_dir}: could not save the run's first checkpoint "
                                f"({e.strerror or e}); make room, delete the run (rm -r "
                                f"{self.run_dir}) and train again") from None
            self.emit({"kind": "warning", "message": f"step {self.progress.step}: could not save "
                       f"a checkpoint ({e.strerror or e}); the previous one is kept"})

    def write_metrics(self, record: Event) -> None:
        if self.world.is_main:
            checkpoint.append_metrics(self.run_dir, record)
        if self.board is not None:
            self.board.write(record)

    def validate_and_save(self) -> bool:
        """Rank 0 validates (writing valid/step-N.txt), the others wait for its scores; the
        best weights are kept. False when a signal stopped the validation: the state is saved
        without it, and the run, resumed, validates there first."""
        outputs = self.run_dir / "valid" / f"step-{self.progress.step:06d}.txt"
        scored = None
        if self.world.is_main:
            try:
                scored = self.averages.validate(self.model, self.corpus, self.config.train,
                                                self.device, outputs,
                                                self.progress.validated_at < 0,
                                                lambda: bool(self.received))
            except ValidationStopped:
                pass
        if (scored := self.world.from_main(scored)) is None:  # every rank stops
            self.stopped = True
            self.save(best=False)
            return False
        metrics, samples = scored
        metric, on_schedule = self.config.train.best_metric, self.on_schedule()
        improved = self.progress.count_validation(selection_score(metrics, metric), on_schedule)
        if on_schedule:  # the plateau schedule
            self.updater.validated(metrics[f"val_{metric}"])
        record = {"kind": "validate", "step": self.progress.step, **metrics, "best": improved}
        if (count := self.config.train.attention_plots) and self.world.is_main:
            try:
                sources = self.corpus.val_text.src  # the first of each language in turn
                rows = interleaved(self.corpus.val_rows, count)
                draw_validation_attention(self.as_run(), [sources[i] for i in rows],
                                          self.run_dir / ATTENTION_DIR, self.progress.step,
                                          self.device, self.config.train.precision)
            except OSError as e:  # a picture is not worth the run
                self.emit({"kind": "warning", "message": f"step {self.progress.step}: could "
                           f"not draw the attention pictures ({e.strerror or e})"})
        self.write_metrics(record)  # before the save: see truncate_metrics
        self.save(best=improved)
        self.emit({**record, "samples": samples})
        return True

    def run(self) -> Path:
        try:
            with stop_signals() as received:
                self.received = received
                self.loop(received)
        finally:
            self.batches.close()
            self.corpus.close()
            if self.board is not None:
                self.board.close()
        if self.received or self.stopped:  # the signal came here, or to another rank
            raise TrainingInterrupted(self.received[0] if self.received else signal.SIGTERM,
                                      self.run_dir, self.progress.step)
        self.emit({"kind": "done", "step": self.progress.step,
                   "best_metric": self.config.train.best_metric,
                   "best_score": self.progress.best_score, "run_dir": str(self.run_dir),
                   **self.averages.summary()})
        return self.run_dir

    def loop(self, received: list[int]) -> None:
        p, t, speed = self.progress, self.config.train, TokenRate()
        if p.out_of_patience(t):  # resumed after early stopping: it stays stopped
            self.emit(info(f"the run stopped early at step {p.step}: no better validation "
                           f"{t.best_metric} in {t.patience} validations; to train it on, "
                           f"resume it with a larger train.patience (or 0)"))
            return
        if not any((t.max_steps, t.max_time, t.epochs)):  # as the base and big presets are
            self.emit(info("no limit is set (train.max_steps, train.max_time and train.epochs "
                           "are 0): training goes on until it is stopped"
                           + (" or its patience runs out" if t.patience else "")))
        if p.at_start:
            self.save(best=False)  # from here on, a stopped run can always be resumed
            if t.finetune_from and p.validated_at < 0 and not self.validate_and_save():
                return  # (the parent's score on this validation set is the mark to beat)
        elif p.step % t.validate_every == 0 and p.validated_at != p.step and self.validate():
            return  # it was stopped at a step due for validation: that validation comes first
        started = time.monotonic() - p.train_time
        step_began = time.monotonic()  # the next step's, after any validation or save
        prefetch = lambda update: self.batches.prefetch(self.world.share(update)[0])  # noqa: E731
        for update, epoch_fraction in p.updates(self.epoch_batches, t.accum * self.world.size,
                                                t, prefetch):
            # for the linear schedule, which sets the next update's rate after this one
            self.updater.done = p.fraction_done(t, epoch_fraction, taking=1)
            loss, tokens = self.train_step(update)
            now = time.monotonic()
            p.train_time = now - started
            taken = self.count_step(loss)
            if taken:
                self.log_step(loss, tokens, speed.add(now - step_began, tokens), epoch_fraction)
            stop = bool(received)
            if self.world.size > 1:  # ranks stop together, and agree on the time for max_time
                stop, p.train_time = self.world.maximum(float(stop), p.train_time)
            if stop:  # as all ranks decided, whatever signal came since
                self.stopped = True
                self.save(best=False)
                return
            if taken and p.step % t.validate_every == 0 and self.validate():
                return
            if p.limit_reached(t):
                break
            step_began = time.monotonic()
        if p.validated_at != p.step:
            self.validate_and_save()

    def on_schedule(self) -> bool:
        """Whether this step is one of every train.validate_every: its validation counts for
        patience and the plateau schedule. One where a run stops between two (at its limit)
        picks best weights only, so that the run, extended, goes on as if it had had none."""
        return self.progress.step % self.config.train.validate_every == 0

    def validate(self) -> bool:
        """Validate and save; True when training ends here: a signal stopped the validation,
        or patience has run out (early stopping)."""
        if not self.validate_and_save():
            return True
        if stop := self.progress.out_of_patience(t := self.config.train):
            self.emit(info(f"early stopping: no better validation {t.best_metric} in "
                           f"{t.patience} validations"))
        return stop

    def count_step(self, loss: float) -> bool:
        """Count a step; a skipped one is logged, and too many NaN/inf ones in a row end
        training (the last good state is kept). True when the update was taken."""
        p = self.progress
        if p.count_step(loss, overflow=self.last_step is Step.OVERFLOW):
            self.averages.update(self.model)
            return True
        self.write_metrics({"kind": "skipped", "step": p.step, "skipped_steps": p.skipped_steps,
                            "reason": self.last_step.value})
        p.check_divergence(self.config.train, self.run_dir)
        return False

    def log_step(self, loss: float, tokens: int, tokens_per_s: float, in_epoch: float) -> None:
        p = self.progress
        record = {"kind": "step", "step": p.step, "epoch": p.epoch + 1, "loss": loss,
                  "lr": self.updater.last_lr, "tokens": tokens, "tokens_per_s": tokens_per_s,
                  "elapsed": p.train_time}
        self.write_metrics(record)
        self.emit({**record, "fraction": p.fraction_done(self.config.train, in_epoch)})


def train(config: Config, run_dir: Path | None = None,
          on_event: Callable[[Event], None] | None = None) -> Path:
    """Train a model as `config` says; returns the run directory."""
    config = with_absolute_paths(config)  # as resolve_config gives them
    world = distributed.init(resolve_device(config.train.device))
    check_started_alike(world, "starts a new run", config)
    run_dir = Path(world.from_main(str(run_dir or new_run_dir(config))))
    created = not run_dir.exists()
    if world.is_main and created:
        prepare_run_dir(run_dir)
    with checkpoint.claimed(run_dir, world.is_main):  # first: a run may have begun unsaved
        if world.is_main and not created:
            prepare_run_dir(run_dir)  # refuses a folder that holds files
        world.barrier()
        try:
            with stop_at_once():
                trainer = Trainer(config, run_dir, on_event or (lambda event: None))
        except BaseException:  # bad data or device: leave no half-made run behind
            if world.is_main:
                remove_unstarted(run_dir, created)
            raise
        return run_to_the_end(trainer)


def remove_unstarted(run_dir: Path, created: bool) -> None:
    """Remove what a run that failed to start wrote: the folder it created, or what it wrote
    into the empty one it was given."""
    if created:
        shutil.rmtree(run_dir, ignore_errors=True)
        return
    for path in run_dir.iterdir():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def resume(run_dir: Path, overrides: dict[str, Any] | None = None,
           on_event: Callable[[Event], None] | None = None) -> Path:
    """Continue a run from its training state; `overrides` may change e.g. its limits."""
    run_dir, on_event = Path(run_dir), on_event or (lambda event: None)
    with checkpoint.claimed(run_dir, distributed.launched_rank() == 0):  # before it is read
        config, state = checkpoint.load_for_resume(run_dir, overrides or {})
        world = distributed.init(resolve_device(config.train.device))
        check_started_alike(world, "resumes a run", config)
        check_resumed_alike(world, state["progress"], run_dir)
        note = on_event if world.is_main else (lambda event: None)
        before = checkpoint.read_config(run_dir)[0]
        if before.data.data_dir != config.data.data_dir:  # a corpus moved elsewhere
            note(info(f"the corpus is now read from {config.data.data_dir or 'the bundled sample'} "
                      f"(it was {before.data.data_dir or 'the bundled sample'})"))
        ranks = len(state["rng"]) if isinstance(state.get("rng"), list) else 1  # that saved it
        then = state.get("update_batches", ranks * before.train.accum)  # older states lack it
        if then != (now := world.size * config.train.accum):
            keeps = (f"; --set train.accum={then // world.size} keeps them at {then}"
                     if then % world.size == 0 else "")
            note(info(f"an update took {then} batches ({ranks} processes x train.accum "
                      f"{then // ranks}) and now takes {now} ({world.size} x "
                      f"{config.train.accum}): the run goes on otherwise than it would have"
                      + keeps))
        if world.is_main:
            checkpoint.remove_partial_writes(run_dir)
        with stop_at_once():
            trainer = Trainer(config, run_dir, on_event, state)
        return run_to_the_end(trainer)


# Settings that name places on a machine, where each machine may keep its own copy
PER_MACHINE = (*PATHS, "model.src_embeddings", "model.tgt_embeddings")


def check_started_alike(world: distributed.World, starts: str, config: Config) -> None:
    """Every rank starts what rank 0 starts, a new run or a resumed one, with its settings:
    each machine decides from its own files and options, and a rank that saw no run to
    resume where rank 0 saw one, or that was given another --max-steps, would wait on the
    others at another collective until the timeout."""
    settings = {key: value for key, value in flatten(to_dict(config)).items()
                if key not in PER_MACHINE}
    (first, ours), *others = world.everyones((starts, settings))
    for rank, (starting, theirs) in enumerate(others, 1):
        if starting != first:
            raise UserError(f"rank {rank} {starting}, rank 0 {first}; {SHARED}")
        if changed := [key for key in ours if theirs.get(key) != ours[key]]:
            raise UserError(f"rank {rank} trains with {changed[0]}={theirs.get(changed[0])!r}, "
                            f"rank 0 with {ours[changed[0]]!r}: every process must be given "
                            "the same settings")


def check_resumed_alike(world: distributed.World, progress: dict[str, Any], run_dir: Path
                        ) -> None:
    """Every rank resumes from the state that rank 0 resumes from. On several machines each
    reads the run directory where it runs: one that read a stale copy would train other steps,
    and the ranks would wait on each other."""
    states = world.everyones(progress)
    for rank, theirs in enumerate(states[1:], 1):
        if theirs != states[0]:
            what = (f"step {theirs['step']:,}" if theirs["step"] != states[0]["step"]
                    else "another state at that step")
            raise UserError(f"{run_dir}: rank {rank} resumes from {what}, rank 0 from step "
                            f"{states[0]['step']:,}; {SHARED}")


def run_to_the_end(trainer: Trainer) -> Path:
    """Run training; the ranks of a data-parallel run then leave their group together (they
    stop together on a signal too; after an error torchrun ends them all)."""
    try:
        run_dir = trainer.run()
    except TrainingInterrupted:
        leave_group(trainer)
        raise
    leave_group(trainer)
    return run_dir


def leave_group(trainer: Trainer) -> None:
    """Let go of DistributedDataParallel, which holds the process group, then leave the group:
    so it is torn down, its threads joined, while Python is whole. Held on to, it was torn
    down at exit, and once in some twenty CI runs a rank aborted there ("terminate called
    without an active exception")."""
    if trainer.world.size > 1:
        trainer.parallel_loss = None
        gc.collect()
    distributed.leave(trainer.world)
