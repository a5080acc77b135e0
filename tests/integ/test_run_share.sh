#!/bin/bash
# test_run_share.sh: many `sluice run`s of one project sharing the daemons a
# run starts (sluice-proxy, sluice-dns: detached, handed over in
# STATE/runs/.shared with the --allow grants, stopped by the last run out).
# Set up like test_run_hostile.sh. What is tried, each with its control:
#   - runs of one project coming and going at random, and ending at the
#     same moment: each served, all run, nothing left after;
#   - a run starting exactly as the last one ends: it is served (no proxy
#     found and then stopped under it), and nothing is left after;
#   - the last run SIGKILLed, then `sluice doctor --clean`; a run SIGKILLed
#     in the middle of its teardown: the next taker stops what it left;
#   - a handed-over daemon that crashes: the next run starts another and
#     the last run out stops that one;
#   - an --allow grant held by several runs: kept while any lives;
#   - the operator's own proxy and sluice-dns (not started by a run) are
#     never stopped by a run, even with stale entries in .shared naming
#     processes gone;
#   - what the detached daemons hold: only stdio of the run's (stdin
#     /dev/null, stdout and stderr STATE/runs/.daemons.log), a session of
#     their own outside the terminal's process group;
# and what that review found, fixed since (K1-K5 below):
#   K1 runs started at once with no daemon running: one starts them, the
#      others wait for it (STATE/runs/.daemons.lock) and all are served;
#   K2 a SIGKILLed run's daemons are stopped by the last run out;
#   K3 SIGKILL between a daemon's fork and the record naming it: the child
#      waits for the record before it execs, and goes when the run is gone;
#   K4 a run whose teardown keeps failing is handed over once, not at each
#      retry, and never stops the daemons a live run uses;
#   K5 a .shared with a line it does not know, or past 16 KiB, is moved
#      aside and read line by line: the daemons it names are still stopped.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
source "$INTEG_DIR/run_lab.sh"
lab_up
lab_unbound 'local-data: "good.test. 300 IN A 203.0.113.10"' \
	'local-data: "other.test. 300 IN A 203.0.113.11"'

lab_run_project 42100
# the pids of the daemons this lab's state dir runs (by their run files)
proxy_pid() { sed -n 's/^pid //p' "$STATE/proxy.run" 2>/dev/null; }
dns_pid() { sed -n 's/^pid //p' "$STATE/dns.run" 2>/dev/null; }
# sluice-proxy / sluice-dns processes on this lab's config, running or not named by a run file
daemon_procs() { pgrep -f -- "sluice-(proxy|dns) -c $CONF\$" | sort -n | tr '\n' ' ' | sed 's/ $//'; }
no_daemon_procs() { [ -z "$(daemon_procs)" ]; }
# CMD: curl good.test, print "NAME CODE"
curl_cmd() { echo "echo \"$1 \$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://${2:-good.test}/$1)\""; }
trap 'lab_teardown' EXIT
# wait_pid PID SECONDS: wait for one of our background runs, bounded; its status (or 124)
wait_pid() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null && { kill -KILL "$1"; wait "$1" 2>/dev/null; return 124; }
	wait "$1"
}

expect_eq "nothing of sluice's runs on the machine before" "" "$(run_leftovers)$(daemon_procs)"

