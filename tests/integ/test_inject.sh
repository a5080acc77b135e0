#!/bin/bash
# Credential injection inside intercepted CONNECTs: the client never holds
# the secret, the origin gets it, the log names the rule and never the
# value; a reflected secret is masked in headers and bodies (Content-Length,
# chunked, read to EOF, written in 3-byte pieces); require= leaves a
# client's own credential alone; a rule serves unattributed clients only
# when it says so; a secret that cannot be had refuses the request; a
# token command's token is cached, minted again and the request re-issued
# once after a 401 past token-min-interval, and a failing command refuses
# the request;
# overlapping rules refuse to load; a body over its host's limit is refused
# before anything is injected.
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
O=$LAB_DIR/tls/ca.crt
lab_write_conf "intercept on" "token-min-interval 1" "allow api.test:9443" "allow tls.test:9443" "allow pass.test:9443" \
	"passthrough pass.test" "upstream-ca api.test $O" "upstream-ca tls.test $O" \
	"upstream-ca pass.test $O" "body-limit api.test 1000" \
	'inject gh host=api.test:9443 path=/api header=Authorization prefix="Bearer " env=SLUICE_LAB_TOKEN unattributed=yes' \
	'inject refl host=api.test:9443 path=/reflect header=Authorization prefix="Bearer " env=SLUICE_LAB_TOKEN unattributed=yes' \
	'inject missing host=api.test:9443 path=/missing header=Authorization env=SLUICE_LAB_UNSET unattributed=yes' \
	"inject qp host=api.test:9443 path=/q query=key env=SLUICE_LAB_TOKEN unattributed=yes" \
	'inject ph host=tls.test:9443 header=Authorization prefix="Bearer " require=sandbox-placeholder env=SLUICE_LAB_TOKEN unattributed=yes' \
	'inject stamped host=pass.test:9443 header=Authorization prefix="Bearer " env=SLUICE_LAB_TOKEN' \
	"allow api.test:8443" 'inject git host=api.test:8443 path=/git header=Authorization prefix="Bearer " env=SLUICE_LAB_TOKEN unattributed=yes' \
	"allow tok.test:9443" "allow tokfail.test:9443" "upstream-ca tok.test $O" "upstream-ca tokfail.test $O" \
	"inject tok host=tok.test:9443 header=Authorization prefix=\"Bearer \" command=$LAB_DIR/mint.sh unattributed=yes" \
	"inject tokfail host=tokfail.test:9443 header=Authorization command=$LAB_DIR/fail.sh unattributed=yes"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
