"""Translation with a trained run: `Translator.from_run(path).translate(lines)`, and n-best
lists with scores, cross-attention and word alignments: `translate_nbest(lines, config,
nbest=5)`. Each line may come with a target prefix, text its translation must open with
(`prefixes=`; search.py).

`Engine` is what every decoder offers (PyTorch's search here, CTranslate2 in ct2.py): n-best
lists of `Translation`s for a list of lines, and streams of them. Both engines encode and
detokenize through the functions here, so a line reads the same pieces whichever decodes it."""

from __future__ import annotations

import dataclasses
import itertools
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from .alignment import (
    Link,
    copy_unknown,
    layers_attention,
    unknown_words,
    word_alignments,
)
from .checkpoint import BEST_WEIGHTS, Run, load_run
from .config import ENGINES, QUANTIZATIONS, DecodeConfig, check_choice
from .constrained import Pieces, check_constrained, sentence_breaks, translate_constrained
from .devices import fast_kernels, mixed_precision, resolve_device
from .ensemble import Ensemble
from .errors import UserError
from .glossary import Glossary, read_glossary
from .guided_alignment import ALIGNMENT_LAYER
from .languages import chosen_tag, source_line, target_languages
from .markup import Marked, carried
from .markup import parse as parse_markup
from .search import Hypothesis, check_nbest, new_generator, translate_nbest
from .sentences import WIDE_STOPS, Sentence, split_sentences, word_index
from .special_tokens import EOS_ID, UNK_ID
from .tokenizer import Tokenizer, tokenizer_files


@dataclass(frozen=True)
class Attention:
    """A hypothesis's cross-attention: one row per target position (its tokens, then <eos>),
    one column per source token (then <eos>); each row sums to 1."""

    source: list[str]  # source pieces, <eos> last
    target: list[str]  # target pieces, <eos> last
    weights: list[list[float]]  # (target, source)


@dataclass(frozen=True)
class Translation:
    """One hypothesis for one input line."""

    text: str  # detokenized
    tokens: list[str]  # target pieces, without <sos>/<eos>
    log_prob: float  # total log-probability
    score: float  # what the beam ranks by: log_prob / length_penalty
    attention: Attention | None = None
    # (source word, target word) pairs, 0-based over the words of the input line and of
    # `text` (alignment.py); None unless asked for
    alignment: list[Link] | None = None


