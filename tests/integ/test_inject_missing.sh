#!/bin/bash
# An inject rule whose secret source is missing (a file that is not there,
# one others can read, an environment variable not set) is the operator's
# to fix: the proxy still starts and serves every other host and path, and
# a request the rule covers is answered at once with a 403 that clients do
# not retry (curl --retry, which retries 408, 429 and 5xx as the Anthropic
# and OpenAI SDKs do), its Proxy-Status and body naming the reason
# (inject-secret-missing) and the source, with one row; nothing is sent.
# `sluice doctor` checks every rule's source and fails naming each.
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
O=$LAB_DIR/tls/ca.crt
printf '%s\n' "$LAB_TOKEN" >"$LAB_DIR/good.secret"
chmod 600 "$LAB_DIR/good.secret"
printf '%s\n' "$LAB_TOKEN" >"$LAB_DIR/loose.secret"
chmod 644 "$LAB_DIR/loose.secret"
lab_write_conf "intercept on" "allow api.test:9443" "allow tls.test:9443" \
	"upstream-ca api.test $O" "upstream-ca tls.test $O" \
	"inject good host=api.test:9443 path=/api header=Authorization prefix=\"Bearer \" file=$LAB_DIR/good.secret unattributed=yes" \
	"inject nofile host=api.test:9443 path=/nofile header=Authorization file=$LAB_DIR/absent.secret unattributed=yes" \
	"inject loose host=api.test:9443 path=/loose header=Authorization file=$LAB_DIR/loose.secret unattributed=yes" \
	"inject noenv host=api.test:9443 path=/noenv header=Authorization env=SLUICE_LAB_UNSET unattributed=yes"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
unset SLUICE_LAB_UNSET
lab_run_proxy
expect_eq "the proxy starts with rules whose secrets are missing" yes "$(proxy_alive && echo yes)"
wait_until 5 grep -q 'sluice-proxy: running' "$LAB_DIR/proxy.err"
expect_re "... warning of each on stderr" \
	"inject rule nofile: the secret file $LAB_DIR/absent.secret cannot be read \\(No such file or directory\\); its requests are refused \\(403 inject-secret-missing\\)" \
	"$(cat "$LAB_DIR/proxy.err")"
expect_re "... the file others can read" "inject rule loose: the secret file $LAB_DIR/loose.secret is readable by others" "$(cat "$LAB_DIR/proxy.err")"
expect_re "... the variable not set" "inject rule noenv: the environment variable SLUICE_LAB_UNSET is not set" "$(cat "$LAB_DIR/proxy.err")"
expect_not_re "... not the good rule" "inject rule good" "$(cat "$LAB_DIR/proxy.err")"
CA=$STATE/ca.crt
icurl() { hx curl -sS --max-time 20 -x "$PROXY_URL" --cacert "$CA" "$@"; }
oq() { jq_ "$LAB_DIR/tls9443.jsonl" "$@"; }

