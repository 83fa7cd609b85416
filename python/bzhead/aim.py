"""Firing solutions: lead a moving target along its predicted line or arc (the crate's ``bot::aim``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Union

from . import _native

if TYPE_CHECKING:
    from . import FiringSolution, Tank, View


def lead(view: View, target: Union[Tank, int]) -> Optional[float]:
    """The azimuth (radians) that makes a shot fired now meet ``target`` (a :class:`bzhead.Tank` or a player
    id) on its predicted path, checked along the shot's real path through the world; ``None`` when no shot
    fired now hits it."""
    s = _native.aim_solution(view, target)
    return s.azimuth if s is not None and s.hits else None


def solution(view: View, target: Union[Tank, int]) -> Optional[FiringSolution]:
    """The whole :class:`bzhead.FiringSolution` for ``target`` (also when it misses), or ``None``."""
    return _native.aim_solution(view, target)


def bank_shot(view: View, target: Union[Tank, int]) -> Optional[FiringSolution]:
    """A shot at ``target`` off walls or through teleporters (about 200 simulated paths: ask now and then, not
    every tick): a :class:`bzhead.FiringSolution` or ``None``."""
    return _native.aim_bank_shot(view, target)
