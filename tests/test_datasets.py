"""`nmt data fetch`: checksums, corrupted and truncated files, interrupted copies, no network.

The tests build a small Multi30k look-alike mirror of their own and point the checksum table
at it, so they run anywhere and never touch the network. Checks against the real files run
only when NMT_MULTI30K_MIRROR names a folder holding them.
"""

import gzip
import hashlib
import io
import os
import random
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nmt_cli import UserError, datasets
from nmt_cli.cli import app
from nmt_cli.datasets import MULTI30K_LANGS, MULTI30K_SPLITS, fetch_multi30k, sha256_of

EN_DE = ["train.en.gz", "train.de.gz", "val.en.gz", "val.de.gz",
         "test_2016_flickr.en.gz", "test_2016_flickr.de.gz"]
REAL_MIRROR = os.environ.get("NMT_MULTI30K_MIRROR", "")


def fake_file(name: str) -> bytes:
    """A gzip file of 300 made-up lines, the same bytes on every run, about 4 KiB."""
    rng = random.Random(name)
    lines = "".join(f"{name} {i} {rng.getrandbits(64):016x}\n" for i in range(300))
    return gzip.compress(lines.encode(), mtime=0)


@pytest.fixture
def mirror(tmp_path_factory, monkeypatch) -> Path:
    """A mirror folder with every Multi30k file name, and a checksum table that matches it."""
    folder = tmp_path_factory.mktemp("mirror")
    table = {}
    for split in MULTI30K_SPLITS:
        for lang in MULTI30K_LANGS:
            name = f"{split}.{lang}.gz"
            data = fake_file(name)
            (folder / name).write_bytes(data)
            table[name] = hashlib.sha256(data).hexdigest()
    assert table.keys() == datasets.MULTI30K_SHA256.keys()
    monkeypatch.setattr(datasets, "MULTI30K_SHA256", table)
    return folder


