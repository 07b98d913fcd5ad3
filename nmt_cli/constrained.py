"""Lexically constrained decoding: beam search whose translations must contain given runs of
target tokens (constraints: a glossary's terms, glossary.py), by dynamic beam allocation
(Post and Vilar, 2018, with the round-robin banks of Hu et al., 2019; fairseq's --constraints).

A hypothesis knows which constraints it has met and how far it is into the one it is placing
(`Progress`); its bank is the number of constraint tokens it has placed. Each step the
candidates are the beam's 2k best extensions, each hypothesis's best next token, and each
hypothesis's next constraint tokens (the next of each constraint not met that opens with the
tokens it is placing, or the first of each; `Progress.next_tokens`). The k that go on are dealt
from the banks in turn, fullest bank first and best first within a bank (`allocate`), so
hypotheses that have placed more of the constraints keep their places beside likelier ones that
have placed fewer. <eos> is ruled out until every constraint is met, and so is the end of the
translation's last sentence: a hypothesis with a constraint unmet writes no more sentence ends
(".", "!", "?") than its source has sentences before its last (`sentence_breaks`; a term's own,
as in "usw.", aside), or a term the model would rather not write would be put after the full
stop ("... schiebt ein Gepäckstück. Hoteldiener."). A piece that would go on with the word a
constraint ends in is ruled out too ("Fahrrad" never becomes "Fahrrads"), unless the search may
inflect the terms (DecodeConfig.glossary_inflect): then a term's last word may take an ending
(`Pieces.endings`: one to three lower-case letters), written as a piece of its own after the
term ("▁Fahrrad" "s") or as the term's last piece with the ending joined to it ("▁Hunde" for
"▁Hund": `Pieces.longer`), and the word ends there. A hypothesis that could no longer place
them all before the length limit gives way to those that can (`in_time`); one stopped by the
limit with a constraint unmet ranks after every one that met them all. Constraint tokens are
scored by the model like any other.

Written against the Seq2Seq interface (start, decode_step, state.select). The sentences with
constraints are decoded in batches of their own, each keeping k rows; the others go through
plain beam search.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import torch

from .config import DecodeConfig
from .data import source_tensor
from .errors import UserError
from .models.base import Seq2Seq
from .search import (
    Hypothesis,
    block_repeated_ngrams,
    check_nbest,
    finished,
    follow_prefix,
    forbid_special_tokens,
    output_limit,
    prefix_tensor,
    translate_nbest,
)
from .special_tokens import EOS_ID, SOS_ID
from .tokenizer import WORD_START

SENTENCE_END = frozenset(".!?")
MAX_ENDING = 3  # letters of an ending an inflected term's last word may take
# Progress.closing: the hypothesis's last token ended a constraint, whose word must end there,
# or (inflecting, TERM_ENDED) may take an ending first; INFLECTED: it took one, the word ends
TERM_ENDED, INFLECTED = 1, 2


@dataclass(frozen=True)
class Pieces:
    """What the search must know of the target pieces: (vocab,) masks of those that go on
    with the word before them (neither open a word nor are special tokens or signs), of those
    that end a sentence, and of the endings (pieces of one to three lower-case letters that go
    on with a word: "s", "en", "ern"); the ids of the sentence ends and of the endings; and
    for each piece the pieces that are it with an ending joined ("▁Hund": "▁Hunde",
    "▁Hunden"), which an inflected term may end with."""

    continues_word: torch.Tensor
    ends_sentence: torch.Tensor
    sentence_ends: frozenset[int]
    is_ending: torch.Tensor
    endings: frozenset[int]
    longer: dict[int, frozenset[int]]

    @classmethod
    def of(cls, pieces: list[str], device: torch.device) -> Pieces:
        """From the target vocabulary's pieces, in id order."""
        ends = {i for i, piece in enumerate(pieces) if i > EOS_ID
                and piece.lstrip(WORD_START) and set(piece.lstrip(WORD_START)) <= SENTENCE_END}
        endings = {i for i, piece in enumerate(pieces) if i > EOS_ID and is_ending(piece)}
        ids = {piece: i for i, piece in enumerate(pieces) if i > EOS_ID}
        longer: dict[int, set[int]] = {}
        for i, piece in enumerate(pieces):
            for cut in range(1, MAX_ENDING + 1):
                stem = piece[:-cut]
                if i > EOS_ID and stem.lstrip(WORD_START) and stem in ids \
                        and is_ending(piece[-cut:]):
                    longer.setdefault(ids[stem], set()).add(i)
        return cls(torch.tensor([i > EOS_ID and piece[:1].isalnum()
                                 for i, piece in enumerate(pieces)], device=device),
                   torch.tensor([i in ends for i in range(len(pieces))], device=device),
                   frozenset(ends),
                   torch.tensor([i in endings for i in range(len(pieces))], device=device),
                   frozenset(endings), {i: frozenset(more) for i, more in longer.items()})

    def ends_like(self, token: int, wanted: int) -> bool:
        """Whether `token` may stand for a term's last piece `wanted` in an inflected term:
        it is that piece with an ending joined."""
        return token in self.longer.get(wanted, ())


