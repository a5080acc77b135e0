#!/bin/bash
# integ: alone (floods a run's forwarder and the proxy; the operator must be served within 1 s meanwhile)
# test_run_hostile.sh: `sluice run` against a CMD that wants out, and an
# operator whose machine it runs on. Set up like test_run.sh (the lab's
# host namespace stands for the operator's machine: proxy, sluice-dns;
# unbound and the origins in inet). What is tried, each with its control:
#   - two runs of one project at once: the first one's end must not take
#     the second's proxy (started for the first) or its --allow grant away;
#     the last one's end stops the daemons;
#   - what CMD holds: no descriptor of the operator's or of the
#     supervisor's (its init holds none either), no way to type into the
#     operator's terminal (TIOCSTI), no capability, no namespace to enter
#     (not even from a user namespace of its own), no host process to see,
#     trace or signal, none of STATE's secrets;
#   - what the sandbox's network holds: the forwarder's listeners, nothing
#     else (no unix socket, no IPv6 way out); a flood of connections or of
#     DNS datagrams leaves the operator's own clients served;
#   - SIGTERM at each step of setup, and SIGKILL of the supervisor: nothing
#     left (namespace, record, forwarder, grant, daemon), at once;
#   - runs started at once all start, and one run left unremovable does
#     not stop the next;
#   - two projects' runs: one cannot lend the other its way out through the
#     filesystem they share, nor leave it anything;
#   - --image: a secret passed with --env NAME is on no command line another
#     user can read; a container that ignores SIGTERM does not outlive a
#     SIGKILLed run.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
source "$INTEG_DIR/run_lab.sh"
lab_up
lab_unbound 'local-data: "good.test. 300 IN A 203.0.113.10"' \
	'local-data: "other.test. 300 IN A 203.0.113.11"' \
	'local-data: "third.test. 300 IN A 203.0.113.12"'

lab_run_project 41300
# the namespace of the one live run of STATE
run_name() { sed -n 's/^id /sluice-/p' "$STATE"/runs/*/record 2>/dev/null | head -1; }
# the pid of the sandbox's init (the record's cmd) of the one live run
init_pid() { sed -n 's/^proc \([0-9]*\) [0-9]* cmd$/\1/p' "$STATE"/runs/*/record 2>/dev/null | head -1; }
code_of() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }

# what this test leaves outside LAB_DIR (files CMD wrote, containers): removed on exit
SHARED_MARK=sluice-hostile-$$
CTRS=()
hostile_cleanup() {
	local rc=$? c
	rm -f "/tmp/$SHARED_MARK"* "/dev/shm/$SHARED_MARK"* "/var/tmp/$SHARED_MARK"* \
		"/var/lib/sluice-sandbox/.$SHARED_MARK"*
	for c in "${CTRS[@]}"; do
		podman rm -f -t 0 "$c" >/dev/null 2>&1
		podman network rm -f "$c" >/dev/null 2>&1
	done
	return $rc
}
trap 'hostile_cleanup; lab_teardown' EXIT

expect_eq "nothing of sluice's runs on the machine before" "" "$(run_leftovers)"

# ---------------------------------------------------------------- one project, two runs: the daemons
# No daemon runs: A starts the proxy and sluice-dns; B, started while A
# runs, finds them by their run files and uses them. A ends first.
"${SRUN[@]}" -- sh -c "echo started; $(until_go a)" >"$LAB_DIR/a.out" 2>&1 &
apid=$!
LAB_PIDS+=("$apid")
wait_until 20 grep -q '^started' "$LAB_DIR/a.out" || not_ok "run A starts" "$(cat "$LAB_DIR/a.out")"
expect_re "run A started the project's daemons" "started sluice-proxy for this run" "$(cat "$LAB_DIR/a.out")"
"${SRUN[@]}" -- sh -c "echo \"b1 \$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://good.test/b1)\";
	$(until_go b); echo \"b2 \$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://good.test/b2)\"" \
	>"$LAB_DIR/b.out" 2>&1 &
