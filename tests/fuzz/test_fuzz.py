"""The fuzz suite in the default run: a fixed slice of seeded mutation cases (issue 34).

Every case must end in success, a DfitsError or values equal to astropy's
(:func:`tests.fuzz.check.check_file`). The slice runs in this process (pytest-timeout bounds
a hang); long campaigns with hang and memory bounds per case are ``./run fuzz --cases N``,
and the slow test below runs one through that same entry point.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import types

import numpy as np
import pytest

from tests.format import fitsgen as fg
from tests.fuzz.campaign import Campaign, _Worker, run_campaign
from tests.fuzz.campaign import main as campaign
from tests.fuzz.check import _close_sum, check_file
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
    result = Campaign(3, tmp_path, mix="images")  # case 7 is an image case only so
    result.record({"case": 7, "kind": kind, "detail": "during the astropy phase"})
    name, blob, _ = mutated(3, 7)
    assert (tmp_path / "3-7.fits").read_bytes() == blob
    text = (tmp_path / "3-7.txt").read_text()
    assert f"seed 3 case 7: {kind}" in text
    assert name in text
    assert "--seed 3 --start 7 --cases 1 --mix images" in text
    assert (result.failed, len(result.reproduced)) == (int(fails), 1)


class _Starved(_Worker):
    """A worker without a process: each wait for an answer times out after the scheduler
    kept it off the CPU for ``queue`` more seconds, until ``answers`` run out."""

    def __init__(self, queue: list[float], answers: list) -> None:
        self.proc = types.SimpleNamespace(poll=lambda: None, stdin=io.BytesIO(), pid=0)
        self.queue, self.answers, self.clock = queue, answers, 0.0

    def waited(self) -> float:
        return self.clock

    def receive(self, timeout: float):
        answer = self.answers.pop(0)
        if answer is None:
            self.clock += self.queue.pop(0)
        return answer


def test_time_waiting_for_a_cpu_is_not_a_hang():
    # seed 5 case 1309: a 50 ms case in a niced campaign at load 6 came back as a hang
    done = {"case": 1, "kind": "ok"}
    assert _Starved([3.0, 1.0], [None, None, done])._ask_once(5, 1, 0.01) == done
    # no time in the queue: the time limit stands
    late = _Starved([0.0], [None, done])._ask_once(5, 1, 0.01)
    assert late["kind"] == "hang"


def test_waited_reads_the_worker_schedstat():
    worker = _Starved([], [])
    worker.proc.pid = os.getpid()
    assert _Worker.waited(worker) >= 0.0


def test_float32_sum_past_its_range_is_an_infinity(tmp_path):
    # fuzz seed 5 case 3751: dfits adds float32 in float64 and rounds the total, -8.9e39, to
    # float32's -inf; the oracle compared it with the float64 total and called it a mismatch
    values = np.array([-3e38, -3e38, -3e38, 1.0], np.float32)
    path = tmp_path / "big.fits"
    path.write_bytes(fg.image_file((4,), -32, values=values))
    assert check_file(str(path)).kind == "ok"
    assert not _close_sum(np.float32(np.inf), values)
    assert not _close_sum(np.float32(-3e38), values)


def test_astropy_failing_on_its_own_blank_is_no_oracle(tmp_path):
    # fuzz seed 5 case 6029: astropy read the data, then raised VerifyError when the oracle
    # asked its header for BLANK (`BLANK = /` followed by a CONTINUE card); the exception
    # left check_file, killed the worker and came back as an 'oracle hang'
    cards = [*fg.image_cards((3,), -32), b"BLANK   =                    /", b"CONTINUE  'a&'"]
    path = tmp_path / "blank.fits"
    path.write_bytes(fg.header(cards) + fg.pad(np.arange(3, dtype=">f4").tobytes()))
    assert check_file(str(path)).kind == "ok"


@pytest.mark.parametrize("odd", [b"", b"OBJECT  = 'M13' / \xa0"], ids=["ascii", "non-ascii"])
def test_hierarch_bscale_scales_nothing_in_the_oracle_either(tmp_path, odd):
    # fuzz seed 5 case 12238: astropy scales by `HIERARCH BSCALE = 2.0` only when a card
    # with non-ASCII bytes sends the header to its full parser; DESIGN: not the keyword
    cards = [*fg.image_cards((3,), 16), b"HIERARCH BSCALE = 2.0", *([odd] if odd else [])]
    path = tmp_path / "hierarch.fits"
    path.write_bytes(fg.header(cards) + fg.pad(fg.data_for((3,), 16)))
    assert check_file(str(path)).kind == "ok"


@pytest.mark.parametrize("odd", [b"", b"OBJECT  = 'M13' / \xa0"], ids=["ascii", "non-ascii"])
def test_end_keyword_with_a_value_ends_nothing_in_the_oracle_either(tmp_path, odd):
    # fuzz seed 5 case 12235: astropy's full parser (sent there by a non-ASCII card) ends the
    # header at `END     = 1000`, its fast parser and dfits at the real END card
    cards = [*fg.image_cards((3,), 16), *([odd] if odd else []), b"END     = 1000"]
    cards += [("C" + str(i), i) for i in range(40)]
    path = tmp_path / "end.fits"
    path.write_bytes(fg.header(cards) + fg.pad(fg.data_for((3,), 16)))
    assert check_file(str(path)).kind == "ok"


@pytest.mark.parametrize("case", [24111, 25450])
def test_logical_blank_of_a_compressed_image_is_ignored_in_the_oracle_too(tmp_path, case):
    # fuzz seed 21: `BLANK = T` added to a compressed image's table header; dfits ignores it
    # (not an integer), astropy blanked every 1 and the oracle's ignore_blank missed it
    _, blob, ops = mutated(21, case)
    path = tmp_path / "case.fits"
    path.write_bytes(blob)
    assert "add_card" in ops
    assert check_file(str(path)).kind == "ok"


@pytest.mark.parametrize(
    ("seed", "case", "sign"),
    [
        # ZDITHER0 renamed by a bit flip; dfits starts the dither's random sequence at 1 as
        # cfitsio does (funpack's values equal dfits'), astropy at 0
        (31, 5733, lambda blob: b"ZDITHER0=" not in blob),
        # TTYPE2 = 'ZsCALE': the standard compares column names without regard to case, as
        # cfitsio and dfits do; astropy misses the column and its values are no oracle
        (40, 95220, lambda blob: b"'ZsCALE" in blob),
    ],
    ids=["no-zdither0", "zscale-case"],
)
def test_where_cfitsio_reads_otherwise_astropy_is_no_oracle(tmp_path, seed, case, sign):
    _, blob, _ = mutated(seed, case)
    assert sign(blob)
    path = tmp_path / "case.fits"
    path.write_bytes(blob)
    assert check_file(str(path)).kind == "ok"
    funpack = shutil.which("funpack")
    if funpack is None:
        pytest.skip("funpack (cfitsio) is not installed: no second reader to compare with")
    subprocess.run([funpack, "-O", str(tmp_path / "plain.fits"), str(path)], check=True)
    from astropy.io import fits

    import dfits

    with fits.open(tmp_path / "plain.fits") as hdul, dfits.open(path) as f:
        want = next(np.asarray(h.data) for h in hdul if h.data is not None)
        np.testing.assert_array_equal(f[1].data.compute(), want)


@pytest.mark.slow
def test_fuzz_campaign_through_workers(tmp_path):
    # the ./run fuzz path: worker process, hang timeout, memory cap, summary file
    status = campaign(["--seed", "35", "--cases", "1000", "--out", str(tmp_path)])
    (summary,) = tmp_path.glob("summary-35-0-1000.json")
    counts = json.loads(summary.read_text())["counts"]
    assert status == 0, counts
    assert sum(counts.values()) == 1000
