#!/bin/bash
# HTTP/2 through an intercepting sluice-proxy: a client that offers h2 gets
# it only when the upstream chose h2 (learned before the client's handshake
# is answered), and then each stream is judged, injected, scrubbed and
# logged like an HTTP/1.1 request, its refusal its own answer. Clients:
# curl --http2, python3-h2 (hostile frames too), node's http2, gRPC
# (python3-grpcio); origins: nginx with http2, a gRPC server, and the h1-only
# TLS nginx of lab_tls_origin.
source "$(dirname "$0")/lab.sh"
"$PY" -c 'import h2, grpc' 2>/dev/null || lab_bail "python3-h2 and python3-grpcio are installed (deps/debian-packages)"
lab_up
lab_tls_origin
T=$LAB_DIR/tls
d=$LAB_DIR/h2
mkdir -p "$d/www" "$d/tmp"
echo "h2 ok" >"$d/www/index.html"
head -c $((1024 * 1024)) /dev/urandom >"$d/www/big.bin"
{ lab_nginx_head "$d"; cat; } >"$d/nginx.conf" <<NGX
http {
	default_type text/plain;
	log_format lab '\$server_protocol "\$request" \$status auth="\$http_authorization" conn=\$connection';
	access_log $d/access.log lab;
$(lab_nginx_temps "$d")
	server {
		listen 203.0.113.13:8444 ssl http2;
		ssl_certificate $T/srv.crt;
		ssl_certificate_key $T/srv.key;
		root $d/www;
		client_max_body_size 10m;
		location = /echo { return 200 "proto=\$server_protocol host=\$host auth=\$http_authorization\n"; }
		location = /reflect { return 200 "token=\$http_authorization\n"; }
		location = /post { return 200 "len=\$content_length\n"; }
	}
}
NGX
lab_bg "$INS" nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log"
lab_bg "$INS" env ORIGIN_TOKEN="$LAB_TOKEN" "$PY" "$INTEG_DIR/grpc_origin.py" "$T/srv.crt" "$T/srv.key" 203.0.113.13:50051
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8444' ||
	lab_bail "h2 nginx did not start" "$(cat "$d/error.log" 2>/dev/null)"
wait_until 15 ix bash -c '</dev/tcp/203.0.113.13/50051' || lab_bail "the gRPC origin did not start"

export SLUICE_LAB_TOKEN=$LAB_TOKEN
lab_write_conf "intercept on" "allow tls.test:8444" "allow api.test:8444" "allow tls.test:8443" \
	"upstream-ca tls.test $T/ca.crt" "upstream-ca api.test $T/ca.crt" \
	"inject h2k host=api.test:8444 path=/echo header=Authorization prefix=\"Bearer \" env=SLUICE_LAB_TOKEN unattributed=yes" \
	"inject h2r host=api.test:8444 path=/reflect header=Authorization env=SLUICE_LAB_TOKEN unattributed=yes" \
	"inject h2m host=api.test:8444 path=/broken header=Authorization env=SLUICE_LAB_MISSING unattributed=yes" \
	"allow api.test:50051" \
	"inject grpck host=api.test:50051 header=x-api-key env=SLUICE_LAB_TOKEN unattributed=yes" \
	"allow tok.test:50051" "upstream-ca tok.test $T/ca.crt" \
	"inject grpctok host=tok.test:50051 header=x-api-key command=$LAB_DIR/mint.sh unattributed=yes" \
	"body-limit tls.test 100000" "body-limit api.test 100000"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