bpid=$!
LAB_PIDS+=("$bpid")
wait_until 20 grep -q '^b1' "$LAB_DIR/b.out" || not_ok "run B starts" "$(cat "$LAB_DIR/b.out")"
expect_eq "run B, started while A runs, is served by A's proxy (the control)" "b1 200" \
	"$(grep '^b1' "$LAB_DIR/b.out")"
go a
wait "$apid"
go b
wait "$bpid"
expect_eq "when A ends first, B (still running) is still served: the proxy A started is not stopped under it" \
	"b2 200" "$(grep '^b2' "$LAB_DIR/b.out")"
wait_until 5 no_daemons
expect_eq "... and once both ended, no daemon started for them is left" " " "$(daemons_up)"
expect_eq "... nor anything else" "" "$(run_leftovers)"

# The same, but B, the last run out, is SIGKILLed: the daemons handed over
# to it stay up until whoever takes B down (here the next run) stops them.
"${SRUN[@]}" -- sh -c "echo started; $(until_go ka)" >"$LAB_DIR/ka.out" 2>&1 &
apid=$!
LAB_PIDS+=("$apid")
wait_until 20 grep -q '^started' "$LAB_DIR/ka.out" || not_ok "run A starts" "$(cat "$LAB_DIR/ka.out")"
"${SRUN[@]}" -- sh -c "echo started; exec sleep $SLEEP" >"$LAB_DIR/kb.out" 2>&1 &
bpid=$!
LAB_PIDS+=("$bpid")
wait_until 20 grep -q '^started' "$LAB_DIR/kb.out" || not_ok "run B starts" "$(cat "$LAB_DIR/kb.out")"
go ka
wait "$apid"
kill -KILL "$bpid"
wait "$bpid" 2>/dev/null
wait_until 5 nothing_runs
expect_eq "A ended, B SIGKILLed: the daemons A started and handed over are still up" "proxy dns" "$(daemons_up)"
srun -- true >/dev/null 2>&1
wait_until 5 no_daemons
expect_eq "... until the next run takes B down and, the last out, stops them" " " "$(daemons_up)"
expect_eq "... and nothing else is left" "" "$(run_leftovers)"

# ---------------------------------------------------------------- signals during setup (daemons started for the run)
# SIGTERM at a spread of moments: in the daemons' start, the grant, the
# namespace, the walls, the forwarder, verify, CMD's start, CMD. Each run
# must end at once (CMD is given 10 s only when it is running and ignores
# the signal; sleep does not) and leave nothing, daemons included.
term_run() { # DELAY [sluice run args...]: prints "exit MS LEFTOVERS DAEMONS"
	local d=$1 p t0 code
	shift
	"${SRUN[@]}" "$@" >"$LAB_DIR/term.out" 2>&1 &
	p=$!
	sleep "$d"
	t0=$(date +%s%N)
	kill -TERM "$p"
	wait "$p"
	code=$?
	echo "$code $((($(date +%s%N) - t0) / 1000000)) [$(run_leftovers)] [$(daemons_up)]"
}
# term_sweep DAEMONS DELAY...: term_run --allow third.test at each delay; prints
# those that took 3 s or more, left something, or did not leave daemons_up DAEMONS
term_sweep() {
	local want=$1 d r
	shift
	for d in "$@"; do
		r=$(term_run "$d" --allow third.test -- sleep "$SLEEP")
		set -- $r
		[ "$2" -lt 3000 ] && [[ "$r" == *" [] [$want]" ]] || printf 'after %ss: %s; ' "$d" "$r"
	done
}
expect_eq "SIGTERM at any step of a cold run: ended at once, nothing left (grant and daemons included)" "" \
	"$(term_sweep " " 0.01 0.05 0.1 0.2 0.35 0.5 0.7 0.9 1.2 1.6 2.2)"

