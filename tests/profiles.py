"""Hypothesis profiles: how many examples the costly property tests draw.

Most property tests cost a millisecond an example (card and header parsers, checksums, range
plans): they draw their full count in every profile. The ones whose examples build dask
graphs over generated files and run kernels on new chunkings and axes (tens of milliseconds
to a second each, compiles included) state their count as ``examples(n)``:

* ``ci`` (the default, loaded by ``tests/conftest.py``): a quarter of ``n``, at least two;
  each such property still runs on every default run, on the same examples each time.
* ``thorough``: ``n`` itself (``./run test --hypothesis-profile thorough``; with ``-m ""``
  for the slow tests too).

Any other profile (one of Hypothesis' own) draws ``n`` as well.
"""

from __future__ import annotations

import math

from hypothesis import settings

__all__ = ["SHARE", "examples"]

# ci draws the same examples on every run (derandomize; no example database, which a clean
# clone lacks anyway): a run that passed here passes in CI, and a property's new random finds
# come from the thorough profile, not from a flaky submission
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("thorough")

#: The share of a costly test's examples each profile draws (1 where not listed)
SHARE = {"ci": 0.25, "thorough": 1.0}


def examples(full: int) -> int:
    """The examples to draw, in the profile loaded, for a test whose full count is ``full``.

    Never fewer than two (a property checked on one example is an example test), never more
    than ``full``: in ``ci``, 25 gives 7 and 6 gives 2.
    """
    share = SHARE.get(settings.get_current_profile_name(), 1.0)
    return min(full, max(2, math.ceil(full * share)))
