#!/bin/bash
# WebSocket over HTTP/1.1 Upgrade through sluice-proxy, plain (an
# absolute-form GET with Upgrade) and inside an intercepted CONNECT: the
# handshake is judged like any request and reaches the origin with Upgrade
# and Connection; the 101 is checked (its accept value, a subprotocol the
# client offered); then bytes go both ways, bytes the origin sent with its
# 101 included, and one row (kind ws or wss, status 101) is written when it
# ends. A 101 that does not answer the client's key is a 502; a malformed
# handshake a 400; to a host an inject rule names, the server's messages are
# parsed and a reflected credential masked in them; a reload that drops the
# grant closes an open one. Clients: node's http module and python3-websockets; origins:
# python3-websockets and a raw server (tests/integ/ws_origin.py).
source "$(dirname "$0")/lab.sh"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import websockets' 2>/dev/null ||
	lab_bail "python3-websockets is installed (deps/debian-packages)"
WSPY=/usr/bin/python3
lab_up
lab_tls_origin
T=$LAB_DIR/tls
wslog=$LAB_DIR/ws.jsonl
lab_bg "$INS" "$WSPY" "$INTEG_DIR/ws_origin.py" --log "$wslog" 0.0.0.0:9010
lab_bg "$INS" "$WSPY" "$INTEG_DIR/ws_origin.py" --mode badaccept --log "$wslog" 0.0.0.0:9011
lab_bg "$INS" "$WSPY" "$INTEG_DIR/ws_origin.py" --mode badproto --log "$wslog" 0.0.0.0:9012
lab_bg "$INS" "$WSPY" "$INTEG_DIR/ws_origin.py" --log "$wslog" 0.0.0.0:9013
lab_bg "$INS" "$WSPY" "$INTEG_DIR/ws_origin.py" --mode eager --log "$wslog" 0.0.0.0:9014
lab_bg "$INS" "$WSPY" "$INTEG_DIR/ws_origin.py" --tls "$T/srv.crt" "$T/srv.key" --log "$wslog" \
	203.0.113.13:9444
lab_bg "$INS" "$WSPY" "$INTEG_DIR/ws_origin.py" --tls "$T/srv.crt" "$T/srv.key" --mode badframe \
	--log "$wslog" 203.0.113.13:9445
lab_bg "$INS" "$WSPY" "$INTEG_DIR/ws_origin.py" --tls "$T/srv.crt" "$T/srv.key" --mode splitpong \
	--log "$wslog" 203.0.113.13:9446
for p in 9010 9011 9012 9013 9014; do
	wait_until 10 ix bash -c "</dev/tcp/192.0.2.2/$p" || lab_bail "ws origin on $p did not start"
done
for p in 9444 9445 9446; do
	wait_until 10 ix bash -c "</dev/tcp/203.0.113.13/$p" || lab_bail "TLS ws origin on $p did not start"
done

export SLUICE_LAB_TOKEN=$LAB_TOKEN
lab_write_conf "intercept on" "allow good.test:9010" "allow good.test:9011" "allow good.test:9012" \
	"allow good.test:9014" "allow tls.test:9444" "allow api.test:9444" "allow tok.test:9445" \
	"allow api.test:9446" "inject wsp host=api.test:9446 header=Authorization env=SLUICE_LAB_TOKEN unattributed=yes" \
	"upstream-ca tls.test $T/ca.crt" "upstream-ca api.test $T/ca.crt" "upstream-ca tok.test $T/ca.crt" \
	"inject wsk host=api.test:9444 header=Authorization env=SLUICE_LAB_TOKEN unattributed=yes" \
	"inject wsb host=tok.test:9445 header=X-Key env=SLUICE_LAB_TOKEN unattributed=yes"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
CA=$STATE/ca.crt
wsnode() { hx node "$INTEG_DIR/ws_client.js" "$PROXY_ADDR:$PROXY_PORT" "$@" 2>&1; }
wspy() { hx "$WSPY" "$INTEG_DIR/ws_py.py" "$PROXY_ADDR" "$PROXY_PORT" "$@" 2>&1; }
ws_seen() { grep -c "\"path\": \"$1\"" "$wslog" 2>/dev/null; }

