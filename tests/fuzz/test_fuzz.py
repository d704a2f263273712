"""The fuzz suite in the default run: a fixed slice of seeded mutation cases (issue 34).

Every case must end in success, a DfitsError or values equal to astropy's
(:func:`tests.fuzz.check.check_file`). The slice runs in this process (pytest-timeout bounds
a hang); long campaigns with hang and memory bounds per case are ``./run fuzz --cases N``,
and the slow test below runs one through that same entry point.
"""

from __future__ import annotations

import json

import pytest

from tests.fuzz.campaign import Campaign, run_campaign
from tests.fuzz.campaign import main as campaign
from tests.fuzz.check import check_file
from tests.fuzz.mutate import MUTATORS, mutated

#: the default slice: seed 34, cases 0 .. 2999, in blocks (each its own test and time limit).
#: Issue 34 asks for a few thousand in the default run; 3000 took 59 s (6 blocks of 7-13 s)
#: on the shared 2-core machine at load 6, kernels cached on disk.
SEED, CASES, BLOCK = 34, 3000, 500


@pytest.mark.parametrize("first", range(0, CASES, BLOCK), ids=lambda k: f"cases{k}+")
def test_fuzz_slice_has_no_escapes(tmp_path, first):
    path = tmp_path / "case.fits"
    failures = []
    for case in range(first, first + BLOCK):
        name, blob, ops = mutated(SEED, case)
        path.write_bytes(blob)
        outcome = check_file(str(path))
        if outcome.kind not in ("ok", "dfits_error"):
            failures.append(f"case {case} ({name}, {ops}): {outcome.kind}\n{outcome.detail}")
    assert not failures, f"replay: ./run fuzz --seed {SEED} --start K --cases 1\n" + "\n".join(
        failures
    )


@pytest.mark.parametrize("mutator", [m for m, _ in MUTATORS], ids=lambda m: m.__name__)
def test_mutators_take_an_empty_file(mutator):
    # a truncation can leave nothing for the next mutation (seed 1 stopped a campaign so)
    import random

    assert isinstance(mutator(random.Random(0), b"", [(0, 0)]), bytes)


def test_worker_answers_are_not_lost_between_messages(tmp_path):
    # The worker writes the astropy-phase message and the outcome back to back; a buffered
    # readline() behind select() left the outcome unseen until the time limit, so most cases
    # reaching astropy came back as 'oracle_hang' and restarted the worker (~1 case/s).
    result = run_campaign(36, 0, 120, tmp_path, timeout=60.0)
    assert sum(result.counts.values()) == 120
    assert not {"hang", "oracle_hang", "crash"} & set(result.counts), result.counts
    assert result.counts["ok"] > 10  # cases that reached the astropy phase


@pytest.mark.parametrize(("kind", "fails"), [("oracle_hang", False), ("escape", True)])
def test_oracle_hang_leaves_a_reproducer_but_fails_nothing(tmp_path, kind, fails):
    # astropy hanging on bytes dfits read is not a dfits failure, but the values went
    # unchecked: seed 3's campaign met one and kept nothing to look at
    result = Campaign(3, tmp_path)
    result.record({"case": 7, "kind": kind, "detail": "during the astropy phase"})
    name, blob, _ = mutated(3, 7)
    assert (tmp_path / "3-7.fits").read_bytes() == blob
    text = (tmp_path / "3-7.txt").read_text()
    assert f"seed 3 case 7: {kind}" in text
    assert name in text
    assert "--seed 3 --start 7 --cases 1" in text
    assert (result.failed, len(result.reproduced)) == (int(fails), 1)


@pytest.mark.slow
def test_fuzz_campaign_through_workers(tmp_path):
    # the ./run fuzz path: worker process, hang timeout, memory cap, summary file
    status = campaign(["--seed", "35", "--cases", "1000", "--out", str(tmp_path)])
    (summary,) = tmp_path.glob("summary-35-0-1000.json")
    counts = json.loads(summary.read_text())["counts"]
    assert status == 0, counts
    assert sum(counts.values()) == 1000
