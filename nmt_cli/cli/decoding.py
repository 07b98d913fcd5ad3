"""`nmt translate`, `nmt eval` and `nmt score`."""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer
from rich.console import Console
from rich.table import Table

from ..config import DecodeConfig
from ..errors import UserError
from ..events import json_text
from ..files import atomic_write
from ..languages import TAG, checked_sources
from ..pictures import check_picture_path
from ..sentences import sentence_starts
from .common import (
    AUTO,
    DECODE_HELP,
    TORCH,
    Device,
    EngineOption,
    EnsembleOption,
    Precision,
    RunOption,
    TokenizeOption,
    app,
    check_output,
    choices,
    err,
    standard_output,
    user_errors,
    with_decode_options,
)

if TYPE_CHECKING:
    from ..evaluation import Evaluation, LengthBucket
    from ..scoring import PairScore
    from ..translate import Engine, Translation

OutputFormat = choices("OutputFormat", ("text", "tsv", "jsonl"))
TEXT = OutputFormat("text")


@app.command()
@user_errors
@with_decode_options
def translate(
    decode: DecodeConfig,
    quantize: str,
    text: Annotated[str | None, typer.Argument(
        help="Text to translate; without it (and without -i) lines are read from stdin.")] = None,
    input_file: Annotated[Path | None, typer.Option(
        "--input", "-i", help="File to translate, one sentence per line; - for stdin.")
    ] = None,
    output_file: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write translations here instead of stdout (-: stdout).")
    ] = None,
    run: RunOption = None,
    nbest: Annotated[int, typer.Option(
        help="Hypotheses per input line, best first (at most --beam; with --sampling, "
             "this many draws).")] = 1,
    output_format: Annotated[OutputFormat, typer.Option(
        "--format", help="text: a line per hypothesis, --nbest lines per input line; tsv: "
                         "line, rank, score, log_prob, text; jsonl: an object per input "
                         "line.")] = TEXT,
    attention: Annotated[bool, typer.Option(
        help="With --format jsonl: each hypothesis's cross-attention weights.")] = False,
    alignment: Annotated[bool, typer.Option(
        help="Each hypothesis's word alignment to its line, from attention: source-target "
             "pairs of 0-based word positions, \"0-0 1-2\" (text: after \" ||| \"; tsv: a "
             "last column; jsonl: pairs).")] = False,
    markup: Annotated[bool, typer.Option(
        help="Lines hold inline HTML or XML tags (<b>, <a href=\"...\">, <br/>): their text is "
             "translated and each tag goes back around the words that its words align "
             "to.")] = False,
    copy_unknown: Annotated[bool, typer.Option(
        help="Copy each word of a line that the vocabulary cannot spell (a character it "
             "lacks: a name in another script) into the translation, in place of the words "
             "aligned to it.")] = False,
    engine: EngineOption = TORCH,
    ensemble: EnsembleOption = None,
    prefix: Annotated[str | None, typer.Option(
        help="Text every translation opens with (forced decoding); the search goes on "
             "after it.")] = None,
    prefix_file: Annotated[Path | None, typer.Option(
        help="A target prefix per input line, in order (a blank line: none).")] = None,
    terms_file: Annotated[Path | None, typer.Option(
        help="Target terms per input line, tab between them (a blank line: none): each "
             "translation of the line holds them, placed by constrained beam search.")] = None,
):
    """Translate text, a file, or stdin: one line out for each line in.

    With --nbest K, K hypotheses for each line in."""
    from ..checkpoint import latest_run
    from ..data import check_utf8, decode_lines, read_lines
    from ..markup import parsed
    from ..search import check_nbest
    from ..translate import load_engine

    check_nbest(nbest, decode)
    if text is not None and input_file is not None:
        raise UserError(f"TEXT and -i {input_file}: give one or the other")
    input_file, output_file = (None if path == Path("-") else path
                               for path in (input_file, output_file))  # "-": stdin, stdout
    if output_file is None:
        standard_output()  # closed: said before any work
    from_stdin = text is None and input_file is None
    if from_stdin and sys.stdin is None:
        raise UserError("stdin is closed: give TEXT or -i FILE")
    if prefix is not None and prefix_file is not None:
        raise UserError("--prefix and --prefix-file: give one or the other")
    check_output(output_file, input_file, prefix_file, terms_file,
                 Path(decode.glossary) if decode.glossary else None, stdin=from_stdin)
    if attention and output_format.value != "jsonl":
        raise UserError("--attention needs --format jsonl")
    # the prefixes, and the lines when not streamed from stdin, are read before -o is opened
    prefixes = (LineFile(prefix_file, "--prefix-file", "a prefix") if prefix_file is not None
                else itertools.repeat(check_utf8(prefix, "--prefix")) if prefix else None)
    terms = LineFile(terms_file, "--terms-file", "a line of terms") if terms_file else None
    translator = load_engine(engine.value, run or latest_run(), decode.device, quantize,
                             decode.precision, ensemble)
    tag = translator.language_tag(decode)  # a wrong --tgt-lang; each line may name its own
    if attention:
        translator.check_attention("--attention")
    check_writable(translator, prefix_file, prefixes.all if isinstance(prefixes, LineFile)
                   else [prefix or ""])
    aligned = [option for option, asked in (("--alignment", alignment), ("--markup", markup),
                                             ("--copy-unknown", copy_unknown)) if asked]
    if aligned:
        translator.check_alignment(aligned[0])
    if text is not None:
        lines = iter(text_lines(check_utf8(text, "TEXT")))
    elif input_file is not None:
        lines = iter(read_lines(input_file, empty_ok=True))  # as stdin: nothing in, nothing out
    else:
        lines = decode_lines(sys.stdin.buffer, "stdin")
    # each line names its target language, or --tgt-lang does: checked as it is read
    where = f"{input_file or ('TEXT' if text is not None else 'stdin')}:"
    lines = checked_sources(lines, tag, translator.target_languages, where)
    if markup:
        lines = (line for line, _ in parsed(lines, where))
    if not from_stdin:
        listed = list(lines)
        for per_line in (prefixes, terms):
            if isinstance(per_line, LineFile):
                per_line.check_count(listed)
        lines = iter(listed)
    typed = text is None and input_file is None and sys.stdin.isatty()
    chunk = 1 if typed else 1000  # answer a typist at once
    out = Output(output_file) if output_file else sys.stdout
    found = translator.translate_nbest_stream(lines, decode, nbest, attention, chunk, prefixes,
                                              alignment, markup, copy_unknown, terms)
    paragraphs = 0  # lines of several sentences translated whole
    tagged = len(translator.target_languages) > 1  # a line of a tag alone is blank
    try:
        for number, (line, hypotheses) in enumerate(found, 1):
            out.write(render(number, line, hypotheses, output_format.value, nbest))
            out.flush()
            for per_line in (prefixes, terms):
                if isinstance(per_line, LineFile):
                    per_line.check_blank(number, line, tagged)
            if not decode.split_sentences and sentence_starts(line):
                paragraphs += 1
        for per_line in (prefixes, terms):
            if isinstance(per_line, LineFile):
                per_line.check_finished()
        if output_file:
            out.close()
        if paragraphs:
            print(f"note: {paragraphs:,} {'line holds' if paragraphs == 1 else 'lines hold'} "
                  "several sentences, which a model trained on single sentences tends to drop "
                  "or merge; --split-sentences translates each on its own", file=sys.stderr)
    except OSError as e:
        if output_file and e.errno is not None and e.filename is None:  # -o /dev/full
            raise OSError(e.errno, e.strerror, str(output_file)) from None
        raise
    finally:
        if output_file and not out.closed:  # after an error: it is the one to report
            with contextlib.suppress(OSError):
                out.file.close()


