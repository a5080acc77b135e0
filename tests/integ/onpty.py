"""onpty.py [--ctrl-c-on FILE] [--answer PROMPT A1,A2,...] CMD [ARGS...]: CMD
on a terminal of its own (a new pty), its output copied to ours ("\r"
dropped) for at most 60 s; with --ctrl-c-on, a ^C typed on that terminal
once FILE exists; with --answer, each time PROMPT appears again the next
answer is typed (and Enter), then end of input once they are used up
(PROMPT may name several, split by "|": each counts). Ends
with "exit N", CMD's status. For the tests of what a program on the
operator's terminal may do (test_run_hostile.sh, test_run_share.sh) and of
what it asks there (test_learn.sh)."""
import os
import pty
import select
import sys
import time

argv = sys.argv[1:]
go = None
prompt, answers = None, []
while argv[:1] in (["--ctrl-c-on"], ["--answer"]):
    if argv[0] == "--ctrl-c-on":
        go, argv = argv[1], argv[2:]
    else:
        prompt, answers, argv = argv[1], argv[2].split(","), argv[3:]
seen, typed = "", 0
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
    text = b.decode(errors="replace").replace("\r", "")
    sys.stdout.write(text)
    sys.stdout.flush()
    if prompt is not None:
        seen += text
        while sum(seen.count(p) for p in prompt.split("|")) > typed:
            os.write(fd, (answers[typed] + "\n").encode() if typed < len(answers) else b"\x04")
            typed += 1
_, st = os.waitpid(pid, 0)
print("exit", os.waitstatus_to_exitcode(st))
