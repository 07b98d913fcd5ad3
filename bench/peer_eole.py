"""Training throughput and memory of eole 0.6.4 (the maintained successor of OpenNMT-py) on
Multi30k, and the pieces that train and decode with it, as a peer of nmt beside JoeyNMT.

eole trains the reference Transformer of bench/peers/README.md from
bench/peers/eole-transformer.yaml, with its own token batching (batches of 4,096 in its sense,
cut from buckets of 32,768 sentence pairs sorted by length), 2 threads, CPU. Throughput is
target tokens (non-pad, </s> included) per second, as bench.speed counts them: eole logs
"SRC/TGT tok/s" every `report_every` steps (every step here), TGT being that figure over the
window since the previous line. Each window counts for its length on the clock (the time
between the lines), so the figure is target tokens over time, the first three steps left out
(the first holds reading and tokenizing the corpus), as nmt and MarianMT are measured.
Memory is the peak resident set of the training process, sampled twice a second.

    python -m bench.peer_eole [--seconds N] [--precision fp32|bf16] [--data DIR]

prints one markdown table row: | run | target tok/s | peak RSS | windows |.

eole is installed on first use into bench/out/eole-venv (torch 2.13.0 CPU, then eole 0.6.4 and
aiohttp), as bench/peers/README.md describes (section "eole 0.6.4").
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from string import Template

from .common import (
    OUT,
    PEERS,
    add_data_option,
    ensure_venv,
    logged_rate,
    multi30k_dir,
    new_parser,
    prepare_joeynmt_data,
    set_yaml_entry,
    two_threads_env,
    watch_peak_rss,
)

EOLE_VENV = OUT / "eole-venv"
EOLE_CONFIG = PEERS / "eole-transformer.yaml"
EOLE_INSTALL = (
    # first and alone: the CPU build on disk (eole asks for torch >=2.10,<2.15, so pip keeps it)
    ["torch==2.13.0"],
    # eole's command line imports every one of its tools at start, and one of them imports
    # aiohttp, which eole does not declare; any version serves
    ["eole==0.6.4", "aiohttp"],
)
# The pieces at the head of the vocabulary, in SentencePiece's id order; the config names
# "<pad>" as eole's pad token, so that eole's ids are SentencePiece's.
SPECIALS = ["<unk>", "<pad>", "<s>", "</s>"]
# "[2026-12-01 02:50:01,123 INFO] Step 15/1000000; ... 3010/3243 tok/s; ...": the time of
# the line, non-pad source / non-pad target tokens per second
WINDOW = re.compile(r"\[(\S+ \S+) INFO\] Step\s+\d+\S*;.*?([\d.]+)/\s*([\d.]+) tok/s")
# Steps left out of a speed measurement: the first holds reading and tokenizing the corpus;
# nmt and MarianMT leave out as many warm-up steps.
WARMUP_STEPS = 3
# Speed runs: no validation, no periodic checkpoint, and a log line every step. An eole step
# holds about 3,300 target tokens (nearly twice a JoeyNMT step), so one step is already a
# window of seconds, and short budgets still yield enough windows.
SPEED_CHANGES = {"report_every": 1, "training.valid_steps": 1000000,
                 "training.save_checkpoint_steps": 0}


def ensure_eole() -> Path:
    """The Python of bench/out/eole-venv, made with eole 0.6.4 on first use."""
    return ensure_venv(EOLE_VENV, EOLE_INSTALL)


def prepare_eole_data(python: Path, corpus: Path) -> dict[str, Path]:
    """eole's inputs: the plain corpus files, the joint SentencePiece model and its vocabulary
    (one piece a line, in id order), shared with JoeyNMT under bench/out/joeynmt-data. eole reads
    the vocabulary as it is; the check below is what keeps its ids equal to SentencePiece's."""
    files = prepare_joeynmt_data(python, corpus)
    head = files["vocab"].read_text(encoding="utf-8").splitlines()[:len(SPECIALS)]
    if head != SPECIALS:
        raise SystemExit(f"{files['vocab']} starts with {head}, not {SPECIALS}: remove "
                         f"{files['data']} and run again")
    return files


def setup_eole(corpus: Path) -> tuple[Path, dict[str, Path]]:
    """eole's Python and its prepared inputs (see ensure_eole, prepare_eole_data)."""
    python = ensure_eole()
    return python, prepare_eole_data(python, corpus)


def set_entry(text: str, dotted: str, value: object) -> str:
    """`section.key: value` or a top-level `key: value` in an eole config, replaced or added."""
    if "." in dotted:
        return set_yaml_entry(text, dotted, value)
    entry, pattern = f"{dotted}: {value}", re.compile(rf"^{dotted}:.*$", re.MULTILINE)
    return pattern.sub(entry, text) if pattern.search(text) else f"{entry}\n{text}"