# more helpers
# check_runs NAME:PID...: waits for each (bounded); BAD is "" when each exited 0 and its
# LAB_DIR/NAME.out has "NAME 200", else what went wrong (not in $(...): wait needs our children)
check_runs() {
	local np n p c bad=
	for np in "$@"; do
		n=${np%%:*} p=${np#*:}
		wait_pid "$p" 40
		c=$?
		[ "$c" -eq 0 ] && grep -q "^$n 200" "$LAB_DIR/$n.out" ||
			bad+="$n: exit $c: $(grep -v '^run: started' "$LAB_DIR/$n.out" | head -3 | tr '\n' ' '); "
	done
	BAD=$bad
}
# bg_run NAME ARGS...: a run in the background, its output in LAB_DIR/NAME.out; its pid in BG
bg_run() {
	local n=$1
	shift
	"${SRUN[@]}" "$@" >"$LAB_DIR/$n.out" 2>&1 &
	BG=$!
	LAB_PIDS+=("$BG")
}
started() { wait_until 20 grep -q '^started' "$LAB_DIR/$1.out" || not_ok "run $1 starts" "$(cat "$LAB_DIR/$1.out")"; }
# hand_over A B CMD: run A (the first, so the daemons are its), then B running
# CMD (which says "started"); A ends, handing the daemons over to B. B's pid in BG.
hand_over() {
	local a
	bg_run "$1" -- sh -c "echo started; $(until_go "$1")"
	a=$BG
	started "$1"
	bg_run "$2" -- sh -c "$3"
	local b=$BG
	started "$2"
	go "$1"
	wait_pid "$a" 20
	BG=$b
}
# stat_of PID: "PGRP SESSION TTY_NR"
stat_of() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $3, $4, $5}'; }
# the supervisor of the one live run whose output file names NAME's netns... simpler: by the records
sup_of_record() { sed -n 's/^supervisor //p' "$1" 2>/dev/null; }
dead() { ! kill -0 "$1" 2>/dev/null; }
all_gone() { no_daemons && no_daemon_procs && [ -z "$(run_leftovers)" ]; }
# end: what is left of runs and run-started daemons once they all ended
end_state() { wait_until 8 all_gone; echo "[$(daemons_up)] [$(daemon_procs)] [$(run_leftovers)]"; }
CLEAN="[ ] [] []"

# ---------------------------------------------------------------- runs coming and going
# R0 starts the daemons; eight runs join at random moments, each waits a
# random while and asks good.test; R0 ends after the last one joined.
bg_run r0 -- sh -c "echo started; $(until_go r0)"
r0=$BG
started r0
expect_re "R0 started the project's daemons (the control)" "started sluice-proxy for this run" \
	"$(cat "$LAB_DIR/r0.out")"
P0=$(proxy_pid)
runs=()
for i in $(seq 8); do
	bg_run rr$i -- sh -c "sleep 0.$((RANDOM % 9 + 1))$((RANDOM % 10)); $(curl_cmd rr$i)"
	runs+=("rr$i:$BG")
	sleep 0.$((RANDOM % 4))
done
go r0
check_runs "${runs[@]}"
expect_eq "eight runs joining at random while R0 runs, R0 ending meanwhile: all served" "" "$BAD"
wait_pid "$r0" 20
expect_eq "... R0 ended cleanly" 0 "$?"
expect_eq "... none of them started a daemon of its own (R0's were used throughout)" "" \
	"$(grep -l 'started sluice' "$LAB_DIR"/rr*.out)"
expect_eq "... and once all ended, no daemon, grant, namespace, record or forwarder is left" "$CLEAN" \
	"$(end_state)"
expect_eq "... nor STATE/runs/.shared" "no" "$([ -e "$STATE/runs/.shared" ] && echo yes || echo no)"

# ---------------------------------------------------------------- runs ending at the same moment
bad=
for round in 1 2 3; do
	runs=()
	bg_run s$round.0 -- sh -c "echo started; $(until_go s$round); $(curl_cmd s$round.0)"
	runs+=("s$round.0:$BG")
	started s$round.0
	for i in 1 2 3 4 5; do
		bg_run s$round.$i -- sh -c "echo started; $(until_go s$round); $(curl_cmd s$round.$i)"
		runs+=("s$round.$i:$BG")
	done
	for i in 1 2 3 4 5; do started s$round.$i; done
	go s$round
	check_runs "${runs[@]}"
	r=$BAD
	e=$(end_state)
	[ -z "$r" ] && [ "$e" == "$CLEAN" ] || bad+="round $round: $r $e; "
done
expect_eq "six runs ending at the same moment, three times: all served, and the last one out stops the daemons" \
	"" "$bad"

