"""Train and run a Hugging Face MarianMT model from scratch for nmt's benchmarks.

    python run_marian.py speed|train|translate ...    (see `--help` of each)

Runs inside the Marian virtual environment (bench/out/marian-venv: torch 2.13.0 CPU,
transformers 5.23.0, sentencepiece 0.2.3), not nmt's; bench/peer_marian.py starts it. It is
written as a Hugging Face user would write it: a randomly initialised `MarianMTModel` of the
reference size (bench/peers/marian.md), the joint SentencePiece model read with the
sentencepiece library, and a plain PyTorch training loop.

- `speed`: train for N seconds after 3 warm-up steps; print one JSON line with target tokens
  per second (non-pad labels, <eos> included), steps and seconds.
- `train`: train for a wall-clock budget, validate (loss per target token on val) every so
  often, and save the best weights with `save_pretrained`, with the SentencePiece model beside
  them.
- `translate`: beam search with `generate`, 64 sentences a batch; detokenized lines on stdout.
"""

import argparse
import gzip
import json
import random
import shutil
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import sentencepiece as spm
import torch
import torch.nn.functional as F
from transformers import MarianConfig, MarianMTModel, get_inverse_sqrt_schedule

THREADS = 2
MAX_PIECES = 100  # longer training pairs (either side, <eos> not counted) are dropped
HF_SENTENCES = 64  # "hf" batching: a fixed number of shuffled sentences a batch
BATCH_SLOTS = 4096  # "tokens" batching: sentences x (longest side + 1) per batch
WARMUP_STEPS = 3  # untimed steps before a speed measurement (allocations, first-call costs)
IGNORE = -100  # the label of padding, as Hugging Face's collators write it
SPM_NAME = "spm.model"  # the SentencePiece model, saved beside the weights


