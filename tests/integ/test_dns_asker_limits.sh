#!/bin/bash
# sluice-dns's per-asker accounting over a long life and with large
# queries. Runs come and go while sluice-dns stays: each run's wildcard
# budget is one more asker (its tag's net). Shown: after more than 1024
# runs (BUDGETS_MAX) have asked a wildcard name, a fresh run's first
# wildcard name is still answered (expired or least recently used budgets
# make room; none is refused for lack of a slot), while a run that spent
# its budget and keeps asking is still refused. Tags signed by the state's
# key stand in for the runs' forwarders. And a query near 4 KiB over UDP,
# and a large first query over TCP, through a run's tagging forwarder, are
# answered and their rows name the run (the tag makes a query grow).
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
lab_up

FWD=$SLUICE_BUILD/sluice-forward
SA=sla${HNS#slh}
names=()
for i in $(seq 1 9); do names+=("local-data: \"n$i.wild.test. 300 IN A 203.0.113.20\""); done
lab_unbound "${names[@]}"
DNSLOG=$LAB_DIR/state/dns.log
lab_write_conf "allow *.wild.test" "dns-listen 127.0.0.1:53" "dns-upstream $UNBOUND_ADDR" \
	"dns-wildcard-budget 3 600" "dns-timeout 1"
sl key init >/dev/null 2>&1 || lab_bail "sluice key init"
lab_run_dns "$CONF"
unbound_control "unbound is up and recording its queries"
dnsq() { jq_ "$DNSLOG" "$@"; }
asker() { ip netns exec "$1" "$PY" "$INTEG_DIR/dns_asker.py" "${@:2}"; }

# --- large queries through a run's tagging forwarder
ip netns add "$SA" || lab_bail "ip netns add $SA"
LAB_EXTRA_NS+=("$SA")
ip -n "$SA" link set lo up
err=$LAB_DIR/forward.err
nsenter --net="/run/netns/$HNS" "$FWD" --key "$STATE/stamp.key" --net runA \
	--netns "/run/netns/$SA" --dns 127.0.0.1:53=127.0.0.1:53 >>"$err" 2>&1 &
LAB_PIDS+=("$!")
"$FWD" --wait "/run/netns/$SA" 127.0.0.1:53 --timeout 5 </dev/null ||
	lab_bail "sluice-forward listens in $SA" "$(cat "$err")"

expect_eq "control: a 1000-byte UDP query through run A's forwarder: answered" NOERROR \
	"$(asker "$SA" big udp 1000 n5.wild.test)"
expect_eq "a 4090-byte UDP query (4096 is the most a query may be) through the forwarder, which tags it: answered" \
	NOERROR "$(asker "$SA" big udp 4090 n6.wild.test)"
expect_eq "... its row names run A" "runA 127.0.0.1@runA allow" \
	"$(dnsq name=n6.wild.test --field net) $(dnsq name=n6.wild.test --field who) $(dnsq name=n6.wild.test --field decision)"
expect_eq "... and no row says malformed" 0 "$(dnsq reason=malformed)"
expect_eq "control: a 1000-byte first TCP query through the forwarder: answered" NOERROR \
	"$(asker "$SA" big tcp 1000 n5.wild.test)"
expect_eq "a 60000-byte first TCP query through the forwarder: answered" NOERROR \
	"$(asker "$SA" big tcp 60000 n7.wild.test)"
expect_eq "... its row names run A, over TCP" "runA tcp allow" \
	"$(dnsq name=n7.wild.test --field net) $(dnsq name=n7.wild.test --field transport) $(dnsq name=n7.wild.test --field decision)"
rows=$(dnsq --count)
expect_eq "a 65535-byte first TCP query (no room left for the tag): FORMERR from the forwarder" \
	FORMERR "$(asker "$SA" big tcp 65535 n8.wild.test)"
sleep 0.3
expect_eq "... which sent sluice-dns nothing (no row)" "$rows" "$(dnsq --count)"

# --- many runs over sluice-dns's life
out=$(hx "$PY" "$INTEG_DIR/dns_asker.py" runs "$STATE/stamp.key" 1100)
line() { sed -n "s/^$1: //p" <<<"$out"; }
expect_eq "control: run sluice-busy's 3 names under *.wild.test answered, its 4th NXDOMAIN (budget 3)" \
	"NOERROR NOERROR NOERROR NXDOMAIN" "$(line "busy spends its budget")"
expect_eq "1100 more runs (more than the 1024 budgets kept), one wildcard name each: all answered" \
	"NOERROR=1100" "$(line others)"
expect_eq "... while run sluice-busy asked its answered name again every 100 of them" \
	"NOERROR=11" "$(line "busy again")"
expect_eq "a fresh run's first wildcard name: answered" NOERROR "$(line fresh)"
expect_eq "... its row names it, allowed" "sluice-zzzz allow" \
	"$(dnsq name=n1.wild.test net=sluice-zzzz --field net) $(dnsq name=n1.wild.test net=sluice-zzzz --field decision)"
expect_eq "run sluice-busy's 4th name again: still NXDOMAIN (its budget was kept, not reset)" \
	NXDOMAIN "$(line "busy over")"
expect_eq "... row: wildcard-budget, for sluice-busy" "wildcard-budget 2" \
	"$(dnsq name=n4.wild.test net=sluice-busy --field reason) $(dnsq name=n4.wild.test net=sluice-busy)"
expect_eq "no run was refused on another's account (one wildcard-budget row per refusal above)" 2 \
	"$(dnsq reason=wildcard-budget)"
lab_done
