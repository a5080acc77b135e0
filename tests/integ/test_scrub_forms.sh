#!/bin/bash
# A reflected secret is masked in every form it was sent in, not only raw:
# percent-encoded (upper case as sent, lower case, twice, as Python's
# urllib.parse.quote and quote_plus write it), inside JSON
# (Python's escapes, PHP's escaping '/' too), base64 at any
# alignment (so inside the base64 of the header value with its prefix too),
# urlsafe base64, and a Basic credential's decoded user:pass and password.
# A compressed response from a host an inject rule names, although identity
# was asked for, is decoded (gzip, deflate; bounded) and scrubbed, and any
# other Content-Encoding refused: the secret would pass the scrubber unseen.
# Every response from such a host is scrubbed, also when the request got no
# credential (its path matched no rule, the rule does not serve the client,
# require= found no placeholder, plain HTTP), with the secrets of the host's
# rules: env and file read again, a token command's last minted token. Each case: the client never sees a form of
# the value, the row counts the masks, and the origin's own record of what
# it sent shows it did reflect them.
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
O=$LAB_DIR/tls/ca.crt
R=$LAB_DIR/reflect.jsonl
lab_bg "$INS" "$PY" "$INTEG_DIR/origin_reflect.py" --log "$R" \
	--tls "$LAB_DIR/tls/srv.crt" "$LAB_DIR/tls/srv.key" 203.0.113.13:9445
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/9445' || lab_bail "the reflecting origin did not start"

