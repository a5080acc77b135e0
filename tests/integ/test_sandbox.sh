#!/bin/bash
# integ: group podman (runs containers or snapshots all of the machine's: one such file at a time)
# The sandbox lab: real podman containers in a "vm" namespace reach the proxy
# only through sluice-forward. Bridged containers get rows with their own
# addresses (and, through engine snapshots, their names); a --network host
# container and a plain vm process are attributed by cgroup through the
# second listener; forged stamps never reach an origin; a non-canonical head
# is refused; a container or vm process bypassing the forwarder is refused by
# sluice's own walls in the vm (the sandbox profile's bridge chains and the
# guard profile, which admits only the forwarder's marked packets), and
# each refusal is logged; with the forwarder dead, nothing goes out.
source "$(dirname "$0")/lab.sh"
lab_up
lab_sandbox_up
lab_start_stamped_proxy "listen $SBX_PROXY" "allow good.test" "allow other.test"
lab_sandbox_forward

c1=sbx-a-$$
c2=sbx-b-$$
ch=sbx-h-$$
sbx_ctr "$c1" --network bridge -- sleep 300 >/dev/null || lab_bail "podman run $c1"
sbx_ctr "$c2" --network bridge --label com.docker.compose.project=demo -- sleep 300 >/dev/null ||
	lab_bail "podman run $c2"
a1=$(lab_ctr_addr "$c1")
a2=$(lab_ctr_addr "$c2")
echo "# containers: $c1 $a1, $c2 $a2"
[ -n "$a1" ] && [ -n "$a2" ] && [ "$a1" != "$a2" ] || lab_bail "two bridged containers with their own addresses" "$a1 $a2"
sl engine snapshot --net podman >/dev/null || not_ok "sluice engine snapshot"

