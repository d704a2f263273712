"""Compatibility under random chains: any short sequence of steps gives numpy's result.

Hypothesis draws a sample file and 1–4 steps (slices, scalar arithmetic, ``astype``,
``rechunk``, ``transpose``, ufuncs, comparisons), then a final reduction or ``compute()``, and
applies the same chain to the dfits array and to ``da.from_array`` of astropy's values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.compat_ops import CASE_NAMES, assert_same, compute, write_cases
from tests.profiles import examples


@dataclass(frozen=True)
class Step:
    """A named operation; the name is what Hypothesis prints for a failing chain."""

    name: str
    fn: Callable[..., Any]

    def __repr__(self) -> str:
        return self.name


STEPS = [
    Step("x[::2]", lambda x, t: x[::2]),
    Step("x[1:-1]", lambda x, t: x[1:-1]),
    Step("x[:, ::3]", lambda x, t: x[:, ::3]),
    Step("x[..., 2:9]", lambda x, t: x[..., 2:9]),
    Step("x[::-1]", lambda x, t: x[::-1]),
    Step("x * 2", lambda x, t: x * 2),
    Step("x + 1.5", lambda x, t: x + 1.5),
    Step("x - 0.5", lambda x, t: x - 0.5),
    Step("-x", lambda x, t: -x),
    Step("x / 3", lambda x, t: x / 3),
    Step("x * 1e3", lambda x, t: x * 1e3),
    Step("x.astype(f8)", lambda x, t: x.astype(np.float64)),
    Step("x.astype(f4)", lambda x, t: x.astype(np.float32)),
    Step("x.rechunk(2)", lambda x, t: x.rechunk(2)),
    Step("x.rechunk(5)", lambda x, t: x.rechunk(5)),
    Step("x.rechunk(-1)", lambda x, t: x.rechunk(-1)),
    Step("x.T", lambda x, t: x.T),
    Step("x.transpose(1, 2, 0)", lambda x, t: x.transpose(1, 2, 0)),
    Step("abs(x)", lambda x, t: abs(x)),
    Step("sqrt(abs(x))", lambda x, t: np.sqrt(abs(x))),
    Step("sin(x)", lambda x, t: np.sin(x)),
    Step("isnan(x)", lambda x, t: np.isnan(x)),
    Step("x > t", lambda x, t: x > t),
    Step("where(x > t, x, nan)", lambda x, t: np.where(x > t, x, np.nan)),
]

FINALS = [
    Step("compute", lambda x: x),
    Step("sum", lambda x: x.sum()),
    Step("sum(axis=0)", lambda x: x.sum(axis=0)),
    Step("mean", lambda x: x.mean()),
    Step("mean(axis=-1)", lambda x: x.mean(axis=-1)),
    Step("std", lambda x: x.std()),
    Step("var(axis=(0, 1))", lambda x: x.var(axis=(0, 1))),
    Step("min", lambda x: x.min()),
    Step("max(axis=1)", lambda x: x.max(axis=1)),
    Step("nansum", lambda x: np.nansum(x)),
    Step("nanmean(axis=0)", lambda x: np.nanmean(x, axis=0)),
    Step("nanmax", lambda x: np.nanmax(x)),
    Step("argmax", lambda x: x.argmax()),
    Step("argmin(axis=0)", lambda x: x.argmin(axis=0)),
]


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return write_cases(tmp_path_factory.mktemp("compat-hypothesis"))


def _run(x: Any, steps: list[Step], final: Step, t: float) -> tuple[Any, Exception | None]:
    """The computed chain, or the error it raised."""
    try:
        with np.errstate(all="ignore"):
            for step in steps:
                x = step.fn(x, t)
            return compute(final.fn(x)), None
    except Exception as err:
        return None, err


@pytest.mark.slow
@settings(max_examples=examples(40), deadline=None)
@given(
    name=st.sampled_from(CASE_NAMES),
    steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=4),
    final=st.sampled_from(FINALS),
)
def test_random_chain(cases, name, steps, final):
    """A random chain of steps and a final reduction matches numpy's, or fails like it."""
    case = cases[name]
    want, want_err = _run(case.numpy(), steps, final, case.threshold)
    got, err = _run(case.dfits(), steps, final, case.threshold)
    if want_err is not None:
        # numpy's chain fails too (an empty slice's min, say): dfits must fail the same way
        assert type(err) is type(want_err), f"numpy: {want_err!r}; dfits: {err!r}"
        return
    if err is not None:
        raise err
    assert_same(got, want)
