"""Delete expired state rows in bounded batches; safe to run from several processes at once."""

from __future__ import annotations

import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from keeperstate.ops.schema import require_migrated
from keeperstate.state.maintenance import sweep_expired, trim_history
from keeperstate.state.selectors import count_expired


class Command(BaseCommand):
    help = (
        "Delete expired workflow state in batches (FOR UPDATE SKIP LOCKED, so several sweepers share the work). "
        "Versions are never reused: the delete leaves a tombstone with the key's last version. "
        "Also trims the history of keys marked due to KEEPERSTATE_HISTORY_PER_KEY events."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--batch-size", type=int, default=settings.KEEPERSTATE_SWEEP_BATCH_SIZE)
        parser.add_argument("--loop", action="store_true", help="keep sweeping until interrupted")
        parser.add_argument("--interval", type=float, default=60.0, help="seconds between sweeps with --loop")

    def handle(self, *args: Any, **options: Any) -> None:
        require_migrated()
        try:
            while True:
                self.sweep_once(options["batch_size"])
                if not options["loop"]:
                    return
                time.sleep(options["interval"])
        except KeyboardInterrupt:
            self.stdout.write("stopped")

    def sweep_once(self, batch_size: int) -> int:
        pending = count_expired()
        progress = _Progress(pending, self.stdout) if self.stdout.isatty() else None
        total = 0
        for number, deleted in enumerate(sweep_expired(batch_size=batch_size), start=1):
            total += deleted
            if progress:
                progress.update(total)
            else:
                self.stdout.write(f"batch {number}: deleted {deleted} (total {total})")
        if progress:
            progress.finish()
        self.stdout.write(f"swept {total} expired key(s)")
        self.stdout.write(f"trimmed the history of {trim_history()} key(s)")
        return total


class _Progress:
    """A one-line progress bar for a terminal."""

    def __init__(self, expected: int, out: Any, width: int = 30):
        self.expected, self.out, self.width = max(expected, 1), out, width

    def update(self, done: int) -> None:
        filled = min(self.width, self.width * done // self.expected)
        self.out.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] {done}/{self.expected}", ending="")
        self.out.flush()

    def finish(self) -> None:
        self.out.write("")
        sys.stdout.flush()
