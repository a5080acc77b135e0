#!/bin/bash
# sluice wall apply, status and remove, loaded for real with libnftables,
# but only ever inside a network namespace this test creates (--netns). The
# host's own ruleset is only read (nft list tables, before and after) to
# show that an apply without --netns is refused and changes nothing.
cd "$(dirname "$0")/../.." || exit 2
source tests/integ/lab.sh
NS=slwa$$
T=$(mktemp -d /tmp/sluice-wall-apply.XXXXXX)
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$T"' EXIT
ip netns add "$NS" || lab_bail "ip netns add $NS"
S="$SLUICE_BUILD/sluice -c $T/sluice.conf"
NETNS=/run/netns/$NS
TABLE=sluice_sandbox_41000
printf 'state %s/state\nallow-private db.internal 10.20.0.0/16\n' "$T" >"$T/sluice.conf"
printf 'agent:100000:65536\n' >"$T/subuid"
# the port bands come from a registry of the test's own
export SLUICE_PORTS_REGISTRY=$T/ports
unset SLUICE_PORT_BASE
# the same options every time: the sandbox profile for user nobody, project "demo"
W=(sandbox --user nobody --subuid "$T/subuid" --gateway 192.168.5.2 --gateway fd00::2
	--resolver 192.168.5.3 --forwarder 10.88.0.1:3128 --project demo)
REC=$T/state/wall-$TABLE@_run_netns_$NS
# not_ok_err NAME: not ok, with what the last command wrote to stderr
not_ok_err() { not_ok "$1" "stderr: $(cat "$T/err" 2>/dev/null)"; }
# run WANT NAME COMMAND...: the status must be WANT; stdout in $T/out, stderr in $T/err
run() {
	local want=$1 name=$2 got
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	if [ "$got" = "$want" ]; then ok "$name"; else not_ok_err "$name (exit $got, want $want)"; fi
}
nsnft() { ip netns exec "$NS" nft "$@"; }

host_before=$(nft list tables 2>&1)

run 1 "apply for a project with no port band fails" $S wall apply "${W[@]}" --netns "$NETNS"
grep -q 'demo has no port band' "$T/err" && ok "... and says so" || not_ok_err "... and says so"
[ -z "$(nsnft list tables)" ] && ok "... and loads nothing" || not_ok_err "... and loads nothing"
run 0 "sluice ports --project demo takes the first band" $S ports --project demo
grep -q 41000 "$T/out" && ok "... 41000" || not_ok_err "... 41000: $(cat "$T/out")"

run 0 "apply sandbox inside $NS" $S wall apply "${W[@]}" --netns "$NETNS"
[ "$(nsnft list tables)" = "table inet $TABLE" ] && ok "exactly the sluice table exists" ||
	not_ok_err "exactly the sluice table exists: $(nsnft list tables | tr '\n' ' ')"
st=$(stat -c %a "$REC.nft" "$REC.live" 2>/dev/null | tr '\n' ' ')
[ "$st" = "600 600 " ] && ok "the state files are recorded, mode 0600" ||
	not_ok_err "the state files are recorded, mode 0600 ($st)"

run 0 "apply again" $S wall apply "${W[@]}" --netns "$NETNS"
n=$(nsnft list tables | grep -c .)
[ "$n" = 1 ] && ok "applying twice leaves one copy" || not_ok_err "applying twice leaves one copy ($n tables)"
n=$(nsnft list table inet "$TABLE" | grep -c 'chain sandbox {')
[ "$n" = 1 ] && ok "one sandbox chain after two applies" || not_ok_err "one sandbox chain ($n)"

run 0 "status matches after apply" $S wall status "${W[@]}" --netns "$NETNS"

run 1 "status with other options says the render differs" \
	$S wall status "${W[@]}" --resolver 192.168.5.4 --netns "$NETNS"
grep -q "render a different script" "$T/err" && ok "... and says why" || not_ok_err "... and says why"

handle=$(nsnft -a list chain inet "$TABLE" sandbox | sed -n 's/.*udp dport 443 .*# handle \([0-9]*\)$/\1/p')
if [ -n "$handle" ] && nsnft delete rule inet "$TABLE" sandbox handle "$handle"; then
	ok "a rule deleted by hand (handle $handle)"
else
	not_ok_err "a rule deleted by hand"
fi
run 1 "status after the hand edit exits 1" $S wall status "${W[@]}" --netns "$NETNS"
grep -q 'missing or changed: udp dport 443' "$T/err" && grep -q 'chain sandbox' "$T/err" &&
	ok "... naming the missing rule and its chain" || not_ok_err "... naming the missing rule and its chain"