def is_ending(text: str) -> bool:
    """One to MAX_ENDING lower-case letters: an inflectional ending, as "s", "en", "ern"."""
    return 0 < len(text) <= MAX_ENDING and text.isalpha() and text.islower()


def inflects(word: str, term: str) -> bool:
    """Whether `word` is what an inflected search may write for a term's last word `term`:
    the word itself, or it with an ending ("Hunde" for "Hund")."""
    return word == term or (word.startswith(term) and is_ending(word[len(term):]))


def sentence_breaks(line: str) -> int:
    """The sentence ends of a line before its last sentence: "Hello. How are you?" has 1."""
    return len(re.findall(r"[.!?]+\s+(?=\S)", line))


@dataclass(frozen=True)
class Progress:
    """Which of a sentence's constraints a hypothesis has met, and which one it is placing
    (-1: none) with how many of its tokens."""

    met: tuple[bool, ...]
    current: int = -1
    placed_of_current: int = 0
    closing: int = 0  # 0, TERM_ENDED or INFLECTED (see there)

    def after(self, token: int, constraints: list[list[int]],
              inflect: Pieces | None = None) -> Progress:
        """The progress once `token` is added. A token that breaks off the constraint being
        placed undoes that constraint's tokens so far (it must be placed whole, in one run),
        but those tokens and it may be the start of another ("den" "Hund" for "den Hund",
        begun as "den Schnee"): the longest run of them that opens a constraint not met is
        the one placed now. With `inflect` (the target pieces), a term's last piece may be one
        with an ending joined, and a term just placed may take an ending."""
        written = [token]
        if self.current >= 0:
            wanted = constraints[self.current]
            if places(token, wanted, self.placed_of_current, inflect):
                return self.advanced(self.current, self.placed_of_current + 1, constraints,
                                     token != wanted[self.placed_of_current])
            written = wanted[: self.placed_of_current] + written
        for start in range(len(written)):  # longest first
            run = written[start:]
            for c, wanted in enumerate(constraints):
                if not self.met[c] and len(run) <= len(wanted) and all(
                        places(t, wanted, at, inflect) for at, t in enumerate(run)):
                    return self.advanced(c, len(run), constraints, token != wanted[len(run) - 1])
        if inflect is not None and self.closing == TERM_ENDED and token in inflect.endings:
            return Progress(self.met, closing=INFLECTED)
        return Progress(self.met)

    def advanced(self, c: int, placed: int, constraints: list[list[int]],
                 inflected: bool = False) -> Progress:
        if placed < len(constraints[c]):
            return Progress(self.met, c, placed)
        return Progress(self.met[:c] + (True,) + self.met[c + 1 :],
                        closing=INFLECTED if inflected else TERM_ENDED)

    def placed(self, constraints: list[list[int]]) -> int:
        """Its bank: the constraint tokens placed (those of constraints met, and so far)."""
        return sum(len(c) for c, met in zip(constraints, self.met) if met) + self.placed_of_current

    def next_tokens(self, constraints: list[list[int]], inflect: Pieces | None = None) -> set[int]:
        """The tokens that place more of a constraint: the next of each constraint not met
        that opens with the tokens placed so far (with `inflect`, a term's last piece with an
        ending joined too)."""
        so_far = constraints[self.current][: self.placed_of_current] if self.current >= 0 else []
        return set().union(*(choices(c, len(so_far), inflect)
                             for c, met in zip(constraints, self.met)
                             if not met and len(c) > len(so_far) and c[: len(so_far)] == so_far))

    @property
    def complete(self) -> bool:
        return all(self.met)