# SIGKILL of the supervisor at a spread of moments: CMD and the forwarder die
# with it; the daemons it started (detached: another run may be using them)
# and the rest are taken down by the next run.
bad=
for d in 0.05 0.2 0.4 0.7 1.0 1.5 2.2; do
	"${SRUN[@]}" --allow third.test -- sleep "$SLEEP" >"$LAB_DIR/kill.out" 2>&1 &
	p=$!
	sleep "$d"
	kill -KILL "$p"
	wait "$p" 2>/dev/null
	wait_until 5 nothing_runs
	left=$(pgrep -x sleep -a | grep "sleep $SLEEP")$(forwarders_of "$STATE")
	srun -- true >"$LAB_DIR/kill2.out" 2>&1 || left+=" next run: $(tail -3 "$LAB_DIR/kill2.out")"
	wait_until 5 no_daemons
	left+=$(daemons_up)$(run_leftovers)
	[ "$left" == " " ] || bad+="after ${d}s: [$left]; "
done
expect_eq "SIGKILL at any step: CMD and the forwarder die with it, the next run takes down the rest (daemons included)" \
	"" "$bad"

# ---------------------------------------------------------------- the project's own daemons from here
lab_run_proxy
lab_run_dns "$CONF"

# ---------------------------------------------------------------- one project, two runs: the grants
"${SRUN[@]}" --allow other.test -- sh -c "echo started; $(until_go ga)" >"$LAB_DIR/ga.out" 2>&1 &
apid=$!
LAB_PIDS+=("$apid")
wait_until 20 grep -q '^started' "$LAB_DIR/ga.out" || not_ok "run A starts" "$(cat "$LAB_DIR/ga.out")"
"${SRUN[@]}" --allow other.test -- sh -c "echo \"b1 \$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://other.test/g1)\";
	$(until_go gb); echo \"b2 \$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://other.test/g2)\"" \
	>"$LAB_DIR/gb.out" 2>&1 &
bpid=$!
LAB_PIDS+=("$bpid")
wait_until 20 grep -q '^b1' "$LAB_DIR/gb.out" || not_ok "run B starts" "$(cat "$LAB_DIR/gb.out")"
expect_eq "two runs --allow the same name: B reaches it (the control)" "b1 200" "$(grep '^b1' "$LAB_DIR/gb.out")"
go ga
wait "$apid"
sleep 2.5 # the proxy and sluice-dns look at the grants each second
go gb
wait "$bpid"
expect_eq "when A ends first, B's --allow still holds for B" "b2 200" "$(grep '^b2' "$LAB_DIR/gb.out")"
expect_eq "... and after both, the grant is gone" "" "$(run_leftovers)"

# ---------------------------------------------------------------- what CMD holds
SECRET=$LAB_DIR/secret
printf 'fd-secret-%s\n' $$ >"$SECRET"
chmod 600 "$SECRET"
expect_re "the sandbox user cannot open a root-only file (the control)" "Permission denied" \
	"$(srun -- cat "$SECRET" 2>&1)"
out=$(srun -- sh -c 'cat <&9 2>/dev/null || echo "no fd 9"' 9<"$SECRET" 2>&1)
expect_eq "a descriptor the operator's shell had open (fd 9, a root-only file) is not CMD's" \
	"no fd 9" "$(tail -1 <<<"$out")"
"${SRUN[@]}" -- sh -c "echo started; $(until_go fds)" 9<"$SECRET" >"$LAB_DIR/fds.out" 2>&1 &
p=$!
LAB_PIDS+=("$p")
wait_until 20 grep -q '^started' "$LAB_DIR/fds.out" || not_ok "the long run starts" "$(cat "$LAB_DIR/fds.out")"
ipid=$(init_pid)
expect_eq "the sandbox's init (the sandbox user's) holds only stdin, stdout and stderr: no run file, no pipe end" \
	"0 1 2" "$(ls /proc/"$ipid"/fd 2>&1 | sort -n | tr '\n' ' ' | sed 's/ $//')"
go fds
wait "$p"

# TIOCSTI: CMD shares the operator's terminal; input it pushes there would be
# read by the operator's (root) shell once the run ends. Here bash's `read`
# after the run stands for that shell.
INJECT="import fcntl, termios
for c in 'echo INJECTED\n': fcntl.ioctl(0, termios.TIOCSTI, c.encode())"
out=$("$PY" "$INTEG_DIR/onpty.py" bash --norc -c "$PY -c \"$INJECT\"; read -t 2 line; echo \"READ[\$line]\"")
expect_eq "TIOCSTI works on this terminal outside a run (the control)" "READ[echo INJECTED]" \
	"$(grep '^READ' <<<"$out")"
