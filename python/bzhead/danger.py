"""Shot danger: which live shots will pass close to us, and how to steer out of their way (``bot::danger``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from . import _native

if TYPE_CHECKING:
    from . import Threat, View


def threats(view: View, horizon: float = 1.0) -> list[Threat]:
    """Live shots that will pass within a few units of us in the next ``horizon`` seconds, soonest first: a list
    of :class:`bzhead.Threat`."""
    return _native.danger_threats(view, horizon)


def dodge(view: View, horizon: float = 1.0) -> Optional[tuple[float, float, bool]]:
    """The controls that take us farthest from the threats of the next ``horizon`` seconds, as
    ``(speed, turn, jump)`` for ``control.drive(speed, turn)`` (and ``control.jump()``), or ``None`` when
    nothing threatens."""
    return _native.danger_dodge(view, horizon)
