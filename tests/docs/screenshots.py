"""ctest docs.screenshots: three pages of the built site in headless Chromium at 1400 px, light and
dark: every image loads and nothing is cut off at the right edge; a screenshot of each is kept.

    python tests/docs/screenshots.py SITE_DIR OUT_DIR

SITE_DIR is the site docs.build made (its fixture). The pages are served over HTTP on a free
port of 127.0.0.1 with a harness page (same origin) that loads each one in a 1400 px frame and
reports, per page: images that did not load (complete with a natural width), elements of the
article whose content is wider than their box (a table or a code block that scrolls, i.e. is
cut at the right edge) or that reach past the frame, and a page that scrolls sideways. A canary
page (a copy of a built page with a missing image and a code line that cannot wrap) must be
reported, else this check could not fail and says so. Screenshots go to OUT_DIR/*.png for a
person to look at. Exit 0 when the pages pass and the canary fails; 1 otherwise; 2 without
Chromium (scripts/setup installs Debian's `chromium`).
"""

from __future__ import annotations

import functools
import http.server
import json
import pathlib
import re
import shutil
import subprocess
import sys
import threading

PAGES = ["index.html", "explanation/balancing.html", "reference/exit-codes.html"]
CANARY = "canary-screenshots.html"
WIDTH = 1400

HARNESS = """<!doctype html><html><body><pre id="result">pending</pre>
<iframe id="frame" style="width:%(width)dpx;height:1000px;border:0"></iframe>
<script>
const pages = %(pages)s;
const schemes = ["default", "slate"];
function check(doc, win) {
  const out = {images: [], cut: [], sideways: false};
  for (const img of doc.images) {
    if (!img.complete || img.naturalWidth === 0) out.images.push(img.getAttribute("src"));
  }
  const width = doc.documentElement.clientWidth;
  out.sideways = doc.documentElement.scrollWidth > width + 1;
  const article = doc.querySelector("article") || doc.body;
  for (const el of article.querySelectorAll("*")) {
    const style = win.getComputedStyle(el);
    if (style.display === "none" || style.visibility === "hidden") continue;
    if (el.closest(".md-sidebar, .md-header, .md-footer")) continue;
    const rect = el.getBoundingClientRect();
    if (rect.width === 0) continue;
    const scrolls = ["auto", "scroll", "hidden"].includes(style.overflowX);
    if ((scrolls && el.scrollWidth > el.clientWidth + 1) || rect.right > width + 1) {
      const text = (el.textContent || "").trim().slice(0, 60);
      out.cut.push(el.tagName.toLowerCase() + (el.className ? "." + el.className : "") +
                   " (" + Math.round(el.scrollWidth) + " > " + Math.round(el.clientWidth) +
                   " px): " + text);
    }
  }
  return out;
}
async function load(frame, url) {
  await new Promise((ok) => { frame.onload = ok; frame.src = url; });
  const doc = frame.contentDocument;
  await Promise.all([...doc.images].map((img) => img.decode().catch(() => null)));
  return doc;
}
(async () => {
  const frame = document.getElementById("frame");
  const results = {};
  for (const scheme of schemes) {
    for (const page of pages) {
      const doc = await load(frame, page);
      doc.body.setAttribute("data-md-color-scheme", scheme);
      await new Promise((ok) => setTimeout(ok, 50));
      results[scheme + " " + page] = check(doc, frame.contentWindow);
    }
  }
  document.getElementById("result").textContent = JSON.stringify(results);
})();
</script></body></html>
"""


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def serve(site: pathlib.Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:  # one line per request otherwise
            pass
    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def write_canary(site: pathlib.Path) -> None:
    page = (site / "tutorials" / "torchrun-to-hetrun.html").read_text()
    bad = ('<p><img alt="missing" src="assets/figures/no-such-figure.svg"></p>'
           '<div style="overflow-x:auto"><pre style="white-space:pre">' + "x" * 600 +
           "</pre></div>")
    page = page.replace("</article>", bad + "</article>", 1)
    page = re.sub(r'(href|src)="\.\./', r'\1="', page)
    (site / CANARY).write_text(page)


def run_harness(browser: str, site: pathlib.Path, url: str) -> dict:
    (site / "harness-screenshots.html").write_text(
        HARNESS % {"width": WIDTH, "pages": json.dumps(PAGES + [CANARY])})
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", f"--window-size={WIDTH + 40},1100",
                           "--virtual-time-budget=60000", "--dump-dom",
                           f"{url}/harness-screenshots.html"],
                          capture_output=True, text=True, timeout=300)
    m = re.search(r'<pre id="result">(.*?)</pre>', proc.stdout, re.S)
    if not m or m.group(1) == "pending":
        raise SystemExit(f"screenshots: the harness gave no result (exit {proc.returncode}):\n"
                         f"{proc.stderr[-2000:]}")
    import html
    return json.loads(html.unescape(m.group(1)))


def screenshot(browser: str, url: str, out: pathlib.Path) -> None:
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={WIDTH},1600", f"--screenshot={out}", url],
                   capture_output=True, timeout=120)


def main(site: pathlib.Path, out: pathlib.Path) -> int:
    browser = chromium()
    if browser is None:
        print("screenshots: no Chromium on PATH (scripts/setup installs Debian's chromium)")
        return 2
    if not (site / "index.html").exists():
        print(f"screenshots: {site} holds no built site (run docs.build first)")
        return 1
    out.mkdir(parents=True, exist_ok=True)
    write_canary(site)
    server = serve(site)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        results = run_harness(browser, site, url)
        for page in PAGES:
            screenshot(browser, f"{url}/{page}", out / (page.replace("/", "_") + ".png"))
    finally:
        server.shutdown()
    failed = 0
    for key, r in results.items():
        if key.endswith(CANARY):
            if not r["images"] or not r["cut"]:
                print(f"screenshots: the canary passed ({key}: {r}): this check cannot fail")
                failed += 1
            continue
        if r["images"] or r["cut"] or r["sideways"]:
            print(f"screenshots: {key}: images not loaded {r['images']}, cut off {r['cut']}, "
                  f"scrolls sideways {r['sideways']}")
            failed += 1
        else:
            print(f"screenshots: {key}: every image loaded, nothing cut off at {WIDTH} px")
    print(f"screenshots: pictures in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(64)
    sys.exit(main(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])))
