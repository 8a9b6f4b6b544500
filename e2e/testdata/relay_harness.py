#!/usr/bin/env python3
"""The e2e suite's Python endpoint: docs/relay.md's example (endpoint.py,
extracted from the page into the directory argv[1]) serving on the port
argv[2], with a handle that answers by each message's "behaviour" header
(as e2e/relay_endpoints.go's Go endpoint does) and reports every request
it gets as one JSON line on stdout.

Behaviours: ok; fail:N (a failure on attempts 1..N); always; permanent;
permanent-once (permanent unless replayed); retry-after:S (429 with
Retry-After S on attempt 1); hang-once (no answer for argv[3] seconds on
attempt 1); drop (permanent).
"""
import json
import sys
import threading
import time

sys.path.insert(0, sys.argv[1])
import endpoint  # noqa: E402  (docs/relay.md's example)

HANG = float(sys.argv[3])
REPORTING = threading.Lock()  # one line per request: the handler runs in many threads


def decide(event):
    behaviour = event.headers.get(b"behaviour", b"ok").decode()
    name, _, arg = behaviour.partition(":")
    a = event.attempt
    if name == "fail":
        return "fail" if a <= int(arg) else "ok"
    if name == "always":
        return "fail"
    if name in ("permanent", "drop"):
        return "permanent"
    if name == "permanent-once":
        return "ok" if event.replayed_from else "permanent"
    if name == "retry-after":
        return "retry-after" if a == 1 else "ok"
    if name == "hang-once":
        return "hang" if a == 1 else "ok"
    return "ok"


def handle(event):
    answer = decide(event)
    line = json.dumps({
        "id": event.id,
        "case": event.headers.get(b"case", b"").decode("utf-8", "replace"),
        "attempt": event.attempt,
        "key": None if event.key is None else event.key.hex(),
        "body": event.body.hex(),
        "headers": {k.hex(): v.hex() for k, v in event.headers.items()},
        "replayed_from": event.replayed_from or "",
        "last_error_class": event.last_error_class or "",
        "redelivered": event.redelivered,
        "answer": answer,
    })
    with REPORTING:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    if answer == "fail":
        raise RuntimeError(f"downstream failed on attempt {event.attempt}")
    if answer == "permanent":
        raise endpoint.Permanent(f"invalid payout {event.id}")
    if answer == "retry-after":
        raise endpoint.RetryLater(int(event.headers[b"behaviour"].split(b":")[1]))
    if answer == "hang":
        time.sleep(HANG)


if __name__ == "__main__":
    endpoint.serve(int(sys.argv[2]), handle)
