#!/bin/bash
# Issue 10, holes 7-9: what a token command, a rule's port and a wildcard
# grant can no longer do.
#   7. an origin that answers every request 401 does not make the proxy run
#      the token command on every request (at most one run per
#      token-min-interval per rule, a failing command likewise), and a
#      command that closes its output and sleeps on does not stall the loop:
#      plain requests are served at once meanwhile; a token command is not
#      given the variables other rules' env= name, and a command whose
#      leader exits while its child holds its output has that child killed
#      with its process group at the deadline;
#   8. a rule for host= injects on port 443 only; a rule for host:8443 on
#      8443 only; rules on different ports do not overlap;
#   9. a wildcard over a public suffix (*.co.uk, *.github.io, *.com) is
#      refused by `sluice allow add`, `sluice check` and `sluice-proxy -t`,
#      with the reason; *.example.com and foo.co.uk are fine.
# The TLS origins of this file: port.test (203.0.113.14) in a namespace of
# its own, origin.py over TLS on :443 and :8443 (records port443.jsonl and
# port8443.jsonl), its certificate signed by the lab's test CA.
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
O=$LAB_DIR/tls/ca.crt

# port_origin: the namespace, its route from the host ns, the name, the cert, the two origins
port_origin() {
	local d=$LAB_DIR/port pns=slp${HNS#slh} vh=svp${HNS#slh} vp=svq${HNS#slh}
	mkdir -p "$d"
	ip netns add "$pns" || lab_bail "ip netns add $pns"
	LAB_EXTRA_NS+=("$pns")
	ip link add name "$vh" netns "$HNS" type veth peer name "$vp" netns "$pns" || lab_bail "veth to $pns"
	ip -n "$pns" link set lo up
	hx ip addr add 198.51.100.1/24 dev "$vh"
	ip -n "$pns" addr add 198.51.100.2/24 dev "$vp"
	ip -n "$pns" addr add 203.0.113.14/32 dev lo
	hx ip link set "$vh" up
	ip -n "$pns" link set "$vp" up
	hx ip route add 203.0.113.14/32 via 198.51.100.2
	echo "203.0.113.14 port.test" >>"/etc/netns/$HNS/hosts"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=port.test" \
		-keyout "$d/srv.key" -out "$d/srv.csr" >/dev/null 2>&1 || lab_bail "port.test key"
	printf 'subjectAltName=DNS:port.test\nextendedKeyUsage=serverAuth\n' >"$d/ext"
	openssl x509 -req -in "$d/srv.csr" -CA "$LAB_DIR/tls/ca.crt" -CAkey "$LAB_DIR/tls/ca.key" \
		-CAcreateserial -days 2 -extfile "$d/ext" -out "$d/srv.crt" >/dev/null 2>&1 ||
		lab_bail "port.test cert"
	local p
	for p in 443 8443; do
		lab_bg "$pns" env ORIGIN_TOKEN="$LAB_TOKEN" "$PY" "$INTEG_DIR/origin.py" \
			--log "$LAB_DIR/port$p.jsonl" --tls "$d/srv.crt" "$d/srv.key" "203.0.113.14:$p"
		wait_until 10 hx bash -c "</dev/tcp/203.0.113.14/$p" || lab_bail "port.test origin on :$p did not start"
	done
	: >"$LAB_DIR/port443.jsonl"
	: >"$LAB_DIR/port8443.jsonl"
}
port_origin

# the token commands
cat >"$LAB_DIR/wrong.sh" <<SH
#!/bin/sh
echo run >>"$LAB_DIR/wrong.count"
echo a-token-the-origin-refuses
echo 60
SH
cat >"$LAB_DIR/failing.sh" <<SH
#!/bin/sh
echo run >>"$LAB_DIR/failing.count"
exit 3
SH
# prints its token, closes its output, then stays, it and a child of it
# (nap: sleep under a name of this lab's): the loop must not wait for them
cp "$(command -v sleep)" "$LAB_DIR/nap"
cat >"$LAB_DIR/stall.sh" <<SH
#!/bin/sh
echo "$LAB_TOKEN"
exec >&-
"$LAB_DIR/nap" 30
SH
chmod 700 "$LAB_DIR/wrong.sh" "$LAB_DIR/failing.sh" "$LAB_DIR/stall.sh"

NSTALL=40
stall_rules=()
for i in $(seq -w 1 $NSTALL); do
	stall_rules+=("inject st$i host=port.test path=/s$i header=Authorization command=$LAB_DIR/stall.sh unattributed=yes")
done
lab_write_conf "intercept on" "allow port.test" "allow port.test:8443" "allow good.test" \
	"upstream-ca port.test $O" \
	'inject pt host=port.test path=/echo header=Authorization prefix="Bearer " env=SLUICE_LAB_TOKEN unattributed=yes' \
	"inject wrong host=port.test path=/api header=Authorization prefix=\"Bearer \" command=$LAB_DIR/wrong.sh unattributed=yes" \
	"inject failing host=port.test path=/fail header=Authorization command=$LAB_DIR/failing.sh unattributed=yes" \
	"${stall_rules[@]}"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
export SLUICE_LAB_TOKEN=$LAB_TOKEN
lab_run_proxy
unset SLUICE_LAB_TOKEN
CA=$STATE/ca.crt
icurl() { hx curl -sS --max-time 20 -x "$PROXY_URL" --cacert "$CA" "$@"; }
runs() { cat "$1" 2>/dev/null | wc -l; }

# ---------------------------------------------------------------- 8. the port
out=$(icurl -w ' %{http_code}' https://port.test/echo 2>&1)
expect_re "a rule for host=port.test: a request to port.test (443) is served" ' 200$' "$out"
expect_eq "... and port 443 got the secret" 1 "$(grep -c "Bearer $LAB_TOKEN" "$LAB_DIR/port443.jsonl")"
out=$(icurl -w ' %{http_code}' https://port.test:8443/echo 2>&1)
expect_re "port.test:8443 is granted and its origin answers" ' 200$' "$out"
expect_eq "... the origin on 8443 recorded the request (it is up and recording)" 1 \
	"$(jq_ "$LAB_DIR/port8443.jsonl" ev=req 'line~/echo')"
expect_eq "... but got no secret from a rule for port 443" 0 "$(grep -c "$LAB_TOKEN" "$LAB_DIR/port8443.jsonl")"
expect_eq "... and its row names no rule" null "$(logq host=port.test port=8443 kind=https --field inject)"

# ---------------------------------------------------------------- 7. token commands
# an origin that refuses every token: N requests in a short window
N=10
t0=$(now)
for i in $(seq $N); do icurl -o /dev/null "https://port.test/api?i=$i" 2>/dev/null; done
win=$(elapsed "$t0")
max=$(awk -v w="$win" 'BEGIN{m = int(w / 10); if (m < w / 10) m++; print m + 1}')
expect_eq "the origin answered 401 to every one of $N requests" $N "$(jq_ "$LAB_DIR/port443.jsonl" ev=req 'line~/api?i=')"
n=$(runs "$LAB_DIR/wrong.count")
if [ "$n" -le "$max" ]; then ok "an origin that always says 401: $N requests in $win s ran the token command $n times (at most $max)"; else not_ok "an origin that always says 401: $N requests in $win s ran the token command at most $max times" "it ran $n times"; fi
expect_eq "... their rows say why no new token was minted" \
	"the upstream refused the token (401); token-min-interval allows no new one yet" \
	"$(logq 'path=/api?i=5' --field detail)"
# many at once: one run serves them all
: >"$LAB_DIR/wrong.count"
sleep 11 # past the interval: the next request may mint once
pids=()
for i in $(seq 8); do
	icurl -o /dev/null "https://port.test/api?burst=$i" 2>/dev/null &
	pids+=($!)
done
wait "${pids[@]}"
expect_eq "8 requests at once after the interval: one run" 1 "$(runs "$LAB_DIR/wrong.count")"
# a failing command: the requests in its interval get its error, without a new run
for i in 1 2 3 4 5; do out=$(icurl -w ' %{http_code}' "https://port.test/fail?i=$i" 2>&1); done
expect_re "a failing token command: the request is refused, naming why" \
	"rule failing: the token command failed.* 502$" "$(echo $out)"
expect_eq "... 5 requests in its interval ran it once" 1 "$(runs "$LAB_DIR/failing.count")"

# a command that closes its output and sleeps 30 s, for $NSTALL rules at once
# probe: a plain request's time, or 99 when it was not served
probe() {
	hx curl -sS -o /dev/null --max-time 20 -x "$PROXY_URL" -w '%{http_code} %{time_total}' \
		http://good.test/ 2>/dev/null | awk '$1 == 200 {print $2; next} {print 99}'
}
expect_lt "control: a plain request is served at once (s)" 2 "$(probe)"
pids=()
for i in $(seq -w 1 $NSTALL); do
	icurl -o "$LAB_DIR/stall$i.out" -w ' %{http_code}' "https://port.test/s$i" >"$LAB_DIR/stall$i.code" 2>&1 &
	pids+=($!)
done
sleep 0.5
nkids=$(ps -o pid= --ppid "$PROXY_PID" | wc -l)
nnaps=$(pgrep -fc "^$LAB_DIR/nap")
worst=0
for i in $(seq 12); do
	t=$(probe)
	echo "$t" >>"$LAB_DIR/probes"
	worst=$(awk -v a="$worst" -v b="$t" 'BEGIN{print (b > a) ? b : a}')
	sleep 0.2
done
expect_lt "while $NSTALL token commands sit on closed outputs, plain requests are served at once (worst of 12, s)" 2 "$worst"
wait "${pids[@]}"
expect_re "... each of those requests is refused naming why" \
	"rule st01: the token command closed its output but did not exit.* 502$" \
	"$(cat "$LAB_DIR/stall01.out" "$LAB_DIR/stall01.code" | tr '\n' ' ')"
expect_eq "... none reached the origin" 0 "$(jq_ "$LAB_DIR/port443.jsonl" ev=req 'line~GET /s')"
expect_eq "... and the proxy is still running" 0 "$(proxy_alive; echo $?)"
expect_ge "control: while they sat on closed outputs, their commands were the proxy's children" 1 "$nkids"
expect_ge "... and their own children were running" 1 "$nnaps"
children() { ps -o pid= --ppid "$PROXY_PID" | wc -l; }
if wait_until 3 [ "$(children)" = 0 ]; then ok "... the $NSTALL commands were killed and reaped: the proxy has no child left"; else not_ok "... the $NSTALL commands were killed and reaped: the proxy has no child left" "$(ps -o pid,stat,args --ppid "$PROXY_PID" | head -5)"; fi
if wait_until 3 [ "$(pgrep -fc "^$LAB_DIR/nap")" = 0 ]; then ok "... and so were their children (the process group)"; else not_ok "... and so were their children (the process group)" "$(pgrep -fa "^$LAB_DIR/nap" | head -3)"; fi
lab_stop_proxy
cp "$LAB_DIR/proxy.err" "$LAB_DIR/proxy-1.err"

# ---------------------------------------------------------------- 8. a rule with a port
lab_write_conf "intercept on" "allow port.test" "allow port.test:8443" "upstream-ca port.test $O" \
	"token-min-interval 1" \
	'inject p8443 host=port.test:8443 path=/echo header=Authorization prefix="Bearer " env=SLUICE_LAB_TOKEN unattributed=yes' \
	'inject p443 host=port.test path=/echo header=X-Other prefix="Bearer " env=SLUICE_LAB_TOKEN unattributed=yes'
out=$(sl check "$CONF" 2>&1)
expect_re "rules for one host and path on ports 443 and 8443 do not overlap; the port is kept in the normalised form" \
	'inject p8443 host=port.test:8443 path=/echo' "$out"
expect_re "... and token-min-interval is printed" '^token-min-interval 1$' "$(printf '%s\n' "$out" | grep '^token-min-interval')"
: >"$LAB_DIR/port443.jsonl"
: >"$LAB_DIR/port8443.jsonl"
export SLUICE_LAB_TOKEN=$LAB_TOKEN
lab_run_proxy
unset SLUICE_LAB_TOKEN
out=$(icurl -w ' %{http_code}' https://port.test:8443/echo 2>&1)
expect_re "a rule for host=port.test:8443: port 8443 gets the secret" ' 200$' "$out"
expect_eq "... in Authorization, as the rule says" 1 "$(grep -ci "authorization.*Bearer $LAB_TOKEN" "$LAB_DIR/port8443.jsonl")"
out=$(icurl -w ' %{http_code}' https://port.test/echo 2>&1)
expect_eq "... and port 443 gets the other rule's header, not this one's" "0 1" \
	"$(grep -ci "authorization.*Bearer $LAB_TOKEN" "$LAB_DIR/port443.jsonl") $(grep -ci "x-other.*Bearer $LAB_TOKEN" "$LAB_DIR/port443.jsonl")"
lab_stop_proxy
lab_write_conf "intercept on" 'inject a host=x.test path=/v1 header=X-A env=A' \
	'inject b host=x.test:443 path=/v1 header=X-B env=B'
out=$(sl check "$CONF" 2>&1)
expect_re "host=x.test and host=x.test:443 on one path overlap" 'overlaps inject a' "$out"

# ---------------------------------------------------------------- 7. a token command's environment and its orphans
# envdump.sh writes the environment it was given; orphan.sh exits at once and
# leaves a child (doze: sleep under a name of this lab's) holding its output
cat >"$LAB_DIR/envdump.sh" <<SH
#!/bin/sh
env >"$LAB_DIR/envdump.txt"
echo a-dumped-token
echo 60
SH
cp "$(command -v sleep)" "$LAB_DIR/doze"
cat >"$LAB_DIR/orphan.sh" <<SH
#!/bin/sh
"$LAB_DIR/doze" 40 &
exit 0
SH
chmod 700 "$LAB_DIR/envdump.sh" "$LAB_DIR/orphan.sh"
lab_write_conf "intercept on" "allow port.test" "upstream-ca port.test $O" \
	'inject pt host=port.test path=/echo header=Authorization prefix="Bearer " env=SLUICE_LAB_TOKEN unattributed=yes' \
	"inject envdump host=port.test path=/envdump header=Authorization command=$LAB_DIR/envdump.sh unattributed=yes" \
	"inject orphan host=port.test path=/orphan header=Authorization command=$LAB_DIR/orphan.sh unattributed=yes"
: >"$LAB_DIR/port443.jsonl"
export SLUICE_LAB_TOKEN=$LAB_TOKEN SLUICE_LAB_PLAIN=plain-and-visible
lab_run_proxy
unset SLUICE_LAB_TOKEN SLUICE_LAB_PLAIN
out=$(icurl -w ' %{http_code}' https://port.test/echo 2>&1)
expect_eq "control: rule pt's env=SLUICE_LAB_TOKEN is in the proxy's environment (the origin got it)" \
	"1" "$(grep -c "Bearer $LAB_TOKEN" "$LAB_DIR/port443.jsonl")"
out=$(icurl -w ' %{http_code}' https://port.test/envdump 2>&1)
expect_re "a token command that writes its environment to a file mints its token" ' 200$' "$out"
expect_eq "... it wrote its environment (with the proxy's other variables)" \
	"SLUICE_LAB_PLAIN=plain-and-visible" "$(grep '^SLUICE_LAB_PLAIN=' "$LAB_DIR/envdump.txt")"
expect_eq "... and not the variable another rule's env= names" "" \
	"$(grep '^SLUICE_LAB_TOKEN=' "$LAB_DIR/envdump.txt")"
expect_eq "... nor that secret under any name" 0 "$(grep -c "$LAB_TOKEN" "$LAB_DIR/envdump.txt")"
# the leader exits at once, its child holds the output: the run overruns
icurl -o "$LAB_DIR/orphan.out" -w ' %{http_code}' https://port.test/orphan >"$LAB_DIR/orphan.code" 2>&1 &
opid=$!
sleep 1
ndoze=$(pgrep -fc "^$LAB_DIR/doze")
wait "$opid"
expect_ge "control: while the run was on, the command's child was running" 1 "$ndoze"
expect_re "a command whose leader exits while its child holds the output: refused at the deadline" \
	"rule orphan: the token command did not finish within 10 s.* 502$" \
	"$(cat "$LAB_DIR/orphan.out" "$LAB_DIR/orphan.code" | tr '\n' ' ')"
if wait_until 2 [ "$(pgrep -fc "^$LAB_DIR/doze")" = 0 ]; then ok "... and its child, in the command's process group, was killed then"; else not_ok "... and its child, in the command's process group, was killed then" "$(pgrep -fa "^$LAB_DIR/doze" | head -3)"; fi
left=$(pgrep -f "^$LAB_DIR/doze") # before the fix it lived on: end it by its pid
[ -n "$left" ] && kill $left 2>/dev/null
lab_stop_proxy

# ---------------------------------------------------------------- 9. public suffixes
lab_write_conf "allow good.test"
for w in '*.co.uk' '*.github.io' '*.herokuapp.com'; do
	out=$(sl allow add "$w" 2>&1)
	rc=$?
	expect_eq "sluice allow add '$w' is refused" 1 "$([ $rc -ne 0 ] && echo 1 || echo 0)"
	expect_re "... saying it is a public suffix and that exact hosts are fine" "public suffix.*exact hosts" "$out"
done
out=$(sl allow add '*.com' 2>&1)
expect_eq "sluice allow add '*.com' is refused" "1 1" \
	"$([ $? -ne 0 ] && echo 1 || echo 0) $(printf '%s' "$out" | grep -c 'bad grant')"
expect_not_re "... and none of them is in the store" 'co\.uk|github\.io|herokuapp|\*\.com' "$(sl allow list 2>&1)"
for w in '*.example.com' 'foo.co.uk' 'foo.github.io'; do
	out=$(sl allow add "$w" 2>&1)
	expect_eq "sluice allow add '$w' is accepted" 0 $?
done
lab_write_conf "allow *.co.uk"
out=$(sl check "$CONF" 2>&1)
expect_re "a config with allow *.co.uk: sluice check refuses it, naming the line and why" \
	"sluice.conf:[0-9]+: allow: bad grant \"\\*\\.co\\.uk\": .*public suffix" "$out"
out=$(hx "$SLUICE_BUILD/sluice-proxy" -t -c "$CONF" 2>&1)
rc=$?
expect_eq "... sluice-proxy -t refuses it too" "1 1" \
	"$([ $rc -ne 0 ] && echo 1 || echo 0) $(printf '%s' "$out" | grep -c 'public suffix')"
lab_write_conf "allow *.example.com" "allow foo.co.uk" "allow *.foo.co.uk"
out=$(sl check "$CONF" 2>&1)
expect_eq "a config with *.example.com, foo.co.uk and *.foo.co.uk passes sluice check" 0 $?
out=$(hx "$SLUICE_BUILD/sluice-proxy" -t -c "$CONF" 2>&1)
expect_eq "... and sluice-proxy -t" 0 $?
lab_done
