"""Training throughput of nmt and JoeyNMT 2.3.0 on Multi30k, side by side, in one run.

Both sides use the reference settings of ../shared/bench/README.md (model sizes, joint
SentencePiece unigram 8,000, batches of 4,096 padded slots, 2 threads, CPU). nmt is measured
twice: with its own length-sorted batches, and with JoeyNMT-style batches (random order,
filled until sentences x (longest side + 1) reaches the budget), so that the gain from less
padding and the gain from faster compute can be told apart. Throughput is target tokens
(non-pad, <eos> included) per second; memory is the peak resident set (VmHWM).

    python bench/speed.py [--quick] [--no-joeynmt] [--json FILE]

JoeyNMT is installed on first use into bench/out/joeynmt-venv (torch 2.13.0 CPU, joeynmt 2.3.0,
importlib_metadata, sentencepiece 0.2.0), as ../shared/bench/README.md describes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
MULTI30K = SHARED / "data" / "multi30k"
OUT = ROOT / "bench" / "out"
JOEY_VENV = OUT / "joeynmt-venv"

# nmt settings matching the reference configs (Config() defaults are the reference Transformer).
NMT_SETTINGS = {
    "transformer": {},
    "transformer-bf16": {"train.precision": "bf16"},
    "gru-bahdanau": {"model.arch": "gru", "model.attention": "additive",
                     "train.schedule": "constant"},
    "gru-luong": {"model.arch": "gru", "model.attention": "dot", "train.schedule": "constant"},
}
JOEY_CONFIGS = {"transformer": "joeynmt-transformer.yaml", "gru-bahdanau": "joeynmt-gru.yaml"}


def peak_rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def joeynmt_style_batches(src_lens, tgt_lens, budget, seed):
    """JoeyNMT's composition: sentences in random order, each batch filled to the budget."""
    import random

    from nmt_cli.data import group_by_budget

    order = list(range(len(src_lens)))
    random.Random(seed).shuffle(order)
    return group_by_budget(order, src_lens, tgt_lens, budget)


def nmt_worker(name: str, steps: int, batching: str) -> dict:
    """Train `steps` steps (after 3 warm-up steps) and report throughput and memory."""
    import torch

    from nmt_cli.config import Config, apply_overrides
    from nmt_cli.training import Trainer, prepare_run_dir

    torch.set_num_threads(2)
    config = apply_overrides(Config(), {"data.data_dir": str(MULTI30K), **NMT_SETTINGS[name]})
    run_dir = prepare_run_dir(Path(tempfile.mkdtemp()) / "run")
    trainer = Trainer(config, run_dir, lambda event: None)
    if batching == "joeynmt":
        batches = joeynmt_style_batches([len(s) for s in trainer.train_data.src],
                                        [len(t) for t in trainer.train_data.tgt],
                                        config.train.batch_tokens, seed=1)
    else:
        batches = trainer.epoch_batches(0)
    for indices in batches[:3]:
        trainer.train_step([indices])
    tokens, started = 0, time.perf_counter()
    for indices in batches[3 : 3 + steps]:
        tokens += trainer.train_step([indices])[1]
    seconds = time.perf_counter() - started
    padded = sum(len(b) * (max(max(len(trainer.train_data.src[i]), len(trainer.train_data.tgt[i]))
                                for i in b) + 1) for b in batches)
    real = sum(len(trainer.train_data.tgt[i]) + 1 for b in batches for i in b)
    return {"tokens_per_s": tokens / seconds, "seconds_per_step": seconds / steps,
            "tgt_tokens_per_batch": real / len(batches), "padding_efficiency": real / padded,
            "peak_rss_mb": peak_rss_mb()}


def run_nmt(name: str, steps: int, batching: str) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    result = subprocess.run([sys.executable, __file__, "--worker", name, "--steps", str(steps),
                             "--batching", batching], capture_output=True, text=True, env=env,
                            cwd=ROOT)
    if result.returncode != 0:
        raise SystemExit(f"nmt worker {name} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def ensure_joeynmt() -> Path:
    python = JOEY_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(JOEY_VENV)], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "torch==2.13.0"], check=True)
        subprocess.run([*pip, "joeynmt==2.3.0", "importlib_metadata", "sentencepiece==0.2.0"],
                       check=True)
    return python