def read_lines(path: Path) -> list[str]:
    """The lines of a plain or gzipped text file, without their newlines."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [line.rstrip("\n") for line in lines]


def load_pairs(sp: spm.SentencePieceProcessor, data: Path, split: str) -> list[tuple]:
    """(source ids, target ids) of data/split.en and .de, each ending in <eos> as Marian's
    tokenizer writes them; pairs with a side over MAX_PIECES pieces are dropped."""
    sources = sp.encode(read_lines(data / f"{split}.en"))
    targets = sp.encode(read_lines(data / f"{split}.de"))
    eos = sp.eos_id()
    return [(src + [eos], tgt + [eos]) for src, tgt in zip(sources, targets, strict=True)
            if len(src) <= MAX_PIECES and len(tgt) <= MAX_PIECES]


def marian_config(sp: spm.SentencePieceProcessor) -> MarianConfig:
    """The reference Transformer as a MarianConfig. Marian is post-norm (a LayerNorm after each
    residual sum) where the reference is pre-norm; its positions are sinusoidal and fixed."""
    return MarianConfig(
        vocab_size=sp.get_piece_size(), d_model=256, encoder_layers=3, decoder_layers=3,
        encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=1024, decoder_ffn_dim=1024, activation_function="relu",
        # Marian drops only after the sublayers by default; nmt also drops attention weights
        # and the feed-forward's hidden layer, so all three are set to the reference 0.1.
        dropout=0.1, attention_dropout=0.1, activation_dropout=0.1,
        max_position_embeddings=256, scale_embedding=True,  # embeddings x sqrt(d_model)
        share_encoder_decoder_embeddings=True, tie_word_embeddings=True,
        # No <bos>: the decoder starts from <pad>, and sequences end in <eos>, as in Marian.
        pad_token_id=sp.pad_id(), eos_token_id=sp.eos_id(), decoder_start_token_id=sp.pad_id(),
        forced_eos_token_id=sp.eos_id(), bos_token_id=None)


def hf_batches(pairs: list[tuple], rng: random.Random) -> list[list[int]]:
    """What a Hugging Face user gets by default: shuffled sentences, HF_SENTENCES a batch."""
    order = list(range(len(pairs)))
    rng.shuffle(order)
    return [order[i : i + HF_SENTENCES] for i in range(0, len(order), HF_SENTENCES)]


def token_batches(pairs: list[tuple], rng: random.Random) -> list[list[int]]:
    """nmt's composition: sentences sorted by length (target, then source, ties at random),
    each batch filled while sentences x (longest side + 1) stays within BATCH_SLOTS, the
    batches shuffled. Both sides already hold their <eos>, the + 1."""
    noise = [rng.random() for _ in pairs]
    order = sorted(range(len(pairs)),
                   key=lambda i: (len(pairs[i][1]), len(pairs[i][0]), noise[i]))
    batches, current, longest = [], [], 0
    for i in order:
        size = max(len(pairs[i][0]), len(pairs[i][1]))
        if current and (len(current) + 1) * max(longest, size) > BATCH_SLOTS:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, size)
    batches += [current] if current else []
    rng.shuffle(batches)
    return batches


def batch_stream(pairs: list[tuple], batching: str, seed: int = 1):
    """Batches of indices, epoch after epoch, each epoch freshly shuffled."""
    rng = random.Random(seed)
    make = hf_batches if batching == "hf" else token_batches
    while True:
        yield from make(pairs, rng)


def collate(model: MarianMTModel, pairs: list[tuple], indices: list[int]) -> dict:
    """Dynamic padding to the longest sentence of the batch, as DataCollatorForSeq2Seq does:
    sources padded with <pad> and masked, labels padded with IGNORE, and the decoder input
    made from the labels by the model (shifted right, starting with <pad>)."""
    pad = model.config.pad_token_id
    sources = [pairs[i][0] for i in indices]
    targets = [pairs[i][1] for i in indices]
    width, depth = max(map(len, sources)), max(map(len, targets))
    input_ids = torch.tensor([s + [pad] * (width - len(s)) for s in sources])
    labels = torch.tensor([t + [IGNORE] * (depth - len(t)) for t in targets])
    return {"input_ids": input_ids, "attention_mask": input_ids.ne(pad).long(),
            "decoder_input_ids": model.prepare_decoder_input_ids_from_labels(labels),
            "labels": labels}


def autocast(precision: str):
    """bf16 autocast on the CPU, or nothing for fp32."""
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return nullcontext()


def batch_loss(model: MarianMTModel, batch: dict, precision: str, smoothing: float):
    """Mean cross-entropy per target token. The labels stay out of the model's call, which
    would add its own unsmoothed loss; the loss is taken here in float32."""
    inputs = {key: value for key, value in batch.items() if key != "labels"}
    with autocast(precision):
        logits = model(**inputs).logits  # (batch, tgt_len, vocab)
    return F.cross_entropy(logits.float().flatten(0, 1), batch["labels"].flatten(),
                           ignore_index=IGNORE, label_smoothing=smoothing)


def new_training(sp: spm.SentencePieceProcessor, seed: int = 1):
    """A fresh MarianMTModel and its optimizer and schedule: Adam (0.9, 0.98) with nmt's
    epsilon (AdamW without weight decay), peak rate 5e-4 after 1,000 linear warm-up steps,
    then inverse square root."""
    torch.manual_seed(seed)
    model = MarianMTModel(marian_config(sp))
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, betas=(0.9, 0.98), eps=1e-9,
                                  weight_decay=0.0)
    return model, optimizer, get_inverse_sqrt_schedule(optimizer, num_warmup_steps=1000)


def train_step(model, optimizer, scheduler, batch: dict, precision: str) -> int:
    """One update with label smoothing 0.1 and gradients clipped to norm 1.0; returns the
    number of target tokens (non-pad labels, <eos> included)."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    batch_loss(model, batch, precision, smoothing=0.1).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    return int(batch["labels"].ne(IGNORE).sum())


def speed(args: argparse.Namespace) -> None:
    """Print target tokens per second over `args.seconds` of training, after warm-up steps."""
    sp = spm.SentencePieceProcessor(model_file=str(args.spm))
    pairs = load_pairs(sp, args.data, "train")
    model, optimizer, scheduler = new_training(sp)
    batches = batch_stream(pairs, args.batching)
    for _ in range(WARMUP_STEPS):
        train_step(model, optimizer, scheduler, collate(model, pairs, next(batches)),
                   args.precision)
    tokens, steps, started = 0, 0, time.perf_counter()
    while time.perf_counter() - started < args.seconds:
        batch = collate(model, pairs, next(batches))
        tokens += train_step(model, optimizer, scheduler, batch, args.precision)
        steps += 1
    seconds = time.perf_counter() - started
    print(json.dumps({"tokens_per_s": tokens / seconds, "tokens": tokens, "steps": steps,
                      "seconds": seconds, "tokens_per_step": tokens / steps,
                      "parameters": count_parameters(model),
                      "attention": model.config._attn_implementation}))