class Engine:
    """A decoder behind one interface: `decode_nbest` is all an engine defines.
    `run_dir` is the run it translates with (its test split is what `nmt eval` scores)."""

    run_dir: Path
    target_languages: list[str]  # none when not known
    tokenizer: Tokenizer  # the run's
    max_positions: int  # the longest source or output the model reads, in tokens

    def language_tag(self, config: DecodeConfig, required: bool = False) -> str:
        """The tag that opens each source for config.tgt_lang (languages.py); "" for a model
        with one target language, and for none chosen unless `required` (each line then
        opens with its own)."""
        return chosen_tag(self.target_languages, config.tgt_lang, required=required)

    def check_attention(self, option: str) -> None:
        """A one-line error naming `option` (--attention) when this engine cannot give each
        hypothesis's attention weights."""

    def check_alignment(self, option: str) -> None:
        """A one-line error naming `option` (--alignment) when this engine cannot give word
        alignments."""
        self.check_attention(option)

    def translate_nbest(self, lines: list[str], config: DecodeConfig | None = None,
                        nbest: int = 1, attention: bool = False,
                        prefixes: list[str] | None = None,
                        alignment: bool = False,
                        terms: list[list[str]] | None = None) -> list[list[Translation]]:
        """The `nbest` best translations of each input line, best first; with `prefixes`
        (one per line, "" for none), each translation opens with its line's prefix; with
        `alignment`, each carries its word alignment to the line; with `terms` (a list per
        line), each holds its line's target terms, beside those of config.glossary. With
        config.split_sentences, each sentence of a line is translated as a line of its own
        and the line's translation joins theirs (Split)."""
        check_not_text(lines)
        config = config or DecodeConfig()
        if not config.split_sentences:
            return self.decode_nbest(lines, config, nbest, attention, prefixes, alignment, terms)
        check_split(nbest, attention, prefixes, terms)
        split = Split.of(lines, len(self.target_languages) > 1)
        return split.joined(self.decode_nbest(split.sentences(), config, alignment=alignment))

    def decode_nbest(self, lines: list[str], config: DecodeConfig, nbest: int = 1,
                     attention: bool = False, prefixes: list[str] | None = None,
                     alignment: bool = False,
                     terms: list[list[str]] | None = None) -> list[list[Translation]]:
        """translate_nbest, each line read whole."""
        raise NotImplementedError

    def writable(self, text: str) -> bool:
        """Whether the model's target vocabulary spells `text` (no piece of it is <unk>)."""
        return UNK_ID not in self.tokenizer.encode_tgt([text])[0]

    def source_lengths(self, lines: list[str], config: DecodeConfig) -> list[int]:
        """Each line's length in tokens as decoding encodes it (with the language tag of
        config.tgt_lang, if any), before it is cut to the max_positions - 1 the model reads
        (encode_source)."""
        return [len(ids) for ids in source_ids(self.tokenizer, lines, self.language_tag(config),
                                               self.target_languages)]

    def line_terms(self, lines: list[str], config: DecodeConfig,
                   terms: list[list[str]] | None = None) -> list[list[str]] | None:
        """The target terms that each line's translations hold: config.glossary's for the
        source terms in it, then its own `terms`; None when there are none (always, from an
        engine that places no terms)."""
        return None

    def translate(self, lines: list[str], config: DecodeConfig | None = None,
                  prefixes: list[str] | None = None) -> list[str]:
        """One translation per input line, in order; blank lines give empty strings."""
        return [hyps[0].text for hyps in self.translate_nbest(lines, config, prefixes=prefixes)]

    def translate_stream(self, lines: Iterable[str], config: DecodeConfig | None = None,
                         chunk_size: int = 1000) -> Iterator[str]:
        """Translate a stream chunk by chunk, so memory does not grow with its length."""
        for chunk in chunks(lines, chunk_size):
            yield from self.translate(chunk, config)

    def translate_nbest_stream(self, lines: Iterable[str], config: DecodeConfig | None = None,
                               nbest: int = 1, attention: bool = False, chunk_size: int = 1000,
                               prefixes: Iterable[str] | None = None, alignment: bool = False,
                               markup: bool = False, copy_unknown: bool = False,
                               terms: Iterable[str] | None = None
                               ) -> Iterator[tuple[str, list[Translation]]]:
        """(input line, its n-best list) for each line of a stream, chunk by chunk; with
        `prefixes`, a stream of as many target prefixes, read alongside; with `terms`, a
        stream of as many lines of target terms, tab between them, that each translation of
        the line holds (constrained.py); with `markup`, the lines' inline tags are taken out
        and put back into each translation (markup.py); with `copy_unknown`, words the
        vocabulary cannot spell are copied into it (with_unknown_copied)."""
        check_not_text(lines)
        config = config or DecodeConfig()
        prefixes_ahead = iter(prefixes) if prefixes is not None else None
        terms_ahead = iter(terms) if terms is not None else None
        for chunk in chunks(lines, chunk_size):
            own = alongside(prefixes_ahead, len(chunk), "target prefixes")
            own_terms = alongside(terms_ahead, len(chunk), "lines of terms")
            if own_terms is not None:
                own_terms = [[t.strip() for t in line.split("\t") if t.strip()]
                             for line in own_terms]
            marked = [parse_markup(line) for line in chunk] if markup else None
            texts = chunk if marked is None else [line.text for line in marked]
            found = self.translate_nbest(texts, config, nbest, attention, own,
                                         alignment or markup or copy_unknown, own_terms)
            held = self.line_terms(texts, config, own_terms) if copy_unknown else None
            yield from zip(chunk, self.finish(texts, found, alignment, marked, copy_unknown,
                                              own, held))

    def finish(self, texts: list[str], found: list[list[Translation]], alignment: bool,
               marked: list[Marked] | None = None, copy_unknown: bool = False,
               prefixes: list[str] | None = None,
               terms: list[list[str]] | None = None) -> list[list[Translation]]:
        """Translations of `texts` (with their alignments) with the words the vocabulary
        cannot spell copied in (`copy_unknown`; the words of their `prefixes` and of the
        target `terms` they hold kept), then the markup of the lines they came from put back
        (`marked`); their alignments kept only when `alignment` asked for them."""
        if copy_unknown:
            found = with_unknown_copied(self.tokenizer, texts, found, prefixes, terms)
        if marked is not None:
            found = carried(marked, found)
        if not alignment and (copy_unknown or marked is not None):  # aligned for them alone
            found = [[dataclasses.replace(h, alignment=None) for h in hyps] for hyps in found]
        return found


