#!/bin/bash
# A daemon told to reload while it starts reloads, it does not die.
# `sluice run --agent` sends SIGHUP to the project's proxy and sluice-dns
# (the hand-over), and a run may have started them a moment before; a test
# sends one as soon as the proxy listens. sluice-proxy and sluice-dns block
# SIGHUP, SIGINT and SIGTERM from their first step, so one that comes before
# their loop reads signals waits for it. Each daemon is sent SIGHUP the
# moment its run file (STATE/proxy.run, dns.run) names it, as `sluice run`
# finds a daemon to tell, 10 times.
source "$(dirname "$0")/lab.sh"
lab_up
lab_write_conf "allow good.test" "dns-listen 127.0.0.1:53" "dns-upstream 192.0.2.2:5353"

# early_hup PROG NAME RUNFILE PORT: start PROG -c $CONF, SIGHUP it once it accepts
# on PORT or RUNFILE names it, and
# print "alive" when it then runs and reloads for it, "dead" when it died first
early_hup() {
	local err=$LAB_DIR/$2.err pid
	: >"$err"
	ip netns exec "$HNS" "$1" -c "$CONF" 2>"$err" &
	pid=$!
	# the moment it accepts on its port (as a test's lab_run_proxy returns), before
	# its run file names it (as `sluice run` finds a daemon to tell)
	for _ in $(seq 5000); do
		ip netns exec "$HNS" bash -c "</dev/tcp/127.0.0.1/$4" 2>/dev/null && break
		grep -qx "pid $pid" "$STATE/$3" 2>/dev/null && break
	done
	kill -HUP "$pid" 2>/dev/null
	if wait_until 10 grep -q "$2: running" "$err" && wait_until 5 grep -q "reloaded (SIGHUP)" "$err" &&
		kill -0 "$pid" 2>/dev/null; then
		echo alive
	else
		echo dead
	fi
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

for pr in sluice-proxy:proxy.run:3128 sluice-dns:dns.run:53; do
	prog=${pr%%:*} port=${pr##*:} rf=${pr#*:} rf=${rf%%:*}
	n=0
	for i in $(seq 10); do
		[ "$(early_hup "$SLUICE_BUILD/$prog" "$prog" "$rf" "$port")" = alive ] && n=$((n + 1))
	done
	expect_eq "$prog sent SIGHUP as it starts: it runs and reloads, 10 of 10" 10 "$n"
done
lab_done
