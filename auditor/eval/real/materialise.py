#!/usr/bin/env python3
"""Cuts the real-world excerpts out of local copies of their repositories.

The manifest (parts/*.json) names each excerpt by repository, commit, path
and line ranges; the code itself is not kept in this repository. This script
reads each file at its commit from a bare copy of the repository under the
mirror directory (default /work/.mirror, as the session's fetch tool leaves
them: OWNER+NAME/repo) and writes the joined ranges to cache/ID.EXT, which
the eval example reads.

  materialise.py                      every excerpt of every part
  materialise.py --only ID            one excerpt
  materialise.py --record --part F    also write each excerpt's SHA-256 into F
  materialise.py --show ID            print an excerpt with its line numbers
  materialise.py --check              validate the manifest only (no copies)

An excerpt whose copy is missing is listed with the repository to fetch; one
whose text no longer matches its recorded SHA-256 is an error.
"""

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXTENSIONS = {
    "python": "py",
    "javascript": "js",
    "typescript": "ts",
    "tsx": "tsx",
    "bash": "sh",
    "go": "go",
    "rust": "rs",
}
EXITS = {f"E{n}" for n in range(1, 9)}
DETECT = {"E1", "E5"}
BOUND = {"E2", "E3", "E4", "E7"}
REQUIRED = ["id", "language", "repo", "commit", "path", "license", "ranges", "exits", "verdict", "reasons"]


def verdict_of(exits):
    if DETECT & set(exits):
        return "CONVERGES"
    if BOUND & set(exits):
        return "DIVERGES"
    return "UNDEFINED"


def load_parts(paths):
    parts = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            try:
                entries = json.load(handle)
            except json.JSONDecodeError as error:
                sys.exit(f"{path}: not valid JSON: {error}")
        if not isinstance(entries, list):
            sys.exit(f"{path}: the part must be a JSON array of excerpts")
        parts.append((path, entries))
    return parts


def problems_of(entry):
    """What is wrong with one manifest entry, as messages naming the field."""
    found = []
    for field in REQUIRED:
        if field not in entry:
            found.append(f"missing field `{field}`")
    if found:
        return found
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{2,80}", entry["id"]):
        found.append("`id`: lowercase letters, digits, dots, dashes and underscores only")
    if entry["language"] not in EXTENSIONS:
        found.append(f"`language`: one of {', '.join(EXTENSIONS)}")
    if not re.fullmatch(r"[0-9a-f]{40}", entry["commit"]):
        found.append("`commit`: 40 lowercase hex digits")
    ranges = entry["ranges"]
    if not ranges or any(
        not (isinstance(r, list) and len(r) == 2 and all(isinstance(n, int) for n in r) and 1 <= r[0] <= r[1])
        for r in ranges
    ):
        found.append("`ranges`: a list of [first, last] line pairs, 1-based")
    elif any(ranges[i][0] <= ranges[i - 1][1] for i in range(1, len(ranges))):
        found.append("`ranges`: in order and not overlapping")
    unknown = set(entry["exits"]) - EXITS
    if unknown:
        found.append(f"`exits`: unknown ids {sorted(unknown)}")
    if entry["verdict"] != verdict_of(entry["exits"]):
        found.append(f"`verdict`: the exits give {verdict_of(entry['exits'])}")
    reasons = entry["reasons"]
    if set(reasons) != set(entry["exits"]):
        found.append("`reasons`: exactly one reason per present exit")
    for exit_id, reason in reasons.items():
        if not re.search(r"\bL\d+", reason):
            found.append(f"`reasons.{exit_id}`: cite the excerpt's lines (L12 or L12-14)")
    return found


def mirror_dir(repo):
    root = os.environ.get("FIXEDPOINT_MIRRORS", "/work/.mirror")
    return os.path.join(root, repo.replace("/", "+"), "repo")


def excerpt_text(entry):
    git_dir = mirror_dir(entry["repo"])
    if not os.path.isdir(git_dir):
        return None, f"no copy of {entry['repo']} under {git_dir} (fetch github:{entry['repo']})"
    result = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{entry['commit']}:{entry['path']}"],
        capture_output=True,
    )
    if result.returncode != 0:
        return None, f"{entry['repo']}: {entry['commit'][:10]}:{entry['path']} is not in the copy"
    lines = result.stdout.decode("utf-8", errors="replace").splitlines()
    chosen = []
    for first, last in entry["ranges"]:
        if last > len(lines):
            return None, f"`ranges`: line {last} is past the end of {entry['path']} ({len(lines)} lines)"
        chosen.extend(lines[first - 1 : last])
    return "\n".join(chosen) + "\n", None


def cache_path(entry):
    return os.path.join(HERE, "cache", f"{entry['id']}.{EXTENSIONS[entry['language']]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", action="append", help="a part file (default: every parts/*.json)")
    parser.add_argument("--only", help="only the excerpt with this id")
    parser.add_argument("--record", action="store_true", help="write each excerpt's SHA-256 into its part")
    parser.add_argument("--show", help="print this excerpt with line numbers")
    parser.add_argument("--check", action="store_true", help="validate the manifest only")
    args = parser.parse_args()

    paths = args.part or sorted(
        os.path.join(HERE, "parts", name) for name in os.listdir(os.path.join(HERE, "parts")) if name.endswith(".json")
    )
    parts = load_parts(paths)
    seen = {}
    failures = 0
    missing = []
    os.makedirs(os.path.join(HERE, "cache"), exist_ok=True)
    for path, entries in parts:
        changed = False
        for entry in entries:
            name = entry.get("id", "<no id>")
            if args.only and name != args.only and name != args.show:
                continue
            if args.show and name != args.show:
                continue
            for problem in problems_of(entry):
                print(f"{os.path.basename(path)}: {name}: {problem}", file=sys.stderr)
                failures += 1
            if name in seen:
                print(f"{os.path.basename(path)}: {name}: id also used in {seen[name]}", file=sys.stderr)
                failures += 1
            seen[name] = os.path.basename(path)
            if args.check or "commit" not in entry or "ranges" not in entry:
                continue
            text, error = excerpt_text(entry)
            if error:
                if error.startswith("no copy"):
                    missing.append(f"{name}: {error}")
                else:
                    print(f"{os.path.basename(path)}: {name}: {error}", file=sys.stderr)
                    failures += 1
                continue
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            if args.record:
                if entry.get("sha256") != digest:
                    entry["sha256"] = digest
                    changed = True
            elif entry.get("sha256") and entry["sha256"] != digest:
                print(f"{os.path.basename(path)}: {name}: the excerpt's text differs from its recorded SHA-256", file=sys.stderr)
                failures += 1
                continue
            with open(cache_path(entry), "w", encoding="utf-8") as handle:
                handle.write(text)
            if args.show:
                for number, line in enumerate(text.splitlines(), start=1):
                    print(f"{number:4} {line}")
        if changed:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(entries, handle, indent=1, ensure_ascii=False)
                handle.write("\n")
    for line in missing:
        print(f"missing: {line}", file=sys.stderr)
    total = len(seen)
    print(f"{total} excerpts, {len(missing)} without a local copy, {failures} problems", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