out=$(icurl https://tls.test:9443/ 2>&1)
expect_re "another host is served" '^hello from 203\.0\.113\.13:9443' "$out"
out=$(icurl -w ' %{http_code}' https://api.test:9443/api 2>&1)
expect_eq "a rule whose file is there injects: 200" "api ok 200" "$(echo $out)"

# the missing file: 403 at once, no retry by a client that retries 5xx
t0=$(now)
out=$(icurl --retry 3 --retry-delay 1 -D "$LAB_DIR/h1" -w '\n%{http_code}' https://api.test:9443/nofile 2>&1)
t=$(elapsed "$t0")
echo "# curl printed: $(echo "$out" | tr '\n' '|')"
expect_eq "a missing secret file: 403" 403 "$(echo "$out" | tail -1)"
expect_re "... the body names the rule, the file and why" \
	"^sluice: rule nofile: the secret file $LAB_DIR/absent.secret cannot be read \\(No such file or directory\\); the request was not sent" "$out"
expect_re "... Proxy-Status names sluice and inject-secret-missing" \
	'^Proxy-Status: sluice; error=proxy_configuration_error; details="inject-secret-missing: rule nofile: the secret file' \
	"$(tr -d '\r' <"$LAB_DIR/h1")"
expect_lt "... answered at once, not retried (curl --retry 3 retries 5xx)" 1.5 "$t"
expect_eq "... one row, refuse inject-secret-missing 403" "1 refuse inject-secret-missing 403" \
	"$(logq path=/nofile --count) $(logq path=/nofile --field decision) $(logq path=/nofile --field reason) $(logq path=/nofile --field status)"
expect_none "... nothing reached the origin" tls9443 'line~/nofile'

out=$(icurl -w '\n%{http_code}' https://api.test:9443/loose 2>&1)
expect_re "a secret file others can read: 403 saying so" \
	"^sluice: rule loose: the secret file $LAB_DIR/loose.secret is readable by others \\(chmod 600 it\\).*403$" "$(echo $out)"
out=$(icurl -w '\n%{http_code}' https://api.test:9443/noenv 2>&1)
expect_re "an environment variable not set: 403 saying so" \
	'^sluice: rule noenv: the environment variable SLUICE_LAB_UNSET is not set in sluice-proxy.s environment.*403$' "$(echo $out)"

# python's urllib: an HTTPError 403 with the body, at once
out=$(hx env SSL_CERT_FILE="$CA" "$PY" -c '
import sys, time, urllib.request, urllib.error
o = urllib.request.build_opener(urllib.request.ProxyHandler({"https": sys.argv[1]}))
t = time.time()
try:
    o.open("https://api.test:9443/nofile", timeout=10)
except urllib.error.HTTPError as e:
    print(e.code, e.headers["Proxy-Status"].split(";")[1].strip(), "%.1f" % (time.time() - t), e.read().decode().split(";")[0])' "$PROXY_URL" 2>&1)
expect_re "python urllib: HTTPError 403 with sluice's reason, at once" \
	'^403 error=proxy_configuration_error 0\.[0-9] sluice: rule nofile: the secret file .*absent\.secret cannot be read' "$out"

# (an HTTP/2 stream gets the same: test_h2.sh's rule h2m)
# sluice doctor: every rule's source
out=$(sl doctor 2>&1)
code=$?
echo "$out" | grep inject | sed 's/^/# doctor printed: /'
expect_eq "doctor fails" 1 "$([ "$code" -ne 0 ] && echo 1 || echo 0)"
expect_re "... naming the missing file" "^FAIL +inject +rule nofile: the secret file $LAB_DIR/absent.secret cannot be read \\(No such file or directory\\)" "$out"
expect_re "... the file others can read" "^FAIL +inject +rule loose: the secret file $LAB_DIR/loose.secret is readable by others" "$out"
expect_re "... the variable the running proxy lacks" "^FAIL +inject +rule noenv: the environment variable SLUICE_LAB_UNSET is not set in sluice-proxy's environment \\(pid $PROXY_PID\\)" "$out"
expect_re "... and says the good rule is fine" "^ok +inject +rule good: the secret file $LAB_DIR/good.secret is readable" "$out"

# fixed by the operator: served without a restart (read at each request)
cp "$LAB_DIR/good.secret" "$LAB_DIR/absent.secret"
chmod 600 "$LAB_DIR/absent.secret" "$LAB_DIR/loose.secret"
out=$(icurl -o /dev/null -w '%{http_code}' https://api.test:9443/nofile 2>&1)
expect_eq "the file put there: the next request is served" 200 "$out"
out=$(sl doctor 2>&1)
expect_re "... doctor says so" "^ok +inject +rule nofile" "$out"
expect_re "... and of the file now 600" "^ok +inject +rule loose" "$out"

# with `user NAME`, the file must be that user's (only its owner may read it)
{ cat "$CONF"; echo "user nobody"; } >"$LAB_DIR/user.conf"
out=$(hx "$SLUICE_BUILD/sluice" -c "$LAB_DIR/user.conf" doctor 2>&1)
expect_re "doctor with user nobody: root's 0600 file is a failure" \
	"^FAIL +inject +rule good: the secret file $LAB_DIR/good.secret is not readable by nobody \\(owner uid 0, mode 600\\)" "$out"
chown nobody "$LAB_DIR/good.secret"
out=$(hx "$SLUICE_BUILD/sluice" -c "$LAB_DIR/user.conf" doctor 2>&1)
expect_re "... owned by nobody: ok" "^ok +inject +rule good: the secret file $LAB_DIR/good.secret is readable by sluice-proxy as nobody" "$out"
lab_done
