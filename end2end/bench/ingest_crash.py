"""Crash test of the ingest API (issue 23): `kill -9` among writers.

Part one, for each database (SQLite, the local PostgreSQL) and each run: a
fresh database with a team and a loop token, `fixedpoint serve`, 8 writers
each posting the rounds of a loop of its own (three findings a round) as fast
as the server answers, `kill -9` of the server after a random 1.5 to 4 s, a
restart on the same database and port, and the writers going on until the
run's time is up. A writer that got no answer sends the same round again (a
re-send with the same body is idempotent: PRODUCT.md's ingest contract).
Then every stored round is read from the database itself and compared with
what the writers were told:

- lost: a round answered 200 that is not stored;
- half-stored: a stored round without its three findings or its class;
- duplicated: a (loop, run, round) stored more than once, or a re-send of
  the same body answered 409.

Part two, on PostgreSQL: two instances on one database, each with a signed-in
live client (the loop page's event stream) per loop. Rounds posted to either
instance in turn must reach the live clients of both; then instance A is
killed while the writers go on (they move to B), and nothing acknowledged
by either may be lost, half-stored or duplicated, and B's live clients must
have every round.

    python3 end2end/bench/ingest_crash.py [--bin target/release/fixedpoint]
        [--runs 3] [--seconds 8] [--writers 8] [--db sqlite --db postgres] [--no-two-instances]

Standard library only (psql for PostgreSQL). Exit code 1 when any run breaks
a rule; the figures of every run are printed either way.
"""

import argparse
import http.client
import json
import os
import random
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import delivery_common as common  # noqa: E402

FINDINGS = 3
TEAM = "crash"
MEMBER = "watcher@example.com"


def round_body(loop, number):
    """The body of a loop's round: the same every time it is sent."""
    return json.dumps(
        {
            "round": number,
            "state": "%s-%d" % (loop, number % 7),
            "findings": [
                {
                    "target": {"id": "t%d" % k},
                    "severity": "blocking" if k == 0 else "warning",
                    "criterion": "c%d" % k,
                    "message": "round %d of %s, finding %d" % (number, loop, k),
                }
                for k in range(FINDINGS)
            ],
        }
    ).encode()


