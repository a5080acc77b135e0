"""onpty.py [--ctrl-c-on FILE] CMD [ARGS...]: CMD on a terminal of its own
(a new pty), its output copied to ours ("\r" dropped) for at most 60 s; with
--ctrl-c-on, a ^C typed on that terminal once FILE exists. Ends with
"exit N", CMD's status. For the tests of what a program on the operator's
terminal may do (test_run_hostile.sh, test_run_share.sh)."""
import os
import pty
import select
import sys
import time

argv = sys.argv[1:]
go = None
if argv[:1] == ["--ctrl-c-on"]:
    go, argv = argv[1], argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
sent, t0 = False, time.time()
while time.time() - t0 < 60:
    if go is not None and not sent and os.path.exists(go):
        os.write(fd, b"\x03")
        sent = True
    r, _, _ = select.select([fd], [], [], 0.1)
    if not r:
        continue
    try:
        b = os.read(fd, 4096)
    except OSError:
        break
    if not b:
        break
    sys.stdout.write(b.decode(errors="replace").replace("\r", ""))
    sys.stdout.flush()
_, st = os.waitpid(pid, 0)
print("exit", os.waitstatus_to_exitcode(st))
