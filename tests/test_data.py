"""Reading and checking corpora; token-count batches; the teacher-forcing shift."""

import gzip
import os
import threading

import numpy as np
import pytest
import torch

from nmt_cli.config import UserError
from nmt_cli.data import (
    Batch,
    read_lines,
    read_parallel,
    split_pair,
    token_batches,
    uneven,
)
from nmt_cli.tokenizer import EOS_ID, PAD_ID, SOS_ID


def test_teacher_forcing_shift():
    batch = Batch.from_ids([[5, 6, 7], [8]], [[10, 11], [12, 13, 14]])
    assert batch.src.tolist() == [[5, 6, 7, EOS_ID], [8, EOS_ID, PAD_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[SOS_ID, 10, 11, PAD_ID], [SOS_ID, 12, 13, 14]]
    assert batch.tgt_out.tolist() == [[10, 11, EOS_ID, PAD_ID], [12, 13, 14, EOS_ID]]
    assert batch.num_tgt_tokens == 7


def test_lengths_can_be_padded_to_a_multiple():
    batch = Batch.from_ids([[5, 6, 7], [8]], [[10, 11], [12, 13, 14]], multiple=3)
    assert batch.src.tolist() == [[5, 6, 7, EOS_ID, PAD_ID, PAD_ID], [8, EOS_ID] + [PAD_ID] * 4]
    assert batch.tgt_in.tolist() == [[SOS_ID, 10, 11] + [PAD_ID] * 3, [SOS_ID, 12, 13, 14, PAD_ID,
                                                                        PAD_ID]]
    assert batch.tgt_out.tolist() == [[10, 11, EOS_ID] + [PAD_ID] * 3, [12, 13, 14, EOS_ID, PAD_ID,
                                                                         PAD_ID]]
    assert batch.num_tgt_tokens == 7  # the padding is no target
    assert batch.tgt_out.flatten()[batch.tgt_positions].tolist() == [10, 11, EOS_ID, 12, 13, 14,
                                                                     EOS_ID]
    assert Batch.from_ids([[5, 6]], [[7, 8]], multiple=3).src.size(1) == 3  # already a multiple


def test_token_batches_cover_every_sentence_once_within_the_budget():
    generator = torch.Generator().manual_seed(0)
    src_lens = torch.randint(1, 30, (500,), generator=generator).tolist()
    tgt_lens = torch.randint(1, 30, (500,), generator=generator).tolist()
    batches = token_batches(src_lens, tgt_lens, 256, torch.Generator().manual_seed(1))
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:
        longest = max(max(src_lens[i], tgt_lens[i]) for i in b) + 1
        assert len(b) * longest <= 256
    again = token_batches(src_lens, tgt_lens, 256, torch.Generator().manual_seed(1))
    other = token_batches(src_lens, tgt_lens, 256, torch.Generator().manual_seed(2))
    as_lists = [b.tolist() for b in batches]
    assert as_lists == [b.tolist() for b in again] != [b.tolist() for b in other]


def test_length_sorted_batches_waste_little_padding():
    generator = torch.Generator().manual_seed(0)
    lens = torch.randint(3, 40, (2000,), generator=generator).tolist()
    batches = token_batches(lens, lens, 1024, torch.Generator().manual_seed(0))
    real = sum(lens[i] + 1 for b in batches for i in b)
    padded = sum(len(b) * (max(lens[i] for i in b) + 1) for b in batches)
    assert real / padded > 0.95


def test_reads_gzip_crlf_and_bom(tmp_path):
    path = tmp_path / "train.en.gz"
    with gzip.open(path, "wb") as f:
        f.write("\ufeffHello\r\nWorld\r\n".encode())
    assert read_lines(path) == ["Hello", "World"]


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "train.en"
    path.write_bytes(b"fine\nalso fine\nbad \xff byte\n")
    with pytest.raises(UserError, match=r"train\.en:3: invalid UTF-8"):
        read_lines(path)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(UserError, match="file not found"):
        read_lines(tmp_path / "nope.en")
    (tmp_path / "empty.en").write_text("")
    with pytest.raises(UserError, match="empty"):
        read_lines(tmp_path / "empty.en")
    with pytest.raises(UserError, match="is a directory"):
        read_lines(tmp_path)


def test_a_pipe_reads_as_a_file_does(tmp_path):
    """As `-i <(zcat news.en.gz)` gives it: a named pipe that a writer fills."""
    fifo = tmp_path / "news.en"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("Hello\nWorld\n"), daemon=True)
    writer.start()
    assert read_lines(fifo) == ["Hello", "World"]
    writer.join(timeout=60)


def test_pairs_whose_sides_differ_too_much_in_length_are_dropped():
    assert not uneven([1, 2], [1, 2, 3, 4], 2.0)  # twice as long: kept at 2
    assert uneven([1], [1, 2, 3], 2.0) and uneven([1, 2, 3], [1], 2.0)
    assert not uneven([1], [1] * 50, 0.0)  # 0: off


