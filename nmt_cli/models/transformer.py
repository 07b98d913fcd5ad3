"""The Transformer encoder-decoder (Vaswani et al., 2017).

Encoder layer:  x = x + SelfAttention(x);  x = x + FeedForward(x)
Decoder layer:  x = x + MaskedSelfAttention(x)            (causal mask: no peeking ahead)
                x = x + CrossAttention(x, memory)          (queries from the decoder,
                                                            keys/values from the encoder)
                x = x + FeedForward(x)
Each sub-layer sits in a residual connection with LayerNorm: before it (pre-norm, default) or
after the sum (post-norm, as in the paper). Token embeddings are scaled by √d_model and summed
with the sinusoidal positional encoding; a final linear layer gives logits over the target
vocabulary (softmax turns them into probabilities).

On the CPU the encoder's position-wise layers (projections, feed-forward, LayerNorm) run on the
real source tokens only, packed as rows, skipping the padding; attention unpacks them.

When decoding step by step, each decoder layer keeps the keys and values of the positions
already produced (and of the encoder memory), so a step computes one new position only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
from torch import nn

from ..attention import MultiHeadAttention, RealPositions, padding_mask
from ..config import ModelConfig
from ..devices import in_row_blocks, linear, matmul_input
from ..dropout import Dropout, add_dropout, relu_dropout
from ..guided_alignment import aligning_attention, alignment_layer
from .base import DecoderState, Seq2Seq, pick_rows


class PositionalEncoding(nn.Module):
    """Sinusoidal positional encoding:
    PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))."""

    def __init__(self, d_model: int, max_positions: int):
        super().__init__()
        position = torch.arange(max_positions).unsqueeze(1)  # (positions, 1)
        frequency = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        encoding = torch.zeros(max_positions, d_model)
        encoding[:, 0::2] = torch.sin(position * frequency)
        encoding[:, 1::2] = torch.cos(position * frequency)
        self.register_buffer("encoding", encoding, persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """x (batch, len, d_model) at positions offset .. offset+len-1."""
        return x + self.encoding[offset : offset + x.size(1)]


class FeedForward(nn.Module):
    """Position-wise feed-forward network: FFN(x) = W_2 ReLU(W_1 x + b_1) + b_2."""

    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.expand = nn.Linear(d_model, d_ff)
        self.contract = nn.Linear(d_ff, d_model)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return in_row_blocks(self.each_position, x)

    def each_position(self, x: torch.Tensor) -> torch.Tensor:
        hidden = relu_dropout(linear(self.expand, x), self.dropout, self.training)
        return linear(self.contract, hidden)


class Residual(nn.Module):
    """Residual connection with LayerNorm around one sub-layer (pre- or post-norm)."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = dropout
        self.norm_first = norm_first

    def forward(self, x: torch.Tensor, sublayer) -> tuple[torch.Tensor, object]:
        """`sublayer(h)` returns (output, extra); extra (weights, cache) is passed through."""
        out, extra = sublayer(matmul_input(self.norm(x) if self.norm_first else x))
        x = add_dropout(x, out, self.dropout, self.training)  # x + dropout(out)
        return (x if self.norm_first else self.norm(x)), extra


