#!/bin/bash
# test_run_fs.sh: what the sandbox user may write under `sluice run`, tried
# by a CMD that wants to hand another project's CMD something (a file, a
# socket, a pty, a lock), or to get out of its own, and what the operator
# expects of it still (CMD in its working directory, with its files). Set
# up like test_run_hostile.sh: two projects (lab_second_project), each with
# its own proxy and sluice-dns. What is tried, each with its control:
#   - the working directory: under /tmp, under /dev/shm, a long path, a
#     mount point with a mount under it, /tmp itself, a symlink; what CMD
#     writes there stays, what it writes in its /tmp does not, and no mount
#     of the run's shows on the host;
#   - a user namespace of CMD's own: the private /tmp cannot be unmounted
#     nor bound around to reach the host's;
#   - two projects' runs at once: an abstract socket, SysV memory and
#     semaphores, processes (signals), the project's home (by its path),
#     every place the sandbox user may write on the machine (/sys and
#     /proc/sys too);
#   - the seccomp filter, every path of its jump table: native, x32 and
#     32-bit (int $0x80, where the kernel runs it), each call refused or let through as it should;
#   - STATE/sandbox/home made by runs started at once.
#   - what the review found, fixed since: the machine's /dev/pts, a cwd's
#     unreachable parent made reachable, deeper world-writable directories,
#     the operator's session keyring in /proc/keys, the tmpfs' sizes, a
#     home left to an old uid, a missing home mount point.
# Two limits the README names are checked, as what one might want, only
# with SLUICE_FS_KNOWN=1: a cwd's parent under /tmp is not there, and a
# lock on a file both may read is a one-bit channel between colluding runs.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
source "$INTEG_DIR/run_lab.sh"
lab_up
lab_unbound 'local-data: "good.test. 300 IN A 203.0.113.10"' \
	'local-data: "other.test. 300 IN A 203.0.113.11"'

lab_run_project 41700
lab_run_proxy
lab_run_dns "$CONF"
lab_second_project
ip netns exec "$HNS" "$SLUICE_BUILD/sluice-proxy" -c "$CONF_B" >>"$LAB_DIR/proxy-b.out" 2>>"$LAB_DIR/proxy-b.err" &
LAB_PIDS+=($!)
wait_until 10 hx bash -c '</dev/tcp/127.0.0.1/3129' || lab_bail "project B's proxy starts" "$(cat "$LAB_DIR/proxy-b.err")"
lab_run_dns "$CONF_B"

SRUN_B=(nsenter --net="/run/netns/$HNS" env SLUICE_PORT_BASE=41900 "$SLUICE_BUILD/sluice" -c "$CONF_B" run)
srun_b() { "${SRUN_B[@]}" "$@"; }
# what CMD printed (not sluice run's own "run: ..." lines), on one line
cmd_out() { grep -v '^run: ' | tr '\n' ' ' | sed 's/ $//'; }
# run_a NAME CMD: project A's CMD (sh -c CMD) in the background, its output in
# LAB_DIR/NAME.out; returns once it printed "started"
run_a() {
	"${SRUN[@]}" -- sh -c "$2" >"$LAB_DIR/$1.out" 2>&1 &
	A_PID=$!
	LAB_PIDS+=("$A_PID")
	wait_until 20 grep -q '^started' "$LAB_DIR/$1.out" || not_ok "run A ($1) starts" "$(cat "$LAB_DIR/$1.out")"
}
end_a() { go "$1"; wait "$A_PID"; }

MARK=sluice-fs-$$
SB_UID=$(id -u sluice-sandbox 2>/dev/null)
SB_HOME=$(getent passwd sluice-sandbox | cut -d: -f6)
fs_cleanup() {
	local rc=$?
	umount -R "$LAB_DIR/mnt" 2>/dev/null
	rm -rf --one-file-system "/tmp/$MARK"* "/dev/shm/$MARK"* "/var/tmp/$MARK"* "/run/lock/$MARK"* "/var/cache/$MARK"
	[ -d "$SB_HOME.$MARK" ] && [ ! -e "$SB_HOME" ] && mv "$SB_HOME.$MARK" "$SB_HOME"
	return $rc
}
trap 'fs_cleanup; lab_teardown' EXIT