class Server:
    """`fixedpoint serve` on a given port (the restart reuses it)."""

    def __init__(self, binary, database, workdir, port):
        self.port = port
        env = dict(
            os.environ,
            DATABASE_URL=database.url,
            FIXEDPOINT_ADDR="127.0.0.1:%d" % port,
            PUBLIC_URL="http://127.0.0.1:%d" % port,
            LEPTOS_SITE_ROOT=os.path.join(workdir, "site"),
            RUST_LOG="warn",
        )
        self.log = open(os.path.join(workdir, "server-%d.log" % port), "a")
        self.process = subprocess.Popen([binary, "serve"], env=env, stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.time() > deadline:
                    sys.exit("fixedpoint serve did not start; see %s" % self.log.name)
                time.sleep(0.05)

    def kill(self):
        self.process.kill()
        self.process.wait()

    def stop(self):
        """A graceful stop; it waits for open event streams, so at most 30 s."""
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()


def post_round(port, token, loop, number):
    """(status, answer) of one round, or None when the server did not answer."""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request(
            "POST",
            "/api/v1/loops/%s/rounds" % loop,
            body=round_body(loop, number),
            headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
        )
        response = connection.getresponse()
        answer = response.read()
        connection.close()
        return response.status, answer
    except (OSError, http.client.HTTPException):
        return None


class Writer(threading.Thread):
    """Posts rounds 1, 2, ... of one loop until told to stop (or `last`),
    to the first of `ports` that answers, trying the next on no answer."""

    def __init__(self, ports, token, loop, first=1, last=None):
        super().__init__(daemon=True)
        self.ports, self.token, self.loop = ports, token, loop
        self.next, self.last = first, last
        self.acked, self.conflicts, self.failures, self.refused = [], [], 0, []
        self.turn = 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set() and (self.last is None or self.next <= self.last):
            port = self.ports[self.turn % len(self.ports)]
            answer = post_round(port, self.token, self.loop, self.next)
            if answer is None:
                self.failures += 1
                self.turn += 1  # another instance, if there is one
                time.sleep(0.02)
                continue
            status, body = answer
            if status == 200:
                self.acked.append(self.next)
                self.next += 1
                self.turn += 1  # instances in turn
            elif status == 409:
                self.conflicts.append(self.next)
                self.next += 1
            else:
                self.refused.append((self.next, status, body[:200]))
                time.sleep(0.05)


def stored_rounds(database):
    """(loop, run, round, findings, class) of every stored round."""
    query = (
        "SELECT l.name, r.run_id, r.round, COUNT(f.id), r.class FROM rounds r "
        "JOIN loops l ON l.id = r.loop_id LEFT JOIN findings f ON f.round_id = r.id "
        "GROUP BY r.id, l.name, r.run_id, r.round, r.class"
    )
    if database.backend == "sqlite":
        path = database.url[len("sqlite://"):].split("?")[0]
        with sqlite3.connect(path) as connection:
            return [tuple(row) for row in connection.execute(query)]
    done = subprocess.run(
        ["psql", database.url, "-At", "-F", "\t", "-c", query], capture_output=True, text=True, check=True
    )
    rows = []
    for line in done.stdout.splitlines():
        name, run, number, findings, klass = line.split("\t")
        rows.append((name, int(run), int(number), int(findings), klass))
    return rows


def tally(database, writers):
    """lost, half-stored, duplicated and acknowledged, from the database."""
    rows = stored_rounds(database)
    seen = {}
    half = 0
    for name, run, number, findings, klass in rows:
        seen[(name, run, number)] = seen.get((name, run, number), 0) + 1
        if findings != FINDINGS or not klass:
            half += 1
    duplicated = sum(count - 1 for count in seen.values()) + sum(len(w.conflicts) for w in writers)
    stored = {(name, number) for name, _, number in seen}
    acked = [(w.loop, number) for w in writers for number in w.acked]
    lost = sum(1 for key in acked if key not in stored)
    return {"acknowledged": len(acked), "stored": len(rows), "lost": lost, "half-stored": half, "duplicated": duplicated}


def setup(binary, database):
    common.run(binary, database, "team", "create", TEAM)
    token = common.run(binary, database, "token", "create", "--team", TEAM, "--name", "crash").strip().splitlines()[-1]
    return token


def one_run(binary, backend, seconds, writers_count, run_number):
    workdir = common.workspace()
    database = common.Database(backend, workdir)
    try:
        token = setup(binary, database)
        port = common.free_port()
        server = Server(binary, database, workdir, port)
        writers = [Writer([port], token, "writer-%d" % n) for n in range(writers_count)]
        started = time.time()
        for writer in writers:
            writer.start()
        kill_after = random.uniform(1.5, 4.0)
        time.sleep(kill_after)
        acked_at_kill = sum(len(w.acked) for w in writers)
        server.kill()
        time.sleep(0.3)
        server = Server(binary, database, workdir, port)
        time.sleep(max(0.0, seconds - (time.time() - started)))
        for writer in writers:
            writer.stopping.set()
        for writer in writers:
            writer.join(timeout=30)
        server.stop()
        figures = tally(database, writers)
        refused = [r for w in writers for r in w.refused]
        figures.update(
            {
                "killed after s": round(kill_after, 1),
                "acknowledged at the kill": acked_at_kill,
                "unanswered sends": sum(w.failures for w in writers),
                "refused": len(refused),
            }
        )
        print("%s run %d: %s" % (backend, run_number, json.dumps(figures)), flush=True)
        if refused:
            print("  first refusals: %r" % refused[:3], flush=True)
        return figures["lost"] == 0 and figures["half-stored"] == 0 and figures["duplicated"] == 0 and not refused
    finally:
        database.close()
        common.clean(workdir)


def session_cookie(binary, database, port):
    """A signed-in member's cookie, through the support tool's sign-in link."""
    common.run(binary, database, "team", "add-member", TEAM, MEMBER)
    link = common.run(binary, database, "login-link", MEMBER).strip().splitlines()[-1]
    token = urllib.parse.parse_qs(urllib.parse.urlparse(link).query)["token"][0]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request(
        "POST",
        "/signin/verify",
        body=urllib.parse.urlencode({"token": token}),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "same-origin"},
    )
    response = connection.getresponse()
    response.read()
    cookie = response.getheader("Set-Cookie") or ""
    if response.status != 303 or not cookie:
        sys.exit("signing in failed: %d" % response.status)
    return cookie.split(";")[0]


