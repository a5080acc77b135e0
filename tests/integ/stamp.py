#!/usr/bin/env python3
"""Write a Sluice-Stamp header value the way sluice-forward will (lib/stamp.h).

  stamp.py KEYFILE SRC NET BOOT SEQ [--kid N] [--as PRINCIPAL] [--tamper]

Signs with the current key of KEYFILE (or key N with --kid), an independent
HMAC-SHA256 implementation (Python's hmac) of the format the proxy checks.
--as adds the optional as= field (right after net=). --tamper flips one hex
digit of the MAC.
"""
import hashlib, hmac, sys


def main():
    args = sys.argv[1:]
    kid, tamper, principal = None, False, None
    if "--tamper" in args:
        args.remove("--tamper")
        tamper = True
    if "--kid" in args:
        i = args.index("--kid")
        kid = int(args[i + 1])
        del args[i:i + 2]
    if "--as" in args:
        i = args.index("--as")
        principal = args[i + 1]
        del args[i:i + 2]
    keyfile, src, net, boot, seq = args
    keys = {}
    current = None
    for line in open(keyfile):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        f = line.split()
        keys[int(f[0])] = bytes.fromhex(f[1])
        if len(f) == 2:
            current = int(f[0])
    kid = current if kid is None else kid
    as_field = "" if principal is None else "; as=" + principal
    signed = "v=1; kid=%d; src=%s; net=%s%s; boot=%s; seq=%s" % (kid, src, net, as_field, boot, seq)
    mac = hmac.new(keys[kid], signed.encode(), hashlib.sha256).hexdigest()
    if tamper:
        mac = ("1" if mac[0] != "1" else "2") + mac[1:]
    print("%s; mac=%s" % (signed, mac))


main()