def test_mismatched_line_counts_name_both_files(tmp_path):
    (tmp_path / "a.en").write_text("one\ntwo\nthree\n")
    (tmp_path / "a.de").write_text("eins\nzwei\n")
    with pytest.raises(UserError, match=r"a\.en has 3 lines, .*a\.de has 2"):
        read_parallel(tmp_path / "a.en", tmp_path / "a.de")


def test_split_names(tmp_path):
    for name in ("train.en.gz", "train.de", "valid.en", "valid.de", "dev.en",
                 "test_2016_flickr.en.gz", "test_2016_flickr.de.gz"):
        (tmp_path / name).write_text("x\n")
    assert [p.name for p in split_pair(tmp_path, "train", "en", "de")] == ["train.en.gz",
                                                                           "train.de"]
    assert [p.name for p in split_pair(tmp_path, "val", "en", "de")] == ["valid.en", "valid.de"]
    assert [p.name for p in split_pair(tmp_path, "test", "en", "de")] == [
        "test_2016_flickr.en.gz", "test_2016_flickr.de.gz"]
    with pytest.raises(UserError, match="no train file for language 'fr'"):
        split_pair(tmp_path, "train", "en", "fr")


def test_named_test_sets_pair_by_name_not_by_order(tmp_path):
    """A corpus holding test_2016.en (and no German of it) and test_2017.en/.de: the pair is
    2017's; a source of one set was scored against another's references."""
    for name in ("test_2016.en", "test_2017.en.gz", "test_2017.de", "test_2018.de"):
        (tmp_path / name).write_text("x\n")
    assert [p.name for p in split_pair(tmp_path, "test", "en", "de")] == ["test_2017.en.gz",
                                                                          "test_2017.de"]
    (tmp_path / "test_2017.de").unlink()
    with pytest.raises(UserError, match=r"no test file in 'en' has one of the same name in "
                                        r"'de' \(test_2016.en, test_2017.en.gz, test_2018.de\)"):
        split_pair(tmp_path, "test", "en", "de")
    (tmp_path / "val.en").write_text("x\n")
    (tmp_path / "val.de").symlink_to(tmp_path / "gone.de")
    with pytest.raises(UserError, match=r"val.de: a link to .*gone.de, which is not a file"):
        split_pair(tmp_path, "val", "en", "de")
    (tmp_path / "dev.en").write_text("x\n")  # a pair under another name: the link is not read
    (tmp_path / "dev.de").write_text("x\n")
    assert [p.name for p in split_pair(tmp_path, "val", "en", "de")] == ["dev.en", "dev.de"]
    (tmp_path / "train.en").mkdir()  # not "no train file for language 'en'"
    (tmp_path / "train.de").write_text("x\n")
    with pytest.raises(UserError, match=r"train.en: a folder, not a file"):
        split_pair(tmp_path, "train", "en", "de")


def test_corrupt_gzip_is_a_clear_error(tmp_path):
    path = tmp_path / "train.en.gz"
    data = bytearray(gzip.compress(b"hello world\n" * 100))
    data[20:30] = b"\xff" * 10
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match=r"train\.en\.gz: cannot read"):
        read_lines(path)


def test_batch_knows_its_real_target_positions_without_asking_the_device():
    batch = Batch.from_ids([[5, 6, 7], [8], [9]], [[10, 11], [12, 13, 14], []])
    expected = (batch.tgt_out.reshape(-1) != PAD_ID).nonzero().squeeze(1)
    assert torch.equal(batch.tgt_positions, expected)
    assert batch.num_tgt_tokens == 3 + 4 + 1


def test_prefetched_batches_equal_batches_built_on_demand():
    from nmt_cli.data import BatchLoader, EncodedText, make_batch

    data = EncodedText([[4, 5], [6], [7, 8, 9]], [[10], [11, 12], [13, 14, 15]])
    loader = BatchLoader(data, torch.device("cpu"), prefetch=True)
    loader.prefetch([np.array([0, 2]), np.array([1])])
    assert len(loader.ready) == 2
    for indices in ([0, 2], [1], [2]):  # two prefetched, one not
        got, expected = loader.get(np.array(indices)), make_batch(data, indices)
        assert all(torch.equal(a, b) for a, b in zip(got.tensors(), expected.tensors()))
    assert not loader.ready
    loader.close()


def test_lines_ended_by_a_carriage_return_alone_are_an_error_not_one_line(tmp_path):
    """A file from classic Mac OS read as one line: training failed inside SentencePiece,
    and translating gave one line for five. A lone CR inside a line of a LF file is text."""
    old_mac = tmp_path / "mac.en"
    old_mac.write_bytes(b"A dog.\rA cat.\rA bird.\r")
    with pytest.raises(UserError, match=r"mac.en: holds carriage returns \(CR\) and no line "
                                        r"feed, as files whose lines end in CR alone"):
        read_lines(old_mac)
    mixed = tmp_path / "mixed.en"
    mixed.write_bytes(b"A dog.\rA cat.\nA bird.\r\n")
    assert read_lines(mixed) == ["A dog.\rA cat.", "A bird."]