def places(token: int, wanted: list[int], at: int, inflect: Pieces | None) -> bool:
    """Whether `token` places piece `at` of the constraint `wanted`."""
    return token == wanted[at] or (inflect is not None and at == len(wanted) - 1
                                   and inflect.ends_like(token, wanted[at]))


def choices(wanted: list[int], at: int, inflect: Pieces | None) -> set[int]:
    """The tokens that place piece `at` of the constraint `wanted`."""
    if inflect is None or at < len(wanted) - 1:
        return {wanted[at]}
    return {wanted[at], *inflect.longer.get(wanted[at], ())}


@dataclass(frozen=True)
class Partial:
    """A live hypothesis: its tokens, their log-probability, its progress."""

    tokens: list[int]
    log_prob: float
    progress: Progress
    breaks: int = 0  # the sentence ends among its tokens


@dataclass(frozen=True)
class Candidate:
    parent: int  # the live hypothesis it extends
    token: int
    log_prob: float
    progress: Progress
    bank: int  # the constraint tokens placed with it
    ends: bool  # <eos>, or the length limit


def allocate(candidates: list[Candidate], k: int) -> list[Candidate]:
    """The k candidates dealt from the banks in turn: the best of the fullest bank, the best
    of the next, ..., then the second best of each, and so on (Hu et al., 2019)."""
    rank_in_bank: dict[int, int] = {}
    ranked = []
    for c in sorted(candidates, key=lambda c: -c.log_prob):
        rank = rank_in_bank[c.bank] = rank_in_bank.get(c.bank, -1) + 1
        ranked.append((rank, -c.bank, c))
    return [c for _, _, c in sorted(ranked, key=lambda r: r[:2])[:k]]


class Sentence:
    """One sentence's search: its constraints and length limit, its k live hypotheses (those
    of probability 0 hold places in the batch: dead) and those finished."""

    def __init__(self, constraints: list[list[int]], limit: int, beam_size: int,
                 breaks: int = 0):
        self.constraints, self.limit, self.k = constraints, limit, beam_size
        self.breaks = breaks  # sentence ends that a hypothesis with a constraint unmet may write
        start = Progress((False,) * len(constraints))
        self.live = [Partial([], 0.0 if b == 0 else float("-inf"), start)
                     for b in range(beam_size)]  # all open alike: only the first expands
        self.done: list[tuple[bool, Hypothesis]] = []

    def may_end_sentence(self) -> list[bool]:
        """Per live hypothesis: whether its next piece may end a sentence."""
        return [p.progress.complete or p.breaks < self.breaks for p in self.live]

    def advance(self, found: list[Candidate], step: int, alpha: float,
                sentence_ends: frozenset[int] = frozenset()) -> list[int] | None:
        """Finish the ending candidates among the k dealt from `found`, and go on with the k
        dealt from those that do not end; their parents' rows (0..k-1), or None when the
        sentence is done (k finished, its limit reached, nothing left to extend)."""
        found = in_time(found, self.constraints, self.limit - step - 1)
        for c in allocate(found, self.k):
            if c.ends:
                tokens = self.live[c.parent].tokens + ([] if c.token == EOS_ID else [c.token])
                self.done.append((c.progress.complete,
                                  finished(tokens, c.log_prob, c.token == EOS_ID, alpha)))
        going = allocate([c for c in found if not c.ends], self.k)
        if len(self.done) >= self.k or not going:
            return None
        going += [dataclasses.replace(going[0], log_prob=float("-inf"))] * (self.k - len(going))
        self.live = [self.extended(self.live[c.parent], c, sentence_ends) for c in going]
        return [c.parent for c in going]

    def extended(self, parent: Partial, c: Candidate, sentence_ends: frozenset[int]) -> Partial:
        """`parent` with the token of `c`; a sentence end counts as one unless it is a piece
        of a term ("usw.")."""
        breaks = c.token in sentence_ends and c.bank <= parent.progress.placed(self.constraints)
        return Partial(parent.tokens + [c.token], c.log_prob, c.progress, parent.breaks + breaks)

    def ranked(self) -> list[Hypothesis]:
        """Its finished hypotheses, those that hold every constraint first, best first."""
        self.done.sort(key=lambda d: (d[0], d[1].score), reverse=True)
        return [h for _, h in self.done[: self.k]]


