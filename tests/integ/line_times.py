#!/usr/bin/env python3
"""line_times.py OUT: each line of stdin to OUT as "SECONDS<TAB>LINE" (wall clock,
taken as the line arrives), and passed on to stdout. Unbuffered both ways."""
import sys
import time

with open(sys.argv[1], "w") as out:
    for raw in iter(sys.stdin.buffer.readline, b""):
        t = time.time()
        line = raw.decode("utf-8", "replace").rstrip("\n")
        out.write("%.6f\t%s\n" % (t, line))
        out.flush()
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
