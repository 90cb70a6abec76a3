#!/usr/bin/env python3
# A tiny OTLP/HTTP collector for the regress tests: listens on 127.0.0.1
# (a port of the kernel's choosing, written to PORTFILE once it listens),
# takes POSTs of application/json and appends each body as one line to
# BODIES, and answers each with STATUS (200 by default).  A request that
# is not a POST to /v1/traces with Content-Type application/json and a
# Content-Length is written to BODIES as a line "BAD: why".  Runs until
# killed.  Usage: otlp-collector.py PORTFILE BODIES [STATUS]
import os
import socket
import sys

portfile, bodies = sys.argv[1], sys.argv[2]
status = int(sys.argv[3]) if len(sys.argv) > 3 else 200
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
with open(portfile + ".tmp", "w") as f:
    f.write("%d\n" % srv.getsockname()[1])
os.rename(portfile + ".tmp", portfile)


def record(line):
    with open(bodies, "ab") as f:
        f.write(line + b"\n")


while True:
    c, _ = srv.accept()
    c.settimeout(30)
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        hdrs = {}
        for h in lines[1:]:
            k, _, v = h.partition(b":")
            hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get(b"content-length", b"-1"))
        while 0 <= n and len(body) < n:
            chunk = c.recv(65536)
            if not chunk:
                break
            body += chunk
        if not lines[0].startswith(b"POST /v1/traces HTTP/1.1"):
            record(b"BAD: request line " + lines[0])
        elif hdrs.get(b"content-type") != b"application/json":
            record(b"BAD: content-type " + hdrs.get(b"content-type", b""))
        elif n < 0 or len(body) != n:
            record(b"BAD: %d bytes for a content-length of %d" % (len(body), n))
        else:
            record(body)
        reason = b"OK" if status == 200 else b"Unavailable"
        c.sendall(b"HTTP/1.1 %d %s\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
                  % (status, reason))
    except OSError:
        pass
    finally:
        c.close()
