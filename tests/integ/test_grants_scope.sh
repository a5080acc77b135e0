#!/bin/bash
# integ: group podman (runs containers or snapshots all of the machine's: one such file at a time)
# Grants scoped to who asked (`sluice allow add GRANT --for WHO`, the
# config's `allow GRANT for=WHO`): real podman containers in the sandbox lab
# reach the proxy only through sluice-forward. A grant for one bridged
# container's ADDR@NET serves it and refuses its neighbour on the same
# bridge; a grant for a --network host container (by name, looked up in the
# engine snapshot, stored as container:<id>) serves it through the cgroup
# listener and refuses the other host container; a config grant for=user
# serves a plain vm process and no container; an unattributed connection
# gets no scoped grant. Each refusal names the command that would grant it
# to the principal that asked; each allowed row names the grant and scope.
source "$(dirname "$0")/lab.sh"
lab_up
lab_sandbox_up
lab_start_stamped_proxy "listen $SBX_PROXY" "allow other.test for=user"
lab_sandbox_forward

c1=scope-a-$$ c2=scope-b-$$ h1=scope-h1-$$ h2=scope-h2-$$
sbx_ctr "$c1" --network bridge -- sleep 300 >/dev/null || lab_bail "podman run $c1"
sbx_ctr "$c2" --network bridge -- sleep 300 >/dev/null || lab_bail "podman run $c2"
sbx_ctr "$h1" --network host -- sleep 300 >/dev/null || lab_bail "podman run $h1"
sbx_ctr "$h2" --network host -- sleep 300 >/dev/null || lab_bail "podman run $h2"
a1=$(lab_ctr_addr "$c1")
a2=$(lab_ctr_addr "$c2")
id1=$(podman inspect -f '{{.Id}}' "$h1")
id2=$(podman inspect -f '{{.Id}}' "$h2")
[ -n "$a1" ] && [ -n "$a2" ] && [ "$a1" != "$a2" ] || lab_bail "two bridged containers" "$a1 $a2"
[ ${#id1} = 64 ] && [ ${#id2} = 64 ] || lab_bail "the host containers' ids" "$id1 $id2"
sl engine snapshot --net podman >/dev/null || lab_bail "sluice engine snapshot"

# bcurl CTR URL: a bridged container through the forwarder; hcurl CTR URL: a
# host-network container through the cgroup listener; vcurl URL: a vm process there
bcurl() { sbx_exec "$1" curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "http://$SBX_FWD" "$2" 2>&1; true; }
hcurl() { sbx_exec "$1" curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "http://$SBX_OWN" "$2" 2>&1; true; }
vcurl() { vx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "http://$SBX_OWN" "$1" 2>&1; true; }
body() { sbx_exec "$1" curl -s --max-time 10 -x "http://$2" "$3" 2>&1; true; }
code_is() { [ "$(bcurl "$2" "$3")" = "$1" ]; }

# --- before any grant: both bridged containers refused (the control)
expect_eq "no grant: A refused" 403 "$(bcurl "$c1" http://good.test/none-a)"
expect_eq "no grant: B refused" 403 "$(bcurl "$c2" http://good.test/none-b)"

# --- a grant for A's address on the bridge
out=$(sl allow add good.test --for "$a1@podman" 2>&1)
expect_eq "sluice allow add good.test --for A's ADDR@NET" "added good.test for $a1@podman permanent" "$out"
if wait_until 3 code_is 200 "$c1" http://good.test/wait-a; then ok "A is served within 3 s, no restart"; else
	not_ok "A is served within 3 s, no restart" "$(bcurl "$c1" http://good.test/wait-a)"; fi
expect_eq "A: 200" 200 "$(bcurl "$c1" http://good.test/s-a)"
expect_eq "... the origin saw A's request" 1 "$(inetq ev=req 'line~/s-a ' --count)"
expect_eq "... A's row names the grant and the scope that served it" \
	"allow granted good.test (permanent, for $a1@podman)" \
	"$(logq path=/s-a --field decision) $(logq path=/s-a --field reason) $(logq path=/s-a --field grant)"
expect_eq "B, its neighbour on the same bridge: 403" 403 "$(bcurl "$c2" http://good.test/s-b)"
expect_none "... B's request never reached the origin" inet 'line~/s-b '
expect_eq "... B's row: refused, not-granted" "refuse not-granted $a2@podman" \
	"$(logq path=/s-b --field decision) $(logq path=/s-b --field reason) $(logq path=/s-b --field who)"
expect_re "... B's refusal names the commands that grant it to B: by its id, or by hand" \
	"^sluice: good\\.test is granted only to other principals; to grant it to this one run: sluice allow approve [0-9a-f]{16} \\(or: sluice allow add good\\.test --for $a2@podman\\)\$" \
	"$(body "$c2" "$SBX_FWD" http://good.test/s-b2)"
expect_eq "a host container is not A either: 403" 403 "$(hcurl "$h1" http://good.test/s-h0)"

# --- a grant for a host container, by its name
out=$(sl allow add good.test --for "$h1" 2>"$LAB_DIR/add.err")
expect_eq "--for NAME is looked up in the engine snapshot and stored as container:<id>" \
	"--for $h1: container:$id1
added good.test for container:$id1 permanent" "$out"
expect_eq "... with no note: it has no bridge address" "" "$(cat "$LAB_DIR/add.err")"
expect_re "... the store holds the id, not the name" "^good\\.test permanent [0-9]+ for=container:$id1\$" \
	"$(grep "container:" "$STATE/grants")"
hcode_is() { [ "$(hcurl "$2" "$3")" = "$1" ]; }
wait_until 3 hcode_is 200 "$h1" http://good.test/wait-h1 || not_ok "H1 is served within 3 s" \
	"$(hcurl "$h1" http://good.test/wait-h1b)"
expect_eq "host container H1 through the cgroup listener: 200" 200 "$(hcurl "$h1" http://good.test/s-h1)"
expect_eq "... its row is as=container:<id> and names that scope" \
	"container:$id1 good.test (permanent, for container:$id1)" \
	"$(logq path=/s-h1 --field as) $(logq path=/s-h1 --field grant)"
expect_eq "host container H2: 403" 403 "$(hcurl "$h2" http://good.test/s-h2)"
expect_none "... H2's request never reached the origin" inet 'line~/s-h2 '
expect_re "... its refusal names --for container:<H2's id>" \
	"sluice allow add good\\.test --for container:$id2\\)\$" "$(body "$h2" "$SBX_OWN" http://good.test/s-h2b)"
expect_eq "A is still served by its own grant" 200 "$(bcurl "$c1" http://good.test/s-a2)"
expect_eq "B is still refused" 403 "$(bcurl "$c2" http://good.test/s-b3)"

# --- a bridged container by name: stored as its id, with a note that its
# connections on the bridge carry its address, not its id
out=$(sl allow add good.test --for "$c2" 2>"$LAB_DIR/add.err")
expect_re "--for a bridged container's name: stored as its id" "added good\\.test for container:[0-9a-f]{64} permanent" "$out"
expect_re "... and a note saying its bridge connections need ADDR@NET" \
	"note: $c2 has addresses on network podman: .*name it by ADDR@NET" "$(cat "$LAB_DIR/add.err")"
expect_eq "... so B is still refused" 403 "$(bcurl "$c2" http://good.test/s-b4)"
expect_eq "--for a name no snapshot holds is refused" 1 \
	"$(sl allow add good.test --for no-such-ctr-$$ >/dev/null 2>"$LAB_DIR/add.err"; echo $?)"
expect_re "... saying where it looked" "no container named no-such-ctr-$$ in the engine's latest snapshots" \
	"$(cat "$LAB_DIR/add.err")"
expect_eq "--for unattributed is refused" 1 "$(sl allow add good.test --for unattributed >/dev/null 2>&1; echo $?)"
expect_eq "--for a bad address is refused" 1 "$(sl allow add good.test --for 10.0.0.300@podman >/dev/null 2>&1; echo $?)"

# --- the config's for=user: a vm process, never a container
expect_eq "config allow other.test for=user: a vm process (as=user) is served" 200 "$(vcurl http://other.test/u-vm)"
expect_eq "... its row names the config grant and its scope" "user other.test (config, for user)" \
	"$(logq path=/u-vm --field as) $(logq path=/u-vm --field grant)"
expect_eq "... a bridged container is refused" 403 "$(bcurl "$c1" http://other.test/u-a)"
expect_eq "... a host container is refused" 403 "$(hcurl "$h1" http://other.test/u-h1)"

# --- unattributed: straight to the proxy, no stamp
out=$(hx curl -s --max-time 10 -x "http://$SBX_PROXY" http://good.test/unattr 2>&1)
expect_re "an unattributed connection gets no scoped grant, and is told why" \
	"^sluice: good\\.test is granted only to the principals its grants name, and this connection has no stamp; to grant it to every connection run: sluice allow approve [0-9a-f]{16} \\(or: sluice allow add good\\.test\\)\$" "$out"
expect_eq "... its row" "refuse unattributed" "$(logq path=/unattr --field decision) $(logq path=/unattr --field who)"

# --- list, rm
out=$(sl allow list)
expect_re "allow list shows each grant's scope" "^good\\.test +permanent .* $a1@podman\$" "$out"
expect_re "... and the config grant's" "^other\\.test +config .* user\$" "$out"
idc2=$(podman inspect -f '{{.Id}}' "$c2")
out=$(sl allow list --json | "$PY" -c '
import json, sys
print(" ".join(sorted(",".join(g["for"]) for g in json.load(sys.stdin))))')
expect_eq "allow list --json: each grant's for" \
	"$(printf '%s\n' "$a1@podman" "container:$idc2" "container:$id1" user | LC_ALL=C sort | xargs)" "$out"
expect_eq "rm without --for when only scoped grants exist: refused" 1 \
	"$(sl allow rm good.test >/dev/null 2>"$LAB_DIR/rm.err"; echo $?)"
expect_re "... naming the scopes there are" "the store grants it for: $a1@podman; container:$id1; container:$idc2" "$(cat "$LAB_DIR/rm.err")"
expect_eq "rm --for A's address" "removed good.test for $a1@podman" "$(sl allow rm good.test --for "$a1@podman" 2>&1)"
if wait_until 3 code_is 403 "$c1" http://good.test/rm-a; then ok "A is refused again within 3 s"; else
	not_ok "A is refused again within 3 s" "$(bcurl "$c1" http://good.test/rm-a)"; fi
expect_eq "... H1 is still served" 200 "$(hcurl "$h1" http://good.test/rm-h1)"

# --- approve by the refusal's id: exactly that host and port, for the principal that asked
out=$(sbx_exec "$c2" curl -si --max-time 10 -x "http://$SBX_FWD" http://good.test/ap-b 2>&1)
ps=$(header_of "$out" Proxy-Status)
expect_re "a refusal's Proxy-Status details carry its id" \
	'^sluice; error=http_request_denied; details="not-granted id=[0-9a-f]{16}: ' "$ps"
rid=$(printf '%s' "$ps" | sed -n 's/.*id=\([0-9a-f]\{16\}\).*/\1/p')
expect_eq "... the same id as its row's" "$rid" "$(logq path=/ap-b --field refusal)"
expect_re "... and its body's hint" "sluice allow approve $rid " "$(body_of "$out")"
expect_re "sluice log --refused names approving B's last refusal as the way to grant it" \
	"sluice allow approve $rid\$" "$(sl log --refused | grep "^$c2 .*good\\.test ")"
out=$(sl allow approve "$rid" --yes 2>&1)
expect_re "sluice allow approve ID: once (15 min), for B's ADDR@NET" \
	"^refusal $rid of [0-9T:.-]+Z: $a2@podman
added good\\.test for $a2@podman once, expires in 15m0s\$" "$out"
if wait_until 3 code_is 200 "$c2" http://good.test/ap-b2; then ok "B is served within 3 s of the approval"; else
	not_ok "B is served within 3 s of the approval" "$(bcurl "$c2" http://good.test/ap-b2)"; fi
expect_eq "... its row names the approved grant" "good.test (once, for $a2@podman)" "$(logq path=/ap-b2 --field grant)"
expect_eq "... A is not: the approval was for B alone" 403 "$(bcurl "$c1" http://good.test/ap-a)"
expect_eq "approving it again replaces that grant" 0 "$(sl allow approve "$rid" --level permanent --yes >/dev/null 2>&1; echo $?)"
expect_re "... now permanent, still one grant for B" "^good\\.test permanent [0-9]+ for=$a2@podman\$" \
	"$(grep "for=$a2@podman" "$STATE/grants")"
out=$(hx curl -si --max-time 10 -x "http://$SBX_PROXY" http://other.test/ap-u 2>&1)
uid=$(header_of "$out" Proxy-Status | sed -n 's/.*id=\([0-9a-f]\{16\}\).*/\1/p')
out=$(sl allow approve "$uid" --yes 2>&1)
expect_re "approving an unattributed refusal says the grant serves every connection" \
	"^refusal $uid of .*: no stamp, so the grant serves every connection
added other\\.test once, expires in 15m0s\$" "$out"
wait_until 3 code_is 200 "$c1" http://other.test/ap-a2
expect_eq "... so container A is served other.test too" 200 "$(bcurl "$c1" http://other.test/ap-a3)"
old_ts=$(date -u -d '2 days ago' +%Y-%m-%dT%H:%M:%S.000Z)
printf '{"ts":"%s","conn":1,"req":1,"who":"10.88.0.99@podman","src":"10.88.0.99","net":"podman","as":null,"kind":"http","host":"good.test","port":80,"decision":"refuse","reason":"not-granted","refusal":"00000000aaaa"}\n' \
	"$old_ts" >>"$NETLOG"
expect_eq "a refusal more than a day old is not approved" 1 \
	"$(sl allow approve 00000000aaaa --yes >/dev/null 2>"$LAB_DIR/ap.err"; echo $?)"
expect_eq "... saying so, with the command that grants it by hand" \
	"allow: refusal 00000000aaaa is from $old_ts, more than a day ago: approve takes only refusals of the last day; to grant it anyway run: sluice allow add good.test --for 10.88.0.99@podman" \
	"$(cat "$LAB_DIR/ap.err")"
expect_eq "... and nothing was granted for it" 0 "$(grep -c 10.88.0.99 "$STATE/grants")"
expect_eq "an id no row has is refused" 1 "$(sl allow approve 0123456789abcdef --yes >/dev/null 2>"$LAB_DIR/ap.err"; echo $?)"
expect_re "... saying where it looked" "no refusal 0123456789abcdef in $NETLOG" "$(cat "$LAB_DIR/ap.err")"
expect_eq "an id that is not 16 hex digits is a usage error" 2 "$(sl allow approve 12345 --yes >/dev/null 2>&1; echo $?)"

# --- an unscoped grant serves everyone, attributed or not
ucode_is() { [ "$(hx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "http://$SBX_PROXY" "$2")" = "$1" ]; }
sl allow add good.test >/dev/null 2>&1
if wait_until 3 ucode_is 200 http://good.test/all-u; then ok "an unscoped grant: the unattributed connection is served"; else
	not_ok "an unscoped grant: the unattributed connection is served" "$(hx curl -s --max-time 10 -x "http://$SBX_PROXY" http://good.test/all-u)"; fi
expect_eq "... and A, whose own grant is gone" 200 "$(bcurl "$c1" http://good.test/all-a)"
expect_eq "... A's row names the grant with no scope" "good.test (permanent)" "$(logq path=/all-a --field grant)"

lab_ctrs_remove
lab_done