def load_engine(engine: str, run_dir: Path | str, device: str = "auto", quantize: str = "none",
                precision: str = "auto", ensemble: list[Path] | None = None) -> Engine:
    """The engine that decodes a run: "torch" (nmt's search on the run's weights, with those
    of the runs in `ensemble` beside them) or "ctranslate2" (its CTranslate2 export: run_dir
    itself or run_dir/ctranslate2)."""
    check_choice("--engine", engine, ENGINES)
    if engine == "ctranslate2":
        if ensemble:
            raise UserError("--ensemble: the ctranslate2 engine decodes one model; use "
                            "--engine torch")
        from .ct2 import CTranslate2Translator  # the optional ct2 extra

        return CTranslate2Translator.from_dir(run_dir, device, precision, quantize)
    check_int8_precision(quantize == "int8", precision)  # a server: before it serves
    return Translator.from_run(run_dir, device, quantize=quantize, ensemble=ensemble)


class Translator(Engine):
    int8 = False  # linear layers quantized (from_run's quantize="int8"), which compute in fp32

    def __init__(self, run: Run, device: torch.device,
                 warn: Callable[[str], None] | None = None):
        self.run, self.device, self.run_dir = run, device, run.path
        self.target_languages = target_languages(run.config.data.tgt_lang)
        self.generators: dict[tuple[int, torch.device], torch.Generator] = {}  # by seed
        self.glossaries: dict[str, Glossary] = {}  # by file, read once
        self.pieces: dict[torch.device, Pieces] = {}  # target_pieces, by device
        fast_kernels(device)
        self.warn = warn or (lambda message: print(f"warning: {message}", file=sys.stderr))

    @classmethod
    def from_run(cls, run_dir: Path | str, device: str = "auto", weights: str = BEST_WEIGHTS,
                 quantize: str = "none", ensemble: list[Path] | None = None) -> Translator:
        """Load a run's best weights (or `weights`, e.g. last.safetensors) onto `device`;
        quantize="int8" stores the linear layers' weights in int8 (CPU only). The best
        weights of the runs in `ensemble` decode beside them (ensemble.py); they must share
        the run's tokenizer."""
        check_choice("--quantize", quantize, QUANTIZATIONS)
        resolved = resolve_device(device)
        runs = [load_run(Path(run_dir), resolved, weights)]
        for other in ensemble or []:
            runs.append(load_run(Path(other), resolved))
            if tokenizer_files(other) != tokenizer_files(run_dir):
                raise UserError(f"--ensemble {other}: its tokenizer is not {run_dir}'s; the "
                                "models of an ensemble must share one")
            if set(target_languages(runs[-1].config.data.tgt_lang)) != set(
                    target_languages(runs[0].config.data.tgt_lang)):
                raise UserError(f"--ensemble {other}: it translates into "
                                f"{runs[-1].config.data.tgt_lang}, {run_dir} into "
                                f"{runs[0].config.data.tgt_lang}; the models of an ensemble "
                                "must translate into the same languages")
        models = [quantize_int8(run.model, resolved) if quantize == "int8" else run.model
                  for run in runs]
        model = models[0] if len(models) == 1 else Ensemble(models)
        translator = cls(dataclasses.replace(runs[0], model=model), resolved)
        translator.int8 = quantize == "int8"
        return translator

    @property
    def tokenizer(self) -> Tokenizer:
        return self.run.tokenizer

    @property
    def max_positions(self) -> int:
        return self.run.model.max_positions

    def move_to(self, device: str) -> None:
        """Move the model to `device` ("auto": leave it where it is)."""
        if device == "auto" or resolve_device(device) == self.device:
            return
        self.device = resolve_device(device)
        fast_kernels(self.device)
        self.run = dataclasses.replace(self.run, model=self.run.model.to(self.device))

    def decode_nbest(self, lines: list[str], config: DecodeConfig, nbest: int = 1,
                     attention: bool = False, prefixes: list[str] | None = None,
                     alignment: bool = False,
                     terms: list[list[str]] | None = None) -> list[list[Translation]]:
        """The `nbest` best translations of each input line (at most config.beam), best
        first; the first is what `translate` gives. A blank line gives one empty
        translation. With `attention`, each carries its cross-attention weights; with
        `alignment`, its word alignment to the line; with `prefixes` (one per line, "" for
        none), each opens with its line's prefix; with `terms` (a list per line), each holds
        its line's target terms, beside those of config.glossary (constrained.py)."""
        check_nbest(nbest, config)
        if attention:
            self.check_attention("--attention")
        if alignment:
            self.check_alignment("--alignment")
        src_ids, found = self.search(lines, config, nbest, prefixes, terms)
        with mixed_precision(self.device, config.precision):
            # one pass for both: the last layer's weights, then the aligning layer's
            read = self.attention(src_ids, found, (-1,) * attention +
                                  (ALIGNMENT_LAYER,) * alignment, config)
        weights = [[maps[0] for maps in hyps] for hyps in read] if attention else None
        links = [None] * len(found) if not alignment else [
            word_alignments(self.run.tokenizer, line, src, [h.tokens for h in hyps],
                            [maps[-1] for maps in read_hyps])
            for line, src, hyps, read_hyps in zip(lines, src_ids, found, read)]
        return [detokenize(self.run.tokenizer, src, hyps, w, a) for src, hyps, w, a
                in zip(src_ids, found, weights or [None] * len(found), links)]

    def search(self, lines: list[str], config: DecodeConfig, nbest: int = 1,
               prefixes: list[str] | None = None, terms: list[list[str]] | None = None
               ) -> tuple[list[list[int]], list[list[Hypothesis]]]:
        """Each line's source ids and hypotheses (translate_nbest's, as ids): by
        constrained search where a line has terms to place, else by search.py's."""
        self.move_to(config.device)
        check_int8_precision(self.int8, config.precision)
        src_ids = self.encode(lines, config)
        prefix_ids = encode_prefixes(self.run.tokenizer, prefixes, lines,
                                     self.run.model.max_positions, self.warn)
        model, constraints = self.run.model, self.constraints(lines, config, terms)
        with mixed_precision(self.device, config.precision):
            if constraints:
                return src_ids, translate_constrained(
                    model, src_ids, constraints, config, self.device, nbest, prefix_ids,
                    self.target_pieces(), [sentence_breaks(line) for line in lines])
            return src_ids, translate_nbest(model, src_ids, config, self.device, nbest,
                                            self.generator(config), prefix_ids)

    def check_attention(self, option: str) -> None:
        if isinstance(self.run.model, Ensemble):
            raise UserError(f"{option}: each model of an ensemble attends in its own way; "
                            "drop --ensemble to see one")
        model = self.run.config.model
        if model.arch == "gru" and model.attention == "none":
            raise UserError(f"{option}: this GRU has no attention (model.attention = none), "
                            "so there is none to show")

    def attention(self, src_ids: list[list[int]], found: list[list[Hypothesis]],
                  layers: tuple[int, ...], config: DecodeConfig) -> list[list[list[torch.Tensor]]]:
        """Each line's hypotheses' cross-attention maps in the decoder layers `layers`
        (alignment.layers_attention), read config.batch_size hypotheses at a time; none for
        no layer."""
        if not layers:
            return [[[] for _ in hyps] for hyps in found]
        pairs = [(src, h.tokens) for src, hyps in zip(src_ids, found) for h in hyps]
        flat = iter(layers_attention(self.run.model, [src for src, _ in pairs],
                                     [tokens for _, tokens in pairs], self.device, layers,
                                     config.batch_size))
        return [[next(flat) for _ in hyps] for hyps in found]

    def line_terms(self, lines: list[str], config: DecodeConfig,
                   terms: list[list[str]] | None = None) -> list[list[str]] | None:
        if not config.glossary and not terms:
            return None
        found = [list(own) for own in terms] if terms else [[] for _ in lines]
        if config.glossary:
            if config.glossary not in self.glossaries:
                self.glossaries[config.glossary] = read_glossary(config.glossary)
            glossary = self.glossaries[config.glossary]
            found = [glossary.targets(line, config.glossary_ignore_case, self.writable) + own
                     for line, own in zip(lines, found)]
        return found

    def constraints(self, lines: list[str], config: DecodeConfig,
                    terms: list[list[str]] | None = None) -> list[list[list[int]]] | None:
        """The target ids of each line's terms (line_terms: glossary.py's, then its own);
        each term encoded as text of its own. None when there are none to place."""
        found = self.line_terms(lines, config, terms)
        if found is None:
            return None
        check_constrained(config)
        distinct = sorted({term for own in found for term in own})
        ids = dict(zip(distinct, self.run.tokenizer.encode_tgt(distinct)))
        for term in distinct:
            if UNK_ID in ids[term]:
                raise UserError(f"the target term {term!r} has a character the model's "
                                "vocabulary lacks, so it cannot be written")
            if not ids[term]:
                raise UserError(f"the target term {term!r} has no character the tokenizer "
                                "keeps, so there is nothing to write")
        return [[ids[term] for term in own] for own in found]

    def target_pieces(self) -> Pieces:
        """The target vocabulary as constrained search reads it (constrained.Pieces), made
        once for each device (17 ms for 8,000 pieces on 2 cores, where a served one-sentence
        request takes about 33 ms)."""
        if self.device not in self.pieces:
            tokenizer = self.run.tokenizer
            self.pieces[self.device] = Pieces.of(
                tokenizer.tgt.id_to_piece(list(range(tokenizer.tgt_vocab_size))), self.device)
        return self.pieces[self.device]

    def generator(self, config: DecodeConfig) -> torch.Generator | None:
        """The random state of sampling with config.sampling_seed: one for all of this Translator's
        calls, so a stream read chunk by chunk draws as one."""
        if not config.sampling:
            return None
        key = (config.sampling_seed, self.device)
        if key not in self.generators:
            self.generators[key] = new_generator(config.sampling_seed, self.device)
        return self.generators[key]

    def encode(self, lines: list[str], config: DecodeConfig) -> list[list[int]]:
        """Source ids per line (blank lines give none), opened by their own language tag or
        that of config.tgt_lang, and cut to what the model can position."""
        return encode_source(self.run.tokenizer, lines, self.run.model.max_positions, self.warn,
                             self.language_tag(config), self.target_languages)


