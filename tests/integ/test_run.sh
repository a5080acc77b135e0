#!/bin/bash
# integ: alone (a whole sluice run (namespace, walls, forwarder) must end within 2.5 s)
# test_run.sh: `sluice run` puts real programs behind sluice. In the lab's
# host namespace (the operator's machine: proxy, sluice-dns; origins and
# unbound in inet), each run makes a namespace with no route, the walls in
# it, the forwarder's listeners in it, runs `sluice verify` there and only
# then CMD as the sandbox user. Checked with curl, python requests and dig
# inside: a granted name works through the intercepting proxy with the CA
# trusted and its row names the run; names resolve only through
# sluice-dns; going around the proxy, or to another resolver, is refused at
# once; the daemons are found when running and started (then stopped) when
# not; --allow grants last only for the run; CMD's status is the run's;
# SIGTERM leaves nothing, and a SIGKILLed run's leftovers are cleaned by
# the next; a route added behind the walls' back still does not get out,
# and a broken wall stops the run with exit 3 before CMD starts.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
lab_up
lab_tls_origin
lab_unbound 'local-data: "tls.test. 300 IN A 203.0.113.13"' \
	'local-data: "good.test. 300 IN A 203.0.113.10"' \
	'local-data: "other.test. 300 IN A 203.0.113.11"'

RUN_BASE=41000
DNSLOG=$LAB_DIR/state/dns.log
lab_write_conf "intercept on" "allow good.test" "upstream-ca tls.test $LAB_DIR/tls/ca.crt" \
	"nameserver 127.0.0.1" "dns-listen 127.0.0.1:53" "dns-upstream $UNBOUND_ADDR" \
	"dns-timeout 1"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
out=$(sl key init 2>&1) || lab_bail "sluice key init" "$out"

# srun ARGS...: `sluice run` in the host namespace as an operator types it
# (nsenter, not ip netns exec: the machine's mounts, so its namespaces are
# the machine's too). Its stdout and stderr go to $RUN_OUT.
RUN_OUT=$LAB_DIR/run.out
SRUN=(nsenter --net="/run/netns/$HNS" env SLUICE_PORT_BASE=$RUN_BASE "$SLUICE_BUILD/sluice" -c "$CONF" run)
srun() { "${SRUN[@]}" "$@"; }
dnsq() { jq_ "$DNSLOG" "$@"; }
# forwarders_of NAME: the pids of the sluice-forward processes stamping for --net NAME...
forwarders_of() { pgrep -x sluice-forward -a | grep -- "--net $1" | cut -d' ' -f1; }
no_forwarder() { [ -z "$(forwarders_of "$1")" ]; }
# test_runs: the name of every run this test made: each run's verify leaves a
# row (its positive control through the forwarder) naming it in net. Other
# runs on the machine (another test's, an operator's) are not ours to judge.
test_runs() {
	cat "$NETLOG" "$LAB_DIR/state-b/network.log" 2>/dev/null | "$PY" -c '
import json, sys
names = set()
for line in sys.stdin:
    try:
        row = json.loads(line)
    except ValueError:
        continue
    if row.get("ua") == "sluice-verify" and row.get("net"):
        names.add(row["net"])
print("\n".join(sorted(names)))'
}
# run_leftovers: what is left of this test's runs: namespaces, forwarders, records
run_leftovers() {
	local n
	{
		for n in $(test_runs); do
			[ -e "/run/netns/$n" ] && echo "$n"
			forwarders_of "$n" | sed 's/^/forwarder /'
		done
		ls "$STATE/runs" "$LAB_DIR/state-b/runs" 2>/dev/null | grep -v ':$' | grep .
	} | tr '\n' ' '
}
locked() { [ -e "$1" ] && ! flock -n "$1" true; }
# run_bg WAIT_S ARGS... -- CMD: a run in the background whose CMD prints
# "started" first; sets rpid (the run's pid) and name (its sandbox's) once it has
run_bg() {
	local limit=$1
	shift
	"${SRUN[@]}" "$@" >"$RUN_OUT" 2>&1 &
	rpid=$!
	LAB_PIDS+=("$rpid")
	wait_until "$limit" grep -q started "$RUN_OUT" || not_ok "a run in the background starts" "$(cat "$RUN_OUT")"
	name=sluice-$(ls "$STATE/runs" | head -1)
}
# podman_left NAME: a container or network of that name still there
podman_left() {
	podman ps -a --format '{{.Names}}' | grep -x -- "$1"
	podman network ls --format '{{.Name}}' | grep -x -- "$1"
}

