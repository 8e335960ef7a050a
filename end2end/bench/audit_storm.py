"""The audit storm of issue 23: 16 clients post worst-case sources (1 MiB,
nested as deep as each language's syntax allows) to POST /api/v1/audit at
once while another client reads /issues. Prints the server's resident
memory before (baseline), at its peak (VmHWM) and a minute after the
storm, the p50/p99 of /issues during the storm, and what the audit clients
were answered.

    python3 end2end/bench/audit_storm.py [--bin target/release/fixedpoint]
        [--clients 16] [--settle 60] [--no-retry]

By default each audit client that is told 503 waits its Retry-After and
posts again until its source is audited, so the storm lasts until all 16
were audited (the worst case for memory and for the page's latency);
--no-retry sends each source once. The server runs on a fresh SQLite file
with its defaults (as many audit slots as cores, a 2 s wait for one) except
the per-address audit rate, raised so that the retries are not refused:
what bounds the storm must be the slots, not the rate limit.

Goal: peak resident memory under 512 MB, p99 of /issues under 100 ms during
the storm, and memory a minute later within 20% of the baseline.
"""

import argparse
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MIB = 1024 * 1024


def nested(prefix, opening, middle, closing, suffix, size=MIB - 256):
    """prefix, then as many openings as fit in `size` bytes (1 MiB less room for
    the JSON around it: the API reads at most 1 MiB), then as many closings."""
    room = size - len(prefix) - len(middle) - len(suffix)
    depth = room // (len(opening) + len(closing))
    return prefix + opening * depth + middle + closing * depth + suffix


def worst_cases():
    """One worst case per language, plus Rust's nested blocks (the shape of the
    issue's 900 KB, 150,000-deep source)."""
    return [
        ("python", nested("x = ", "[", "1", "]", "\n")),
        ("javascript", nested("let x = ", "(", "1", ")", ";\n")),
        ("typescript", nested("let x: number = ", "(", "1", ")", ";\n")),
        ("bash", nested("", "(", "true", ")", "\n")),
        ("go", nested("package a\nvar x = ", "(", "1", ")", "\n")),
        ("rust", nested("fn f() { let x = ", "(", "1", ")", "; }\n")),
        ("rust", nested("fn f() {\n", "if a {", "", "}", "\n}\n")),
    ]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def status_kb(pid, field):
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def request(port, method, path, body=None, headers=None, timeout=120):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        data = response.read()
        return response.status, dict(response.getheaders()), data
    finally:
        connection.close()