def source_ids(tokenizer: Tokenizer, lines: list[str], tag: str = "",
               languages: list[str] | None = None) -> list[list[int]]:
    """Source ids per line (blank lines give none), opened by a language tag for a model
    into `languages` (its own, or `tag`: languages.source_line), however long."""
    tagged = [source_line(line, tag, languages or []) for line in lines]
    return [ids if line.strip() else [] for line, ids in zip(tagged, tokenizer.encode_src(tagged))]


def check_not_text(lines: Iterable[str]) -> None:
    """Lines to translate come as a list (or stream) of strings: a string's characters would
    be translated one by one."""
    if isinstance(lines, str):
        raise TypeError('lines must be a list of strings, e.g. ["A dog runs."], not a string')


def encode_source(tokenizer: Tokenizer, lines: list[str], max_positions: int,
                  warn: Callable[[str], None], tag: str = "",
                  languages: list[str] | None = None) -> list[list[int]]:
    """source_ids, each cut to `max_positions` - 1 tokens (with a warning): room for the
    <eos> every source ends with."""
    src_ids = source_ids(tokenizer, lines, tag, languages)
    longest = max_positions - 1
    for line, ids in zip(lines, src_ids):
        if len(ids) > longest:  # named by its opening: streamed lines come in chunks
            warn(f"an input of {len(ids):,} tokens, {opening(line)}, was cut to the model's "
                 f"{longest:,}")
    return [ids[:longest] for ids in src_ids]


