#!/bin/bash
# test_run_doors.sh: the side doors of `sluice run`'s sandbox: ways out that
# are neither its network namespace nor its walls. Set up like
# test_run_hostile.sh (the lab's host namespace stands for the operator's
# machine). What is tried, each with its control:
#   - the machine's unix sockets: stand-ins of mode 0666 (a daemon's under
#     /run, like systemd-resolved's varlink socket; under /var/lib a stream
#     and a datagram one, one bound by a process of another network
#     namespace, one bound in a namespace no process is in, one bound by a
#     thread in a namespace of its own, one by a name through a symbolic
#     link; one in a user's home) answer the sandbox user outside a run
#     and refuse CMD; so does every socket `find` lists on the machine; a
#     flood of sockets bound elsewhere (17 MB of names) does not stop a run
#     starting; CMD's /run (and /var/run) is
#     a fresh one holding only the run's own; on a machine whose
#     /etc/resolv.conf is a link into /run, the run's own resolv.conf is
#     still the one CMD reads;
#   - socket families: CMD gets AF_UNIX, AF_INET, AF_INET6 and NETLINK_ROUTE
#     (ip addr works), every other family or netlink protocol the kernel
#     would give the sandbox user outside is refused; the 32-bit socketcall
#     (its arguments in memory) is refused, the 32-bit socket call filtered
#     like the native one; io_uring (its IORING_OP_SOCKET takes any family)
#     is refused.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
source "$INTEG_DIR/run_lab.sh"
lab_up
lab_unbound 'local-data: "good.test. 300 IN A 203.0.113.10"'
lab_run_project 42500
lab_run_proxy
lab_run_dns "$CONF"
cmd_out() { grep -v '^run: ' | tr '\n' ' ' | sed 's/ $//'; }

# the stand-ins: outside LAB_DIR (CMD has a /tmp of its own), removed on exit
MARK=sluice-doors-$$
RUN_D=/run/$MARK
VARLIB_D=/var/lib/$MARK
HOME_D=/home/$MARK
doors_cleanup() {
	local rc=$?
	rm -rf "$RUN_D" "$VARLIB_D" "$HOME_D"
	return $rc
}
trap 'doors_cleanup; lab_teardown' EXIT
mkdir -p "$RUN_D" "$VARLIB_D" "$HOME_D"
chmod 755 "$RUN_D" "$VARLIB_D" "$HOME_D"

cat >"$LAB_DIR/serve.py" <<'EOF'
# serve.py PATH...: a unix socket of mode 0666 on each PATH, a stream
# listener (accepts and closes) or, for dgram:PATH, a datagram one (reads
# and drops); with SERVE_NETNS, all bound in that network namespace, which
# the process then leaves (only the sockets keep it); with SERVE_THREAD, all
# bound by a thread (not the leader) that unshares a network namespace of
# its own, and stays
import ctypes, os, select, socket, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
def enter(path):
    fd = os.open(path, os.O_RDONLY)
    if libc.setns(fd, 0x40000000) != 0:
        sys.exit("setns %s: %s" % (path, os.strerror(ctypes.get_errno())))
    os.close(fd)
def bind_all():
    ls = []
    for p in sys.argv[1:]:
        dgram = p.startswith("dgram:")
        p = p[6:] if dgram else p
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM if dgram else socket.SOCK_STREAM)
        s.bind(p)
        os.chmod(p, 0o666)
        if not dgram:
            s.listen(64)
        ls.append(s)
    return ls
home = os.open("/proc/self/ns/net", os.O_RDONLY)
if os.environ.get("SERVE_THREAD"):
    bound, ready = [], threading.Event()
    def own():
        if libc.unshare(0x40000000) == 0:
            bound.extend(bind_all())
        ready.set()
        threading.Event().wait()
    threading.Thread(target=own, daemon=True).start()
    ready.wait(10)
    if not bound:
        sys.exit("the thread's namespace or sockets: " + os.strerror(ctypes.get_errno()))
    ls = bound
else:
    if os.environ.get("SERVE_NETNS"):
        enter(os.environ["SERVE_NETNS"])
    ls = bind_all()
    enter("/proc/self/fd/%d" % home)
print("up", flush=True)
while True:
    for s in select.select(ls, [], [])[0]:
        if s.type == socket.SOCK_DGRAM:
            s.recv(100)
        else:
            s.accept()[0].close()
