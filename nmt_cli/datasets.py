"""Known corpora that `nmt data fetch` downloads, or copies from a local mirror.

Every file is checked against a SHA-256 table kept here and written atomically: a file in the
destination is either complete and verified or absent. Files already present and valid are
skipped.
"""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from .errors import UserError
from .files import atomic_write, sha256_of

CORPORA = ("multi30k",)  # what `nmt data fetch` knows
MULTI30K_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/"
MULTI30K_SPLITS = ("train", "val", "test_2016_flickr")
MULTI30K_SHA256 = {  # task 1, raw text, as published in the Multi30k data repository
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "train.cs.gz": "a65adb8b32e3bc664f21ecba7a6e7f6950fd1f405e135f7c312faabdb6255077",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
    "val.cs.gz": "b63226e05c4bd5dd6a42897d74b86a1b9d2c31498252c572b1ea7f7996927fcc",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
    "test_2016_flickr.cs.gz": "200a4a74cc9560f051924abb9803be008d1908d77f747e9141aeb86dfd2797f1",
}
MULTI30K_LANGS = ("en", "de", "fr", "cs")
CHUNK = 1 << 20


def parse_pair(pair: str) -> tuple[str, str]:
    src, sep, tgt = pair.partition("-")
    if not sep or src not in MULTI30K_LANGS or tgt not in MULTI30K_LANGS or src == tgt:
        raise UserError(f"--pair {pair!r}: expected two of {', '.join(MULTI30K_LANGS)}, "
                        "e.g. en-de")
    return src, tgt


def open_source(name: str, mirror: Path | None) -> BinaryIO:
    """A readable stream of `name` from the mirror directory or from the network."""
    if mirror is not None:
        try:
            return open(Path(mirror) / name, "rb")
        except OSError as e:
            raise UserError(f"--mirror {mirror}: cannot read {name} ({e.strerror})") from None
    url = MULTI30K_URL + name
    try:
        return urllib.request.urlopen(url, timeout=60)
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise UserError(f"download of {url} failed ({reason}); "
                        "use --mirror DIR to copy from a local folder") from None


def fetch_file(name: str, expected: str, dest: Path, mirror: Path | None) -> None:
    """Copy one file into `dest`, verifying its checksum before it gets its real name."""

    def write(tmp: str) -> None:
        digest = hashlib.sha256()
        with open_source(name, mirror) as source, open(tmp, "wb") as out:
            for block in iter(lambda: source.read(CHUNK), b""):
                digest.update(block)
                out.write(block)
        if digest.hexdigest() != expected:
            raise UserError(f"{name}: checksum mismatch (expected {expected[:12]}..., got "
                            f"{digest.hexdigest()[:12]}...); it was not written")

    try:
        atomic_write(dest / name, write)
    except (urllib.error.URLError, OSError) as e:  # the connection broke mid-download
        raise UserError(f"{name}: transfer failed ({getattr(e, 'reason', e)})") from None


def fetch_multi30k(pair: str, dest: Path, mirror: Path | None = None,
                   report: Callable[[str], None] = lambda message: None) -> list[Path]:
    """Fetch Multi30k task 1 (train, val, test_2016_flickr) for a language pair into `dest`."""
    langs = parse_pair(pair)
    if mirror is not None and not Path(mirror).is_dir():  # said even when nothing is fetched
        raise UserError(f"--mirror {mirror}: no such directory")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for split in MULTI30K_SPLITS:
        for lang in langs:
            name = f"{split}.{lang}.gz"
            path, expected = dest / name, MULTI30K_SHA256[name]
            if path.is_file() and sha256_of(path) == expected:
                report(f"{name}: present and verified")
            else:
                fetch_file(name, expected, dest, mirror)
                report(f"{name}: fetched and verified")
            paths.append(path)
    return paths

