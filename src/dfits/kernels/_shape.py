"""Map an N-d view and a set of reduced axes onto the two kernel layouts, without copying.

Adjacent axes that are both kept or both reduced, and whose strides chain, merge into one
(numpy's axis coalescing). A C-ordered chunk reduced over leading axes becomes ``cols``
``(1, R, K)``; over trailing axes ``rows`` ``(K, R)``; over a middle block ``cols (K, R, K)``.
Anything else (a strided slice, or reduced axes on both sides of a kept one) returns None and
the caller splits along the first axis.
"""

from __future__ import annotations

from numpy.lib.stride_tricks import as_strided

__all__ = ["layout_for"]


def _groups(u, reduced: frozenset[int]) -> list[list[int]]:
    """Return merged ``[size, stride, is_reduced]`` groups, size-1 axes dropped."""
    groups: list[list[int]] = []
    for ax, (n, st) in enumerate(zip(u.shape, u.strides, strict=True)):
        if n == 1:
            continue
        red = int(ax in reduced)
        if groups and groups[-1][2] == red and groups[-1][1] == st * n:
            groups[-1][0] *= n
            groups[-1][1] = st
        else:
            groups.append([n, st, red])
    return groups


def layout_for(u, reduced: frozenset[int]):
    """Return ``("rows", view2d)``, ``("cols", view3d)`` or ``None``.

    ``rows`` views are ``(kept, reduced)``; ``cols`` views ``(kept_outer, reduced, kept_inner)``.
    Callers reshape kernel outputs to the kept axes of ``u`` in order.
    """
    groups = _groups(u, reduced)
    flags = [g[2] for g in groups]
    item = u.itemsize
    if not groups:
        return "rows", as_strided(u, (1, 1), (item, item))
    if flags == [1]:
        ((n, st, _),) = groups
        return "rows", as_strided(u, (1, n), (n * st, st))
    if flags == [0, 1]:
        (k, ks, _), (r, rs, _) = groups
        return "rows", as_strided(u, (k, r), (ks, rs))
    if flags == [0]:
        ((k, ks, _),) = groups
        return "cols", as_strided(u, (1, 1, k), (k * ks, k * ks, ks))
    if flags == [1, 0]:
        (r, rs, _), (k, ks, _) = groups
        return "cols", as_strided(u, (1, r, k), (r * rs, rs, ks))
    if flags == [0, 1, 0]:
        (k0, s0, _), (r, rs, _), (k1, s1, _) = groups
        return "cols", as_strided(u, (k0, r, k1), (s0, rs, s1))
    return None
