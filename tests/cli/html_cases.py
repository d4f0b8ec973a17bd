"""`plan --format html`: one self-contained page whose numbers are the JSON plan's. Checked with
Python's html.parser (no browser needed here; tests/html/ renders the page in headless Chromium when
one is installed)."""
import html.parser
import json
import subprocess

LLAMA = "{src}/fixtures/models/llama"


class Page(html.parser.HTMLParser):
    """The parts of the page a test reads: the embedded JSON plan, the rank bars and the unit rows."""

    def __init__(self):
        super().__init__()
        self.json_text, self.in_json, self.ranks, self.units, self.external = "", False, {}, [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script" and a.get("id") == "plan-json":
            self.in_json = True
        if "data-first-rank" in a:  # one bar for a run of ranks holding the same bytes
            for r in range(int(a["data-first-rank"]), int(a["data-last-rank"]) + 1):
                self.ranks[r] = int(a["data-total"])
        if tag == "tr" and "data-unit" in a:
            self.units.append(a["data-unit"])
        for key in ("src", "href"):  # self-contained: nothing fetched from anywhere
            if key in a:
                self.external.append(a[key])

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_json = False

    def handle_data(self, data):
        if self.in_json:
            self.json_text += data


def same_numbers_as_json(args):
    """The page's embedded plan equals `plan --format json`, and the bars and rows show its numbers."""
    def check(stdout, binary, subst):
        page = Page()
        page.feed(stdout)
        if page.external:
            return f"the page references external resources: {page.external}"
        embedded = json.loads(page.json_text.replace("<\\/", "</"))
        plain = subprocess.run([binary] + [a.format(**subst) for a in args] + ["--format", "json"],
                               capture_output=True, text=True)
        want = json.loads(plain.stdout)
        if embedded != want:
            return "the embedded JSON differs from plan --format json"
        ranks = {r["rank"]: r["total"] for r in want["memory"]["ranks"]}
        if page.ranks != ranks:
            return f"rank bars {page.ranks}, JSON ranks {ranks}"
        if page.units != [u["path"] for u in want["units"]]:
            return f"unit rows {page.units[:5]}..., JSON units {[u['path'] for u in want['units']][:5]}..."
        # The badge reads in words ("does not fit"); its class keeps the JSON's name for the colour.
        verdict = want["memory"]["verdict"]
        if f'class="verdict {verdict}" id="verdict">{verdict.replace("_", " ")}<' not in stdout:
            return "the verdict shown is not the JSON's, in words"
        return None
    return check


PLAN = ["plan", LLAMA, "--no-env", "--world-size", "3"]
CASES = [
    # llama: hidden 20, 3 layers: root 1500 + 3 layers of 4360 elements over 3 ranks (docs in plan_cases).
    {"name": "plan --format html: the page's numbers are the JSON plan's", "args": PLAN + ["--format", "html"],
     "text": same_numbers_as_json(PLAN), "stdout": ["<!DOCTYPE html>", "(0-2): 3 x LlamaDecoderLayer", "FULL_SHARD"]},
    {"name": "plan --format html with findings lists them with their fixes",
     "args": PLAN + ["--wrap-cls", "NoSuchLayer", "--format", "html"], "exit": 1,
     "text": same_numbers_as_json(PLAN + ["--wrap-cls", "NoSuchLayer"]),
     "stdout": ["Could not find the transformer layer class NoSuchLayer", "fix:", 'id="verdict">withheld<']},
]
