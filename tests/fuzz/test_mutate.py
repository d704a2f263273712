"""The mutation profiles: the default one unchanged, the extended one aimed (issue 51)."""

from __future__ import annotations

import contextlib
import random
import re

import pytest

from tests.fuzz import mutate
from tests.fuzz.check import check_file
from tests.fuzz.mutate import EXTENDED, MUTATORS, PROFILES, headers, mutated
from tests.fuzz.seeds import extended_seeds, seeds


def _seed(name: str) -> bytes:
    return dict(seeds())[name]


def test_default_profile_cases_are_unchanged():
    assert PROFILES["default"] is MUTATORS
    assert PROFILES["extended"] == MUTATORS + EXTENDED
    for case in range(40):
        assert mutated(34, case) == mutated(34, case, "default")


@pytest.mark.parametrize("mutator", [m for m, _ in EXTENDED], ids=lambda m: m.__name__)
def test_extended_mutators_take_an_empty_file(mutator):
    assert isinstance(mutator(random.Random(0), b"", [(0, 0)]), bytes)


def test_wrong_type_scaling_tries_every_keyword_and_value():
    blob = _seed("gzip-float")
    spans = headers(blob)
    seen_keys, seen_values = set(), set()
    for k in range(600):
        out = mutate.wrong_type_scaling(random.Random(k), blob, spans)
        for start, end in headers(out):
            for at in range(start, end, 80):
                card = out[at : at + 80]
                key = card[:8].rstrip().decode("latin-1")
                value = card[9:].split(b"/")[0].strip()
                if card[8:9] == b"=" and value in [v.strip() for v in mutate.WRONG_VALUES]:
                    seen_keys.add(re.sub(r"^(TSCAL|TZERO|TNULL)\d+$", r"\1", key))
                    seen_values.add(value)
    wanted = {k.format(n="") for k in mutate.SCALING_KEYS}
    assert wanted <= seen_keys
    assert seen_values == {v.strip() for v in mutate.WRONG_VALUES}


@pytest.mark.parametrize("value", mutate.WRONG_VALUES, ids=repr)
@pytest.mark.parametrize("seed", ["rice", "gzip-float"])
def test_undefined_or_wrong_zscale_is_a_dfits_error(tmp_path, seed, value):
    # the campaign's escape (issue 51): `ZSCALE  =` in a compressed integer image's header
    blob = _seed(seed)
    start, end = headers(blob)[1]
    cards = mutate._cards(blob, (start, end))
    cards.insert(len(cards), mutate._wrong_card(b"ZSCALE", value).ljust(80))
    path = tmp_path / "z.fits"
    path.write_bytes(mutate._rebuild(blob, (start, end), cards))
    outcome = check_file(str(path))
    assert outcome.kind == "dfits_error", outcome.detail
    assert any("HDU 1" in e and "ZSCALE" in e for e in outcome.errors), outcome.errors


def test_wrong_type_cell_changes_a_quantisation_column(tmp_path):
    # (a ZSCALE/ZZERO column made 1D or 1E still holds numbers: a valid file, or rows that
    # no longer add up to NAXIS1)
    blob = _seed("gzip-float")
    named = 0
    for k in range(20):
        out = mutate.wrong_type_cell(random.Random(k), blob, headers(blob))
        path = tmp_path / "cell.fits"
        path.write_bytes(out)
        outcome = check_file(str(path))
        assert outcome.kind in ("ok", "dfits_error"), outcome.detail
        named += any("HDU 1: HeaderError" in e and "TFORM" in e for e in outcome.errors)
    assert named >= 10


def test_end_into_data_never_reads_a_guessed_offset(tmp_path):
    # the HDUs before a header that runs into data read as astropy's (check_file compares
    # them); the scan stops at it (most cases: the seed's data blocks are binary)
    import warnings

    import dfits

    blob = _seed("multi-ext")
    stopped = 0
    for k in range(30):
        out = mutate.end_into_data(random.Random(k), blob, headers(blob))
        path = tmp_path / "end.fits"
        path.write_bytes(out)
        outcome = check_file(str(path))
        assert outcome.kind in ("ok", "dfits_error"), outcome.detail
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the first HDU's END broken is an error at open (so is a header that reads on
            # through printable bytes to a later END: two XTENSION cards)
            with contextlib.suppress(dfits.DfitsError), dfits.open(path) as f:
                stopped += f.layout.stopped is not None
    assert stopped > 10


def test_extended_profile_adds_the_aimed_seeds():
    aimed = {"gzip-int", "rice-scaled-blank", "image-table-image"}
    assert aimed <= {name for name, _ in extended_seeds()}
    assert not aimed & {name for name, _ in seeds()}
    assert aimed <= {mutated(51, k, "extended")[0] for k in range(400)}
