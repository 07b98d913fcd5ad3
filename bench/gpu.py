"""GPU throughput of the `base` preset: tokens/s, model FLOP utilisation, memory, decoding.

On a machine with an NVIDIA GPU, from the repository root, with that machine's own Python and
its installed packages (torch with CUDA, and nmt's dependencies; nothing is installed):

    python3 -m bench.gpu [--data DIR]     # or: bash bench/gpu.sh [--data DIR]

trains the `base` Transformer (6+6 layers, d512, 8 heads, ff 2048; vocabulary 8,000 here, as
Multi30k is too small for 32,000) on Multi30k en-de in bf16, eager and with torch.compile, and
prints one table: target tokens/s, MFU (model FLOPs per second over the card's dense bf16
peak), peak GPU memory, graphs compiled during the timed steps (0 when warm-up saw every
shape; the reasons for any go to stderr), then decoding sentences/s of test_2016_flickr, greedy
and beam 5. Model FLOPs count the matrix products of the forward and backward passes (3x
forward): the linear layers (the cross-attention keys and values once per source token), the
output projection over the tokenizer's vocabulary, and the attention scores and weighted sums.
Batches are built before the clock starts.
`--device cpu --steps 2 --sentences 16 --preset transformer` runs the same code on a CPU as a
smoke test (without the compiled run, which takes minutes to compile there).
Multi30k is read from --data (default data/multi30k, fetched on first use, from
$NMT_MULTI30K_MIRROR when that names a local copy).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from .common import add_data_option, multi30k_dir, new_parser

# Dense bf16 FLOP/s by the name torch.cuda.get_device_name gives, most specific first: the
# PCIe and NVL parts of a generation run at lower clocks than its SXM part.
PEAK_BF16 = (("H200 NVL", 835e12), ("H200", 989e12), ("H100 NVL", 835e12),
             ("H100 PCIe", 756e12), ("H100", 989e12), ("A100", 312e12), ("L40S", 362e12),
             ("L4", 121e12), ("A10", 125e12), ("4090", 165e12))


def peak_flops(device: torch.device) -> tuple[str, float | None]:
    """The device's name and its dense bf16 peak, if known."""
    if device.type != "cuda":
        return "cpu", None
    name = torch.cuda.get_device_name(device)
    return name, next((flops for key, flops in PEAK_BF16 if key in name), None)


def step_flops(model, vocab: int, batch) -> float:
    """Matrix-product FLOPs of one training step (forward + backward = 3 x forward), a
    multiply-add counted as 2."""
    d, ff = model.d_model, model.d_ff
    src_tokens, tgt_tokens = int((batch.src != 0).sum()), batch.num_tgt_tokens
    s, t = batch.src.size(1), batch.tgt_in.size(1)
    encoder = model.num_encoder_layers * src_tokens * (2 * (4 * d * d + 2 * d * ff) + 4 * s * d)
    decoder = model.num_decoder_layers * (
        tgt_tokens * (2 * (6 * d * d + 2 * d * ff) + 4 * t * d + 4 * s * d)  # self + cross q, o
        + src_tokens * 2 * 2 * d * d)  # cross-attention keys and values, once per source token
    output = tgt_tokens * 2 * d * vocab
    return 3.0 * (encoder + decoder + output)


