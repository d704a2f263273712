"""Map an N-d view and a set of reduced axes onto the two kernel layouts, without copying.

Adjacent axes that are both kept or both reduced, and whose strides chain, merge into one
(numpy's axis coalescing). A C-ordered chunk reduced over leading axes becomes ``cols``
``(1, R, K)``; over trailing axes ``rows`` ``(K, R)``; over a middle block ``cols (K, R, K)``.
A reduced outer axis before two kept groups that do not merge (a moment map of a cut-out)
is also ``cols``, with the reduced group moved to the middle. Anything else (reduced axes on
both sides of a kept one, reduced groups that do not merge) returns None and the caller
splits the view.
"""

from __future__ import annotations

from numpy.lib.stride_tricks import as_strided

__all__ = ["flat_view", "layout_for"]


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
    if flags == [1, 0, 0]:
        # reduced outer axis, two kept groups that do not merge (a moment map of a cut-out):
        # the column kernel takes any strides, so the reduced group goes in the middle
        (r, rs, _), (k0, s0, _), (k1, s1, _) = groups
        return "cols", as_strided(u, (k0, r, k1), (s0, rs, s1))
    return None


def flat_view(v):
    """A 1-D contiguous view over ``v``'s memory and where ``v``'s elements lie in it.

    Numba compiles a loop over a row of a strided (layout "A") array without knowing that the
    row is contiguous, so it does not vectorise it (measured: 48 ms against 18 ms for a
    weighted sum over 128 MiB of a cube chunk whose planes lie 16 MiB apart). Kernels index
    ``base`` instead, whose rows numba knows are contiguous. Returns ``(base, off, strides)``
    with ``v[i, j, ...]`` at ``base[off + i·strides[0] + j·strides[1] + ...]`` (strides in
    elements, the last one 1), or None when ``v`` is empty or its last axis is not
    unit-stride (the caller copies such rare views). ``base`` spans only the bytes between
    ``v``'s lowest and highest elements, so it never leaves ``v``'s buffer.
    """
    item = v.itemsize
    shape, strides = v.shape, v.strides
    if v.size == 0 or (shape[-1] > 1 and strides[-1] != item):
        return None
    # one pass, no temporaries: section reads call this once per stamp
    el = []
    lo = hi = 0
    flip = False
    for n, st in zip(shape, strides, strict=True):
        if n == 1:
            el.append(0)
            continue
        q, r = divmod(st, item)
        if r:
            return None
        el.append(q)
        if q < 0:
            lo += (n - 1) * q
            flip = True
        else:
            hi += (n - 1) * q
    el[-1] = 1
    # Flipping the axes that run backwards puts the view's pointer on its lowest element.
    low = v[tuple(slice(None, None, -1) if st < 0 else slice(None) for st in el)] if flip else v
    base = as_strided(low, (hi - lo + 1,), (item,), writeable=False)
    return base, -lo, tuple(el)
