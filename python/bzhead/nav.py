"""The path planner (``bot::nav``): an occupancy grid of the world at ground level, A* over it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from . import _native

if TYPE_CHECKING:
    from . import View


def path_to(view: View, goal: tuple[float, float]) -> Optional[list[tuple[float, float]]]:
    """Waypoints ``[(x, y), ...]`` from our tank to ``goal`` ((x, y)) around every obstacle: the start, the
    corners, the goal; ``None`` when there is no way. The grid is built on first use (once per world)."""
    return _native.nav_path_to(view, goal)
