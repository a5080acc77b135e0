#!/bin/bash
# test_doctor.sh: `sluice doctor` reads everything back and fails closed.
# In the sandbox lab (proxy and sluice-dns in host, walls in vm): exit 0
# when all holds; 1 naming a wall rule deleted by hand, a dead run left
# behind (which --clean removes), a CA about to expire; 2 with the proxy
# down; --json says the same. sluice-proxy with doctor-on-start on refuses
# to start while doctor fails and starts once it holds.
source "$(dirname "$0")/lab.sh"
lab_up
lab_sandbox_up
lab_write_conf "listen $SBX_PROXY" "intercept on" "allow good.test" \
	"dns-listen 127.0.0.1:53" "dns-upstream 192.0.2.2"
out=$(sl ca init 2>&1 && sl key init 2>&1) || lab_bail "sluice ca init, key init" "$out"
lab_run_proxy
lab_run_dns "$CONF"
lab_sandbox_wall

doc() { sl doctor "$@" 2>&1; }
out=$(doc)
code=$?
expect_eq "doctor on the lab: exit 0" 0 "$code"
expect_re "... the proxy answers" "^ok +proxy +answering on $PROXY_ADDR:$PROXY_PORT" "$out"
expect_re "... sluice-dns answers" "^ok +dns +answering on 127.0.0.1:53" "$out"
expect_re "... the CA is valid" "^ok +ca +valid for [0-9]+ more days" "$out"
expect_re "... the vm's sandbox wall holds as applied" "^ok +wall +sluice_sandbox_$SBX_BASE in /run/netns/$VNS holds" "$out"
expect_re "... and its guard wall" "^ok +wall +sluice_guard_$SBX_BASE in /run/netns/$VNS holds" "$out"
expect_eq "doctor's probe reached the proxy: its refused row, by doctor's user agent" "403 sluice-doctor" \
	"$(logq host=sluice-doctor.invalid --field status | tail -1) $(logq host=sluice-doctor.invalid --field ua | tail -1)"
json=$(sl doctor --json 2>/dev/null)
expect_eq "--json: the same, as one object" "0 ok" \
	"$("$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["exit"], d["checks"][0]["status"])' <<<"$json")"

# a rule deleted by hand in the vm's sandbox table
handle=$(vx nft -a list chain inet sluice_sandbox_$SBX_BASE sandbox | sed -n 's/.*udp dport 443 .* # handle \([0-9]*\)$/\1/p')
vx nft delete rule inet sluice_sandbox_$SBX_BASE sandbox handle "$handle" ||
	not_ok "delete the QUIC rule by hand" "$handle"
out=$(doc)
code=$?
expect_eq "a wall rule deleted: exit 1" 1 "$code"
expect_re "... naming the table that differs" "^FAIL +wall +sluice_sandbox_$SBX_BASE in /run/netns/$VNS differs" "$out"
expect_re "... and the rule missing" "udp dport 443" "$out"
expect_re "... the other wall still holds" "^ok +wall +sluice_guard_$SBX_BASE" "$out"
lab_sandbox_wall
expect_eq "applied again: exit 0" 0 "$(doc >/dev/null; echo $?)"

# a dead run left behind
RUN=(nsenter --net="/run/netns/$HNS" env SLUICE_PORT_BASE=41000 "$SLUICE_BUILD/sluice" -c "$CONF" run)
"${RUN[@]}" -- sh -c 'echo started; exec sleep 30' >"$LAB_DIR/run.out" 2>&1 &
rpid=$!
LAB_PIDS+=("$rpid")
wait_until 10 grep -q started "$LAB_DIR/run.out" || not_ok "a run starts" "$(cat "$LAB_DIR/run.out")"
name=sluice-$(ls "$STATE/runs" | head -1)
out=$(doc)
expect_re "a live run is reported live" "^ok +run +1 run live" "$out"
{ kill -KILL "$rpid"; wait "$rpid"; } 2>/dev/null
out=$(doc)
code=$?
expect_eq "a SIGKILLed run: exit 1" 1 "$code"
expect_re "... naming the dead run" "^FAIL +run +sluice-[0-9a-f]{12} is dead" "$out"
out=$(doc --clean)
code=$?
expect_eq "doctor --clean takes it down and then holds: exit 0" 0 "$code"
expect_re "... saying what it took down" "took down 1 dead run" "$out"
expect_eq "... its namespace is gone" "absent" "$([ -e "/run/netns/$name" ] && echo present || echo absent)"

# a CA about to expire (another state directory, a certificate openssl made for 5 days)
mkdir -p "$LAB_DIR/short"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 5 -subj "/CN=short" \
	-keyout "$LAB_DIR/short/ca.key" -out "$LAB_DIR/short/ca.crt" >/dev/null 2>&1
chmod 600 "$LAB_DIR/short/ca.key"
printf 'state %s\nintercept on\n' "$LAB_DIR/short" >"$LAB_DIR/short.conf"
out=$(hx "$SLUICE_BUILD/sluice" -c "$LAB_DIR/short.conf" doctor 2>&1)
expect_re "a CA 5 days from its expiry is a difference" "^FAIL +ca +expires in [45] days" "$out"

# doctor-on-start
lab_stop_proxy
out=$(doc)
code=$?
expect_eq "the proxy down: exit 2 (could not check)" 2 "$code"
expect_re "... saying so" "^\? +proxy +not running" "$out"
vx nft delete table inet sluice_guard_$SBX_BASE
printf 'doctor-on-start on\n' >>"$CONF"
t0=$(date +%s%N)
hx "$SLUICE_BUILD/sluice-proxy" -c "$CONF" >"$LAB_DIR/dos.err" 2>&1
code=$?
expect_eq "doctor-on-start on, a wall gone: sluice-proxy refuses to start (exit 1)" 1 "$code"
expect_re "... saying doctor failed, and what" "FAIL +wall +sluice_guard_$SBX_BASE in /run/netns/$VNS: the table is gone" "$(cat "$LAB_DIR/dos.err")"
expect_re "... not started" "doctor-on-start: sluice doctor exited 1 .*not started" "$(cat "$LAB_DIR/dos.err")"
expect_eq "... it never listened (no run file)" "absent" "$([ -e "$STATE/proxy.run" ] && echo present || echo absent)"
lab_sandbox_wall
lab_run_proxy
expect_eq "the wall applied again: sluice-proxy with doctor-on-start starts" "yes" "$(proxy_alive && echo yes || echo no)"
expect_eq "... and doctor holds" 0 "$(doc >/dev/null; echo $?)"

lab_done
