"""Benchmark of the newsletter's deliverer: 10,000 recipients to a local SMTP
sink (aiosmtpd, counting only) with no rate limit, on SQLite and the local
PostgreSQL. Each run reports messages a second (queued to all sent, from the
ledger) and the server's peak memory (VmHWM), and the same script measures
the sink's own ceiling with a bare client: raw SMTP over as many
connections, messages of the size the server sent, no database, no
rendering. Medians of --repeat runs.

    end2end/.venv/bin/python end2end/bench/delivery_bench.py [--bin target/release/fixedpoint]
        [--recipients 10000] [--connections 4] [--repeat 3] [--db sqlite --db postgres]

Goal (issue 18): at least 200 messages a second on a two-core machine, at
least half of the sink's ceiling, under 100 MB.
"""

import argparse
import asyncio
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import delivery_common as common  # noqa: E402


def server_run(binary, python, backend, recipients, connections):
    workdir = common.workspace()
    database = common.Database(backend, workdir)
    sink = common.Sink(python, "--count-only")
    try:
        slug = common.seed(binary, database, workdir, recipients)
        env = {"FIXEDPOINT_MAIL_CONNECTIONS": str(connections), "FIXEDPOINT_MAIL_RATE_PER_SECOND": "0"}
        server = common.Server(binary, database, sink.port, workdir, env)
        started = time.time()
        common.run(binary, database, "issues", "send", slug)
        while True:
            counts = common.counts(binary, database, slug)
            if counts["queued"] == 0:
                break
            time.sleep(0.1)
        elapsed = time.time() - started
        peak_kb = server.peak_rss_kb()
        server.stop()
        last = sink.stop()
        sink = None
        _, received, _, total_bytes = last.split()
        return {
            "rate": counts["sent"] / elapsed,
            "peak_mb": peak_kb / 1024,
            "sent": counts["sent"],
            "received": int(received),
            "message_bytes": int(total_bytes) // max(int(received), 1),
        }
    finally:
        if sink is not None:
            sink.stop()
        database.close()
        common.clean(workdir)


async def bare_client(port, count, connections, size):
    """Raw SMTP, one message after another on each connection."""
    body = (b"Subject: ceiling\r\nFrom: news@fixedpoint.example\r\n\r\n" + b"x" * 76 + b"\r\n") * max(
        1, size // 130
    )
    per_connection = [count // connections + (1 if n < count % connections else 0) for n in range(connections)]

    async def one(n):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def reply():
            while True:
                line = await reader.readline()
                if not line:
                    raise RuntimeError("the sink closed the connection")
                if line[3:4] != b"-":
                    if not line[:1] in (b"2", b"3"):
                        raise RuntimeError(line.decode())
                    return

        await reply()
        writer.write(b"EHLO bench\r\n")
        await reply()
        for index in range(n):
            writer.write(b"MAIL FROM:<news@fixedpoint.example>\r\n")
            await reply()
            writer.write(b"RCPT TO:<reader%d@example.com>\r\n" % index)
            await reply()
            writer.write(b"DATA\r\n")
            await reply()
            writer.write(body + b".\r\n")
            await reply()
        writer.write(b"QUIT\r\n")
        await writer.drain()
        writer.close()

    started = time.time()
    await asyncio.gather(*(one(n) for n in per_connection))
    return count / (time.time() - started)


def ceiling_run(python, recipients, connections, size):
    sink = common.Sink(python, "--count-only")
    try:
        return asyncio.run(bare_client(sink.port, recipients, connections, size))
    finally:
        sink.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin")
    parser.add_argument("--recipients", type=int, default=10000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--db", action="append", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    binary = common.binary_from(args.bin)
    python = common.python_of_venv()
    for backend in args.db or ["sqlite", "postgres"]:
        runs = [server_run(binary, python, backend, args.recipients, args.connections) for _ in range(args.repeat)]
        size = runs[0]["message_bytes"]
        ceilings = [ceiling_run(python, args.recipients, args.connections, size) for _ in range(args.repeat)]
        rate = statistics.median(run["rate"] for run in runs)
        peak = statistics.median(run["peak_mb"] for run in runs)
        ceiling = statistics.median(ceilings)
        print(
            "%s: %d recipients, %d connections, messages of %d bytes: server %.0f msg/s (runs %s), "
            "peak RSS %.1f MB (runs %s); sink ceiling with a bare client %.0f msg/s (runs %s); "
            "server/ceiling %.2f"
            % (
                backend,
                args.recipients,
                args.connections,
                size,
                rate,
                ", ".join("%.0f" % run["rate"] for run in runs),
                peak,
                ", ".join("%.1f" % run["peak_mb"] for run in runs),
                ceiling,
                ", ".join("%.0f" % value for value in ceilings),
                rate / ceiling,
            ),
            flush=True,
        )
        if any(run["sent"] != args.recipients or run["received"] != args.recipients for run in runs):
            sys.exit("a run did not deliver every message: %r" % runs)


if __name__ == "__main__":
    main()
