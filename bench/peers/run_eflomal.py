"""Align words with eflomal, for bench.guided: reads two files of sentences (source and target,
one a line, words split at whitespace) and writes the links of both directions in the Pharaoh
format ("0-0 1-2", source-target positions from 0), one line a pair. Runs in eflomal's own
virtual environment (bench/out/eflomal-venv), not nmt's.

    python run_eflomal.py SOURCE TARGET FORWARD_OUT REVERSE_OUT
"""

import sys

from eflomal import Aligner

source, target, forward, reverse = sys.argv[1:5]
with open(source, encoding="utf-8") as src, open(target, encoding="utf-8") as tgt:
    Aligner().align(src, tgt, links_filename_fwd=forward, links_filename_rev=reverse,
                    quiet=False)
