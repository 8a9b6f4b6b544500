#!/usr/bin/env python3
"""A reference heartbeat publisher for redrive's monitor, in any Python 3.

It writes the one key of the protocol (docs/heartbeat-protocol.md) and
nothing else: worker:{type}:{instance} -> JSON, TTL 30 s, every 10 s; on
SIGTERM or SIGINT it writes SHUTTING_DOWN with a TTL of 60 s and exits.
It speaks Redis's protocol (RESP) over a socket with the standard library
only; with redis-py, `r.set(key, value, ex=ttl)` replaces `set_ex`.

Environment: REDIS_ADDR (host:port, default 127.0.0.1:6379), REDIS_PREFIX
(redis.prefix, default none), WORKER_TYPE (the worker's name, required),
WORKER_INSTANCE (default hostname-pid), HEARTBEAT_INTERVAL, HEARTBEAT_TTL
and HEARTBEAT_SHUTDOWN_TTL (seconds, default 10, 30 and 60).

Your worker calls handled() after each message and sets lag from its
consumer; both are read at the next beat.
"""
import datetime
import json
import os
import signal
import socket
import threading


class Redis:
    """Just enough of RESP to SET a key with a TTL."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.file = self.sock.makefile("rb")

    def set_ex(self, key, value, ttl_seconds):
        args = [b"SET", key.encode(), value.encode(), b"EX", str(ttl_seconds).encode()]
        cmd = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
        self.sock.sendall(cmd)
        reply = self.file.readline()
        if not reply.startswith(b"+"):
            raise RuntimeError("redis: %r" % reply)


def now_rfc3339():
    # RFC 3339 in UTC with microseconds; any precision is accepted, and so
    # are epoch milliseconds (a JSON number).
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


class Heartbeat:
    def __init__(self):
        self.redis = Redis(os.environ.get("REDIS_ADDR", "127.0.0.1:6379"))
        instance = os.environ.get("WORKER_INSTANCE") or "%s-%d" % (socket.gethostname(), os.getpid())
        self.key = "%sworker:%s:%s" % (os.environ.get("REDIS_PREFIX", ""), os.environ["WORKER_TYPE"], instance)
        self.interval = float(os.environ.get("HEARTBEAT_INTERVAL", "10"))
        self.ttl = int(os.environ.get("HEARTBEAT_TTL", "30"))
        self.shutdown_ttl = int(os.environ.get("HEARTBEAT_SHUTDOWN_TTL", "60"))
        self.last_message_at = None
        self.lag = 0
        self.stop = threading.Event()

    def handled(self):
        self.last_message_at = now_rfc3339()

    def beat(self, status, ttl):
        value = json.dumps({
            "timestamp": now_rfc3339(),
            "status": status,  # RUNNING, PAUSED or SHUTTING_DOWN
            "last_message_at": self.last_message_at,  # null until the first message
            "consumer_lag": self.lag,  # a whole number >= 0
        })
        self.redis.set_ex(self.key, value, ttl)

    def run(self):
        while not self.stop.is_set():
            self.beat("RUNNING", self.ttl)
            self.stop.wait(self.interval)
        self.beat("SHUTTING_DOWN", self.shutdown_ttl)


if __name__ == "__main__":
    hb = Heartbeat()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: hb.stop.set())
    print("beating", hb.key, flush=True)
    hb.run()