class Output:
    """The -o file of translations: opened at once, so that a folder that is not there is
    found before any work, but emptied only as the first translation is written (or at the
    end, for an empty input). An error before that, such as a malformed glossary, leaves the
    file as it was."""

    def __init__(self, path: Path):
        self.file = open(path, "a", encoding="utf-8")
        self.emptied = False

    def write(self, text: str) -> None:
        if not self.emptied:
            self.empty()
        self.file.write(text)

    def empty(self) -> None:
        if stat.S_ISREG(os.fstat(self.file.fileno()).st_mode):  # not /dev/null or a pipe
            self.file.truncate(0)
        self.emptied = True

    def flush(self) -> None:
        self.file.flush()

    @property
    def closed(self) -> bool:
        return self.file.closed

    def close(self) -> None:
        """Close it, done: emptied if nothing was written."""
        if not self.emptied:
            self.empty()
        self.file.close()


class LineFile:
    """The lines of a file that gives something per input line (`option`: --prefix-file,
    --terms-file; `what`: "a prefix"), read at once, then handed out as the input is read: a
    one-line error when it has fewer lines than the input, or more (checked before any is
    translated when the input is a list: check_count)."""

    def __init__(self, path: Path, option: str, what: str):
        from ..data import read_lines

        self.path, self.option, self.what = path, option, what
        self.all = read_lines(path)
        self.lines = iter(self.all)

    def check_count(self, lines: list[str]) -> list[str]:
        if len(lines) != len(self.all):
            raise UserError(f"{self.option} {self.path} has {len(self.all):,} lines and the "
                            f"input {len(lines):,}; give {self.what} per line")
        return lines

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = next(self.lines, None)
        if line is None:
            raise UserError(f"{self.option} {self.path} has fewer lines than the input")
        return line

    def check_blank(self, number: int, line: str, tagged: bool) -> None:
        """A warning when input line `number` is blank and this file gives it something:
        a blank line's translation is blank, without it (a line of a language tag alone is
        blank too, for a model of several languages: `tagged`)."""
        if (not line.strip() or tagged and TAG.fullmatch(line.strip())) \
                and self.all[number - 1].strip():
            print(f"warning: input line {number} is blank, and so is its translation: "
                  f"{self.option} {self.path}:{number} is left out", file=sys.stderr)

    def check_finished(self) -> None:
        if next(self.lines, None) is not None:
            raise UserError(f"{self.option} {self.path} has more lines than the input")


