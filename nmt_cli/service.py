"""What `nmt serve` does, apart from the web framework: the engine that decodes, the checks on
a request, and the JSON of the answers (its settings are config.ServeConfig).

Nothing here imports FastAPI or uvicorn (serve.py does), so the checks can be tested without
the `serve` extra. A request is hostile until checked: its size is bounded before it is
parsed, every field is typed and ranged, unknown fields are refused, and no request ever names
a file the server reads.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checkpoint import BEST_WEIGHTS, CONFIG_FILE, METRICS_FILE, metrics_records, read_config
from .config import DecodeConfig, ServeConfig, check_engine
from .constrained import check_constrained
from .errors import UserError
from .events import finite
from .glossary import Glossary, read_glossary
from .languages import checked_sources, chosen_tag
from .markup import Marked, parsed
from .special_tokens import UNK_ID
from .translate import Split, Translation

REQUEST_FIELDS = ("text", "beam", "nbest", "tgt_lang", "prefix", "alignment", "markup",
                  "copy_unknown", "glossary", "glossary_inflect", "split_sentences")
MAX_TERMS = 1000  # entries of a request's "glossary"
MAX_TERM_CHARACTERS = 20_000  # the characters of all its source terms


def check_settings(settings: ServeConfig, decode: DecodeConfig) -> None:
    if decode.beam > settings.max_beam:
        raise UserError(f"--beam {decode.beam} exceeds --max-beam {settings.max_beam}")
    check_engine(settings.engine, decode)
    if decode.glossary:
        check_constrained(decode)


class ApiError(Exception):
    """A request the server refuses: an HTTP status and a one-line reason (and headers, such
    as a 503's Retry-After)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


@dataclass(frozen=True)
class Query:
    """A checked POST /translate request."""

    lines: list[str]
    config: DecodeConfig  # the server's settings with the request's beam
    nbest: int
    prefixes: list[str] | None = None  # a target prefix per line ("" for none)
    alignment: bool = False  # each translation's word alignment to its line (alignment.py)
    marked: list[Marked] | None = None  # with "markup": true, the lines taken apart (markup.py)
    copy_unknown: bool = False  # words the vocabulary cannot spell copied (alignment.py)
    terms: list[list[str]] | None = None  # the glossary's target terms of each of sentences()
    split: Split | None = None  # with "split_sentences", texts() cut into sentences

    def texts(self) -> list[str]:
        """The lines, or the text of the marked ones."""
        return self.lines if self.marked is None else [line.text for line in self.marked]

    def sentences(self) -> list[str]:
        """What is translated: texts(), or their sentences when split."""
        return self.texts() if self.split is None else self.split.sentences()


def parse_query(body: bytes, settings: ServeConfig, decode: DecodeConfig,
                languages: list[str] | None = None, glossary: Glossary | None = None,
                writable: Callable[[str], bool] | None = None) -> Query:
    """Check a POST /translate body: 400 when it is not JSON, 422 when its fields are wrong
    (a "tgt_lang" not among the model's `languages` too), 413 when it holds more lines, or
    longer ones, than the limits allow. "prefix" is text every translation opens with: a
    string for every line, or a list of one per line ("" for none); "alignment": true asks
    for each translation's word alignment; "markup": true reads inline tags in the lines
    and puts them back into the translations; "copy_unknown": true copies the words the
    vocabulary cannot spell into them; "glossary" maps source terms to the target terms
    their translations must use, over the server's (decode.glossary; `glossary`: that file
    read already); "glossary_inflect" (default: the server's) lets the terms' last words take
    an ending; "split_sentences" (default: the server's) translates each sentence of a line on
    its own. The sentences and the terms found in each go with the query; its
    settings then name no glossary and no splitting, which the server does; `writable`:
    Engine.writable, for terms found in another case (Glossary.targets)."""
    if glossary is None and decode.glossary:
        glossary = read_glossary(decode.glossary)
    request = json_object(body)
    unknown = sorted(set(request) - set(REQUEST_FIELDS))
    if unknown:
        raise ApiError(422, f"unknown field {unknown[0][:40]!r}; the fields are "
                            f"{', '.join(REQUEST_FIELDS)}")
    lines = text_lines(request.get("text"), settings)
    prefixes = prefix_lines(request.get("prefix"), lines, settings)
    beam = whole_number(request, "beam", decode.beam, settings.max_beam, "--max-beam")
    glossary = request_glossary(request.get("glossary"), glossary, settings)
    if glossary is not None and decode.sampling:
        raise ApiError(422, '"glossary": this server samples its translations (--sampling), '
                            "and a draw places no terms")
    if glossary is not None and beam < 2:
        raise ApiError(422, '"beam": glossary terms are placed by beam search; ask for 2 or '
                            "more")
    nbest = (whole_number(request, "nbest", 1, settings.max_beam, "--max-beam draws")
             if decode.sampling else whole_number(request, "nbest", 1, beam, "the beam"))
    flags = {flag: request.get(flag, False) for flag in ("alignment", "markup", "copy_unknown")}
    for flag in ("glossary_inflect", "split_sentences"):  # the server's by default
        flags[flag] = request.get(flag, getattr(decode, flag))
    for flag, value in flags.items():
        if not isinstance(value, bool):
            raise ApiError(422, f'"{flag}" must be true or false')
    tgt_lang = request.get("tgt_lang", decode.tgt_lang)
    if not isinstance(tgt_lang, str) or len(tgt_lang) > 40:
        raise ApiError(422, '"tgt_lang" must be a language code, e.g. "de"')
    try:
        tag = chosen_tag(languages or [], tgt_lang, '"tgt_lang"', required=False)
    except UserError as e:
        raise ApiError(422, str(e)) from None
    try:  # each line may open with a language tag of its own
        list(checked_sources(lines, tag, languages or [], "line ", '"tgt_lang"'))
        marked = [line for _, line in parsed(lines, "line ")] if flags["markup"] else None
    except UserError as e:
        raise ApiError(422, str(e)) from None
    texts = lines if marked is None else [line.text for line in marked]
    split = None
    if flags["split_sentences"]:
        if nbest > 1:
            raise ApiError(422, '"nbest": with "split_sentences" each sentence is searched on '
                                "its own, and a line gets one translation; ask for 1")
        if prefixes and any(prefixes):
            raise ApiError(422, '"prefix": a target prefix opens the translation of a whole '
                                'line; drop "split_sentences"')
        split = Split.of(texts, len(languages or []) > 1)
        texts = split.sentences()
    return Query(lines, dataclasses.replace(decode, beam=beam, tgt_lang=tgt_lang, glossary="",
                                            glossary_inflect=flags["glossary_inflect"],
                                            split_sentences=False),
                 nbest, None if split else prefixes, flags["alignment"], marked,
                 flags["copy_unknown"], None if glossary is None else [
                     glossary.targets(text, decode.glossary_ignore_case, writable)
                     for text in texts],
                 split)


def request_glossary(value: Any, server: Glossary | None,
                     settings: ServeConfig) -> Glossary | None:
    """The glossary of a request: the server's, with the request's "glossary" entries
    added (one for a source term the server's has replaces it); None when neither has one.
    An empty object adds nothing."""
    if value is None or value == {}:
        return server
    if settings.engine == "ctranslate2":
        raise ApiError(422, '"glossary": the ctranslate2 engine cannot place terms')
    if not isinstance(value, dict) or not all(
            isinstance(term, str) and term.strip() for pair in value.items() for term in pair):
        raise ApiError(422, '"glossary" must map source terms to target terms, e.g. '
                            '{"bike": "Fahrrad"}')
    if any(c in term for pair in value.items() for term in pair for c in "\t\r\n"):
        raise ApiError(422, '"glossary": a term holds a tab or a line break, which no term '
                            "of a glossary file can")
    if len(value) > MAX_TERMS:
        raise ApiError(413, f'"glossary" has {len(value):,} terms; at most {MAX_TERMS:,}')
    check_lengths([term for pair in value.items() for term in pair], settings, "glossary term")
    searched = sum(map(len, value))  # each line is searched for every source term
    if searched > MAX_TERM_CHARACTERS:
        raise ApiError(413, f'"glossary" has {searched:,} characters of source terms; at most '
                            f"{MAX_TERM_CHARACTERS:,}")
    own = {source.strip(): target.strip() for source, target in value.items()}
    return Glossary(own, under=server)  # the server's, compiled once, matched apart


def json_object(body: bytes) -> dict[str, Any]:
    try:
        request = json.loads(body)
    except (ValueError, RecursionError) as e:  # bad UTF-8 is a ValueError too
        reason = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise ApiError(400, f"the body is not valid JSON ({reason})") from None
    if not isinstance(request, dict):
        raise ApiError(422, 'the body must be a JSON object, e.g. {"text": "Hello."}')
    return request


def text_lines(text: Any, settings: ServeConfig) -> list[str]:
    """The lines of the "text" field (a string is one line), within the limits."""
    if isinstance(text, str):
        text = [text]
    if not isinstance(text, list) or not all(isinstance(line, str) for line in text):
        raise ApiError(422, '"text" must be a string or a list of strings')
    if not text:
        raise ApiError(422, '"text" is an empty list: give at least one line')
    if len(text) > settings.max_lines:
        raise ApiError(413, f'"text" has {len(text):,} lines; at most {settings.max_lines:,} '
                            "per request")
    check_lengths(text, settings, "line")
    return text


def prefix_lines(prefix: Any, lines: list[str], settings: ServeConfig) -> list[str] | None:
    """The "prefix" field as a prefix per line: a string for each, or a list as long as
    "text"; None when absent."""
    if prefix is None:
        return None
    if isinstance(prefix, str):
        prefix = [prefix] * len(lines)
    if not isinstance(prefix, list) or not all(isinstance(line, str) for line in prefix):
        raise ApiError(422, '"prefix" must be a string or a list of strings')
    if len(prefix) != len(lines):
        raise ApiError(422, f'"prefix" has {len(prefix):,} lines and "text" {len(lines):,}; '
                            "give one prefix per line (\"\" for none)")
    check_lengths(prefix, settings, "prefix")
    return prefix


def check_lengths(lines: list[str], settings: ServeConfig, name: str) -> None:
    for number, line in enumerate(lines, 1):
        if len(line) > settings.max_chars:
            raise ApiError(413, f"{name} {number} has {len(line):,} characters; at most "
                                f"{settings.max_chars:,} per line")
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate, from a "\ud800" escape
            raise ApiError(422, f"{name} {number} is not valid Unicode") from None


def check_token_lengths(lengths: list[int], longest: int, name: str, most: str) -> None:
    """413 for a line (a sentence, a prefix) of more tokens than the model reads (or writes),
    which decoding would cut: the client is told, not sent half a translation."""
    for number, length in enumerate(lengths, 1):
        if length > longest:
            raise ApiError(413, f"{name} {number} has {length:,} tokens; {most} {longest:,}")


def check_writable(texts: list[str], ids: list[list[int]], name: str) -> None:
    """422 for a target prefix or term (of target `ids`) the model's vocabulary cannot spell,
    before decoding: in a batch with other requests it would fail the batch, and each request
    would then be decoded again on its own (batching.py)."""
    for text, own in zip(texts, ids):
        if text.strip() and UNK_ID in own:
            raise ApiError(422, f"the target {name} {text[:40]!r} has a character the model's "
                                "vocabulary lacks, so it cannot be written")


def check_term_tokens(lengths: list[int], settings: ServeConfig, name: str) -> None:
    """413 for a line (a sentence) whose glossary terms, the request's and the server's, hold
    more target tokens than --max-term-tokens: each must be placed by constrained search,
    which takes longer the more there are."""
    for number, length in enumerate(lengths, 1):
        if length > settings.max_term_tokens:
            raise ApiError(413, f"{name} {number}: its glossary terms take {length:,} target "
                                f"tokens; at most {settings.max_term_tokens:,} a line "
                                "(nmt serve --max-term-tokens)")


def whole_number(request: dict[str, Any], name: str, default: int, most: int,
                 limit: str) -> int:
    value = request.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ApiError(422, f'"{name}" must be a whole number')
    if not 1 <= value <= most:
        raise ApiError(422, f'"{name}" must lie between 1 and {most} ({limit}); got {value}')
    return value


def translations_json(found: list[list[Translation]], nbest: int,
                      alignment: bool = False) -> dict[str, Any]:
    """The answer: each line's best translation; with nbest > 1 also its n-best list; with
    `alignment`, each translation's word alignment as [source word, target word] pairs."""
    out = []
    for hypotheses in found:
        line = hypothesis_json(hypotheses[0], alignment)
        if nbest > 1:
            line["nbest"] = [hypothesis_json(h, alignment) for h in hypotheses]
        out.append(line)
    return {"translations": out}


def hypothesis_json(hypothesis: Translation, alignment: bool = False) -> dict[str, Any]:
    out = {"text": hypothesis.text, "score": finite(hypothesis.score),
           "log_prob": finite(hypothesis.log_prob)}
    if alignment:
        out["alignment"] = [list(link) for link in hypothesis.alignment or []]
    return out


def run_info(source: Path, settings: ServeConfig, decode: DecodeConfig,
             ensemble: list[Path], languages: list[str], longest: int,
             glossary: Glossary | None = None) -> dict[str, Any]:
    """What GET /info tells: the run (by name only: no path of the server's leaves it) and
    those of an ensemble decoding beside it, its languages and model, the validation BLEU of
    the weights served (the first run's) and the metric that chose them, the terms of the
    server's glossary (a count; 0 without one), and what a request may ask for (`longest`:
    the source tokens a line may have). `source` is the run the weights were trained in (an
    export's run, which may not be at hand: its fields are then null). The parameters are
    those of every model that decodes."""
    config = read_config(source)[0] if (source / CONFIG_FILE).is_file() else None
    bleu = best_val_bleu(source)  # None without a log (an averaged run has none)
    return {
        "run": source.resolve().name, "ensemble": [other.resolve().name for other in ensemble],
        "engine": settings.engine,
        "source_language": config.data.src_lang if config else None,
        "target_language": config.data.tgt_lang if config else None,
        "target_languages": languages,  # what "tgt_lang" may name
        "architecture": config.model.arch if config else None,
        "parameters": sum(map(parameter_count, [source, *ensemble])) if config else None,
        "best_metric": config.train.best_metric if config and bleu is not None else None,
        "best_val_bleu": bleu,
        "glossary_terms": len(glossary.terms) if glossary is not None else 0,
        "defaults": {"beam": decode.beam, "nbest": 1, "tgt_lang": decode.tgt_lang,
                     "glossary_inflect": decode.glossary_inflect,
                     "split_sentences": decode.split_sentences},
        "limits": {"lines": settings.max_lines, "characters_per_line": settings.max_chars,
                   "tokens_per_line": longest, "beam": settings.max_beam,
                   "glossary_terms": MAX_TERMS, "term_tokens_per_line": settings.max_term_tokens,
                   "glossary_source_characters": MAX_TERM_CHARACTERS,
                   "queued_lines": settings.max_queued_lines},
    }


def parameter_count(run_dir: Path) -> int:
    """The values in the run's best weights (tied ones once), whatever engine decodes them."""
    from safetensors import safe_open

    with safe_open(run_dir / BEST_WEIGHTS, framework="pt") as weights:
        return sum(math.prod(weights.get_slice(name).get_shape()) for name in weights.keys())


def best_val_bleu(run_dir: Path) -> float | None:
    """The validation BLEU of the weights served: that of the latest validation marked best
    in the run's metrics.jsonl (by the run's train.best_metric); None before any."""
    path = run_dir / METRICS_FILE
    records = [record for _, record in metrics_records(path)] if path.is_file() else []
    scores = [r["val_bleu"] for r in records if r.get("kind") == "validate"
              and r.get("best") is True and isinstance(r.get("val_bleu"), int | float)]
    return scores[-1] if scores else None