# plain: node's http upgrade, absolute-form
out=$(wsnode ws://good.test:9010/echo)
expect_eq "node: a plain WebSocket through the proxy echoes" "101 hello" "$out"
wait_log 3 kind=ws path~/echo
expect_eq "... its one row says ws, 101, allow" "ws 101 allow" \
	"$(logq kind=ws --field kind) $(logq kind=ws --field status) $(logq kind=ws --field decision)"
expect_eq "... with the frame's bytes each way (11 up: masked; 7 down)" "11 7" \
	"$(logq kind=ws --field up) $(logq kind=ws --field down)"
expect_eq "... and the origin got the handshake with Upgrade and Connection" "websocket Upgrade" \
	"$(grep '"path": "/echo"' "$wslog" | head -1 | "$PY" -c 'import json,sys; h=json.loads(sys.stdin.read())["headers"]; print(h.get("Upgrade"), h.get("Connection"))')"

out=$(wsnode ws://good.test:9014/eager)
expect_eq "bytes the origin sent in the same write as its 101 reach the client" "101 early" "$out"

# inside an intercepted CONNECT: node, then python3-websockets with sock=
out=$(wsnode wss://tls.test:9444/secure "$CA")
expect_eq "node: a WebSocket inside an intercepted CONNECT echoes" "101 hello" "$out"
wait_log 3 kind=wss path=/secure
expect_eq "... its row says wss on tls.test" "wss tls.test 101" \
	"$(logq kind=wss path=/secure --field kind) $(logq kind=wss path=/secure --field host) $(logq kind=wss path=/secure --field status)"
out=$(wspy wss://tls.test:9444/py "$CA" one two three)
expect_eq "python3-websockets (its own CONNECT, sock=): three messages echo" "ok one|two|three" "$out"

# a 101 that does not answer the client's handshake
out=$(wsnode ws://good.test:9011/bad)
expect_eq "a 101 with a wrong Sec-WebSocket-Accept: the client gets a 502" 502 "$out"
expect_eq "... the row says why" "upstream-malformed" "$(logq path~/bad --field reason)"
expect_re "... naming the accept value" "Sec-WebSocket-Accept" "$(logq path~/bad --field detail)"
out=$(wsnode ws://good.test:9012/proto)
expect_eq "a 101 choosing a subprotocol nobody offered: 502" 502 "$out"
expect_re "... the row names the subprotocol" "subprotocol" "$(logq path~/proto --field detail)"

# a malformed handshake never reaches the origin
before=$(ws_seen /nokey)
out=$(raw 'GET http://good.test:9010/nokey HTTP/1.1\r\nHost: good.test:9010\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n')
expect_eq "a handshake without Sec-WebSocket-Key: 400" 400 "$(meta_status "$out")"
expect_re "... saying why" "bad WebSocket handshake: no valid Sec-WebSocket-Key" "$out"
expect_eq "... and the origin never saw it (it logs every handshake: /echo above)" "$before" "$(ws_seen /nokey)"

# an inject rule names the host: the handshake carries the credential, the
# server's messages are parsed and the credential masked in them, same length
stars=$(printf '%*s' ${#LAB_TOKEN} '' | tr ' ' '*')
half=$(( ${#LAB_TOKEN} / 2 ))
out=$(wspy wss://api.test:9444/inj "$CA" hello reflect reflect-big reflect-split)
expect_eq "on an inject host, a reflected credential reaches the client masked: echo, one message, 140 KB, two fragments" \
	"ok hello|token=$stars|$((140000 + ${#LAB_TOKEN})):$stars|first:${stars:0:$half}${stars:$half}:last" "$out"
expect_eq "... the origin got the credential in the handshake (injected)" "$LAB_TOKEN" \
	"$(grep '"path": "/inj"' "$wslog" | head -1 | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read())["headers"].get("Authorization"))')"
expect_eq "... without the client's offer of permessage-deflate (frames stay plain to be read)" None \
	"$(grep '"path": "/inj"' "$wslog" | head -1 | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read())["headers"].get("Sec-WebSocket-Extensions"))')"
wait_log 3 path=/inj
expect_eq "... the row names the rule and counts the masks" "wss wsk 3" \
	"$(logq path=/inj --field kind) $(logq path=/inj --field inject) $(logq path=/inj --field scrubbed)"
expect_eq "... and no byte of the credential reached the client" 0 "$(printf '%s' "$out" | grep -c "$LAB_TOKEN")"
out=$(wspy wss://api.test:9446/split "$CA" hello)
expect_eq "... and split between two fragments with a pong between them, still masked" \
	"ok first:$stars:last" "$out"
out=$(wsnode wss://tok.test:9445/badframe "$CA" "" 3)
# a close frame (1002, protocol error) and a clean end: no reset, whatever the
# client still sends (its frame may cross the close) is read and dropped
expect_eq "a masked frame from the server on an inject host closes the WebSocket: a close frame, then the end" \
	"close 1002 closed before the echo" "$(echo $out)"
wait_log 3 path=/badframe
expect_eq "... and its row says why" "websocket: a bad frame from the server (a masked server frame); closed" \
	"$(logq path=/badframe --field detail)"

# a reload that drops the grant closes an open WebSocket
sl allow add good.test:9013 >/dev/null 2>&1 || lab_bail "sluice allow add good.test:9013"
sleep 1.2
wsnode ws://good.test:9013/held "" 8 >"$LAB_DIR/held.out" &
held=$!
wait_until 5 grep -q "^101 hello" "$LAB_DIR/held.out" || lab_bail "the held WebSocket opened" "$(cat "$LAB_DIR/held.out")"
sl allow rm good.test:9013 >/dev/null 2>&1
wait "$held"
expect_eq "removing its grant closes an open WebSocket" "101 hello closed" "$(echo $(cat "$LAB_DIR/held.out"))"
wait_log 3 path=/held
expect_eq "... its row says revoked" "ws revoked" "$(logq path=/held --field kind) $(logq path=/held --field reason)"
lab_done
