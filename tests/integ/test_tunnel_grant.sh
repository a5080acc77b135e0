#!/bin/bash
# `allow HOST:PORT tunnel`: with interception on, a CONNECT to a name and
# port a tunnel grant names is relayed raw from its 200, decided by the
# grant before a byte from either side (the origin here speaks first: a
# banner), never by waiting for the client's; a plain grant for that port
# never implies it (the CONNECT is intercepted, TLS expected); `sluice check`
# refuses a tunnel grant without a port; `sluice allow add HOST:PORT tunnel`
# stores one and the proxy takes it at its next reload.
source "$(dirname "$0")/lab.sh"
lab_up
lab_write_conf "intercept on" "allow good.test:9002 tunnel" "allow other.test:9002"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy

# banner HOST:PORT: CONNECT through the proxy, send nothing, print what comes back within 3 s
banner() {
	hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" "$1" <<'PYEOF' 2>&1
import os, socket, sys
sys.path.insert(0, os.environ["INTEG_DIR"]); from raw import tunnel, read_line
s, head, status = tunnel(sys.argv[1], sys.argv[2], sys.argv[3], timeout=10)
if status != 200:
    print("status", status); sys.exit()
print("got %r" % read_line(s, 3))
PYEOF
}

out=$(banner good.test:9002)
expect_eq "tunnel grant: the origin's banner reaches a client that sent nothing" "got b'banner\\n'" "$out"
wait_log 3 kind=tunnel host=good.test port=9002
expect_eq "... one tunnel row, allowed, status 200" "tunnel allow 200" \
	"$(logq kind=tunnel host=good.test port=9002 --field kind) $(logq kind=tunnel host=good.test port=9002 --field decision) $(logq kind=tunnel host=good.test port=9002 --field status)"
expect_re "... its detail says the tunnel grant relayed it raw" "tunnel grant" "$(logq kind=tunnel host=good.test port=9002 --field detail)"

out=$(banner other.test:9002)
expect_eq "plain grant on the same port: intercepted, so no banner (TLS expected)" "got b''" "$out"
out=$(banner good.test:9000)
# (refused to a name sluice may intercept: the refusal's page, its 200 and a TLS
# handshake expected; a client that waits for a banner is closed within 2 s)
expect_eq "a tunnel grant names one port: good.test:9000 gets no banner" "got b''" "$out"
wait_log 3 host=good.test port=9000
expect_eq "... it is refused: its row" "refuse not-granted" \
	"$(logq host=good.test port=9000 --field decision) $(logq host=good.test port=9000 --field reason)"

# sluice check
printf 'intercept on\nallow good.test tunnel\n' >"$LAB_DIR/bad.conf"
out=$(hx "$SLUICE_BUILD/sluice" -c "$LAB_DIR/bad.conf" check 2>&1); rc=$?
expect_eq "check: a tunnel grant without a port is an error" 1 "$rc"
expect_re "... naming file:line and why" "bad.conf:2: .*tunnel.*port" "$out"
printf 'allow good.test:22 tunnel\nallow *.wild.test:22 tunnel for=user\n' >"$LAB_DIR/good.conf"
out=$(hx "$SLUICE_BUILD/sluice" -c "$LAB_DIR/good.conf" check 2>&1)
expect_eq "check: tunnel grants with a port pass" 0 "$?"

# the CLI
out=$(sl allow add third.test tunnel 2>&1); rc=$?
expect_eq "allow add: a tunnel grant without a port is a usage error" 2 "$rc"
expect_re "... saying why" "tunnel.*port" "$out"
r0=$(reloads)
out=$(sl allow add third.test:9002 tunnel 2>&1)
expect_eq "allow add HOST:PORT tunnel" 0 "$?"
expect_re "... stored with its tunnel word" "^third.test:9002 permanent [0-9]+ tunnel$" "$(grep third.test "$STATE/grants")"
expect_re "... listed as a tunnel" "third.test:9002 .*tunnel" "$(sl allow list 2>&1)"
wait_until 10 reloaded_past "$r0" || not_ok "proxy reloads after allow add"
out=$(banner third.test:9002)
expect_eq "... and the proxy relays it raw after its reload" "got b'banner\\n'" "$out"

# a reload that takes the tunnel word away closes the raw tunnels it served,
# although a plain grant still allows the name and port (a review's finding):
# one to the silent origin (:9001, its row still to come), one to the banner
# origin that shut its side (:9002, its row written, the client still sending)
r0=$(reloads)
for p in 9001 9002; do sl allow add third.test:$p tunnel >/dev/null 2>&1; sl allow add third.test:$p >/dev/null 2>&1; done
wait_until 10 reloaded_past "$r0" || not_ok "proxy reloads after allow add"
# raw_held PORT: a raw tunnel held open, sending a byte every 0.2 s until the proxy closes it
raw_held() {
	hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" "third.test:$1" "$LAB_DIR/raw$1.ready" <<'PYEOF' >"$LAB_DIR/raw$1.out" 2>&1
import os, socket, sys, time
sys.path.insert(0, os.environ["INTEG_DIR"]); from raw import tunnel, read_line
s, head, status = tunnel(sys.argv[1], sys.argv[2], sys.argv[3], timeout=10)
got = read_line(s, 1)
# raw bytes, not a ClientHello: an intercepted CONNECT would close on them
s.sendall(b"raw bytes\n")
time.sleep(1)
try:
    s.sendall(b"still raw\n")
    up = "open"
except OSError:
    up = "closed at once"
open(sys.argv[4], "w").write("%d %r %s\n" % (status, got, up))
t0 = time.time()
while time.time() - t0 < 15:
    try:
        s.send(b"x")
    except OSError:
        print("closed"); sys.exit()
    time.sleep(0.2)
print("still open after 15 s")
PYEOF
}
raw_held 9001 & p1=$!
raw_held 9002 & p2=$!
LAB_PIDS+=("$p1" "$p2")
wait_until 10 test -s "$LAB_DIR/raw9001.ready" -a -s "$LAB_DIR/raw9002.ready"
expect_eq "a tunnel grant beside a plain one: raw tunnels up (the control)" \
	"200 b'' open|200 b'banner\\n' open" \
	"$(cat "$LAB_DIR/raw9001.ready" 2>/dev/null | tr -d '\n')|$(cat "$LAB_DIR/raw9002.ready" 2>/dev/null | tr -d '\n')"
r0=$(reloads)
sl allow rm third.test:9001 tunnel >/dev/null 2>&1
sl allow rm third.test:9002 tunnel >/dev/null 2>&1
wait_until 10 reloaded_past "$r0" || not_ok "proxy reloads after allow rm (tunnel)"
wait "$p1" "$p2"
expect_eq "allow rm HOST:PORT tunnel closes the raw tunnels it served, the half-closed one too" \
	"closed closed" "$(cat "$LAB_DIR/raw9001.out") $(cat "$LAB_DIR/raw9002.out")"
wait_log 5 kind=tunnel host=third.test port=9001 reason=revoked
expect_eq "... the open one's row says revoked" "refuse revoked" \
	"$(logq kind=tunnel host=third.test port=9001 reason=revoked --field decision) $(logq kind=tunnel host=third.test port=9001 reason=revoked --field reason)"
expect_eq "proxy alive" yes "$(proxy_alive && echo yes || echo no)"
lab_done
