"""Typed configuration: the one home of every default.

A run is described by four frozen dataclasses (data, tokenizer, model, train) gathered in
`Config`; a translation by `DecodeConfig`. Presets, TOML files and `section.key=value`
overrides are all checked against these fields, so a typo is an error, never a silent default.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from .errors import UserError, in_file
from .languages import check_languages

# Every list of choices, defined once: the checks below and the command line's options use them.
ARCHS = ("transformer", "gru")
# Bahdanau; Luong's dot and general; none: the decoder sees only the encoder's summary vector
ATTENTION_SCORES = ("additive", "dot", "general", "none")
TOKENIZER_TYPES = ("unigram", "bpe")
SCHEDULES = ("inverse_sqrt", "linear", "constant", "plateau")
BEST_METRICS = ("bleu", "chrf", "loss")  # what ranks validations (validation.selection_score)
DEVICES = ("auto", "cpu", "cuda", "mps")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
QUANTIZATIONS = ("none", "int8")
ENGINES = ("torch", "ctranslate2")  # who decodes: nmt's own search, or a CTranslate2 export
EXPORT_FORMATS = ("ctranslate2",)
EXPORT_QUANTIZATIONS = ("float32", "int8", "int8_float32", "float16")  # CTranslate2 weight types
ATTENTION_KINDS = ("cross", "encoder", "decoder")  # the attention `nmt attention` draws
# nmt compare's paired tests: bootstrap resampling, approximate randomization, or both
COMPARE_METHODS = ("bootstrap", "ar", "both")
COMPARE_SEED = 12345  # sacreBLEU's own default
# BLEU's tokenizers (sacreBLEU's that need nothing downloaded); auto: the one sacreBLEU takes
# for the target language (zh, ja-mecab, ko-mecab; 13a for the others)
BLEU_TOKENIZERS = ("auto", "13a", "intl", "zh", "ja-mecab", "ko-mecab", "char", "none")
TOKENIZER_SAMPLE = 1_000_000  # sentence pairs the tokenizer trains on at most (nmt prepare)


@dataclass(frozen=True)
class DataConfig:
    data_dir: str = ""  # holds SPLIT.LANG or SPLIT.LANG.gz files; "": the bundled sample
    src_lang: str = "en"
    tgt_lang: str = "de"  # several, "de,fr,cs": one model into each (languages.py)
    max_len: int = 100  # training pairs longer than this (in tokens, either side) are dropped
    # Training pairs whose one side has more than this many times the tokens of the other are
    # dropped, as misaligned (Moses' clean-corpus-n drops over 9; 1.5-3 is common); 0: off
    max_len_ratio: float = 0.0
    # Word alignments of the training pairs, one line a pair, as fast_align and eflomal write
    # them ("0-0 1-2": 0-based source-target positions of words split at whitespace); with
    # several target languages, a file for each, in tgt_lang's order, separated by commas.
    # Given, training teaches the aligning attention to follow them (guided alignment,
    # guided_alignment.py), for `--alignment` and `--markup`. A corpus prepared with them
    # (nmt data prepare --alignments) names them here, and holds them. "": none
    alignments: str = ""


@dataclass(frozen=True)
class TokenizerConfig:
    vocab_size: int = 8000
    model_type: str = "unigram"  # unigram | bpe
    joint: bool = True  # one SentencePiece model for source and target
    character_coverage: float = 1.0
    # A character the vocabulary lacks is spelt in its UTF-8 bytes, 256 of the vocabulary's
    # pieces, instead of <unk>. With character_coverage below 1 the rarest characters of the
    # training text are spelt so too, and the model learns the byte pieces from them
    byte_fallback: bool = False
    # Subword regularization (Kudo, 2018): each epoch segments the training text anew, drawing
    # each sentence's pieces at random (unigram: among the `sampling_nbest` best segmentations,
    # -1 for all, from their probabilities raised to `sampling_alpha`; bpe: dropping each merge
    # with probability `sampling_alpha`). Validation and translation keep the best one. 0: off
    sampling_alpha: float = 0.0
    sampling_nbest: int = -1


@dataclass(frozen=True)
class ModelConfig:
    arch: str = "transformer"  # transformer | gru
    d_model: int = 256  # embedding size; Transformer width; GRU hidden size
    # Transformer only, as are d_ff and norm_first (TRANSFORMER_ONLY): the GRU has one
    # bidirectional encoder layer, one decoder layer and one attention score (models/gru.py)
    num_heads: int = 4
    num_encoder_layers: int = 3
    num_decoder_layers: int = 3
    d_ff: int = 1024  # feed-forward inner size
    dropout: float = 0.1
    norm_first: bool = True  # pre-norm; False gives the post-norm of the original paper
    tie_embeddings: bool = True  # output projection shares the target embedding matrix
    attention: str = "additive"  # GRU only: additive (Bahdanau) | dot | general (Luong) | none
    src_embeddings: str = ""  # word2vec/GloVe text file to start the source embeddings from
    tgt_embeddings: str = ""  # ... and the target embeddings (the same file when joint)
    freeze_embeddings: bool = False  # keep such embeddings fixed (tied output layer too)
    max_positions: int = 1024  # longest sequence the positional encoding covers
    # Transformer: how many heads of the aligning decoder layer's cross-attention (the first)
    # word alignments read and guided alignment (data.alignments) teaches, averaged; 0: all
    alignment_heads: int = 0


@dataclass(frozen=True)
class TrainConfig:
    batch_tokens: int = 4096  # padded tokens per batch: sentences x (longest side + 1)
    lr: float = 5e-4
    adam_beta1: float = 0.9
    adam_beta2: float = 0.98
    adam_eps: float = 1e-9
    # inverse_sqrt (linear warmup, then 1/sqrt) | linear (warmup, then down to 0 at the nearest
    # limit: max_steps, max_time or epochs) | constant | plateau
    schedule: str = "inverse_sqrt"
    warmup_steps: int = 1000
    plateau_factor: float = 0.5  # plateau: multiply the rate by this when best_metric stalls ...
    plateau_patience: int = 2  # ... for this many validations
    label_smoothing: float = 0.1
    # With data.alignments: the weight of the attention's cross-entropy against them in the
    # loss (0: they are not read). fairseq and OpenNMT take 0.05 for one head; for the heads
    # averaged, 0.5 had the lowest alignment error rate and the best BLEU on Multi30k's
    # validation set, against 0.05 and 2, and against one head (model.alignment_heads 1)
    # taught at 0.05 or 0.5 (python -m bench.guided; bench/RESULTS.md)
    alignment_weight: float = 0.5
    clip_norm: float = 1.0  # the gradient's largest norm; 0: not clipped
    max_bad_steps: int = 20  # stop after this many NaN/inf steps in a row
    weight_decay: float = 0.0
    teacher_forcing_ratio: float = 1.0  # GRU only: chance of feeding the reference token
    max_steps: int = 0  # 0: no limit
    max_time: float = 0.0  # seconds; 0: no limit
    epochs: int = 0  # 0: no limit
    validate_every: int = 200  # steps
    patience: int = 0  # stop after this many validations without a better score; 0: never
    # What ranks validations: the best weights (model.safetensors, ema.safetensors), patience,
    # the plateau schedule and `nmt average --best` follow the greedy translations' BLEU or
    # chrF, or the teacher-forced loss
    best_metric: str = "bleu"
    seed: int = 1
    device: str = "auto"  # auto | cpu | cuda | mps
    precision: str = "auto"  # auto (bf16 on CUDA, else fp32) | fp32 | bf16 | fp16 (autocast)
    accum: int = 1  # batches per update (gradient accumulation)
    compile: bool = False  # torch.compile the model (for GPUs; slower on CPUs, bench/RESULTS.md)
    # Keep the weights of the last K validations as step-N.safetensors, for `nmt average`; 0: off
    keep_last: int = 0
    # EMA of the weights (e.g. 0.999; warmed up in the first steps, see averaging.py), updated
    # after each taken step, in float32; validated beside the weights and saved as
    # ema.safetensors (the best by best_metric) and ema-last.safetensors.
    # model.safetensors, early stopping and the plateau schedule follow the trained weights
    # alone; `nmt average RUN --ema` makes the EMA a run directory of its own. 0: off
    ema_decay: float = 0.0
    # Fine-tuning: a run directory whose best weights and tokenizer a new run starts from
    # (finetune.py); "": random weights and a tokenizer trained on this corpus
    finetune_from: str = ""
    # Also write the training log as TensorBoard scalars to RUN/tensorboard (tensorboard_log.py;
    # needs the tensorboard extra)
    tensorboard: bool = False
    # At each validation, draw the cross-attention of the model's greedy translation of the
    # first N validation sentences to RUN/attention/step-NNNNNN-K.png (and TensorBoard): how
    # attention learns to align. 0: off
    attention_plots: int = 0


@dataclass(frozen=True)
class DecodeConfig:
    beam: int = 5  # 1 = greedy
    # GNMT length penalty exponent: hypotheses rank by log P / ((5 + length) / 6) ** alpha.
    # 1.4 had the best mean validation BLEU over five Transformer and GRU runs on Multi30k
    # en-de, en-fr and en-cs (python -m bench.length_penalty; bench/RESULTS.md)
    alpha: float = 1.4
    max_len_a: float = 1.5  # output length limit: a * source length + b
    max_len_b: int = 10
    min_len: int = 0  # outputs have at least this many tokens (<eos> is ruled out before)
    batch_size: int = 64
    device: str = "auto"  # auto: wherever the Translator was loaded; else move it there
    precision: str = "auto"  # auto (bf16 on CUDA, else fp32) | fp32 | bf16 | fp16 (autocast)
    # Random sampling instead of search (e.g. to back-translate text of the target language):
    # each token is drawn from the model's distribution, its logits divided by `temperature`,
    # among the `sampling_topk` most probable tokens (0: all) and the fewest whose probability
    # reaches `sampling_topp` (1: all). The beam is not used; n-best lists are that many draws.
    # `sampling_seed` fixes the draws of a Translator's calls (search.Sampler).
    sampling: bool = False
    sampling_topk: int = 0
    sampling_topp: float = 1.0
    temperature: float = 1.0
    sampling_seed: int = 1
    # Rule out any token that would repeat an n-gram of this many tokens already in the output
    # (search.block_repeated_ngrams; a cure for "a man a man a man"); 0: off
    no_repeat_ngram: int = 0
    # For a model trained into several languages (data.tgt_lang "de,fr"): the one to translate
    # into (languages.py); "" for a model with one
    tgt_lang: str = ""
    # A file of terms, a source term and its target term a line, tab between (glossary.py):
    # each translation of a line that holds a source term contains its target term, placed
    # by constrained beam search (constrained.py); "": none
    glossary: str = ""
    # Find the glossary's source terms in any case ("Bike" opening a sentence for "bike"), as
    # Google's ignoreCase does; the target term then follows the case of what was found
    glossary_ignore_case: bool = False
    # Let a term's last word take an ending of one to three lower-case letters ("Fahrrad":
    # "Fahrrads"; constrained.Pieces.endings): the model inflects the terms it is given
    glossary_inflect: bool = False
    # Translate a line of several sentences one sentence at a time and join the translations
    # (sentences.py): models trained on sentence pairs drop or merge the sentences of a
    # paragraph read whole
    split_sentences: bool = False

    def __post_init__(self) -> None:
        for name, low, high in (("beam", 1, MAX_BEAM), ("batch_size", 1, MAX_INT),
                                ("min_len", 0, MAX_INT), ("max_len_b", -MAX_INT, MAX_INT),
                                ("max_len_a", 0, 1000), ("alpha", -10, 10),
                                ("sampling_topk", 0, MAX_INT), ("sampling_topp", 1e-6, 1.0),
                                ("temperature", 1e-3, 1000),
                                ("sampling_seed", 0, 2**63 - 1),
                                ("no_repeat_ngram", 0, MAX_INT)):
            value = getattr(self, name)
            if not low <= value <= high:  # nan fails too
                raise UserError(f"--{name.replace('_', '-')} must lie in [{low}, {high}] "
                                f"(got {value})")
        check_choice("--device", self.device, DEVICES)
        check_choice("--precision", self.precision, PRECISIONS)


def check_engine(engine: str, config: DecodeConfig) -> None:
    """What an engine cannot do with these settings."""
    if config.sampling and engine == "ctranslate2":
        raise UserError("--sampling: the ctranslate2 engine searches only; sample with "
                        "--engine torch")
    if config.glossary and engine == "ctranslate2":
        raise UserError("--glossary: the ctranslate2 engine cannot place terms; use --engine "
                        "torch")


@dataclass(frozen=True)
class ServeConfig:
    """How the server listens and what it accepts; decoding settings are a DecodeConfig."""

    host: str = "127.0.0.1"  # loopback: reachable from this machine only
    port: int = 8000  # 0: any free port (the server prints the one it got)
    engine: str = "torch"
    max_lines: int = 100  # lines per request
    max_chars: int = 2000  # characters per line
    max_beam: int = 16  # the widest beam a request may ask for
    max_wait_ms: float = 5.0  # how long a batch waits for more requests before decoding
    # the target tokens of the glossary terms a line's translation must hold: constrained
    # search takes longer the more it must place (bench/RESULTS.md)
    max_term_tokens: int = 32
    # the lines that may wait for the decoder: a request that would make them more is refused
    # (503, retry later) rather than left waiting behind them. A request is taken whatever
    # its size when no line waits
    max_queued_lines: int = 1000

    def __post_init__(self) -> None:
        check_choice("--engine", self.engine, ENGINES)
        if not 0 <= self.port <= 65535:
            raise UserError(f"--port must lie between 0 and 65535 (got {self.port})")
        for name in ("max_lines", "max_chars", "max_beam", "max_term_tokens",
                     "max_queued_lines"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name.replace('_', '-')} must be at least 1 "
                                f"(got {getattr(self, name)})")
        if self.max_beam > MAX_BEAM:
            raise UserError(f"--max-beam must be at most {MAX_BEAM} (got {self.max_beam})")
        if not 0 <= self.max_wait_ms <= 1000:
            raise UserError(f"--max-wait-ms must lie between 0 and 1000 (got {self.max_wait_ms})")
        if self.max_queued_lines < self.max_lines:  # else a full request would wait forever
            raise UserError(f"--max-queued-lines {self.max_queued_lines} is below --max-lines "
                            f"{self.max_lines}: a request of that many lines could never queue")

    @property
    def max_body(self) -> int:
        """The largest request body read, in bytes: max_lines lines of max_chars characters
        and as many prefixes, each character written as JSON escapes at worst (12 bytes for
        one past U+FFFF: a surrogate pair), plus room for the rest."""
        return 2 * self.max_lines * (12 * self.max_chars + 4) + 1024


@dataclass(frozen=True)
class Config:
    data: DataConfig = field(default_factory=DataConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        for key in valid_keys():  # numbers a TOML file or config.json may hold: nan, inf, 1e30
            value = self.get(key)
            if isinstance(value, float) and not math.isfinite(value):
                raise UserError(f"{key} must be a finite number (got {value})")
        for key in SIZES:
            if self.get(key) > MAX_INT:
                raise UserError(f"{key} must be at most {MAX_INT:,} (got {self.get(key):,})")
        if not -(2**63) <= self.train.seed < 2**64:  # what torch.manual_seed takes
            raise UserError(f"train.seed must lie in [-2**63, 2**64) (got {self.train.seed})")
        for key, choices in CHOICES.items():
            check_choice(key, self.get(key), choices)
        for key in AT_LEAST_ONE:
            if self.get(key) < 1:
                raise UserError(f"{key} must be at least 1 (got {self.get(key)})")
        for key in NOT_NEGATIVE:
            if self.get(key) < 0:
                raise UserError(f"{key} must not be negative (got {self.get(key)})")
        for key in PROBABILITIES:
            if not 0.0 <= self.get(key) < 1.0:
                raise UserError(f"{key} must lie in [0, 1) (got {self.get(key)})")
        for key in POSITIVE:
            if self.get(key) <= 0:
                raise UserError(f"{key} must be positive (got {self.get(key)})")
        check_languages(self.data.tgt_lang)
        if self.data.max_len_ratio and not self.data.max_len_ratio >= 1:
            raise UserError("data.max_len_ratio must be 0 (off) or at least 1 "
                            f"(got {self.data.max_len_ratio})")
        if not 0 < self.tokenizer.character_coverage <= 1:
            raise UserError("tokenizer.character_coverage must lie in (0, 1] "
                            f"(got {self.tokenizer.character_coverage})")
        if self.train.schedule == "plateau" and not 0 < self.train.plateau_factor < 1:
            raise UserError("train.plateau_factor must lie in (0, 1) "
                            f"(got {self.train.plateau_factor})")
        if self.tokenizer.sampling_nbest in (0, 1) or self.tokenizer.sampling_nbest < -1:
            raise UserError("tokenizer.sampling_nbest must be -1 (every segmentation) or at "
                            f"least 2 (got {self.tokenizer.sampling_nbest})")
        if self.model.arch == "transformer":  # (the GRU has one layer each side)
            for key in ("model.num_encoder_layers", "model.num_decoder_layers"):
                if self.get(key) < 1:
                    raise UserError(f"{key} must be at least 1 (got {self.get(key)})")
            if self.model.d_model % (2 * self.model.num_heads):
                raise UserError("model.d_model must be an even multiple of model.num_heads "
                                f"(got {self.model.d_model} and {self.model.num_heads})")
            # a fine-tuned run's model is its parent's: finetune.adopt_parent checks that one
            if self.data.max_len > self.model.max_positions and not self.train.finetune_from:
                raise UserError(f"data.max_len {self.data.max_len} must not exceed "
                                f"model.max_positions {self.model.max_positions}")
            if self.model.alignment_heads > self.model.num_heads:
                raise UserError("model.alignment_heads must not exceed model.num_heads "
                                f"({self.model.alignment_heads} > {self.model.num_heads})")
        elif self.model.alignment_heads:
            raise UserError("model.alignment_heads: the GRU's attention has one head; leave it 0")
        if self.train.attention_plots > MAX_ATTENTION_PLOTS:
            raise UserError(f"train.attention_plots must be at most {MAX_ATTENTION_PLOTS} "
                            f"(got {self.train.attention_plots}): each picture takes time "
                            "at every validation")
        if self.train.attention_plots and self.model.arch == "gru" \
                and self.model.attention == "none":
            raise UserError("train.attention_plots: this GRU has no attention "
                            "(model.attention = none), so there is no map to draw")
        if not 0.0 <= self.train.teacher_forcing_ratio <= 1.0:
            raise UserError("train.teacher_forcing_ratio must lie in [0, 1]")
        if self.train.teacher_forcing_ratio < 1.0 and self.model.arch != "gru":
            raise UserError("train.teacher_forcing_ratio below 1 needs model.arch gru")
        if self.guided() and self.model.arch == "gru" and self.model.attention == "none":
            raise UserError("data.alignments: guided alignment teaches attention, and this GRU "
                            "has none (model.attention = none)")
        if self.data.alignments:
            check_alignment_files(self.data.alignments, self.data.tgt_lang)
        if self.train.schedule == "linear" and not any(self.get(key) for key in LIMITS):
            raise UserError("train.schedule linear decays to 0 at a limit: set train.max_steps, "
                            "train.max_time or train.epochs")

    def guided(self) -> bool:
        """Whether training teaches attention word alignments (guided_alignment.py): given
        them, unless train.alignment_weight is 0."""
        return bool(self.data.alignments) and self.train.alignment_weight > 0

    def get(self, key: str) -> Any:
        """The value of a dotted key such as 'model.d_model'."""
        section, _, name = key.partition(".")
        return getattr(getattr(self, section), name)


# The checks of Config, by key.
CHOICES = {"model.arch": ARCHS, "model.attention": ATTENTION_SCORES,
           "tokenizer.model_type": TOKENIZER_TYPES, "train.schedule": SCHEDULES,
           "train.device": DEVICES, "train.precision": PRECISIONS,
           "train.best_metric": BEST_METRICS}
AT_LEAST_ONE = ("model.d_model", "model.num_heads", "model.d_ff", "model.max_positions",
                "tokenizer.vocab_size", "data.max_len", "train.batch_tokens",
                "train.validate_every", "train.max_bad_steps", "train.accum")
NOT_NEGATIVE = ("train.max_steps", "train.max_time", "train.epochs", "train.patience",
                "train.warmup_steps", "train.weight_decay", "train.clip_norm",
                "train.keep_last", "train.plateau_patience",
                "train.attention_plots", "train.alignment_weight", "model.alignment_heads")
# train.adam_eps: at 0, a weight whose gradients are all 0 is divided by 0
POSITIVE = ("train.lr", "train.adam_eps")
PROBABILITIES = ("model.dropout", "train.label_smoothing", "train.ema_decay",  # in [0, 1)
                 "tokenizer.sampling_alpha", "train.adam_beta1", "train.adam_beta2")
# Sizes of tensors and of the tokenizer: at most MAX_INT (a run's config.json or a TOML file
# may hold 1e12, and torch would try to allocate it)
SIZES = ("model.d_model", "model.num_heads", "model.num_encoder_layers",
         "model.num_decoder_layers", "model.d_ff", "model.max_positions", "tokenizer.vocab_size",
         "data.max_len", "train.batch_tokens")
MAX_INT = 2**31 - 1
MAX_BEAM = 1000
MAX_ATTENTION_PLOTS = 100  # train.attention_plots: pictures drawn at each validation
LIMITS = ("train.max_steps", "train.max_time", "train.epochs")  # training stops at the first

RUNS_DIR = "runs"  # where new runs go, and where `translate` looks for the latest

# The Multi30k Transformer presets share a warmup and validation interval sized for a CPU
# budget of tens of minutes, a peak rate of 2e-3 and an EMA of the weights (chosen on val in
# 20-minute runs: bench/RESULTS.md).
MULTI30K_TRANSFORMER = {"train.lr": 2e-3, "train.warmup_steps": 400, "train.validate_every": 250,
                        "train.ema_decay": 0.999}

# Presets are named overrides of the defaults above. The sample presets train in a few
# minutes on two CPU cores.
PRESETS: dict[str, dict[str, Any]] = {
    "transformer": {
        "model.arch": "transformer", "model.d_model": 128, "model.num_heads": 4,
        "model.num_encoder_layers": 2, "model.num_decoder_layers": 2, "model.d_ff": 512,
        "tokenizer.vocab_size": 2000, "train.batch_tokens": 2048, "train.lr": 1e-3,
        "train.warmup_steps": 200, "train.max_steps": 1000, "train.validate_every": 250,
    },
    "gru": {
        "model.arch": "gru", "model.d_model": 128, "model.attention": "additive",
        "tokenizer.vocab_size": 2000, "train.batch_tokens": 2048, "train.lr": 1e-3,
        "train.schedule": "constant", "train.max_steps": 1000, "train.validate_every": 250,
    },
    # Multi30k: the reference Transformer of bench/peers (the defaults above, 7.6M parameters)
    # with the settings above, and dropout 0.2 for the 25-50 epochs that 60 minutes hold on two
    # CPU cores (chosen on val in 60-minute runs: bench/RESULTS.md).
    "multi30k-transformer": {**MULTI30K_TRANSFORMER, "model.dropout": 0.2,
                             "train.max_time": 3600.0},
    # The same for 20 minutes: in their first 20 minutes, dropout 0.1 validates higher, and so
    # does a decoupled weight decay of 0.3 (over 60 minutes it ties on val: bench/RESULTS.md).
    "multi30k-transformer-20m": {**MULTI30K_TRANSFORMER, "model.dropout": 0.1,
                                 "train.weight_decay": 0.3, "train.max_time": 1200.0},
    # Multi30k: the reference GRU of bench/peers (bidirectional encoder, Bahdanau attention
    # with input feeding, 256 wide, about 4M parameters) with more dropout for the 23-46 epochs
    # that fit in 60 minutes on two CPU cores, a rate of 2e-3 halved when validation BLEU
    # stalls, and an EMA of the weights (both chosen on val in 20-minute runs: bench/RESULTS.md).
    "multi30k-gru": {
        "model.arch": "gru", "model.attention": "additive", "model.dropout": 0.3,
        "train.lr": 2e-3, "train.schedule": "plateau", "train.validate_every": 300,
        "train.ema_decay": 0.999, "train.max_time": 3600.0,
    },
    # Transformer base and big (Vaswani et al., 2017) for WMT-size corpora on GPUs: batches of
    # 25k target-side tokens come from train.batch_tokens x train.accum x the number of GPUs.
    "base": {
        "model.d_model": 512, "model.num_heads": 8, "model.num_encoder_layers": 6,
        "model.num_decoder_layers": 6, "model.d_ff": 2048, "tokenizer.vocab_size": 32000,
        "tokenizer.model_type": "bpe", "train.batch_tokens": 12500, "train.accum": 2,
        "train.lr": 7e-4, "train.warmup_steps": 4000, "train.validate_every": 2000,
    },
    "big": {
        "model.d_model": 1024, "model.num_heads": 16, "model.num_encoder_layers": 6,
        "model.num_decoder_layers": 6, "model.d_ff": 4096, "model.dropout": 0.3,
        "tokenizer.vocab_size": 32000, "tokenizer.model_type": "bpe",
        "train.batch_tokens": 12500, "train.accum": 2, "train.lr": 5e-4,
        "train.warmup_steps": 4000, "train.validate_every": 2000,
    },
}
DEFAULT_PRESET = "transformer"


def check_alignment_files(alignments: str, tgt_lang: str) -> None:
    """Word alignments (data.alignments) name a file for each target language."""
    files, languages = len(alignments.split(",")), tgt_lang.split(",")
    if files != len(languages):
        raise UserError(f"data.alignments: {files} file{'s' * (files != 1)} for "
                        f"{len(languages)} target language{'s' * (len(languages) != 1)} "
                        f"({', '.join(languages)}); give one for each, in data.tgt_lang's "
                        "order, separated by commas")


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise UserError(f"{name} must be one of {', '.join(choices)} (got {value!r})")


def valid_keys() -> list[str]:
    return [f"{s}.{f.name}" for s, cls in _section_classes().items() for f in fields(cls)]


def _section_classes() -> dict[str, type]:
    return {"data": DataConfig, "tokenizer": TokenizerConfig, "model": ModelConfig,
            "train": TrainConfig}


def _coerce(key: str, value: Any, kind: type) -> Any:
    """Turn a TOML value or a command-line string into the field's type."""
    try:
        if kind is not bool and isinstance(value, bool):  # TOML's true for a number: 1?
            raise ValueError(value)
        if kind is str and not isinstance(value, str):  # a list or a number for a name
            raise ValueError(value)
        if kind is bool:
            if isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(value)
                return value.lower() in ("true", "1", "yes")
            if value not in (True, False):  # True, False, 1 or 0; not 5 or 0.5
                raise ValueError(value)
            return bool(value)
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        return kind(value)
    except (TypeError, ValueError, OverflowError):
        raise UserError(f"{key}: expected {kind.__name__}, got {value!r}") from None


