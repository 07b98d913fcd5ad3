"""Decoding speed of nmt and JoeyNMT 2.3.0 at equal work, side by side, in one run.

Both sides decode test_2016_flickr (Multi30k, English source) with models of the reference
sizes of ../shared/bench (Transformer 7.6M parameters, GRU+Bahdanau 4M), 64 sentences a batch,
2 threads, greedy and beam 5, with every sentence forced to exactly 20 decoder steps (minimum
output length = maximum output length), so both run the same number of decoder steps whatever
their weights. The weights are untrained: the work does not depend on them.

Each figure is sentences per second of a whole `translate` command (start-up and model loading
included), and of the decoding alone (the time of the same command on one sentence subtracted).

    python bench/decode.py [--quick] [--no-joeynmt] [--json FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import MULTI30K, OUT, ROOT, SHARED, ensure_joeynmt, prepare_joeynmt_data  # noqa: E402

STEPS = 20
FAMILIES = {"transformer": ({}, "joeynmt-transformer.yaml"),
            "gru-bahdanau": ({"model.arch": "gru", "model.attention": "additive"},
                             "joeynmt-gru.yaml")}
ENV = {**os.environ, "OMP_NUM_THREADS": "2"}


def timed(command: list[str], stdin_path: Path) -> float:
    with open(stdin_path) as source:
        start = time.perf_counter()
        result = subprocess.run(command, stdin=source, capture_output=True, text=True, env=ENV,
                                cwd=ROOT)
        seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed:\n{result.stderr[-2000:]}")
    return seconds


def measure(command_for, inputs: dict[str, Path], count: int) -> dict:
    """Sentences/s end to end and with the one-sentence start-up time subtracted."""
    result = {}
    for name, beam in (("greedy", 1), ("beam5", 5)):
        whole = timed(command_for(beam), inputs["all"])
        startup = timed(command_for(beam), inputs["one"])
        alone = whole - startup  # too small a difference to tell from noise: None
        result[name] = {"seconds": round(whole, 2), "startup_seconds": round(startup, 2),
                        "end_to_end": count / whole,
                        "decoding": count / alone if alone > 0.2 * whole else None}
    return result


def nmt_run(family: str, overrides: dict) -> Path:
    """A run directory with untrained weights of the reference size (tokenizer trained)."""
    from nmt_cli.config import Config, apply_overrides
    from nmt_cli.training import Trainer, prepare_run_dir

    run_dir = OUT / "decode" / f"nmt-{family}"
    if not (run_dir / "model.safetensors").exists():
        config = apply_overrides(Config(), {"data.data_dir": str(MULTI30K), **overrides})
        Trainer(config, prepare_run_dir(run_dir), lambda event: None).save(best=True)
    return run_dir


def nmt_command(run_dir: Path):
    return lambda beam: [sys.executable, "-m", "nmt_cli", "translate", "--run", str(run_dir),
                         "--device", "cpu", "--beam", str(beam), "--batch-size", "64",
                         "--min-len", str(STEPS), "--max-len-a", "0", "--max-len-b", str(STEPS)]


def joeynmt_command(python: Path, files: dict[str, Path], config_name: str):
    """JoeyNMT's `translate` on an untrained checkpoint built from its own config."""
    model_dir = OUT / "decode" / config_name.removesuffix(".yaml")  # e.g. joeynmt-gru
    model_dir.mkdir(parents=True, exist_ok=True)
    text = (SHARED / "bench" / config_name).read_text()
    text = (text.replace("@DATA@", str(files["data"])).replace("@SPM_MODEL@", str(files["model"]))
            .replace("@SPM_VOCAB@", str(files["vocab"])).replace("@OUT@", str(model_dir)))
    text = re.sub(r"max_output_length: \d+",
                  f"max_output_length: {STEPS}\n    min_output_length: {STEPS}", text)
    configs = {}
    for beam in (1, 5):
        configs[beam] = model_dir / f"beam{beam}.yaml"
        configs[beam].write_text(re.sub(r"beam_size: \d+", f"beam_size: {beam}", text))
    if not (model_dir / "best.ckpt").exists():
        script = (
            "import sys, torch; from pathlib import Path\n"
            "from joeynmt.config import load_config, parse_global_args\n"
            "from joeynmt.data import load_data\nfrom joeynmt.model import build_model\n"
            "args = parse_global_args(load_config(Path(sys.argv[1])), rank=0, mode='translate')\n"
            "src, trg, *_ = load_data(cfg=args.data, datasets=['stream'])\n"
            "model = build_model(args.model, src_vocab=src, trg_vocab=trg)\n"
            "torch.save({'model_state': model.state_dict()}, sys.argv[2])\n")
        subprocess.run([str(python), "-c", script, str(configs[1]), str(model_dir / "best.ckpt")],
                       check=True, env=ENV, capture_output=True)
    launcher = str(SHARED / "bench" / "run_joeynmt.py")
    return lambda beam: [str(python), launcher, "translate", str(configs[beam])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first 300 sentences only")
    parser.add_argument("--no-joeynmt", action="store_true")
    parser.add_argument("--json", type=Path, default=OUT / "decode.json")
    args = parser.parse_args()
    if not (MULTI30K / "test_2016_flickr.en.gz").exists():
        raise SystemExit(f"needs the Multi30k mirror at {MULTI30K}")
    sources = gzip.decompress((MULTI30K / "test_2016_flickr.en.gz").read_bytes()).decode()
    lines = sources.splitlines()[: 300 if args.quick else None]
    (OUT / "decode").mkdir(parents=True, exist_ok=True)
    inputs = {"all": OUT / "decode" / "input.en", "one": OUT / "decode" / "one.en"}
    inputs["all"].write_text("\n".join(lines) + "\n")
    inputs["one"].write_text(lines[0] + "\n")
    results: dict[str, dict] = {}
    if not args.no_joeynmt:
        python = ensure_joeynmt()
        files = prepare_joeynmt_data(python)
    for family, (overrides, joey_config) in FAMILIES.items():
        results[f"nmt {family}"] = measure(nmt_command(nmt_run(family, overrides)), inputs,
                                           len(lines))
        if not args.no_joeynmt:
            results[f"joeynmt {family}"] = measure(
                joeynmt_command(python, files, joey_config), inputs, len(lines))
        for name in (f"nmt {family}", f"joeynmt {family}"):
            if name in results:
                print(name, json.dumps(results[name]), file=sys.stderr)
    print_table(results, len(lines))
    args.json.write_text(json.dumps(results, indent=2) + "\n")


def print_table(results: dict[str, dict], count: int) -> None:
    print(f"\n{count} sentences, {STEPS} decoder steps each; sentences/s end to end "
          "(decoding alone)\n")
    print("| run | greedy | vs JoeyNMT | beam 5 | vs JoeyNMT |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in results.items():
        base = results.get("joeynmt " + name.split(" ", 1)[1])
        cells = []
        for search in ("greedy", "beam5"):
            mine, theirs = r[search], base[search] if base else None
            alone = (f"{mine['decoding'] / theirs['decoding']:.2f}x"
                     if theirs and mine["decoding"] and theirs["decoding"] else "-")
            ratio = f"{mine['end_to_end'] / theirs['end_to_end']:.2f}x ({alone})" if base else "-"
            decoding = f"{mine['decoding']:.1f}" if mine["decoding"] else "-"
            cells += [f"{mine['end_to_end']:.1f} ({decoding})", ratio]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
