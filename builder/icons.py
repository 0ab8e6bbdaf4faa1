"""The builder's SVG icons: one file per registry icon name under static/builder/icons/.

Icons are inlined so they take the colour of their palette entry or node card. A registered
action whose icon file is missing gets no icon at all (never a generic one): the palette marks
it and tests/builder/test_palette.py fails.
"""

from __future__ import annotations

import logging
import re
from functools import cache
from pathlib import Path

from django.contrib.staticfiles import finders
from django.utils.safestring import SafeString, mark_safe

logger = logging.getLogger(__name__)

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def icon_path(name: str) -> Path | None:
    """Where the icon of that registry name lives, or None when there is no such icon."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        return None
    found = finders.find(f"builder/icons/{name}.svg")
    return Path(found) if found else None


@cache
def icon_svg(name: str) -> SafeString | None:
    """The inline SVG markup of an icon, or None (logged) when the builder has no such icon."""
    path = icon_path(name)
    if path is None:
        logger.warning("builder: no icon file for icon name %r", name)
        return None
    return mark_safe(path.read_text(encoding="utf-8").strip())  # noqa: S308 - our own static files