# ---------------------------------------------------------------- STATE/sandbox/home, made by runs at once
expect_eq "project B has no STATE/sandbox yet (the control)" "absent" \
	"$([ -e "$STATE_B/sandbox" ] && echo present || echo absent)"
pids=()
for i in 1 2 3 4 5 6 7 8; do
	srun_b -- sh -c 'echo x >"$HOME/.race.'$i'" && echo "home $HOME"' >"$LAB_DIR/race.$i.out" 2>&1 &
	pids+=($!)
done
bad=
for i in 1 2 3 4 5 6 7 8; do
	wait "${pids[$((i - 1))]}" || bad+="run $i: exit $?: $(cmd_out <"$LAB_DIR/race.$i.out"); "
done
expect_eq "eight runs of project B started at once, the first ever: all run and write their home" "" "$bad"
expect_eq "... STATE/sandbox is root's 0700, its home the sandbox user's 0700" \
	"0:700 $SB_UID:700" "$(stat -c %u:%a "$STATE_B/sandbox" "$STATE_B/sandbox/home" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... and all eight files are in it" 8 "$(ls -A "$STATE_B/sandbox/home" | grep -c '^\.race\.')"
expect_eq "... \$HOME is the user's home (bound over by the project's)" "home $SB_HOME" \
	"$(cmd_out <"$LAB_DIR/race.1.out")"