# ---------------------------------------------------------------- cold: daemons started for the run
expect_eq "no run of this test's before it starts" "" "$(test_runs)"
out=$(srun --allow tls.test:8443 -- curl -sS --max-time 10 https://tls.test:8443/ 2>&1)
code=$?
expect_eq "curl https to a --allow'ed name through the intercepting proxy, CA trusted" "0 tls ok" \
	"$code $(tail -1 <<<"$out")"
expect_re "... with no proxy running, the run started sluice-proxy" "started sluice-proxy for this run" "$out"
expect_re "... and sluice-dns" "started sluice-dns for this run" "$out"
expect_eq "... and stopped both after" "no no" \
	"$(locked "$STATE/proxy.run" && echo yes || echo no) $(locked "$STATE/dns.run" && echo yes || echo no)"
net=$(logq kind=https host=tls.test --field net)
expect_re "the https row names the run" '^sluice-[0-9a-f]{12}$' "$net"
expect_eq "... allowed by the run's session grant" "allow tls.test:8443 session" \
	"$(logq kind=https host=tls.test --field decision) $(logq kind=https host=tls.test --field grant | sed 's/ (/ /; s/)//')"
expect_re "... which the proxy resolved through sluice-dns" "allow" "$(dnsq name=tls.test type=A --field decision)"
expect_eq "the run's grant is gone after it" "" "$(sl allow list 2>/dev/null | grep tls.test)"
expect_eq "the run left nothing behind" "" "$(run_leftovers)"

# ---------------------------------------------------------------- warm: the project's daemons
lab_run_proxy
lab_run_dns "$CONF"
proxy_pid=$(sed -n 's/^pid //p' "$STATE/proxy.run")
expect_eq "the proxy's run file names its pid" "$PROXY_PID" "$proxy_pid"
expect_re "... and its listener" "^listen $PROXY_ADDR:$PROXY_PORT\$" "$(grep '^listen' "$STATE/proxy.run")"
expect_re "sluice-dns's run file names its listener" "^listen 127.0.0.1:53\$" "$(grep '^listen' "$STATE/dns.run")"

out=$(srun --env KEEP_ME --env SET_ME=2 -- sh -c 'id -un; env | cut -d= -f1 | sort | tr "\n" " "' 2>&1)
code=$?
expect_eq "a run with the project's daemons up exits 0" 0 "$code"
expect_not_re "... and starts no daemon of its own" "started sluice" "$out"
expect_eq "CMD runs as the sandbox user (made when missing)" "sluice-sandbox" "$(grep -v '^run:' <<<"$out" | head -1)"
expect_eq "... with the proxy and CA variables, who it is, and only the --env asked for" \
	"AWS_CA_BUNDLE CARGO_HTTP_CAINFO CURL_CA_BUNDLE DENO_CERT GIT_SSL_CAINFO HOME HTTPS_PROXY HTTP_PROXY LOGNAME NODE_EXTRA_CA_CERTS NO_PROXY NPM_CONFIG_CAFILE PATH PIP_CERT PWD REQUESTS_CA_BUNDLE SET_ME SSL_CERT_FILE USER http_proxy https_proxy no_proxy " \
	"$(grep -v '^run:' <<<"$out" | tail -1 | sed 's/TERM //')"
KEEP_ME=kept
export KEEP_ME
out=$(srun --user nobody --env KEEP_ME -- sh -c 'echo "$KEEP_ME $(id -un)"' 2>&1)
expect_eq "--env NAME passes ours, --user picks the user" "kept nobody" "$(tail -1 <<<"$out")"
unset KEEP_ME

srun -- sh -c 'exit 7' >/dev/null 2>&1
expect_eq "the run exits with CMD's status" 7 "$?"
srun -- sh -c 'kill -USR1 $$' >/dev/null 2>&1
expect_eq "... 128 + the signal that ended it" 138 "$?"

out=$(srun -- "$PY" -c '
import requests
r = requests.get("https://tls.test:8443/", timeout=10)
print(r.status_code, r.text.strip())' 2>&1)
expect_re "python requests without --allow: refused by the proxy (403, the refusal's page inside TLS), proxy found by HTTPS_PROXY" \
	'^403 sluice: refused GET https://tls\.test:8443/' "$out"
out=$(srun --allow tls.test:8443 -- "$PY" -c '
import requests
r = requests.get("https://tls.test:8443/", timeout=10)
print(r.status_code, r.text.strip())' 2>&1)
expect_eq "python requests with --allow: through interception, trusting the CA by REQUESTS_CA_BUNDLE" \
	"200 tls ok" "$(tail -1 <<<"$out")"

# names: only sluice-dns answers, through the forwarder's relay
out=$(srun -- "$PY" -c '
import socket
print(socket.getaddrinfo("good.test", 80, socket.AF_INET)[0][4][0])
try:
    socket.getaddrinfo("nope.test", 80, socket.AF_INET)
    print("nope resolved")
except socket.gaierror as e:
    print("nope failed")' 2>&1)
# (a granted name resolves to an address of the run's own: test_run_transparent.sh)
expect_re "getaddrinfo in the sandbox: a granted name resolves, an ungranted one fails" \
	"^240\.0\.[0-9]+\.[0-9]+ nope failed$" "$(grep -v '^run:' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... answered by sluice-dns (its row)" "allow" "$(dnsq name=good.test type=A --field decision)"
expect_eq "... which refused the other" "refuse" "$(dnsq name=nope.test type=A --field decision)"
expect_eq "unbound answers from the host namespace (the control for the next check)" "203.0.113.13" \
	"$(hx dig +short +tries=1 +time=2 @"$UNBOUND_ADDR" tls.test A)"
t0=$(date +%s%N)
out=$(srun -- dig +tries=1 +time=3 @"$UNBOUND_ADDR" tls.test A 2>&1)
ms=$((($(date +%s%N) - t0) / 1000000))
expect_re "DNS straight to another resolver from the sandbox: refused" "connection refused|network unreachable|no servers could be reached|communications error" "$out"
expect_lt "... at once (the whole run, ms)" 2500 "$ms"

# going around the proxy
expect_eq "the origin answers from the host namespace (the control)" "tls ok" \
	"$(hx curl -sS --max-time 5 --cacert "$LAB_DIR/tls/ca.crt" --resolve tls.test:8443:203.0.113.13 https://tls.test:8443/)"
t0=$(date +%s%N)
out=$(srun --allow tls.test:8443 -- curl -sS --max-time 5 --noproxy '*' -k https://203.0.113.13:8443/ 2>&1)
code=$?
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "curl --noproxy '*' to the origin's address from the sandbox fails (curl 7)" 7 "$code"
expect_lt "... at once (the whole run, ms)" 2500 "$ms"

# ---------------------------------------------------------------- grants
sl allow add other.test >/dev/null
srun --allow other.test -- true >/dev/null 2>&1
expect_re "an operator's permanent grant is not taken away by a run that --allow'ed it too" \
	"other.test +permanent" "$(sl allow list | grep other.test)"
sl allow rm other.test >/dev/null

# ---------------------------------------------------------------- the walls hold without the missing route
# The hook gives the sandbox a route out (a veth to the host namespace,
# which holds 198.18.0.1, verify's target, with origin.py on :80): the
# walls alone now stand between CMD and the world.
HOOK_ROUTE="ip link add svr$$ netns \$SLUICE_RUN_NETNS type veth peer name svh$$ netns /run/netns/$HNS &&
	ip netns exec $HNS ip addr add 198.18.0.1/30 dev svh$$ && ip netns exec $HNS ip link set svh$$ up &&
	nsenter --net=\$SLUICE_RUN_NETNS ip addr add 198.18.0.2/30 dev svr$$ &&
	nsenter --net=\$SLUICE_RUN_NETNS ip link set svr$$ up &&
	nsenter --net=\$SLUICE_RUN_NETNS ip route add default via 198.18.0.1"
out=$(SLUICE_RUN_TEST_HOOK="$HOOK_ROUTE" srun -- sh -c 'ip route | grep -c default; curl -s -m 3 --noproxy "*" http://198.18.0.1/; echo "curl $?"' 2>&1)
expect_eq "with a route out the sandbox verifies (the walls refuse) and CMD runs" "1 curl 7" \
	"$(grep -v '^run:' <<<"$out" | grep -E '^(1|curl)' | tr '\n' ' ' | sed 's/ $//')"
SLUICE_RUN_TEST_HOOK="$HOOK_ROUTE && nsenter --net=\$SLUICE_RUN_NETNS nft delete table inet sluice_sandbox_$RUN_BASE" \
	srun -- echo CMD-RAN >"$RUN_OUT" 2>&1
code=$?
expect_eq "a broken wall (the sandbox table deleted by the hook): the run exits 3" 3 "$code"
expect_re "... naming what failed" "does not hold.*tcp80 198.18.0.1:80: open" "$(tr '\n' ' ' <"$RUN_OUT")"
expect_eq "... and CMD never started (it would have said so)" "" "$(grep CMD-RAN "$RUN_OUT")"
expect_eq "... and left nothing behind" "" "$(run_leftovers)"

# ---------------------------------------------------------------- two projects at once
# Project B: its own state, proxy (127.0.0.1:3129, granting other.test only),
# sluice-dns (127.0.0.1:5353) and band (41200), started by its run.
lab_second_project
TWO='echo started; sleep 2; for h in good.test other.test; do printf "%s " "$(curl -s -o /dev/null -w "%{http_code}" --max-time 5 http://$h/two)"; done;
	curl -s -o /dev/null --max-time 3 -x http://127.0.0.1:$OTHER http://good.test/; echo "other-forwarder $?"'
nsenter --net="/run/netns/$HNS" env SLUICE_PORT_BASE=41200 OTHER=$((RUN_BASE + 90)) \
	"$SLUICE_BUILD/sluice" -c "$CONF_B" run --env OTHER -- sh -c "$TWO" >"$LAB_DIR/two-b.out" 2>&1 &
bpid=$!
LAB_PIDS+=("$bpid")
out=$(OTHER=$((41200 + 90)) srun --env OTHER -- sh -c "$TWO" 2>&1)
wait "$bpid"
expect_eq "two projects' runs at once: A reaches its grant (good.test), not B's" \
	"200 403 other-forwarder 7" "$(grep -v '^run:' <<<"$out" | grep -v started | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... B reaches its grant (other.test), not A's; neither reaches the other's forwarder" \
	"403 200 other-forwarder 7" "$(grep -v -e '^run:' -e started "$LAB_DIR/two-b.out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... each request is in its own project's log only" "1 1 0 0" \
	"$(logq path=/two host=good.test decision=allow --count) $(jq_ "$STATE_B/network.log" path=/two host=other.test decision=allow --count) $(logq path=/two host=other.test decision=allow --count) $(jq_ "$STATE_B/network.log" path=/two host=good.test decision=allow --count)"

# ---------------------------------------------------------------- --image: a container on the run's bridge
lab_image
IMG_OPTS=(--podman "podman --runtime runc" --image "$LAB_IMAGE" --ulimit nofile=1024:1024
	--ulimit nproc=1024:1024 -v /usr:/usr:ro)
out=$(srun "${IMG_OPTS[@]}" -- sh -c 'wget -q -O- http://good.test/from-ctr; echo "wget $?";
	wget -q --no-proxy -T 3 -t 1 -O- http://203.0.113.10/; echo "direct $?"' 2>&1)
expect_eq "--image: the container's wget goes through the forwarder and the proxy" \
	"hello from 203.0.113.10:80 wget 0" "$(grep -E '^(hello|wget)' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... its direct attempt is refused (wget 4: network failure)" "direct 4" "$(grep '^direct' <<<"$out")"
src=$(logq path=/from-ctr --field src)
net=$(logq path=/from-ctr --field net)
expect_re "... its row carries the container's own address on the run's network" '^10\.[0-9]+\.[0-9]+\.[0-9]+$' "$src"
expect_re "... and the run's name" '^sluice-[0-9a-f]{12}$' "$net"
expect_re "sluice log names the container (the run's engine watch recorded it)" "$net" \
	"$(sl log --host good.test 2>&1 | grep from-ctr)"
expect_eq "... and no container or network of the run is left" "" "$(podman_left "$net")"
expect_eq "... nor anything else" "" "$(run_leftovers)"

# ---------------------------------------------------------------- SIGTERM, SIGKILL
run_bg 10 -- sh -c "echo started; exec sleep 30.$$"
expect_eq "while it runs: its namespace holds the sandbox and guard walls" \
	"table inet sluice_guard_$RUN_BASE table inet sluice_sandbox_$RUN_BASE" \
	"$(ip netns exec "$name" nft list tables 2>&1 | sort | tr '\n' ' ' | sed 's/ $//')"
expect_re "... and the forwarder listens there" "0.0.0.0:$((RUN_BASE + 90))" "$(ip netns exec "$name" ss -Htln)"
t0=$(date +%s%N)
kill -TERM $rpid
wait $rpid
code=$?
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "SIGTERM: the run passes it on and exits with CMD's status" 143 "$code"
expect_lt "... promptly (ms)" 3000 "$ms"
expect_eq "... leaving no namespace, record or forwarder" "" "$(run_leftovers)"
expect_eq "... and no process of CMD's" "" "$(pgrep -x sleep -a | grep -F "sleep 30.$$" | tr '\n' ' ')"

run_bg 20 "${IMG_OPTS[@]}" -- sh -c 'echo started; exec sleep 32'
expect_eq "a container run is up, its container named after it" "$name" \
	"$(podman ps --format '{{.Names}}' | grep -x -- "$name")"
kill -TERM $rpid
wait $rpid
code=$?
expect_re "SIGTERM to a container run: it ends (podman passes the signal on)" '^(143|137)$' "$code"
expect_eq "... leaving no container or network" "" "$(podman_left "$name")"
expect_eq "... nor namespace, record or forwarder" "" "$(run_leftovers)"

run_bg 10 -- sh -c "echo started; exec sleep 31.$$"
kill -KILL $rpid
wait $rpid 2>/dev/null
no_sleep31() { ! pgrep -x sleep -a | grep -qF "sleep 31.$$"; }
wait_until 5 no_sleep31 &&
	ok "SIGKILL: CMD dies with the run's init" ||
	not_ok "SIGKILL: CMD dies with the run's init" "$(pgrep -af "sleep 31.$$")"
wait_until 5 no_forwarder "$name" &&
	ok "SIGKILL: the forwarder stops with the run" ||
	not_ok "SIGKILL: the forwarder stops with the run" "$(pgrep -af sluice-forward)"
expect_re "... but its namespace and record are left" "$name.* ${name#sluice-}" "$(run_leftovers)"
out=$(srun -- true 2>&1)
expect_re "the next run finds and cleans them" "cleaned up $name" "$out"
expect_eq "... nothing left" "" "$(run_leftovers)"

lab_done