def check_writable(translator: Engine, path: Path | None, prefixes: list[str]) -> None:
    """A one-line error, before anything is translated or -o opened, for a target prefix
    (--prefix, or line N of --prefix-file `path`) the model's vocabulary cannot spell."""
    for number, prefix in enumerate(prefixes, 1):
        if prefix.strip() and not translator.writable(prefix):
            where = f"--prefix-file {path}:{number}" if path else "--prefix"
            raise UserError(f"{where}: {prefix[:40]!r} has a character the model's vocabulary "
                            "lacks, so it cannot be written")


def render(number: int, source: str, hypotheses: list[Translation], output_format: str,
           nbest: int = 1) -> str:
    """One input line's hypotheses: text (a line each, `nbest` lines however many there are:
    a blank line has one, empty), tsv (a row each: line number, rank, score, log_prob, text;
    both counted from 1) or jsonl (one object). A word alignment, when there is one, follows
    the text after " ||| " (as Marian prints it), or in a last column."""
    ranked = list(enumerate(hypotheses, 1))
    if output_format == "jsonl":
        return json_text({"line": number, "source": source,
                          "hypotheses": [hypothesis_json(rank, h) for rank, h in ranked]},
                         ensure_ascii=False) + "\n"
    if output_format == "tsv":
        return "".join(f"{number}\t{rank}\t{h.score:.4f}\t{h.log_prob:.4f}\t{h.text}"
                       f"{aligned(h, chr(9))}\n" for rank, h in ranked)
    return ("".join(f"{h.text}{aligned(h, ' ||| ')}\n" for _, h in ranked)
            + "\n" * (nbest - len(hypotheses)))


