"""Decoding from <sos>: greedy and beam search over any `Seq2Seq` model.

Search sees only the model interface (start, decode_step, state.select), never a model family.
Both searches run a batch of sentences at once; a sentence leaves the batch as soon as it is
finished, so later steps only pay for the sentences still going. The output of a sentence has
at most max_len_a * source length + max_len_b tokens, and at least min_len (<eos> is ruled
out before that: with min_len equal to the limit every sentence takes the same number of
steps, which makes decoding speed comparable across toolkits).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .config import DecodeConfig
from .data import source_tensor
from .models.base import Seq2Seq
from .special_tokens import EOS_ID, PAD_ID, SOS_ID


def max_output_lengths(src: torch.Tensor, a: float, b: int) -> torch.Tensor:
    """Per-sentence output length limit a * |src| + b (at least 1): (batch,).
    |src| counts source tokens without the final <eos>."""
    src_lengths = (src != PAD_ID).sum(1) - 1
    return (a * src_lengths.float() + b).long().clamp(min=1)


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty ((5 + length) / 6) ** alpha; log-probabilities are divided by it."""
    return ((5.0 + length) / 6.0) ** alpha


def forbid_special_tokens(logits: torch.Tensor, allow_eos: bool = True) -> torch.Tensor:
    """Logits with <pad> and <sos> ruled out: a translation never contains them; nor <eos>
    while the output is shorter than its minimum length."""
    logits = logits.clone()
    logits[:, [PAD_ID, SOS_ID] if allow_eos else [PAD_ID, SOS_ID, EOS_ID]] = float("-inf")
    return logits


@torch.inference_mode()
def greedy_search(model: Seq2Seq, src: torch.Tensor, limits: torch.Tensor,
                  min_len: int = 0) -> list[list[int]]:
    """Pick the most probable token at each step. Returns token ids without <sos>/<eos>."""
    state = model.start(src)
    alive = torch.arange(src.size(0), device=src.device)  # original rows still decoding
    tokens = torch.full_like(alive, SOS_ID)
    outputs: list[list[int]] = [[] for _ in range(src.size(0))]
    for step in range(int(limits.max())):
        logits, state = model.decode_step(tokens, state)
        tokens = forbid_special_tokens(logits, step >= min_len).argmax(-1)  # (alive,)
        done = (tokens == EOS_ID) | (step + 1 >= limits[alive])
        for row, token in zip(alive.tolist(), tokens.tolist()):
            if token != EOS_ID:
                outputs[row].append(token)
        if done.all():
            break
        if done.any():
            keep = (~done).nonzero().squeeze(1)
            state, tokens, alive = state.select(keep), tokens[keep], alive[keep]
    return outputs


@dataclass
class Hypotheses:
    """The finished hypotheses of each sentence: (score, token ids) pairs, best kept later."""

    beam_size: int
    finished: list[list[tuple[float, list[int]]]] = field(default_factory=list)

    def is_full(self, sentence: int) -> bool:
        return len(self.finished[sentence]) >= self.beam_size

    def add(self, sentence: int, tokens: list[int], log_prob: float, ended_with_eos: bool,
            alpha: float) -> None:
        """Finish one hypothesis; `tokens` holds its last token unless that was <eos>. Its
        score is log P / length_penalty over the tokens scored (<eos> included)."""
        if not self.is_full(sentence):
            length = len(tokens) + ended_with_eos
            self.finished[sentence].append((log_prob / length_penalty(length, alpha), tokens))

    def best(self) -> list[list[int]]:
        return [max(hyps, key=lambda h: h[0])[1] for hyps in self.finished]


@dataclass
class Beams:
    """The live hypotheses of the sentences still decoding, k per sentence."""

    scores: torch.Tensor  # (sentences, k): total log-probability
    history: torch.Tensor  # (sentences, k, step): tokens so far
    alive: torch.Tensor  # (sentences,): each row's sentence in the input batch

    def finish_ended(self, hypotheses: Hypotheses, beams, tokens, top_scores, ends,
                     alpha: float) -> None:
        """Move the candidates that end (<eos> or the length limit) among each sentence's top
        k into `hypotheses`. beams, tokens, top_scores, ends: (sentences, 2k)."""
        k = hypotheses.beam_size
        for row, col in ends[:, :k].nonzero().tolist():
            tokens_so_far = self.history[row, beams[row, col]].tolist()
            token = tokens[row, col].item()
            ended_with_eos = token == EOS_ID
            if not ended_with_eos:  # stopped by the length limit: keep the last token
                tokens_so_far.append(token)
            hypotheses.add(self.alive[row].item(), tokens_so_far, top_scores[row, col].item(),
                           ended_with_eos, alpha)