out=$("$PY" "$INTEG_DIR/onpty.py" bash --norc -c "${SRUN[*]} -- $PY -c \"$INJECT\"; read -t 2 line; echo \"READ[\$line]\"")
expect_eq "CMD cannot type into the operator's terminal (TIOCSTI): the shell after the run reads nothing" \
	"READ[]" "$(grep '^READ' <<<"$out")"
# the same request with bits above the 32 the kernel looks at (a filter comparing 64 would miss it)
INJECT="import ctypes
libc = ctypes.CDLL(None)
for c in b'echo INJECTED\\n': libc.ioctl(0, ctypes.c_ulong(0x100005412), ctypes.c_char_p(bytes([c])))"
out=$("$PY" "$INTEG_DIR/onpty.py" bash --norc -c "$PY -c \"$INJECT\"; read -t 2 line; echo \"READ[\$line]\"")
expect_eq "TIOCSTI with high bits set works outside a run (the control)" "READ[echo INJECTED]" \
	"$(grep '^READ' <<<"$out")"
out=$("$PY" "$INTEG_DIR/onpty.py" bash --norc -c "${SRUN[*]} -- $PY -c \"$INJECT\"; read -t 2 line; echo \"READ[\$line]\"")
expect_eq "... and not from CMD" "READ[]" "$(grep '^READ' <<<"$out")"

SECRET_ENV=env-secret-$$
cat >"$LAB_DIR/inside.sh" <<EOF
grep -E "^(CapEff|CapBnd|CapAmb|NoNewPrivs):" /proc/self/status | tr -s "\\t" " " | tr "\\n" " "; echo
grep -q "$SECRET_ENV" /proc/1/environ 2>/dev/null && echo "init environ readable" || echo "init environ closed"
$PY -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); print("init traced" if l.ptrace(16, 1, 0, 0) == 0 else "init not traced")'
echo "pids \$(ls /proc | grep -c "^[0-9]")"
nsenter --net=/run/netns/$HNS true 2>/dev/null && echo "setns ok" || echo "setns refused"
unshare -Ur true 2>/dev/null && echo "userns ok" || echo "userns refused"
unshare -Ur nsenter --net=/run/netns/$HNS true 2>/dev/null && echo "userns setns ok" || echo "userns setns refused"
cat $STATE/ca.key $STATE/stamp.key >/dev/null 2>&1 && echo "keys readable" || echo "keys closed"
kill -KILL -1
EOF
out=$(SLUICE_HOSTILE_SECRET=$SECRET_ENV srun -- sh "$LAB_DIR/inside.sh" 2>&1)
expect_eq "CMD: no capability, no_new_privs" "CapEff: 0000000000000000 CapBnd: 0000000000000000 CapAmb: 0000000000000000 NoNewPrivs: 1 " \
	"$(grep '^CapEff' <<<"$out")"
expect_eq "... cannot read its init's environment (the operator's, with its secret)" "init environ closed" \
	"$(grep '^init environ' <<<"$out")"
expect_eq "... nor trace its init" "init not traced" "$(grep '^init.*traced' <<<"$out")"
expect_re "... sees only its own processes" '^pids [0-9]$' "$(grep '^pids' <<<"$out")"
expect_eq "... cannot enter the host's network namespace by /run/netns" "setns refused" "$(grep '^setns' <<<"$out")"
expect_eq "... not even from a user namespace of its own (which it may make)" "userns ok userns setns refused" \
	"$(grep '^userns' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... cannot read STATE's CA key or stamp key" "keys closed" "$(grep '^keys' <<<"$out")"
expect_eq "... and its kill -1 reaches no process of the host's (the proxy lives)" "alive" \
	"$(kill -0 "$PROXY_PID" 2>/dev/null && echo alive || echo dead)"

