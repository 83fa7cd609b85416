"""bzhead: headless BZFlag 2.4 bots, an observer and game-server queries, over the bzhead Rust crate.

Write a bot by subclassing :class:`Bot` and implementing ``tick(view, control)``; run it with a
:class:`BotHost`. Watch a game with :func:`observe`; query game servers with :func:`query` and :func:`scan`.
The guide is ``docs/python.md`` in the repository.
"""

from __future__ import annotations

from . import _native
from ._native import (
    BotHost,
    Control,
    FiringSolution,
    Flag,
    Me,
    Observer,
    Shot,
    Tank,
    Threat,
    View,
    World,
    observe,
)

__version__ = _native.__version__

__all__ = [
    "Bot",
    "BotHost",
    "Control",
    "FiringSolution",
    "Flag",
    "Me",
    "Observer",
    "Shot",
    "Tank",
    "Threat",
    "View",
    "World",
    "aim",
    "danger",
    "nav",
    "observe",
    "protocols",
    "query",
    "scan",
]

class Bot:
    """Base class of a bot: override :meth:`tick` (and, if you like, :meth:`on_event`).

    The host calls ``tick`` once per tick (30 times a second by default) while the bot is in the game, alive or
    dead (check ``view.me.alive``). ``view`` and ``control`` are valid during the call only. An exception raised
    in ``tick`` or ``on_event`` is printed to ``sys.stderr`` with its traceback (or raised from
    ``BotHost.run(raise_errors=True)``) and reported as an ``error`` event for this bot; the bot leaves the game,
    the other bots play on.
    """

    def tick(self, view: View, control: Control) -> None:
        """Decide: read ``view``, set ``control``. Speed and turn stay set until changed."""

    def on_event(self, event: dict) -> None:
        """Called with each event of this bot (``event["bot_event"]``: joined, spawned, died, killed, ...)."""


def query(
    protocol: str,
    address: str,
    timeout: float = 1.0,
    *,
    retries: int = 2,
    params: dict | None = None,
    plugin_dirs: list | None = None,
) -> dict:
    """Query one game server; returns its result in the shared shape (a ``bzhead query --json`` line)."""
    return _native.query(
        protocol,
        address,
        timeout,
        retries=retries,
        params=list((params or {}).items()),
        plugin_dirs=list(plugin_dirs or []),
    )


def scan(
    addresses: list | None = None,
    *,
    protocol: str,
    master: str | None = None,
    master_protocol: str = "dpmaster",
    game: str | None = None,
    game_protocol: str | None = None,
    filters: str | None = None,
    rate: int = 1000,
    concurrency: int = 1000,
    timeout: float = 1.0,
    retries: int = 2,
    params: dict | None = None,
    plugin_dirs: list | None = None,
) -> list:
    """Query many servers at once (``addresses``, or the list of a ``master``); returns every result, in order,
    one per distinct server (an address given twice is queried once)."""
    return _native.scan(
        None if addresses is None else [str(a) for a in addresses],
        protocol=protocol,
        master=master,
        master_protocol=master_protocol,
        game=game,
        game_protocol=None if game_protocol is None else str(game_protocol),
        filters=filters,
        rate=rate,
        concurrency=concurrency,
        timeout=timeout,
        retries=retries,
        params=list((params or {}).items()),
        plugin_dirs=list(plugin_dirs or []),
    )


def protocols(plugin_dirs: list | None = None) -> list:
    """The protocols :func:`query` and :func:`scan` know: ``bzflag`` (built in) and every plugin's."""
    return _native.protocols(list(plugin_dirs or []))


from . import aim, danger, nav  # noqa: E402  (they use the names above)
