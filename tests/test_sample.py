"""The packaged sample corpus is exactly what tools/make_sample.py generates."""

import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLE

FILES = [f"{split}.{lang}" for split in ("train", "val", "test") for lang in ("en", "de")]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("sample")
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_sample.py"), "--out", str(out)],
                   check=True, capture_output=True, text=True)
    return out


@pytest.mark.parametrize("name", FILES)
def test_generator_reproduces_the_packaged_file_byte_for_byte(generated, name):
    assert (generated / name).read_bytes() == (SAMPLE / name).read_bytes()


def test_generator_writes_only_the_six_corpus_files(generated):
    assert sorted(p.name for p in generated.iterdir()) == sorted(FILES)

