"""The generated parts of the documentation site: regenerate them, or check that they are current.

    python scripts/docs/reference.py check  HETRUN_BINARY [PYTHON]
    python scripts/docs/reference.py update HETRUN_BINARY [PYTHON]

A page marks a generated region with two HTML comments (invisible on the site and on the code
host), and everything between them is the output of the command the first one names, with one
blank line before and after it (so Markdown reads it apart from the comments):

    <!-- generated: hetrun run --help -->
    ...
    <!-- end generated -->

`hetrun ARGS` runs the built binary with a minimal environment (PATH=/usr/bin:/bin, nothing of
hetrun's, so the output is the same on every machine); output of a `--markdown` command goes in
as it is, any other in a ```text block. `python-api MODULE` renders the Python package's module
with scripts/docs/python_api.py under PYTHON (default: .venv/bin/python), which must have the
built package installed. `check` exits 1 and prints a diff per stale region; `update` rewrites
the pages (make docs-update). Exit 2 for a malformed region or a command that fails.
"""

import difflib
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REGION = re.compile(r"^(<!-- generated: (?P<cmd>[^>]*?) -->\n)(?P<body>.*?)^(<!-- end generated -->)",
                    re.S | re.M)
OPENING = re.compile(r"^<!-- generated:", re.M)


class Failure(Exception):
    pass


def run(argv, env=None):
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0:
        raise Failure(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


def generate(cmd, hetrun, python):
    words = cmd.split()
    if words[0] == "hetrun":
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LC_ALL": "C"}
        out = run([hetrun, *words[1:]], env=env)
        out = out.rstrip("\n") if "--markdown" in words else f"```text\n{out.rstrip()}\n```"
        return f"\n{out}\n\n"
    if words[0] == "python-api" and len(words) == 2:
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        out = run([python, str(ROOT / "scripts" / "docs" / "python_api.py"), words[1]], env=env)
        return f"\n{out.rstrip()}\n\n"
    raise Failure(f"unknown generator '{cmd}' (hetrun ARGS or python-api MODULE)")


def pages():
    return sorted(p for p in DOCS.rglob("*.md") if p.is_file())


def process(page, hetrun, python, update):
    text = page.read_text()
    if len(OPENING.findall(text)) != len(REGION.findall(text)):
        raise Failure(f"{page.relative_to(ROOT)}: a '<!-- generated: ... -->' without its "
                      "'<!-- end generated -->'")
    stale = []

    def replace(match):
        body = generate(match.group("cmd"), hetrun, python)
        if body != match.group("body"):
            stale.append((match.group("cmd"), match.group("body"), body))
        return match.group(1) + body + match.group(4)

    new = REGION.sub(replace, text)
    if update and new != text:
        tmp = page.with_suffix(".md.tmp")
        tmp.write_text(new)
        os.replace(tmp, page)
    return stale


def main(argv):
    if len(argv) not in (3, 4) or argv[1] not in ("check", "update"):
        print(__doc__, file=sys.stderr)
        return 2
    hetrun = str(pathlib.Path(argv[2]).resolve())
    python = argv[3] if len(argv) == 4 else str(ROOT / ".venv" / "bin" / "python")
    regions, drift = 0, 0
    try:
        for page in pages():
            regions += len(REGION.findall(page.read_text()))
            for cmd, old, new in process(page, hetrun, python, argv[1] == "update"):
                drift += 1
                rel = page.relative_to(ROOT)
                verb = "differs from the committed text" if argv[1] == "check" else "rewritten"
                print(f"{rel}: '{cmd}' {verb}", file=sys.stderr)
                if argv[1] == "check":
                    sys.stderr.writelines(difflib.unified_diff(
                        old.splitlines(True), new.splitlines(True), f"{rel} (committed)",
                        f"{cmd} (now)", n=1))
    except (Failure, OSError, subprocess.TimeoutExpired) as error:
        print(f"docs reference: {error}", file=sys.stderr)
        return 2
    if regions == 0:
        print("docs reference: no generated region found under docs/", file=sys.stderr)
        return 2
    if argv[1] == "update":
        print(f"docs reference: {drift} of {regions} generated regions rewritten")
        return 0
    if drift:
        print(f"docs reference: {drift} of {regions} generated regions are stale: run "
              "`make docs-update` and commit the result", file=sys.stderr)
        return 1
    print(f"docs reference: {regions} generated regions match the build")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