def graphs_compiled() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def train_speed(compiled: bool, device: str, steps: int, corpus: Path, preset_name: str,
                vocab_size: int) -> dict:
    """Time `steps` training steps; the eager run saves its weights for decode_speed."""
    from nmt_cli.config import apply_overrides, preset
    from nmt_cli.data import make_batch
    from nmt_cli.training import Trainer, prepare_run_dir

    config = apply_overrides(preset(preset_name), {
        "data.data_dir": str(corpus), "tokenizer.vocab_size": vocab_size,
        "tokenizer.model_type": "unigram", "train.device": device, "train.precision": "bf16",
        "train.compile": compiled, "train.accum": 1})
    trainer = Trainer(config, prepare_run_dir(Path(tempfile.mkdtemp()) / "run"), lambda e: None)
    if compiled:  # why a graph is compiled again goes to stderr, with the guard that failed
        torch._logging.set_logs(recompiles=True)
    warmup = 5 if compiled else 3
    batches = trainer.epoch_batches(0)[: warmup + steps]
    vocab = trainer.corpus.tokenizer.tgt_vocab_size
    flops = sum(step_flops(config.model, vocab, make_batch(trainer.corpus.train, indices))
                for indices in batches[warmup:])
    trainer.batches.prefetch(batches)  # built ahead on CUDA, so not timed
    for indices in batches[:warmup]:
        trainer.train_step([indices])
    if trainer.device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    graphs, tokens, start = graphs_compiled(), 0, time.perf_counter()
    for indices in batches[warmup:]:
        tokens += trainer.train_step([indices])[1]
    if trainer.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    _, peak = peak_flops(trainer.device)
    memory = (torch.cuda.max_memory_allocated() / 2**30 if trainer.device.type == "cuda"
              else float("nan"))
    if not compiled:
        trainer.save(best=True)  # model.safetensors, which Translator.from_run loads
    return {"tokens_per_s": tokens / seconds, "mfu": flops / seconds / peak if peak else None,
            "peak_memory_gib": memory, "graphs_compiled_in_timed_steps":
            graphs_compiled() - graphs, "run_dir": str(trainer.run_dir)}


def decode_speed(run_dir: str, device: str, count: int, corpus: Path) -> dict:
    from nmt_cli.config import DecodeConfig
    from nmt_cli.data import read_lines
    from nmt_cli.translate import Translator

    lines = read_lines(corpus / "test_2016_flickr.en.gz")[:count]
    translator = Translator.from_run(run_dir, device=device)
    result = {}
    for name, beam in (("greedy", 1), ("beam5", 5)):
        config = DecodeConfig(beam=beam, device=device, batch_size=128, precision="bf16")
        translator.translate(lines[:64], config)  # warm-up
        start = time.perf_counter()
        translator.translate(lines, config)
        if translator.device.type == "cuda":
            torch.cuda.synchronize()
        result[name] = len(lines) / (time.perf_counter() - start)
    return result


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--preset", default="base", help="model settings (default: base)")
    parser.add_argument("--vocab", type=int, default=8000, help="SentencePiece vocabulary")
    add_data_option(parser)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench.gpu: no CUDA GPU here (use --device cpu for a smoke test)")
    corpus = multi30k_dir(args.data)
    results = {}
    for compiled in (False, True) if args.device == "cuda" else (False,):
        name = f"{args.preset}, bf16" + (", --compile" if compiled else "")
        results[name] = train_speed(compiled, args.device, args.steps, corpus, args.preset,
                                    args.vocab)
        print(name, json.dumps(results[name]), file=sys.stderr, flush=True)
    decoding = decode_speed(next(iter(results.values()))["run_dir"], args.device,
                            args.sentences, corpus)
    card, peak = peak_flops(torch.device(args.device))
    peak_text = f"dense bf16 peak {peak / 1e12:,.0f} TFLOP/s" if peak else "peak unknown"
    print(f"\n{card} ({peak_text}); Multi30k en-de; `{args.preset}` preset, "
          f"vocabulary {args.vocab:,}\n")
    print("| run | target tok/s | MFU | peak memory | graphs compiled while timed |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in results.items():
        mfu = f"{100 * r['mfu']:.1f}%" if r["mfu"] else "-"
        print(f"| {name} | {r['tokens_per_s']:,.0f} | {mfu} | {r['peak_memory_gib']:.1f} GiB "
              f"| {r['graphs_compiled_in_timed_steps']} |")
    print(f"\ndecoding test_2016_flickr ({args.sentences} sentences, bf16, batches of 128): "
          f"greedy {decoding['greedy']:.0f} sentences/s, beam 5 {decoding['beam5']:.0f}")
    if args.json:
        args.json.write_text(json.dumps({"train": results, "decode": decoding}, indent=2))


if __name__ == "__main__":
    main()