@torch.inference_mode()
def constrained_beam_search(model: Seq2Seq, src: torch.Tensor, limits: list[int],
                            constraints: list[list[list[int]]], beam_size: int, alpha: float,
                            min_len: int = 0, no_repeat_ngram: int = 0,
                            forced: torch.Tensor | None = None, pieces: Pieces | None = None,
                            breaks: list[int] | None = None,
                            inflect: bool = False) -> list[list[Hypothesis]]:
    """The `beam_size` best hypotheses of each sentence of a padded batch (src: (n, src_len))
    that contain each of its `constraints` (runs of target ids), best first; `limits`: each
    sentence's output limit; `forced`: the target prefixes (prefix_tensor) or None;
    `pieces`: the target vocabulary's (None: no piece ruled out for going on with a word or
    ending a sentence); `breaks`: each source's sentence_breaks (None: 0); `inflect`: a term's
    last word may take an ending (needs `pieces`; see the module's docstring). Every sentence
    keeps k rows in the batch. Each step reads its candidates to the host once."""
    n, k, device = src.size(0), beam_size, src.device
    if inflect and pieces is None:
        raise ValueError("inflecting terms needs the target pieces")
    state = model.start(src).select(torch.arange(n, device=device).repeat_interleave(k), k)
    sentences = [Sentence(own, limit, k, b) for own, limit, b in zip(
        constraints, limits, breaks or [0] * n)]
    alive = list(range(n))
    forced = forced.repeat_interleave(k, 0) if forced is not None else None  # (n*k, prefix)
    for step in range(max(limits, default=0)):
        live = [p for s in alive for p in sentences[s].live]
        last = torch.tensor([p.tokens[-1] if p.tokens else SOS_ID for p in live], device=device)
        logits, state = model.decode_step(last, state)
        may_end = [ok for s in alive for ok in sentences[s].may_end_sentence()]
        nexts = [p.progress.next_tokens(sentences[s].constraints, pieces if inflect else None)
                 for s in alive for p in sentences[s].live]
        scores = step_scores(logits, live, may_end, step, min_len, no_repeat_ngram, forced,
                             pieces, inflect, nexts)
        keep, rows = [], []
        ends = pieces.sentence_ends if pieces is not None else frozenset()
        for i, found in enumerate(candidates(scores, [sentences[s] for s in alive], step, nexts,
                                             pieces if inflect else None)):
            parents = sentences[alive[i]].advance(found, step, alpha, ends)
            if parents is not None:
                keep.append(i)
                rows += [i * k + parent for parent in parents]
        if not keep:
            break
        index = torch.tensor(rows, device=device)
        state = state.select(index, k)
        forced = forced[index] if forced is not None and step + 1 < forced.size(1) else None
        alive = [alive[i] for i in keep]
    return [s.ranked() for s in sentences]


def in_time(found: list[Candidate], constraints: list[list[int]],
            steps_left: int) -> list[Candidate]:
    """The candidates that can still place every constraint in the steps left before the
    length limit; all of them when none can (the limit then stops the best)."""
    total = sum(map(len, constraints))
    hopeful = [c for c in found if total - c.bank <= steps_left]
    return hopeful or found


