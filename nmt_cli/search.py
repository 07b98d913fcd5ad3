"""Decoding from <sos>: greedy and beam search, or random sampling, over any `Seq2Seq` model.

Search sees only the model interface (start, decode_step, state.select), never a model family.
Both searches run a batch of sentences at once; a sentence leaves the batch as soon as it is
finished, so later steps only pay for the sentences still going. The output of a sentence has
at most max_len_a * source length + max_len_b tokens, and at least min_len (<eos> is ruled
out before that: with min_len equal to the limit every sentence takes the same number of
steps, which makes decoding speed comparable across toolkits). A sentence may come with a
target prefix (forced decoding, as CTranslate2's target_prefix): its translation opens with
those tokens, which add nothing to its log-probability (they are given, not chosen), and the
search goes on from there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from .config import MAX_BEAM, DecodeConfig
from .data import pad, source_tensor
from .errors import UserError
from .models.base import Seq2Seq
from .special_tokens import EOS_ID, PAD_ID, SOS_ID


def length_limit(src_length: int, a: float, b: int) -> int:
    """The output length limit a * src_length + b (at least 1), computed in float32 and cut
    to an integer, as it was computed on tensors: the same limit on every engine."""
    return max(int(np.float32(a) * np.float32(src_length) + np.float32(b)), 1)


def output_limit(src_length: int, config: DecodeConfig, max_positions: int,
                 prefix_length: int = 0) -> int:
    """A sentence's output length limit: a * |src| + b, raised to min_len and to hold its
    target prefix whole, cut to the positions the model has. Plain Python: CTranslate2's
    engine needs no PyTorch kernels."""
    limit = length_limit(src_length, config.max_len_a, config.max_len_b)
    return min(max(limit, config.min_len, prefix_length), max_positions)


def source_lengths(src: torch.Tensor) -> list[int]:
    """|src| of each sentence of a padded batch: its tokens without the final <eos>."""
    return ((src != PAD_ID).sum(1) - 1).tolist()


def max_output_lengths(src: torch.Tensor, a: float, b: int) -> torch.Tensor:
    """Per-sentence output length limit a * |src| + b (at least 1): (batch,)."""
    return torch.tensor([length_limit(n, a, b) for n in source_lengths(src)], device=src.device)


def output_limits(src: torch.Tensor, config: DecodeConfig, max_positions: int,
                  forced: torch.Tensor | None = None) -> torch.Tensor:
    """Each sentence's output_limit (`forced`: the prefixes, prefix_tensor): (batch,)."""
    prefix_lengths = ((forced != PAD_ID).sum(1).tolist() if forced is not None
                      else [0] * src.size(0))
    return torch.tensor([output_limit(n, config, max_positions, p)
                         for n, p in zip(source_lengths(src), prefix_lengths)],
                        device=src.device)


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6) ** alpha; log-probabilities are divided by it."""
    return ((5.0 + length) / 6.0) ** alpha


def forbid_special_tokens(logits: torch.Tensor, allow_eos: bool = True) -> torch.Tensor:
    """Logits with <pad> and <sos> ruled out: a translation never contains them; nor <eos>
    while the output is shorter than its minimum length."""
    logits = logits.clone()
    logits[:, [PAD_ID, SOS_ID] if allow_eos else [PAD_ID, SOS_ID, EOS_ID]] = float("-inf")
    return logits


def follow_prefix(scores: torch.Tensor, forced: torch.Tensor | None, step: int) -> torch.Tensor:
    """Scores (logits or log-probabilities, a row per hypothesis) in which a row whose target
    prefix is not over at `step` gives its next token 0 and every other -inf: the prefix is
    given, not chosen, so its tokens add nothing to a hypothesis's log-probability (as in
    CTranslate2). `forced` holds each row's prefix, padded with <pad> (never a token of one);
    None: no row has a prefix."""
    if forced is None or step >= forced.size(1):
        return scores
    wanted = forced[:, step : step + 1]  # (rows, 1)
    vocab = torch.arange(scores.size(-1), device=scores.device)
    only = torch.where(vocab == wanted, 0.0, float("-inf")).to(scores.dtype)  # (rows, vocab)
    return torch.where(wanted != PAD_ID, only, scores)


def prefix_tensor(prefixes: list[list[int]] | None, device: torch.device) -> torch.Tensor | None:
    """The target prefixes of a batch as (batch, longest) ids padded with <pad>; None when
    no sentence has one."""
    if not prefixes or not any(prefixes):
        return None
    return pad(prefixes).to(device)


def block_repeated_ngrams(logits: torch.Tensor, history: torch.Tensor, n: int) -> torch.Tensor:
    """Logits with every token ruled out that would repeat an n-gram of `history` (rows,
    tokens so far): one that, after the last n - 1 tokens, would complete an n-gram already
    there (n = 1: any token already there). DecodeConfig.no_repeat_ngram; CTranslate2 calls
    it no_repeat_ngram_size, and also rules the tokens out before the softmax, as search does
    with <pad>, <sos> and an early <eos>: the probabilities of the tokens left are
    renormalized. <eos> is never in an output, so it stays open; a row left with no token at
    all (min_len rules out <eos>) keeps its logits: the length wins."""
    steps = history.size(1)
    if steps < n:
        return logits
    windows = history.unfold(1, n, 1)  # (rows, steps - n + 1, n): every n-gram so far
    tail = history[:, steps - n + 1 :]  # (rows, n - 1): the tokens a new n-gram starts with
    seen = (windows[..., :-1] == tail.unsqueeze(1)).all(-1)  # (rows, n-grams): same start
    banned = windows[..., -1].masked_fill(~seen, PAD_ID)  # <pad> is ruled out anyway
    blocked = logits.scatter(1, banned, float("-inf"))
    return torch.where(blocked.isinf().all(-1, keepdim=True), logits, blocked)


@dataclass(frozen=True)
class Hypothesis:
    """A finished translation: token ids without <sos>/<eos>, its total log-probability
    (<eos> included when it was emitted) and the score the beam ranks by,
    log P / length_penalty."""

    tokens: list[int]
    log_prob: float
    score: float


def finished(tokens: list[int], log_prob: float, ended_with_eos: bool,
             alpha: float) -> Hypothesis:
    """Score a hypothesis over the tokens scored (<eos> included when it ended with one)."""
    length = len(tokens) + ended_with_eos
    return Hypothesis(tokens, log_prob, log_prob / length_penalty(length, alpha))


@torch.inference_mode()
def greedy_search(model: Seq2Seq, src: torch.Tensor, limits: torch.Tensor,
                  min_len: int = 0) -> list[list[int]]:
    """Pick the most probable token at each step. Returns token ids without <sos>/<eos>."""
    return [hyps[0].tokens for hyps in greedy_search_nbest(model, src, limits, min_len)]


class Sampler:
    """Draws each next token at random (DecodeConfig.sampling) from softmax(logits / T), among
    the k most probable tokens (top-k) and the fewest whose probability reaches p (nucleus
    sampling, Holtzman et al., 2020). `generator` holds the random state."""

    def __init__(self, config: DecodeConfig, generator: torch.Generator):
        self.config, self.generator = config, generator

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        """(rows, vocab) logits, special tokens ruled out -> (rows,) drawn token ids."""
        c = self.config
        logits = logits.float() / c.temperature
        if 0 < c.sampling_topk < logits.size(-1):
            kth = logits.topk(c.sampling_topk, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        if c.sampling_topp < 1.0:
            probs, order = logits.softmax(-1).sort(-1, descending=True)
            outside = probs.cumsum(-1) - probs >= c.sampling_topp  # the first never is
            logits = logits.scatter(-1, order, logits.gather(-1, order).masked_fill(
                outside, float("-inf")))
        return torch.multinomial(logits.softmax(-1), 1, generator=self.generator).squeeze(1)


def new_generator(seed: int, device: torch.device) -> torch.Generator:
    return torch.Generator(device).manual_seed(seed)


@torch.inference_mode()
def greedy_search_nbest(model: Seq2Seq, src: torch.Tensor, limits: torch.Tensor,
                        min_len: int = 0, alpha: float = 1.0, choose: Sampler | None = None,
                        no_repeat_ngram: int = 0, forced: torch.Tensor | None = None
                        ) -> list[list[Hypothesis]]:
    """Greedy search as a 1-best list per sentence, with its log-probability; with `choose`,
    each token is drawn by it instead of being the most probable; `forced`: each sentence's
    target prefix (prefix_tensor). Each step reads the chosen tokens and their
    log-probabilities to the host once."""
    state = model.start(src)
    limits_host = limits.tolist()
    alive = list(range(src.size(0)))  # the original row of each row still decoding
    tokens = torch.full((src.size(0),), SOS_ID, dtype=torch.long, device=src.device)
    history = tokens.new_empty((src.size(0), 0))  # the tokens so far, for no_repeat_ngram
    outputs: list[list[int]] = [[] for _ in alive]
    log_probs, ended = [0.0 for _ in alive], [False for _ in alive]
    for step in range(max(limits_host, default=0)):
        logits, state = model.decode_step(tokens, state)
        logits = forbid_special_tokens(logits, step >= min_len)
        if no_repeat_ngram:
            logits = block_repeated_ngrams(logits, history, no_repeat_ngram)
        allowed = follow_prefix(logits, forced, step)
        # (alive,) the argmax: max finds the same (first) index, on 2 CPU cores in 111 µs for
        # 64 x 8,000 logits where argmax took 342
        tokens = allowed.max(-1).indices if choose is None else choose(allowed)
        chosen = torch.log_softmax(allowed.float(), -1).gather(1, tokens.unsqueeze(1))  # (alive, 1)
        if no_repeat_ngram:
            history = torch.cat([history, tokens.unsqueeze(1)], 1)
        step_tokens, step_log_probs = torch.cat([tokens.double().unsqueeze(0),
                                                 chosen.double().T]).tolist()  # one read
        keep = []
        for i, (row, token) in enumerate(zip(alive, step_tokens)):
            log_probs[row] += step_log_probs[i]
            ended[row] = token == EOS_ID
            if not ended[row]:
                outputs[row].append(int(token))
                if step + 1 < limits_host[row]:
                    keep.append(i)
        if not keep:
            break
        if len(keep) < len(alive):
            rows = torch.tensor(keep, device=src.device)
            state, tokens, alive = state.select(rows), tokens[rows], [alive[i] for i in keep]
            history = history[rows] if no_repeat_ngram else history
            forced = forced[rows] if forced is not None and step + 1 < forced.size(1) else None
    return [[finished(out, log_prob, end, alpha)]
            for out, log_prob, end in zip(outputs, log_probs, ended)]


@dataclass
class Hypotheses:
    """The finished hypotheses of each sentence, ranked once the search is over."""

    beam_size: int
    finished: list[list[Hypothesis]] = field(default_factory=list)

    def is_full(self, sentence: int) -> bool:
        return len(self.finished[sentence]) >= self.beam_size

    def add(self, sentence: int, tokens: list[int], log_prob: float, ended_with_eos: bool,
            alpha: float) -> None:
        """Finish one hypothesis; `tokens` holds its last token unless that was <eos>. Its
        score is log P / length_penalty over the tokens scored (<eos> included)."""
        if not self.is_full(sentence):
            self.finished[sentence].append(finished(tokens, log_prob, ended_with_eos, alpha))

    def ranked(self) -> list[list[Hypothesis]]:
        """Each sentence's hypotheses, best score first (ties keep the order they finished)."""
        return [sorted(hyps, key=lambda h: h.score, reverse=True) for hyps in self.finished]