def apply_overrides(config: Config, overrides: dict[str, Any]) -> Config:
    """Return a copy of `config` with dotted `section.key` overrides applied and checked."""
    classes = _section_classes()
    changes: dict[str, dict[str, Any]] = {}
    for key, value in overrides.items():
        section, _, name = key.partition(".")
        cls = classes.get(section)
        field_types = {f.name: f.type for f in fields(cls)} if cls else {}
        if cls and not name:
            raise UserError(f"{key!r} is a section, not a setting: name one of its "
                            f"settings, such as {key}.{next(iter(field_types))}")
        if name not in field_types:
            raise UserError(f"unknown setting {key!r}; valid keys: {', '.join(valid_keys())}")
        kind = {"str": str, "int": int, "float": float, "bool": bool}[field_types[name]]
        if key == "train.max_time" and isinstance(value, str):
            value = parse_duration(value)
        changes.setdefault(section, {})[name] = _coerce(key, value, kind)
    parts = {s: dataclasses.replace(getattr(config, s), **c) for s, c in changes.items()}
    return dataclasses.replace(config, **parts)


def flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"model": {"arch": "gru"}} -> {"model.arch": "gru"}."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def load_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:  # less the byte-order mark some editors open a file with
            return flatten(tomllib.loads(f.read().removeprefix(b"\xef\xbb\xbf").decode()))
    except FileNotFoundError:
        raise UserError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: invalid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: invalid UTF-8 at byte {e.start}") from None


