"""PLIO_1 line lists decode as IRAF's ``pll2p`` defines them; malformed lists are refused."""

from __future__ import annotations

import numpy as np

from dfits.kernels.plio import plio_decode


def line_list(*instructions: int) -> np.ndarray:
    """An old-format (3-word header) list: words 0-2, then the instructions."""
    words = [0, 0, 3 + len(instructions), *instructions]
    return np.array(words, np.int16)


def op(code: int, data: int) -> int:
    value = (code << 12) | data
    return value - (1 << 16) if value >= 1 << 15 else value


def test_each_opcode():
    words = line_list(
        op(0, 2),  # two zeros
        op(1, 5), 0,  # high value := 5
        op(4, 3),  # three pixels of 5
        op(2, 2),  # high value += 2 -> 7
        op(5, 3),  # two zeros then one 7
        op(6, 1),  # 8, one pixel
        op(7, 4),  # 4, one pixel
        op(3, 1),  # 3
        op(4, 2),
    )  # fmt: skip
    got = plio_decode(words, 14)
    assert got.tolist() == [0, 0, 5, 5, 5, 0, 0, 7, 8, 4, 3, 3, 0, 0]  # short list: zeros


def test_high_value_uses_the_next_word():
    words = line_list(op(1, 1), 2, op(4, 2))
    assert plio_decode(words, 2).tolist() == [(2 << 12) + 1] * 2


def test_new_format_header():
    body = [op(4, 4)]
    words = np.array([0, 7, -100, 8, 0, 0, 0, *body], np.int16)  # length in words 3-4
    assert plio_decode(words, 4).tolist() == [1, 1, 1, 1]


def test_malformed_lists_are_refused():
    assert plio_decode(np.array([0, 0, 50, op(4, 1)], np.int16), 4) is None  # claims 50 words
    assert plio_decode(line_list(op(1, 3)), 4) is None  # set-high without its second word
    assert plio_decode(np.array([0, 0], np.int16), 4) is None