@dataclass
class BackPointers:
    """The live beams' tokens, kept on the host as back-pointers: at each step, for each of a
    sentence's k beams, the beam it extends and the token it adds. A hypothesis is read back
    only when it finishes, so no step copies whole prefixes."""

    steps: list[list[tuple[list[int], list[int]]]]  # per sentence, per step: (parents, tokens)

    def tokens(self, sentence: int, beam: int) -> list[int]:
        """The tokens of live beam `beam` of `sentence` after the steps recorded so far."""
        out = []
        for parents, tokens in reversed(self.steps[sentence]):
            out.append(tokens[beam])
            beam = parents[beam]
        return out[::-1]


@dataclass
class StepResult:
    """One sentence's candidates after a step, as read to the host: the 2k best extensions
    (score, parent beam, token, whether it ends) and which k of them go on."""

    scores: list[float]
    parents: list[int]
    tokens: list[int]
    ends: list[bool]
    continuing: list[int]


def read_step(top_scores, parents, tokens, ends, continuing) -> list[StepResult]:
    """All sentences' candidates in one device-to-host copy: (n, 2k) tensors and (n, k)."""
    w = top_scores.size(1)  # 2k
    packed = torch.cat([top_scores.double(), parents.double(), tokens.double(), ends.double(),
                        continuing.double()], dim=1).tolist()
    return [StepResult(row[:w], ints(row[w : 2 * w]), ints(row[2 * w : 3 * w]),
                       [v > 0 for v in row[3 * w : 4 * w]], ints(row[4 * w :]))
            for row in packed]


