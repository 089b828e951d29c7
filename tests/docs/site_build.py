"""ctest docs.build: the documentation site builds strictly, and the check can fail.

    python tests/docs/site_build.py SOURCE_DIR OUT_DIR

1. `mkdocs build --strict` of the site into OUT_DIR/site, without --quiet: --quiet hides the
   warnings that strict mode turns into an abort, so a build with a broken link passed (issue 38).
   Any WARNING in the output fails too.
2. The same build of a copy of the site with one broken link (a page linking a file of examples/,
   which lies outside the site: it reads on the code host but not on the site, the mistake of
   issue 38), then of a copy with one broken anchor: each must fail naming the link, else this
   check could not fail and says so.
Exit 0 when the site builds and both broken copies fail; 1 otherwise.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

BROKEN = {
    "link": ("[the FSDP2 example](../../examples/python/train_fsdp.py)", "train_fsdp.py"),
    "anchor": ("[no such part](balancing-ddp.md#no-such-section)", "#no-such-section"),
}


def build(config, out):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
                           "-d", str(out)], capture_output=True, text=True, env=env, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def main(source, out):
    code, log = build(source / "mkdocs.yml", out / "site")
    warnings = [line for line in log.splitlines() if line.startswith("WARNING")]
    if code != 0 or warnings:
        print(f"site_build: the site does not build cleanly (exit {code}):\n{log}")
        return 1
    for kind, (link, named) in BROKEN.items():
        with tempfile.TemporaryDirectory(prefix="hetrun-site-") as tmp:
            copy = pathlib.Path(tmp)
            shutil.copy2(source / "mkdocs.yml", copy / "mkdocs.yml")
            shutil.copytree(source / "docs", copy / "docs")
            page = copy / "docs" / "tutorials" / "torchrun-to-hetrun.md"
            page.write_text(page.read_text() + f"\nSee {link}.\n")
            code, log = build(copy / "mkdocs.yml", copy / "site")
            if code == 0 or named not in log:
                print(f"site_build: a copy with a broken {kind} ({link}) built (exit {code}): "
                      f"this check cannot fail\n{log}")
                return 1
    print("site_build: the site builds strictly with no warning; a broken link and a broken "
          "anchor each fail the build")
    return 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()))