sl key init >/dev/null 2>&1 || lab_bail "sluice key init"
# the token command: counts its runs; its first token is one the origin refuses
cat >"$LAB_DIR/mint.sh" <<SH
#!/bin/sh
n=\$(cat "$LAB_DIR/mint.count" 2>/dev/null || echo 0)
echo \$((n + 1)) >"$LAB_DIR/mint.count"
if [ "\$n" = 0 ]; then echo stale-token-value; else echo "$LAB_TOKEN"; fi
echo 60
SH
printf '#!/bin/sh\necho oops >&2\nexit 3\n' >"$LAB_DIR/fail.sh"
chmod 700 "$LAB_DIR/mint.sh" "$LAB_DIR/fail.sh"
export SLUICE_LAB_TOKEN=$LAB_TOKEN
lab_run_proxy
unset SLUICE_LAB_TOKEN
CA=$STATE/ca.crt
icurl() { hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$CA" "$@"; }
oq() { jq_ "$LAB_DIR/tls9443.jsonl" "$@"; }

# the client sends no credential; the origin wants one
out=$(icurl -w ' %{http_code}' https://api.test:9443/api 2>&1)
expect_eq "a request without a credential reaches the origin with the injected one: 200" "api ok 200" "$(echo $out)"
expect_eq "... the origin saw the real value" 1 "$(grep -c "Bearer $LAB_TOKEN" "$LAB_DIR/tls9443.jsonl")"
expect_eq "... the row names the rule" "gh https 200" \
	"$(logq path=/api --field inject) $(logq path=/api --field kind) $(logq path=/api --field status)"
out=$(hx env REQUESTS_CA_BUNDLE="$CA" "$PY" -c '
import requests, sys
r = requests.get("https://api.test:9443/api", proxies={"https": sys.argv[1]}, timeout=10)
print(r.status_code, r.text.strip())' "$PROXY_URL" 2>&1)
expect_eq "python requests gets the credential injected" "200 api ok" "$out"
out=$(hx env https_proxy="$PROXY_URL" wget -q -O - --ca-certificate="$CA" https://api.test:9443/api 2>&1)
expect_eq "wget gets the credential injected" "api ok" "$out"

# git clone over https from a server that wants the credential (git-http-backend)
repo=$LAB_DIR/tls/git/repo.git
git init -q --bare -b main "$repo" && git -C "$LAB_DIR" init -q src &&
	git -C "$LAB_DIR/src" -c user.email=t@t -c user.name=t commit -q --allow-empty -m injected &&
	git -C "$LAB_DIR/src" push -q "$repo" HEAD:refs/heads/main 2>/dev/null || not_ok "a test repository"
out=$(hx git -c http.sslCAInfo="$O" clone -q https://api.test:8443/git/repo.git "$LAB_DIR/c0" 2>&1)
expect_re "control: git clone straight to the server, without the credential, is refused" "401|Authentication|could not read" "$out"
out=$(hx git -c http.proxy="$PROXY_URL" -c http.sslCAInfo="$CA" clone -q \
	https://api.test:8443/git/repo.git "$LAB_DIR/c1" 2>&1 && git -C "$LAB_DIR/c1" log --format=%s)
expect_eq "git clone through sluice: the credential is injected, the clone works" injected "$out"
expect_ge "... every git request's row names the rule" 2 "$(logq host=api.test inject=git)"

# a query parameter rule
out=$(icurl -o /dev/null -w '%{http_code}' 'https://api.test:9443/q?a=1&key=placeholder' 2>&1)
expect_eq "a query rule: served" 200 "$out"
expect_re "... the origin saw key= set to the secret, other parameters kept" \
	"GET /q\\?a=1&key=$LAB_TOKEN HTTP" "$(oq 'line~/q?' --field line)"
expect_eq "... the row keeps the client's path, not the secret" "/q?a=1&key=placeholder qp" \
	"$(logq 'path~/q?' --field path) $(logq 'path~/q?' --field inject)"

# reflection: every way the secret can come back is masked
stars=$(printf "%${#LAB_TOKEN}s" | tr ' ' '*')
for mode in cl chunked eof; do
	out=$(icurl -D - "https://api.test:9443/reflect?mode=$mode" 2>&1 | tr -d '\r')
	expect_eq "reflected secret ($mode body, 3-byte pieces): never in what the client gets" 0 \
		"$(printf '%s' "$out" | grep -c "$LAB_TOKEN")"
	expect_eq "... masked with as many '*' in the header and twice in the body" 3 \
		"$(printf '%s' "$out" | grep -o "Bearer $stars" | wc -l)"
	expect_eq "... the row counts three" 3 "$(logq "path=/reflect?mode=$mode" --field scrubbed)"
done

# require=: only the placeholder is replaced; a client's own credential is left alone
out=$(icurl -w ' %{http_code}' -H 'Authorization: sandbox-placeholder' https://tls.test:9443/api 2>&1)
expect_eq "require=: the placeholder is replaced with the credential" "api ok 200" "$(echo $out)"
out=$(icurl -w ' %{http_code}' -H 'Authorization: Bearer mine' https://tls.test:9443/api?own 2>&1)
expect_eq "require=: a client's own different credential is sent as it was (401 from the origin)" \
	"unauthorized 401" "$(echo $out)"
expect_eq "... the origin saw the client's value, no rule in the row" "1 null" \
	"$(oq 'line~/api?own' | head -1; true) $(logq path=/api?own --field inject)"
expect_eq "... and the client's value reached it unchanged" 1 \
	"$(grep '/api?own' "$LAB_DIR/tls9443.jsonl" | grep -c 'Bearer mine')"

# a rule without unattributed=yes does not serve an unattributed client, even on a passthrough host
out=$(icurl -w ' %{http_code}' --cacert "$CA" https://pass.test:9443/api 2>&1)
expect_eq "a host a rule injects for is decrypted although listed as passthrough" 1 \
	"$(logq kind=https host=pass.test)"
expect_eq "... and an unattributed client gets no credential from a rule that serves only stamped ones" \
	"unauthorized 401 null" "$(echo $out) $(logq kind=https host=pass.test --field inject)"

# a token command: minted on first use (a path that takes any token); past
# token-min-interval (1 s here) the origin refuses that token (401), so it
# is minted again and the request re-issued once
out=$(icurl -o /dev/null -w '%{http_code}' https://tok.test:9443/echo 2>&1)
expect_eq "a token command's credential: minted on first use" "200 1" "$out $(cat "$LAB_DIR/mint.count")"
sleep 1.1
out=$(icurl -w ' %{http_code}' https://tok.test:9443/api 2>&1)
expect_eq "... a 401 past the interval made it mint again and re-issue, the client sees 200" \
	"api ok 200" "$(echo $out)"
expect_eq "... the command ran twice" 2 "$(cat "$LAB_DIR/mint.count")"
expect_eq "... one row, naming the rule and the re-issue" \
	"1 tok re-issued once with a new token after a 401" \
	"$(logq host=tok.test path=/api kind=https) $(logq host=tok.test path=/api kind=https --field inject) $(logq host=tok.test path=/api kind=https --field detail)"
out=$(icurl -w ' %{http_code}' https://tok.test:9443/api?again 2>&1)
expect_eq "... the next request uses the cached token (200, no new run)" "api ok 200 2" \
	"$(echo $out) $(cat "$LAB_DIR/mint.count")"
out=$(icurl -w ' %{http_code}' https://tokfail.test:9443/api 2>&1)
expect_re "a failing token command: 502 naming the rule and why, nothing sent" \
	"rule tokfail: the token command failed; the request was not sent.* 502$" "$(echo $out)"
expect_eq "... the origin saw nothing from it" 0 "$(grep -c tokfail "$LAB_DIR/tls9443.jsonl")"
lab_control "... the origin saw nothing from it" tls9443

# ... while a stamped connection (the CONNECT carries a valid stamp) gets it
st=$("$PY" "$INTEG_DIR/stamp.py" "$STATE/stamp.key" 10.88.0.7 podman 0011223344556677 1)
out=$(icurl -w ' %{http_code}' --proxy-header "Sluice-Stamp: $st" https://pass.test:9443/api?stamped 2>&1)
expect_eq "a stamped connection is served by a rule for attributed clients: 200" "api ok 200" "$(echo $out)"
expect_eq "... its row names the rule and the stamp" "stamped 10.88.0.7@podman" \
	"$(logq path=/api?stamped --field inject) $(logq path=/api?stamped --field who)"
expect_eq "... the request reached the origin (the control)" 1 "$(oq 'line~/api?stamped')"
expect_eq "... and the origin saw no stamp" 0 "$(grep '/api?stamped' "$LAB_DIR/tls9443.jsonl" | grep -ci sluice-stamp)"

# a secret that cannot be had: the request is not sent
out=$(icurl -w ' %{http_code}' https://api.test:9443/missing 2>&1)
expect_re "a rule whose secret is missing: 403 (not retried: the operator's to fix) naming the rule and why" \
	"rule missing: the environment variable SLUICE_LAB_UNSET is not set in sluice-proxy's environment; the request was not sent.* 403$" "$(echo $out)"
expect_none "... nothing reached the origin" tls9443 'line~/missing'

# a body over its host's limit: 413 before any injection
out=$(icurl -o /dev/null -w '%{http_code}' -d "$(head -c 2000 /dev/zero | tr '\0' a)" \
	https://api.test:9443/api?big 2>&1)
expect_eq "a body over body-limit: 413" 413 "$out"
expect_none "... nothing reached the origin" tls9443 'line~/api?big'
expect_eq "... no rule applied" null "$(logq path=/api?big --field inject)"

# the secret is never written anywhere
expect_ge "the log holds the injected requests' rows (the control)" 3 "$(logq host=api.test)"
expect_eq "the secret appears in no log row" 0 "$(grep -c "$LAB_TOKEN" "$NETLOG")"
expect_eq "... nor in the proxy's stderr" 0 "$(grep -c "$LAB_TOKEN" "$LAB_DIR/proxy.err")"

# overlapping rules refuse to load
lab_write_conf "intercept on" 'inject a host=x.test path=/v1 header=X-A env=A' \
	'inject b host=x.test path=/v1/deep header=X-B env=B'
out=$(sl check "$CONF" 2>&1)
expect_re "two rules that could match one request refuse to load, naming both" "\\b(a|b)\\b.*\\b(a|b)\\b" \
	"$(printf '%s' "$out" | grep -i overlap)"
lab_done