def ints(values: list[float]) -> list[int]:
    return [int(v) for v in values]


def beam_search(model: Seq2Seq, src: torch.Tensor, limits: torch.Tensor, beam_size: int,
                alpha: float, min_len: int = 0, no_repeat_ngram: int = 0) -> list[list[int]]:
    """The best translation of each sentence found by beam search (beam_search_nbest)."""
    return [hyps[0].tokens for hyps in beam_search_nbest(model, src, limits, beam_size, alpha,
                                                         min_len, no_repeat_ngram)]


@torch.inference_mode()
def beam_search_nbest(model: Seq2Seq, src: torch.Tensor, limits: torch.Tensor,
                      beam_size: int, alpha: float, min_len: int = 0,
                      no_repeat_ngram: int = 0, forced: torch.Tensor | None = None
                      ) -> list[list[Hypothesis]]:
    """Keep the `beam_size` best partial translations of each sentence; return each
    sentence's `beam_size` finished hypotheses, best first. `forced`: each sentence's target
    prefix (prefix_tensor); while it lasts, a beam extends only with its next token, and
    right after it only the best candidate may end the translation (ends_after_prefix).

    A hypothesis that emits <eos> (or reaches the length limit) is finished with the score
    log P / length_penalty; a sentence is done once it has `beam_size` finished hypotheses.
    Each step reads its candidates to the host once (read_step).
    """
    n, k, device = src.size(0), beam_size, src.device
    state = model.start(src).select(torch.arange(n, device=device).repeat_interleave(k), k)
    scores = torch.full((n, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: only the first one may expand
    limits_host, limits = limits.tolist(), limits.to(device)
    alive = list(range(n))  # the sentence of each row still decoding
    hypotheses, history = Hypotheses(k, [[] for _ in alive]), BackPointers([[] for _ in alive])
    last = torch.full((n * k,), SOS_ID, dtype=torch.long, device=device)
    so_far = last.new_empty((n * k, 0))  # each beam's tokens on the device, for no_repeat_ngram
    prefix_lengths = (forced != PAD_ID).sum(1) if forced is not None else None  # (n,)
    longest = forced.size(1) if forced is not None else 0
    forced = forced.repeat_interleave(k, 0) if forced is not None else None  # (n*k, prefix)
    for step in range(max(limits_host, default=0)):
        logits, state = model.decode_step(last, state)
        logits = forbid_special_tokens(logits.float(), step >= min_len)
        if no_repeat_ngram:
            logits = block_repeated_ngrams(logits, so_far, no_repeat_ngram)
        log_probs = follow_prefix(torch.log_softmax(logits, dim=-1), forced, step)  # (n*k, vocab)
        candidates = (scores.view(-1, 1) + log_probs).view(len(alive), -1)  # (n, k*vocab)
        top_scores, top_ids = candidates.topk(2 * k, dim=1)  # (n, 2k): >= k are not <eos>
        parents, tokens = top_ids // log_probs.size(-1), top_ids % log_probs.size(-1)
        ends = (tokens == EOS_ID) | (step + 1 >= limits).unsqueeze(1)
        late = ends_after_prefix(tokens, prefix_lengths, step)
        if late is not None:
            ends = ends & ~late
        # Continue with the k best candidates that did not end.
        scores, continuing = top_scores.masked_fill(ends, float("-inf")).topk(k, dim=1)
        if late is not None:  # they hold their place in the beam, as dead beams
            scores = scores.masked_fill(late.gather(1, continuing), float("-inf"))
        results = read_step(top_scores, parents, tokens, ends, continuing)
        keep = [row for row, (sentence, result) in enumerate(zip(alive, results))
                if not finish_and_extend(sentence, result, step + 1 >= limits_host[sentence],
                                         hypotheses, history, alpha)]
        if not keep:
            break
        rows = (torch.arange(len(alive), device=device) * k).unsqueeze(1)
        rows = rows + parents.gather(1, continuing)  # (n, k): rows of the flat (n*k) state
        index = torch.tensor(keep, device=device)
        state = state.select(rows[index].view(-1))
        scores, limits = scores[index], limits[index]
        last = tokens.gather(1, continuing)[index].view(-1)
        if no_repeat_ngram:
            so_far = torch.cat([so_far[rows[index].view(-1)], last.unsqueeze(1)], 1)
        if prefix_lengths is not None:  # kept until the step after the longest prefix
            forced = forced[rows[index].view(-1)] if step + 1 < longest else None
            prefix_lengths = prefix_lengths[index] if step < longest else None
        alive = [alive[row] for row in keep]
    return hypotheses.ranked()


def ends_after_prefix(tokens: torch.Tensor, prefix_lengths: torch.Tensor | None,
                      step: int) -> torch.Tensor | None:
    """(n, 2k) the candidates that would end a translation right where its prefix ends, the
    best candidate excepted. CTranslate2 makes each of them a dead beam (its issue #277):
    the prefix alone, short, would otherwise often beat every translation that goes on,
    and its beam at that step expands one hypothesis only. None: no prefix ends at `step`."""
    if prefix_lengths is None or step == 0:
        return None
    late = (prefix_lengths == step).unsqueeze(1) & (tokens == EOS_ID)
    late[:, 0] = False
    return late


def finish_and_extend(sentence: int, result: StepResult, at_limit: bool,
                      hypotheses: Hypotheses, history: BackPointers, alpha: float) -> bool:
    """Finish the candidates among the sentence's top k that end, record the k that go on;
    True when the sentence is done (at its length limit, or k hypotheses finished). A
    candidate of probability 0 (a beam with nothing to extend, as while a prefix is forced)
    is never finished."""
    k = hypotheses.beam_size
    for col in range(k):
        if result.ends[col] and result.scores[col] > float("-inf"):
            tokens = history.tokens(sentence, result.parents[col])
            ended_with_eos = result.tokens[col] == EOS_ID
            if not ended_with_eos:  # stopped by the length limit: keep the last token
                tokens.append(result.tokens[col])
            hypotheses.add(sentence, tokens, result.scores[col], ended_with_eos, alpha)
    history.steps[sentence].append(([result.parents[c] for c in result.continuing],
                                    [result.tokens[c] for c in result.continuing]))
    return at_limit or hypotheses.is_full(sentence)


def search(model: Seq2Seq, src: torch.Tensor, config: DecodeConfig) -> list[list[int]]:
    """Translate a padded source batch (batch, src_len) into lists of target ids."""
    return [hyps[0].tokens for hyps in search_nbest(model, src, config)]


def search_nbest(model: Seq2Seq, src: torch.Tensor, config: DecodeConfig,
                 nbest: int = 1, generator: torch.Generator | None = None,
                 forced: torch.Tensor | None = None) -> list[list[Hypothesis]]:
    """The `nbest` best hypotheses of each sentence of a padded source batch, best first;
    at most config.beam (greedy search, beam 1, gives a 1-best list). With config.sampling,
    `nbest` drawn translations of each, best first (`generator`: the random state).
    `forced`: the sentences' target prefixes (prefix_tensor), which every hypothesis opens
    with; the output limit counts them, and is raised to hold a longer one whole."""
    check_nbest(nbest, config)
    limits = output_limits(src, config, model.max_positions, forced)
    if config.sampling:
        choose = Sampler(config, generator or new_generator(config.sampling_seed, src.device))
        rows = torch.arange(src.size(0), device=src.device).repeat_interleave(nbest)
        drawn = [hyps[0] for part in rows.split(config.batch_size)  # batch_size rows at a time
                 for hyps in greedy_search_nbest(
                     model, src[part], limits[part], config.min_len, config.alpha, choose,
                     config.no_repeat_ngram, forced[part] if forced is not None else None)]
        return [sorted(drawn[i : i + nbest], key=lambda h: h.score, reverse=True)
                for i in range(0, len(drawn), nbest)]
    if config.beam <= 1:
        return greedy_search_nbest(model, src, limits, config.min_len, config.alpha,
                                   no_repeat_ngram=config.no_repeat_ngram, forced=forced)
    found = beam_search_nbest(model, src, limits, config.beam, config.alpha, config.min_len,
                              config.no_repeat_ngram, forced)
    return [hyps[:nbest] for hyps in found]


def check_nbest(nbest: int, config: DecodeConfig) -> None:
    """An n-best list holds at least one hypothesis and at most the beam's (or MAX_BEAM
    draws)."""
    if nbest < 1:
        raise UserError(f"--nbest must be at least 1 (got {nbest})")
    if config.sampling:
        if nbest > MAX_BEAM:
            raise UserError(f"--nbest must be at most {MAX_BEAM} (got {nbest})")
    elif nbest > config.beam:
        raise UserError(f"--nbest {nbest} exceeds --beam {config.beam}: the beam finishes only "
                        f"{config.beam} hypotheses per sentence")


def translate_ids(model: Seq2Seq, src_ids: list[list[int]], config: DecodeConfig,
                  device: torch.device, prefixes: list[list[int]] | None = None,
                  after_batch: Callable[[], None] = lambda: None) -> list[list[int]]:
    """Translate many sentences (translate_nbest); an empty source gives an empty output."""
    return [hyps[0].tokens if hyps else []
            for hyps in translate_nbest(model, src_ids, config, device, prefixes=prefixes,
                                        after_batch=after_batch)]


def translate_nbest(model: Seq2Seq, src_ids: list[list[int]], config: DecodeConfig,
                    device: torch.device, nbest: int = 1,
                    generator: torch.Generator | None = None,
                    prefixes: list[list[int]] | None = None,
                    after_batch: Callable[[], None] = lambda: None) -> list[list[Hypothesis]]:
    """The n-best lists of many sentences: sorted by length into batches of similar length,
    then returned in the input order. Empty sources give empty lists; sources longer than
    the model's positions are truncated. Sampling draws from `generator` (default: one
    seeded with config.sampling_seed). `prefixes`: each sentence's target prefix ids (none:
    an empty list), cut to what the model can position. `after_batch` is called after each
    batch (validation stops there on a signal)."""
    if config.sampling and generator is None:
        generator = new_generator(config.sampling_seed, device)
    src_ids = [s[: model.max_positions - 1] for s in src_ids]  # room for <eos>
    outputs: list[list[Hypothesis]] = [[] for _ in src_ids]
    order = sorted((i for i, s in enumerate(src_ids) if s), key=lambda i: len(src_ids[i]))
    for start in range(0, len(order), config.batch_size):
        chunk = order[start : start + config.batch_size]
        src = source_tensor([src_ids[i] for i in chunk]).to(device)
        forced = prefix_tensor([prefixes[i][: model.max_positions] for i in chunk]
                               if prefixes else None, device)
        for i, hyps in zip(chunk, search_nbest(model, src, config, nbest, generator, forced)):
            outputs[i] = hyps
        after_batch()
    return outputs
