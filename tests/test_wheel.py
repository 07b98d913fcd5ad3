"""The built wheel works on its own: installed into a fresh venv, `nmt train` with no --data
trains on the sample corpus the wheel carries, from a directory that has no data/ folder.

Nothing is downloaded: the wheel is built without build isolation and installed without its
dependencies, which the new venv takes from this interpreter's site-packages through a .pth
file. That file names plain folders, so the editable install's import hook (a .pth file of
its own in those folders) is not run there: what runs is the wheel, not the checkout.
"""

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow
pytest.importorskip("setuptools", minversion="70.1",
                    reason="building the wheel offline needs setuptools 70.1+ (the dev extra)")
TRAIN = ["--max-steps", "5", "--device", "cpu", "--set", "train.validate_every=5",
         "--set", "tokenizer.vocab_size=500", "--set", "model.d_model=32",
         "--set", "model.d_ff=64", "--set", "model.num_encoder_layers=1",
         "--set", "model.num_decoder_layers=1"]


def run(command: list, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the sources, so the build leaves the checkout alone."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "nmt_cli", source / "nmt_cli",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--quiet", "-w", tmp / "dist", source])
    [built] = (tmp / "dist").glob("nmt_cli-*.whl")
    return built


def dependency_dirs() -> list[str]:
    """This interpreter's site-packages folders, where torch and the other dependencies are."""
    dirs = site.getsitepackages() + [sysconfig.get_paths()["purelib"]]
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dict.fromkeys(dirs) if Path(d).is_dir()]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed and the dependencies borrowed from this one."""
    venv = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", "--without-pip", "--clear", venv])
    python = venv / "bin" / "python"
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    (Path(purelib.stdout.strip()) / "_nmt_test_dependencies.pth").write_text(
        "".join(f"{d}\n" for d in dependency_dirs()))
    run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
         "--quiet", wheel])
    return venv


def test_wheel_carries_the_sample_corpus(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for split in ("train", "val", "test"):
        assert f"nmt_cli/sample/{split}.en" in names and f"nmt_cli/sample/{split}.de" in names
    assert "nmt_cli/sample/README.md" in names  # its licence travels with it
    assert not [n for n in names if n.startswith(("tests/", "tools/", "bench/"))]


def test_installed_package_is_the_wheel_not_the_checkout(venv):
    python = venv / "bin" / "python"
    where = run([python, "-c", "import sys, nmt_cli, nmt_cli.data as d; "
                 "print(nmt_cli.__file__); print(d.sample_corpus()); "
                 "print(any(name.startswith('__editable__') for name in sys.modules))"], cwd=venv)
    package, sample, editable_hook = where.stdout.split()
    package, sample = Path(package).resolve(), Path(sample).resolve()
    assert editable_hook == "False"
    assert package.is_relative_to(venv.resolve()), package
    assert sample.is_relative_to(venv.resolve()) and (sample / "train.en").is_file(), sample


def test_nmt_train_without_data_uses_the_packaged_sample(venv, tmp_path):
    work = tmp_path / "empty"
    work.mkdir()
    run([venv / "bin" / "nmt", "train", *TRAIN], cwd=work)
    [run_dir] = (work / "runs").iterdir()
    assert (run_dir / "model.safetensors").is_file()
    assert sorted(p.name for p in work.iterdir()) == ["runs"]  # nothing else written here
