#!/bin/bash
# A wildcard grant never reaches across a public suffix below it: with
# `allow *.amazonaws.com`, a name whose registrable domain is amazonaws.com
# itself (www.amazonaws.com) is served, but a tenant of s3.amazonaws.com (a
# public suffix of the list's private section) is refused 403 not-granted,
# plain HTTP and CONNECT alike, and never reaches the origin. A passthrough
# wildcard follows the same rule: `passthrough *.amazonaws.com` tunnels
# api.amazonaws.com untouched but decrypts tenant.s3.amazonaws.com.
# `sluice allow add` of such a wildcard notes what it leaves out. The
# names are the lab's (TEST-NET addresses inside the lab's namespaces),
# added to the host namespace's hosts file.
source "$(dirname "$0")/lab.sh"
lab_up
cat >>"/etc/netns/$HNS/hosts" <<'HOSTS'
203.0.113.10 www.amazonaws.com
203.0.113.10 bucket.s3.amazonaws.com
203.0.113.13 api.amazonaws.com
203.0.113.13 tenant.s3.amazonaws.com
HOSTS
lab_start_proxy "allow *.amazonaws.com"

# --- the control first: the wildcard does serve a name under amazonaws.com itself
out=$(pcurl http://www.amazonaws.com/psl-www 2>&1)
expect_eq "allow *.amazonaws.com: http://www.amazonaws.com/ is served" "hello from 203.0.113.10:80" "$out"
expect_eq "... the origin recorded it once" 1 "$(inetq ev=req 'line~/psl-www' --count)"
expect_re "... with Host www.amazonaws.com" '"Host", "www\.amazonaws\.com"' \
	"$(inetq ev=req 'line~/psl-www' --field headers)"
wait_log 2 host=www.amazonaws.com path=/psl-www
expect_eq "... its row: allow, granted by *.amazonaws.com" "allow granted *.amazonaws.com" \
	"$(logq host=www.amazonaws.com path=/psl-www --field decision) $(logq host=www.amazonaws.com path=/psl-www --field reason) $(logq host=www.amazonaws.com path=/psl-www --field grant | cut -d' ' -f1)"

# --- a tenant of the public suffix s3.amazonaws.com: not covered
out=$(raw 'GET http://bucket.s3.amazonaws.com/psl-bucket HTTP/1.1\r\nHost: bucket.s3.amazonaws.com\r\n\r\n' --timeout 5)
expect_refusal "plain GET to bucket.s3.amazonaws.com refused" "$out" 403 not-granted 'sluice allow add bucket\.s3\.amazonaws\.com'
expect_none "... it never reached the origin" inet 'line~/psl-bucket'
wait_log 2 host=bucket.s3.amazonaws.com path=/psl-bucket
expect_eq "... its row: refuse, not-granted, nothing dialed" "refuse not-granted null" \
	"$(logq host=bucket.s3.amazonaws.com path=/psl-bucket --field decision) $(logq host=bucket.s3.amazonaws.com path=/psl-bucket --field reason) $(logq host=bucket.s3.amazonaws.com path=/psl-bucket --field dialed)"
n0=$(inetq ev=accept 'local~:443' 'peer!~192.0.2.2:' --count)
out=$(raw 'CONNECT bucket.s3.amazonaws.com:443 HTTP/1.1\r\nHost: bucket.s3.amazonaws.com:443\r\n\r\n' --timeout 5)
expect_refusal "CONNECT bucket.s3.amazonaws.com:443 refused" "$out" 403 not-granted
out=$(raw 'CONNECT www.amazonaws.com:443 HTTP/1.1\r\nHost: www.amazonaws.com:443\r\n\r\n' --timeout 3)
expect_eq "... control: CONNECT www.amazonaws.com:443 is answered 200" "HTTP/1.1 200 Connection established" \
	"$(printf '%s' "$out" | head -1 | tr -d '\r')"
wait_log 2 kind=tunnel host=www.amazonaws.com
expect_eq "... the tunnel rows: www allowed and dialed, bucket refused and not dialed" \
	"allow 203.0.113.10:443 refuse null" \
	"$(logq kind=tunnel host=www.amazonaws.com --field decision) $(logq kind=tunnel host=www.amazonaws.com --field dialed) $(logq kind=tunnel host=bucket.s3.amazonaws.com --field decision) $(logq kind=tunnel host=bucket.s3.amazonaws.com --field dialed)"
expect_eq "... the :443 origin was reached once (www's tunnel), never for bucket" 1 \
	"$(( $(inetq ev=accept 'local~:443' 'peer!~192.0.2.2:' --count) - n0 ))"
lab_stop_proxy

# --- passthrough *.amazonaws.com: a tenant of s3.amazonaws.com is decrypted, not tunnelled
lab_tls_origin
lab_write_conf "intercept on" "passthrough *.amazonaws.com" \
	"allow api.amazonaws.com:9443" "allow tenant.s3.amazonaws.com:9443"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
origq() { jq_ "$LAB_DIR/tls9443.jsonl" "$@"; }
# -k: the lab origin's certificate names neither host; what matters is who terminates TLS
out=$(hx curl -sS -k --max-time 10 -x "$PROXY_URL" https://api.amazonaws.com:9443/pt-api 2>&1)
expect_re "passthrough *.amazonaws.com: api.amazonaws.com is tunnelled to the origin" "^hello from" "$out"
wait_log 2 kind=tunnel host=api.amazonaws.com
expect_eq "... its row says passthrough" "passthrough; TLS server name api.amazonaws.com" \
	"$(logq kind=tunnel host=api.amazonaws.com --field detail)"
expect_eq "... control: the origin recorded its request" 1 "$(origq ev=req 'line~/pt-api' --count)"
out=$(hx curl -sS -k --max-time 10 -x "$PROXY_URL" https://tenant.s3.amazonaws.com:9443/pt-tenant 2>&1)
wait_log 2 kind=tunnel host=tenant.s3.amazonaws.com
expect_re "tenant.s3.amazonaws.com is intercepted (decrypted by the proxy), not passed through" \
	"^intercepted: " "$(logq kind=tunnel host=tenant.s3.amazonaws.com --field detail)"
expect_eq "... so its request never reached the origin untouched (the proxy refuses the origin's certificate)" \
	0 "$(origq ev=req 'line~/pt-tenant' --count)"

# --- the CLI says what such a wildcard leaves out
out=$(sl allow add '*.amazonaws.com' 2>&1)
expect_re "sluice allow add '*.amazonaws.com' adds it and notes the public suffixes below it it does not cover" \
	'^allow: note: \*\.amazonaws\.com does not cover names under the [0-9]+ public suffixes listed below it \(.*amazonaws\.com.*\); grant such a host exactly.*added \*\.amazonaws\.com permanent$' \
	"$(echo $out)"
out=$(sl allow add '*.lab-only.example.com' 2>&1)
expect_eq "... no note for a wildcard with no public suffix below it" "added *.lab-only.example.com permanent" "$out"
lab_done
