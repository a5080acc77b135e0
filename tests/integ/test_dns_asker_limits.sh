#!/bin/bash
# sluice-dns's per-asker accounting over a long life. Runs come and go
# while sluice-dns stays: each run's wildcard budget is one more asker (its
# tag's net). Shown: after more than 1024 runs (BUDGETS_MAX) have asked a
# wildcard name, a fresh run's first wildcard name is still answered
# (expired or least recently used budgets make room; none is refused for
# lack of a slot), while a run that spent its budget and keeps asking is
# still refused. Tags signed by the state's key stand in for the runs'
# forwarders.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
lab_up

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
