"""The tree explains itself without the issue tracker: no file names an issue by its number ("issue 24", "issues
29-31", "issue #7"). A link to another project's issue (github.com/.../issues/123) is a citation and stays."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACKER_NUMBER = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    files = []
    for name in names:
        path = REPO / name
        if path.is_file() and path != Path(__file__).resolve() and b"\0" not in path.read_bytes()[:4096]:
            files.append(path)
    return files


def test_no_file_names_an_issue_by_its_number():
    found = []
    for path in tracked_text_files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if TRACKER_NUMBER.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}")
    assert not found, "say what the code does instead of the tracker's number:\n" + "\n".join(found)


def test_the_rule_catches_a_number_and_leaves_a_link():
    assert TRACKER_NUMBER.search("Round 3 (issue 24: the prelude)") and TRACKER_NUMBER.search("issues 29-31")
    assert TRACKER_NUMBER.search("see issue #7") and not TRACKER_NUMBER.search("github.com/ray-project/ray/issues/123")