class LiveClient(threading.Thread):
    """A loop's event stream on one instance; keeps the rounds it got."""

    def __init__(self, port, cookie, loop):
        super().__init__(daemon=True)
        self.port, self.cookie, self.loop = port, cookie, loop
        self.rounds = set()
        self.opened = threading.Event()

    def run(self):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            connection.request(
                "GET",
                "/loops/%s/events?team=%s&last_event_id=0" % (self.loop, TEAM),
                headers={"Cookie": self.cookie, "Accept": "text/event-stream"},
            )
            response = connection.getresponse()
            if response.status != 200:
                sys.exit("the stream of %s answered %d" % (self.loop, response.status))
            self.opened.set()
            event = None
            while True:
                line = response.fp.readline()
                if not line:
                    return
                line = line.decode().rstrip("\n")
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:") and event == "round":
                    self.rounds.add(json.loads(line[5:])["round"])
        except (OSError, http.client.HTTPException):
            return


def wait_for(clients, expected, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all(expected[c.loop] <= c.rounds for c in clients):
            return True
        time.sleep(0.1)
    return False


def two_instances(binary, loops=4, rounds=200):
    workdir = common.workspace()
    database = common.Database("postgres", workdir)
    ok = True
    try:
        token = setup(binary, database)
        a, b = common.free_port(), common.free_port()
        server_a = Server(binary, database, workdir, a)
        server_b = Server(binary, database, workdir, b)
        cookie = session_cookie(binary, database, a)
        names = ["pair-%d" % n for n in range(loops)]
        for name in names:  # the loops exist before their streams open
            if (post_round(a, token, name, 1) or (0,))[0] != 200:
                sys.exit("the first round of %s was refused" % name)
        clients_a = [LiveClient(a, cookie, name) for name in names]
        clients_b = [LiveClient(b, cookie, name) for name in names]
        for client in clients_a + clients_b:
            client.start()
            client.opened.wait(10)

        # Both up: every round, posted to A or B in turn, reaches both.
        half = rounds // 2
        writers = [Writer([a, b], token, name, first=2, last=half) for name in names]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join()
        expected = {w.loop: {1, *w.acked} for w in writers}
        both = wait_for(clients_a + clients_b, expected, 15)
        got_a = sum(len(c.rounds) for c in clients_a)
        got_b = sum(len(c.rounds) for c in clients_b)
        want = sum(len(v) for v in expected.values())
        print("two instances, both up: A's clients got %d of %d rounds, B's %d of %d" % (got_a, want, got_b, want))
        ok &= both

        # A killed in the middle of the second half: the writers move to B.
        second = [Writer([a, b], token, name, first=half + 1, last=rounds) for name in names]
        for writer in second:
            writer.start()
        time.sleep(0.5)
        server_a.kill()
        for writer in second:
            writer.join(timeout=120)
        everything = [Writer([], token, w.loop) for w in writers]
        for first, later, total in zip(writers, second, everything):
            total.acked = [1, *first.acked, *later.acked]
            total.conflicts = first.conflicts + later.conflicts
        expected = {w.loop: set(w.acked) for w in everything}
        live_b = wait_for(clients_b, expected, 15)
        got_b = sum(len(c.rounds & expected[c.loop]) for c in clients_b)
        want = sum(len(v) for v in expected.values())
        figures = tally(database, everything)
        figures["unanswered sends"] = sum(w.failures for w in second)
        print("two instances, A killed: %s; B's clients got %d of %d rounds" % (json.dumps(figures), got_b, want))
        ok &= live_b and figures["lost"] == 0 and figures["half-stored"] == 0 and figures["duplicated"] == 0
        server_b.kill()  # its live clients are still open; nothing is left to check
        return ok
    finally:
        database.close()
        common.clean(workdir)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--db", action="append", choices=["sqlite", "postgres"])
    parser.add_argument("--no-two-instances", action="store_true")
    args = parser.parse_args()
    binary = common.binary_from(args.bin)
    ok = True
    for backend in args.db or ["sqlite", "postgres"]:
        for run in range(1, args.runs + 1):
            ok &= one_run(binary, backend, args.seconds, args.writers, run)
    if not args.no_two_instances and "postgres" in (args.db or ["postgres"]):
        ok &= two_instances(binary)
    print("all runs held" if ok else "a run broke a rule", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
