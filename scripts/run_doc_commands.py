#!/usr/bin/env python3
"""Runs every command a reader is told they can paste: each fenced block whose info string is
`sh runnable` in README.md and docs/*.md, as written, from a copy of the repository root (links to
its entries, so that the runs/ a command writes stay out of the tree), at a small size.

Sizes shrink where a command takes one: --total-timesteps (added to `train` commands that have
none), --episodes, --steps, --rounds and --epochs. Everything else runs as the reader would type
it, each block in one shell (`set -e`, as a reader pastes it), which fails on the first command that exits
non-zero or runs past the time limit.

Usage: scripts/run_doc_commands.py [--build DIR] [--list] [FILE ...]
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```sh runnable\s*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
SHRINK = [
    (re.compile(r"--total-timesteps[ =]\S+"), "--total-timesteps 2048"),
    (re.compile(r"--episodes[ =]\S+"), "--episodes 2"),
    (re.compile(r"--steps[ =]\S+"), "--steps 20"),
    (re.compile(r"--rounds[ =]\S+"), "--rounds 2"),
    (re.compile(r"--epochs[ =]\S+"), "--epochs 1"),
]
# The quick start's own commands: the suite is already running because of them.
SKIP = re.compile(r"scripts/(test|quickstart)\.sh")


def blocks(paths):
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            yield path, line, match.group(1)


def commands(block):
    """The block's commands, one per logical line (backslash continuations joined, comments dropped)."""
    joined = re.sub(r"\\\n\s*", " ", block)
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            yield line


def shrunk(command):
    for pattern, replacement in SHRINK:
        command = pattern.sub(replacement, command)
    if re.search(r"\bconcord train\b", command) and "--total-timesteps" not in command and "--resume" not in command:
        command += " --total-timesteps 2048"
    return command


def workspace(build):
    """A folder whose entries link to the repository's (build/ to the build directory)."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="concord-doc-commands-"))
    for entry in ROOT.iterdir():
        if entry.name in ("runs", "build", ".git"):
            continue
        (folder / entry.name).symlink_to(entry)
    (folder / "build").symlink_to(build)
    return folder


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.environ.get("CONCORD_BUILD_DIR", str(ROOT / "build")))
    parser.add_argument("--list", action="store_true", help="print the commands as they would run, run nothing")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds each command may take")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    paths = [pathlib.Path(f).resolve() for f in args.files] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = list(blocks(paths))
    if not found:
        print("run_doc_commands: no `sh runnable` block found", file=sys.stderr)
        return 1
    folder = None if args.list else workspace(pathlib.Path(args.build).resolve())
    failures = 0
    try:
        for path, line, block in found:
            where = f"{path.relative_to(ROOT)}:{line}"
            script = []
            for command in commands(block):
                if SKIP.search(command):
                    print(f"run_doc_commands: {where}: skipped (the quick start itself): {command}")
                    continue
                script.append(shrunk(command))
            if args.list:
                print("\n".join(f"{where}: {command}" for command in script))
                continue
            if not script:
                continue
            # One shell per block, as a reader pastes it: a variable one line sets, the next reads.
            start = time.monotonic()
            try:
                result = subprocess.run(["bash", "-c", "set -e\n" + "\n".join(script)], cwd=folder,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        timeout=args.timeout * len(script))
                status = result.returncode
                output = result.stdout
            except subprocess.TimeoutExpired as expired:
                status = "timeout"
                output = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
            seconds = time.monotonic() - start
            if status == 0:
                print(f"run_doc_commands: {where}: {len(script)} commands ok in {seconds:.1f} s")
                continue
            failures += 1
            print(f"run_doc_commands: {where}: FAILED ({status}) after {seconds:.1f} s:", file=sys.stderr)
            print("\n".join(f"    {command}" for command in script), file=sys.stderr)
            print("\n".join(output.splitlines()[-15:]), file=sys.stderr)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