# control: without the table a bridged container reaches the proxy directly
code=$(sbx_exec "$c1" curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x "http://$SBX_PROXY" \
	http://good.test/bypass0 2>&1; true)
expect_eq "control: without the vm's table a container can reach the proxy directly" 200 "$code"
expect_eq "... unattributed" unattributed "$(logq path=/bypass0 --field who)"
lab_sandbox_wall

# bridged containers through the forwarder: curl, python, node
ccurl() {
	local c=$1
	shift
	sbx_exec "$c" curl -sS --max-time 10 -x "http://$SBX_FWD" "$@"
}
expect_eq "container A (curl) through the forwarder: 200" 200 \
	"$(ccurl "$c1" -o /dev/null -w '%{http_code}' http://good.test/a1 2>&1)"
expect_eq "container B (curl) through the forwarder: 200" 200 \
	"$(ccurl "$c2" -o /dev/null -w '%{http_code}' http://other.test/b1 2>&1)"
expect_eq "... A's row carries A's own address" "$a1@podman $a1 podman" \
	"$(logq path=/a1 --field who) $(logq path=/a1 --field src) $(logq path=/a1 --field net)"
expect_eq "... B's row carries B's own address" "$a2@podman" "$(logq path=/b1 --field who)"
out=$(sbx_exec "$c1" python3 -c '
import sys, urllib.request
o = urllib.request.build_opener(urllib.request.ProxyHandler({"http": "http://'"$SBX_FWD"'"}))
print(o.open("http://good.test/py1", timeout=10).status)' 2>&1)
expect_eq "container A (python urllib): 200" 200 "$out"
out=$(sbx_exec "$c2" node -e '
const http = require("http");
http.get({host: "10.88.0.1", port: 3128, path: "http://other.test/node1", headers: {Host: "other.test"}},
  r => { console.log(r.statusCode); r.resume(); }).on("error", e => console.log(e.code));' 2>&1)
expect_eq "container B (node http): 200" 200 "$out"
expect_eq "... python and node rows are attributed to A and B" "$a1@podman $a2@podman" \
	"$(logq path=/py1 --field who) $(logq path=/node1 --field who)"
out=$(ccurl "$c1" -o /dev/null -w '%{http_code}' http://refused.test/r1 2>&1)
expect_eq "a host without a grant is refused (403)" 403 "$out"

# names at read time
sl engine snapshot --net podman >/dev/null
out=$(sl log --who "$c1")
expect_re "sluice log --who A lists A's requests" "/a1" "$out"
expect_not_re "... and none of B's" "/b1|/node1" "$out"
out=$(sl log --by-host)
expect_re "sluice log --by-host names A for good.test" "$c1" "$(printf '%s\n' "$out" | grep -A3 good.test)"
expect_re "... and B (with its compose project) for other.test" "$c2.*demo|demo.*$c2" \
	"$(printf '%s\n' "$out" | grep -A3 other.test)"
expect_re "sluice log --refused names A and the refused host" "$c1" \
	"$(sl log --refused | grep refused.test)"

# forged stamps written by a container: stripped, the origin sees none
fake="v=1; kid=1; src=10.9.9.9; net=evil; boot=0000000000000000; seq=1; mac=$(printf '0%.0s' $(seq 64))"
out=$(ccurl "$c1" -H "Sluice-Stamp: $fake" -H "sluice-STAMP: x" -H "SLUICE-STAMP: $fake" \
	http://good.test/echo?forged 2>&1)
expect_eq "stamps a container wrote (three, odd case) never reach the origin" 0 \
	"$(grep 'echo?forged' "$LAB_DIR/inet.jsonl" | grep -ci 'sluice-stamp')"
expect_eq "... the origin did get the request" 1 "$(inetq ev=req 'line~forged')"
expect_eq "... and the row names the forwarder's stamp for A" "$a1@podman" "$(logq 'path~forged' --field who)"

# a non-canonical first head from a container: 400 from the forwarder, no row
rows=$(logq)
out=$(sbx_exec "$c1" python3 -c '
import socket
s = socket.create_connection(("10.88.0.1", 3128), timeout=5)
s.sendall(b"GET http://good.test/lf HTTP/1.1\nHost: good.test\n\n")
print(s.recv(100).split(b"\r\n")[0].decode())' 2>&1)
expect_re "a bare-LF head from a container is refused by the forwarder (400)" '^HTTP/1.1 400' "$out"
sleep 0.3
expect_eq "... and never reached the proxy" "$rows" "$(logq)"
lab_proxy_control "... and never reached the proxy"

# bypassing the forwarder: refused by the walls, at once, and logged
lab_denied_start "$VNS" "$SBX_LOG"
t0=$(now)
out=$(sbx_exec "$c1" curl -s -o /dev/null -w '%{http_code} %{exitcode}' --max-time 5 \
	-x "http://$SBX_PROXY" http://good.test/bypass1 2>&1; true)
expect_eq "a bridged container going to the proxy directly is refused by the walls" "000 7" "$out"
expect_lt "... at once" 1.5 "$(elapsed "$t0")"
out=$(vx curl -s -o /dev/null -w '%{http_code} %{exitcode}' --max-time 5 \
	-x "http://$SBX_PROXY" http://good.test/bypass2 2>&1; true)
expect_eq "a vm process going to the proxy directly is refused by the walls" "000 7" "$out"
expect_eq "... neither reached the proxy" 0 "$(logq 'path~bypass[12]')"
lab_proxy_control "... neither reached the proxy"

# the second listener: the vm's own processes and --network host containers, by cgroup
sbx_ctr "$ch" --network host -- sleep 300 >/dev/null || lab_bail "podman run --network host"
chid=$(podman inspect -f '{{.Id}}' "$ch")
sl engine snapshot --net podman >/dev/null
out=$(sbx_exec "$ch" curl -sS -o /dev/null -w '%{http_code}' --max-time 10 -x "http://$SBX_OWN" \
	http://good.test/hostnet 2>&1)
expect_eq "a --network host container through the second listener: 200" 200 "$out"
expect_eq "... attributed by its cgroup to that container" "container:$chid" \
	"$(logq path=/hostnet --field as)"
expect_re "... and sluice log --who names it" "/hostnet" "$(sl log --who "$ch")"
out=$(sbx_exec "$ch" curl -s -o /dev/null -w '%{http_code} %{exitcode}' --max-time 5 \
	-x "http://$SBX_PROXY" http://good.test/bypass3 2>&1; true)
expect_eq "... going to the proxy directly it is refused by the walls" "000 7" "$out"
out=$(vx curl -sS -o /dev/null -w '%{http_code}' --max-time 10 -x "http://$SBX_OWN" \
	http://good.test/vmuser 2>&1)
expect_eq "a plain vm process through the second listener: 200" 200 "$out"
expect_eq "... attributed to the sandbox user" user "$(logq path=/vmuser --field as)"
d=$(lab_denied_stop)
px=${SBX_PROXY%:*}
# (both walls' forward chains refuse it; whichever runs first logs it)
expect_re "the bridged container's direct attempt is logged (guard forwarded or sandbox routed)" \
	"\"profile\":\"(guard|sandbox)\",\"reason\":\"(forwarded|routed)\",.*\"src\":\"$a1\".*\"dst\":\"$px\",\"dport\":${SBX_PROXY#*:}" "$d"
expect_re "the vm process's and host-network container's are logged (guard direct)" \
	"\"profile\":\"guard\",\"reason\":\"direct\",\"uid\":0,.*\"dst\":\"$px\",\"dport\":${SBX_PROXY#*:}" "$d"
expect_eq "... two of them" 2 "$(grep -c '"reason":"direct"' <<<"$d")"
expect_eq "... bridged rows carry no cgroup principal" null "$(logq path=/a1 --field as)"

# the forwarder killed: refused at once, nothing leaves unstamped
rows=$(logq)
kill "$FWD_PID"
wait "$FWD_PID" 2>/dev/null
t0=$(now)
out=$(ccurl "$c1" -o /dev/null -w '%{http_code} %{exitcode}' http://good.test/dead 2>/dev/null; true)
expect_eq "with the forwarder dead a container is refused" "000 7" "$out"
expect_lt "... at once" 1.5 "$(elapsed "$t0")"
out=$(sbx_exec "$c1" curl -s -o /dev/null -w '%{http_code} %{exitcode}' --max-time 5 \
	-x "http://$SBX_PROXY" http://good.test/dead2 2>&1; true)
expect_eq "... and going around it is still refused" "000 7" "$out"
expect_eq "... nothing reached the proxy" "$rows" "$(logq)"
lab_proxy_control "... nothing reached the proxy"
lab_done
