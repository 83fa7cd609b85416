"""Firing solutions: lead a moving target along its predicted line or arc (the crate's ``bot::aim``)."""

from __future__ import annotations

from . import _native


def lead(view, target):
    """The azimuth (radians) that makes a shot fired now meet ``target`` (a :class:`bzhead.Tank` or a player
    id) on its predicted path, checked along the shot's real path through the world; ``None`` when no shot
    fired now hits it."""
    s = _native.aim_solution(view, target)
    return s.azimuth if s is not None and s.hits else None


def solution(view, target):
    """The whole :class:`bzhead.FiringSolution` for ``target`` (also when it misses), or ``None``."""
    return _native.aim_solution(view, target)


def bank_shot(view, target):
    """A shot at ``target`` off walls or through teleporters (about 200 simulated paths: ask now and then, not
    every tick): a :class:`bzhead.FiringSolution` or ``None``."""
    return _native.aim_bank_shot(view, target)