def step_scores(logits: torch.Tensor, live: list[Partial], may_end: list[bool], step: int,
                min_len: int, no_repeat_ngram: int, forced: torch.Tensor | None,
                pieces: Pieces | None = None, inflect: bool = False,
                nexts: list[set[int]] | None = None) -> torch.Tensor:
    """(live, vocab) the log-probability of each hypothesis with each next token, as plain
    beam search has it; then <eos> ruled out for a hypothesis with a constraint unmet, the
    sentence ends for one that may write no more (`may_end`, per hypothesis), and the pieces
    that go on with a word right after a constraint ends (with `inflect`, all but the endings,
    and then all once it took one): after the softmax, so what is left keeps the model's
    probabilities (as fairseq rules out <eos>). The tokens that place a constraint's next
    piece (`nexts`, per hypothesis: Progress.next_tokens) are exempt from these rules and from
    the n-gram block: a term may hold a full stop ("usw.") or be found twice in a line."""
    logits = forbid_special_tokens(logits.float(), step >= min_len)
    exempt = [(row, token) for row, tokens in enumerate(nexts or []) for token in tokens]
    at = (torch.tensor([row for row, _ in exempt], dtype=torch.long, device=logits.device),
          torch.tensor([token for _, token in exempt], dtype=torch.long, device=logits.device))
    if no_repeat_ngram:
        history = torch.tensor([p.tokens for p in live], device=logits.device)
        blocked = block_repeated_ngrams(logits, history.view(len(live), step), no_repeat_ngram)
        blocked[at] = logits[at]
        logits = blocked
    log_probs = torch.log_softmax(logits, dim=-1)
    free = log_probs[at]
    unmet = torch.tensor([not p.progress.complete for p in live], device=logits.device)
    log_probs[:, EOS_ID] = log_probs[:, EOS_ID].masked_fill(unmet, float("-inf"))
    if pieces is not None:
        after_term = pieces.continues_word & ~pieces.is_ending if inflect \
            else pieces.continues_word
        for rows, mask in (([row for row, ok in enumerate(may_end) if not ok],
                            pieces.ends_sentence),
                           ([row for row, p in enumerate(live)
                             if p.progress.closing == TERM_ENDED], after_term),
                           ([row for row, p in enumerate(live)
                             if p.progress.closing == INFLECTED], pieces.continues_word)):
            if rows:
                log_probs[rows] = log_probs[rows].masked_fill(mask, float("-inf"))
    log_probs[at] = free
    if forced is not None:
        log_probs = follow_prefix(log_probs, forced, step)
    totals = torch.tensor([p.log_prob for p in live], device=logits.device)
    return totals.unsqueeze(1) + log_probs


