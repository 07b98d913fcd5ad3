"""Training throughput of Hugging Face MarianMT on Multi30k, a peer beside JoeyNMT 2.3.0.

A randomly initialised MarianMTModel at the reference settings of bench/peers/README.md is
trained from scratch by bench/peers/run_marian.py in its own virtual environment, 2 threads,
CPU. Two batchings: "hf", what a Hugging Face user gets by default (64 shuffled sentences a
batch, padded to the longest), and "tokens", nmt's composition (length-sorted batches of about
4,096 padded slots, in random order). Throughput is target tokens (non-pad labels, <eos>
included) per second over the run, after 3 warm-up steps; memory is the peak resident set
(VmHWM) of the training process.

    python -m bench.peer_marian [--seconds N] [--precision fp32|bf16] [--batching hf|tokens]
                                [--data DIR]

prints one row for bench.speed's table (run, target tok/s, -, peak RSS, -). The library side,
`train_for` and `translate`, trains a model for a time budget and decodes with beam search.

MarianMT is installed on first use into bench/out/marian-venv (torch 2.13.0 CPU, transformers
5.23.0, sentencepiece 0.2.3); bench/peers/marian.md says what it is and how it differs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import (
    OUT,
    PEERS,
    add_data_option,
    ensure_venv,
    multi30k_dir,
    new_parser,
    prepare_joeynmt_data,
    two_threads_env,
    watch_peak_rss,
)

MARIAN_VENV = OUT / "marian-venv"
MARIAN_SCRIPT = PEERS / "run_marian.py"
# In this order: a plain `torch` would bring a multi-GB CUDA build, so the CPU 2.13.0 comes
# first and transformers finds it. transformers 5.23.0 (the newest release when this was
# written) and sentencepiece 0.2.3 (nmt's own) install cleanly beside torch 2.13.0 and were
# checked end to end: training in fp32 and bf16, save_pretrained, from_pretrained, generate.
MARIAN_INSTALL = (["torch==2.13.0"], ["transformers==5.23.0", "sentencepiece==0.2.3"])


def ensure_marian() -> Path:
    """The Python of bench/out/marian-venv, made with transformers on first use."""
    return ensure_venv(MARIAN_VENV, MARIAN_INSTALL)


def prepare_marian_data(corpus: Path) -> dict[str, Path]:
    """Marian's inputs: JoeyNMT's (bench/out/joeynmt-data), the plain corpus and the joint
    SentencePiece model, so that both peers and nmt cut the text into the same pieces.
    run_marian.py reads pad and eos from the model itself (pad 1, eos 3; bos goes unused)."""
    files = prepare_joeynmt_data(ensure_marian(), corpus)
    return {"data": files["data"], "model": files["model"]}


def marian_command(*arguments: str | Path) -> list[str]:
    """A run_marian.py command (speed, train, translate) in Marian's environment."""
    return [str(ensure_marian()), str(MARIAN_SCRIPT), *map(str, arguments)]


def run_logged(command: list[str], log: Path) -> tuple[str, float]:
    """Run `command` with 2 threads, stderr into `log`; its stdout and peak RSS in MB."""
    with open(log, "w") as errors, tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(command, stdout=output, stderr=errors,
                                   env=two_threads_env())
        peak = watch_peak_rss(process, 0.5)
        output.seek(0)
        text = output.read()
    if process.returncode != 0:
        tail = log.read_text()[-2000:]
        raise SystemExit(f"MarianMT: {' '.join(command[1:3])} failed (see {log}):\n{tail}")
    return text, peak


def train_speed(seconds: float, precision: str = "fp32", batching: str = "tokens",
                corpus: Path | None = None) -> dict:
    """Train for `seconds` (after warm-up) and return tokens_per_s, steps and peak_rss_mb."""
    files = prepare_marian_data(multi30k_dir(corpus))
    print(f"marian ({batching} batches, {precision}): training for {seconds:g} s",
          file=sys.stderr, flush=True)
    log = Path(tempfile.mkdtemp()) / "speed.log"
    text, peak = run_logged(marian_command(
        "speed", "--data", files["data"], "--spm", files["model"], "--seconds", seconds,
        "--precision", precision, "--batching", batching), log)
    return {**json.loads(text.strip().splitlines()[-1]), "peak_rss_mb": peak}


def train_for(seconds: float, model_dir: Path, precision: str = "fp32",
              corpus: Path | None = None) -> Path:
    """Train MarianMT for `seconds` of wall-clock time (token batches, validation on val loss
    every 100 steps and once more when time is up) and save the best model into `model_dir`,
    with the SentencePiece model, train_log.json and the process's stderr (train.log)."""
    files = prepare_marian_data(multi30k_dir(corpus))
    model_dir.mkdir(parents=True, exist_ok=True)
    print(f"marian: training for {seconds:g} s into {model_dir}", file=sys.stderr, flush=True)
    run_logged(marian_command(
        "train", "--data", files["data"], "--spm", files["model"], "--seconds", seconds,
        "--precision", precision, "--out", model_dir), model_dir / "train.log")
    return model_dir


def translate(model_dir: Path, sources: Path, beam: int = 5) -> list[str]:
    """The detokenized translations of the lines of `sources` (beam search, 64 a batch)."""
    log = Path(tempfile.mkdtemp()) / "translate.log"
    text, _ = run_logged(marian_command("translate", model_dir, sources, "--beam", beam), log)
    return text.splitlines()


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--seconds", type=float, default=150,
                        help="timed training after the warm-up steps (default 150)")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--batching", choices=("hf", "tokens"), default="tokens")
    add_data_option(parser)
    args = parser.parse_args()
    result = train_speed(args.seconds, args.precision, args.batching, args.data)
    print(f"{result['steps']} steps, {result['tokens_per_step']:,.0f} target tokens a step",
          file=sys.stderr)
    print(f"| marian ({args.batching} batches, {args.precision}) | "
          f"{result['tokens_per_s']:,.0f} | - | {result['peak_rss_mb']:,.0f} MB | - |")


if __name__ == "__main__":
    main()