def parse_set(items: list[str]) -> dict[str, Any]:
    """Parse repeated `--set section.key=value` strings."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set {item!r}: expected section.key=value")
        overrides[key.strip()] = value.strip()
    return overrides


def preset(name: str) -> Config:
    if name not in PRESETS:
        raise UserError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
    return apply_overrides(Config(), PRESETS[name])


def command_line_overrides(settings: list[str] | None,
                           options: dict[str, Any] | None = None) -> dict[str, Any]:
    """`--set` strings, then the command's own options (None: not given), as one dict.

    A limit given as an option (train.max_steps, max_time, epochs) replaces every limit that
    came before it: `--max-steps 5` on a preset with a time budget trains 5 steps. A `--set`
    value that an option replaces is still checked (on the defaults): a typo is an error."""
    given = {key: value for key, value in (options or {}).items() if value is not None}
    if any(key in given for key in LIMITS):
        given = {**dict.fromkeys(LIMITS, 0), **given}
    overrides = parse_set(settings or [])
    for key in overrides.keys() & given.keys():
        apply_overrides(Config(), {key: overrides[key]})
    return {**overrides, **given}


# What a resumed run may change. train.keep_last only says which files stay; train.ema_decay
# is fixed, since the average of the steps so far depends on it. data.data_dir: for a corpus
# moved elsewhere (resuming exactly needs the same files there).
RESUMABLE = (*LIMITS, "data.data_dir", "train.device", "train.precision", "train.accum",
             "train.compile", "train.validate_every", "train.patience", "train.keep_last",
             "train.tensorboard", "train.attention_plots")


def resume_config(config: Config, overrides: dict[str, Any]) -> Config:
    """A stopped run's `config` with `overrides` for the rest of the run. Only RESUMABLE
    settings may change; others may be given again, but with the run's own values."""
    overrides = absolute_paths(overrides)  # as config.json holds them
    resumed = apply_overrides(config, overrides)
    for key in overrides:
        if key not in RESUMABLE and resumed.get(key) != config.get(key):
            raise UserError(f"--resume: {key} is fixed by the run ({config.get(key)!r}); a "
                            f"resumed run may change only {', '.join(RESUMABLE)}")
    return resumed