def count_parameters(model: MarianMTModel) -> int:
    """Trained parameters: the fixed sinusoidal position tables are not counted."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


@torch.inference_mode()
def validate(model: MarianMTModel, pairs: list[tuple], precision: str) -> float:
    """Cross-entropy per target token on `pairs` (no smoothing), in token batches."""
    model.eval()
    total, tokens = 0.0, 0
    for indices in token_batches(pairs, random.Random(0)):
        batch = collate(model, pairs, indices)
        count = int(batch["labels"].ne(IGNORE).sum())
        total += float(batch_loss(model, batch, precision, smoothing=0.0)) * count
        tokens += count
    return total / tokens


def train(args: argparse.Namespace) -> None:
    """Train for `args.seconds` of wall-clock time (reading the data and the periodic
    validations included), validate once more when time is up, and save the weights of the
    best validation loss to `args.out`."""
    started = time.perf_counter()
    sp = spm.SentencePieceProcessor(model_file=str(args.spm))
    train_pairs, val_pairs = load_pairs(sp, args.data, "train"), load_pairs(sp, args.data, "val")
    model, optimizer, scheduler = new_training(sp)
    batches = batch_stream(train_pairs, args.batching)
    best, best_state, steps, log = float("inf"), None, 0, []
    while time.perf_counter() - started < args.seconds:
        train_step(model, optimizer, scheduler, collate(model, train_pairs, next(batches)),
                   args.precision)
        steps += 1
        out_of_time = time.perf_counter() - started >= args.seconds
        if steps % args.validate_every and not out_of_time:
            continue
        loss = validate(model, val_pairs, args.precision)
        log.append({"step": steps, "val_loss": loss, "seconds": time.perf_counter() - started})
        print(json.dumps(log[-1]), file=sys.stderr, flush=True)
        if loss < best:  # a copy, since training goes on changing the weights in place
            best, best_state = loss, {k: v.detach().clone() for k, v in model.state_dict().items()}
    if best_state is not None:
        model.load_state_dict(best_state)
    save_run(model, args.spm, args.out, {"steps": steps, "validations": log})


def save_run(model: MarianMTModel, spm_model: Path, out: Path, log: dict) -> None:
    """The weights and config (save_pretrained), the SentencePiece model and the training log."""
    model.save_pretrained(out)
    shutil.copyfile(spm_model, out / SPM_NAME)
    (out / "train_log.json").write_text(json.dumps(log, indent=2) + "\n")
    print(json.dumps({"model_dir": str(out), "steps": log["steps"]}))


@torch.inference_mode()
def translate(args: argparse.Namespace) -> None:
    """Translate the lines of `args.sources` with beam search; print them detokenized."""
    sp = spm.SentencePieceProcessor(model_file=str(args.model_dir / SPM_NAME))
    model = MarianMTModel.from_pretrained(args.model_dir).eval()
    pad, eos = sp.pad_id(), sp.eos_id()
    lines = read_lines(args.sources)
    for start in range(0, len(lines), HF_SENTENCES):
        sources = [ids + [eos] for ids in sp.encode(lines[start : start + HF_SENTENCES])]
        width = max(map(len, sources))
        input_ids = torch.tensor([s + [pad] * (width - len(s)) for s in sources])
        output = model.generate(
            input_ids=input_ids, attention_mask=input_ids.ne(pad).long(),
            num_beams=args.beam, length_penalty=1.0,
            max_new_tokens=int(1.5 * (width - 1)) + 10,  # the source's pieces, <eos> not counted
            bad_words_ids=[[pad]])  # <pad> only starts the decoder, as in Marian's configs
        for ids in output.tolist():
            print(sp.decode([i for i in ids if i not in (pad, eos)]), flush=True)


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    for mode in ("speed", "train"):
        sub = modes.add_parser(mode)
        sub.add_argument("--data", type=Path, required=True,
                         help="a folder of plain train and val .en/.de files")
        sub.add_argument("--spm", type=Path, required=True, help="the joint SentencePiece model")
        sub.add_argument("--seconds", type=float, required=True)
        sub.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
        sub.add_argument("--batching", choices=("hf", "tokens"), default="tokens")
    modes.choices["train"].add_argument("--out", type=Path, required=True)
    modes.choices["train"].add_argument("--validate-every", type=int, default=100,
                                        metavar="STEPS")
    sub = modes.add_parser("translate")
    sub.add_argument("model_dir", type=Path)
    sub.add_argument("sources", type=Path, help="one source sentence a line (plain or .gz)")
    sub.add_argument("--beam", type=int, default=5)
    return parser.parse_args()


def main() -> None:
    args = parse_arguments()
    torch.set_num_threads(THREADS)
    {"speed": speed, "train": train, "translate": translate}[args.mode](args)


if __name__ == "__main__":
    main()