def opening(line: str, chars: int = 30) -> str:
    """A long line named in a message by its first characters: 'A man in a blue shirt ...'"""
    return repr(line if len(line) <= chars else line[:chars].rstrip() + " ...")


def encode_prefixes(tokenizer: Tokenizer, prefixes: list[str] | None, lines: list[str],
                    max_positions: int, warn: Callable[[str], None]) -> list[list[int]] | None:
    """Target ids of each line's prefix (a blank one: none), encoded as text of its own: the
    translation goes on after its last piece, and may finish its last word. A prefix is cut
    to `max_positions` tokens, the longest output; one the vocabulary cannot spell is an
    error (it would come out with "⁇" in it)."""
    if prefixes is None:
        return None
    if len(prefixes) != len(lines):
        raise UserError(f"{len(prefixes):,} target prefixes for {len(lines):,} lines; give "
                        "one per line (\"\" for none)")
    prefix_ids = [ids if prefix.strip() else []
                  for prefix, ids in zip(prefixes, tokenizer.encode_tgt(list(prefixes)))]
    for prefix, ids in zip(prefixes, prefix_ids):
        if UNK_ID in ids:
            raise UserError(f"the target prefix {prefix[:40]!r} has a character the model's "
                            "vocabulary lacks, so it cannot be written")
        if len(ids) > max_positions:
            warn(f"a target prefix of {len(ids):,} tokens was cut to the model's "
                 f"{max_positions:,}")
    return [ids[:max_positions] for ids in prefix_ids]


