"""axe-core in the page under test, from the npm registry (no download at test time).

axe-core is a devDependency of frontend/ (pinned in its package.json and lock file), so the
README's test command installs it with ``npm ci --prefix frontend``, as it does elkjs. Pages run
under a strict CSP, so the contexts that inject it bypass the CSP for the test only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

AXE_SOURCE = Path(__file__).resolve().parents[2] / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = {"serious", "critical"}


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """The serious and critical violations axe finds on the page as it is now."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=AXE_SOURCE.read_text(encoding="utf-8"))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "impact": v["impact"], "help": v["help"],
         "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
        if v["impact"] in BLOCKING
    ]
