"""Crash test of the newsletter's delivery ledger.

For each database (SQLite, the local PostgreSQL) and each run: 5,000
confirmed subscribers, `fixedpoint issues send`, a server sending to the
aiosmtpd sink, `kill -9` of the server once part of the send went out, a
restart, and a wait until nothing is queued. It then checks that every
recipient has exactly one `sent` row (the ledger's counts), that the sink
received every address, and that the duplicates are no more than the
connections in flight at the kill, and prints the counts of each run.

    end2end/.venv/bin/python end2end/bench/delivery_crash.py [--bin target/release/fixedpoint]
        [--runs 3] [--recipients 5000] [--connections 4] [--db sqlite --db postgres]

The restart waits for the lease of the rows claimed before the kill (60 s).
Exit code 1 when any run breaks a rule.
"""

import argparse
import collections
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import delivery_common as common  # noqa: E402


def one_run(binary, python, backend, recipients, connections, rate):
    workdir = common.workspace()
    database = common.Database(backend, workdir)
    out = os.path.join(workdir, "received.txt")
    sink = common.Sink(python, "--out", out, "--recipients-only")
    env = {"FIXEDPOINT_MAIL_CONNECTIONS": str(connections), "FIXEDPOINT_MAIL_RATE_PER_SECOND": str(rate)}
    try:
        slug = common.seed(binary, database, workdir, recipients, padding_words=100)
        server = common.Server(binary, database, sink.port, workdir, env)
        started = time.time()
        common.run(binary, database, "issues", "send", slug)
        # Kill somewhere between a fifth and four fifths of the send.
        target = int(recipients * random.uniform(0.2, 0.8))
        while True:
            received = sum(1 for _ in open(out)) if os.path.exists(out) else 0
            if received >= target:
                break
            if time.time() - started > 600:
                sys.exit("the send did not reach %d messages in 10 minutes" % target)
            time.sleep(0.01)
        server.kill()
        at_kill = common.counts(binary, database, slug)
        received_at_kill = sum(1 for _ in open(out))
        server = common.Server(binary, database, sink.port, workdir, env)
        while True:
            now = common.counts(binary, database, slug)
            if now["queued"] == 0:
                break
            if time.time() - started > 900:
                sys.exit("the send did not finish after the restart: %r" % now)
            time.sleep(0.5)
        server.stop()
        lines = [line.strip() for line in open(out) if line.strip()]
        per_address = collections.Counter(lines)
        expected = {"reader%d@example.com" % n for n in range(recipients)}
        duplicates = len(lines) - len(per_address)
        result = {
            "backend": backend,
            "killed_after": received_at_kill,
            "sent_rows_at_kill": at_kill["sent"],
            "sent": now["sent"],
            "queued": now["queued"],
            "failed": now["failed"],
            "bounced": now["bounced"],
            "received": len(lines),
            "distinct": len(per_address),
            "missing": len(expected - set(per_address)),
            "duplicates": duplicates,
            "seconds": round(time.time() - started, 1),
        }
        result["ok"] = (
            result["sent"] == recipients
            and result["failed"] == 0
            and result["bounced"] == 0
            and result["missing"] == 0
            and set(per_address) == expected
            and duplicates <= connections
        )
        return result
    finally:
        sink.stop()
        database.close()
        common.clean(workdir)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--recipients", type=int, default=5000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--rate", type=int, default=0, help="FIXEDPOINT_MAIL_RATE_PER_SECOND (0: no limit)")
    parser.add_argument("--db", action="append", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    binary = common.binary_from(args.bin)
    python = common.python_of_venv()
    failed = False
    for backend in args.db or ["sqlite", "postgres"]:
        for run in range(1, args.runs + 1):
            result = one_run(binary, python, backend, args.recipients, args.connections, args.rate)
            failed |= not result["ok"]
            print(
                "%(backend)s run %(run)d: killed after %(killed_after)d received (%(sent_rows_at_kill)d rows sent); "
                "after restart sent %(sent)d, queued %(queued)d, failed %(failed)d, bounced %(bounced)d; "
                "sink received %(received)d, %(distinct)d distinct, %(missing)d missing, %(duplicates)d duplicates "
                "(at most %(connections)d allowed); %(seconds)ss; %(verdict)s"
                % dict(result, run=run, connections=args.connections, verdict="ok" if result["ok"] else "FAILED"),
                flush=True,
            )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
