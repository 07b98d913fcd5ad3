"""Comparing systems on one test set: BLEU and chrF with 95% confidence intervals, and the
p-value of each system against the first, through sacreBLEU's own significance tests
(`sacrebleu.significance.PairedTest`): paired bootstrap resampling (Koehn, 2004) and
approximate randomization (Riezler and Maxwell, 2005).

A p-value estimates how often a difference at least as large as the observed one would
arise if both systems were the same. sacreBLEU counts only strictly larger differences, so
a system that scores alike to the first on every sentence would get 1/(samples + 1), the
smallest p-value there is; here it gets 1.0, the test's maximum, since no resampling can tell
the two apart. Alike means the same statistics a metric counts (n-gram matches and lengths),
not the same text: translations that differ only in spacing (a double space, a space before
a full stop) are alike for BLEU, whose tokenizer splits punctuation off, and for chrF, which
ignores whitespace.

Approximate randomization here counts the trials whose difference reaches the observed one,
as the test is defined, where sacreBLEU counts those that exceed it. The two differ where
trials tie with the observation, and ties are the rule when the systems differ in few
sentences: where they differ in one, every trial's difference is the observed one (swapping
that sentence only turns its sign), so the test cannot tell them from the same system and
gives p = 1, where sacreBLEU gives 1/(trials + 1). Bootstrap p-values are sacreBLEU's.

sacreBLEU seeds its resampling from the SACREBLEU_SEED environment variable (default 12345)
when a PairedTest is built; `compare` sets it for the duration of each test, so the same
seed gives the same intervals and p-values.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sacrebleu import significance
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from .config import COMPARE_METHODS, COMPARE_SEED, DecodeConfig
from .data import read_lines
from .errors import UserError
from .evaluation import bleu
from .languages import checked_sources
from .translate import Translator

TEST_TYPES = {"bootstrap": "bs", "ar": "ar"}  # sacreBLEU's names


@dataclass(frozen=True)
class MetricResult:
    metric: str  # BLEU | chrF2
    score: float  # on the whole test set
    mean: float  # of the bootstrap resamples
    ci95: float  # half-width of the 95% confidence interval around the mean
    p_bootstrap: float | None  # against the first system; None for it, or when not run
    p_ar: float | None  # likewise, by approximate randomization


@dataclass(frozen=True)
class SystemResult:
    name: str
    metrics: list[MetricResult]


@dataclass(frozen=True)
class Comparison:
    reference: str
    sentences: int
    method: str  # bootstrap | ar | both
    seed: int
    signatures: dict[str, dict[str, str]]  # test (bootstrap, ar) -> metric -> signature
    systems: list[SystemResult]


def load_systems(paths: list[Path], ref: Path, src: Path | None = None,
                 decode: DecodeConfig | None = None,
                 quantize: str = "none") -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The reference lines and (name, translations) of each system: a file of translations,
    or a run directory that translates `src` with `decode`. Every system must have as many
    lines as the reference."""
    references = read_lines(ref)
    sources = read_lines(src) if src is not None else None
    if sources is not None and len(sources) != len(references):
        raise UserError(f"{src} has {len(sources)} lines but the reference {ref} "
                        f"has {len(references)}")
    systems = []
    for path in paths:
        if Path(path).is_dir():
            if sources is None:
                raise UserError(f"{path} is a directory: a run directory needs --src to "
                                "translate")
            decode = decode or DecodeConfig()
            translator = Translator.from_run(path, decode.device, quantize=quantize)
            # every line into the language the reference is in, as eval checks it
            tag = translator.language_tag(decode, required=True)
            list(checked_sources(sources, tag, translator.target_languages, f"{src}:",
                                 strict=True))
            lines = translator.translate(sources, decode)
        else:
            lines = read_lines(path)
        if len(lines) != len(references):
            raise UserError(f"{path} has {len(lines)} lines but the reference {ref} "
                            f"has {len(references)}")
        systems.append((str(path), lines))
    return references, systems