# ---------------------------------------------------------------- the working directory
W=$LAB_DIR/work
mkdir -p "$W"
echo mine >"$W/given"
chown sluice-sandbox "$W"
echo host >"/tmp/$MARK.host"
out=$(cd "$W" && srun -- sh -c "pwd; cat given; echo rel >made; echo abs >$W/made2;
	echo gone >/tmp/$MARK.gone; ls /tmp/$MARK.gone; ls /tmp/$MARK.host 2>&1 | grep -c 'No such'" 2>&1)
expect_eq "CMD started in a directory under /tmp: starts there, reads the operator's file there" \
	"$W mine /tmp/$MARK.gone 1" "$(cmd_out <<<"$out")"
expect_eq "... what it wrote there (relative and absolute path) is the operator's after the run" "rel abs" \
	"$(cat "$W/made" "$W/made2" 2>&1 | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... what it wrote elsewhere in its /tmp (seen there: the control) is gone, not in the host's" \
	"absent" "$([ -e "/tmp/$MARK.gone" ] && echo present || echo absent)"
expect_eq "... the host's /tmp file is there (so CMD's not seeing it, above, could fail)" "host" \
	"$(cat "/tmp/$MARK.host")"
rm -f "$W/made" "$W/made2"

D=/dev/shm/$MARK.cwd
mkdir -p "$D"
echo mine >"$D/given"
chown sluice-sandbox "$D"
out=$(cd "$D" && srun -- sh -c "pwd; cat given; echo w >made" 2>&1)
expect_eq "CMD started in a directory under /dev/shm: starts there, reads it, writes there" \
	"$D mine w" "$(cmd_out <<<"$out") $(cat "$D/made" 2>&1)"

L=$W/$(printf 'a%.0s' $(seq 90))/$(printf 'b%.0s' $(seq 90))
mkdir -p "$L"
echo mine >"$L/given"
out=$(cd "$L" && srun -- sh -c "pwd; cat given" 2>&1)
expect_eq "CMD started in a directory under /tmp whose path is ${#L} characters long: starts there" \
	"$L mine" "$(cmd_out <<<"$out")"

M=$LAB_DIR/mnt
mkdir -p "$M"
mount -t tmpfs -o mode=755 "$MARK" "$M" && mkdir "$M/sub" && mount -t tmpfs -o mode=755 "$MARK-sub" "$M/sub" ||
	lab_bail "a tmpfs on $M"
echo top >"$M/given"
echo sub >"$M/sub/given"
out=$(cd "$M" && srun -- sh -c "pwd; cat given sub/given" 2>&1)
expect_eq "CMD started in a mount point under /tmp, a mount under it: starts there, sees both" \
	"$M top sub" "$(cmd_out <<<"$out")"
umount -R "$M"

out=$(cd / && srun -- pwd 2>&1)
expect_eq "CMD started in / (no private directory): starts there" "/" "$(cmd_out <<<"$out")"

# started in /tmp (or /var/tmp, /dev/shm) itself: the bind of it (MS_REC) takes the fresh one along
for t in /tmp /var/tmp /dev/shm; do
	echo host >"$t/$MARK.host"
	out=$(cd "$t" && srun -- sh -c "pwd; cat $t/$MARK.host 2>/dev/null; echo left >$t/$MARK.left" 2>&1)
	expect_eq "CMD started in $t itself: starts there, sees not the host's $t (its $MARK.host), leaves nothing in it" \
		"$t absent" "$(cmd_out <<<"$out") $([ -e "$t/$MARK.left" ] && echo left || echo absent)"
done

ln -s "$W" "$LAB_DIR/link"
out=$(cd "$LAB_DIR/link" && srun -- sh -c "pwd; cat given" 2>&1)
expect_eq "CMD started by a symlink to a directory under /tmp: starts in the directory itself" "$W mine" \
	"$(cmd_out <<<"$out")"

# the run's mounts are its own: while it runs, the host sees none of them
host_mounts_at() { awk -v p="$1" '$5 == p' /proc/self/mountinfo | wc -l; }
tmp_before=$(host_mounts_at /tmp)
(cd "$W" && "${SRUN[@]}" -- sh -c "awk -v p=$W '\$5 == p' /proc/self/mountinfo | wc -l | sed 's/^/binds /';
	echo started; while [ ! -e $W/go.mnt ]; do sleep 0.05; done") >"$LAB_DIR/mnt.out" 2>&1 &
A_PID=$!
LAB_PIDS+=("$A_PID")
wait_until 20 grep -q '^started' "$LAB_DIR/mnt.out" || not_ok "the long run starts" "$(cat "$LAB_DIR/mnt.out")"
expect_eq "CMD's working directory is a bind in its mount namespace (the control)" "binds 1" \
	"$(grep '^binds' "$LAB_DIR/mnt.out")"
expect_eq "... which the host's does not have while it runs, nor a new mount on /tmp" "0 $tmp_before" \
	"$(host_mounts_at "$W") $(host_mounts_at /tmp)"
touch "$W/go.mnt" # in its working directory: LAB_DIR's GO files are not in its /tmp
wait "$A_PID"

# ---------------------------------------------------------------- a user namespace of CMD's own
ESCAPE="unshare -Urm sh -c 'umount /tmp 2>/dev/null && echo umount-ok;
	umount -l /tmp 2>/dev/null && echo lazy-ok;
	mkdir -p /tmp/r /tmp/rr; mount --bind / /tmp/r 2>/dev/null && echo bind-ok;
	mount --rbind / /tmp/rr 2>/dev/null && umount /tmp/rr/tmp 2>/dev/null && echo rbind-umount-ok;
	cat /tmp/$MARK.host /tmp/r/tmp/$MARK.host /tmp/rr/tmp/$MARK.host 2>/dev/null; echo done'"
expect_eq "as root in a mount namespace of its own, a tmpfs on /tmp is unmounted to reach the host's (the control)" \
	"host" "$(unshare -m sh -c "mount -t tmpfs t /tmp && umount /tmp && cat /tmp/$MARK.host" 2>&1)"
expect_eq "... or bound around (the control)" "host" \
	"$(unshare -m sh -c "mount -t tmpfs t /tmp && mkdir /tmp/r && mount --bind / /tmp/r && cat /tmp/r/tmp/$MARK.host" 2>&1)"
out=$(srun -- sh -c "$ESCAPE" 2>&1)
expect_eq "CMD, in a user and mount namespace of its own, can neither unmount its /tmp nor bind around it" \
	"done" "$(cmd_out <<<"$out")"

# ---------------------------------------------------------------- two projects' runs at once
cat >"$LAB_DIR/absock.py" <<'EOF'
import os, socket, sys
name = b"\0" + sys.argv[2].encode()
if sys.argv[1] == "listen":
    s = socket.socket(socket.AF_UNIX)
    s.bind(name)
    s.listen(8)
    os.write(1, b"listening\n")
    while True:
        s.accept()[0].close()
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(name)
    print(sys.argv[3], "connected")
except OSError as e:
    print(sys.argv[3], e.errno)
EOF
run_a two "$PY absock.py listen $MARK & while ! grep -q '@$MARK' /proc/net/unix; do sleep 0.05; done;
	$PY absock.py connect $MARK own; ipcmk -M 4096 >/dev/null; ipcmk -S 1 >/dev/null;
	echo \"ipc \$(ipcs -m | grep -c '^0x') \$(ipcs -s | grep -c '^0x')\"; sleep 2$$ & echo started; $(until_go two)"
out=$(srun_b -- sh -c "$PY absock.py connect $MARK other; echo \"ipc \$(ipcs -m | grep -c '^0x') \$(ipcs -s | grep -c '^0x')\";
	pgrep -x -a sleep | grep -c 'sleep 2$$' | sed 's/^/seen /'; kill -0 $A_PID 2>/dev/null && echo signalled || echo not-signalled" 2>&1)
expect_eq "project A's CMD connects to the abstract socket it listens on, holds SysV memory and a semaphore (the control)" \
	"own connected ipc 1 1" "$(grep -E '^(own|ipc)' "$LAB_DIR/two.out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... project B's, meanwhile: no abstract socket of A's, no SysV object, no process of A's, no signal to its host pid" \
	"other 111 ipc 0 0 seen 0 not-signalled" "$(cmd_out <<<"$out")"
expect_eq "... A's sleep runs, its supervisor's host pid is live (the controls)" "1 live" \
	"$(pgrep -x -a sleep | grep -c "sleep 2$$") $(kill -0 "$A_PID" 2>/dev/null && echo live)"
expect_eq "... A's CMD cannot reach project B's home by its path (under root's STATE/sandbox)" "Permission denied" \
	"$(srun -- ls "$STATE_B/sandbox/home" 2>&1 | grep -o 'Permission denied' | head -1)"
expect_eq "... though the path up to it is there for it (the control)" "$STATE_B" \
	"$(srun -- ls -d "$STATE_B" 2>&1 | cmd_out)"
end_a two

# every place the sandbox user may write, inside a run: the fresh directories,
# its home, character devices; nothing on a filesystem the machine uses too
SHARED_DEVS=" $(stat -c %d / /dev /dev/shm /run /tmp /var /var/tmp 2>/dev/null | sort -u | tr '\n' ' ')"
FRESH=$(for p in / /var /run /dev; do
	for d in "$p"/*; do
		[ -d "$d" ] && [ ! -L "$d" ] && [ "$(($(stat -c '0%a' "$d") & 2))" -ne 0 ] && echo "fresh $d"
	done
done | sed 's|^fresh //|fresh /|' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')
expect_re "the machine has world-writable directories directly under / /var /run /dev (the control)" "/tmp" "$FRESH"
SCAN="find / \\( -path /proc -o -path /sys -o -path \"\$HOME\" \\) -prune -o ! -type l -writable -print 2>/dev/null |
	while read -r p; do
		if [ -c \"\$p\" ]; then echo \"dev \$p\"
		else case '$SHARED_DEVS' in *\" \$(stat -c %d \"\$p\") \"*) echo \"shared \$p\";; *) [ -d \"\$p\" ] && echo \"fresh \$p\";; esac; fi
	done | LC_ALL=C sort"
out=$(runuser -u sluice-sandbox -- env HOME="$SB_HOME" sh -c "$SCAN" | tr '\n' ' ')
expect_re "outside sluice run, the sandbox user may write shared places (/tmp: the control)" "shared /tmp " "$out"
out=$(mkdir -p "$LAB_DIR/ro" && cd "$LAB_DIR/ro" && srun -- sh -c "$SCAN" 2>&1)
expect_eq "inside it, nothing shared (whole tree, files and sockets too): only fresh directories" \
	"$FRESH" "$(grep -E '^(shared|fresh)' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... and character devices that hold nothing (the run's own pty multiplexer)" "" \
	"$(grep '^dev' <<<"$out" | grep -vE '^dev /dev/(null|zero|full|random|urandom|tty|ptmx|pts/ptmx)$')"

# (ns_last_pid is 0666, the run's own PID namespace's, and written only with CAP_CHECKPOINT_RESTORE)
out=$(srun -- sh -c 'find /sys /proc/sys ! -type l -writable 2>/dev/null | grep -vx /proc/sys/kernel/ns_last_pid |
	head -5; (echo 1 >/proc/sys/kernel/ns_last_pid) 2>/dev/null && echo ns_last_pid-written' 2>&1)
expect_eq "... nothing in /sys (cgroup files included) or /proc/sys (ns_last_pid: not for it)" \
	"" "$(cmd_out <<<"$out")"

# ---------------------------------------------------------------- the seccomp filter's every path
cat >"$LAB_DIR/sc.c" <<'EOF'
/* sc: calls by number, native and x32 ("sc"), or 32-bit by int $0x80, each
 * in a child ("sc 32"): "NAME ok", "NAME ERRNO" or "NAME signal N" */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <errno.h>
#include "call32.h"
static void n(const char *name, long r) { r == -1 ? printf("%s %d\n", name, errno) : printf("%s ok\n", name); }
int main(int argc, char **argv)
{
	int fd = open("/dev/null", O_RDWR);
	char *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

	(void)argv;
	if (argc > 1) {
		call32("getpid32", 20, 0, 0, 0);
		call32("ioctl32", 54, fd, FIONREAD, (long)low);
		call32("ioctl32-tiocsti", 54, fd, TIOCSTI, (long)low);
		call32("ioctl32-tioclinux", 54, fd, TIOCLINUX, (long)low);
		call32("add_key32", 286, 0, 0, 0);
		call32("request_key32", 287, 0, 0, 0);
		call32("keyctl32", 288, 0, -3, 0);
		return 0;
	}
	n("getpid", syscall(SYS_getpid));
	n("ioctl", syscall(SYS_ioctl, fd, FIONREAD, low));
	n("ioctl-tiocsti", syscall(SYS_ioctl, fd, TIOCSTI, low));
	n("ioctl-tioclinux", syscall(SYS_ioctl, fd, TIOCLINUX, low));
	n("add_key", syscall(SYS_add_key, NULL, NULL, NULL, 0, 0));
	n("request_key", syscall(SYS_request_key, NULL, NULL, NULL, 0));
	n("keyctl", syscall(SYS_keyctl, 0, -3, 0));
	n("getpid-x32", syscall(0x40000000 | 39));
	return 0;
}
EOF
# what the filter should make of each call: the answer outside, or EPERM
sc_want() {
	tr ' ' '\n' <<<"$1" | paste -d' ' - - | while read -r name r; do
		case $name in *tiocsti | *tioclinux | add_key* | request_key* | keyctl* | getpid-x32) r=1 ;; esac
		echo "$name $r"
	done | tr '\n' ' ' | sed 's/ $//'
}
if [ "$(uname -m)" = x86_64 ] && gcc -O1 -I "$INTEG_DIR" -o "$LAB_DIR/sc" "$LAB_DIR/sc.c" 2>"$LAB_DIR/sc.err"; then
	outside=$(runuser -u sluice-sandbox -- "$LAB_DIR/sc" | tr '\n' ' ' | sed 's/ $//')
	expect_re "outside sluice run, the sandbox user's native calls reach the kernel (the control)" \
		"^getpid ok ioctl [0-9a-z]+ ioctl-tiocsti [0-9a-z]+ ioctl-tioclinux [0-9a-z]+ add_key [0-9a-z]+ request_key [0-9a-z]+ keyctl [0-9a-z]+ getpid-x32 [0-9a-z]+$" "$outside"
	expect_eq "... none refused with EPERM (the control)" \
		"" "$(tr ' ' '\n' <<<"$outside" | paste -d' ' - - | grep ' 1$')"
	expect_eq "inside, native: TIOCSTI, TIOCLINUX and the key calls EPERM, other ioctls and calls as outside; x32 refused" \
		"$(sc_want "$outside")" "$(srun -- "$LAB_DIR/sc" 2>&1 | cmd_out)"
	outside=$(runuser -u sluice-sandbox -- "$LAB_DIR/sc" 32 | tr '\n' ' ' | sed 's/ $//')
	if [[ "$outside" == "getpid32 ok"* ]]; then
		expect_eq "outside, 32-bit: none refused with EPERM (the control)" \
			"" "$(tr ' ' '\n' <<<"$outside" | paste -d' ' - - | grep ' 1$')"
		expect_eq "inside, 32-bit: TIOCSTI, TIOCLINUX and the key calls EPERM, other calls as outside" \
			"$(sc_want "$outside")" "$(srun -- "$LAB_DIR/sc" 32 2>&1 | cmd_out)"
	else
		# said, not silent: tests/unit/test_run_filter.c runs the filter's 32-bit path instead
		echo "# skip - this kernel runs no 32-bit calls (outside a run: $outside); the 32-bit path is tests/unit/test_run_filter's"
	fi
else
	not_ok "the seccomp test program builds (x86_64, gcc)" "$(uname -m) $(head -3 "$LAB_DIR/sc.err" 2>/dev/null)"
fi

# ---------------------------------------------------------------- what a hostile review found, fixed
# /dev/pts: the run's own instance; a pty one run makes, another run of the same uid does not open
cat >"$LAB_DIR/pty.py" <<EOF
import os, time
m, s = os.openpty()
name = os.ttyname(s)
os.close(s)
os.write(m, b"from-a\\n")
fd = os.open(name, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
print("own", os.read(fd, 100).decode().strip(), flush=True)
print("started", name, flush=True)
while not os.path.exists("$GO.pty"):
    time.sleep(0.05)
EOF
run_a pty "$PY pty.py"
PTY=$(sed -n 's/^started //p' "$LAB_DIR/pty.out")
OPEN="import os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
except OSError as e:
    sys.exit('refused %d' % e.errno)
try:
    print('read', os.read(fd, 100).decode().strip())
except OSError as e:
    print('read', e.errno)"
expect_eq "project A's CMD opens the pty it made, $PTY, by its name, and reads it (the control)" "own from-a" \
	"$(grep '^own' "$LAB_DIR/pty.out")"
expect_re "project B's CMD cannot open it (a devpts of each run's own)" '^refused ' \
	"$(srun_b -- "$PY" -c "$OPEN" "$PTY" 2>&1 | cmd_out)"
expect_re "... nor can the sandbox user outside any run" '^refused ' \
	"$(runuser -u sluice-sandbox -- "$PY" -c "$OPEN" "$PTY" 2>&1)"
end_a pty

# a working directory the sandbox user could not reach (a parent root's 0700) stays unreachable
P=$LAB_DIR/priv
mkdir -p "$P/proj"
chmod 700 "$P"
echo private >"$P/proj/file"
expect_re "outside a run, the sandbox user cannot read $P/proj/file (the control)" "Permission denied" \
	"$(runuser -u sluice-sandbox -- cat "$P/proj/file" 2>&1)"
out=$(cd "$P/proj" && srun -- sh -c "pwd; cat $P/proj/file 2>&1" 2>&1)
expect_re "inside a run started there, nor can CMD (it starts at its home)" \
	"^$SB_HOME .*(Permission denied|No such file)" "$(cmd_out <<<"$out")"

# a world-writable directory deeper than / /var /run /dev (/var/crash, /var/lib/php/sessions...)
mkdir -p "/var/cache/$MARK"
chmod 1777 "/var/cache/$MARK"
expect_eq "outside a run, the sandbox user writes a file in /var/cache/$MARK (1777: the control)" "left" \
	"$(runuser -u sluice-sandbox -- sh -c "echo left >/var/cache/$MARK/left && cat /var/cache/$MARK/left; rm -f /var/cache/$MARK/left" 2>&1)"
out=$(srun -- sh -c "echo left >/var/cache/$MARK/left" 2>&1)
expect_re "inside a run, CMD cannot: all but its own places are read-only" "Read-only file system" "$(cmd_out <<<"$out")"
rm -rf "/var/cache/$MARK"

# /proc/keys: CMD has a session keyring of its own, not the operator's
case $(uname -m) in x86_64) ADD=248 CTL=250 ;; aarch64) ADD=217 CTL=219 ;; esac
KEYRUN="import ctypes, os, sys
l = ctypes.CDLL(None, use_errno=True)
l.syscall($CTL, 1, None)
l.syscall($ADD, b'user', b'$MARK-desc', b'pw', 2, -3)
os.execvp(sys.argv[1], sys.argv[1:])"
expect_eq "the operator's session keyring holds $MARK-desc (its /proc/keys lists it: the control)" 1 \
	"$("$PY" -c "$KEYRUN" cat /proc/keys | grep -c "$MARK-desc")"
expect_eq "CMD, run from that session, does not list it" 0 \
	"$("$PY" -c "$KEYRUN" "${SRUN[@]}" -- cat /proc/keys 2>/dev/null | grep -c "$MARK-desc")"

# the private directories' size: one tmpfs for all of them, capped
mem=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
out=$(srun -- sh -c 'df -k --output=size /tmp /var/tmp /run/lock /dev/shm 2>/dev/null | tail -n +2' 2>&1 |
	grep -E '^ *[0-9]+$' | sort -u | tr -d ' ')
expect_eq "a run's private directories are one tmpfs (one size)" 1 "$(grep -c . <<<"$out")"
expect_lt "... of at most a third of the machine's memory (kB, MemTotal $mem)" "$((mem / 3))" "${out:-999999999}"

# the project's home made again for another uid: all of it is chowned, not its top only
out=$(srun -- sh -c 'mkdir -p "$HOME/.cache/k9" && echo a >"$HOME/.cache/k9/f" && echo wrote' 2>&1)
expect_eq "CMD writes under its home's .cache (the control)" "wrote" "$(cmd_out <<<"$out")"
chown -R nobody "$STATE/sandbox/home" # as the user's old uid would have them
out=$(srun -- sh -c 'echo b >"$HOME/.cache/k9/f" && echo wrote' 2>&1)
expect_eq "after the uid changed, it still does" "wrote" "$(cmd_out <<<"$out")"

# the sandbox user's own home on the machine (only a mount point) removed: made again
if mv "$SB_HOME" "$SB_HOME.$MARK"; then
	out=$(srun -- sh -c 'echo "home $HOME"' 2>&1)
	rmdir "$SB_HOME" 2>/dev/null
	mv "$SB_HOME.$MARK" "$SB_HOME" || echo "# could not put $SB_HOME.$MARK back"
	expect_eq "with $SB_HOME removed, CMD runs with the project's home" "home $SB_HOME" "$(cmd_out <<<"$out")"
else
	not_ok "move $SB_HOME aside"
fi

# ---------------------------------------------------------------- limits (the README says so)
# Written as what one might want; these do not hold, by design or not yet.
# Run with SLUICE_FS_KNOWN=1.
if [ -n "${SLUICE_FS_KNOWN-}" ]; then
	echo "# SLUICE_FS_KNOWN: limits the README names"

	# under a private directory only the working directory itself is there: not its parent
	mkdir -p "$LAB_DIR/proj2/build"
	printf 'echo configured\n' >"$LAB_DIR/proj2/configure"
	out=$(cd "$LAB_DIR/proj2/build" && srun -- sh ../configure 2>&1)
	expect_eq "limit: CMD started in a project's build directory under /tmp runs ../configure" "configured" \
		"$(cmd_out <<<"$out")"

	# a lock on a file both may read: one bit at a time, a channel between two colluding runs
	echo ro >"$LAB_DIR/ro-file"
	chmod 644 "$LAB_DIR/ro-file"
	run_a lock "$PY -c \"import fcntl, os, time
f = open('$LAB_DIR/ro-file')
fcntl.flock(f, fcntl.LOCK_EX)
print('started', flush=True)
while not os.path.exists('$GO.lock'): time.sleep(0.05)\""
	expect_eq "control: A's CMD holds a lock on a root file it may only read (the host's flock -n fails)" "held" \
		"$(flock -n "$LAB_DIR/ro-file" true && echo free || echo held)"
	out=$(srun_b -- "$PY" -c "import fcntl
f = open('$LAB_DIR/ro-file')
try:
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print('got')
except OSError as e:
    print('busy', e.errno)" 2>&1)
	expect_eq "limit: B's CMD cannot tell (no lock state shared between projects' runs)" "got" "$(cmd_out <<<"$out")"
	end_a lock
fi

lab_done