def detokenize(tokenizer: Tokenizer, src_ids: list[int], hypotheses: list[Hypothesis],
               weights: list[torch.Tensor] | None = None,
               alignments: list[list[Link]] | None = None) -> list[Translation]:
    """One line's hypotheses as text and pieces, their attention weights (if any) labelled
    with pieces, and their word alignments (if any); a line without hypotheses (a blank one)
    gives one empty translation."""
    if not hypotheses:
        return [Translation("", [], 0.0, 0.0, alignment=[] if alignments is not None else None)]
    texts = tokenizer.decode_tgt([h.tokens for h in hypotheses])
    source = tokenizer.src.id_to_piece(src_ids + [EOS_ID])
    out = []
    for i, (h, text) in enumerate(zip(hypotheses, texts)):
        pieces = tokenizer.tgt.id_to_piece(h.tokens + [EOS_ID])
        attention = None if weights is None else Attention(
            source, pieces[: len(weights[i])], weights[i].tolist())
        out.append(Translation(text, pieces[:-1], h.log_prob, h.score, attention,
                               None if alignments is None else alignments[i]))
    return out


@dataclass(frozen=True)
class Split:
    """Lines cut into sentences (sentences.py) to be translated as lines of their own, and
    their translations joined back into one per line."""

    lines: list[list[Sentence]]

    @classmethod
    def of(cls, lines: list[str], tagged: bool = False) -> Split:
        """`lines` cut into sentences; with `tagged`, a language tag opening a line opens
        each of its sentences."""
        return cls([split_sentences(line, tagged) for line in lines])

    def sentences(self) -> list[str]:
        """What is translated: each line's sentences, in order."""
        return [sentence.text for line in self.lines for sentence in line]

    def joined(self, found: list[list[Translation]]) -> list[list[Translation]]:
        """The best translations of sentences() (as many n-best lists) as one per line."""
        best = iter(hyps[0] for hyps in found)
        return [[joined(line, [next(best) for _ in line])] for line in self.lines]

    def per_line(self, lists: list[list[str]] | None) -> list[list[str]] | None:
        """Lists of sentences() (as many) joined into one per line."""
        if lists is None:
            return None
        each = iter(lists)
        return [[item for _ in line for item in next(each)] for line in self.lines]


def joined(sentences: list[Sentence], translations: list[Translation]) -> Translation:
    """One line's translation from its sentences': their texts one space apart (none after
    a full-width stop), their pieces in turn, their log-probabilities and scores summed, and
    their word alignments (when each has one) moved to the words of the line and of the text
    joined. A line of one sentence keeps its translation as it is."""
    if len(sentences) == 1 and sentences[0].added == 0:
        return translations[0]
    text, tokens, links = "", [], []
    for sentence, translation in zip(sentences, translations):
        tokens += translation.tokens
        if not translation.text:
            continue
        if text and not text.endswith(tuple(WIDE_STOPS)):
            text += " "
        first = word_index(text, len(text))
        links += [(sentence.word + source - sentence.added, first + target)
                  for source, target in translation.alignment or [] if source >= sentence.added]
        text += translation.text
    aligned = all(t.alignment is not None for t in translations)
    return Translation(text, tokens, sum(t.log_prob for t in translations),
                       sum(t.score for t in translations),
                       alignment=sorted(set(links)) if aligned else None)


