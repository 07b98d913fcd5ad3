"""A self-describing run directory: everything needed to translate, or to go on training.

    config.json          the resolved configuration, vocabulary sizes and a record of the
                         training and validation pairs (corpus.py), checked on resuming
    spm.model            the tokenizer (spm.src.model + spm.tgt.model when not joint)
    model.safetensors    the best weights by validation BLEU, or train.best_metric (what
                         translation uses)
    last.safetensors     the weights of the latest step
    step-N.safetensors   with train.keep_last = K: the weights of the last K validations
    ema.safetensors      with train.ema_decay: the best EMA weights by the same
    ema-last.safetensors ... and the EMA weights of the latest step (averaging.py)
    train_state.pt       everything needed to go on exactly: weights, optimizer moments,
                         schedule, progress (step, epoch, batch) and random states
    metrics.jsonl        one JSON object per logged step or validation
    valid/step-N.txt     the greedy translations of the validation set at step N
    attention/step-N-K.png   with train.attention_plots: validation sentence K's
                         cross-attention at step N (six digits, as valid/ has it)
    tensorboard/         with train.tensorboard: metrics.jsonl as TensorBoard event files

Weights are stored as safetensors; the training state is read back with
`torch.load(weights_only=True)`. No Python object is ever unpickled.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import pickle
import platform
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

import safetensors.torch
import torch
from safetensors import SafetensorError
from safetensors.torch import load_model

from ._version import __version__
from .config import RUNS_DIR, Config, from_dict, resume_config, to_dict
from .distributed import World
from .errors import UserError, in_file
from .events import json_text
from .files import atomic_write_bytes, atomic_write_text
from .models import Seq2Seq, build_model
from .optim import Updater
from .random_state import restore_rng, rng_of_rank
from .tokenizer import Tokenizer

CONFIG_FILE = "config.json"
BEST_WEIGHTS = "model.safetensors"
LAST_WEIGHTS = "last.safetensors"
EMA_WEIGHTS = "ema.safetensors"
EMA_LAST_WEIGHTS = "ema-last.safetensors"
KEPT_WEIGHTS = re.compile(r"step-(\d+)\.safetensors")
TRAIN_STATE = "train_state.pt"
EXPORT_FILE = "nmt-export.json"  # marks a CTranslate2 export (ct2_export.py), no run
METRICS_FILE = "metrics.jsonl"
ATTENTION_DIR = "attention"  # train.attention_plots: attention/step-NNNNNN-K.png


def new_run_dir(config: Config, runs_dir: Path = Path(RUNS_DIR)) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return runs_dir / f"{stamp}-{config.model.arch}"


def prepare_run_dir(run_dir: Path) -> Path:
    """Create an empty run directory (refusing one that already holds files)."""
    run_dir = Path(run_dir)
    if run_dir.exists() and any(run_dir.iterdir()):
        if unstarted(run_dir):
            raise UserError(f"--run {run_dir}: holds a run stopped before its first step was "
                            f"saved, so nothing in it can be resumed; delete it "
                            f"(rm -r {run_dir}) or choose a new one")
        raise UserError(f"--run {run_dir}: directory already holds files; choose a new one")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"--run {run_dir}: cannot create directory ({e.strerror})") from None
    return run_dir


@contextlib.contextmanager
def claimed(run_dir: Path, main: bool) -> Iterator[None]:
    """`run_dir` trained by this run alone while inside: a second `nmt train` into it (a new
    run, a resume) is refused instead of writing its log and weights among this one's. The
    claim is a lock on the folder, rank 0's (`main`), which ends with the process however it
    ends. Where the system has no such locks (Windows, some network file systems), nothing is
    claimed."""
    if not main or fcntl is None:
        yield
        return
    try:
        folder = os.open(run_dir, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"{run_dir}: another `nmt train` is training this run now; wait "
                            "for it to end, or choose another --run") from None
        except OSError:  # no locks there
            pass
        yield
    finally:
        os.close(folder)


LIBRARIES = ("sentencepiece", "sacrebleu")  # recorded in config.json, beside Python and torch


def library_versions() -> dict[str, str]:
    # torch's own version names its build (2.13.0+cpu, 2.13.0+cu130), which the package
    # metadata of the CUDA wheel from the package index leaves out (2.13.0)
    found = {"nmt": __version__, "python": platform.python_version(),
             "torch": torch.__version__}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:  # a build without package metadata
            found[name] = "unknown"
    return found


def earlier_versions(run_dir: Path) -> dict[str, str] | None:
    """The versions a run's config.json recorded when it began (none in a new run, or one
    made before they were kept)."""
    try:
        description = json.loads((run_dir / CONFIG_FILE).read_text(encoding="utf-8"))
        versions = description["versions"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(versions, dict):
        return None
    if "nmt" not in versions and "nmt_version" in description:  # kept apart before
        versions = {"nmt": description["nmt_version"], **versions}
    return versions


def save_config(run_dir: Path, config: Config, tokenizer: Tokenizer,
                corpus: dict[str, dict[str, Any]] | None = None) -> None:
    """config.json: the run's settings, vocabulary sizes and the record of the pairs it trains
    and validates on (corpus.corpus_record)."""
    versions = library_versions()
    began = earlier_versions(run_dir)  # a resumed run keeps those it began with
    description = {
        # what shapes the numbers besides the settings: SentencePiece's sampling and
        # sacreBLEU's scores change between versions, for one
        "versions": began or versions,
        **({"resumed_with": versions} if began and began != versions else {}),
        "config": to_dict(config),
        "vocab": {"src": tokenizer.src_vocab_size, "tgt": tokenizer.tgt_vocab_size,
                  "joint": tokenizer.joint},
        **({"corpus": corpus} if corpus else {}),
    }
    atomic_write_text(run_dir / CONFIG_FILE, json.dumps(description, indent=2) + "\n")


def weights_to_save(model: Seq2Seq) -> dict[str, torch.Tensor]:
    """The model's tensors, each in memory of its own, tied ones (the shared embedding and
    output projection) once under their first name, as safetensors' save_model names them.
    On a GPU, cuDNN keeps a GRU's weights as views into one flat buffer, which safetensors
    refuses to save as they stand."""
    state, tied = model.state_dict(), {}
    for name, tensor in state.items():
        tied.setdefault((tensor.data_ptr(), tensor.shape, tensor.stride()), []).append(name)
    return {min(names): state[min(names)].detach().clone() for names in tied.values()}


# Files are made in memory, then written by Python: a full disk is then an OSError (a warning
# in training), where safetensors' and torch's own writers raise errors of other kinds.

def weights_file(weights: dict[str, torch.Tensor]) -> bytes:
    """`weights` as the bytes of a safetensors file."""
    return safetensors.torch.save(weights, metadata={"format": "pt"})


def save_weights(model: Seq2Seq, path: Path) -> None:
    atomic_write_bytes(path, weights_file(weights_to_save(model)))


def save_train_state(path: Path, state: dict[str, Any]) -> None:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    atomic_write_bytes(path, buffer.getbuffer())


def save_training(run_dir: Path, progress: dict[str, Any], model: Seq2Seq, updater: Updater,
                  rng: list[dict[str, Any]], best: bool, extra: dict[str, Any] | None = None
                  ) -> None:
    """Write the latest weights, the best ones too when `best`, then the training state (`rng`:
    each rank's random states; `extra`: more of it). Each file is replaced whole, and the state
    last: after a crash before it, the run resumes from the state before and writes the
    weights again as it goes, so none is left from another step than the state says."""
    save_weights(model, run_dir / LAST_WEIGHTS)
    if best:
        save_weights(model, run_dir / BEST_WEIGHTS)
    save_train_state(run_dir / TRAIN_STATE, {"progress": progress, "model": model.state_dict(),
                                             **updater.state_dict(), "rng": rng, **(extra or {})})


def restore_training(run_dir: Path, state: dict[str, Any], model: Seq2Seq, updater: Updater,
                     progress_type: type, world: World) -> Any:
    """Load a training state into the model, the updater and this rank's random generators,
    and cut the log and the kept weights back to the saved step; returns the saved progress as
    a `progress_type`."""
    try:
        model.load_state_dict(state["model"])
        updater.load_state_dict(state)
        progress = progress_type.from_state(state["progress"])
        restore_rng(rng_of_rank(state["rng"], world.rank), world.device)
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        raise UserError(f"{run_dir / TRAIN_STATE}: does not match this run "
                        f"({type(e).__name__})") from None
    if world.is_main:
        truncate_metrics(run_dir, progress.step)
        for step, path in kept_weights(run_dir):  # kept by a later save that crashed
            if step > progress.step:
                path.unlink()
    return progress


def kept_name(step: int) -> str:
    return f"step-{step:06d}.safetensors"


def kept_weights(run_dir: Path) -> list[tuple[int, Path]]:
    """The weights kept at validations (train.keep_last), as (step, path), oldest first."""
    found = [(KEPT_WEIGHTS.fullmatch(p.name), p) for p in Path(run_dir).glob("step-*.safetensors")]
    return sorted((int(match.group(1)), p) for match, p in found if match)


def unstarted(run_dir: Path) -> bool:
    """Whether `run_dir` holds a run killed before it saved its first training state (its
    config and tokenizer are written first)."""
    return (run_dir / CONFIG_FILE).is_file() and not (run_dir / TRAIN_STATE).exists()


def load_for_resume(run_dir: Path, overrides: dict[str, Any]) -> tuple[Config, dict[str, Any]]:
    """A run's config (with `overrides`, e.g. new limits) and its training state."""
    if unstarted(run_dir):
        raise UserError(f"--resume {run_dir}: the run stopped before its first step was saved, "
                        f"so there is nothing to resume; delete it (rm -r {run_dir}) and train "
                        "it again")
    if not (run_dir / TRAIN_STATE).is_file():
        raise UserError(f"--resume {run_dir}: no {TRAIN_STATE} to resume from")
    config = resume_config(read_config(run_dir)[0], overrides)
    return config, load_train_state(run_dir / TRAIN_STATE)


def remove_partial_writes(run_dir: Path) -> None:
    """Delete temporary files of writes that a crash cut short (see files.atomic_write)."""
    for leftover in run_dir.glob(".*.tmp"):
        leftover.unlink()


STATE_PARTS = ("progress", "model", "rng")  # in every training state (save_training)


def load_train_state(path: Path) -> dict[str, Any]:
    """A training state as save_training wrote it; a one-line error for anything else."""
    try:
        with warnings.catch_warnings():  # torch warns about odd bytes before failing on them
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:  # what weights_only raises on anything but plain data
        reason = "it holds objects other than tensors and plain data; refused"
    except FileNotFoundError:
        reason = "file not found"
    except Exception:  # a damaged file fails in many ways
        reason = "corrupt or truncated"
    else:
        lacking = [part for part in STATE_PARTS if not isinstance(state, dict) or part not in state]
        if not lacking:
            return state
        reason = f"it has no {lacking[0]!r}"
    raise UserError(f"{path}: not a valid training state ({reason})")


@dataclass
class Run:
    """A loaded run directory."""

    path: Path
    config: Config
    tokenizer: Tokenizer
    model: Seq2Seq


def read_config(run_dir: Path) -> tuple[Config, dict[str, Any]]:
    path = run_dir / CONFIG_FILE
    if (run_dir / EXPORT_FILE).is_file():
        raise UserError(f"{run_dir}: a CTranslate2 export, not a run directory; decode it "
                        "with --engine ctranslate2")
    if not path.is_file():
        raise UserError(f"{run_dir}: not a run directory (no {CONFIG_FILE})")
    try:
        description = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise UserError(f"{path}: unreadable run config ({e})") from None
    if not isinstance(description, dict) or not isinstance(description.get("config"), dict):
        raise UserError(f"{path}: expected an object with a \"config\" object")
    vocab = description.get("vocab")
    if not (isinstance(vocab, dict) and all(type(vocab.get(side)) is int and vocab[side] > 0
                                            for side in ("src", "tgt"))
            and isinstance(vocab.get("joint"), bool)):
        raise UserError(f"{path}: \"vocab\" must hold src and tgt sizes and joint")
    try:
        with in_file(path):
            return from_dict(description["config"]), vocab
    except (ValueError, KeyError, TypeError) as e:
        raise UserError(f"{path}: unreadable run config ({e})") from None


def corpus_record(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The record of the pairs a run began with, from its config.json (none in a run made
    before it was kept)."""
    path = run_dir / CONFIG_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8")).get("corpus", {})
    except (OSError, ValueError, AttributeError) as e:
        raise UserError(f"{path}: unreadable run config ({e})") from None
    if not (isinstance(record, dict) and all(
            isinstance(split, dict) and type(split.get("pairs", 0)) is int
            and all(type(value) in (int, str) for value in split.values())
            for split in record.values())):
        raise UserError(f"{path}: \"corpus\" must hold a record of numbers and digests for "
                        "each split")
    return record


def check_run_dir(run_dir: Path) -> None:
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: " + ("a file, not a run directory" if run_dir.exists()
                                          else "no such run directory"))


def load_run(run_dir: Path, device: torch.device, weights: str = BEST_WEIGHTS) -> Run:
    """Rebuild tokenizer and model from a run directory alone."""
    run_dir = Path(run_dir)
    check_run_dir(run_dir)
    config, vocab = read_config(run_dir)
    tokenizer = Tokenizer.load(run_dir)
    if (tokenizer.src_vocab_size, tokenizer.tgt_vocab_size) != (vocab["src"], vocab["tgt"]):
        raise UserError(f"{run_dir}: tokenizer does not match {CONFIG_FILE}")
    model = build_model(config.model, vocab["src"], vocab["tgt"], vocab["joint"])
    load_weights(model, run_dir / weights)
    return Run(run_dir, config, tokenizer, model.to(device).eval())


def load_weights(model: Seq2Seq, path: Path) -> None:
    if not path.is_file():
        raise UserError(f"{path}: weights file not found")
    try:
        load_model(model, path, strict=True)
    except (SafetensorError, OSError, RuntimeError, ValueError) as e:
        # torch's first line only names the model ("Error(s) in loading state_dict for
        # ...:"); the next says which tensors
        lines = [line.strip() for line in str(e).strip().splitlines()[:2]]
        reason = " ".join(lines)[:300] if lines else type(e).__name__
        raise UserError(f"{path}: weights do not load into this model ({reason})") from None


def latest_run(runs_dir: Path = Path(RUNS_DIR), named: str = "pass --run DIR") -> Path:
    """The most recently trained run under `runs_dir` (by the time of its best weights);
    `named`: how the command takes one instead ("name RUN" where it is an argument)."""
    runs = [p.parent for p in Path(runs_dir).glob(f"*/{BEST_WEIGHTS}")]
    if not runs:
        raise UserError(f"no trained run under {runs_dir}/; train one with `nmt train` "
                        f"or {named}")
    return max(runs, key=lambda p: (p / BEST_WEIGHTS).stat().st_mtime)


def append_metrics(run_dir: Path, record: dict[str, Any]) -> None:
    with open(run_dir / METRICS_FILE, "a", encoding="utf-8") as f:
        f.write(json_text(record) + "\n")


def truncate_metrics(run_dir: Path, step: int) -> None:
    """Drop log records after `step` (and a line cut short by a crash) before resuming.

    Records are appended before the checkpoint they belong to is saved, so the log of a
    resumed run reads exactly like that of a run that was never stopped."""
    path = run_dir / METRICS_FILE
    if not path.is_file():
        return
    kept = [line + "\n" for line, record in metrics_records(path) if record.get("step", 0) <= step]
    atomic_write_text(path, "".join(kept))


TEXT_FIELDS = ("kind", "reason")  # the fields of a metrics record that are not numbers


def metrics_records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Each whole record of a metrics.jsonl file, with its line, a null number (a skipped
    step's loss) read as NaN; a line cut short by a crash is passed over. A record unlike
    those training writes (a number or null in each field, a whole number in "step", text in
    TEXT_FIELDS) is a one-line error naming its line: the file was damaged or edited."""
    records = []
    for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
            record = json.loads(line)
        except ValueError:  # UnicodeDecodeError is one
            continue
        if isinstance(record, dict):
            for key, value in record.items():
                if not as_written(key, value):
                    raise UserError(f"{path}:{number}: {key!r} is {json.dumps(value)[:40]}, "
                                    "not what training writes there")
            records.append((line, {key: math.nan if value is None else value
                                   for key, value in record.items()}))
    return records


def as_written(key: str, value: Any) -> bool:
    """Whether a metrics record's field holds what training writes there."""
    if key in TEXT_FIELDS:
        return isinstance(value, str)
    if key == "step":
        return type(value) is int
    return value is None or isinstance(value, int | float)
