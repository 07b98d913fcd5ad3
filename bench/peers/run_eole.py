"""Start eole 0.6.4 for a benchmark: `python run_eole.py train|predict ARGS...`, the arguments
of `eole train` or `eole predict` (for example `train --config CONFIG`).

Runs inside the eole virtual environment (bench/out/eole-venv), not nmt's. It changes nothing in
what eole computes; it only fixes three things around it:

- torch gets 2 threads, as nmt does in every CPU comparison;
- SIGINT raises KeyboardInterrupt even when the process was started in the background (where
  Python would otherwise inherit an ignored SIGINT), so a benchmark can stop eole at its time
  budget;
- while eole trains, the first SIGINT lets the step under way finish and then ends the loop the
  way eole's own step limit does, so eole writes its final checkpoint (a plain KeyboardInterrupt
  would leave only the last periodic one). A second SIGINT interrupts at once.
"""

import signal
import sys

THREADS = 2

# Whether training has made a step yet, and whether a stop has been asked for.
state = {"training": False, "stop": False}


def on_sigint(signum, frame):
    if state["training"] and not state["stop"]:
        state["stop"] = True
        return
    raise KeyboardInterrupt


def stop_when_asked(accumulate):
    """Wrap eole's Trainer._accum_batches, the source of its training loop's steps: once a stop
    is asked for, it yields no further step, and the loop ends as at its step limit."""

    def steps(trainer, iterator):
        for step in accumulate(trainer, iterator):
            if state["stop"]:
                return
            yield step
            state["training"] = True

    return steps


def main() -> None:
    signal.signal(signal.SIGINT, on_sigint)
    import torch

    torch.set_num_threads(THREADS)
    from eole.bin.main import main as eole_main  # reads its arguments from sys.argv
    from eole.trainer import Trainer

    Trainer._accum_batches = stop_when_asked(Trainer._accum_batches)
    sys.argv[0] = "eole"
    eole_main()


if __name__ == "__main__":
    main()