def check_split(nbest: int, attention: bool, prefixes: list[str] | None,
                terms: list[list[str]] | None) -> None:
    """What translating a sentence at a time (--split-sentences) cannot give."""
    if nbest > 1:
        raise UserError("--nbest: with --split-sentences each sentence is searched on its own, "
                        "and a line gets one translation; ask for 1")
    if attention:
        raise UserError("--attention: with --split-sentences the sentences of a line attend "
                        "on their own; draw one sentence at a time")
    if prefixes and any(prefixes):
        raise UserError("--prefix: a target prefix opens the translation of a whole line; "
                        "drop --split-sentences")
    if terms and any(terms):
        raise UserError("--terms-file: its terms belong to a whole line; with "
                        "--split-sentences use --glossary, whose terms are found in each "
                        "sentence")


def with_unknown_copied(tokenizer: Tokenizer, lines: list[str], found: list[list[Translation]],
                        prefixes: list[str] | None = None,
                        terms: list[list[str]] | None = None) -> list[list[Translation]]:
    """Each line's translations (with their alignments) with the line's words that the
    vocabulary cannot spell copied in place of the words aligned to them
    (alignment.copy_unknown), their alignments moved with them; the words of each line's
    target prefix (if any) stay, and so do those of the target terms it holds (`terms`, a
    list per line: placed on purpose, whatever attention aligns them to)."""
    out = []
    for k, (line, hyps) in enumerate(zip(lines, found)):
        unknown = unknown_words(tokenizer, line)
        prefix = set(range(len(prefixes[k].split()))) if prefixes else set()
        out.append([])
        for h in hyps:
            kept = prefix | term_words(h.text.split(), terms[k] if terms else [])
            text, links = copy_unknown(line, h.text, h.alignment or [], unknown, kept)
            out[-1].append(dataclasses.replace(h, text=text, alignment=links))
    return out


def term_words(words: list[str], terms: list[str]) -> set[int]:
    """The positions of `words` (a translation's) where one of `terms` stands: its words in
    a row, the last one perhaps with an ending or a sign after it ("Hunde,")."""
    out: set[int] = set()
    for term in terms:
        parts = term.split()
        for i in range(len(words) - len(parts) + 1):
            if words[i : i + len(parts) - 1] == parts[:-1] \
                    and words[i + len(parts) - 1].startswith(parts[-1]):
                out.update(range(i, i + len(parts)))
    return out


def alongside(ahead: Iterator[str] | None, count: int, what: str) -> list[str] | None:
    """The next `count` lines of a stream read beside the input (None: no stream), without
    their line ends; an error when it runs out first."""
    if ahead is None:
        return None
    taken = [line.rstrip("\r\n") for line in itertools.islice(ahead, count)]
    if len(taken) < count:
        raise UserError(f"there are fewer {what} than lines to translate")
    return taken


def chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    """Lines without their line ends, in lists of `size` (the last may be shorter)."""
    chunk: list[str] = []
    for line in lines:
        chunk.append(line.rstrip("\r\n"))
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def check_int8_precision(int8: bool, precision: str) -> None:
    """The layers of quantize_int8 take float32 inputs only (under bf16 or fp16 autocast,
    they fail mid-translation)."""
    if int8 and precision in ("bf16", "fp16"):
        raise UserError(f"--quantize int8: its layers compute in float32 (fp32); drop "
                        f"--precision {precision}")


def quantize_int8(model: nn.Module, device: torch.device) -> nn.Module:
    """Dynamic int8 quantization for CPU inference: every nn.Linear keeps its weights in int8
    and quantizes its input on the fly; embeddings, GRUs and norms stay in float32."""
    if device.type != "cpu":
        raise UserError("--quantize int8 runs on the CPU only; add --device cpu")
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():  # torch.ao.quantization announces its move to torchao
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