# ---------------------------------------------------------------- what the sandbox's network holds
"${SRUN[@]}" -- sh -c "echo started; $(until_go net)" >"$LAB_DIR/net.out" 2>&1 &
p=$!
LAB_PIDS+=("$p")
wait_until 20 grep -q '^started' "$LAB_DIR/net.out" || not_ok "the long run starts" "$(cat "$LAB_DIR/net.out")"
name=$(run_name)
# (127.0.0.1:base+91: the forwarder's transparent listener, test_run_transparent.sh)
expect_eq "the sandbox's namespace listens on the forwarder's ports alone: no unix socket, abstract or not" \
	"tcp 0.0.0.0:41390 tcp 0.0.0.0:53 tcp 127.0.0.1:41391 udp 0.0.0.0:53" \
	"$(ip netns exec "$name" ss -Htulnx | awk '{print $1, $5}' | sort | tr '\n' ' ' | sed 's/ $//')"
go net
wait "$p"
expect_eq "the host namespace's recorder answers on [2001:db8:ffff::1]:80 (the control)" 200 \
	"$(hx curl -s -o /dev/null -w '%{http_code}' -g --max-time 3 'http://[2001:db8:ffff::1]:80/v6')"
out=$(srun -- sh -c "curl -s -g --noproxy '*' --max-time 3 'http://[2001:db8:ffff::1]:80/v6'; echo \"v6 \$?\";
	curl -s -g --noproxy '*' --max-time 3 'http://[2001:db8::10]:80/v6'; echo \"v6 \$?\"" 2>&1)
expect_eq "IPv6 from the sandbox to the host's or the origin's address: refused" "v6 7 v6 7" \
	"$(grep '^v6' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"

# floods: connections held at the forwarder (heads never finished) and through
# it (CONNECTs the proxy tunnels), DNS datagrams from many ports to the relay
cat >"$LAB_DIR/flood.py" <<'EOF'
import os, socket, sys, time
port, until = int(sys.argv[1]), sys.argv[2]
held = []
for i in range(1200):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        break
    s.send(b"GET http://good.test/flood HTTP/1.1\r\n" if i % 2 else
           b"CONNECT good.test:80 HTTP/1.1\r\nHost: good.test:80\r\n\r\n")
    held.append(s)
udp = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(400)]
q = bytes.fromhex("12340100000100000000000009666c6f6f642d786e7404746573740000010001")
print("flooding", len(held), flush=True)
while not os.path.exists(until):
    for u in udp:
        try:
            u.sendto(q, ("127.0.0.1", 53))
        except OSError:
            pass
    time.sleep(0.001)
