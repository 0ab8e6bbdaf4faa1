"""The test suite's settings: the project's own, with the demo app installed (its tests and the
reference monitor need it). Processes the tests start inherit both through the environment."""

import os

os.environ.setdefault("KEEPERSTATE_DEMO", "true")
# The demo chain as its tests read it: a block's hash is block_hash(number); the tests of its
# reorganisations turn them on (tests/test_demo_reorgs.py).
os.environ.setdefault("KEEPERSTATE_DEMO_REORG_EVERY", "0")

from keeperstate.settings import *  # noqa: E402, F403
