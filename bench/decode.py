"""Decoding speed of nmt and JoeyNMT 2.3.0 at equal work, side by side, in one run.

Both sides decode test_2016_flickr (Multi30k, English source) with models of the reference
sizes of bench/peers/README.md (Transformer 7.6M parameters, GRU+Bahdanau 4M), 64 sentences a
batch, 2 threads, greedy and beam 5, with every sentence forced to exactly 20 decoder steps
(minimum output length = maximum output length), so both run the same number of decoder steps
whatever their weights. The weights are untrained: the work does not depend on them.

Each figure is sentences per second of a whole `translate` command (start-up and model loading
included), and of the decoding alone (the time of the same command on one sentence subtracted).
Where CTranslate2 is installed (the ct2 extra), the row "nmt-ct2 transformer" is nmt's
Transformer exported to it (`nmt export`) and run by `nmt translate --engine ctranslate2`.

    python -m bench.decode [--quick] [--no-joeynmt] [--data DIR] [--json FILE]
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

from .common import (
    JOEYNMT_CONFIGS,
    NMT_REFERENCE,
    OUT,
    ROOT,
    add_data_option,
    joeynmt_command,
    joeynmt_config,
    multi30k_dir,
    new_parser,
    setup_joeynmt,
    two_threads_env,
)

STEPS = 20


def timed(command: list[str], stdin_path: Path) -> float:
    with open(stdin_path) as source:
        start = time.perf_counter()
        result = subprocess.run(command, stdin=source, capture_output=True, text=True,
                                env=two_threads_env(), cwd=ROOT)
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


def nmt_run(family: str, corpus: Path) -> Path:
    """A run directory with untrained weights of the reference size (tokenizer trained)."""
    from nmt_cli.config import Config, apply_overrides
    from nmt_cli.training import Trainer, prepare_run_dir

    run_dir = OUT / "decode" / f"nmt-{family}"
    if not (run_dir / "model.safetensors").exists():
        config = apply_overrides(Config(), {"data.data_dir": str(corpus),
                                            **NMT_REFERENCE[family]})
        Trainer(config, prepare_run_dir(run_dir), lambda event: None).save(best=True)
    return run_dir


def nmt_command(run_dir: Path, engine: str = "torch"):
    return lambda beam: [sys.executable, "-m", "nmt_cli", "translate", "--run", str(run_dir),
                         "--engine", engine, "--device", "cpu", "--beam", str(beam),
                         "--alpha", "1.0", "--batch-size", "64", "--min-len", str(STEPS),
                         "--max-len-a", "0", "--max-len-b", str(STEPS)]


def ctranslate2_export(run_dir: Path) -> Path | None:
    """The run exported to CTranslate2 in float32 (RUN/ctranslate2), or None without the
    ct2 extra."""
    if importlib.util.find_spec("ctranslate2") is None:
        print("CTranslate2 is not installed: no nmt-ct2 row", file=sys.stderr)
        return None
    subprocess.run([sys.executable, "-m", "nmt_cli", "export", str(run_dir), "--format",
                    "ctranslate2", "--force"], check=True, capture_output=True, cwd=ROOT)
    return run_dir / "ctranslate2"


def joeynmt_translate(python: Path, files: dict[str, Path], family: str):
    """JoeyNMT's `translate` on an untrained checkpoint built from its own config."""
    model_dir = OUT / "decode" / JOEYNMT_CONFIGS[family].stem  # e.g. joeynmt-gru
    model_dir.mkdir(parents=True, exist_ok=True)
    configs = {}
    for beam in (1, 5):
        configs[beam] = model_dir / f"beam{beam}.yaml"
        configs[beam].write_text(joeynmt_config(family, files, model_dir, {
            "testing.beam_size": beam, "testing.max_output_length": STEPS,
            "testing.min_output_length": STEPS}))
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
                       check=True, env=two_threads_env(), capture_output=True)
    return lambda beam: joeynmt_command(python, "translate", str(configs[beam]))


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--quick", action="store_true", help="the first 300 sentences only")
    parser.add_argument("--no-joeynmt", action="store_true")
    add_data_option(parser)
    parser.add_argument("--json", type=Path, default=OUT / "decode.json")
    args = parser.parse_args()
    corpus = multi30k_dir(args.data)
    sources = gzip.decompress((corpus / "test_2016_flickr.en.gz").read_bytes()).decode()
    lines = sources.splitlines()[: 300 if args.quick else None]
    (OUT / "decode").mkdir(parents=True, exist_ok=True)
    inputs = {"all": OUT / "decode" / "input.en", "one": OUT / "decode" / "one.en"}
    inputs["all"].write_text("\n".join(lines) + "\n")
    inputs["one"].write_text(lines[0] + "\n")
    results: dict[str, dict] = {}
    if not args.no_joeynmt:
        python, files = setup_joeynmt(corpus)
    for family in JOEYNMT_CONFIGS:
        print(f"decoding {len(lines)} sentences: {family}", file=sys.stderr, flush=True)
        run_dir = nmt_run(family, corpus)
        results[f"nmt {family}"] = measure(nmt_command(run_dir), inputs, len(lines))
        export = ctranslate2_export(run_dir) if family == "transformer" else None
        if export is not None:
            results[f"nmt-ct2 {family}"] = measure(nmt_command(export, "ctranslate2"), inputs,
                                                   len(lines))
        if not args.no_joeynmt:
            results[f"joeynmt {family}"] = measure(joeynmt_translate(python, files, family),
                                                   inputs, len(lines))
        for name in (f"nmt {family}", f"nmt-ct2 {family}", f"joeynmt {family}"):
            if name in results:
                print(name, json.dumps(results[name]), file=sys.stderr)
    print_table(results, len(lines))
    args.json.parent.mkdir(parents=True, exist_ok=True)
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