class EncoderLayer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        d, drop = config.d_model, config.dropout
        # Each sub-layer, then the residual connection and LayerNorm around it.
        self.self_attention = MultiHeadAttention(d, config.num_heads, drop)
        self.attention_block = Residual(d, drop, config.norm_first)
        self.feed_forward = FeedForward(d, config.d_ff, drop)
        self.feed_forward_block = Residual(d, drop, config.norm_first)

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor, need_weights: bool = False,
                real: RealPositions | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Returns the output and, if asked, the self-attention weights. With `real`, x holds
        the rows of the real positions only (rows, d_model), and so does the output."""
        x, weights = self.attention_block(
            x, lambda h: self.self_attention(h, h, src_mask, need_weights=need_weights, real=real))
        x, _ = self.feed_forward_block(x, lambda h: (self.feed_forward(h), None))
        return x, weights


class DecoderLayer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        d, drop = config.d_model, config.dropout
        self.self_attention = MultiHeadAttention(d, config.num_heads, drop)  # masked (causal)
        self.self_attention_block = Residual(d, drop, config.norm_first)
        self.cross_attention = MultiHeadAttention(d, config.num_heads, drop)  # over the memory
        self.cross_attention_block = Residual(d, drop, config.norm_first)
        self.feed_forward = FeedForward(d, config.d_ff, drop)
        self.feed_forward_block = Residual(d, drop, config.norm_first)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor,
                need_weights: bool = False, need_cross_weights: bool = False
                ) -> tuple[torch.Tensor, tuple]:
        """Teacher forcing over all target positions at once, under the causal mask.
        Returns the output and, if asked, the (self, cross) attention weights (with
        `need_cross_weights`, the cross-attention's alone)."""
        x, self_weights = self.self_attention_block(
            x, lambda h: self.self_attention(h, h, causal=True, need_weights=need_weights))
        cross = need_weights or need_cross_weights
        x, cross_weights = self.cross_attention_block(
            x, lambda h: self.cross_attention(h, memory, src_mask, need_weights=cross))
        x, _ = self.feed_forward_block(x, lambda h: (self.feed_forward(h), None))
        return x, (self_weights, cross_weights)

    def step(self, x: torch.Tensor, cache: tuple, position: int, memory_cache: tuple,
             src_mask: torch.Tensor):
        """One new position x (rows, 1, d_model). `cache` holds this layer's keys and values
        of the earlier positions, one row per hypothesis, in buffers that this step writes
        into (`KeyValueCache`); `memory_cache` the keys and values of the memory, one row per
        sentence (its beams are rows next to each other in x)."""

        def self_attend(h):
            key, value = self.self_attention.keys_values(h)  # (rows, heads, 1, d_head)
            buffers, (key, value) = KeyValueCache.append(cache, position, key, value)
            return self.self_attention.attend(h, key, value)[0], buffers

        def cross_attend(h):
            # A sentence's beams read the same memory: as that sentence's queries, side by side.
            sentences, d = memory_cache[0].size(0), h.size(-1)
            out, _ = self.cross_attention.attend(h.reshape(sentences, -1, d), *memory_cache,
                                                 src_mask)
            return out.reshape(h.shape), None

        x, cache = self.self_attention_block(x, self_attend)
        x, _ = self.cross_attention_block(x, cross_attend)
        x, _ = self.feed_forward_block(x, lambda h: (self.feed_forward(h), None))
        return x, cache


class KeyValueCache:
    """The decoder's self-attention keys and values of the positions decoded so far, kept in
    buffers (rows, capacity, heads, d_head) that grow by doubling: each step writes its one
    new position in place, where concatenating would copy all the earlier ones (5.7% of a
    profiled greedy decode on two CPU cores, and a cost that grows with the output's length).
    Each row's positions lie together, so that picking rows for beam search copies one block
    a row. A state is stepped once: the step after it writes into the same buffers."""

    FIRST_CAPACITY = 16  # positions
    STRIDED_OUTPUT_DEVICES = ("cpu", "cuda")  # whose index_select writes through strides

    @staticmethod
    def empty(rows: int, heads: int, d_head: int, like: torch.Tensor) -> tuple:
        buffer = like.new_empty(rows, KeyValueCache.FIRST_CAPACITY, heads, d_head)
        return buffer, torch.empty_like(buffer)

    @staticmethod
    def append(buffers: tuple, position: int, *new: torch.Tensor) -> tuple[tuple, tuple]:
        """Write `new` (rows, heads, 1, d_head) at `position`, after growing full buffers.
        Returns the buffers and, as (rows, heads, position + 1, d_head), their filled part."""
        if position == buffers[0].size(1):
            buffers = tuple(KeyValueCache.copy(buffer, None, position, 2 * position)
                            for buffer in buffers)
        for buffer, tensor in zip(buffers, new):
            buffer[:, position] = tensor.squeeze(2)
        return buffers, tuple(buffer[:, :position + 1].transpose(1, 2) for buffer in buffers)

    @staticmethod
    def copy(buffer: torch.Tensor, rows: torch.Tensor | None, filled: int,
             capacity: int | None = None) -> torch.Tensor:
        """A new buffer holding the first `filled` positions of `rows` (all rows if None)."""
        capacity = buffer.size(1) if capacity is None else capacity
        count = buffer.size(0) if rows is None else rows.numel()
        copied = buffer.new_empty(count, capacity, *buffer.shape[2:])
        # each row's filled positions as one block: (rows, filled * heads * d_head)
        block = filled * buffer.size(2) * buffer.size(3)
        source, target = (b.flatten(1)[:, :block] for b in (buffer, copied))
        if rows is None:
            target.copy_(source)
        elif buffer.device.type in KeyValueCache.STRIDED_OUTPUT_DEVICES:
            torch.index_select(source, 0, rows, out=target)
        else:
            target.copy_(source.index_select(0, rows))
        return copied

    @staticmethod
    def select(cache: list[tuple], rows: torch.Tensor, filled: int) -> list[tuple]:
        """Each layer's buffers for `rows` (reordered, repeated or dropped), new ones."""
        return [tuple(KeyValueCache.copy(buffer, rows, filled) for buffer in layer)
                for layer in cache]


@dataclass
class TransformerState(DecoderState):
    src_mask: torch.Tensor  # (sentences, 1, src_len)
    # per decoder layer: self K, V buffers (rows, capacity, heads, d_head), positions before
    # `position` filled (KeyValueCache)
    cache: list[tuple[torch.Tensor, ...]]
    memory_cache: list[tuple[torch.Tensor, ...]]  # per layer: cross K, V (sentences, ...)
    position: int  # index of the next target position
    beams: int = 1  # rows per sentence

    def select(self, indices: torch.Tensor, beams: int | None = None) -> TransformerState:
        """Rows `indices` of the self-attention cache; the sentences they belong to of what
        a sentence's beams share (the memory's keys and values and the source mask), so beam
        search never copies those per beam."""
        beams = beams or self.beams
        sentences = indices.view(-1, beams)[:, 0] // self.beams
        return TransformerState(pick_rows(self.src_mask, sentences),
                                KeyValueCache.select(self.cache, indices, self.position),
                                pick_rows(self.memory_cache, sentences), self.position, beams)


def skip_padding(src: torch.Tensor) -> RealPositions | None:
    """The source's real positions, for the encoder to run its position-wise layers on those
    alone: on the CPU, where matrix products take most of a training step, and padding is 13%
    of the source positions of a Multi30k batch (the encoder's products on it, 4% of all of a
    step's). Not on a GPU, where finding the positions waits for the device, nor under
    torch.compile (a row count that depends on the data would break its graph)."""
    if src.device.type == "cpu" and not torch.compiler.is_compiling():
        return RealPositions(src)
    return None


class Transformer(Seq2Seq):
    def __init__(self, config: ModelConfig, src_vocab: int, tgt_vocab: int, joint_vocab: bool):
        super().__init__()
        d = config.d_model
        self.d_model = d
        self.max_positions = config.max_positions  # positions the encoding covers
        self.alignment_heads = config.alignment_heads
        self.tgt_embedding = nn.Embedding(tgt_vocab, d)
        share = config.tie_embeddings and joint_vocab
        self.src_embedding = self.tgt_embedding if share else nn.Embedding(src_vocab, d)
        self.positional_encoding = PositionalEncoding(d, config.max_positions)
        self.dropout = Dropout(config.dropout)
        self.encoder_layers = nn.ModuleList(
            EncoderLayer(config) for _ in range(config.num_encoder_layers))
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(config) for _ in range(config.num_decoder_layers))
        # Pre-norm stacks end with a LayerNorm; post-norm layers already end in one.
        final = (lambda: nn.LayerNorm(d)) if config.norm_first else nn.Identity
        self.encoder_norm, self.decoder_norm = final(), final()
        self.output_proj = nn.Linear(d, tgt_vocab, bias=False)
        self._init_weights()
        if config.tie_embeddings:
            self.output_proj.weight = self.tgt_embedding.weight

    def _init_weights(self) -> None:
        for name, param in self.named_parameters():
            if "embedding" in name:
                nn.init.normal_(param, std=self.d_model**-0.5)
            elif param.dim() > 1:
                nn.init.xavier_uniform_(param)

    def embed(self, tokens: torch.Tensor, embedding: nn.Embedding, offset: int = 0):
        """Scaled embeddings plus positions: (batch, len) -> (batch, len, d_model)."""
        x = embedding(tokens) * math.sqrt(self.d_model)
        return self.dropout(self.positional_encoding(x, offset))

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        return self.encode_with_weights(src)[0]

    def encode_with_weights(self, src: torch.Tensor,
                            need_weights: bool = False) -> tuple[torch.Tensor, list]:
        """The memory (batch, src_len, d_model) and, if asked, each layer's self-attention
        weights (batch, heads, src_len, src_len)."""
        src_mask, real = padding_mask(src), skip_padding(src)
        x = self.embed(src, self.src_embedding)
        if real is not None:
            x = real.pack(x)  # (rows, d_model): the real tokens only
        weights = []
        for layer in self.encoder_layers:
            x, layer_weights = layer(x, src_mask, need_weights, real)
            weights.append(layer_weights)
        x = self.encoder_norm(x)
        return (x if real is None else real.unpack(x)), weights

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor,
               need_weights: bool = False, cross_weights_of: int | None = None
               ) -> tuple[torch.Tensor, list]:
        """Features (batch, tgt_len, d_model) and, if asked, each layer's (self, cross)
        attention weights; with `cross_weights_of`, that layer's cross-attention weights."""
        x = self.embed(tgt_in, self.tgt_embedding)
        memory, weights = matmul_input(memory), []  # read by every layer's cross-attention
        for index, layer in enumerate(self.decoder_layers):
            x, layer_weights = layer(x, memory, src_mask, need_weights, index == cross_weights_of)
            weights.append(layer_weights)
        return self.decoder_norm(x), weights  # features: (batch, tgt_len, d_model)

    def features(self, src: torch.Tensor, tgt_in: torch.Tensor,
                 teacher_forcing_ratio: float = 1.0) -> torch.Tensor:
        """Teacher forcing only: every position reads the reference prefix (ratio 1)."""
        return self.decode(tgt_in, self.encode(src), padding_mask(src))[0]

    def features_and_attention(self, src: torch.Tensor, tgt_in: torch.Tensor,
                               teacher_forcing_ratio: float = 1.0
                               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced features, and the aligning attention (`aligning_attention`) of the
        aligning decoder layer (batch, tgt_len, src_len): what guided alignment teaches. Only
        that layer writes its weights out."""
        layer = alignment_layer(len(self.decoder_layers))
        features, weights = self.decode(tgt_in, self.encode(src), padding_mask(src),
                                        cross_weights_of=layer)
        return features, aligning_attention(weights[layer][1], self.alignment_heads)

    def cross_attention_weights(self, src: torch.Tensor, tgt_in: torch.Tensor) -> list:
        """Per decoder layer, encoder-decoder attention weights (batch, heads, tgt, src)."""
        return [cross for _, cross in self.decode(tgt_in, self.encode(src), padding_mask(src),
                                                  need_weights=True)[1]]

    def self_attention_weights(self, src: torch.Tensor, tgt_in: torch.Tensor
                               ) -> tuple[list, list]:
        """Per layer, the encoder's self-attention weights (batch, heads, src, src) and the
        decoder's masked self-attention weights (batch, heads, tgt, tgt)."""
        memory, encoder = self.encode_with_weights(src, need_weights=True)
        _, decoder = self.decode(tgt_in, memory, padding_mask(src), need_weights=True)
        return encoder, [self_weights for self_weights, _ in decoder]

    def init_state(self, src: torch.Tensor, memory: torch.Tensor) -> TransformerState:
        cache, memory_cache = [], []
        for layer in self.decoder_layers:
            cross_key, cross_value = layer.cross_attention.keys_values(memory)
            heads, d_head = layer.self_attention.num_heads, layer.self_attention.d_head
            cache.append(KeyValueCache.empty(src.size(0), heads, d_head, cross_key))
            memory_cache.append((cross_key, cross_value))
        return TransformerState(padding_mask(src), cache, memory_cache, 0)

    def decode_step(self, prev_tokens: torch.Tensor, state: TransformerState):
        x = self.embed(prev_tokens.unsqueeze(1), self.tgt_embedding, state.position)
        cache = []
        for layer, layer_cache, memory_cache in zip(self.decoder_layers, state.cache,
                                                    state.memory_cache):
            x, layer_cache = layer.step(x, layer_cache, state.position, memory_cache,
                                        state.src_mask)
            cache.append(layer_cache)
        logits = self.output_proj(self.decoder_norm(x)).squeeze(1)  # (rows, vocab)
        return logits, dataclasses.replace(state, cache=cache, position=state.position + 1)