@torch.inference_mode()
def beam_search(model: Seq2Seq, src: torch.Tensor, limits: torch.Tensor, beam_size: int,
                alpha: float, min_len: int = 0) -> list[list[int]]:
    """Keep the `beam_size` best partial translations of each sentence.

    A hypothesis that emits <eos> (or reaches the length limit) is finished with the score
    log P / length_penalty; a sentence is done once it has `beam_size` finished hypotheses.
    """
    n, k, device = src.size(0), beam_size, src.device
    state = model.start(src).select(torch.arange(n, device=device).repeat_interleave(k))
    scores = torch.full((n, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: only the first one may expand
    beams = Beams(scores, torch.empty(n, k, 0, dtype=torch.long, device=device),
                  torch.arange(n, device=device))
    hypotheses = Hypotheses(k, [[] for _ in range(n)])
    last = torch.full((n * k,), SOS_ID, dtype=torch.long, device=device)
    for step in range(int(limits.max())):
        logits, state = model.decode_step(last, state)
        log_probs = torch.log_softmax(forbid_special_tokens(logits.float(), step >= min_len),
                                      dim=-1)  # (n*k, vocab)
        rows, tokens, at_limit = advance(beams, hypotheses, log_probs, limits, alpha)
        done = at_limit | torch.tensor([hypotheses.is_full(s) for s in beams.alive.tolist()],
                                       device=device)
        if done.all():
            break
        keep = (~done).nonzero().squeeze(1)
        state = state.select(rows[keep].view(-1))
        beams = Beams(beams.scores[keep], beams.history[keep], beams.alive[keep])
        last = tokens[keep].view(-1)
    return hypotheses.best()


def advance(beams: Beams, hypotheses: Hypotheses, log_probs: torch.Tensor,
            limits: torch.Tensor, alpha: float):
    """One step of beam search: extend every live hypothesis by every token, finish those that
    end, and keep the k best that go on (updating `beams` in place). Returns the state rows
    they came from (sentences, k), their new tokens (sentences, k), and which sentences have
    reached their length limit (sentences,)."""
    sentences, k, vocab = len(beams.alive), hypotheses.beam_size, log_probs.size(-1)
    candidates = (beams.scores.view(-1, 1) + log_probs).view(sentences, k * vocab)
    top_scores, top_ids = candidates.topk(2 * k, dim=1)  # (n, 2k): >= k are not <eos>
    parents, tokens = top_ids // vocab, top_ids % vocab
    at_limit = beams.history.size(2) + 1 >= limits[beams.alive]  # (n,)
    ends = (tokens == EOS_ID) | at_limit.unsqueeze(1)
    beams.finish_ended(hypotheses, parents, tokens, top_scores, ends, alpha)
    # Continue with the k best candidates that did not end.
    beams.scores, pos = top_scores.masked_fill(ends, float("-inf")).topk(k, dim=1)
    rows = (torch.arange(sentences, device=log_probs.device) * k).unsqueeze(1)
    rows = rows + parents.gather(1, pos)  # (n, k): rows of the flat (n*k) state
    tokens = tokens.gather(1, pos)  # (n, k)
    step = beams.history.size(2)
    flat = beams.history.reshape(sentences * k, step)
    beams.history = torch.cat([flat[rows.view(-1)].view(sentences, k, step),
                               tokens.unsqueeze(2)], dim=2)
    return rows, tokens, at_limit


def search(model: Seq2Seq, src: torch.Tensor, config: DecodeConfig) -> list[list[int]]:
    """Translate a padded source batch (batch, src_len) into lists of target ids."""
    limits = max_output_lengths(src, config.max_len_a, config.max_len_b)
    limits = limits.clamp(min=config.min_len).clamp(max=model.max_positions)
    if config.beam <= 1:
        return greedy_search(model, src, limits, config.min_len)
    return beam_search(model, src, limits, config.beam, config.alpha, config.min_len)


def translate_ids(model: Seq2Seq, src_ids: list[list[int]], config: DecodeConfig,
                  device: torch.device) -> list[list[int]]:
    """Translate many sentences: sorted by length into batches of similar length, then
    returned in the input order. Empty sources give empty outputs; sources longer than the
    model's positions are truncated."""
    src_ids = [s[: model.max_positions - 1] for s in src_ids]  # room for <eos>
    outputs: list[list[int]] = [[] for _ in src_ids]
    order = sorted((i for i, s in enumerate(src_ids) if s), key=lambda i: len(src_ids[i]))
    for start in range(0, len(order), config.batch_size):
        chunk = order[start : start + config.batch_size]
        src = source_tensor([src_ids[i] for i in chunk]).to(device)
        for i, ids in zip(chunk, search(model, src, config)):
            outputs[i] = ids
    return outputs