def damage(path: Path, truncate: bool = False) -> Path:
    """Flip one byte of the file, or cut it in half."""
    data = bytearray(path.read_bytes())
    if truncate:
        del data[len(data) // 2:]
    else:
        data[100] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def written(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def offline(url, timeout):
    raise datasets.urllib.error.URLError("no route to host")


def test_checksum_table_covers_every_split_and_language():
    names = {f"{s}.{lang}.gz" for s in MULTI30K_SPLITS for lang in MULTI30K_LANGS}
    assert set(datasets.MULTI30K_SHA256) == names
    assert all(len(h) == 64 and set(h) <= set("0123456789abcdef")
               for h in datasets.MULTI30K_SHA256.values())


def test_fetch_through_mirror_verifies_and_skips_what_is_there(tmp_path, mirror):
    dest, messages = tmp_path / "dest", []
    paths = fetch_multi30k("en-de", dest, mirror, messages.append)
    assert sorted(p.name for p in paths) == sorted(EN_DE)
    assert written(dest) == sorted(EN_DE)
    assert all(sha256_of(p) == datasets.MULTI30K_SHA256[p.name] for p in paths)
    assert all((dest / n).read_bytes() == (mirror / n).read_bytes() for n in EN_DE)
    assert all("fetched and verified" in m for m in messages) and len(messages) == 6
    messages.clear()
    (mirror / "val.en.gz").unlink()  # files already there are not read from the mirror again
    fetch_multi30k("en-de", dest, mirror, messages.append)
    assert all("present and verified" in m for m in messages) and len(messages) == 6
    with pytest.raises(UserError, match=f"--mirror {tmp_path / 'nope'}: no such directory"):
        fetch_multi30k("en-de", dest, tmp_path / "nope")  # a typo is said, needed or not


def test_other_pairs_fetch_their_own_languages(tmp_path, mirror):
    paths = fetch_multi30k("fr-cs", tmp_path, mirror)
    assert [p.name for p in paths] == [f"{s}.{lang}.gz" for s in MULTI30K_SPLITS
                                       for lang in ("fr", "cs")]


@pytest.mark.parametrize("truncate", [False, True], ids=["corrupted", "truncated"])
def test_a_bad_source_file_is_rejected_and_never_written(tmp_path, mirror, truncate):
    damage(mirror / "val.de.gz", truncate)
    dest = tmp_path / "dest"
    with pytest.raises(UserError, match="val.de.gz: checksum mismatch"):
        fetch_multi30k("en-de", dest, mirror)
    assert not (dest / "val.de.gz").exists()
    assert not [p for p in dest.iterdir() if p.name.startswith(".")]  # no temporary files
    assert written(dest) == ["train.de.gz", "train.en.gz", "val.en.gz"]  # those before it


def test_a_missing_source_file_names_the_mirror(tmp_path, mirror):
    (mirror / "train.de.gz").unlink()
    expected = f"--mirror {re.escape(str(mirror))}: cannot read train.de.gz"
    with pytest.raises(UserError, match=expected):
        fetch_multi30k("en-de", tmp_path / "dest", mirror)


@pytest.mark.parametrize("truncate", [False, True], ids=["corrupted", "truncated"])
def test_a_bad_local_copy_is_replaced(tmp_path, mirror, truncate):
    fetch_multi30k("en-de", tmp_path, mirror)
    damage(tmp_path / "val.en.gz", truncate)
    messages = []
    fetch_multi30k("en-de", tmp_path, mirror, messages.append)
    assert sha256_of(tmp_path / "val.en.gz") == datasets.MULTI30K_SHA256["val.en.gz"]
    assert "val.en.gz: fetched and verified" in messages


def test_a_local_copy_that_is_not_the_real_file_is_replaced(tmp_path, mirror):
    (tmp_path / "val.en.gz").write_bytes(b"not the real file")
    fetch_multi30k("en-de", tmp_path, mirror)
    assert sha256_of(tmp_path / "val.en.gz") == datasets.MULTI30K_SHA256["val.en.gz"]


class Breaks:
    """A source stream that fails on its second read."""

    def __init__(self, stream, error: BaseException):
        self.stream, self.error, self.reads = stream, error, 0

    def read(self, size):
        self.reads += 1
        if self.reads == 2:
            raise self.error
        return self.stream.read(size)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stream.close()


def break_second_read(monkeypatch, error: BaseException) -> None:
    real_open = datasets.open_source
    monkeypatch.setattr(datasets, "CHUNK", 1024)
    monkeypatch.setattr(datasets, "open_source",
                        lambda name, mirror: Breaks(real_open(name, mirror), error))


def test_interrupted_transfer_leaves_nothing_half_written(tmp_path, mirror, monkeypatch):
    assert (mirror / "train.en.gz").stat().st_size > 1024  # so the break is mid-copy
    break_second_read(monkeypatch, KeyboardInterrupt())  # as if Ctrl-C was pressed mid-copy
    dest = tmp_path / "dest"
    with pytest.raises(KeyboardInterrupt):
        fetch_multi30k("en-de", dest, mirror)
    assert list(dest.iterdir()) == []


def test_a_connection_broken_mid_download_is_a_clear_error(tmp_path, mirror, monkeypatch):
    break_second_read(monkeypatch, datasets.urllib.error.URLError("connection reset"))
    with pytest.raises(UserError, match=r"train.en.gz: transfer failed \(connection reset\)"):
        fetch_multi30k("en-de", tmp_path, mirror)
    assert list(tmp_path.iterdir()) == []


def test_download_without_a_mirror_fetches_from_the_published_address(tmp_path, mirror,
                                                                      monkeypatch):
    urls = []

    def served_from_mirror(url, timeout):
        urls.append(url)
        return io.BytesIO((mirror / url.rsplit("/", 1)[-1]).read_bytes())

    monkeypatch.setattr(datasets.urllib.request, "urlopen", served_from_mirror)
    fetch_multi30k("en-de", tmp_path)
    assert urls == [datasets.MULTI30K_URL + name for name in EN_DE]
    assert written(tmp_path) == sorted(EN_DE)


def test_network_failure_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.urllib.request, "urlopen", offline)
    with pytest.raises(UserError, match="download of .*train.en.gz failed.*--mirror"):
        fetch_multi30k("en-de", tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("pair", ["en-xx", "en", "en-en", "de_en", ""])
def test_bad_pair_is_rejected_before_anything_is_written(tmp_path, pair):
    with pytest.raises(UserError, match="expected two of en, de, fr, cs"):
        fetch_multi30k(pair, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


def nmt(*args: str):
    return CliRunner().invoke(app, ["data", "fetch", "multi30k", *args])


def test_cli_fetches_and_reports_errors_in_one_line(tmp_path, mirror, monkeypatch):
    result = nmt("--pair", "en-xx", "--dest", str(tmp_path))
    assert result.exit_code == 1 and "--pair 'en-xx'" in result.stderr
    (tmp_path / "a-file").write_text("")
    result = nmt("--dest", str(tmp_path / "a-file"), "--mirror", str(mirror))
    assert result.exit_code == 1
    assert result.stderr == f"error: --dest {tmp_path / 'a-file'}: a file, not a folder\n"
    result = nmt("--dest", str(tmp_path / "ok"), "--mirror", str(mirror))
    assert result.exit_code == 0 and result.stdout.strip() == str(tmp_path / "ok")
    assert result.stderr.count("fetched and verified") == 6
    damage(mirror / "val.de.gz")
    result = nmt("--dest", str(tmp_path / "d"), "--mirror", str(mirror))
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: val.de.gz: checksum mismatch")
    monkeypatch.setattr(datasets.urllib.request, "urlopen", offline)
    result = nmt("--dest", str(tmp_path / "offline"))
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: download of ") and "use --mirror DIR" in last


def test_cli_default_destination_is_data_multi30k(tmp_path, mirror, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = nmt("--mirror", str(mirror))
    assert result.exit_code == 0 and result.stdout.strip() == str(Path("data") / "multi30k")
    assert written(tmp_path / "data" / "multi30k") == sorted(EN_DE)


real = pytest.mark.skipif(not (REAL_MIRROR and Path(REAL_MIRROR).is_dir()),
                          reason="set NMT_MULTI30K_MIRROR to a folder with the Multi30k files")


@real
def test_checksum_table_matches_the_published_list():
    published = dict(reversed(line.split()) for line in
                     (Path(REAL_MIRROR) / "SHA256SUMS").read_text().splitlines())
    assert published == datasets.MULTI30K_SHA256


@real
def test_fetch_of_the_real_files_verifies_and_skips_what_is_there(tmp_path):
    messages = []
    paths = fetch_multi30k("en-de", tmp_path, Path(REAL_MIRROR), messages.append)
    assert sorted(p.name for p in paths) == sorted(EN_DE)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(EN_DE)
    assert all(sha256_of(p) == datasets.MULTI30K_SHA256[p.name] for p in paths)
    messages.clear()
    fetch_multi30k("en-de", tmp_path, Path(REAL_MIRROR), messages.append)
    assert all("present and verified" in m for m in messages) and len(messages) == 6
