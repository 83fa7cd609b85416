"""Shot danger: which live shots will pass close to us, and how to steer out of their way (``bot::danger``)."""

from __future__ import annotations

from . import _native


def threats(view, horizon: float = 1.0):
    """Live shots that will pass within a few units of us in the next ``horizon`` seconds, soonest first: a list
    of :class:`bzhead.Threat`."""
    return _native.danger_threats(view, horizon)


def dodge(view, horizon: float = 1.0):
    """The controls that take us farthest from the threats of the next ``horizon`` seconds, as
    ``(speed, turn, jump)`` for ``control.drive(speed, turn)`` (and ``control.jump()``), or ``None`` when
    nothing threatens."""
    return _native.danger_dodge(view, horizon)
