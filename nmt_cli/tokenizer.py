"""SentencePiece subword tokenization with fixed ids for the special tokens.

Every model sees the same four special ids (special_tokens.py): <pad> = 0, <unk> = 1,
<sos> = 2, <eos> = 3.
A joint model (the default) segments source and target with one vocabulary; otherwise each
side has its own. A run with several target languages (languages.py) has a tag per language,
<2de>, right after the special pieces: a source line may open with one, which is one token.
"""

from __future__ import annotations

import functools
import io
import os
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import sentencepiece as spm

from .config import TokenizerConfig
from .errors import UserError
from .files import atomic_write_bytes
from .languages import TAG
from .special_tokens import (
    EOS_ID,
    EOS_PIECE,
    PAD_ID,
    PAD_PIECE,
    SOS_ID,
    SOS_PIECE,
    UNK_ID,
    UNK_PIECE,
)
from .subword_sampling import SubwordSampler

JOINT_FILE, SRC_FILE, TGT_FILE = "spm.model", "spm.src.model", "spm.tgt.model"
WORD_START = "\u2581"  # SentencePiece's mark of a space before a piece: one opens a word


def tokenizer_files(folder: Path) -> dict[str, bytes]:
    """The SentencePiece model files in `folder`, by name: equal files, equal tokenizers."""
    paths = [Path(folder) / name for name in (JOINT_FILE, SRC_FILE, TGT_FILE)]
    return {path.name: path.read_bytes() for path in paths if path.is_file()}


def write_tokenizer(models: dict[str, bytes], out_dir: Path) -> None:
    """Write model files by name, and remove those of the other kind (joint or not) that an
    earlier tokenizer left there, which `Tokenizer.load` could take instead."""
    for name in (JOINT_FILE, SRC_FILE, TGT_FILE):
        if name not in models:
            (Path(out_dir) / name).unlink(missing_ok=True)
    for name, model in models.items():
        atomic_write_bytes(Path(out_dir) / name, model)


def copy_tokenizer(from_dir: Path, to_dir: Path) -> None:
    """Give `to_dir` the tokenizer of `from_dir` (a run or a prepared corpus)."""
    Tokenizer.load(Path(from_dir))  # one that loads, or a one-line error naming from_dir
    write_tokenizer(tokenizer_files(from_dir), to_dir)


def train_sentencepiece(lines: Iterable[str], config: TokenizerConfig,
                        tags: Sequence[str] = ()) -> bytes:
    """Train one SentencePiece model on `lines` and return its serialized bytes; `tags` become
    whole pieces (user-defined symbols), right after the special ones."""
    model = io.BytesIO()
    if config.vocab_size <= (special := 4 + len(tags)):  # <pad> <unk> <sos> <eos>, the tags
        raise UserError(f"tokenizer.vocab_size {config.vocab_size} is too small: the special "
                        f"pieces alone take {special}, and every character needs one too")
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=model,
            vocab_size=config.vocab_size, model_type=config.model_type,
            character_coverage=config.character_coverage,
            pad_id=PAD_ID, unk_id=UNK_ID, bos_id=SOS_ID, eos_id=EOS_ID,
            pad_piece=PAD_PIECE, unk_piece=UNK_PIECE, bos_piece=SOS_PIECE, eos_piece=EOS_PIECE,
            user_defined_symbols=list(tags), byte_fallback=config.byte_fallback,
            hard_vocab_limit=False, input_sentence_size=2_000_000, shuffle_input_sentence=True,
            num_threads=os.cpu_count() or 1, minloglevel=2,
        )
    except RuntimeError as e:
        if needed := re.search(r"smaller than required_chars\. \d+ vs (\d+)", str(e)):
            what = "its characters" + (", 256 bytes (byte_fallback)" if config.byte_fallback
                                       else "")
            raise UserError(f"tokenizer.vocab_size {config.vocab_size} is too small for this "
                            f"corpus: {what} and the special pieces need at least "
                            f"{needed.group(1)}") from None
        if "sentences_.empty()" in str(e):  # it skips lines over max_sentence_length
            raise UserError("SentencePiece found no line to train the tokenizer on: it skips "
                            "lines over 4,192 bytes, and every line of the corpus is longer"
                            ) from None
        raise UserError(f"SentencePiece training failed: {e}") from None
    return model.getvalue()


