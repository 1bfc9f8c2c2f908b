"""Maze layouts: a perfect maze on an ``S x S`` grid of unit cells with thin walls.

Coordinates used throughout the maze package:

- a cell is ``(row, col)``; ``row`` grows with the world ``y`` axis, ``col`` with ``x``;
- the world is the square ``[0, S] x [0, S]``; cell ``(r, c)`` covers
  ``x in [c, c + 1]`` and ``y in [r, r + 1]``; its center is ``(c + 0.5, r + 0.5)``;
- walls are zero-thickness unit segments on the grid lines. ``vertical_walls[r, i]`` is the
  segment ``x = i, y in [r, r + 1]`` (shape ``[S, S + 1]``); ``horizontal_walls[j, c]`` is the
  segment ``y = j, x in [c, c + 1]`` (shape ``[S + 1, S]``). The outer border is always walled.

A *perfect* maze has exactly one path between any two cells (its passages form a spanning
tree of the grid graph), so every cell is reachable.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cached_property

import numpy as np

Cell = tuple[int, int]

MIN_SIZE = 2
MAX_SIZE = 64

# Direction index -> (d_row, d_col). The order matches the per-cell wall table used by the
# ray caster: 0 = east (+x), 1 = west (-x), 2 = south (+y), 3 = north (-y).
DIRECTIONS: tuple[tuple[int, int], ...] = ((0, 1), (0, -1), (1, 0), (-1, 0))


def check_size(size: int) -> int:
    """Return ``size`` as an int, or raise ValueError if it is outside [MIN_SIZE, MAX_SIZE]."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise ValueError(f"maze size must be an int in [{MIN_SIZE}, {MAX_SIZE}], got {size!r}")
    if not MIN_SIZE <= int(size) <= MAX_SIZE:
        raise ValueError(
            f"maze size must be in [{MIN_SIZE}, {MAX_SIZE}] cells per side, got {size}"
        )
    return int(size)


@dataclass(frozen=True, eq=False)
class MazeLayout:
    """The passages of a maze: the graph the oracle walks and the walls the renderer draws."""

    size: int
    """Cells per side, ``S``."""
    open_east: np.ndarray
    """``[S, S - 1]`` bool: True where cell ``(r, c)`` opens onto ``(r, c + 1)``."""
    open_south: np.ndarray
    """``[S - 1, S]`` bool: True where cell ``(r, c)`` opens onto ``(r + 1, c)``."""

    def __post_init__(self) -> None:
        s = self.size
        if self.open_east.shape != (s, s - 1) or self.open_south.shape != (s - 1, s):
            raise ValueError(
                f"layout of size {s} needs open_east [{s}, {s - 1}] and open_south "
                f"[{s - 1}, {s}], got {self.open_east.shape} and {self.open_south.shape}"
            )
        self.open_east.setflags(write=False)
        self.open_south.setflags(write=False)

    def in_bounds(self, cell: Cell) -> bool:
        """Whether ``cell`` lies on the grid."""
        return 0 <= cell[0] < self.size and 0 <= cell[1] < self.size

    def has_passage(self, a: Cell, b: Cell) -> bool:
        """Whether 4-neighbouring cells ``a`` and ``b`` are joined by an opening (False otherwise)."""
        if not (self.in_bounds(a) and self.in_bounds(b)):
            return False
        (ra, ca), (rb, cb) = a, b
        if ra == rb and abs(ca - cb) == 1:
            return bool(self.open_east[ra, min(ca, cb)])
        if ca == cb and abs(ra - rb) == 1:
            return bool(self.open_south[min(ra, rb), ca])
        return False

    def neighbors(self, cell: Cell) -> list[Cell]:
        """Cells reachable from ``cell`` in one move, in DIRECTIONS order (E, W, S, N)."""
        r, c = cell
        out = []
        for dr, dc in DIRECTIONS:
            other = (r + dr, c + dc)
            if self.has_passage(cell, other):
                out.append(other)
        return out

    @cached_property
    def vertical_walls(self) -> np.ndarray:
        """``[S, S + 1]`` bool: wall on the segment ``x = i, y in [r, r + 1]``."""
        walls = np.ones((self.size, self.size + 1), dtype=bool)
        walls[:, 1:-1] = ~self.open_east
        walls.setflags(write=False)
        return walls

    @cached_property
    def horizontal_walls(self) -> np.ndarray:
        """``[S + 1, S]`` bool: wall on the segment ``y = j, x in [c, c + 1]``."""
        walls = np.ones((self.size + 1, self.size), dtype=bool)
        walls[1:-1, :] = ~self.open_south
        walls.setflags(write=False)
        return walls

    @cached_property
    def cell_walls(self) -> np.ndarray:
        """``[S, S, 4]`` bool: each cell's walls in DIRECTIONS order (E, W, S, N)."""
        v, h = self.vertical_walls, self.horizontal_walls
        walls = np.stack([v[:, 1:], v[:, :-1], h[1:, :], h[:-1, :]], axis=-1)
        walls.setflags(write=False)
        return walls


