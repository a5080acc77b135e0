#!/usr/bin/env python3
"""Code points that must not reach a terminal as themselves, for test_log_escape.sh.

  hidden.py sample CLASS      the class's sample as Python-escaped bytes (for raw.py)
  hidden.py rows KIND         hand-written log rows (KIND net or dns) that hold every
                              class raw (as an older writer left them) and JSON-escaped
  hidden.py check NAME        stdin (bytes) holds no hidden code point and no byte
                              that is not UTF-8; prints what it found, exit 1 if any
  hidden.py has NAME WHERE CLASS...  stdin holds each class as WHERE (json: a
                              row's JSON text, table: a table, first: only the
                              class's first code point, as a table shows it), exit 1 if not
  hidden.py cols RE TEXT      the screen column where RE starts on each stdin line
                              that contains TEXT (wide characters count 2)

Classes: c0 (0x00-0x1f, 0x7f), c1 (U+0080-U+009F), bidi (U+061C, U+200E,
U+200F, U+202A-U+202E, U+2066-U+2069), invisible (U+00AD, U+200B-U+200D,
U+2028, U+2029, U+2060, U+FEFF, the tag U+E0041), bad (bytes that are not
UTF-8) and wide (CJK and an emoji, which must pass through as they are).
"""
import re, sys, unicodedata

CLASSES = {
    "c0": "\x1b[31m\x07\x08\x7f",
    "c1": "\x9b31m\x9d52;c;QUJD\x9c\u202e\x80\x85\x9f",
    "bidi": "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
    "invisible": "\u00ad\u200b\u200c\u200d\u2028\u2029\u2060\ufeff\U000e0041",
    "wide": "\u6f22\u5b57\U0001f600\u00e9" + "\u6f22" * 12,
}
SHORT = {"c0": "c0", "c1": "c1", "bidi": "bd", "invisible": "iv", "wide": "wd"}
BAD = b"\xff\xc0\x80\xed\xa0\x80\xe2\x82"

# what the tables show for each (the JSON rows write the same \\uXXXX, lower case)
FIRST = {"c0": "\\u001b", "c1": "\\u009b", "bidi": "\\u061c", "invisible": "\\u00ad",
         "wide": "\u6f22\u5b57\U0001f600\u00e9"}
SHOWN = {
    "c0": ["\\u001b[31m", "\\u0007", "\\u0008", "\\u007f"],
    "c1": ["\\u009b31m", "\\u009d52;c;QUJD\\u009c\\u202e", "\\u0080", "\\u0085", "\\u009f"],
    "bidi": ["\\u061c\\u200e\\u200f\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069"],
    "invisible": ["\\u00ad\\u200b\\u200c\\u200d\\u2028\\u2029\\u2060\\ufeff\\U000e0041"],
    "wide": ["\u6f22\u5b57\U0001f600\u00e9"],
}


def hidden(ch):
    return unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") and ch not in "\n"


def sample(cls):
    if cls == "bad":
        b = BAD
    else:
        b = CLASSES[cls].encode()
    return "".join(chr(c) if 0x20 < c < 0x7f and c != 0x5c else "\\x%02x" % c for c in b)


def rows(kind):
    import json
    out = []
    n = 0
    for i, (cls, s) in enumerate(sorted(CLASSES.items())):
        for raw in (True, False):
            n += 1
            tag = SHORT[cls] + ("r" if raw else "e")
            if kind == "net":
                row = {"ts": "2026-12-01T17:00:%02d.000Z" % n, "conn": i + 1,
                       "kind": "http", "method": "GET", "host": "h%s.%s.test" % (tag, s), "port": 80,
                       "path": "/%s/%s" % (tag, s), "status": 403, "decision": "refuse",
                       "reason": "not-granted", "refusal": "00000000000%d" % i,
                       "grant": None, "ua": s}
            else:
                row = {"ts": "2026-12-01T17:00:%02d.000Z" % n, "kind": "dns",
                       "client": "127.0.0.1:5000", "transport": "udp",
                       "name": "n%s.%s.test" % (tag, s), "type": "A", "decision": "refuse",
                       "reason": "not-granted", "grant": None, "rcode": "NXDOMAIN",
                       "kept": 0, "removed": 0, "upstream": None, "cache": False, "ms": 0.1,
                       "detail": None}
            # raw: an older writer left the code points as they are (C0 still
            # escaped: a raw C0 byte is not JSON); esc: what the writer writes
            out.append(json.dumps(row, ensure_ascii=not raw) if not raw else
                       re.sub(r"[\x00-\x1f\x7f]",
                              lambda m: "\\u%04x" % ord(m.group()),
                              json.dumps(row, ensure_ascii=False)))
    sys.stdout.write("\n".join(out) + "\n")


def check(name):
    data = sys.stdin.buffer.read()
    text = data.decode("utf-8", errors="surrogateescape")
    found = []
    for i, ch in enumerate(text):
        if 0xdc80 <= ord(ch) <= 0xdcff:
            found.append("byte 0x%02x" % (ord(ch) - 0xdc00))
        elif ch not in "\n\t" and hidden(ch):
            found.append("U+%04X" % ord(ch))
    if found:
        print("%s: %d raw: %s" % (name, len(found), " ".join(sorted(set(found)))))
        return 1
    return 0


def has(name, where, classes):
    text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    texts = [t for c in classes for t in SHOWN[c]] if where != "first" else \
        [FIRST[c] for c in classes]
    if where == "json":
        texts = [t.replace("\\U000e0041", "\\udb40\\udc41") for t in texts]
    missing = [t for t in texts if t not in text]
    if missing:
        print("%s: missing %s" % (name, " ".join(ascii(t) for t in missing)))
        return 1
    return 0


def width(s):
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else
               0 if unicodedata.category(c) in ("Mn", "Me") else 1 for c in s)


def cols(pattern, text):
    for line in sys.stdin.buffer.read().decode("utf-8", errors="replace").splitlines():
        if text in line:
            m = re.search(pattern, line)
            print(width(line[:m.start()]) if m else -1)
    return 0


def main():
    cmd = sys.argv[1]
    if cmd == "sample":
        print(sample(sys.argv[2]))
        return 0
    if cmd == "rows":
        rows(sys.argv[2])
        return 0
    if cmd == "check":
        return check(sys.argv[2])
    if cmd == "has":
        return has(sys.argv[2], sys.argv[3], sys.argv[4:])
    if cmd == "cols":
        return cols(sys.argv[2], sys.argv[3])
    return 2


if __name__ == "__main__":
    sys.exit(main())
