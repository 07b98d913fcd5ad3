"""Start JoeyNMT 2.3.0 for a benchmark: `python run_joeynmt.py train|test|translate CONFIG`.

Runs inside the JoeyNMT virtual environment (bench/out/joeynmt-venv), not nmt's. It changes
nothing in JoeyNMT; it only fixes two things around it:

- torch gets 2 threads, as nmt does in every CPU comparison;
- SIGINT raises KeyboardInterrupt even when the process was started in the background (where
  Python would otherwise inherit an ignored SIGINT), so a benchmark can end training at its
  time budget with SIGINT and JoeyNMT still saves its checkpoint on the way out.
"""

import signal

THREADS = 2


def main() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import torch

    torch.set_num_threads(THREADS)
    from joeynmt.__main__ import main as joeynmt_main  # reads its arguments from sys.argv

    joeynmt_main()


if __name__ == "__main__":
    main()