def resolve_config(preset_name: str | None = None, config_file: Path | None = None,
                   settings: list[str] | None = None,
                   options: dict[str, Any] | None = None) -> Config:
    """The configuration of a new run. Later sources win: the preset (default: the one named
    after the model.arch that wins below, else DEFAULT_PRESET), then the TOML file, then
    `--set`, then the options. Relative paths are made absolute (with_absolute_paths)."""
    from_file = load_toml(config_file) if config_file is not None else {}
    given = command_line_overrides(settings, options)
    arch = given.get("model.arch", from_file.get("model.arch"))
    if preset_name is None:
        preset_name = arch if arch in ARCHS else DEFAULT_PRESET  # else apply_overrides says
    config = preset(preset_name)
    if config_file is not None:
        with in_file(config_file):
            config = apply_overrides(config, from_file)
    config = apply_overrides(config, given)
    if "model.attention" in given and config.model.arch == "transformer":  # else unread
        raise UserError("--set model.attention: chooses the GRU's attention score; a "
                        "Transformer's attention is multi-head scaled dot-product: drop it, "
                        "or train a GRU (--arch gru)")
    return with_absolute_paths(config)


PATHS = ("data.data_dir", "data.alignments", "train.finetune_from")


def absolute_paths(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` with the relative paths of PATHS made absolute (data.alignments: a file for
    each target language, separated by commas)."""
    def absolute(key: str, value: str) -> str:
        paths = value.split(",") if key == "data.alignments" else [value]
        return ",".join(str(Path(path).resolve()) for path in paths)

    return {key: absolute(key, str(value)) if key in PATHS and value else value
            for key, value in settings.items()}


def with_absolute_paths(config: Config) -> Config:
    """`config` with its relative paths made absolute, so that the run's config.json still
    finds them from elsewhere."""
    return apply_overrides(config, absolute_paths({key: config.get(key) for key in PATHS}))


TRANSFORMER_ONLY = ("model.num_heads", "model.num_encoder_layers", "model.num_decoder_layers",
                    "model.d_ff", "model.norm_first")


def unread_settings(config: Config, given: dict[str, Any]) -> list[tuple[str, str]]:
    """The settings of `given` that `config` does not read, each with why: a GRU's
    Transformer settings, which a settings list shared by both families may hold (a
    Transformer's model.attention is an error instead: resolve_config), a warmup where the
    schedule has none, and frozen embeddings where none were given."""
    t, m = config.train, config.model
    reasons = {
        "a GRU does not read it (Transformer only)":
            lambda key: m.arch == "gru" and key in TRANSFORMER_ONLY,
        f"the {t.schedule} schedule has no warmup (inverse_sqrt and linear have)":
            lambda key: key == "train.warmup_steps" and t.schedule in ("plateau", "constant"),
        "it keeps fixed the embeddings that pretrained vectors (model.src_embeddings, "
        "model.tgt_embeddings) or a parent run (train.finetune_from) start; none here":
            lambda key: key == "model.freeze_embeddings" and m.freeze_embeddings and not (
                m.src_embeddings or m.tgt_embeddings or t.finetune_from),
    }
    return [(key, why) for key in given for why, unread in reasons.items() if unread(key)]


def to_dict(config: Config) -> dict[str, Any]:
    return dataclasses.asdict(config)


def to_toml(config: Config) -> str:
    """Every setting of `config` as a TOML file, which --config reads back to the same
    settings (`nmt train --dump-config`)."""
    lines = []
    for section, values in to_dict(config).items():
        lines += [f"[{section}]", *(f"{name} = {toml_value(value)}"
                                    for name, value in values.items()), ""]
    return "\n".join(lines)


def toml_value(value: bool | int | float | str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):  # a basic string
        return '"' + "".join(map(toml_character, value)) + '"'
    return repr(value)  # an int, or a finite float: 0.0005, 1e-09


def toml_character(c: str) -> str:
    """A character of a TOML basic string: quotes and backslashes escaped, and the control
    characters, which it may not hold as they are."""
    if c in '"\\':
        return "\\" + c
    return f"\\u{ord(c):04x}" if c < " " or c == "\x7f" else c


def from_dict(table: dict[str, Any]) -> Config:
    return apply_overrides(Config(), flatten(table))


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")


def parse_duration(text: str) -> float:
    """'90' or '90s' -> 90.0, '20m' -> 1200.0, '1h30m' -> 5400.0 (seconds)."""
    text = text.strip().lower()
    scale = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
    pos, total = 0, 0.0
    while pos < len(text):
        match = _DURATION.match(text, pos)
        if not match:
            raise UserError(f"invalid duration {text!r}; use e.g. 90s, 20m or 1h30m")
        if pos and not match.group(2):  # "1h30": 30 seconds or 30 minutes?
            raise UserError(f"invalid duration {text!r}: {match.group(1)} has no unit; "
                            "use e.g. 1h30m")
        total += float(match.group(1)) * scale[match.group(2)]
        pos = match.end()
    if not text:
        raise UserError("empty duration; use e.g. 90s, 20m or 1h30m")
    return total