# ---------------------------------------------------------------- a run starting as the last one ends
# A (the daemons' starter, alone) ends; B starts just after A's CMD ended, at
# a spread of moments in A's teardown. B must be served: the proxy it finds
# is not stopped under it (A either hands over to B or stops before B looks).
# The second sweep stretches A's teardown (each kill() A makes returns after
# 0.4 s: strace), so B lands in it for sure.
race_one() { # TAG DELAY [STRACE...]: prints "" or what went wrong
	local t=$1 d=$2 a b c
	shift 2
	"$@" "${SRUN[@]}" -- sh -c "echo started; $(until_go $t)" >"$LAB_DIR/$t.a.out" 2>&1 &
	a=$!
	LAB_PIDS+=("$a")
	wait_until 20 grep -q '^started' "$LAB_DIR/$t.a.out" || { echo "$t: A did not start: $(cat "$LAB_DIR/$t.a.out")"; return; }
	go $t
	sleep "$d"
	"${SRUN[@]}" -- sh -c "$(curl_cmd $t.b)" >"$LAB_DIR/$t.b.out" 2>&1
	c=$?
	wait_pid "$a" 20
	[ "$c" -eq 0 ] && grep -q "^$t.b 200" "$LAB_DIR/$t.b.out" ||
		echo "$t after ${d}s: exit $c: $(grep -v '^run: started' "$LAB_DIR/$t.b.out" | head -3 | tr '\n' ' ')"
	b=$(end_state)
	[ "$b" == "$CLEAN" ] || echo "$t after ${d}s: left $b"
}
bad=
for d in 0 0.01 0.02 0.04 0.06 0.09 0.13 0.2; do bad+=$(race_one le$d "$d"); done
expect_eq "a run started as the last one ends (0 to 0.2 s after its CMD): served, nothing left after" "" "$bad"
STRACE_KILL=(strace -qq -o /dev/null -e trace=kill -e inject=kill:delay_exit=400000)
bad=
for d in 0.1 0.3 0.5 0.7 0.9 1.1; do bad+=$(race_one ls$d "$d" "${STRACE_KILL[@]}"); done
expect_eq "... and with the last one's teardown stretched (strace), B started at each step of it" "" "$bad"
bstarts=$(grep -l 'started sluice-proxy' "$LAB_DIR"/ls*.b.out | wc -l)
expect_re "... both ways: B joined before A's end and was handed the daemons, or after and started its own" \
	'^[1-5]$' "$bstarts"

# ---------------------------------------------------------------- the last run SIGKILLed, then doctor --clean
hand_over da db "echo started; exec sleep $SLEEP"
db=$BG
kill -KILL "$db"
wait "$db" 2>/dev/null
wait_until 5 nothing_runs
expect_eq "A ended, B (the last) SIGKILLed: the daemons handed over stay up (the control)" "proxy dns" "$(daemons_up)"
out=$(sl doctor --clean 2>&1)
expect_re "sluice doctor --clean takes B down" "took down 1 dead run" "$out"
expect_eq "... and, the last out, stops the daemons: nothing left" "$CLEAN" "$(end_state)"

# ---------------------------------------------------------------- SIGKILL in the middle of a teardown
# The run's teardown stretched by strace (each kill() returns after 0.5 s):
# SIGKILL at a spread of moments in it. Alone: `doctor --clean` stops what
# is left. With another run B live: B is still served after, and after B
# and `doctor --clean`, nothing is left.
kill_mid() { # TAG DELAY WITH_B: prints "" or what went wrong
	local t=$1 d=$2 withb=$3 s sup b= r
	"${STRACE_KILL[@]/400000/500000}" "${SRUN[@]}" -- sh -c "echo started; $(until_go $t)" \
		>"$LAB_DIR/$t.out" 2>&1 &
	s=$!
	LAB_PIDS+=("$s")
	wait_until 20 grep -q '^started' "$LAB_DIR/$t.out" || { echo "$t: did not start"; return; }
	if [ "$withb" = 1 ]; then
		bg_run $t.b -- sh -c "echo started; $(until_go $t.b); $(curl_cmd $t.b)"
		b=$BG
		started $t.b
	fi
	sup=$(pgrep -P "$s")
	go $t
	sleep "$d"
	kill -KILL "$sup" 2>/dev/null || echo "$t after ${d}s: the run had ended before the SIGKILL; "
	wait_pid "$s" 10
	if [ -n "$b" ]; then
		go $t.b
		check_runs "$t.b:$b"
		[ -z "$BAD" ] || echo "$t after ${d}s: B: $BAD"
	fi
	sl doctor --clean >"$LAB_DIR/$t.doctor" 2>&1
	r=$(end_state)
	[ "$r" == "$CLEAN" ] || echo "$t after ${d}s: left $r: $(grep run "$LAB_DIR/$t.doctor" | tr '\n' ' ')"
}
bad=
for d in 0.2 0.6 0.9 1.2; do bad+=$(kill_mid km$d "$d" 0); done
expect_eq "the last run SIGKILLed at each step of its teardown: doctor --clean leaves nothing" "" "$bad"
bad=
for d in 0.1 0.3; do bad+=$(kill_mid kb$d "$d" 1); done
expect_eq "... and a run SIGKILLed in its teardown with another live: that one is still served, nothing left after" \
	"" "$bad"