EOF
cat >"$LAB_DIR/knock.py" <<'EOF'
# knock.py LIST: connect to each NUL-separated path in LIST (stream, else
# seqpacket, else datagram) and close at once, sending nothing; prints
# "PATH connected" or "PATH refused ERRNO" per path. A path too long for
# sun_path is reached as a client would: from its directory, by its name.
import errno, os, socket, sys
for p in open(sys.argv[1], "rb").read().split(b"\0"):
    if not p:
        continue
    res = None
    name = p
    if len(p) > 107:
        try:
            os.chdir(os.path.dirname(p))
            name = os.path.basename(p)
        except OSError as e:
            print(p.decode(errors="backslashreplace"), "refused", errno.errorcode.get(e.errno, e.errno), flush=True)
            continue
    for t in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET, socket.SOCK_DGRAM):
        s = socket.socket(socket.AF_UNIX, t)
        s.settimeout(3)
        try:
            s.connect(name)
            res = "connected"
        except OSError as e:
            res = "refused %s" % errno.errorcode.get(e.errno, e.errno) if e.errno else "refused %s" % e
        finally:
            s.close()
        if not res.endswith("EPROTOTYPE"):
            break
    os.chdir("/")
    print(p.decode(errors="backslashreplace"), res, flush=True)
EOF

# the machine's (this test's namespace), a datagram one among them; one
# bound by a process of the lab's inet namespace; one bound in a namespace
# of the test's that the process then leaves, so no process is in it
# one bound by a name through a symbolic link (a daemon's /var/run/...)
mkdir -p "$VARLIB_D/real"
chmod 755 "$VARLIB_D/real"
ln -s real "$VARLIB_D/link"
STANDINS=("$RUN_D/io.systemd.Resolve" "$VARLIB_D/daemon.sock" "$VARLIB_D/log.dgram" "$HOME_D/.agent.sock"
	"$VARLIB_D/link/via-link.sock")
INS_SOCK=$VARLIB_D/other-netns.sock
EMPTY_SOCK=$VARLIB_D/empty-netns.sock
THREAD_SOCK=$VARLIB_D/thread-netns.sock
EMPTY_NS=sluice-doors-$$
ip netns add "$EMPTY_NS" || lab_bail "ip netns add $EMPTY_NS"
LAB_EXTRA_NS+=("$EMPTY_NS")
"$PY" "$LAB_DIR/serve.py" "${STANDINS[0]}" "${STANDINS[1]}" "dgram:${STANDINS[2]}" "${STANDINS[3]}" "${STANDINS[4]}" \
	>"$LAB_DIR/serve.out" 2>&1 &
LAB_PIDS+=($!)
ix "$PY" "$LAB_DIR/serve.py" "$INS_SOCK" >"$LAB_DIR/serve-ins.out" 2>&1 &
LAB_PIDS+=($!)
SERVE_NETNS=/run/netns/$EMPTY_NS "$PY" "$LAB_DIR/serve.py" "$EMPTY_SOCK" >"$LAB_DIR/serve-empty.out" 2>&1 &
LAB_PIDS+=($!)
SERVE_THREAD=1 "$PY" "$LAB_DIR/serve.py" "$THREAD_SOCK" >"$LAB_DIR/serve-thread.out" 2>&1 &
thread_pid=$!
LAB_PIDS+=($thread_pid)
for o in serve serve-ins serve-empty serve-thread; do
	wait_until 10 grep -q '^up' "$LAB_DIR/$o.out" || lab_bail "the stand-ins listen ($o)" "$(cat "$LAB_DIR/$o.out")"
done
expect_eq "no process is in the namespace the last stand-in was bound in, and its table lists it (the control)" \
	" 1" "$(ip netns pids "$EMPTY_NS") $(ip netns exec "$EMPTY_NS" grep -c " $EMPTY_SOCK\$" /proc/net/unix)"
expect_eq "the thread's stand-in is in a table only a task of its process shows, not the process's own (the control)" \
	"0 1" "$(grep -c " $THREAD_SOCK\$" "/proc/$thread_pid/net/unix") $(cat /proc/$thread_pid/task/*/net/unix | grep -c " $THREAD_SOCK\$")"
printf '%s\0' "${STANDINS[@]}" "$INS_SOCK" "$EMPTY_SOCK" "$THREAD_SOCK" >"$LAB_DIR/standins.list"

