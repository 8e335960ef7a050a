import hashlib
import subprocess


def improve(repo, agent):
    seen = set()
    while True:
        agent.edit(repo)
        digest = hashlib.sha256(repo.snapshot().encode()).hexdigest()
        if digest in seen:
            break
        seen.add(digest)
        result = subprocess.run(["pytest", "-q"], cwd=repo.path)
        if result.returncode == 0:
            break
