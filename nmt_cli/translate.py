"""Translation with a trained run: `Translator.from_run(path).translate(lines)`."""

from __future__ import annotations

import dataclasses
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import torch
from torch import nn

from .checkpoint import BEST_WEIGHTS, Run, load_run
from .config import QUANTIZATIONS, DecodeConfig, check_choice
from .devices import mixed_precision, resolve_device
from .errors import UserError
from .search import translate_ids


class Translator:
    def __init__(self, run: Run, device: torch.device,
                 warn: Callable[[str], None] | None = None):
        self.run, self.device = run, device
        self.warn = warn or (lambda message: print(f"warning: {message}", file=sys.stderr))

    @classmethod
    def from_run(cls, run_dir: Path | str, device: str = "auto", weights: str = BEST_WEIGHTS,
                 quantize: str = "none") -> Translator:
        """Load a run's best weights (or `weights`, e.g. last.safetensors) onto `device`;
        quantize="int8" stores the linear layers' weights in int8 (CPU only)."""
        check_choice("--quantize", quantize, QUANTIZATIONS)
        resolved = resolve_device(device)
        run = load_run(Path(run_dir), resolved, weights)
        if quantize == "int8":
            run = dataclasses.replace(run, model=quantize_int8(run.model, resolved))
        return cls(run, resolved)

    def move_to(self, device: str) -> None:
        """Move the model to `device` ("auto": leave it where it is)."""
        if device == "auto" or resolve_device(device) == self.device:
            return
        self.device = resolve_device(device)
        self.run = dataclasses.replace(self.run, model=self.run.model.to(self.device))

    def translate(self, lines: list[str], config: DecodeConfig | None = None) -> list[str]:
        """One translation per input line, in order; blank lines give empty strings."""
        config = config or DecodeConfig()
        self.move_to(config.device)
        tokenizer = self.run.tokenizer
        src_ids = [ids if line.strip() else []
                   for line, ids in zip(lines, tokenizer.encode_src(lines))]
        longest = self.run.model.max_positions - 1  # room for <eos>
        for ids in src_ids:
            if len(ids) > longest:
                self.warn(f"an input of {len(ids):,} tokens was cut to the model's {longest:,}")
        with mixed_precision(self.device, config.precision):
            out_ids = translate_ids(self.run.model, src_ids, config, self.device)
        return [text if src else "" for src, text in zip(src_ids, tokenizer.decode_tgt(out_ids))]

    def translate_stream(self, lines: Iterable[str], config: DecodeConfig | None = None,
                         chunk_size: int = 1000) -> Iterator[str]:
        """Translate a stream chunk by chunk, so memory does not grow with its length."""
        chunk: list[str] = []
        for line in lines:
            chunk.append(line.rstrip("\r\n"))
            if len(chunk) == chunk_size:
                yield from self.translate(chunk, config)
                chunk = []
        if chunk:
            yield from self.translate(chunk, config)


def quantize_int8(model: nn.Module, device: torch.device) -> nn.Module:
    """Dynamic int8 quantization for CPU inference: every nn.Linear keeps its weights in int8
    and quantizes its input on the fly; embeddings, GRUs and norms stay in float32."""
    if device.type != "cpu":
        raise UserError("--quantize int8 runs on the CPU only; add --device cpu")
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():  # torch.ao.quantization announces its move to torchao
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
