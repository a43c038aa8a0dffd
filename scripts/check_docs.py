#!/usr/bin/env python3
"""Checks the project's documents, so that they cannot drift from the tree unnoticed:

- README.md is at most 150 lines, docs/architecture.md at most 320 and bench/RESULTS.md at most
  650 (one page of what Concord is; the architecture for someone changing the code; current
  figures only);
- bench/RESULTS.md marks nothing as superseded (superseded figures are removed; history is in git);
- every relative link in README.md, docs/*.md and bench/**/*.md names a file or folder that exists,
  and every #anchor names a heading of the page it points to (GitHub's rule for anchors).

Usage: scripts/check_docs.py [REPO_ROOT]. Prints one line per problem and exits 1 if there is any.
"""
import pathlib
import re
import sys

LIMITS = {"README.md": 150, "docs/architecture.md": 320, "bench/RESULTS.md": 650}
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def without_code(text):
    """The text with fenced blocks and inline code removed: links there are examples, not links."""
    lines, inside = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
            lines.append("")
            continue
        lines.append("" if inside else re.sub(r"`[^`]*`", "", line))
    return "\n".join(lines)


def anchors(path):
    """GitHub's anchors for a Markdown file's headings: lower case, punctuation but '-' and '_'
    dropped, spaces as '-', a repeated anchor numbered -1, -2, ..."""
    seen, result = {}, set()
    inside = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        match = None if inside else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower().replace("`", "")).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    problems = []
    for name, limit in LIMITS.items():
        path = root / name
        if not path.exists():
            problems.append(f"{name}: missing")
            continue
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > limit:
            problems.append(f"{name}: {count} lines, more than the {limit} it may have")
    results = root / "bench/RESULTS.md"
    if results.exists():
        for number, line in enumerate(results.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"supersed", line, re.IGNORECASE):
                problems.append(f"bench/RESULTS.md:{number}: marks a figure as superseded; remove it instead")
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md")), *sorted((root / "bench").rglob("*.md"))]
    cache = {}
    for page in pages:
        if not page.exists():
            continue
        text = without_code(page.read_text(encoding="utf-8"))
        for number, line in enumerate(text.splitlines(), 1):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                file_part, _, anchor = target.partition("#")
                where = f"{page.relative_to(root)}:{number}"
                linked = (page.parent / file_part).resolve() if file_part else page
                if not linked.exists():
                    problems.append(f"{where}: link to {file_part}, which does not exist")
                    continue
                if anchor and linked.suffix == ".md":
                    if linked not in cache:
                        cache[linked] = anchors(linked)
                    if anchor not in cache[linked]:
                        problems.append(f"{where}: link to #{anchor}, which is no heading of {linked.relative_to(root)}")
    for problem in problems:
        print(f"check_docs: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"check_docs: {len(pages)} pages, every link and anchor found, within their lengths")
    return 0


if __name__ == "__main__":
    sys.exit(main())
