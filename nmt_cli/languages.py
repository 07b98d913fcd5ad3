"""One model for several target languages (Johnson et al., 2017, Google's multilingual NMT).

`data.tgt_lang = "de,fr,cs"` trains one model on the pairs of every language together. Each
source sentence opens with a tag naming the language wanted, "<2fr> A man rides a horse.", so
the same encoder and decoder learn all of them, and `--tgt-lang fr` picks one when
translating; a line that opens with a tag of its own ("<2cs> ...", as OPUS-MT's ">>ces<<")
keeps it, so one input may ask for several languages. The tokenizer keeps each tag whole, one
token (tokenizer.py); a run with one target language has no tags.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from .errors import UserError

TAG = re.compile(r"<2[^<>\s]+>")  # a language tag (language_tag), as a line may open with one

if TYPE_CHECKING:
    from .tokenizer import Tokenizer


def target_languages(tgt_lang: str) -> list[str]:
    """The languages of data.tgt_lang, a comma-separated list of file suffixes."""
    return tgt_lang.split(",")


def language_tag(language: str) -> str:
    return f"<2{language}>"


def language_tags(tgt_lang: str) -> list[str]:
    """The tags of a run's target languages; none when it has one."""
    return [tag for _, tag in tagged_languages(tgt_lang) if tag]


def tagged_languages(tgt_lang: str) -> list[tuple[str, str]]:
    """(language, its tag) for each target language; the tag is "" when there is one."""
    languages = target_languages(tgt_lang)
    if len(languages) == 1:
        return [(languages[0], "")]
    return [(language, language_tag(language)) for language in languages]


def tag_line(line: str, tag: str) -> str:
    """The line opened by `tag` ("": unchanged); a blank line stays blank, to be skipped."""
    return f"{tag} {line}" if tag and line.strip() else line


def source_line(line: str, tag: str, languages: list[str], option: str = "--tgt-lang",
                strict: bool = False) -> str:
    """A line to translate as a model into `languages` reads it: opened by its own tag if it
    has one of the model's (a tag alone: a blank line), else by `tag` (that of --tgt-lang,
    given as `option`). A model of several languages refuses a line with neither, or with a
    tag it lacks, and with `strict` (eval, score: the language is the one named) a tag
    other than `tag`; a model of one (no tags) reads every line as it is."""
    if len(languages) < 2 or not line.strip():
        return tag_line(line, tag)
    head, *rest = line.split(maxsplit=1)
    if head in {language_tag(language) for language in languages}:
        if strict and head != tag:
            raise UserError(f"{head}: the line asks for another language than {option} "
                            f"{tag[2:-1]!r}")
        return f"{head} {rest[0]}" if rest else ""
    named = ", ".join(languages)
    if TAG.fullmatch(head):
        raise UserError(f"{head}: this model translates into {named}; open the line with the "
                        f"tag of one of them ({language_tag(languages[0])})")
    if not tag:
        raise UserError(f"{line[:40]!r} names no target language: this model translates into "
                        f"{named}; give {option}, or open each line with the tag of its "
                        f"language ({language_tag(languages[0])} ...)")
    return tag_line(line, tag)


def checked_sources(lines: Iterable[str], tag: str, languages: list[str], at: str,
                    option: str = "--tgt-lang", strict: bool = False,
                    first: int = 1) -> Iterator[str]:
    """The lines, each checked by source_line as it is read; a one-line error names the
    first that fails by `at` and its number, counted from `first` ("news.en:12: ...")."""
    for number, line in enumerate(lines, first):
        try:
            source_line(line, tag, languages, option, strict)
        except UserError as e:
            raise UserError(f"{at}{number}: {e}") from None
        yield line


def interleaved(groups: dict[str, list[int]], count: int) -> list[int]:
    """The first `count` rows taken from each group in turn: samples of every language."""
    return [rows[i] for i in range(count) for rows in groups.values() if i < len(rows)][:count]


def rows_by_language(parts: list[int], tgt_lang: str) -> dict[str, list[int]]:
    """The rows of each target language of pairs read by data.load_split, which reads those of
    each in turn (`parts`: how many each has), blank lines too (they hold no tag)."""
    rows, start = {}, 0
    for language, count in zip(target_languages(tgt_lang), parts, strict=True):
        rows[language], start = list(range(start, start + count)), start + count
    return rows


def check_tags(tokenizer: Tokenizer, tgt_lang: str, where: str, remedy: str) -> None:
    """A tokenizer made elsewhere (a prepared corpus's, a parent run's) must hold the tag of
    every target language, as one piece; and the tags of a tokenizer that has them must open
    the sources, so a run into one language cannot take it."""
    missing = [tag for tag in language_tags(tgt_lang) if tag not in tokenizer.tags]
    if missing:
        raise UserError(f"{where}: its tokenizer has no {missing[0]} tag, so it cannot train "
                        f"into {tgt_lang}; {remedy}")
    if tokenizer.tags and len(target_languages(tgt_lang)) == 1:
        raise UserError(f"{where}: its tokenizer is for a model into "
                        f"{', '.join(tokenizer.languages)}, whose sources open with a language "
                        f"tag, and a run into {tgt_lang} alone has none; name several target "
                        "languages (--tgt-lang de,fr)")


def check_languages(tgt_lang: str, option: str = "data.tgt_lang") -> None:
    """A one-line error for a list of target languages that cannot name files and tags."""
    languages = target_languages(tgt_lang)
    for language in languages:
        if not language or any(c.isspace() or c in "<>/\\" for c in language):
            raise UserError(f"{option} {tgt_lang!r}: {language!r} is not a language "
                            "suffix; give one, or several separated by commas (de,fr,cs)")
    if len(set(languages)) < len(languages):
        raise UserError(f"{option} {tgt_lang!r} names a language twice")


def chosen_tag(languages: list[str], chosen: str, option: str = "--tgt-lang",
               required: bool = True) -> str:
    """The tag that asks for `chosen` (given as `option`) from a model that translates into
    `languages` (empty when not known): none for a model with one target language, nor for
    none chosen unless `required` (each line then names its own: source_line)."""
    asked = f"{option} {chosen!r}" if chosen else option
    if len(languages) > 1:
        if not chosen and not required:
            return ""
        if chosen not in languages:
            raise UserError(f"{asked}: this model translates into {', '.join(languages)}; "
                            "name one")
        return language_tag(chosen)
    if chosen and languages and chosen != languages[0]:
        raise UserError(f"{asked}: this model translates into {languages[0]} only")
    if chosen and not languages:
        raise UserError(f"{asked}: this model does not say its target language; leave it out")
    return ""