def generate_layout(size: int, rng: np.random.Generator) -> MazeLayout:
    """Draw a perfect maze with an iterative recursive backtracker (randomized DFS).

    Starts from a random cell; at each step carves into a random unvisited neighbour, or
    backtracks when there is none. The result is a uniform-ish spanning tree with long
    corridors, deterministic given the state of ``rng``.
    """
    size = check_size(size)
    open_east = np.zeros((size, size - 1), dtype=bool)
    open_south = np.zeros((size - 1, size), dtype=bool)
    visited = np.zeros((size, size), dtype=bool)
    start = (int(rng.integers(size)), int(rng.integers(size)))
    visited[start] = True
    stack = [start]
    while stack:
        r, c = stack[-1]
        options = [
            (r + dr, c + dc)
            for dr, dc in DIRECTIONS
            if 0 <= r + dr < size and 0 <= c + dc < size and not visited[r + dr, c + dc]
        ]
        if not options:
            stack.pop()
            continue
        nr, nc = options[int(rng.integers(len(options)))]
        if nr == r:
            open_east[r, min(c, nc)] = True
        else:
            open_south[min(r, nr), c] = True
        visited[nr, nc] = True
        stack.append((nr, nc))
    return MazeLayout(size=size, open_east=open_east, open_south=open_south)


def path_distances(layout: MazeLayout, start: Cell) -> np.ndarray:
    """``[S, S]`` int64: number of moves from ``start`` to every cell (-1 if unreachable), by BFS."""
    dist = np.full((layout.size, layout.size), -1, dtype=np.int64)
    dist[start] = 0
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        for other in layout.neighbors(cell):
            if dist[other] < 0:
                dist[other] = dist[cell] + 1
                queue.append(other)
    return dist


def farthest_cell(layout: MazeLayout, start: Cell) -> Cell:
    """The cell with the longest maze path from ``start`` (first in row-major order on ties)."""
    dist = path_distances(layout, start)
    flat = int(np.argmax(dist))
    return (flat // layout.size, flat % layout.size)


def dfs_tour(layout: MazeLayout, start: Cell) -> list[Cell]:
    """Depth-first walk from ``start`` that enters every cell, backtracking through dead ends.

    Returns the cells in the order they are stood on, starting with ``start``; consecutive
    cells are always joined by a passage. Neighbours are tried in DIRECTIONS order. The
    walk stops as soon as the last unvisited cell is entered (no final walk back), so for a
    perfect maze of ``n`` cells it has at most ``2 * (n - 1) + 1`` entries.
    """
    n_cells = layout.size * layout.size
    seen = {start}
    tour = [start]
    stack = [start]
    while stack and len(seen) < n_cells:
        cell = stack[-1]
        unvisited = [other for other in layout.neighbors(cell) if other not in seen]
        if unvisited:
            nxt = unvisited[0]
            seen.add(nxt)
            stack.append(nxt)
            tour.append(nxt)
        else:
            stack.pop()
            if stack:
                tour.append(stack[-1])
    return tour


def region_map(size: int, regions_per_side: int = 3) -> np.ndarray:
    """``[S, S]`` int64: region id of each cell, splitting the grid into ``k x k`` blocks.

    ``k = min(regions_per_side, S)``; region ids run ``0 .. k*k - 1`` in row-major order.
    """
    k = max(1, min(regions_per_side, size))
    band = np.arange(size) * k // size
    return band[:, None] * k + band[None, :]