EOF
"${SRUN[@]}" -- "$PY" "$LAB_DIR/flood.py" $((RUN_BASE + 90)) "$GO.flood" >"$LAB_DIR/flood.out" 2>&1 &
p=$!
LAB_PIDS+=("$p")
wait_until 30 grep -q '^flooding' "$LAB_DIR/flood.out" || not_ok "the flood starts" "$(cat "$LAB_DIR/flood.out")"
sleep 1
t0=$(date +%s%N)
c=$(pcode http://good.test/operator)
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "while a run floods its forwarder and the proxy, the operator's own client is served" 200 "$c"
expect_lt "... at once (ms)" 1000 "$ms"
expect_eq "... and so are the operator's DNS questions to sluice-dns" "203.0.113.10" \
	"$(hx dig +short +tries=1 +time=2 @127.0.0.1 good.test A)"
expect_eq "... and the flooding run's forwarder lives" 1 "$(forwarders_of "$STATE" | wc -l)"
go flood
kill -TERM "$p"
wait "$p"
expect_eq "... nothing left after" "" "$(run_leftovers)"

# ---------------------------------------------------------------- signals during setup (the project's daemons)
expect_eq "SIGTERM at any step of a warm run: ended at once, nothing left, the project's daemons kept" "" \
	"$(term_sweep "proxy dns" 0.01 0.05 0.1 0.15 0.2 0.3 0.4 0.5 0.6 0.8 1.0)"

# SIGTERM the moment the sandbox's init exists (the supervisor passes it on at
# once): a namespace's init is sent only the signals it has a handler for, so
# one passed on before it set its handlers would be lost, and CMD would go on
# for the 10 s grace and be killed (137).
cat >"$LAB_DIR/termcatch.py" <<'EOF'
import os, signal, sys
sup = int(sys.argv[1])
mine = os.readlink("/proc/self/ns/pid")
while True:
    try:
        kids = open("/proc/%d/task/%d/children" % (sup, sup)).read().split()
    except OSError:
        sys.exit("supervisor gone")
    for k in kids:
        try:
            if os.readlink("/proc/%s/ns/pid" % k) != mine:
                os.kill(sup, signal.SIGTERM)
                sys.exit()
        except OSError:
            pass
EOF
bad=
for i in 1 2 3 4 5; do
	"${SRUN[@]}" -- sleep "$SLEEP" >"$LAB_DIR/catch.out" 2>&1 &
	p=$!
	"$PY" "$LAB_DIR/termcatch.py" "$p"
	t0=$(date +%s%N)
	wait "$p"
	c=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$c" -eq 143 ] && [ "$ms" -lt 3000 ] || bad+="try $i: exit $c after $ms ms; "
done
expect_eq "SIGTERM as CMD's init starts: passed on, CMD ends at once (143)" "" "$bad"
expect_eq "... nothing left" "" "$(run_leftovers)"

# ---------------------------------------------------------------- runs started at once
# Each run's start looks for killed runs in STATE/runs: another's directory,
# just made (no record yet, its lock not yet taken) is not a killed run.
# First that moment held still: a run's directory with its lock and no record.
mkdir -p "$STATE/runs/0123456789ab"
: >"$STATE/runs/0123456789ab/lock"
out=$(srun -- true 2>&1)
expect_eq "a run's directory without its record yet (a run starting) does not stop another run" 0 "$?"
rm -rf "$STATE/runs/0123456789ab"
bad=
for round in 1 2 3; do
	pids=()
	for i in $(seq 12); do
		"${SRUN[@]}" -- true >"$LAB_DIR/many.$round.$i.out" 2>&1 &
		pids+=($!)
	done
	for i in $(seq 12); do
		wait "${pids[$((i - 1))]}"
		c=$?
		[ "$c" -eq 0 ] || bad+="round $round run $i: exit $c: $(grep -v '^run: started' "$LAB_DIR/many.$round.$i.out" | head -1); "
	done
done
expect_eq "twelve runs of one project started at once, three times: all run" "" "$bad"
expect_eq "... and leave nothing" "" "$(run_leftovers)"

# A run whose teardown cannot finish (here its --podman cannot run, so its
# network cannot be removed) keeps its record for another try; that must not
# stop every later run of the state dir.
out=$(srun --podman /bin/false --image sluice-no-such-image -- true 2>&1)
expect_eq "a run with a --podman that fails: 125" 125 "$?"
out=$(srun -- true 2>&1)
expect_eq "... the next run still runs (its try at the leftover fails, and says so)" 0 "$?"
expect_re "... saying so" "could not clean up sluice-" "$out"
rm -rf "$STATE"/runs/*

# ---------------------------------------------------------------- two projects: what they share
# Project B: its own state, proxy (127.0.0.1:3129, granting other.test only),
# sluice-dns (127.0.0.1:5353) and band (41500), started by its run.
lab_second_project
SRUN_B=(nsenter --net="/run/netns/$HNS" env SLUICE_PORT_BASE=41500 "$SLUICE_BUILD/sluice" -c "$CONF_B" run)
RELAY=/tmp/$SHARED_MARK.sock
cat >"$LAB_DIR/relay_get.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print(sys.argv[2], e.errno)
    sys.exit()
s.sendall(b"GET http://good.test/relay HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n")
print(sys.argv[2], s.recv(100).split(b" ")[1].decode())
EOF
# A lends its forwarder on a socket in /tmp (and uses it itself: the control);
# B, whose proxy grants only other.test, asks through it
"${SRUN[@]}" -- sh -c "socat UNIX-LISTEN:$RELAY,fork,mode=777 TCP:127.0.0.1:$((RUN_BASE + 90)) &
	while [ ! -S $RELAY ]; do sleep 0.05; done; $PY relay_get.py $RELAY own; echo started; $(until_go relay); kill \$!" \
	>"$LAB_DIR/relay-a.out" 2>&1 &
apid=$!
LAB_PIDS+=("$apid")
wait_until 20 grep -q '^started' "$LAB_DIR/relay-a.out" || not_ok "run A starts" "$(cat "$LAB_DIR/relay-a.out")"
expect_eq "project A's CMD reaches good.test through the socket it made in /tmp (the control)" "own 200" \
	"$(grep '^own' "$LAB_DIR/relay-a.out")"
out=$("${SRUN_B[@]}" -- sh -c "echo \"direct \$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://good.test/direct)\";
	$PY relay_get.py $RELAY relay" 2>&1)
go relay
wait "$apid"
expect_eq "project B's run is refused good.test (its proxy does not grant it: the control)" "direct 403" \
	"$(grep '^direct' <<<"$out")"
expect_re "... and cannot reach it through project A's run either (A's /tmp is A's own)" \
	'^relay (2|13|111)$' "$(grep '^relay' <<<"$out")"

# what one project's run leaves where the sandbox user may write, and another's reads
SB_HOME=$(getent passwd sluice-sandbox | cut -d: -f6)
LEFT="/tmp/$SHARED_MARK.left /var/tmp/$SHARED_MARK.left /dev/shm/$SHARED_MARK.left /run/lock/$SHARED_MARK.left \$HOME/.$SHARED_MARK.left"
seen="for f in $LEFT; do [ -e \$f ] && echo \"seen \$f\"; done; echo \"queues \$(ipcs -q | grep -c '^0x')\""
out=$(srun -- sh -c "for f in $LEFT; do echo left >\$f; done; ipcmk -Q >/dev/null; $seen" 2>&1)
expect_eq "a run of project A sees what it left in /tmp, /var/tmp, /dev/shm, /run/lock, its home and a SysV queue (the control)" \
	"6" "$(grep -cE '^(seen|queues 1$)' <<<"$out")"
out=$("${SRUN_B[@]}" -- sh -c "$seen" 2>&1)
expect_eq "... a run of project B sees none of it" "queues 0" \
	"$(grep -E '^(seen|queues)' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
out=$(srun -- sh -c "$seen" 2>&1)
expect_eq "... and A's next run sees only what A left in its home (the project's own)" \
	"seen $SB_HOME/.$SHARED_MARK.left queues 0" "$(grep -E '^(seen|queues)' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"

# the working directory: under /tmp, bound into the run's own /tmp; /tmp
# itself, not the machine's again
touch "/tmp/$SHARED_MARK.host"
expect_eq "a file in the machine's /tmp (the control)" yes "$([ -e "/tmp/$SHARED_MARK.host" ] && echo yes)"
expect_eq "a run started in $LAB_DIR (under /tmp) starts there, its files there" "$LAB_DIR yes" \
	"$(srun -- sh -c 'echo "$(pwd) $([ -e relay_get.py ] && echo yes)"' 2>&1 | grep '^/')"
expect_eq "a run started in /tmp starts in the run's own /tmp, without the machine's files" "/tmp" \
	"$(cd /tmp && srun -- sh -c "pwd; [ -e $SHARED_MARK.host ] && echo seen" 2>&1 | grep -E '^(/|seen)' | tr '\n' ' ' | sed 's/ $//')"
rm -f "/tmp/$SHARED_MARK.host"

# every directory the sandbox user may write on a filesystem the machine's
# own processes use too (/'s, /dev's, the machine's /dev/shm...), but its home
SHARED_DEVS=" $(stat -c %d / /dev /dev/shm /run /tmp /var /var/tmp 2>/dev/null | sort -u | tr '\n' ' ')"
WRITABLE="find / -maxdepth 4 \( -path /proc -o -path /sys \) -prune -o -type d -writable -print 2>/dev/null |
	while read -r d; do case '$SHARED_DEVS' in *\" \$(stat -c %d \"\$d\") \"*) [ \"\$d\" = \"\$HOME\" ] || echo \"\$d\";; esac; done"
out=$(runuser -u sluice-sandbox -- env HOME="$SB_HOME" sh -c "$WRITABLE" | tr '\n' ' ')
expect_re "outside sluice run, the sandbox user may write shared directories (/tmp: the control)" "(^| )/tmp " "$out"
out=$(srun -- sh -c "$WRITABLE" 2>&1 | grep -v '^run:' | tr '\n' ' ')
expect_eq "... inside it, none but its home" "" "$out"

# the key calls: keyrings are no namespace's (the sandbox user's own is every project's)
KEYADD="import ctypes, os; libc = ctypes.CDLL(None, use_errno=True)
nr = {'x86_64': 248, 'aarch64': 217}[os.uname().machine]
r = libc.syscall(nr, b'user', b'sluice-hostile', b'v', 1, -2)
print('add_key', 'ok' if r > 0 else ctypes.get_errno())"
expect_eq "outside sluice run, the sandbox user may add a key to its process keyring (the control)" "add_key ok" \
	"$(runuser -u sluice-sandbox -- "$PY" -c "$KEYADD")"
expect_eq "... inside it, add_key is refused (EPERM)" "add_key 1" \
	"$(srun -- "$PY" -c "$KEYADD" 2>&1 | grep '^add_key')"

expect_eq "project B's runs left nothing either" "" "$(ls "$STATE_B/runs" 2>/dev/null)"

# ---------------------------------------------------------------- --image
lab_image
IMG_OPTS=(--podman "podman --runtime runc" --image "$LAB_IMAGE" --ulimit nofile=1024:1024
	--ulimit nproc=1024:1024 -v /usr:/usr:ro)
TOKEN=tok-secret-$$
SLUICE_HOSTILE_TOKEN=$TOKEN "${SRUN[@]}" --env SLUICE_HOSTILE_TOKEN "${IMG_OPTS[@]}" -- \
	sh -c 'trap "exit 0" TERM; echo "started $SLUICE_HOSTILE_TOKEN"; sleep 30 & wait' >"$LAB_DIR/img.out" 2>&1 &
p=$!
LAB_PIDS+=("$p")
wait_until 30 grep -q '^started' "$LAB_DIR/img.out" || not_ok "the container run starts" "$(cat "$LAB_DIR/img.out")"
name=$(run_name)
CTRS+=("$name")
expect_eq "--env NAME gives the container NAME's value (the control)" "started $TOKEN" "$(grep '^started' "$LAB_DIR/img.out")"
seen=$(setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c \
	'for f in /proc/[0-9]*/cmdline; do tr "\0" " " <$f 2>/dev/null; echo; done' | grep -c "tok-secre[t]-$$")
expect_eq "... and it is on no command line another user of the machine can read" 0 "$seen"
kill -TERM "$p"
wait "$p"
expect_eq "... nothing left" "" "$(run_leftovers)$(podman ps -a --format '{{.Names}}' | grep "^$name")"

"${SRUN[@]}" "${IMG_OPTS[@]}" -- sh -c 'trap "" TERM; echo started; while :; do sleep 1; done' \
	>"$LAB_DIR/img2.out" 2>&1 &
p=$!
LAB_PIDS+=("$p")
wait_until 30 grep -q '^started' "$LAB_DIR/img2.out" || not_ok "the container run starts" "$(cat "$LAB_DIR/img2.out")"
name=$(run_name)
CTRS+=("$name")
kill -KILL "$p"
wait "$p" 2>/dev/null
ctr_gone() { ! podman ps --format '{{.Names}}' | grep -q "^$1\$"; }
wait_until 10 ctr_gone "$name" &&
	ok "a container that ignores SIGTERM does not outlive its SIGKILLed run" ||
	not_ok "a container that ignores SIGTERM does not outlive its SIGKILLed run" \
		"$(podman ps --format '{{.Names}} {{.Status}}' | grep "^$name")"
out=$(srun -- true 2>&1)
expect_eq "... the next run cleans all of it" "" \
	"$(run_leftovers)$(podman ps -a --format '{{.Names}}' | grep "^$name"; podman network ls --format '{{.Name}}' | grep "^$name")"

lab_done
