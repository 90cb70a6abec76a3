#!/usr/bin/env python3
# An echo agent in a dialect, for measuring corral's codecs
# (docs/performance.md, "Dialects"): with --bus it answers each bus
# REQUEST with a RESPONSE whose result is the request's payload; with
# --agentmessage each TASK_ASSIGNMENT with a TASK_COMPLETE whose result is
# its input.  Anything else is ignored.
import json
import sys

bus = sys.argv[1:] == ["--bus"]
out = sys.stdout
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if bus and m.get("header", {}).get("type") == "REQUEST":
        i = m["header"]["messageId"]
        r = {"header": {"messageId": "r-" + i, "correlationId": i,
                        "type": "RESPONSE"},
             "body": {"status": "SUCCESS", "result": m["body"]["payload"],
                      "confidence": 0.9}}
    elif not bus and m.get("type") == "TASK_ASSIGNMENT":
        p = m["payload"]
        r = {"id": "r-" + m["id"], "type": "TASK_COMPLETE",
             "payload": {"task_id": p["task_id"], "result": p["input"],
                         "confidence": 0.9}}
    else:
        continue
    out.write(json.dumps(r, separators=(",", ":")) + "\n")
    out.flush()
