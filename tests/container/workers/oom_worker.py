"""Rank 1 touches memory 16 MiB at a time until the container's memory limit has the kernel's OOM
killer kill it; the other ranks wait (hetrun stops them after the failure)."""

import os
import time

if os.environ["RANK"] == "1":
    held = []
    while True:
        held.append(bytearray(16 << 20))  # zero-filled: every page touched
        print(f"holding {16 * len(held)} MiB", flush=True)
else:
    time.sleep(300)