# ---------------------------------------------------------------- a handed-over daemon crashes
hand_over ca cb "echo started; $(until_go cb1); $(curl_cmd cb1); $(until_go cb2); $(curl_cmd cb2)"
cb=$BG
P1=$(proxy_pid)
kill -KILL "$P1"
go cb1
wait_until 10 grep -q '^cb1' "$LAB_DIR/cb.out"
expect_re "the proxy A started and handed over to B, SIGKILLed: B is not served (the control)" '^cb1 (000|50[0-9])$' \
	"$(grep '^cb1' "$LAB_DIR/cb.out")"
srun -- sh -c "$(curl_cmd cc)" >"$LAB_DIR/cc.out" 2>&1
expect_eq "... the next run starts a proxy of its own and is served" "yes cc 200" \
	"$(grep -q 'started sluice-proxy' "$LAB_DIR/cc.out" && echo yes) $(grep '^cc' "$LAB_DIR/cc.out")"
go cb2
wait_pid "$cb" 20
expect_eq "... and so is B again (the new proxy, on the same listener)" "cb2 200" "$(grep '^cb2' "$LAB_DIR/cb.out")"
expect_eq "... B, the last out, stops the new proxy and sluice-dns: nothing left" "$CLEAN" "$(end_state)"

# ---------------------------------------------------------------- an --allow grant shared by several runs
runs=()
for t in ga gb gc; do
	bg_run $t --allow other.test -- sh -c "echo started; $(until_go $t); $(curl_cmd $t other.test)"
	runs+=("$t:$BG")
	started $t
done
go ga
wait_until 20 grep -q '^ga' "$LAB_DIR/ga.out"
sleep 2.5 # the proxy looks at the grants each second
go gc
wait_until 20 grep -q '^gc' "$LAB_DIR/gc.out"
sleep 2.5
go gb
check_runs "${runs[@]}"
expect_eq "three runs --allow other.test, ending in the order A, C, B: each served to its end" "" "$BAD"
expect_eq "... nothing left after, the grant included" "$CLEAN" "$(end_state)"
out=$(srun -- sh -c "$(curl_cmd gd other.test)" 2>&1)
expect_eq "... a run after without --allow is refused other.test (the grant is gone)" "gd 403" "$(grep '^gd' <<<"$out")"
expect_eq "... nothing left" "$CLEAN" "$(end_state)"

# the run that added the grant SIGKILLed; another run holding it goes on, a third takes the first down
bg_run gk --allow other.test -- sh -c "echo started; exec sleep $SLEEP"
gk=$BG
started gk
bg_run gl --allow other.test -- sh -c "echo started; $(until_go gl1); $(curl_cmd gl1 other.test); $(until_go gl2); $(curl_cmd gl2 other.test)"
gl=$BG
started gl
kill -KILL "$gk"
wait "$gk" 2>/dev/null
sleep 2.5
go gl1
wait_until 20 grep -q '^gl1' "$LAB_DIR/gl.out"
srun -- true >"$LAB_DIR/gm.out" 2>&1
expect_re "the run that added the grant SIGKILLed: the next run takes it down" "cleaned up sluice-" "$(cat "$LAB_DIR/gm.out")"
sleep 2.5
go gl2
wait_pid "$gl" 20
expect_eq "... the other run holding the grant is served before and after" "gl1 200 gl2 200" \
	"$(grep '^gl' "$LAB_DIR/gl.out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... and once it ends, nothing is left" "$CLEAN" "$(end_state)"

# ---------------------------------------------------------------- what the detached daemons hold
# A on a terminal of its own (it starts the daemons); B beside it, not on it
"$PY" "$INTEG_DIR/onpty.py" --ctrl-c-on "$GO.ctrlc" "${SRUN[@]}" -- sh -c "echo started; exec sleep $SLEEP" >"$LAB_DIR/ty.out" 2>&1 &
ty=$!
LAB_PIDS+=("$ty")
started ty
bg_run tb -- sh -c "echo started; $(until_go tb); $(curl_cmd tb)"
tb=$BG
started tb
tysup=$(pgrep -P "$ty")
P=$(proxy_pid) D=$(dns_pid)
fwd=$(for f in $(forwarders_of "$STATE"); do [ "$(awk '{print $4}' /proc/$f/stat)" = "$tysup" ] && echo $f; done | head -1)
read -r sp ss st <<<"$(stat_of "$tysup")"
expect_eq "A's supervisor leads the terminal's session and has it (the control)" "$tysup yes" \
	"$ss $([ "$st" != 0 ] && echo yes)"
