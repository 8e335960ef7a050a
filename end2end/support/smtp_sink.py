"""A real SMTP server for the delivery tests, the crash test and the benchmark.

aiosmtpd (end2end/.venv) listening on 127.0.0.1 at a free port, which it prints
as `port N` once it answers. Each message it accepts is appended to --out as
one JSON line per recipient: the address, the headers, the decoded plain text
and HTML parts (Python's own email package parses them) and the raw message.
--reject ADDR answers 550 to that recipient (a mailbox that does not exist);
--defer ADDR=N answers 451 to its first N tries (a greylisting server).
--count-only keeps no messages: it prints `received N bytes B` on SIGTERM
(the benchmark's sink, which must cost as little as it can).
--recipients-only writes only each accepted recipient's address, one a line
(the crash test counts them).
"""

import argparse
import email
import email.policy
import json
import signal
import socket
import sys
import threading

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, out, reject, defer, count_only, recipients_only=False):
        self.out = open(out, "a", encoding="utf-8") if out else None
        self.reject = {address.lower() for address in reject}
        self.defer = {}
        for item in defer:
            address, _, count = item.partition("=")
            self.defer[address.lower()] = int(count or "1")
        self.count_only = count_only
        self.recipients_only = recipients_only
        self.received = 0
        self.bytes = 0
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        key = address.lower()
        if key in self.reject:
            return "550 5.1.1 <%s>: no such mailbox here" % address
        if self.defer.get(key, 0) > 0:
            self.defer[key] -= 1
            return "451 4.7.1 <%s>: greylisted, try again later" % address
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.received += len(envelope.rcpt_tos)
            self.bytes += len(envelope.original_content or envelope.content or b"")
        if self.count_only:
            return "250 2.0.0 accepted"
        if self.recipients_only:
            self.out.write("".join(rcpt.lower() + "\n" for rcpt in envelope.rcpt_tos))
            self.out.flush()
            return "250 2.0.0 accepted"
        raw = envelope.original_content or envelope.content
        message = email.message_from_bytes(raw, policy=email.policy.default)
        text = message.get_body(preferencelist=("plain",))
        html = message.get_body(preferencelist=("html",))
        for rcpt in envelope.rcpt_tos:
            line = {
                "to": rcpt.lower(),
                "headers": {name: str(value) for name, value in message.items()},
                "text": text.get_content() if text is not None else None,
                "html": html.get_content() if html is not None else None,
                "raw": raw.decode("utf-8", "replace"),
            }
            self.out.write(json.dumps(line) + "\n")
        self.out.flush()
        return "250 2.0.0 accepted"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--reject", action="append", default=[])
    parser.add_argument("--defer", action="append", default=[])
    parser.add_argument("--count-only", action="store_true")
    parser.add_argument("--recipients-only", action="store_true")
    args = parser.parse_args()
    if not args.count_only and not args.out:
        parser.error("--out is needed unless --count-only")
    sink = Sink(args.out, args.reject, args.defer, args.count_only, args.recipients_only)
    port = args.port or free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port, data_size_limit=10 * 1024 * 1024)
    controller.start()
    print("port %d" % port, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    controller.stop()
    print("received %d bytes %d" % (sink.received, sink.bytes), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