run 0 "apply restores it" $S wall apply "${W[@]}" --netns "$NETNS"
run 0 "status matches again" $S wall status "${W[@]}" --netns "$NETNS"

run 1 "a wall for uid 0 is refused" $S wall render sandbox --user root --gateway 192.168.5.2 --project demo
grep -q "is root" "$T/err" && ok "... saying why" || not_ok_err "... saying why"
run 2 "an IPv6 forwarder without brackets is refused" $S wall render "${W[@]}" --forwarder fd00::1:3128
run 0 "--project wins over SLUICE_PORT_BASE" env SLUICE_PORT_BASE=45000 $S wall render "${W[@]}"
grep -q "table inet $TABLE {" "$T/out" && ok "... table $TABLE" || not_ok_err "... table $TABLE"
chmod 755 "$T"
chmod 644 "$T/ports" "$T/sluice.conf" "$T/subuid"
run 0 "nobody can render from the registry (read-only lookup)" \
	setpriv --reuid=65534 --regid=65534 --clear-groups $S wall render "${W[@]}"
run 0 "a second project gets the next band" $S ports --project other
run 0 "its wall applies beside the first" $S wall apply "${W[@]}" --project other --netns "$NETNS"
[ "$(nsnft list tables | sort | tr '\n' ' ')" = "table inet $TABLE table inet ${TABLE%_41000}_41200 " ] &&
	ok "... as table ${TABLE%_41000}_41200" || not_ok_err "... two tables: $(nsnft list tables | tr '\n' ' ')"
run 0 "status of the first is untouched by the second" $S wall status "${W[@]}" --netns "$NETNS"
run 0 "remove the second project's wall (its band from the registry)" \
	$S wall remove sandbox --project other --netns "$NETNS"
[ "$(nsnft list tables)" = "table inet $TABLE" ] && ok "... the first project's table stays" ||
	not_ok_err "... the first project's table stays: $(nsnft list tables | tr '\n' ' ')"

run 0 "egress with --log-group applies" $S wall apply egress --user nobody --project demo \
	--log-group 7 --netns "$NETNS"
eg=$(nsnft list table inet sluice_egress_41000)
grep -q 'ip daddr 10.20.0.0/16 accept' <<<"$eg" && ok "... the config's allow-private range is open" ||
	not_ok_err "... the config's allow-private range is open"
grep -q 'log prefix "sluice egress denied-ip: " group 7' <<<"$eg" &&
	ok "... refusals log to nflog group 7" || not_ok_err "... refusals log to nflog group 7: $(grep log <<<"$eg")"
run 0 "remove egress" $S wall remove egress --project demo --netns "$NETNS"

nsnft add rule inet "$TABLE" sandbox tcp dport 9 accept
run 1 "status after a rule added by hand exits 1" $S wall status "${W[@]}" --netns "$NETNS"
grep -q 'rule added: tcp dport 9 accept' "$T/err" && ok "... naming the added rule" ||
	not_ok_err "... naming the added rule"

nsnft add table inet other
run 0 "remove" $S wall remove sandbox --project demo --netns "$NETNS"
[ ! -e "$REC.nft" ] && [ ! -e "$REC.live" ] && ok "... and forgets what apply recorded" ||
	not_ok_err "... and forgets what apply recorded"
[ "$(nsnft list tables)" = "table inet other" ] && ok "only the sluice table went; other stays" ||
	not_ok_err "only the sluice table went: $(nsnft list tables | tr '\n' ' ')"
run 0 "remove again" $S wall remove sandbox --project demo --netns "$NETNS"
grep -q "not present" "$T/out" && ok "... says not present" || not_ok_err "... says not present"
run 1 "status after remove exits 1" $S wall status "${W[@]}" --netns "$NETNS"
grep -q "missing table inet $TABLE" "$T/err" && ok "... missing table" || not_ok_err "... missing table"

run 2 "apply without --netns or --i-mean-this-host is refused" $S wall apply "${W[@]}"
grep -q "i-mean-this-host" "$T/err" && ok "... and says how to mean it" || not_ok_err "... and says how to mean it"
run 2 "remove without --netns or --i-mean-this-host is refused" $S wall remove sandbox --project demo
run 1 "a --netns that does not exist fails" $S wall apply "${W[@]}" --netns "$T/nope"
host_after=$(nft list tables 2>&1)
[ "$host_before" = "$host_after" ] && ok "the host's ruleset was not touched" ||
	not_ok_err "the host's ruleset was not touched"
lab_done