# ---------------------------------------------------------------- the machine's unix sockets
expect_eq "outside a run, the sandbox user connects to each stand-in, mode 0666 (the control)" \
	"$(printf '%s connected ' "${STANDINS[@]}" "$INS_SOCK" "$EMPTY_SOCK" "$THREAD_SOCK" | sed 's/ $//')" \
	"$(runuser -u sluice-sandbox -- "$PY" "$LAB_DIR/knock.py" "$LAB_DIR/standins.list" | tr '\n' ' ' | sed 's/ $//')"
out=$(srun -- "$PY" "$LAB_DIR/knock.py" "$LAB_DIR/standins.list" 2>&1 | cmd_out)
expect_re "CMD cannot connect to any of them (/run, /var/lib, a home; stream, datagram; bound in other network namespaces, one a thread's own)" \
	"^$(printf '%s refused [A-Z]+ ' "${STANDINS[@]}" "$INS_SOCK" "$EMPTY_SOCK" "$THREAD_SOCK" | sed 's/ $//')\$" "$out"

out=$(srun -- grep -c " $VARLIB_D/real/via-link.sock " /proc/self/mountinfo 2>&1 | cmd_out)
expect_eq "... the one bound through a link is covered on its real path" "1" "$out"

# Every socket file on the machine (the stand-ins among them); find walks it
# all, which takes a while on a loaded machine.
find / \( -path /proc -o -path /sys \) -prune -o -type s -print0 >"$LAB_DIR/all.list" 2>/dev/null
n=$(tr -cd '\0' <"$LAB_DIR/all.list" | wc -c)
expect_ge "find lists the machine's sockets, the stand-ins among them" 4 "$n"
out=$(srun -- "$PY" "$LAB_DIR/knock.py" "$LAB_DIR/all.list" 2>&1 | grep -v '^run: ')
expect_eq "CMD connects to none of the $n sockets find lists on the machine (those it could are named)" \
	"" "$(grep -v ' refused [A-Z0-9]*$' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... each one tried" "$n" "$(grep -c ' refused [A-Z0-9]*$' <<<"$out")"

# A flood of sockets elsewhere: 170000 held open by processes of another
# mount namespace, bound to names of 100 bytes under a tmpfs of its own
# (the machine sees an empty directory), 17 MB of names in the tables. Only
# names that lead to a socket here are kept, so other runs still start.
cat >"$LAB_DIR/flood.py" <<'EOF'
# flood.py DIR N: N stream sockets bound to names of 100 bytes under DIR,
# held open by children of this one (each as many as its open-file limit
# allows); prints "up" once all are bound, and ends them when it is ended
import os, resource, signal, socket, sys
d, n = sys.argv[1], int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
each = hard - 64
pad = "x" * (100 - len(d) - 8)
kids = []
def end(*_):
    for pid in kids:
        os.kill(pid, signal.SIGKILL)
    os._exit(0)
signal.signal(signal.SIGTERM, end)
for start in range(0, n, each):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.close(r)
        held = []
        for i in range(start, min(n, start + each)):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind("%s/%s%07d" % (d, pad, i))
            held.append(s)
        os.write(w, b"x")
        signal.pause()
        os._exit(0)
    os.close(w)
    kids.append(pid)
    if os.read(r, 1) != b"x":
        end()  # a child could not bind its share: no "up"
print("up", flush=True)
while True:
    signal.pause()
EOF
FLOOD_D=$VARLIB_D/flood
mkdir -p "$FLOOD_D"
unshare -m --propagation private sh -c 'mount -t tmpfs -o size=64m flood "$1" && exec "$2" "$3" "$1" 170000' _ \
	"$FLOOD_D" "$PY" "$LAB_DIR/flood.py" >"$LAB_DIR/flood.out" 2>&1 &
flood_pid=$!
LAB_PIDS+=($flood_pid)
wait_until 120 grep -q '^up' "$LAB_DIR/flood.out" || lab_bail "the flood of sockets" "$(cat "$LAB_DIR/flood.out")"
expect_eq "170000 sockets bound under $FLOOD_D are in the table, over 16 MiB of names; the machine sees none of them (the control)" \
	"170000 1 0" "$(grep -c " $FLOOD_D/" /proc/net/unix) $(grep " $FLOOD_D/" /proc/net/unix | awk '{ n += length($8) + 1 } END { print (n > 16777216) }') $(ls -A "$FLOOD_D" | wc -l)"
