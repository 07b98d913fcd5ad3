"""End to end on a toy task: each model family learns to reverse a sequence."""

import dataclasses

import pytest
import torch

from nmt_cli.config import DecodeConfig
from nmt_cli.data import Batch
from nmt_cli.loss import output_cross_entropy
from nmt_cli.models import build_model
from nmt_cli.search import translate_ids

from conftest import TINY

VOCAB = 14  # 4 special ids + 10 symbols


def reverse_task(count: int, seed: int) -> tuple[list[list[int]], list[list[int]]]:
    generator = torch.Generator().manual_seed(seed)
    sources = []
    for _ in range(count):
        length = int(torch.randint(3, 8, (1,), generator=generator))
        sources.append(torch.randint(4, VOCAB, (length,), generator=generator).tolist())
    return sources, [s[::-1] for s in sources]


@pytest.mark.parametrize(("arch", "attention", "steps"),
                         [("transformer", "additive", 500), ("gru", "dot", 500),
                          ("gru", "additive", 400)])
def test_model_learns_to_reverse_sequences(arch, attention, steps):
    torch.manual_seed(0)
    config = dataclasses.replace(TINY, arch=arch, attention=attention, d_model=64, d_ff=128)
    model = build_model(config, VOCAB, VOCAB, joint_vocab=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    # Decaying to 0 ends training in a minimum rather than wherever the last noisy step left it.
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)
    for step in range(steps):
        batch = Batch.from_ids(*reverse_task(64, seed=step))
        features = model.features(batch.src, batch.tgt_in)
        loss = output_cross_entropy(features, model.output_proj.weight,
                                    batch.tgt_out) / batch.num_tgt_tokens
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    model.eval()
    sources, targets = reverse_task(200, seed=-1)
    outputs = translate_ids(model, sources, DecodeConfig(beam=1), torch.device("cpu"))
    exact = sum(o == t for o, t in zip(outputs, targets)) / len(targets)
    assert exact >= 0.95, f"{arch}: {exact:.0%} exact matches"