def eole_config(files: dict[str, Path], model_dir: Path,
                changes: dict[str, object] | None = None) -> str:
    """The text of bench/peers/eole-transformer.yaml filled in, with `changes` such as
    {"training.valid_steps": 1000000} or {"report_every": 5} applied."""
    text = Template(EOLE_CONFIG.read_text()).substitute(
        DATA=files["data"], SPM_MODEL=files["model"], VOCAB=files["vocab"], MODEL_DIR=model_dir)
    for dotted, value in (changes or {}).items():
        text = set_entry(text, dotted, value)
    return text


def eole_command(python: Path, *arguments: str) -> list[str]:
    """An eole command (train, predict) through bench/peers/run_eole.py."""
    return [str(python), str(PEERS / "run_eole.py"), *arguments]


def run_training(python: Path, config: str, seconds: float, workdir: Path) -> tuple[str, float]:
    """Train from the config text for `seconds`, then stop with SIGINT (run_eole.py lets the
    step finish and eole save); its log and the peak resident memory in MB."""
    config_file, log = workdir / "config.yaml", workdir / "log.txt"
    config_file.write_text(config)
    with open(log, "w") as sink:
        process = subprocess.Popen(eole_command(python, "train", "--config", str(config_file)),
                                   stdout=sink, stderr=subprocess.STDOUT, env=two_threads_env())
        peak = watch_peak_rss(process, 0.5, stop_after=seconds)
    text = log.read_text(encoding="utf-8", errors="replace")
    if process.returncode != 0:
        raise SystemExit(f"eole train failed ({process.returncode}); see {log}:\n{text[-2000:]}")
    return text, peak


def train_speed(seconds: float, precision: str = "fp32", corpus: Path | None = None) -> dict:
    """Train the reference Transformer with validation off for `seconds`; target tokens/s (over
    eole's logged windows after the first three), peak RSS, and the number of windows.
    bf16 is eole's mixed precision: on CPU, torch.autocast in bfloat16 over float32 weights."""
    python, files = setup_eole(multi30k_dir(corpus))
    print(f"eole transformer ({precision}): training for {seconds:g} s", file=sys.stderr,
          flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="eole-speed-"))
    changes = {**SPEED_CHANGES, "training.compute_dtype": precision}
    log, peak = run_training(python, eole_config(files, workdir / "model", changes), seconds,
                             workdir)
    shutil.rmtree(workdir / "model", ignore_errors=True)  # the checkpoint of the stop; keep the log
    windows = [(stamp, float(target)) for stamp, _source, target in WINDOW.findall(log)]
    if len(windows) <= WARMUP_STEPS:
        raise SystemExit(f"eole {precision}: too few logged windows; see {workdir / 'log.txt'}")
    return {"tokens_per_s": logged_rate(windows, WARMUP_STEPS), "peak_rss_mb": peak,
            "windows": len(windows)}


def train_for(seconds: float, model_dir: Path, corpus: Path | None = None,
              precision: str = "fp32") -> Path:
    """Train with the template's settings (validation loss and a checkpoint every 80 steps)
    in `precision` for `seconds` of wall-clock time; eole's last checkpoint, which it writes on
    the way out and links from `model_dir` itself (its step_N folders hold the earlier ones)."""
    python, files = setup_eole(multi30k_dir(corpus))
    print(f"eole transformer: training for {seconds:g} s into {model_dir}", file=sys.stderr,
          flush=True)
    model_dir = model_dir.resolve()
    model_dir.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="eole-train-"))
    config = eole_config(files, model_dir, {"training.compute_dtype": precision})
    run_training(python, config, seconds, workdir)
    if not (model_dir / "config.json").exists():
        raise SystemExit(f"eole left no checkpoint in {model_dir}; see {workdir / 'log.txt'}")
    return model_dir


def translate(python: Path, model: Path, sources: Path, beam: int = 5) -> list[str]:
    """Detokenized translations of a file of raw sentences, one a line: eole predict with the
    model's own SentencePiece transform, 64 sentences a batch, beam `beam` (1: greedy), GNMT
    length penalty with alpha 1.0 (eole's default is "avg", log P / length), at most 100
    pieces, float32."""
    with tempfile.TemporaryDirectory(prefix="eole-predict-") as tmp:
        output = Path(tmp) / "hypotheses.txt"
        command = eole_command(
            python, "predict", "--model_path", str(model), "--src", str(sources),
            "--output", str(output), "--beam_size", str(beam), "--batch_type", "sents",
            "--batch_size", "64", "--length_penalty", "wu", "--alpha", "1.0",
            "--max_length", "100", "--compute_dtype", "fp32")
        result = subprocess.run(command, capture_output=True, text=True, env=two_threads_env())
        if result.returncode != 0:
            raise SystemExit(f"eole predict failed:\n{result.stderr[-2000:]}")
        return output.read_text(encoding="utf-8").splitlines()


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--seconds", type=float, default=360,
                        help="training time, startup included (default: 360, as bench.speed)")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    add_data_option(parser)
    args = parser.parse_args()
    result = train_speed(args.seconds, args.precision, multi30k_dir(args.data))
    print(f"| eole 0.6.4 transformer ({args.precision}) | {result['tokens_per_s']:,.0f} "
          f"| {result['peak_rss_mb']:,.0f} MB | {result['windows']} |")


if __name__ == "__main__":
    main()
