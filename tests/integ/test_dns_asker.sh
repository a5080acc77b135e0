#!/bin/bash
# sluice-dns knows who asks: two runs' forwarders (sluice-forward --key
# --net --dns, in two sandbox namespaces with only loopback) relay to one
# sluice-dns, which every forwarder reaches from 127.0.0.1. Each relayed
# query carries the forwarder's signed EDNS tag (lib/dnstag.h); sluice-dns
# believes it, strips it, and counts the wildcard budget and the TCP cap
# per run. Shown: run A spending the budget of *.wild.test leaves run B
# answered; run A holding 32 TCP connections leaves run B's TCP served;
# each row names its run; a tag a sandbox client wrote (even one signed
# with the real key, for another run) is replaced by its forwarder's; a
# host client's tag with a bad MAC, or one copied from another question,
# is not believed (unattributed, and counted with the other unattributed
# queries).
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
lab_up

FWD=$SLUICE_BUILD/sluice-forward
SA=sda${HNS#slh}
SB=sdb${HNS#slh}
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
status_of() { sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$1"; }
# sdig NS ARGS...: dig inside a sandbox namespace (or the host's), one try
sdig() { local ns=$1; shift; ip netns exec "$ns" dig +tries=1 +time=3 @127.0.0.1 "$@" 2>&1; true; }
asker() { ip netns exec "$1" "$PY" "$INTEG_DIR/dns_asker.py" "${@:2}"; }

for ns in "$SA" "$SB"; do
	ip netns add "$ns" || lab_bail "ip netns add $ns"
	LAB_EXTRA_NS+=("$ns")
	ip -n "$ns" link set lo up
done
# fwd NS NET: the run's forwarder, in the host namespace, listening inside NS
fwd() {
	local err=$LAB_DIR/forward-$2.err
	nsenter --net="/run/netns/$HNS" "$FWD" --key "$STATE/stamp.key" --net "$2" \
		--netns "/run/netns/$1" --dns 127.0.0.1:53=127.0.0.1:53 >>"$err" 2>&1 &
	LAB_PIDS+=("$!")
	"$FWD" --wait "/run/netns/$1" 127.0.0.1:53 --timeout 5 </dev/null ||
		lab_bail "sluice-forward listens in $1" "$(cat "$err")"
}
fwd "$SA" runA
fwd "$SB" runB

out=$(sdig "$SA" n1.wild.test A)
expect_eq "control: run A's forwarder relays to sluice-dns, which answers" NOERROR "$(status_of "$out")"
expect_eq "... and its row names run A" "runA 127.0.0.1 127.0.0.1@runA" \
	"$(dnsq name=n1.wild.test --field net) $(dnsq name=n1.wild.test --field src) $(dnsq name=n1.wild.test --field who)"
expect_eq "... though every forwarder reaches sluice-dns from 127.0.0.1" 1 \
	"$(dnsq name=n1.wild.test 'client~127.0.0.1:')"

out=$(sdig "$SA" n1.wild.test A +noedns)
expect_eq "a client without EDNS, through the tagging forwarder: answered without an OPT record (the one the tag came in is gone)" \
	"NOERROR 0" "$(status_of "$out") $(grep -c 'OPT PSEUDOSECTION' <<<"$out")"

# --- the wildcard budget (3 names in 600 s), per run
for i in 2 3; do sdig "$SA" "n$i.wild.test" A >/dev/null; done
out=$(sdig "$SA" n4.wild.test A)
expect_eq "run A's 4th distinct name under *.wild.test: NXDOMAIN (its budget is spent)" NXDOMAIN "$(status_of "$out")"
expect_eq "... row: run A, wildcard-budget" "runA wildcard-budget" \
	"$(dnsq name=n4.wild.test net=runA --field net) $(dnsq name=n4.wild.test net=runA --field reason)"
out=$(sdig "$SB" n4.wild.test A)
expect_eq "run B asks the same name: answered (its own budget)" NOERROR "$(status_of "$out")"
expect_eq "... row: run B, allow" "runB allow" \
	"$(dnsq name=n4.wild.test net=runB --field net) $(dnsq name=n4.wild.test net=runB --field decision)"
for i in 5 6; do
	out=$(sdig "$SB" "n$i.wild.test" A)
	expect_eq "run B's name $i answered" NOERROR "$(status_of "$out")"
done
out=$(sdig "$SB" n7.wild.test A)
expect_eq "run B's 4th distinct name: NXDOMAIN (budgets are per run, not unlimited)" NXDOMAIN "$(status_of "$out")"

# --- a tag written by a sandbox client is replaced by its forwarder's
out=$(asker "$SA" tagged n8.wild.test runB "$STATE/stamp.key" good)
expect_eq "run A's client sends a tag naming run B, signed with the real key: its forwarder's wins (run A's budget: NXDOMAIN)" \
	NXDOMAIN "$out"
expect_eq "... the row names run A, not run B" "runA 0" \
	"$(dnsq name=n8.wild.test --field net) $(dnsq name=n8.wild.test net=runB --count)"

out=$(asker "$SA" tcp2 n1.wild.test n9.wild.test runB "$STATE/stamp.key")
expect_eq "over TCP through run A's forwarder: a first query, then one with a tag naming run B: both answered" \
	"NOERROR NXDOMAIN" "$out"
expect_eq "... the second's row names run A, the connection's asker (its first query's tag)" "runA tcp 0" \
	"$(dnsq name=n9.wild.test --field net) $(dnsq name=n9.wild.test --field transport) $(dnsq name=n9.wild.test net=runB --count)"

# --- what does not read as a query is answered by the forwarder, and goes nowhere
rows=$(dnsq --count)
out=$(asker "$SA" garbage)
expect_eq "a datagram that is no query, through run A's forwarder: FORMERR" FORMERR "$out"
sleep 0.3
out=$(asker "$SA" tcpgarbage)
expect_eq "the same as a TCP connection's first message: FORMERR, then a FIN" "FORMERR fin" "$out"
sleep 0.3
expect_eq "... from the forwarder: sluice-dns saw nothing of either (no row)" "$rows" "$(dnsq --count)"

# --- tags sent straight to sluice-dns: the host's unattributed queries are one principal
out=$(sdig "$HNS" n1.wild.test A)
expect_eq "a host client without a tag is answered" NOERROR "$(status_of "$out")"
expect_eq "... its row: unattributed, no net" "1 null" \
	"$(dnsq name=n1.wild.test who=unattributed) $(dnsq name=n1.wild.test who=unattributed --field net)"
out=$(asker "$HNS" tagged n2.wild.test runB "$STATE/stamp.key" badmac)
expect_eq "a host client's tag with a bad MAC naming run B: answered, as unattributed" NOERROR "$out"
expect_eq "... the row does not name run B" "unattributed" "$(dnsq name=n2.wild.test who=unattributed --field who)"
out=$(asker "$HNS" tagged n3.wild.test runB "$STATE/stamp.key" copied)
expect_eq "a tag signed for another question: answered, as unattributed" NOERROR "$out"
expect_eq "... the row is unattributed" "unattributed" "$(dnsq name=n3.wild.test who=unattributed --field who)"
out=$(sdig "$HNS" n5.wild.test A)
expect_eq "the 4th unattributed name: NXDOMAIN (the forged tags spent the unattributed budget, not run B's)" \
	NXDOMAIN "$(status_of "$out")"

# --- the TCP cap (32 connections), per run
asker "$SA" hold 32 n1.wild.test 8 "$LAB_DIR/hold" &
LAB_PIDS+=("$!")
wait_until 15 test -s "$LAB_DIR/hold" || not_ok "the holder wrote its result"
expect_eq "run A holds 32 TCP connections through its forwarder; its 33rd is reset" \
	"32 answered, extra reset" "$(cat "$LAB_DIR/hold" 2>/dev/null)"
out=$(asker "$SB" tcp n4.wild.test)
expect_eq "meanwhile run B's TCP query is answered" NOERROR "$out"
expect_ge "... its row: TCP, run B" 1 "$(dnsq name=n4.wild.test net=runB transport=tcp)"
lab_done