out=$(srun -- sh -c 'echo started' 2>&1 | tr '\n' ' ' | sed 's/ $//')
expect_eq "a run starts meanwhile" "started" "$out"
kill "$flood_pid"
wait "$flood_pid" 2>/dev/null

# CMD's /run: the run's own (sluice's pub files and the private world-writable
# directories under /run), nothing of the machine's
want=$( (
	echo sluice
	for d in /run/*/; do
		d=${d%/}
		[ -L "$d" ] || [ -z "$(find "$d" -maxdepth 0 -perm -0002)" ] || basename "$d"
	done
) | sort | tr '\n' ' ' | sed 's/ $//')
out=$(srun -- sh -c 'echo "run: $(ls -A /run | tr "\n" " ")"; echo "var: $(ls -A /var/run/ | tr "\n" " ")"' 2>&1 |
	grep -E '^(run|var): ')
expect_eq "CMD's /run holds only sluice's and its private directories" "run: $want " "$(grep '^run:' <<<"$out")"
expect_eq "... and so does /var/run" "var: $want " "$(grep '^var:' <<<"$out")"

# A machine whose /etc/resolv.conf is a link into /run (systemd-resolved's
# stub-resolv.conf), made in a mount namespace of the test's own: an overlay
# on /etc whose resolv.conf is that link, the file it names a stand-in.
mkdir -p "$LAB_DIR/etc-upper" "$LAB_DIR/etc-work"
ln -s "$RUN_D/stub-resolv.conf" "$LAB_DIR/etc-upper/resolv.conf"
echo "nameserver 127.0.0.53 # the machine's stub" >"$RUN_D/stub-resolv.conf"
linked() { # CMD...: run CMD with /etc/resolv.conf a link into /run
	unshare -m --propagation private bash -c 'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc &&
		shift 2 && exec "$@"' _ "$LAB_DIR/etc-upper" "$LAB_DIR/etc-work" "$@"
}
expect_eq "in that mount namespace /etc/resolv.conf is the link, naming the machine's stub (the control)" \
	"$RUN_D/stub-resolv.conf nameserver 127.0.0.53 # the machine's stub" \
	"$(linked sh -c 'echo "$(readlink /etc/resolv.conf) $(cat /etc/resolv.conf)"')"
out=$(linked "${SRUN[@]}" -- sh -c 'grep -c 127.0.0.53 /etc/resolv.conf; getent hosts good.test' 2>&1 | cmd_out)
# (a granted name resolves to an address of the run's own: test_run_transparent.sh)
expect_re "... a run there reads its own resolv.conf (not the stub) and resolves through sluice-dns" \
	"^0 240\.0\.[0-9]+\.[0-9]+ good.test$" "$(tr -s ' ' <<<"$out")"

# ---------------------------------------------------------------- socket families
cat >"$LAB_DIR/families.py" <<'EOF'
# families.py: "NAME ok" or "NAME ERRNO" for a socket of each family (netlink: protocol)
import errno, socket
tries = [("unix", 1, 1, 0), ("inet", 2, 1, 0), ("inet6", 10, 2, 0), ("netlink-route", 16, 3, 0),
         ("vsock", 40, 1, 0), ("packet", 17, 3, 0), ("alg", 38, 5, 0), ("bluetooth", 31, 1, 0),
         ("xdp", 44, 3, 0), ("key", 15, 3, 2), ("can", 29, 3, 1), ("tipc", 30, 5, 0),
         ("rds", 21, 5, 0), ("smc", 43, 1, 0), ("mctp", 45, 2, 0),
         ("netlink-generic", 16, 3, 16), ("netlink-uevent", 16, 2, 15), ("netlink-audit", 16, 3, 9),
         ("netlink-netfilter", 16, 3, 12), ("netlink-xfrm", 16, 3, 6), ("netlink-sock-diag", 16, 3, 4),
         ("netlink-connector", 16, 2, 11), ("netlink-selinux", 16, 2, 7)]
for name, fam, typ, proto in tries:
    for flags in (0, socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK):
        try:
            socket.socket(fam, typ | flags, proto).close()
            r = "ok"
        except OSError as e:
            r = errno.errorcode.get(e.errno, str(e.errno))
        print(name + ("" if flags == 0 else "-flags"), r)
try:
    a, b = socket.socketpair(socket.AF_UNIX)
    print("socketpair-unix ok")
except OSError as e:
    print("socketpair-unix", errno.errorcode.get(e.errno))
EOF
outside=$(runuser -u sluice-sandbox -- "$PY" "$LAB_DIR/families.py" | tr '\n' ' ' | sed 's/ $//')
expect_re "outside a run, the sandbox user gets AF_VSOCK and NETLINK_GENERIC sockets (the control)" \
	"vsock ok .*netlink-generic ok" "$outside"
# what the filter should make of each: allowed ones as outside, other families
# EAFNOSUPPORT, other netlink protocols EPROTONOSUPPORT
want=$(tr ' ' '\n' <<<"$outside" | paste -d' ' - - | while read -r name r; do
	case $name in
	unix* | inet* | netlink-route* | socketpair-unix) ;;
	netlink-*) r=EPROTONOSUPPORT ;;
	*) r=EAFNOSUPPORT ;;
	esac
	echo "$name $r"
done | tr '\n' ' ' | sed 's/ $//')
inside=$(srun -- "$PY" "$LAB_DIR/families.py" 2>&1 | cmd_out)
expect_eq "inside, only AF_UNIX, AF_INET, AF_INET6 and NETLINK_ROUTE: every other family and netlink protocol refused" \
	"$want" "$inside"
out=$(srun -- ip -o addr show dev lo 2>&1 | cmd_out)
expect_re "... and ip addr still reads the run's addresses" "inet 127\.0\.0\.1/8" "$out"

# 32-bit: socketcall (its arguments are in memory), refused; the direct
# socket call (359), filtered by family like the native one
cat >"$LAB_DIR/sc32.c" <<'EOF'
/* sc32: 32-bit socket calls by int $0x80, each in a child: "NAME ok", "NAME ERRNO" or "NAME signal N" */
#include <stdio.h>
#include <sys/mman.h>
#include "call32.h"
int main(void)
{
	int *args = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	args[0] = 1; args[1] = 1; args[2] = 0; /* AF_UNIX, SOCK_STREAM */
	call32("socketcall32-unix", 102, 1, (long)args, 0);
	args[0] = 40; /* AF_VSOCK */
	call32("socketcall32-vsock", 102, 1, (long)args, 0);
	call32("socket32-unix", 359, 1, 1, 0);
	call32("socket32-vsock", 359, 40, 1, 0);
	return 0;
}
EOF
if gcc -O1 -I "$INTEG_DIR" -o "$LAB_DIR/sc32" "$LAB_DIR/sc32.c" 2>"$LAB_DIR/sc32.err"; then
	outside=$(runuser -u sluice-sandbox -- "$LAB_DIR/sc32" | tr '\n' ' ' | sed 's/ $//')
	if [[ "$outside" == "socketcall32-unix ok"* ]]; then
		expect_re "outside a run, 32-bit socketcall and socket make AF_UNIX sockets (the control)" \
			"^socketcall32-unix ok .*socket32-unix ok" "$outside"
		expect_eq "inside, 32-bit socketcall refused (ENOSYS); the 32-bit socket call filtered by family" \
			"socketcall32-unix 38 socketcall32-vsock 38 socket32-unix ok socket32-vsock 97" \
			"$(srun -- "$LAB_DIR/sc32" 2>&1 | cmd_out)"
	else
		# said, not silent: tests/unit/test_run_filter.c runs the filter's 32-bit path instead
		echo "# skip - this kernel runs no 32-bit calls (outside a run: $outside); the 32-bit path is tests/unit/test_run_filter's"
	fi
else
	not_ok "the 32-bit test program builds (x86_64, gcc)" "$(head -3 "$LAB_DIR/sc32.err")"
fi

# io_uring makes sockets without socket(2): IORING_OP_SOCKET takes any
# family, so the calls that set up and drive a ring are refused
cat >"$LAB_DIR/uring.c" <<'EOF'
/* uring: an AF_VSOCK socket by io_uring's IORING_OP_SOCKET (raw calls, no
 * liburing): "setup ERRNO", "enter ERRNO", "socket ERRNO" or "socket fd N domain D" */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	int ring = (int)syscall(__NR_io_uring_setup, 2, &p);
	if (ring < 0) {
		printf("setup %s\n", strerrorname_np(errno));
		return 0;
	}
	size_t sqlen = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cqlen = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *rings = mmap(NULL, sqlen > cqlen ? sqlen : cqlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			   ring, IORING_OFF_SQ_RING);
	struct io_uring_sqe *sqe = mmap(NULL, p.sq_entries * sizeof(*sqe), PROT_READ | PROT_WRITE,
					MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (rings == MAP_FAILED || sqe == MAP_FAILED || !(p.features & IORING_FEAT_SINGLE_MMAP)) {
		printf("mmap failed\n");
		return 0;
	}
	unsigned *tail = (unsigned *)(rings + p.sq_off.tail), *mask = (unsigned *)(rings + p.sq_off.ring_mask);
	unsigned at = *tail & *mask;
	memset(&sqe[at], 0, sizeof(sqe[at]));
	sqe[at].opcode = IORING_OP_SOCKET;
	sqe[at].fd = 40; /* AF_VSOCK */
	sqe[at].off = SOCK_STREAM;
	((unsigned *)(rings + p.sq_off.array))[at] = at;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
		printf("enter %s\n", strerrorname_np(errno));
		return 0;
	}
	unsigned head = *(unsigned *)(rings + p.cq_off.head) & *(unsigned *)(rings + p.cq_off.ring_mask);
	int fd = ((struct io_uring_cqe *)(rings + p.cq_off.cqes))[head].res, dom = -1;
	socklen_t len = sizeof(dom);
	if (fd < 0) {
		printf("socket %s\n", strerrorname_np(-fd));
		return 0;
	}
	getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len);
	printf("socket fd %d domain %d\n", fd, dom);
	return 0;
}
EOF
if gcc -O1 -o "$LAB_DIR/uring" "$LAB_DIR/uring.c" 2>"$LAB_DIR/uring.err"; then
	expect_re "outside a run, the sandbox user gets an AF_VSOCK socket by io_uring's IORING_OP_SOCKET (the control)" \
		"^socket fd [0-9]+ domain 40\$" "$(runuser -u sluice-sandbox -- "$LAB_DIR/uring")"
	expect_eq "inside, io_uring_setup is refused (ENOSYS): no socket made by a ring" \
		"setup ENOSYS" "$(srun -- "$LAB_DIR/uring" 2>&1 | cmd_out)"