def candidates(scores: torch.Tensor, sentences: list[Sentence], step: int,
               nexts: list[set[int]], inflect: Pieces | None = None) -> list[list[Candidate]]:
    """Each sentence's candidates of this step (see the module's docstring), each once, none
    of probability 0; `scores`: (sentences * k, vocab); `nexts`: each live hypothesis's
    Progress.next_tokens; `inflect`: the target pieces when a term's last word may take an
    ending. All read to the host in one copy."""
    k, vocab = sentences[0].k, scores.size(1)
    wanted = [(row, token) for row, tokens in enumerate(nexts) for token in sorted(tokens)]
    top = scores.view(len(sentences), k * vocab).topk(2 * k, dim=1)  # (sentences, 2k)
    best = scores.max(-1)  # (sentences * k,)
    rows = torch.tensor([r for r, _ in wanted], dtype=torch.long, device=scores.device)
    tokens = torch.tensor([t for _, t in wanted], dtype=torch.long, device=scores.device)
    read = torch.cat([top.values.flatten().double(), top.indices.flatten().double(),
                      best.values.double(), best.indices.double(),
                      scores[rows, tokens].double()]).tolist()
    m, r = top.values.numel(), len(best.values)
    found: list[dict[tuple[int, int], Candidate]] = [{} for _ in sentences]

    def add(row: int, token: int, value: float) -> None:  # row: of the whole batch
        i, parent = divmod(row, k)
        s = sentences[i]
        if value == float("-inf") or (parent, token) in found[i]:
            return
        progress = s.live[parent].progress
        progress = progress if token == EOS_ID else progress.after(token, s.constraints,
                                                                    inflect)
        found[i][parent, token] = Candidate(parent, token, value, progress,
                                            progress.placed(s.constraints),
                                            token == EOS_ID or step + 1 >= s.limit)

    for j, (value, index) in enumerate(zip(read[:m], read[m : 2 * m])):
        beam, token = divmod(int(index), vocab)
        add(j // (2 * k) * k + beam, token, value)
    for row, (value, token) in enumerate(zip(read[2 * m : 2 * m + r],
                                             read[2 * m + r : 2 * m + 2 * r])):
        add(row, int(token), value)
    for (row, token), value in zip(wanted, read[2 * m + 2 * r :]):
        add(row, token, value)
    return [list(f.values()) for f in found]


def translate_constrained(model: Seq2Seq, src_ids: list[list[int]],
                          constraints: list[list[list[int]]], config: DecodeConfig,
                          device: torch.device, nbest: int = 1,
                          prefixes: list[list[int]] | None = None, pieces: Pieces | None = None,
                          breaks: list[int] | None = None) -> list[list[Hypothesis]]:
    """search.translate_nbest, where each sentence's translations contain its `constraints`
    (runs of target ids; none: an empty list): the sentences with some are decoded by
    constrained_beam_search (`pieces`, `breaks`: see there) in batches of similar length, the
    others by search.py as usual. A sentence's output limit (search.output_limit, which
    holds its prefix) is raised where it must be to hold its constraints and as many tokens
    again as its source has: room for the words around them. (Raising it by the constraints'
    length everywhere gave the search room to repeat the sentence after a term, and lowered
    BLEU: bench/RESULTS.md.)"""
    check_constrained(config)
    check_nbest(nbest, config)
    for i, own in enumerate(constraints):  # a term cut short would be no term
        if (needed := sum(map(len, own)) + (len(prefixes[i]) if prefixes else 0)) > \
                model.max_positions:
            raise UserError(f"a line's terms{' and prefix' if prefixes and prefixes[i] else ''}"
                            f" take {needed:,} target tokens, more than the "
                            f"{model.max_positions:,} a translation holds")
    plain = [i for i, c in enumerate(constraints) if not c or not src_ids[i]]
    outputs = dict(zip(plain, translate_nbest(
        model, [src_ids[i] for i in plain], config, device, nbest,
        prefixes=[prefixes[i] for i in plain] if prefixes else None)))
    hard = sorted((i for i in range(len(src_ids)) if i not in outputs),
                  key=lambda i: len(src_ids[i]))  # batches of similar length
    for start in range(0, len(hard), config.batch_size):
        chunk = hard[start : start + config.batch_size]
        srcs = [src_ids[i][: model.max_positions - 1] for i in chunk]
        own = [prefixes[i][: model.max_positions] if prefixes else [] for i in chunk]
        limits = [output_limit(len(src), config, model.max_positions,
                               len(prefix) + sum(map(len, constraints[i])) + len(src))
                  for src, prefix, i in zip(srcs, own, chunk)]
        found = constrained_beam_search(
            model, source_tensor(srcs).to(device), limits, [constraints[i] for i in chunk],
            config.beam, config.alpha, config.min_len, config.no_repeat_ngram,
            prefix_tensor(own, device), pieces, [breaks[i] for i in chunk] if breaks else None,
            config.glossary_inflect)
        outputs.update((i, hyps[:nbest]) for i, hyps in zip(chunk, found))
    return [outputs[i] for i in range(len(src_ids))]


def check_constrained(config: DecodeConfig) -> None:
    """Constraints are placed by beam search: a one-line error for settings without one."""
    if config.sampling:
        raise UserError("terms (--glossary, --terms-file): sampling draws each token and "
                        "places none; drop --sampling")
    if config.beam < 2:
        raise UserError("terms (--glossary, --terms-file) are placed by beam search: give "
                        "--beam 2 or more")
