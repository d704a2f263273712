"""The cube explorer over loopback HTTP: issue 47's figure "a plane change <= 1 s from nginx".

    python benchmarks/explore_http.py [--shape 24,4096,4096] [--view 512] [--moves 20]
                                      [--tmpdir DIR] [--json OUT]

A float32 cube (``dfits.demo.make_cube``, velocity WCS) is served by nginx on 127.0.0.1 (the
tests' Python range server when nginx is missing; the output says which). The explorer's
model is made on the URL as the widget makes it, ``ExploreModel(url, view=(v, v))`` (fsspec's
HTTP filesystem: only byte ranges are fetched), and what a move costs the kernel is timed,
from the call to the float32 array it sends (the browser's drawing is the browser test's):

* ``plane``: a slider move over the whole field (``section[k, ::d, ::d]``, ``d`` = side /
  view), each move to the next channel, so no plane is read twice in a row;
* ``window``: the same in a zoomed window of a quarter of the side (stride ``d / 4``);
* ``spectrum``: a click, ``section[:, y, x]`` at a new pixel each time.

Untimed first: opening, the limits (three sampled planes) and one read of each kind
(imports, the HTTP session, kernel loading). The file is read into the page cache before the
moves. Requests and bytes the server sent are counted from its log for each case, against
the bytes of the rows a move needs (the HTTP reads fetch whole rows of the window: a stride
along a row is cut in memory).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]


def _window(shape: tuple[int, int, int]) -> tuple[int, int, int, int]:
    """The zoomed window: a quarter of each side, centred."""
    _, ny, nx = shape
    return (ny // 2 - ny // 8, ny // 2 + ny // 8, nx // 2 - nx // 8, nx // 2 + nx // 8)


def _rows_bytes(window: tuple[int, int, int, int], view: int) -> int:
    """Bytes of the float32 rows a strided read of ``window`` needs (each row from its first
    to its last selected pixel), at the model's stride for a ``view``-pixel view."""
    y0, y1, x0, x1 = window
    d = max(1, -(-(y1 - y0) // view), -(-(x1 - x0) // view))
    return len(range(y0, y1, d)) * ((len(range(x0, x1, d)) - 1) * d + 1) * 4


def moves(model, shape: tuple[int, int, int], n: int, log) -> dict[str, dict]:
    """``n`` timed calls of each case: seconds per call, and the GETs and bytes the server
    logged for them (``log()``: the server's GETs of the file so far)."""
    nchan, ny, nx = shape
    window = _window(shape)
    cases = {
        "plane": lambda i: model.plane(i % nchan, window=(0, ny, 0, nx)).data,
        "window": lambda i: model.plane(i % nchan, window=window).data,
        "spectrum": lambda i: model.spectrum((37 * i + 11) % ny, (53 * i + 7) % nx).values,
    }
    out: dict[str, dict] = {}
    for name, call in cases.items():
        call(nchan // 2)  # the first of its kind, untimed
        before, times = len(log()), []
        for i in range(n):
            t0 = time.perf_counter()
            call(nchan // 2 + 1 + i)
            times.append(time.perf_counter() - t0)
        gets = log()[before:]
        out[name] = {"times": times, "requests": len(gets), "bytes": sum(r.sent for r in gets)}
    return out


def run(shape: tuple[int, int, int], view: int, n: int, tmpdir: str | None) -> dict:
    from tests.servers import Nginx, ScriptedServer

    from dfits.demo import make_cube
    from dfits.jupyter.explore_model import ExploreModel

    folder = Path(tempfile.mkdtemp(prefix="dfits-explore-http-", dir=tmpdir))
    path = Path(make_cube(str(folder / "cube.fits"), shape))
    prefix = Path(tempfile.mkdtemp(prefix="dfits-nginx-", dir=tmpdir))
    server = Nginx(folder, prefix) if Nginx.available() else ScriptedServer(folder)
    with server:
        model = ExploreModel(f"{server.url}/{path.name}", view=(view, view))
        model.sample_limits()
        with open(path, "rb") as fh:  # into the page cache: the server reads it warm
            while fh.read(1 << 24):
                pass
        cases = moves(model, shape, n, lambda: server.gets(path.name))
    _, ny, nx = shape
    needed = {
        "plane": _rows_bytes((0, ny, 0, nx), view),
        "window": _rows_bytes(_window(shape), view),
        "spectrum": shape[0] * 4,
    }
    return {"server": type(server).__name__, "shape": shape, "view": view, "moves": n,
            "cases": cases, "needed": needed}  # fmt: skip


def report(res: dict) -> str:
    n = res["moves"]
    lines = [
        f"explorer over loopback HTTP ({res['server']}), {tuple(res['shape'])} float32, "
        f"{res['view']}-pixel view, {n} moves each, median (min-max), and per move: the GETs "
        "and bytes the server sent, against the bytes of the rows the move needs:"
    ]
    for name, case in res["cases"].items():
        ms = [t * 1e3 for t in case["times"]]
        lines.append(
            f"  {name:8s} {statistics.median(ms):8.1f} ms ({min(ms):.1f}-{max(ms):.1f})  "
            f"{case['requests'] / n:6.1f} GETs  {case['bytes'] / n / 2**20:8.3f} MiB sent  "
            f"{res['needed'][name] / 2**20:8.3f} MiB needed"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="24,4096,4096", help="channels,ny,nx (float32)")
    ap.add_argument("--view", type=int, default=512, help="the view's side in pixels")
    ap.add_argument("--moves", type=int, default=20, help="timed calls per case")
    ap.add_argument("--tmpdir", default=None, help="where the cube and nginx's files go")
    ap.add_argument("--json", default=None, help="also write the raw figures here")
    args = ap.parse_args()
    shape = tuple(int(v) for v in args.shape.split(","))
    res = run(shape, args.view, args.moves, args.tmpdir)
    print(report(res))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