def aligned(hypothesis: Translation, separator: str) -> str:
    """The separator and the hypothesis's alignment in Pharaoh format, if it has one."""
    from ..alignment import pharaoh

    return "" if hypothesis.alignment is None else separator + pharaoh(hypothesis.alignment)


def hypothesis_json(rank: int, hypothesis: Translation) -> dict:
    out = {"rank": rank, "text": hypothesis.text, "tokens": hypothesis.tokens,
           "score": hypothesis.score, "log_prob": hypothesis.log_prob}
    if hypothesis.attention is not None:
        attention = hypothesis.attention
        out["attention"] = {"source": attention.source, "target": attention.target,
                            "weights": [[round(w, 5) for w in row] for row in attention.weights]}
    if hypothesis.alignment is not None:
        out["alignment"] = [list(link) for link in hypothesis.alignment]
    return out


@app.command("eval")
@user_errors
@with_decode_options
def eval_command(
    decode: DecodeConfig,
    quantize: str,
    run: RunOption = None,
    src: Annotated[Path | None, typer.Option(help="Source file to translate and score.")] = None,
    ref: Annotated[Path | None, typer.Option(help="Reference translations.")] = None,
    hyp: Annotated[Path | None, typer.Option(
        help="Score these translations against --ref (no model needed).")] = None,
    bleu: Annotated[bool, typer.Option(help="Report BLEU.")] = True,
    chrf: Annotated[bool, typer.Option(help="Report chrF.")] = False,
    ter: Annotated[bool, typer.Option(help="Report TER.")] = False,
    lowercase: Annotated[bool, typer.Option(help="Case-insensitive scores.")] = False,
    tokenize: TokenizeOption = AUTO,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    save_hyp: Annotated[Path | None, typer.Option(
        "--save-hyp", help="Write the translations scored to this file.")] = None,
    by_length: Annotated[bool, typer.Option(
        "--by-length", help="BLEU per source length: 1-10, 11-20, 21-30, 31+ words.")] = False,
    picture: Annotated[Path | None, typer.Option(
        "--output", "-o", help="With --by-length: draw it into this PNG file.")] = None,
    engine: EngineOption = TORCH,
    ensemble: EnsembleOption = None,
):
    """Score translations with sacreBLEU (BLEU, chrF, TER), each with its signature.

    Without --src/--ref/--hyp, translates the test split of the run's corpus."""
    from ..checkpoint import latest_run
    from ..evaluation import (
        bleu_by_length,
        evaluate_file,
        evaluate_run,
        length_basis,
        save_translations,
        unspaced_warning,
    )

    metrics = tuple(m for m, on in (("bleu", bleu), ("chrf", chrf), ("ter", ter)) if on)
    if not metrics:
        raise UserError("nothing to report: pass --bleu, --chrf or --ter")
    if picture and not by_length:
        raise UserError("-o/--output draws BLEU by length: add --by-length")
    if picture:
        check_picture_path(picture)
    if (src or hyp) and not ref:
        raise UserError("--src and --hyp need --ref")
    if ref and not (src or hyp):
        raise UserError("--ref needs --src (to translate) or --hyp (to score)")
    if src and hyp:
        raise UserError("use --src or --hyp, not both")
    if hyp:  # decoding options too: a setting said to apply must apply
        given = (["--run"] * bool(run) + ["--ensemble"] * bool(ensemble)
                 + ["--engine"] * (engine != TORCH) + ["--quantize"] * (quantize != "none")
                 + [f"--{key.replace('_', '-')}" for key in not_default(asdict(decode))])
        if given:
            raise UserError(f"--hyp scores a file of translations: {given[0]} has nothing to "
                            "do")
    glossary = Path(decode.glossary) if decode.glossary else None
    check_output(save_hyp, src, ref, hyp, glossary, option="--save-hyp")
    if hyp:
        result = evaluate_file(hyp, ref, metrics, lowercase, tokenize.value)
    else:
        result = evaluate_run(run or latest_run(), src, ref, decode, metrics, lowercase, quantize,
                              engine.value, ensemble, check_inputs=functools.partial(
                                  check_output, save_hyp, glossary, option="--save-hyp"),
                              tokenize=tokenize.value)
    if "bleu" in metrics and (warning := unspaced_warning(result.reference_lines,
                                                          result.tokenize)):
        print(f"warning: {warning}", file=sys.stderr)
    if save_hyp:
        save_translations(result, save_hyp)
    buckets = bleu_by_length(result, lowercase=lowercase) if by_length else None
    show_scores(result, as_json, buckets)
    if picture and buckets is not None:
        basis = length_basis(result)
        draw_bleu_by_length(buckets, picture, f"BLEU by {basis} length: {result.hypotheses}",
                            basis)


