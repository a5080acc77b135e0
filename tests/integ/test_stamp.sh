#!/bin/bash
# Stamps, the proxy's side: a valid Sluice-Stamp on a connection's first head
# binds the connection (every later request inherits it, and each row names
# it); a bad MAC, several stamps or none leave it unattributed; a replayed
# stamp is refused, also after a proxy restart; no stamp header ever reaches an origin; keys rotate with
# a grace period. (sluice-forward, which writes stamps, is the next step.)
source "$(dirname "$0")/lab.sh"
lab_up
lab_write_conf "allow good.test"
expect_eq "sluice key init creates the key file" 0 "$(sl key init >/dev/null 2>&1; echo $?)"
expect_eq "... root-only (0600)" 600 "$(stat -c %a "$STATE/stamp.key")"
expect_eq "... and a second init is refused" 1 "$(sl key init >/dev/null 2>&1; echo $?)"
lab_run_proxy

KEY=$STATE/stamp.key
BOOT=00112233aabbccdd
stamp() { "$PY" "$INTEG_DIR/stamp.py" "$KEY" "$@"; }
H='Host: good.test\r\n'

# a valid stamp, then a keep-alive request on the same connection
st=$(stamp 10.88.0.5 podman "$BOOT" 1)
out=$(raw "GET http://good.test/echo?s1 HTTP/1.1\r\n${H}Sluice-Stamp: $st\r\n\r\nGET http://good.test/echo?s2 HTTP/1.1\r\n${H}sluice-stamp: forged\r\nConnection: close\r\n\r\n" --responses 2)
expect_eq "a stamped connection is served: 200,200" "200,200" "$(meta_statuses "$out")"
expect_eq "the first row names the stamp: who, src, net, boot, seq, kid" \
	"10.88.0.5@podman 10.88.0.5 podman $BOOT 1 1" \
	"$(for f in who src net boot seq kid; do logq 'path~s1' --field $f; done | tr '\n' ' ' | sed 's/ $//')"
expect_eq "the keep-alive request inherits it" "10.88.0.5@podman 1" \
	"$(logq 'path~s2' --field who) $(logq 'path~s2' --field seq)"
# every request row the origin recorded, not just the last (inetq --json shows one)
stamps_seen() { grep '/echo?s' "$LAB_DIR/inet.jsonl" | grep -ci 'sluice-stamp'; }
expect_eq "the origin recorded both requests" 2 "$(inetq ev=req 'line~/echo?s')"
expect_eq "no stamp header reached the origin (the stamp nor a later forgery)" 0 "$(stamps_seen)"

# replay: the same boot and sequence on a new connection
out=$(raw "GET http://good.test/echo?s3 HTTP/1.1\r\n${H}Sluice-Stamp: $st\r\nConnection: close\r\n\r\n")
expect_refusal "a replayed stamp (same boot and sequence)" "$out" 403 stamp-replay
expect_none "... and the origin never saw it" inet 'line~s3'
# the window outlives the proxy: killed with -9 and started again, it still refuses
kill -9 "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null
PROXY_PID=
lab_run_proxy
out=$(raw "GET http://good.test/echo?s3b HTTP/1.1\r\n${H}Sluice-Stamp: $st\r\nConnection: close\r\n\r\n")
expect_refusal "a stamp replayed after the proxy was killed and restarted" "$out" 403 stamp-replay
expect_eq "... STATE/stamp.seen is root-only (0600)" 600 "$(stat -c %a "$STATE/stamp.seen")"
st3c=$(stamp 10.88.0.5 podman "$BOOT" 100)
out=$(raw "GET http://good.test/echo?s3c HTTP/1.1\r\n${H}Sluice-Stamp: $st3c\r\nConnection: close\r\n\r\n")
expect_eq "... while a fresh sequence of the same boot is served" "200 10.88.0.5@podman" \
	"$(meta_status "$out") $(logq 'path~s3c' --field who)"

