"""frontend/measure-layout.mjs, the measurement behind ADR 0054 (our Auto-layout and routing
against elkjs), still runs and still supports the decision the ADR records."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "frontend" / "measure-layout.mjs"



def test_our_layout_is_clean_and_elkjs_does_not_beat_it_on_every_graph():
    # The README's commands install what it needs; without it the test fails and says what to run
    # (a skip would hide that the measurement behind the ADR no longer runs).
    missing = "needs Node.js and elkjs: run npm ci --prefix frontend --no-audit --no-fund"
    assert shutil.which("node"), missing
    assert (ROOT / "frontend/node_modules/elkjs").is_dir(), missing
    # when the measurement runs over the demo graphs and the generated 50-node graph
    out = subprocess.run(["node", str(SCRIPT), "--json"], cwd=ROOT, capture_output=True, text=True, check=True,
                         timeout=120, env={**os.environ, "PYTHON": sys.executable})
    results = {r["graph"]: r for r in json.loads(out.stdout)["results"]}

    # then it measured every graph the ADR's table names, the generated one with 50 nodes
    assert set(results) == {"Block monitor (demo)", "Heartbeat (demo)", "Reference monitor (examples.py)",
                            "Generated, 50 nodes"}
    assert results["Generated, 50 nodes"]["nodes"] == 50
    # and our drawing crosses no edge, runs none through a card and overlaps no two cards
    for name, r in results.items():
        ours = r["ours"]
        assert (ours["crossings"], ours["throughCards"], ours["overlaps"]) == (0, 0, 0), name
    # and elkjs is not at least as good on every graph, so the ADR's "keep ours" still holds
    assert not all(r["elkAsGood"] for r in results.values())