def show_scores(result: Evaluation, as_json: bool,
                buckets: list[LengthBucket] | None = None) -> None:
    from ..evaluation import length_basis

    if as_json:
        # "hypotheses": what was scored (a file, or a run on a source file); "source" is its
        # former name, kept for the scripts that read it
        out = {"hypotheses": result.hypotheses, "source": result.hypotheses,
               "reference": result.references,
               "sentences": result.sentences, "scores": [vars(s) for s in result.scores]}
        if result.decoding is not None:
            out["decoding"] = result.decoding
        if buckets is not None:
            out["by_length"] = {"length_of": length_basis(result),
                                "buckets": [vars(b) for b in buckets]}
        print(json_text(out))
        return
    table = Table(title=f"{result.hypotheses} vs {result.references} "
                        f"({result.sentences} sentences)")
    table.add_column("metric")
    table.add_column("score", justify="right")
    table.add_column("signature", overflow="fold")
    for s in result.scores:
        table.add_row(s.metric, f"{s.score:.2f}", s.signature)
    Console().print(table)
    if result.decoding is not None:
        print(decoding_line(result.decoding))
    if buckets is not None:
        show_buckets(buckets, length_basis(result))


ALWAYS_SHOWN = ("engine", "weights", "beam", "alpha", "max_len_a", "max_len_b")


def not_default(settings: dict) -> list[str]:
    """The decoding settings (DecodeConfig's, --quantize, --ensemble) not at their default."""
    defaults = {**asdict(DecodeConfig()), "quantize": "none", "ensemble": []}
    return [key for key, value in settings.items() if key in defaults and value != defaults[key]]


