"""Rank 0 leaves orphans: 3 grandchildren whose parent exits at once, so they are re-parented to
PID 1 (hetrun); each notes its parent and exits. Then, until every orphan has exited, it lists
the zombies of the container's PID namespace (/proc/*/stat state Z) and fails when some orphan
stays a zombie: PID 1 must reap them. Prints "orphans reaped" or the zombies."""

import os
import sys
import time


def zombies() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name_end = stat.rindex(")")
        if stat[name_end + 2] == "Z":
            found.append(f"{pid} {stat[stat.index('(') + 1:name_end]}")
    return found


if os.environ["RANK"] != "0":
    sys.exit(0)
orphans = []
for i in range(3):
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the child: fork the grandchild, report its pid, leave at once
        os.close(read_end)
        grandchild = os.fork()
        if grandchild == 0:
            time.sleep(1.0)  # by now its parent is gone
            with open(f"/out/orphan.{os.getpid()}", "w") as f:
                f.write(f"{os.getppid()}\n")
            os._exit(0)
        os.write(write_end, f"{grandchild}\n".encode())
        os._exit(0)
    os.close(write_end)
    orphans.append(int(os.read(read_end, 64).decode()))
    os.close(read_end)
    os.waitpid(child, 0)  # its own child: reaped here
print(f"orphans {orphans}", flush=True)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    alive = [pid for pid in orphans if os.path.exists(f"/proc/{pid}")]
    if not alive:
        break
    time.sleep(0.1)
# Any zombie of the namespace (a worker that just exited is one for a moment): gone soon, or
# nobody reaps it.
left = zombies()
settle = time.monotonic() + 30
while left and time.monotonic() < settle:
    time.sleep(0.1)
    left = zombies()
print(f"zombies {left}", flush=True)
parents = sorted({open(f"/out/orphan.{pid}").read().strip() for pid in orphans})
print(f"orphans' parents {parents}", flush=True)
if alive or left:
    print(f"orphans not reaped: alive {alive}, zombies {left}", flush=True)
    sys.exit(1)
print("orphans reaped", flush=True)