def compare(systems: list[tuple[str, list[str]]], references: list[str],
            reference_name: str = "reference", method: str = "both", samples: int = 0,
            seed: int = COMPARE_SEED, tokenize: str = "13a") -> Comparison:
    """Score each (name, translations) system and test it against the first. `samples`:
    bootstrap resamples and randomization trials (0: sacreBLEU's 1000 and 10000);
    `tokenize`: BLEU's tokenizer."""
    if method not in COMPARE_METHODS:
        raise UserError(f"--method must be one of {', '.join(COMPARE_METHODS)} "
                        f"(got {method!r})")
    if len(systems) < 2:
        raise UserError("compare needs at least two systems")
    if samples < 0:
        raise UserError(f"--samples must not be negative (got {samples})")
    if seed < 1:  # sacreBLEU leaves the tests unseeded for seed 0
        raise UserError(f"--seed must be at least 1 (got {seed})")
    tests = ["bootstrap", "ar"] if method == "both" else [method]
    signatures, results = {}, {}
    for test in tests:
        with_ci = test == tests[0]  # "both": the intervals come from the bootstrap test
        signatures[test], results[test] = paired_test(systems, references, test, samples,
                                                      seed, with_ci, tokenize)
    names = list(next(iter(results.values())))  # sacreBLEU's: BLEU, chrF2
    alike = scored_alike(systems, references, names, tokenize)
    return Comparison(reference_name, len(references), method, seed, signatures,
                      [system_result(i, systems, results, alike[i])
                       for i in range(len(systems))])


def metrics(tokenize: str = "13a") -> dict[str, BLEU | CHRF]:
    return {"bleu": bleu(tokenize=tokenize), "chrf": CHRF()}


def scored_alike(systems: list[tuple[str, list[str]]], references: list[str],
                 names: list[str], tokenize: str = "13a") -> list[set[str]]:
    """For each system, the metrics (by `names`, in the order of metrics()) whose statistics
    of every sentence (the counts the significance tests resample) equal the first system's."""
    found: list[set[str]] = [set() for _ in systems]
    for name, metric in zip(names, metrics(tokenize).values()):
        # the statistics as sacreBLEU's PairedTest extracts them: a list, one per sentence
        first = metric._extract_corpus_statistics(systems[0][1], [references])
        for index, (_, lines) in enumerate(systems[1:], 1):
            if lines == systems[0][1] or metric._extract_corpus_statistics(
                    lines, [references]) == first:
                found[index].add(name)
    return found


def paired_test(systems: list[tuple[str, list[str]]], references: list[str], test: str,
                samples: int, seed: int, with_ci: bool, tokenize: str = "13a"
                ) -> tuple[dict[str, str], dict]:
    """Run one sacreBLEU PairedTest over BLEU and chrF: the signatures per metric, and per
    metric one sacrebleu.significance.Result per system (the first is the baseline)."""
    with sacrebleu_seed(seed), counting_ties() if test == "ar" else nullcontext():
        paired = PairedTest(systems, metrics(tokenize), [references], test_type=TEST_TYPES[test],
                            n_samples=samples, n_ar_confidence=samples if with_ci else -1)
        signatures, scores = paired()
    scores.pop("System")
    return {metric: signature.format() for metric, signature in signatures.items()}, scores


def system_result(index: int, systems: list[tuple[str, list[str]]], results: dict[str, dict],
                  alike: set[str]) -> SystemResult:
    """Gather one system's scores, interval and p-values from the tests that ran; `alike`:
    the metrics by which it scores every sentence as the first system does (p = 1)."""
    first = next(iter(results.values()))  # the test that estimated the intervals

    def p_value(test: str, metric: str) -> float | None:
        if index == 0 or test not in results:
            return None
        return 1.0 if metric in alike else float(results[test][metric][index].p_value)

    found = []
    for metric, per_system in first.items():
        result = per_system[index]
        found.append(MetricResult(metric, float(result.score), float(result.mean),
                                  float(result.ci), p_value("bootstrap", metric),
                                  p_value("ar", metric)))
    return SystemResult(systems[index][0], found)


TIE = 1e-9  # differences closer than this to the observed one reach it (rounding aside)


@contextmanager
def counting_ties() -> Iterator[None]:
    """sacreBLEU's p-value with the trials that tie with the observed difference counted
    (see the module docstring), for the paired tests run inside."""
    exceeding = significance._compute_p_value

    def p_value(differences: np.ndarray, observed: float) -> float:
        reached = int(np.sum(differences >= observed - TIE))
        return (reached + 1) / (len(differences) + 1)  # sacreBLEU's +1, to stay conservative

    significance._compute_p_value = p_value
    try:
        yield
    finally:
        significance._compute_p_value = exceeding


@contextmanager
def sacrebleu_seed(seed: int) -> Iterator[None]:
    """Set SACREBLEU_SEED, which sacreBLEU reads when a PairedTest is built, and restore it."""
    before = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        yield
    finally:
        if before is None:
            del os.environ["SACREBLEU_SEED"]
        else:
            os.environ["SACREBLEU_SEED"] = before
