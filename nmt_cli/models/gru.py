"""A GRU encoder-decoder with attention (Bahdanau et al., 2015; Luong et al., 2015).

Encoder: embeddings, a bidirectional GRU; each source position's forward and backward states
are projected to one memory vector (the keys and values of attention).

Decoder, at each target step t, with the previous token y_{t-1} and hidden state s_{t-1}:
- additive (Bahdanau): attend with s_{t-1}, then feed [embed(y_{t-1}); context] to the GRU
- dot / general (Luong): run the GRU on embed(y_{t-1}) to get s_t, then attend with s_t
In both, the context vector (the weighted sum of memory vectors) is combined with the decoder
state, tanh(W_c [s_t; context]), and a linear layer gives logits over the target vocabulary.

Luong attention does not feed back into the GRU, so under full teacher forcing the GRU runs
over the whole target sequence at once; Bahdanau attention needs the step-by-step loop.

With attention "none" (the encoder-decoder of Cho et al., 2014, and Sutskever et al., 2014)
the memory is one vector, the mean of the encoder's states: the decoder reads that fixed
summary at every step, as its GRU input and in its output layer. This is the bottleneck that
attention removes; the same code and search run it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..attention import attend_with_scores, make_score, padding_mask
from ..config import ModelConfig
from ..dropout import Dropout
from ..special_tokens import PAD_ID
from .base import DecoderState, Seq2Seq


def run_gru(rnn: nn.GRU, x: torch.Tensor, hidden: torch.Tensor):
    """Run a GRU in float32: CUDA autocast would run it in float16 with no gradient scaler."""
    with torch.autocast(x.device.type, enabled=False):
        return rnn(x.float(), hidden.float())


@dataclass
class GRUState(DecoderState):
    hidden: torch.Tensor  # (batch, d_model): s_{t-1}
    memory: torch.Tensor  # (batch, src_len, d_model): attention values
    keys: torch.Tensor  # (batch, src_len, d_model): memory as the score function needs it
    src_mask: torch.Tensor  # (batch, 1, src_len)
    weights: torch.Tensor | None = None  # (batch, 1, src_len): attention of the last step


class GRUSeq2Seq(Seq2Seq):
    def __init__(self, config: ModelConfig, src_vocab: int, tgt_vocab: int, joint_vocab: bool):
        super().__init__()
        d = config.d_model
        self.attention = config.attention
        self.max_positions = config.max_positions  # inputs are cut to this many tokens
        # Bahdanau (and the summary of "none"): the context vector is an input of the GRU
        self.feeds_context = config.attention in ("additive", "none")
        self.tgt_embedding = nn.Embedding(tgt_vocab, d, padding_idx=PAD_ID)
        share = config.tie_embeddings and joint_vocab
        self.src_embedding = (self.tgt_embedding if share
                              else nn.Embedding(src_vocab, d, padding_idx=PAD_ID))
        self.encoder_rnn = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.memory_proj = nn.Linear(2 * d, d)  # [forward; backward] -> memory vector
        self.bridge = nn.Linear(d, d)  # mean of memory -> initial decoder state
        self.decoder_rnn = nn.GRU(2 * d if self.feeds_context else d, d, batch_first=True)
        self.score = make_score(config.attention, d)
        self.combine = nn.Linear(2 * d, d)  # W_c [s_t; context]
        self.dropout = Dropout(config.dropout)
        self.output_proj = nn.Linear(d, tgt_vocab, bias=False)
        if config.tie_embeddings:
            self.output_proj.weight = self.tgt_embedding.weight

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        lengths = (src != PAD_ID).sum(1).cpu()
        x = self.dropout(self.src_embedding(src)).float()  # (batch, src_len, d)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        with torch.autocast(src.device.type, enabled=False):
            states, _ = self.encoder_rnn(packed)
        states, _ = pad_packed_sequence(states, batch_first=True, total_length=src.size(1))
        return torch.tanh(self.memory_proj(states))  # (batch, src_len, d)

    def init_state(self, src: torch.Tensor, memory: torch.Tensor) -> GRUState:
        src_mask = padding_mask(src)  # (batch, 1, src_len)
        lengths = src_mask.sum(-1)  # (batch, 1)
        mean = (memory * src_mask.transpose(1, 2)).sum(1) / lengths  # (batch, d)
        hidden = torch.tanh(self.bridge(mean))
        if self.attention == "none":  # one memory vector: the summary of the whole source
            memory, src_mask = mean.unsqueeze(1), src_mask[:, :, :1]  # (batch, 1, d), (b, 1, 1)
        return GRUState(hidden, memory, self.score.project_keys(memory), src_mask)

    def mix_context(self, hidden: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """The output features tanh(W_c [h; c]) that mix the decoder state h with the context
        vector c (Luong's "attentional hidden state"): (..., d)."""
        return self.dropout(torch.tanh(self.combine(torch.cat([hidden, context], dim=-1))))

    def decode_step(self, prev_tokens: torch.Tensor, state: GRUState):
        features, state = self.step_features(prev_tokens, state)
        return self.output_proj(features), state  # logits: (batch, vocab)

    def step_features(self, prev_tokens: torch.Tensor, state: GRUState):
        embedded = self.dropout(self.tgt_embedding(prev_tokens)).unsqueeze(1)  # (batch, 1, d)
        hidden = state.hidden.unsqueeze(0)  # (1, batch, d)
        if self.feeds_context:  # Bahdanau: attend with s_{t-1}, then step the GRU
            scores = self.score(state.hidden.unsqueeze(1), state.keys)  # (batch, 1, src_len)
            context, weights = attend_with_scores(scores, state.memory, state.src_mask)
            _, hidden = run_gru(self.decoder_rnn, torch.cat([embedded, context], -1), hidden)
        else:  # Luong: step the GRU, then attend with s_t
            _, hidden = run_gru(self.decoder_rnn, embedded, hidden)
            scores = self.score(hidden.transpose(0, 1), state.keys)  # (batch, 1, src_len)
            context, weights = attend_with_scores(scores, state.memory, state.src_mask)
        hidden = hidden.squeeze(0)  # (batch, d)
        features = self.mix_context(hidden, context.squeeze(1))  # (batch, d)
        return features, GRUState(hidden, state.memory, state.keys, state.src_mask, weights)

    def features(self, src: torch.Tensor, tgt_in: torch.Tensor,
                 teacher_forcing_ratio: float = 1.0) -> torch.Tensor:
        return self.features_and_attention(src, tgt_in, teacher_forcing_ratio)[0]

    def features_and_attention(self, src: torch.Tensor, tgt_in: torch.Tensor,
                               teacher_forcing_ratio: float = 1.0
                               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Features (batch, tgt_len, d) and the attention weights of each step over the
        source (batch, tgt_len, src_len), the GRU's one attention: what it aligns with."""
        state = self.start(src)
        if not self.feeds_context and teacher_forcing_ratio >= 1.0:
            return self.features_parallel(tgt_in, state)
        features, weights, tokens = [], [], tgt_in[:, 0]
        for t in range(tgt_in.size(1)):
            if t > 0 and teacher_forcing_ratio < 1.0:  # feed back the model's own guess
                use_reference = torch.rand(tgt_in.size(0), device=tgt_in.device)
                guess = self.output_proj(features[-1]).argmax(-1)
                tokens = torch.where(use_reference < teacher_forcing_ratio, tgt_in[:, t], guess)
            elif t > 0:
                tokens = tgt_in[:, t]
            step, state = self.step_features(tokens, state)
            features.append(step)
            weights.append(state.weights)
        return torch.stack(features, dim=1), torch.cat(weights, dim=1)

    def features_parallel(self, tgt_in: torch.Tensor, state: GRUState
                          ) -> tuple[torch.Tensor, torch.Tensor]:
        """Luong attention under teacher forcing: the GRU runs over all positions at once.
        Features and attention weights, as features_and_attention gives them."""
        embedded = self.dropout(self.tgt_embedding(tgt_in))  # (batch, tgt_len, d)
        hiddens, _ = run_gru(self.decoder_rnn, embedded,
                             state.hidden.unsqueeze(0))  # (batch, tgt_len, d)
        scores = self.score(hiddens, state.keys)  # (batch, tgt_len, src_len)
        context, weights = attend_with_scores(scores, state.memory, state.src_mask)
        return self.mix_context(hiddens, context), weights

    def attention_weights(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Attention weights of every target step over the source: (batch, tgt_len, src_len)."""
        return self.features_and_attention(src, tgt_in)[1]
