"""Cut paragraphs into sentences with sentencex, for bench.paragraphs' comparison of splitters:
reads a JSON list of [language, paragraph] pairs on stdin and writes a JSON list of each
paragraph's sentences. Runs in sentencex's own virtual environment
(bench/out/sentencex-venv), not nmt's."""

import json
import sys

from sentencex import segment

pairs = json.load(sys.stdin)
json.dump([[s.strip() for s in segment(language, text) if s.strip()] for language, text in pairs],
          sys.stdout)