def text_lines(text: str) -> list[str]:
    """The lines of TEXT as a file's or stdin's read: split at line feeds alone (a form feed
    or a line separator is text, where str.splitlines splits there too), a last line feed
    ending the last line; one line, empty, for empty TEXT."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines


def decoding_line(decoding: dict) -> str:
    """How the translations scored were made, in one line: the engine, the weights and the
    search, then every other setting that is not its default but for the device and the
    batch size, which change no output (--json gives them all); but sampling draws in the
    order of the batches."""
    unchanging = {"device"} if decoding.get("sampling") else {"device", "batch_size"}
    changed = set(not_default(decoding)) - unchanging
    return "decoded with " + ", ".join(
        f"{key} {' + '.join(value) if isinstance(value, list) else value}"
        for key, value in decoding.items() if key in ALWAYS_SHOWN or key in changed)


def show_buckets(buckets: list[LengthBucket], basis: str) -> None:
    table = Table(title=f"BLEU by {basis} length (words)")
    table.add_column("length")
    table.add_column("sentences", justify="right")
    table.add_column("BLEU", justify="right")
    for b in buckets:
        table.add_row(b.bucket, str(b.sentences), f"{b.bleu:.2f}")
    Console().print(table)


def draw_bleu_by_length(buckets: list[LengthBucket], path: Path, title: str,
                        basis: str) -> None:
    """Draw through nmt_cli.pictures, imported here so that translating never loads
    matplotlib."""
    try:
        from ..pictures import draw_bleu_by_length as draw
    except ImportError as e:
        raise UserError(f"cannot draw {path}: {e}") from None
    draw([vars(b) for b in buckets], path, title, basis)
    err.print(f"wrote {path}", highlight=False)


app.command("evaluate", help="Alias of eval.")(eval_command)


ScoreFormat = choices("ScoreFormat", ("text", "jsonl"))
SCORE_TEXT, AUTO_DEVICE, AUTO_PRECISION = ScoreFormat("text"), Device("auto"), Precision("auto")


@app.command()
@user_errors
def score(
    src: Annotated[Path, typer.Option(help="Source sentences, one per line.")],
    tgt: Annotated[Path, typer.Option(help="A translation of each, line by line, to score.")],
    run: RunOption = None,
    normalize: Annotated[bool, typer.Option(
        help="Divide each log-probability by the target's length in tokens, <eos> included."
    )] = False,
    output_format: Annotated[ScoreFormat, typer.Option(
        "--format", help="text: one score per line; jsonl: an object per pair, with the "
                         "log-probability of each target token.")] = SCORE_TEXT,
    output_file: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the scores here instead of stdout.")] = None,
    ensemble: EnsembleOption = None,
    batch_size: Annotated[int, typer.Option(help=DECODE_HELP["batch_size"])] = 64,
    device: Annotated[Device, typer.Option(help=DECODE_HELP["device"])] = AUTO_DEVICE,
    precision: Annotated[Precision, typer.Option(help=DECODE_HELP["precision"])
                         ] = AUTO_PRECISION,
    tgt_lang: Annotated[str, typer.Option(help=DECODE_HELP["tgt_lang"])] = "",
    alignment: Annotated[bool, typer.Option(
        help="Each pair's word alignment, as translate --alignment gives it (text: after "
             "\" ||| \"; jsonl: pairs).")] = False,
):
    """Score translations by a model: log P(target | source), one line per pair.

    A target too long for the model's positions scores nan (null in jsonl)."""
    from ..checkpoint import latest_run
    from ..scoring import score_files
    from ..translate import Translator

    check_output(output_file, src, tgt)
    if output_file is None:
        standard_output()  # closed: said before any work
    settings = DecodeConfig(batch_size=batch_size, device=device.value,
                            precision=precision.value, tgt_lang=tgt_lang)  # checks them
    translator = Translator.from_run(run or latest_run(), settings.device, ensemble=ensemble)
    translator.language_tag(settings, required=True)  # before -o is opened
    if alignment:
        translator.check_alignment("--alignment")
    found = score_files(translator.run, translator.device, src, tgt, settings.batch_size,
                        settings.precision, translator.warn, settings.tgt_lang,
                        alignment=alignment)

    def write_scores(out: TextIO) -> None:
        for number, (source, target, pair) in enumerate(found, 1):
            out.write(score_line(number, source, target, pair, normalize, output_format.value,
                                 alignment))

    def write_file(path: str) -> None:
        with open(path, "w", encoding="utf-8") as out:
            write_scores(out)

    if output_file is None:
        write_scores(standard_output())
    else:  # whole or not at all: files of unequal length fail at the end of the shorter
        atomic_write(output_file, write_file)


def score_line(number: int, source: str, target: str, pair: PairScore, normalize: bool,
               output_format: str, alignment: bool) -> str:
    """One pair's score: text (the number, then " ||| " and its alignment if asked for) or
    jsonl (an object)."""
    from ..alignment import pharaoh

    value = pair.per_token if normalize else pair.log_prob
    if output_format == "text":
        links = f" ||| {pharaoh(pair.alignment or [])}" if alignment else ""
        return f"{value:.4f}{links}\n"
    line = {"line": number, "source": source, "target": target,
            "score": value, "tokens": pair.tokens,  # nan: null (json_text)
            "token_log_probs": [round(v, 4) for v in pair.token_log_probs]}
    if alignment:
        line["alignment"] = (None if pair.alignment is None
                             else [list(link) for link in pair.alignment])
    return json_text(line, ensure_ascii=False) + "\n"


