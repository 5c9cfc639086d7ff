#!/usr/bin/env python3
"""A stand-in for GNU time's `-v [-o FILE] COMMAND...` where /usr/bin/time is missing (GPU machine
images without the `time` package): runs COMMAND and writes the two lines the bench scripts read,
the wall clock and the peak resident set of the command (getrusage of the children), in GNU time's
wording. Exit status: the command's."""
import resource
import subprocess
import sys
import time

args = sys.argv[1:]
out = None
while args and args[0].startswith("-"):
    flag = args.pop(0)
    if flag == "-o":
        out = args.pop(0)
start = time.monotonic()
rc = subprocess.call(args)
wall = time.monotonic() - start
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
minutes, seconds = divmod(wall, 60)
text = (f"\tCommand being timed: \"{' '.join(args)}\"\n"
        f"\tElapsed (wall clock) time (h:mm:ss or m:ss): {int(minutes)}:{seconds:05.2f}\n"
        f"\tMaximum resident set size (kbytes): {peak_kib}\n"
        f"\tExit status: {rc}\n")
if out:
    open(out, "w").write(text)
else:
    sys.stderr.write(text)
sys.exit(rc)