def percentile(values, fraction):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "fixedpoint"))
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--settle", type=int, default=60, help="seconds to wait after the storm")
    parser.add_argument("--no-retry", action="store_true")
    args = parser.parse_args()
    if not os.path.exists(args.bin):
        sys.exit("no %s: build it with `cargo build --release -p server` or pass --bin" % args.bin)

    workdir = tempfile.mkdtemp(prefix="fixedpoint-storm-")
    port = free_port()
    env = dict(
        os.environ,
        DATABASE_URL="sqlite://%s?mode=rwc" % os.path.join(workdir, "storm.db"),
        FIXEDPOINT_ADDR="127.0.0.1:%d" % port,
        LEPTOS_SITE_ROOT=os.path.join(workdir, "site"),
        RUST_LOG="warn",
        FIXEDPOINT_AUDIT_RATE_PER_MINUTE="100000",
    )
    log = open(os.path.join(workdir, "server.log"), "w")
    server = subprocess.Popen([args.bin, "serve"], env=env, stdout=log, stderr=log)
    try:
        deadline = time.time() + 60
        while True:
            try:
                if request(port, "GET", "/healthz", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            if server.poll() is not None or time.time() > deadline:
                sys.exit("fixedpoint serve did not start; see %s" % log.name)
            time.sleep(0.1)

        # Warm up: the page and one small audit, then the baseline.
        for _ in range(20):
            request(port, "GET", "/issues")
        small = json.dumps({"source": "for turn in range(10):\n    if done():\n        break\n", "language": "python"})
        request(port, "POST", "/api/v1/audit", small, {"content-type": "application/json"})
        time.sleep(2)
        baseline_kb = status_kb(server.pid, "VmRSS")
        baseline_parts = [status_kb(server.pid, field) for field in ("RssAnon", "RssFile")]

        cases = worst_cases()
        bodies = [
            json.dumps({"source": source, "language": language}).encode()
            for language, source in (cases[n % len(cases)] for n in range(args.clients))
        ]
        storm_over = threading.Event()
        latencies = []
        page_errors = []

        def reader():
            while not storm_over.is_set():
                started = time.perf_counter()
                status, _, _ = request(port, "GET", "/issues")
                latencies.append((time.perf_counter() - started) * 1000)
                if status != 200:
                    page_errors.append(status)
                time.sleep(0.02)

        results = [None] * args.clients
        memory = {"max_rss_kb": baseline_kb}

        def sampler():
            while not storm_over.is_set():
                memory["max_rss_kb"] = max(memory["max_rss_kb"], status_kb(server.pid, "VmRSS"))
                time.sleep(0.05)

        def client(n):
            answers = []
            started = time.perf_counter()
            while True:
                status, headers, data = request(
                    port, "POST", "/api/v1/audit", bodies[n], {"content-type": "application/json"}
                )
                answers.append(status)
                if status == 503 and not args.no_retry:
                    time.sleep(float(headers.get("retry-after", headers.get("Retry-After", "1"))))
                    continue
                warnings = []
                if status == 200:
                    warnings = [w["code"] for w in json.loads(data)["files"][0]["warnings"]]
                results[n] = (answers, time.perf_counter() - started, warnings)
                return

        background = [threading.Thread(target=reader), threading.Thread(target=sampler)]
        for thread in background:
            thread.start()
        time.sleep(1)
        storm_started = time.perf_counter()
        clients = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join()
        storm_seconds = time.perf_counter() - storm_started
        storm_over.set()
        for thread in background:
            thread.join()
        peak_kb = status_kb(server.pid, "VmHWM")

        time.sleep(args.settle)
        after_kb = status_kb(server.pid, "VmRSS")
        after_parts = [status_kb(server.pid, field) for field in ("RssAnon", "RssFile")]

        answered = {}
        for answers, _, _ in results:
            for status in answers:
                answered[status] = answered.get(status, 0) + 1
        audited = sum(1 for answers, _, _ in results if answers[-1] == 200)
        too_deep = sum(1 for _, _, warnings in results if "nesting-too-deep" in warnings)
        slowest = max(seconds for _, seconds, _ in results)
        print("audit storm: %d clients, %d sources of %d KiB (%s)" % (
            args.clients, len(bodies), MIB // 1024, ", ".join(sorted({language for language, _ in cases}))))
        print("  storm lasted          %.1f s; audited %d of %d (slowest client %.1f s); answers %s" % (
            storm_seconds, audited, args.clients, slowest, json.dumps(answered, sort_keys=True)))
        print("  nesting-too-deep      in %d of %d reports" % (too_deep, audited))
        print("  baseline RSS          %.1f MB" % (baseline_kb / 1024))
        print("  peak RSS (VmHWM)      %.1f MB   (sampled max %.1f MB)  goal < 512 MB" % (
            peak_kb / 1024, memory["max_rss_kb"] / 1024))
        print("  /issues during storm  %d requests, p50 %.1f ms, p99 %.1f ms, max %.1f ms, errors %d  goal p99 < 100 ms" % (
            len(latencies), percentile(latencies, 0.5), percentile(latencies, 0.99), max(latencies or [0]), len(page_errors)))
        print("  RSS %d s later         %.1f MB (%+.0f%% of the baseline)  goal within 20%%" % (
            args.settle, after_kb / 1024, 100.0 * (after_kb - baseline_kb) / max(baseline_kb, 1)))
        # Where the difference lives: the heap (anonymous memory, what the
        # allocator keeps) or mapped files (the binary's code and grammar
        # tables, paged in on first use of a language and kept by the kernel).
        print("    of which heap      %.1f -> %.1f MB (RssAnon); mapped files %.1f -> %.1f MB (RssFile)" % (
            baseline_parts[0] / 1024, after_parts[0] / 1024, baseline_parts[1] / 1024, after_parts[1] / 1024))
        ok = peak_kb < 512 * 1024 and percentile(latencies, 0.99) < 100 and after_kb <= baseline_kb * 1.2
        print("  goals                 %s" % ("met" if ok else "NOT met"))
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
