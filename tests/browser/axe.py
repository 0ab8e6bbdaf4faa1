"""axe-core in the page under test, from the vendored file (no download at test time).

tests/browser/vendor/axe-4.10.3.min.js is axe.min.js of the npm package axe-core 4.10.3
(MPL-2.0, license header kept; LICENSE beside it). Pages run under a strict CSP, so the
contexts that inject it bypass the CSP for the test only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

AXE_SOURCE = Path(__file__).resolve().parent / "vendor" / "axe-4.10.3.min.js"
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
