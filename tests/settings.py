"""The test suite's settings: the project's own, with the demo app installed (its tests and the
reference monitor need it). Processes the tests start inherit both through the environment."""

import os

os.environ.setdefault("KEEPERSTATE_DEMO", "true")

from keeperstate.settings import *  # noqa: E402, F403