expect_eq "... its forwarder (not detached) is in that session (the control)" "$ss" "$(stat_of "$fwd" | cut -d' ' -f2)"
expect_eq "the proxy A started: a session and process group of its own, no terminal" "$P $P 0" "$(stat_of "$P")"
expect_eq "... sluice-dns too" "$D $D 0" "$(stat_of "$D")"
fds_of() { for f in /proc/$1/fd/*; do echo "${f##*/} $(readlink "$f")"; done | sort -n; }
expect_re "A's supervisor holds STATE/runs/.users.lock and its record's lock (the control)" \
	"runs/\.users\.lock.*runs/[0-9a-f]+/lock|runs/[0-9a-f]+/lock.*runs/\.users\.lock" "$(fds_of "$tysup" | tr '\n' ' ')"
for d in P D; do
	pid=${!d}
	expect_eq "... the $d daemon's stdio: /dev/null, STATE/runs/.daemons.log twice" \
		"0 /dev/null 1 $STATE/runs/.daemons.log 2 $STATE/runs/.daemons.log" \
		"$(fds_of "$pid" | head -3 | tr '\n' ' ' | sed 's/ $//')"
	expect_eq "... nothing else of the run's: no lock, record, run directory, terminal or pipe" "" \
		"$(fds_of "$pid" | tail -n +4 | grep -E "$STATE/runs|/dev/pts|/dev/tty|pipe:" | tr '\n' ' ')"
done
expect_eq "STATE/runs/.daemons.log is root's alone (0600)" "600" "$(stat -c %a "$STATE/runs/.daemons.log")"
expect_re "... and has the daemons' stderr" "sluice-proxy: running.*" "$(grep "run $(sed -n 1p "$STATE/proxy.run")" "$STATE/runs/.daemons.log")"
# ^C on A's terminal: A ends (130); the daemons, in their own session, stay for B
touch "$GO.ctrlc"
wait_pid "$ty" 20
expect_eq "^C on A's terminal ends A (the control: the signal reached its group)" "exit 130" \
	"$(grep -o 'exit [0-9]*$' "$LAB_DIR/ty.out")"
expect_eq "... the daemons A started are not hit: the same proxy and sluice-dns run" "$P $D" "$(proxy_pid) $(dns_pid)"
go tb
check_runs "tb:$tb"
expect_eq "... and B is served" "" "$BAD"
expect_eq "... B, the last out, stops them: nothing left" "$CLEAN" "$(end_state)"
expect_re "... and their stopping is in the log" "sluice-proxy: stopping on signal 15" "$(tail -5 "$STATE/runs/.daemons.log")"

# ---------------------------------------------------------------- the operator's own daemons
# A run-started proxy and sluice-dns handed over, then SIGKILLed: .shared
# names processes gone. The operator starts the project's own (make run);
# the last run out must not stop them.
hand_over oa ob "echo started; $(until_go ob); $(curl_cmd ob)"
ob=$BG
expect_re "A's daemons handed over in STATE/runs/.shared (the control)" "proc $(proxy_pid) [0-9]+ proxy" \
	"$(cat "$STATE/runs/.shared" 2>&1)"
kill -KILL "$(proxy_pid)" "$(dns_pid)"
wait_until 5 no_daemons
lab_run_proxy
lab_run_dns "$CONF"
go ob
check_runs "ob:$ob"
expect_eq "B, served by the operator's proxy" "" "$BAD"
expect_eq "... and, the last out, stops neither the operator's proxy nor its sluice-dns" "alive alive" \
	"$(kill -0 "$PROXY_PID" 2>/dev/null && echo alive || echo dead) $(kill -0 "$DNS_PID" 2>/dev/null && echo alive || echo dead)"
# .shared naming the operator's proxy by its pid with another start time (a pid reused)
start_of() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $20}'; }
printf 'sluice-run v1\nbase 0\npodman -\nnetns 0\nwalls 0\nproc %s %s proxy\n' "$PROXY_PID" \
	$(($(start_of "$PROXY_PID") + 1)) >"$STATE/runs/.shared"
srun -- true >/dev/null 2>&1
expect_eq "STATE/runs/.shared naming the operator's proxy's pid with another start: the last run out leaves it" \
	"alive" "$(kill -0 "$PROXY_PID" 2>/dev/null && echo alive || echo dead)"