# a bad MAC, or two stamps: unattributed, still served (behaviour unchanged)
bad=$(stamp 10.88.0.6 podman "$BOOT" 2 --tamper)
out=$(raw "GET http://good.test/echo?s4 HTTP/1.1\r\n${H}Sluice-Stamp: $bad\r\nConnection: close\r\n\r\n")
expect_eq "a stamp with a bad MAC: served" 200 "$(meta_status "$out")"
expect_eq "... and unattributed, no stamp fields" "unattributed null" \
	"$(logq 'path~s4' --field who) $(logq 'path~s4' --field src)"
two1=$(stamp 10.88.0.7 podman "$BOOT" 3)
two2=$(stamp 10.88.0.8 podman "$BOOT" 4)
out=$(raw "GET http://good.test/echo?s5 HTTP/1.1\r\n${H}Sluice-Stamp: $two1\r\nSLUICE-STAMP: $two2\r\nConnection: close\r\n\r\n")
expect_eq "two stamp headers (valid ones even): unattributed" "200 unattributed" \
	"$(meta_status "$out") $(logq 'path~s5' --field who)"
out=$(raw "GET http://good.test/echo?s6 HTTP/1.1\r\n${H}Connection: close\r\n\r\n")
expect_eq "no stamp: unattributed" "200 unattributed" "$(meta_status "$out") $(logq 'path~s6' --field who)"
expect_eq "the origin recorded the two served ones (the control)" "1 1" "$(inetq 'line~/echo?s5') $(inetq 'line~/echo?s6')"
expect_eq "no stamp header of any of these reached the origin" 0 "$(stamps_seen)"

# a CONNECT tunnel's row carries the stamp too
st7=$(stamp 10.88.0.9 podman "$BOOT" 7)
out=$(raw "CONNECT good.test:443 HTTP/1.1\r\nHost: good.test:443\r\nSluice-Stamp: $st7\r\n\r\n" --shut)
wait_log 3 kind=tunnel who=10.88.0.9@podman
expect_eq "a stamped CONNECT's tunnel row names the stamp" 1 "$(logq kind=tunnel who=10.88.0.9@podman)"

# rotation: the old key verifies during its grace, the new one too
old=$(stamp 10.88.0.10 podman "$BOOT" 8)
expect_eq "sluice key rotate" 0 "$(sl key rotate --grace 600 >/dev/null 2>&1; echo $?)"
sleep 1.5 # the proxy picks the key file up within a second
new=$(stamp 10.88.0.11 podman "$BOOT" 9)
out=$(raw "GET http://good.test/echo?s8 HTTP/1.1\r\n${H}Sluice-Stamp: $old\r\nConnection: close\r\n\r\n")
expect_eq "a stamp under the previous key verifies in its grace period" 10.88.0.10@podman \
	"$(logq 'path~s8' --field who)"
out=$(raw "GET http://good.test/echo?s9 HTTP/1.1\r\n${H}Sluice-Stamp: $new\r\nConnection: close\r\n\r\n")
expect_eq "a stamp under the new key (kid 2) verifies" "10.88.0.11@podman 2" \
	"$(logq 'path~s9' --field who) $(logq 'path~s9' --field kid)"
cp "$KEY" "$LAB_DIR/key.before"
expect_eq "sluice key rotate --grace 0 drops the old key" 0 "$(sl key rotate --grace 0 >/dev/null 2>&1; echo $?)"
sleep 1.5
# signed with kid 2 from the saved copy: a correct MAC under a key the proxy no longer has
old2=$("$PY" "$INTEG_DIR/stamp.py" "$LAB_DIR/key.before" 10.88.0.12 podman "$BOOT" 10 --kid 2)
expect_re "... (the stamp under kid 2 was written)" '^v=1; kid=2; .*mac=[0-9a-f]{64}$' "$old2"
out=$(raw "GET http://good.test/echo?s10 HTTP/1.1\r\n${H}Sluice-Stamp: $old2\r\nConnection: close\r\n\r\n")
expect_eq "... after which a stamp under it is unattributed" unattributed "$(logq 'path~s10' --field who)"
expect_eq "sluice key list names kid 3 as current, without key bytes" "3 current" \
	"$(sl key list 2>&1 | awk '$2=="current"{print $1, $2}')"
expect_eq "... and prints no hex key" 0 "$(sl key list 2>&1 | grep -cE '[0-9a-f]{64}')"
lab_done