def prepare_joeynmt_data(python: Path) -> dict[str, Path]:
    """Plain-text corpus and JoeyNMT's SentencePiece model (unk 0, pad 1, bos 2, eos 3)."""
    data = OUT / "joeynmt-data"
    data.mkdir(parents=True, exist_ok=True)
    for split in ("train", "val", "test_2016_flickr"):
        for lang in ("en", "de"):
            target = data / f"{split}.{lang}"
            if not target.exists():
                target.write_bytes(gzip.decompress((MULTI30K / f"{split}.{lang}.gz").read_bytes()))
    model = data / "spm.model"
    if not model.exists():
        script = (
            "import sentencepiece as spm, sys; d = sys.argv[1]; "
            "spm.SentencePieceTrainer.train(input=f'{d}/train.en,{d}/train.de', "
            "model_prefix=f'{d}/spm', vocab_size=8000, model_type='unigram', "
            "character_coverage=1.0, unk_id=0, pad_id=1, bos_id=2, eos_id=3, minloglevel=2)")
        subprocess.run([str(python), "-c", script, str(data)], check=True)
        pieces = [line.split("\t")[0] for line in
                  (data / "spm.vocab").read_text(encoding="utf-8").splitlines()]
        (data / "vocab.txt").write_text("\n".join(pieces) + "\n", encoding="utf-8")
    return {"data": data, "model": model, "vocab": data / "vocab.txt"}


def run_joeynmt(name: str, seconds: int, python: Path, files: dict[str, Path]) -> dict:
    """Train JoeyNMT for `seconds`, then stop it with SIGINT; median of its logged windows."""
    out = Path(tempfile.mkdtemp()) / "model"
    text = (SHARED / "bench" / JOEY_CONFIGS[name]).read_text()
    text = (text.replace("@DATA@", str(files["data"])).replace("@SPM_MODEL@", str(files["model"]))
            .replace("@SPM_VOCAB@", str(files["vocab"])).replace("@OUT@", str(out)))
    text = re.sub(r"validation_freq: \d+", "validation_freq: 100000", text)  # speed only
    text = re.sub(r"logging_freq: \d+", "logging_freq: 10", text)
    config = out.parent / "config.yaml"
    config.write_text(text)
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    command = [str(python), str(SHARED / "bench" / "run_joeynmt.py"), "train", str(config)]
    log = out.parent / "log.txt"
    with open(log, "w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
        started, peak, stopping = time.monotonic(), 0.0, False
        while process.poll() is None:
            try:
                peak = max(peak, peak_rss_mb(process.pid))
            except OSError:
                pass
            if not stopping and time.monotonic() - started > seconds:
                process.send_signal(signal.SIGINT)  # JoeyNMT saves and ends
                stopping = True
            time.sleep(0.5)
    windows = [float(v) for v in re.findall(r"Tokens per Sec:\s*([\d.]+)", log.read_text())]
    if len(windows) < 2:
        raise SystemExit(f"JoeyNMT {name}: too few logged windows; see {log}")
    return {"tokens_per_s": statistics.median(windows[1:]), "windows": len(windows),
            "peak_rss_mb": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps, shorter JoeyNMT runs")
    parser.add_argument("--no-joeynmt", action="store_true")
    parser.add_argument("--json", type=Path, default=OUT / "speed.json")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--batching", default="nmt", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(nmt_worker(args.worker, args.steps, args.batching)))
        return
    if not (MULTI30K / "train.en.gz").exists():
        raise SystemExit(f"needs the Multi30k mirror at {MULTI30K}")
    steps, seconds = (15, 150) if args.quick else (40, 360)
    results: dict[str, dict] = {}
    for name in NMT_SETTINGS:
        for batching in ("nmt", "joeynmt"):
            results[f"nmt {name} ({batching} batches)"] = run_nmt(name, steps, batching)
            print(f"nmt {name} ({batching} batches): "
                  f"{results[f'nmt {name} ({batching} batches)']['tokens_per_s']:,.0f} tok/s",
                  file=sys.stderr)
    if not args.no_joeynmt:
        python = ensure_joeynmt()
        files = prepare_joeynmt_data(python)
        for name in JOEY_CONFIGS:
            results[f"joeynmt {name}"] = run_joeynmt(name, seconds, python, files)
    print_table(results)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")


def print_table(results: dict[str, dict]) -> None:
    baselines = {"transformer": results.get("joeynmt transformer"),
                 "gru": results.get("joeynmt gru-bahdanau")}
    print("| run | target tok/s | vs JoeyNMT | peak RSS | vs JoeyNMT |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in results.items():
        base = baselines["gru" if "gru" in name else "transformer"]
        speed = f"{r['tokens_per_s'] / base['tokens_per_s']:.2f}x" if base else "-"
        memory = f"{r['peak_rss_mb'] / base['peak_rss_mb']:.2f}x" if base else "-"
        print(f"| {name} | {r['tokens_per_s']:,.0f} | {speed} | {r['peak_rss_mb']:,.0f} MB "
              f"| {memory} |")


if __name__ == "__main__":
    main()
