"""The several-fields decode kernel against its numpy oracle: each field cut out of the rows,
viewed big-endian, made native and its flip bit applied."""

from __future__ import annotations

import numpy as np
import pytest

from dfits.kernels.fielddecode import decode_fields


def _case(n: int, sizes: list[int], seed: int, pad: int = 3):
    rng = np.random.default_rng(seed)
    offsets, at = [], pad
    for s in sizes:
        offsets.append(at)  # odd offsets: every load and store is unaligned
        at += s + pad
    rows = rng.integers(0, 256, (n, at), dtype=np.uint8)
    return rows, offsets


@pytest.mark.parametrize("n", [0, 1, 17, 3000], ids=lambda n: f"n{n}")
def test_decode_fields_equal_numpy(n):
    sizes = [1, 2, 4, 8, 8, 4, 2, 1]
    flips = [0, 0, 0, 0, 1 << 63, 1 << 31, 1 << 15, 1 << 7]
    rows, offsets = _case(n, sizes, seed=n)
    outs = [np.empty(n, f"u{s}") for s in sizes]
    decode_fields(rows, np.array(offsets), np.array(sizes), np.array(flips, np.uint64), outs)
    for out, o, s, f in zip(outs, offsets, sizes, flips, strict=True):
        want = rows[:, o : o + s].copy().view(f">u{s}").reshape(-1).astype(f"u{s}")
        np.testing.assert_array_equal(out, want ^ np.array(f, f"u{s}"), err_msg=f"{s} {f}")


def test_decode_fields_into_typed_outputs_and_strided_rows():
    rows, offsets = _case(40, [8, 4], seed=2)
    outs = [np.empty(20, np.float64), np.empty(20, np.int32)]
    decode_fields(rows[::2], np.array(offsets), np.array([8, 4]), np.zeros(2, np.uint64), outs)
    np.testing.assert_array_equal(
        outs[0], rows[::2, offsets[0] : offsets[0] + 8].copy().view(">f8").reshape(-1)
    )
    np.testing.assert_array_equal(
        outs[1], rows[::2, offsets[1] : offsets[1] + 4].copy().view(">i4").reshape(-1)
    )


def test_decode_fields_refuses_bad_geometry():
    rows = np.zeros((4, 8), np.uint8)
    with pytest.raises(ValueError, match="past"):
        decode_fields(rows, np.array([4]), np.array([8]), np.zeros(1, np.uint64),
                      [np.empty(4, np.float64)])  # fmt: skip
    with pytest.raises(ValueError, match="contiguous values"):
        decode_fields(rows, np.array([0]), np.array([8]), np.zeros(1, np.uint64),
                      [np.empty(3, np.float64)])  # fmt: skip