# values with bytes that percent-encode and base64 that differs from urlsafe
HDR='hdr+sec/ret=0123456789~x'
QS='q/s+e=c:r.e~t_0123'
USERPASS='alice:pa55/w0rd+xyz?'
BASIC=$(printf %s "$USERPASS" | base64 -w0)
TOK='minted+tok/7777abcd'
ST='stamped/only+secret42'
PH='placeholder/rule+secret9'
SP='sp ace/val+ue=42:x'
printf '%s\n' "$BASIC" >"$LAB_DIR/basic.secret"
chmod 600 "$LAB_DIR/basic.secret"
printf '#!/bin/sh\necho "%s"\necho 600\n' "$TOK" >"$LAB_DIR/mint.sh"
chmod 700 "$LAB_DIR/mint.sh"
lab_write_conf "intercept on" \
	"allow api.test:9445" "allow tok.test:9445" "allow tls.test:9445" "allow pass.test:9445" "allow api.test" \
	"upstream-ca api.test $O" "upstream-ca tok.test $O" "upstream-ca tls.test $O" "upstream-ca pass.test $O" \
	'inject hdr host=api.test:9445 path=/h header=Authorization prefix="Bearer " env=SCRUB_HDR unattributed=yes' \
	'inject qp host=api.test:9445 path=/q query=key env=SCRUB_Q unattributed=yes' \
	"inject bas host=api.test:9445 path=/basic header=Authorization prefix=\"Basic \" file=$LAB_DIR/basic.secret unattributed=yes" \
	"inject tok host=tok.test:9445 path=/api header=X-Token command=$LAB_DIR/mint.sh unattributed=yes" \
	'inject st host=tls.test:9445 header=Authorization prefix="Bearer " env=SCRUB_ST' \
	'inject ph host=tok.test:9445 path=/ph header=X-Ph require=sandbox-placeholder env=SCRUB_PH unattributed=yes' \
	'inject sp host=api.test:9445 path=/sp header=X-Sp env=SCRUB_SP unattributed=yes'
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
sl key init >/dev/null 2>&1 || lab_bail "sluice key init"
export SCRUB_HDR=$HDR SCRUB_Q=$QS SCRUB_ST=$ST SCRUB_PH=$PH SCRUB_SP=$SP
lab_run_proxy
unset SCRUB_HDR SCRUB_Q SCRUB_ST SCRUB_PH SCRUB_SP
CA=$STATE/ca.crt
icurl() { hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$CA" "$@"; }
oq() { jq_ "$R" "$@"; }

# forms FILE VALUE...: which encoded forms of the VALUEs occur in FILE (computed
# here with Python's urllib and base64, not the proxy's code), or "none".
cat >"$LAB_DIR/forms.py" <<'PY'
import base64, json, sys, urllib.parse
text = open(sys.argv[1], "rb").read().decode("latin-1")
found = []
for v in sys.argv[2:]:
    b = v.encode("latin-1")
    up = urllib.parse.quote(v, safe="")
    js = json.dumps(v)[1:-1]
    forms = {"raw": v, "json": js, "json-php": js.replace("/", "\\/"), "pct": up,
             "quote": urllib.parse.quote(v), "quote-plus": urllib.parse.quote_plus(v), "pct-lower": "".join(
        c.lower() if i > 0 and up[i - 1] == "%" or i > 1 and up[i - 2] == "%" else c
        for i, c in enumerate(up)), "pct-twice": urllib.parse.quote(up, safe="")}
    for k in range(3):
        for name, enc in (("b64", base64.b64encode), ("b64url", base64.urlsafe_b64encode)):
            e = enc(b"\0" * k + b).decode()
            # the characters that only v's bytes decide
            core = "".join(e[c] for c in range(len(e)) if 8 * k <= 6 * c and 6 * c + 6 <= 8 * (k + len(b)))
            forms["%s@%d" % (name, k)] = core
    for name, f in forms.items():
        if len(f) >= 4 and f in text:
            found.append("%s:%s" % (v[:6], name))
print(" ".join(sorted(set(found))) or "none")
PY
forms() { "$PY" "$LAB_DIR/forms.py" "$@"; }
# sent COND...: the last origin record's response as written, into a file
sent() { oq "$@" --field sent >"$LAB_DIR/sent.txt"; echo "$LAB_DIR/sent.txt"; }
# unpacked COND...: the body of the origin's recorded response, decompressed (gzip or zlib)
unpacked() {
	oq "$@" --field sent >"$LAB_DIR/packed.txt"
	"$PY" -c 'import sys, zlib
b = open(sys.argv[1], encoding="utf-8", newline="").read().rstrip("\n").encode("latin-1").split(b"\r\n\r\n", 1)[1]
if b"Transfer-Encoding: chunked" in open(sys.argv[1], "rb").read():
    out, rest = b"", b
    while True:
        n, rest = rest.split(b"\r\n", 1)
        if int(n, 16) == 0:
            break
        out, rest = out + rest[:int(n, 16)], rest[int(n, 16) + 2:]
    b = out
sys.stdout.write(zlib.decompress(b, 47).decode("latin-1"))' "$LAB_DIR/packed.txt"
}
# check DESC PATH OUTFILE VALUE...: no form in what the client got, masks
# counted, the origin reflected (its record of the request line PATH, or
# ORIGIN_LINE when the proxy rewrote the target)
check() {
	local desc=$1 path=$2 outf=$3
	shift 3
	expect_eq "$desc: the client sees no form of the value" none "$(forms "$outf" "$@")"
	expect_ge "... the row counts the masks" 1 "$(logq "path=$path" --field scrubbed)"
	expect_re "... control: the origin did reflect it" ":" \
		"$(forms "$(sent "line~${ORIGIN_LINE:-$path }")" "$@")"
}

# a query rule sends the value percent-encoded; the origin echoes the URL
icurl -D - -o "$LAB_DIR/c1.body" 'https://api.test:9445/q/echo-url?a=1&key=x' >"$LAB_DIR/c1" 2>&1
cat "$LAB_DIR/c1.body" >>"$LAB_DIR/c1"
expect_re "a query rule's request was injected (upper-case %XX, as sent)" \
	"key=$(printf %s "$QS" | "$PY" -c 'import sys,urllib.parse;print(urllib.parse.quote(sys.stdin.read(),safe=""))') " \
	"$(oq 'line~/q/echo-url' --field line)"
expect_re "... the Location header came back, masked" '^Location: https://back.test/r\?to=/q/echo-url\?a=1&key=\*+' \
	"$(grep -i '^location' "$LAB_DIR/c1" | tr -d '\r')"
ORIGIN_LINE=/q/echo-url?a=1 check "percent-encoded (as sent, lower case, twice) and decoded reflections" "/q/echo-url?a=1&key=x" \
	"$LAB_DIR/c1" "$QS"

# Python's urllib.parse.quote ('/' left raw) and quote_plus / urlencode (a space as '+')
icurl -D - 'https://api.test:9445/h/echo-quote' >"$LAB_DIR/cq" 2>&1
check "urllib.parse.quote and quote_plus reflections of a Bearer value" "/h/echo-quote" "$LAB_DIR/cq" "$HDR"
expect_eq "... control: the origin sent quote()'s form ('/' left raw)" 1 \
	"$(oq 'line~/h/echo-quote' "sent~$("$PY" -c 'import sys,urllib.parse;print(urllib.parse.quote(sys.argv[1]))' "$HDR")" --count)"
icurl -D "$LAB_DIR/cq2.h" -o "$LAB_DIR/cq2.b" 'https://api.test:9445/sp/echo-quote?h=x-sp' >"$LAB_DIR/cq2" 2>&1
cat "$LAB_DIR/cq2.h" "$LAB_DIR/cq2.b" >>"$LAB_DIR/cq2"
check "quote and quote_plus of a value with a space (quote_plus writes '+')" "/sp/echo-quote?h=x-sp" "$LAB_DIR/cq2" "$SP"
expect_eq "... the masks keep each form's length (the body is as long as the origin's)" \
	"$(oq 'line~/sp/echo-quote' --field sent | "$PY" -c 'import sys;print(len(sys.stdin.read()[:-1].split("\r\n\r\n",1)[1]))')" \
	"$(wc -c <"$LAB_DIR/cq2.b")"

# base64 of the header value with its prefix, and of the value at every alignment
icurl -D - 'https://api.test:9445/h/echo-b64' >"$LAB_DIR/c2" 2>&1
check "base64 reflections (the whole header value, the value at 3 alignments, urlsafe)" \
	"/h/echo-b64" "$LAB_DIR/c2" "$HDR"

# JSON, as Python and PHP write it
icurl -D - 'https://api.test:9445/h/echo-json' >"$LAB_DIR/c2" 2>&1
check "JSON reflections ('/' escaped or not)" "/h/echo-json" "$LAB_DIR/c2" "$HDR"

# Basic: the value is base64 of user:pass; the origin shows it decoded
icurl -D - 'https://api.test:9445/basic/echo-b64' >"$LAB_DIR/c3" 2>&1
check "a Basic credential's decoded user:pass and password" "/basic/echo-b64" "$LAB_DIR/c3" \
	"$BASIC" "$USERPASS" "${USERPASS#*:}"

# a compressed answer although identity was asked for: gzip and deflate are
# decoded (bounded), scrubbed and sent unencoded; any other coding is refused
# (the client decodes what it gets, so a passed-through body would show the value)
stars=$(printf "%${#HDR}s" | tr ' ' '*')
for frame in cl chunked eof; do
	icurl --compressed -D "$LAB_DIR/c4.h" -o "$LAB_DIR/c4.b" "https://api.test:9445/h/gzip?frame=$frame&times=3" >"$LAB_DIR/c4" 2>&1
	cat "$LAB_DIR/c4.h" "$LAB_DIR/c4.b" >>"$LAB_DIR/c4"
	expect_eq "gzip ($frame) to an injected request: decoded and scrubbed, never the value" \
		"none $(printf 'you sent <Bearer %s>' "$stars" "$stars" "$stars")" \
		"$(forms "$LAB_DIR/c4" "$HDR") $(tr -d '\n' <"$LAB_DIR/c4.b")"
	expect_eq "... sent unencoded (no Content-Encoding), the row counts three" "0 3" \
		"$(tr -d '\r' <"$LAB_DIR/c4.h" | grep -ci '^content-encoding') $(logq "path=/h/gzip?frame=$frame&times=3" --field scrubbed)"
	expect_eq "... control: the origin did send it gzip-compressed" \
		"$(printf 'you sent <Bearer %s>\n' "$HDR" "$HDR" "$HDR")" \
		"$(unpacked "line~/h/gzip?frame=$frame&times=3")"
done
icurl --compressed -o "$LAB_DIR/c4" 'https://api.test:9445/h/gzip?members=2' 2>&1
expect_eq "two gzip members one after the other: both decoded, masked" \
	"$(printf 'you sent <Bearer %s>\n' "$stars" "$stars")" "$(cat "$LAB_DIR/c4")"
out=$(icurl --http1.0 --compressed -D - 'https://api.test:9445/h/gzip?frame=chunked' 2>&1 | tr -d '\r')
expect_eq "an HTTP/1.0 client: the decoded body ends with the connection (no chunking), masked" \
	"close 0 you sent <Bearer $stars>" \
	"$(header_of "$(printf '%s' "$out" | sed '1,/^$/d')" Connection) $(printf '%s' "$out" | grep -ci '^transfer-encoding') $(printf '%s' "$out" | tail -1)"
out=$(icurl -I 'https://api.test:9445/h/gzip' 2>&1 | tr -d '\r')
expect_eq "a HEAD answered with Content-Encoding: gzip passes as it came (no body to scrub)" \
	"200 gzip" "$(logq path=/h/gzip method=HEAD --field status) $(header_of "$(printf '%s' "$out" | sed '1,/^$/d')" Content-Encoding)"
icurl --compressed -D - 'https://api.test:9445/h/gzip?enc=br' >"$LAB_DIR/c4" 2>&1
expect_eq "another coding (br) from a host a rule names: 502 encoded-response, never the value" \
	"502 encoded-response none" \
	"$(logq 'path=/h/gzip?enc=br' --field status) $(logq 'path=/h/gzip?enc=br' --field reason) $(forms "$LAB_DIR/c4" "$HDR")"
expect_eq "... control: the origin did send the value under it" "you sent <Bearer $HDR>" \
	"$(unpacked 'line~/h/gzip?enc=br')"
out=$(icurl --compressed -o "$LAB_DIR/c4" -w '%{http_code}' 'https://api.test:9445/h/gzip?trunc=1&frame=chunked' 2>&1)
expect_re "a gzip stream cut short: the client's transfer fails" "^200.*curl: \(18|56|92\)|curl: \((18|56|92)\).*200" "$(echo $out)"
expect_eq "... never the value, the row says why" "none compressed response body cut short" \
	"$(forms "$LAB_DIR/c4" "$HDR") $(logq 'path=/h/gzip?trunc=1&frame=chunked' --field detail)"
out=$(icurl --compressed -o /dev/null -w '%{size_download}' 'https://api.test:9445/h/gzip?zeros=80' 2>/dev/null)
expect_lt "a gzip bomb (80 MiB of zeros in 80 KiB): cut before 64 MiB reach the client" 67108865 "$out"
expect_ge "... after it streamed what came before (at least 1 MiB decoded)" 1048576 "$out"
expect_re "... the row says why" "over 67108864 bytes" "$(logq 'path=/h/gzip?zeros=80' --field detail)"
icurl --compressed -D - 'https://pass.test:9445/x/gzip' >"$LAB_DIR/c5" 2>&1
expect_re "... control: from a host no rule names, gzip passes as it came (curl decodes it)" \
	"you sent <>" "$(tr -d '\0' <"$LAB_DIR/c5")"

# not injected (the path matches no rule), from a host a rule names: scrubbed all the same
icurl -D - 'https://api.test:9445/other/last?s=bearer' >"$LAB_DIR/c6" 2>&1
check "not injected (no rule's path): an env secret the origin shows is masked" \
	"/other/last?s=bearer" "$LAB_DIR/c6" "$HDR"
expect_eq "... the row names no rule" null "$(logq 'path=/other/last?s=bearer' --field inject)"
icurl -D - 'https://api.test:9445/other/last?s=basic' >"$LAB_DIR/c7" 2>&1
check "not injected: a file secret is read for scrubbing" "/other/last?s=basic" "$LAB_DIR/c7" "$BASIC"
icurl --compressed -D - 'https://api.test:9445/other/gzip?s=bearer&enc=deflate' >"$LAB_DIR/c8" 2>&1
expect_eq "not injected, deflate from a host a rule names: decoded and scrubbed, never the value" \
	"200 none 1" \
	"$(logq 'path=/other/gzip?s=bearer&enc=deflate' --field status) $(forms "$LAB_DIR/c8" "$HDR") $(logq 'path=/other/gzip?s=bearer&enc=deflate' --field scrubbed)"
expect_eq "... control: the origin did send it deflated" "you sent <Bearer $HDR>" \
	"$(unpacked 'line~/other/gzip?s=bearer&enc=deflate')"

# a token command: the last minted token masks a request that was not injected
out=$(icurl -o /dev/null -w '%{http_code}' 'https://tok.test:9445/api/echo-url?h=x-token' 2>&1)
expect_eq "a token rule's request: injected" "302 tok" "$out $(logq 'path=/api/echo-url?h=x-token' --field inject)"
icurl -D - 'https://tok.test:9445/other/last?h=x-token' >"$LAB_DIR/c9" 2>&1
check "not injected: the last minted token is masked" "/other/last?h=x-token" "$LAB_DIR/c9" "$TOK"

# the rule does not serve this client: not injected, scrubbed
st=$("$PY" "$INTEG_DIR/stamp.py" "$STATE/stamp.key" 10.88.0.7 podman 0011223344556677 1)
out=$(icurl -o /dev/null -w '%{http_code}' --proxy-header "Sluice-Stamp: $st" 'https://tls.test:9445/x/echo-url' 2>&1)
expect_eq "a stamped client is served by its rule" "302 st" "$out $(logq 'path=/x/echo-url' --field inject)"
icurl -D - 'https://tls.test:9445/x/last?s=bearer' >"$LAB_DIR/c10" 2>&1
check "not injected (the rule does not serve an unattributed client): masked" "/x/last?s=bearer" \
	"$LAB_DIR/c10" "$ST"
expect_eq "... the row names no rule" null "$(logq 'path=/x/last?s=bearer' --field inject)"

# require= without its placeholder: the client's own value is sent, the response still scrubbed
out=$(icurl -o /dev/null -w '%{http_code}' -H 'X-Ph: sandbox-placeholder' 'https://tok.test:9445/ph/echo-url?h=x-ph' 2>&1)
expect_eq "require=: the placeholder is replaced" "302 ph" "$out $(logq 'path=/ph/echo-url?h=x-ph' --field inject)"
icurl -D - -H 'X-Ph: mine' 'https://tok.test:9445/ph/last?h=x-none&of=x-ph' >"$LAB_DIR/c11" 2>&1
check "require= found the client's own value (not injected): the response is scrubbed" \
	"/ph/last?h=x-none&of=x-ph" "$LAB_DIR/c11" "$PH"
expect_eq "... the row names no rule, the origin got the client's value" "null mine" \
	"$(logq 'path=/ph/last?h=x-none&of=x-ph' --field inject) $("$PY" -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "/ph/last" in r["line"]: print(r["headers"].get("x-ph"))' "$R")"

# plain HTTP from a host a rule names is scrubbed too (here the client sends
# the value itself, standing in for an origin that shows a stored one)
pcurl -D - -H "Authorization: Bearer $HDR" 'http://api.test/reflect?mode=chunked' >"$LAB_DIR/c12" 2>&1
expect_eq "plain HTTP from a rule's host: the reflection is masked, the row counts three" "none 3 http" \
	"$(forms "$LAB_DIR/c12" "$HDR") $(logq 'path=/reflect?mode=chunked' --field scrubbed) $(logq 'path=/reflect?mode=chunked' --field kind)"
expect_eq "... control: the origin got the value" 1 "$(grep -c "Bearer $HDR" "$LAB_DIR/inet.jsonl")"

# Range: each piece of a resource holding the secret passes the scrubber
# whole-less (0-K, then K+1-; or one multi-range cut inside it) and the client
# joins them. To a host a rule names, Range, If-Range and Request-Range are
# not sent up (the origin answers the whole body, which is scrubbed), and a
# 206 that comes anyway is refused (502 range-response).
# joined FILE...: the bodies of the responses in FILEs (curl -o output),
# multipart/byteranges parts taken out, joined in order
joined() {
	"$PY" -c 'import re, sys
out = b""
for f in sys.argv[1:]:
    b = open(f, "rb").read()
    if b.startswith(b"--SEP\r\n"):
        for part in b.split(b"--SEP")[1:-1]:
            out += part.split(b"\r\n\r\n", 1)[1][:-2]
    else:
        out += b
sys.stdout.write(out.decode("latin-1"))' "$@"
}
pre=$(printf 'you sent <Bearer ' | wc -c)
cut=$((pre + ${#HDR} / 2))
out=$(icurl -o "$LAB_DIR/rp" -w '%{http_code}' -H 'Range: bytes=0-4' 'https://pass.test:9445/x/range' 2>&1)
expect_eq "control: to a host no rule names, the range route honours Range (206, the piece asked for)" \
	"206 you s" "$out $(cat "$LAB_DIR/rp")"
c1=$(icurl -o "$LAB_DIR/r1" -w '%{http_code}' -H "Range: bytes=0-$((cut - 1))" -H 'If-Range: "x"' \
	'https://api.test:9445/h/range?p=1' 2>&1)
c2=$(icurl -o "$LAB_DIR/r2" -w '%{http_code}' -H "Range: bytes=$cut-" -H "Request-Range: bytes=$cut-" \
	'https://api.test:9445/h/range?p=2' 2>&1)
joined "$LAB_DIR/r1" "$LAB_DIR/r2" >"$LAB_DIR/r12"
expect_eq "two Range requests whose pieces split the secret: the client never sees the whole value across both" \
	none "$(forms "$LAB_DIR/r12" "$HDR")"
expect_eq "... both answered 200 with the whole body, masked, the rows count one each" \
	"200 200 you sent <Bearer $stars> 1 1" \
	"$c1 $c2 $(tr -d '\n' <"$LAB_DIR/r1") $(logq 'path=/h/range?p=1' --field scrubbed) $(logq 'path=/h/range?p=2' --field scrubbed)"
expect_eq "... the origin got no Range, If-Range or Request-Range, and did reflect the value" \
	"0 0 1 1" \
	"$("$PY" -c 'import json,sys
n = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "/h/range?p=" in r["line"]:
        n += len({"range", "if-range", "request-range"} & set(r["headers"]))
print(n)' "$R") $(oq 'line~/h/range?p=' 'sent~ 206 ' --count) $(oq 'line~/h/range?p=1' "sent~$HDR" --count) $(oq 'line~/h/range?p=2' "sent~$HDR" --count)"
c3=$(icurl -o "$LAB_DIR/r3" -w '%{http_code}' -H "Range: bytes=0-$((cut - 1)),$cut-" \
	'https://api.test:9445/h/range?p=3' 2>&1)
joined "$LAB_DIR/r3" >"$LAB_DIR/r3j"
expect_eq "one multi-range request cut inside the secret: its parts joined never hold the value" \
	"200 none" "$c3 $(forms "$LAB_DIR/r3j" "$HDR")"
icurl -D - -o "$LAB_DIR/r4" 'https://api.test:9445/h/range?force=0-'$((cut - 1)) >"$LAB_DIR/r4h" 2>&1
cat "$LAB_DIR/r4" >>"$LAB_DIR/r4h"
expect_eq "a 206 the origin sends although no Range went up: refused 502 range-response, nothing of it sent" \
	"502 range-response none" \
	"$(logq 'path=/h/range?force=0-'$((cut - 1)) --field status) $(logq 'path=/h/range?force=0-'$((cut - 1)) --field reason) $(grep -c 'you sent' "$LAB_DIR/r4h" | sed 's/^0$/none/')"
expect_eq "... control: the origin did send the piece asked for, 206" "HTTP/1.1 206 1" \
	"$(oq 'line~/h/range?force=' --field sent | head -1 | cut -d' ' -f1-2) $(oq 'line~/h/range?force=' "sent~you sent <Bearer ${HDR:0:$((cut - pre))}" --count)"

expect_eq "no value appears in the network log" none "$(forms "$NETLOG" "$HDR" "$QS" "$BASIC" "$TOK" "$ST" "$SP")"
lab_done