# .shared naming it in another spelling than the record's (a sign, a blank: sscanf's "%d %llu"
# took them): not a record, moved aside, and its proc line stops nothing
for spelling in "+%s %s" "%s +%s" "%s  %s" "%s -%s"; do
	printf "sluice-run v1\nbase 0\npodman -\nnetns 0\nwalls 0\nproc $spelling proxy\n" "$PROXY_PID" \
		"$(start_of "$PROXY_PID")" >"$STATE/runs/.shared"
	srun -- true >/dev/null 2>"$LAB_DIR/spelling.err"
	expect_eq "STATE/runs/.shared's proc line as \"$spelling\": the last run out leaves the proxy" \
		"alive not a record" "$(kill -0 "$PROXY_PID" 2>/dev/null && echo alive || echo dead) $(grep -o 'not a record' "$LAB_DIR/spelling.err")"
	rm -f "$STATE/runs/.shared.bad"
done
printf 'sluice-run v1\nbase 0\npodman -\nnetns 0\nwalls 0\nproc %s %s proxy\n' "$PROXY_PID" \
	"$(start_of "$PROXY_PID")" >"$STATE/runs/.shared"
srun -- true >/dev/null 2>&1
wait_until 5 dead "$PROXY_PID"
expect_eq "... with its own start, it is stopped (the control: .shared is honoured)" "dead" \
	"$(kill -0 "$PROXY_PID" 2>/dev/null && echo alive || echo dead)"
wait "$PROXY_PID" 2>/dev/null
PROXY_PID=
lab_stop_dns
expect_eq "nothing left" "$CLEAN" "$(end_state)"

