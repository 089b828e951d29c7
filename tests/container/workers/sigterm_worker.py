"""Waits for SIGTERM: marks /out/ready.RANK, then on SIGTERM marks /out/sigterm.RANK and exits 143
(as a trainer that checkpoints on SIGTERM and leaves). A SIGKILL leaves no sigterm mark."""

import os
import signal
import sys
import time

rank = os.environ["RANK"]


def stop(signum, _frame):
    with open(f"/out/sigterm.{rank}", "w") as f:
        f.write(f"{signal.Signals(signum).name} at {time.time():.3f}\n")
    sys.stdout.flush()
    os._exit(128 + signum)


signal.signal(signal.SIGTERM, stop)
with open(f"/out/ready.{rank}", "w") as f:
    f.write(f"parent {os.getppid()}\n")
while True:
    time.sleep(1)