else
	not_ok "the io_uring test program builds (gcc)" "$(head -3 "$LAB_DIR/uring.err")"
fi

# ---------------------------------------------------------------- limits
# What the issue's design leaves open, checked as what one might want, only
# with SLUICE_DOORS_KNOWN=1 (each fails while the limit is there): a socket
# bound outside /run after the run started (the list is read at the start),
# and one whose name in the table is relative (it says not where it is).
if [ -n "${SLUICE_DOORS_KNOWN-}" ]; then
	echo "# SLUICE_DOORS_KNOWN: limits of covering the machine's sockets"
	"${SRUN[@]}" -- sh -c "echo started; $(until_go late); $PY $LAB_DIR/knock.py $LAB_DIR/late.list" \
		>"$LAB_DIR/late.out" 2>&1 &
	p=$!
	LAB_PIDS+=("$p")
	wait_until 20 grep -q '^started' "$LAB_DIR/late.out" || not_ok "the long run starts" "$(cat "$LAB_DIR/late.out")"
	"$PY" "$LAB_DIR/serve.py" "$VARLIB_D/late.sock" >"$LAB_DIR/serve-late.out" 2>&1 &
	LAB_PIDS+=($!)
	(cd "$VARLIB_D" && exec "$PY" "$LAB_DIR/serve.py" rel.sock) >"$LAB_DIR/serve-rel.out" 2>&1 &
	LAB_PIDS+=($!)
	wait_until 10 grep -q '^up' "$LAB_DIR/serve-late.out"
	wait_until 10 grep -q '^up' "$LAB_DIR/serve-rel.out"
	printf '%s\0' "$VARLIB_D/late.sock" >"$LAB_DIR/late.list"
	go late
	wait "$p"
	expect_re "limit: a socket bound under /var/lib after the run started refuses CMD" " refused " \
		"$(grep "late.sock" "$LAB_DIR/late.out")"
	printf '%s\0' "$VARLIB_D/rel.sock" >"$LAB_DIR/rel.list"
	expect_re "limit: a socket bound by a relative name refuses CMD" " refused " \
		"$(srun -- "$PY" "$LAB_DIR/knock.py" "$LAB_DIR/rel.list" 2>&1 | cmd_out)"
fi

lab_done