# ================================================================ what the review found, fixed
{
	# K1: runs started at once with no daemon running each start one; all
	# but the first proxy fail to bind, and their runs fail (125, "proxy.run
	# did not start") though a proxy is up.
	bad=
	for round in 1 2 3; do
		runs=()
		for i in $(seq 6); do
			bg_run k1.$round.$i -- sh -c "$(curl_cmd k1.$round.$i)"
			runs+=("k1.$round.$i:$BG")
		done
		check_runs "${runs[@]}"
		bad+=$BAD
		wait_until 8 all_gone
	done
	expect_eq "K1: six runs started at once with no daemon running, three times: all served" "" "$bad"
	expect_eq "... and leave nothing" "$CLEAN" "$(end_state)"

	# K2: a run SIGKILLed while another lives (it never handed its daemons
	# over); the other, the last out, ends normally: the daemons the killed
	# one started run on with no run left, until a later run or doctor.
	bg_run k2a -- sh -c "echo started; exec sleep $SLEEP"
	k2a=$BG
	started k2a
	bg_run k2b -- sh -c "echo started; $(until_go k2b); $(curl_cmd k2b)"
	k2b=$BG
	started k2b
	kill -KILL "$k2a"
	wait "$k2a" 2>/dev/null
	expect_eq "K2: A SIGKILLed, B live: the daemons A started are up (the control)" "proxy dns" "$(daemons_up)"
	go k2b
	check_runs "k2b:$k2b"
	wait_until 5 no_daemons
	expect_eq "K2: ... B, the last run out, ends: no daemon is left" " " "$(daemons_up)"
	sl doctor --clean >/dev/null 2>&1
	expect_eq "... (doctor --clean stops them)" "$CLEAN" "$(end_state)"

	# K3: SIGKILL between the daemon's fork and the record naming it (held
	# open by strace delaying fork's return in the supervisor): the child
	# waits for the record before it execs, and goes when the run is gone.
	strace -qq -o /dev/null -e trace=clone,clone3,fork,vfork -e inject=clone,clone3,fork,vfork:delay_exit=5000000 \
		"${SRUN[@]}" -- true >"$LAB_DIR/k3.out" 2>&1 &
	k3=$!
	LAB_PIDS+=("$k3")
	# the supervisor's child that stays unexec'd (a tool's child execs at once)
	k3_child() {
		local c
		c=$(pgrep -P "$(pgrep -P "$k3" | head -1)" | head -1)
		[ -n "$c" ] && sleep 0.3 && [ "$(cat "/proc/$c/comm" 2>/dev/null)" = sluice ] && echo "$c"
	}
	wait_until 15 k3_child
	k3c=$(k3_child)
	expect_eq "K3: the run's first child (its proxy) is forked, not yet exec'd nor recorded (the control)" \
		"sluice, proxy.run free, not recorded" \
		"$(cat "/proc/$k3c/comm" 2>/dev/null), proxy.run $(locked "$STATE/proxy.run" && echo locked || echo free), $(grep -qs "^proc $k3c " "$STATE"/runs/*/record && echo recorded || echo not recorded)"
	kill -KILL "$(pgrep -P "$k3")"
	wait_pid "$k3" 10 2>/dev/null
	wait_until 5 dead "$k3c"
	expect_eq "K3: ... the run SIGKILLed there: the child goes, the proxy never starts" "dead free" \
		"$(kill -0 "$k3c" 2>/dev/null && echo alive || echo dead) $(locked "$STATE/proxy.run" && echo locked || echo free)"
	srun -- true >/dev/null 2>&1
	sl doctor --clean >/dev/null 2>&1
	expect_eq "... (the next run and doctor --clean: nothing left)" "$CLEAN" "$(end_state)"

	# K4: a run whose teardown keeps failing (its --podman cannot remove its
	# network) while another lives is retried by each later run's start, and
	# each retry hands its daemons over again: duplicates in .shared, until
	# RUN_PROCS_MAX (8) is reached and the next retry stops the daemons the
	# live run uses.
	cat >"$LAB_DIR/podfail" <<'SH'
#!/bin/sh
case "$*" in *"network create"*) sleep 2 ;; esac
exit 1
SH
	chmod +x "$LAB_DIR/podfail"
	bg_run k4f --podman "$LAB_DIR/podfail" --image sluice-no-such-image -- true
	k4f=$BG
	wait_until 10 locked "$STATE/dns.run"
	k4p=$(proxy_pid)
	bg_run k4l -- sh -c "echo started; $(until_go k4l); $(curl_cmd k4l)"
	k4l=$BG
	started k4l
	wait_pid "$k4f" 20
	c=$?
	expect_eq "K4: F (its network unremovable) failed and handed its daemons over to L (the control)" "125 2" \
		"$c $(grep -c '^proc' "$STATE/runs/.shared" 2>/dev/null)"
	srun -- true >"$LAB_DIR/k4.1.out" 2>&1
	expect_re "K4: ... the next run retries F, and fails again (the control)" "could not clean up sluice-" \
		"$(cat "$LAB_DIR/k4.1.out")"
	expect_eq "K4: ... .shared still names each daemon once (proc lines, distinct ones)" "2 2" \
		"$(grep -c '^proc' "$STATE/runs/.shared" 2>/dev/null) $(grep '^proc' "$STATE/runs/.shared" 2>/dev/null | sort -u | wc -l)"
	for i in 2 3 4; do srun -- true >"$LAB_DIR/k4.$i.out" 2>&1; done
	expect_eq "K4: ... and the proxy L uses, F's, is never stopped under it" "$k4p" "$(proxy_pid)"
	go k4l
	check_runs "k4l:$k4l"
	rm -rf "$STATE"/runs/[0-9a-f]*
	expect_eq "... (L served; nothing left once F's record is removed by hand)" "$CLEAN" "$BAD$(end_state)"

	# K5: STATE/runs/.shared with a line it does not know, or past 16 KiB:
	# the whole file is ignored, and the daemons it names are never stopped.
	for how in junk huge; do
		hand_over k5a$how k5b$how "echo started; $(until_go k5b$how)"
		b=$BG
		if [ $how = junk ]; then
			echo "junk" >>"$STATE/runs/.shared"
		else
			for i in $(seq 2000); do echo "network sluice-000000000000"; done >>"$STATE/runs/.shared"
		fi
		go k5b$how
		wait_pid "$b" 20
		wait_until 5 no_daemons
		expect_eq "K5: STATE/runs/.shared made $how while handed over: the last run out still stops the daemons" \
			" " "$(daemons_up)"
		for p in $(daemon_procs); do kill "$p"; done # ours: started by our runs
		wait_until 5 no_daemon_procs
		expect_re "K5: ... it was moved aside, and said" "moved to $STATE/runs/.shared.bad" "$(cat "$LAB_DIR/k5b$how.out" 2>/dev/null)"
		rm -f "$STATE/runs/.shared" "$STATE/runs/.shared.bad"
	done
	expect_eq "... (nothing left)" "$CLEAN" "$(end_state)"
}

lab_done