class Tokenizer:
    """Source and target SentencePiece processors (the same object when joint)."""

    def __init__(self, src: spm.SentencePieceProcessor, tgt: spm.SentencePieceProcessor):
        self.src, self.tgt = src, tgt
        self.tags = source_tags(src)  # {tag: id}
        self.tag_ids = frozenset(self.tags.values())

    @property
    def languages(self) -> list[str]:
        """The target languages whose tags the source side knows; none for one language."""
        return [tag[2:-1] for tag in self.tags]

    @property
    def joint(self) -> bool:
        return self.src is self.tgt

    @property
    def src_vocab_size(self) -> int:
        return self.src.get_piece_size()

    @property
    def tgt_vocab_size(self) -> int:
        return self.tgt.get_piece_size()

    @classmethod
    def train(cls, src_lines: list[str], tgt_lines: list[str], config: TokenizerConfig,
              out_dir: Path, tags: Sequence[str] = ()) -> Tokenizer:
        """Train on the training text and write the model file(s) into `out_dir`; the source
        side keeps each of `tags` whole."""
        if config.joint:
            protos = {JOINT_FILE: train_sentencepiece(src_lines + tgt_lines, config, tags)}
        else:
            protos = {SRC_FILE: train_sentencepiece(src_lines, config, tags),
                      TGT_FILE: train_sentencepiece(tgt_lines, config)}
        write_tokenizer(protos, out_dir)
        return cls.load(out_dir)

    @classmethod
    def load(cls, run_dir: Path) -> Tokenizer:
        def processor(path: Path) -> spm.SentencePieceProcessor:
            try:
                return spm.SentencePieceProcessor(model_file=str(path))
            except (OSError, RuntimeError) as e:
                raise UserError(f"{path}: cannot load tokenizer model ({e})") from None

        if (run_dir / JOINT_FILE).exists():
            joint = processor(run_dir / JOINT_FILE)
            return cls(joint, joint)
        if (run_dir / SRC_FILE).exists() and (run_dir / TGT_FILE).exists():
            return cls(processor(run_dir / SRC_FILE), processor(run_dir / TGT_FILE))
        raise UserError(f"{run_dir}: no tokenizer model ({JOINT_FILE} or {SRC_FILE}/{TGT_FILE})")

    def encode_src(self, lines: list[str]) -> list[list[int]]:
        if not self.tags:
            return self.src.encode(lines)
        tags, rests = self.split_tags(lines)
        return [tag + ids for tag, ids in zip(tags, self.src.encode(rests))]

    def split_tags(self, lines: list[str]) -> tuple[list[list[int]], list[str]]:
        """The id of each line's opening language tag (or none), and the rest of the line:
        "<2fr> A man" is [<2fr>] + the pieces of "A man", without the "▁" that SentencePiece
        would put before the tag."""
        tags, rests = [], []
        for line in lines:
            head, _, rest = line.partition(" ")
            found = head in self.tags
            tags.append([self.tags[head]] if found else [])
            rests.append(rest if found else line)
        return tags, rests

    def encode_tgt(self, lines: list[str]) -> list[list[int]]:
        return self.tgt.encode(lines)

    @functools.cached_property
    def samplers(self) -> tuple[SubwordSampler, SubwordSampler]:
        """Those of the source and the target side: one when joint."""
        src = SubwordSampler(self.src)
        return src, src if self.joint else SubwordSampler(self.tgt)

    def sample(self, src_lines: list[str], tgt_lines: list[str], alpha: float, nbest: int,
               seed: int) -> tuple[list[list[int]], list[list[int]]]:
        """Segmentations drawn at random (subword regularization, subword_sampling.py): the
        same ones for the same seed in any process, with any SentencePiece release."""
        tags, src_lines = self.split_tags(src_lines)
        src, tgt = (sampler.draw(lines, alpha, nbest, random.Random(seed * 2 + side))
                    for side, (sampler, lines) in enumerate(zip(self.samplers,
                                                                (src_lines, tgt_lines))))
        return [tag + ids for tag, ids in zip(tags, src)], tgt

    def decode_tgt(self, ids: list[list[int]]) -> list[str]:
        return self.tgt.decode(ids)


def source_tags(processor: spm.SentencePieceProcessor) -> dict[str, int]:
    """The language tags of a source model, by piece: those right after the special pieces."""
    tags = {}
    for i in range(EOS_ID + 1, processor.get_piece_size()):
        piece = processor.id_to_piece(i)
        if not TAG.fullmatch(piece):
            break
        tags[piece] = i
    return tags