sl key init >/dev/null 2>&1 || lab_bail "sluice key init"
# a token command that takes its time: the stream waits for it
printf '#!/bin/sh
echo run >>"%s/mint.runs"
sleep 0.5
echo "%s"
echo 60
' "$LAB_DIR" "$LAB_TOKEN" >"$LAB_DIR/mint.sh"
chmod 700 "$LAB_DIR/mint.sh"
lab_run_proxy
CA=$STATE/ca.crt
h2curl() { pcurl --http2 --cacert "$CA" "$@"; }
h2py() { hx "$PY" "$INTEG_DIR/h2_client.py" "$PROXY_ADDR" "$PROXY_PORT" "$@" 2>&1; }
grpcc() {
	hx env https_proxy="$PROXY_URL" GRPC_DEFAULT_SSL_ROOTS_FILE_PATH="$CA" \
		"$PY" "$INTEG_DIR/grpc_client.py" "$@" 2>&1
}
stars=$(printf '%*s' ${#LAB_TOKEN} '' | tr ' ' '*')

# curl --http2: h2 on both hops
out=$(h2curl -w '%{http_version}' https://tls.test:8444/echo)
expect_eq "curl --http2 through interception to an h2 origin: h2 on the client's hop" \
	"proto=HTTP/2.0 host=tls.test auth=
2" "$out"
expect_re "... and on the upstream's (nginx logs HTTP/2.0)" '^HTTP/2.0 "GET /echo HTTP/2.0" 200' \
	"$(grep '/echo' "$d/access.log" | tail -1)"
wait_log 3 path=/echo host=tls.test
expect_eq "... its row: https, proto h2, allow, 200" "https h2 allow 200" \
	"$(logq path=/echo host=tls.test --field kind) $(logq path=/echo host=tls.test --field proto) $(logq path=/echo host=tls.test --field decision) $(logq path=/echo host=tls.test --field status)"
expect_re "... the tunnel's row says ALPN h2" "ALPN h2" "$(logq kind=tunnel host=tls.test port=8444 --field detail | head -1)"

# through sluice-forward: the CONNECT is stamped, every stream inherits it
FWD_PORT=3199
ip netns exec "$HNS" "$SLUICE_BUILD/sluice-forward" --key "$STATE/stamp.key" --net lab \
	"127.0.0.1:$FWD_PORT=$PROXY_ADDR:$PROXY_PORT" >>"$LAB_DIR/forward.err" 2>&1 &
LAB_PIDS+=($!)
wait_until 5 hx bash -c "</dev/tcp/127.0.0.1/$FWD_PORT" ||
	lab_bail "sluice-forward did not start" "$(cat "$LAB_DIR/forward.err")"
out=$(hx curl -sS --max-time 10 --http2 --cacert "$CA" -x "http://127.0.0.1:$FWD_PORT" \
	-w '%{http_version}' https://tls.test:8444/stamped 2>&1)
expect_re "through sluice-forward, h2 as well" "^2$" "$(printf '%s' "$out" | tail -1)"
wait_log 3 path=/stamped
who=$(logq path=/stamped --field who)
expect_eq "... the stream's row names the stamp's principal, as its tunnel's does" \
	"$(logq kind=tunnel host=tls.test port=8444 who~@lab --field who) h2" "$who $(logq path=/stamped --field proto)"
expect_re "... which is the forwarder's stamp, not unattributed" "@lab$" "$who"

out=$(h2curl -w '%{http_version}' https://tls.test:8443/)
expect_eq "an h1-only upstream: the client that offered h2 gets HTTP/1.1" "tls ok
1.1" "$out"
expect_re "... its tunnel row says ALPN http/1.1" "ALPN http/1.1" \
	"$(logq kind=tunnel host=tls.test port=8443 --field detail | head -1)"
expect_eq "... its request's row says http/1.1" "http/1.1" "$(logq host=tls.test port=8443 path=/ --field proto | head -1)"

# many streams on one connection (python3-h2), each its own row
out=$(h2py tls.test 8444 "$CA" get /echo / /big.bin /echo /nothere)
expect_eq "five concurrent streams on one connection: each answered by the origin" \
	"/echo 200|/ 200|/big.bin 200|/echo 200|/nothere 404" \
	"$(printf '%s\n' "$out" | cut -d' ' -f1-2 | paste -sd'|')"
wait_log 3 path=/nothere
conn=$(logq path=/nothere --field conn)
expect_eq "... one row per stream, all on one connection, with distinct numbers" "5 5" \
	"$(logq conn="$conn" proto=h2 --count) $(grep "\"conn\":$conn," "$NETLOG" | grep '"proto":"h2"' | grep -o '"req":[0-9]*' | sort -u | wc -l)"
expect_eq "... the big body whole (1 MiB through the stream windows)" 1048576 \
	"$(logq conn="$conn" path=/big.bin --field down)"

# injection and scrubbing per stream; one stream refused, the others go on
out=$(h2py api.test 8444 "$CA" get /echo /reflect /broken /echo)
expect_eq "a reflected credential masked on every stream, a failing rule refuses only its stream" \
	"/echo 200 proto=HTTP/2.0 host=api.test auth=Bearer $stars|/reflect 200 token=$stars|/broken 403 sluice: rule h2m: the environment variable SLUICE_LAB_MISSING is not set in sluice-proxy's environment; the request was not sent (sluice doctor checks every inject rule)|/echo 200 proto=HTTP/2.0 host=api.test auth=Bearer $stars" \
	"$(printf '%s\n' "$out" | paste -sd'|')"
expect_eq "... the origin got the credential on each of the three" 3 \
	"$(grep -c "auth=\"Bearer $LAB_TOKEN\"\|auth=\"$LAB_TOKEN\"" "$d/access.log")"
wait_log 3 path=/reflect
expect_eq "... the rows name the rules and count the masks" "h2k h2r 1" \
	"$(logq path=/echo host=api.test --field inject | head -1) $(logq path=/reflect --field inject) $(logq path=/reflect --field scrubbed)"
expect_eq "... the refused stream's row" "refuse inject-secret-missing 403 h2" \
	"$(logq path=/broken --field decision) $(logq path=/broken --field reason) $(logq path=/broken --field status) $(logq path=/broken --field proto)"
expect_eq "... and the origin never saw it (it logged the others)" "0 3" \
	"$(grep -c '/broken' "$d/access.log") $(grep -c 'HTTP/2.0" 200 auth=".*'"$LAB_TOKEN" "$d/access.log")"

# judged per stream: :authority must be the CONNECT host
out=$(h2py tls.test 8444 "$CA" authority other.test /echo)
expect_re "a stream whose :authority names another host: 403 host-mismatch" "^/echo 403 sluice: the Host header names another host" "$out"
out=$(h2py tls.test 8444 "$CA" hostdiff other.test /echo)
expect_re "a host header that disagrees with :authority: 400" "^/echo 400 sluice: its host header names another host than its :authority" "$out"
out=$(h2py tls.test 8444 "$CA" post /post 5000 5000)
expect_eq "a POST body within the host's cap goes through, its declared length with it" "/post 200 len=5000" "$out"
n=$(grep -c 'POST /post' "$d/access.log")
out=$(h2py tls.test 8444 "$CA" post /post 300000 300000)
expect_re "a declared body over body-limit: 413 on that stream" "^/post 413 sluice: request body of 300000 bytes is over body-limit 100000" "$out"
expect_eq "... and nothing of it reached the origin (it logged the two before)" "$n" "$(grep -c 'POST /post' "$d/access.log")"

# hostile frames: each refused on its own stream or connection, rows say why
out=$(h2py tls.test 8444 "$CA" badheader /echo)
expect_eq "a header value with CR LF: that stream is reset, the next one on the connection answered" \
	"/echo reset 1|/echo 200 proto=HTTP/2.0 host=tls.test auth=" "$(printf '%s\n' "$out" | paste -sd'|')"
wait_log 3 reason=malformed proto=h2
expect_re "... its row: refused, malformed, naming the forbidden field" "forbids" \
	"$(logq reason=malformed proto=h2 --field detail | head -1)"
out=$(h2py tls.test 8444 "$CA" rapidreset 100 /echo)
expect_eq "100 streams opened and reset at once, under the burst of 200: the connection goes on" \
	"/echo 200 proto=HTTP/2.0 host=tls.test auth=" "$out"
out=$(h2py tls.test 8444 "$CA" rapidreset 500 /echo)
expect_eq "500 of them (rapid reset): the connection ends, GOAWAY (nghttp2 says INTERNAL_ERROR)" \
	"goaway 2" "$out"
for kind in ping settings; do
	hx "$PY" "$INTEG_DIR/h2_client.py" "$PROXY_ADDR" "$PROXY_PORT" tls.test 8444 "$CA" flood "$kind" 200000 \
		>"$LAB_DIR/flood.out" 2>&1 &
	flood=$!
	sleep 0.5
	out=$(h2curl https://tls.test:8444/)
	expect_eq "while another client floods $kind frames, a request on its own connection is answered" "h2 ok" "$out"
	wait "$flood"
	# ended once it is owed more acknowledgements than nghttp2 keeps (1000), or, when its
	# receive buffer took them all, every frame answered: both bound what the proxy holds
	expect_re "... and the flooding connection is ended or all its frames answered: the client's script ran to its end" \
		"^(goaway|closed|alive)$" "$(cat "$LAB_DIR/flood.out")"
done
proxy_alive && ok "... the proxy is alive after the hostile clients" || not_ok "... the proxy is alive after the hostile clients" "it exited: $(tail -3 "$LAB_DIR/proxy.err")"

# node's http2 client through a CONNECT tunnel
out=$(hx node "$INTEG_DIR/h2_node.js" "$PROXY_ADDR:$PROXY_PORT" https://api.test:8444 "$CA" /echo /reflect 2>&1)
expect_eq "node http2 through the tunnel: h2, injected, masked" \
	"alpn h2|/echo 200 proto=HTTP/2.0 host=api.test auth=Bearer $stars|/reflect 200 token=$stars" \
	"$(printf '%s\n' "$out" | paste -sd'|')"

# gRPC (python3-grpcio, its own CONNECT through https_proxy)
out=$(grpcc api.test:50051 echo hi)
expect_eq "gRPC unary through sluice, with the metadata credential injected" "echo:hi key=ok" "$out"
out=$(grpcc api.test:50051 reflect)
expect_eq "... a reflected credential in a gRPC message is masked" "key=$stars" "$out"
out=$(grpcc api.test:50051 echobig 5000)
expect_eq "a gRPC message of 5000 bytes (length undeclared) within the cap reaches the origin" \
	"echo:$(printf '%*s' 64 '' | tr ' ' x) key=ok" "$out"
out=$(grpcc api.test:50051 echobig 300000)
expect_re "a gRPC message streamed over body-limit: the call fails with our 413" "413" "$out"
wait_log 3 path=/t.T/Echo reason=body-too-large
expect_eq "... its row" "refuse body-too-large 413" \
	"$(logq path=/t.T/Echo reason=body-too-large --field decision) $(logq path=/t.T/Echo reason=body-too-large --field reason) $(logq path=/t.T/Echo reason=body-too-large --field status)"
out=$(grpcc api.test:50051 count 5 10)
expect_eq "gRPC server streaming" "n=0,n=1,n=2,n=3,n=4" "$out"
out=$(grpcc api.test:50051 fail)
expect_eq "gRPC error status delivered in trailers" "NOT_FOUND no such thing" "$out"
wait_log 3 path=/t.T/Fail
expect_eq "... each call its own h2 row, with the rule" "h2 grpck 200" \
	"$(logq path=/t.T/Echo decision=allow --field proto) $(logq path=/t.T/Echo decision=allow --field inject) $(logq path=/t.T/Fail --field status)"

t0=$(now)
out=$(grpcc api.test:50051 sleep 8000)
expect_re "an upstream that sends no response head within response-timeout (5 s): that stream gets a 504" "504" "$out"
expect_lt "... at the deadline, not the origin's 8 s" 7.5 "$(elapsed "$t0")"
wait_log 3 path=/t.T/Sleep
expect_eq "... its row" "refuse upstream-timeout 504" \
	"$(logq path=/t.T/Sleep --field decision) $(logq path=/t.T/Sleep --field reason) $(logq path=/t.T/Sleep --field status)"

out=$(grpcc tok.test:50051 echo tok)
expect_eq "gRPC to a host whose credential comes from a token command: the stream waits for it, then goes with it" \
	"echo:tok key=ok" "$out"
out=$(grpcc tok.test:50051 echo again)
expect_eq "... the next call reuses the token, the command ran once" "echo:again key=ok 1" \
	"$out $(wc -l <"$LAB_DIR/mint.runs")"

# a reload that refuses the host ends its open streams; the connection goes on
sl allow add tls.test:50051 >/dev/null 2>&1 || lab_bail "sluice allow add tls.test:50051"
sleep 1.2
hx "$PY" "$INTEG_DIR/h2_client.py" "$PROXY_ADDR" "$PROXY_PORT" tls.test 50051 "$CA" grpcslow 40 200 10 /t.T/Echo \
	>"$LAB_DIR/slow.out" 2>&1 &
slow=$!
wait_until 5 grep -q '^data' "$LAB_DIR/slow.out" || lab_bail "the slow gRPC stream began" "$(cat "$LAB_DIR/slow.out")"
sl allow rm tls.test:50051 >/dev/null 2>&1
wait "$slow"
expect_eq "removing the grant resets the open stream (CANCEL)" "reset 8" "$(grep -E '^(reset|ended|open)' "$LAB_DIR/slow.out")"
expect_re "... and a new stream on the same connection is judged anew: 403" "^/t.T/Echo 403 sluice: tls.test:50051 is not granted" \
	"$(tail -1 "$LAB_DIR/slow.out")"
wait_log 3 path=/t.T/Count reason=revoked
expect_eq "... the stream's row says revoked" "refuse revoked h2" \
	"$(logq path=/t.T/Count reason=revoked --field decision) $(logq path=/t.T/Count reason=revoked --field reason) $(logq path=/t.T/Count reason=revoked --field proto)"
lab_done
