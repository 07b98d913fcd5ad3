"""`nmt data fetch` through a local mirror: checksums, corrupted files, interrupted copies."""

import shutil

import pytest
from typer.testing import CliRunner

from nmt_cli import datasets
from nmt_cli.cli import app
from nmt_cli.config import UserError
from nmt_cli.datasets import MULTI30K_SHA256, fetch_multi30k, sha256_of

from conftest import MULTI30K

pytestmark = pytest.mark.skipif(not (MULTI30K / "val.en.gz").is_file(),
                                reason="needs the Multi30k mirror in ../shared/data/multi30k")
EN_DE = ["train.en.gz", "train.de.gz", "val.en.gz", "val.de.gz",
         "test_2016_flickr.en.gz", "test_2016_flickr.de.gz"]


def test_checksum_table_matches_the_published_list():
    published = dict(reversed(line.split()) for line in
                     (MULTI30K / "SHA256SUMS").read_text().splitlines())
    assert published == MULTI30K_SHA256


def test_fetch_through_mirror_verifies_and_skips_what_is_there(tmp_path):
    messages = []
    paths = fetch_multi30k("en-de", tmp_path, MULTI30K, messages.append)
    assert sorted(p.name for p in paths) == sorted(EN_DE)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(EN_DE)
    assert all(sha256_of(p) == MULTI30K_SHA256[p.name] for p in paths)
    messages.clear()
    fetch_multi30k("en-de", tmp_path, MULTI30K, messages.append)
    assert all("present and verified" in m for m in messages) and len(messages) == 6


def corrupted_mirror(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for name in EN_DE:
        shutil.copy(MULTI30K / name, mirror / name)
    data = bytearray((mirror / "val.de.gz").read_bytes())
    data[100] ^= 0xFF
    (mirror / "val.de.gz").write_bytes(bytes(data))
    return mirror


def test_corrupted_file_is_rejected_and_never_written(tmp_path):
    dest = tmp_path / "dest"
    with pytest.raises(UserError, match="val.de.gz: checksum mismatch"):
        fetch_multi30k("en-de", dest, corrupted_mirror(tmp_path))
    assert not (dest / "val.de.gz").exists()
    assert not [p for p in dest.iterdir() if p.name.startswith(".")]  # no temporary files


def test_a_corrupted_local_copy_is_replaced(tmp_path):
    (tmp_path / "val.en.gz").write_bytes(b"not the real file")
    fetch_multi30k("en-de", tmp_path, MULTI30K)
    assert sha256_of(tmp_path / "val.en.gz") == MULTI30K_SHA256["val.en.gz"]


def test_interrupted_transfer_leaves_nothing_half_written(tmp_path, monkeypatch):
    real_open = datasets.open_source

    class Breaks:
        def __init__(self, stream):
            self.stream, self.reads = stream, 0

        def read(self, size):
            self.reads += 1
            if self.reads == 2:
                raise KeyboardInterrupt  # as if the user pressed Ctrl-C mid-copy
            return self.stream.read(size)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.stream.close()

    monkeypatch.setattr(datasets, "CHUNK", 4096)
    monkeypatch.setattr(datasets, "open_source",
                        lambda name, mirror: Breaks(real_open(name, mirror)))
    with pytest.raises(KeyboardInterrupt):
        fetch_multi30k("en-de", tmp_path, MULTI30K)
    assert list(tmp_path.iterdir()) == []


def test_network_failure_is_a_clear_error(tmp_path, monkeypatch):
    def offline(url, timeout):
        raise datasets.urllib.error.URLError("no route to host")

    monkeypatch.setattr(datasets.urllib.request, "urlopen", offline)
    with pytest.raises(UserError, match="download of .*train.en.gz failed.*--mirror"):
        fetch_multi30k("en-de", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_cli_reports_errors_in_one_line(tmp_path):
    result = CliRunner().invoke(app, ["data", "fetch", "multi30k", "--pair", "en-xx",
                                      "--dest", str(tmp_path)])
    assert result.exit_code == 1 and "--pair 'en-xx'" in result.stderr
    result = CliRunner().invoke(app, ["data", "fetch", "multi30k", "--dest", str(tmp_path / "d"),
                                      "--mirror", str(corrupted_mirror(tmp_path))])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: val.de.gz: checksum mismatch")
    result = CliRunner().invoke(app, ["data", "fetch", "multi30k", "--dest", str(tmp_path / "ok"),
                                      "--mirror", str(MULTI30K)])
    assert result.exit_code == 0 and result.stdout.strip() == str(tmp_path / "ok")
