"""bzhead: headless BZFlag 2.4 bots, an observer and game-server queries, over the bzhead Rust crate."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Iterator, Optional, Sequence, Tuple, Union

from . import aim as aim
from . import danger as danger
from . import nav as nav

__version__: str

Vec3 = Tuple[float, float, float]
Vec2 = Tuple[float, float]
Point = Union[Tuple[float, float], Tuple[float, float, float], Sequence[float]]
Event = dict[str, Any]

class Bot:
    """Base class of a bot: override ``tick`` (and, if you like, ``on_event``).

    ``tick`` is called once per tick (30 Hz by default) while the bot is in the game, alive or dead. ``view`` and
    ``control`` are valid during the call only. An exception in ``tick`` or ``on_event`` is printed to
    ``sys.stderr`` with its traceback (or raised from ``BotHost.run(raise_errors=True)``) and reported as an
    ``error`` event for this bot; the bot leaves, the other bots play on.
    """

    def tick(self, view: View, control: Control) -> None:
        """Decide: read ``view``, set ``control``. Speed and turn stay set until changed."""
    def on_event(self, event: Event) -> None:
        """Each event of this bot, a dict like a ``bzhead bot --json`` line: ``{"type": "bot", "bot": callsign,
        "bot_event": "joined" | "spawned" | "died" | "killed" | "grabbed" | "captured" | "connecting" |
        "disconnected" | "yielded" | "left" | "stopped", ...}``."""

class BotHost:
    """Any number of bots on any number of servers, on one event loop and one thread.

    Per server the host keeps one observer link whose picture of the game every bot reads; bots join one after
    another as robot players, reconnect with back-off, and do everything the protocol asks of a player. Use it
    on the thread that made it. As a context manager it makes every bot leave on exit.
    """

    def __init__(
        self,
        *,
        tick_hz: float = 30.0,
        join_stagger: float = 0.2,
        game_events: bool = True,
        show: Sequence[str] = ...,
        hide: Sequence[str] = ...,
        reconnect: bool = True,
        yield_slots: Optional[int] = None,
        shared_eye: bool = True,
    ) -> None:
        """``tick_hz``: ticks per second (1..240). ``join_stagger``: seconds between two bots' connects.
        ``game_events``: queue the observer link's game events for ``events()`` (filtered like ``bzhead bot``:
        ``show``/``hide`` event types, "update", "shot_begin" and "shot_end" hidden by default).
        ``yield_slots``: keep that many player slots free for humans. ``shared_eye``: one observer link per
        server (on by default; without it each bot only knows what changes after it joins)."""
    def add_bot(
        self,
        server: str,
        bot: Bot,
        *,
        callsign: Optional[str] = None,
        team: str = "auto",
        kind: str = "robot",
        motto: Optional[str] = None,
        udp: bool = False,
        seed: Optional[int] = None,
    ) -> int:
        """Adds ``bot`` (any object with ``tick(view, control)``) for ``server`` ("HOST[:PORT]", port 5154 by
        default); it connects in its turn. ``team``: "auto", "rogue", "red", "green", "blue", "purple".
        ``kind``: "robot" (a robot player, as the rules ask of programs) or "tank". Returns the bot's id."""
    def run(self, seconds: Optional[float] = None, *, raise_errors: bool = False) -> None:
        """Runs the event loop for ``seconds``, or (None) until every bot has left or stopped. Ctrl-C makes every
        bot leave cleanly, then raises KeyboardInterrupt. An exception of a bot's ``tick`` or ``on_event`` is
        printed to ``sys.stderr`` with its traceback; with ``raise_errors`` it is raised from ``run`` instead (its
        bot has left; the others stay). Do not call the host from inside a bot's tick."""
    def close(self) -> None:
        """Every bot leaves cleanly (waits up to 3 s); nothing reconnects."""
    def leave_bot(self, bot_id: int) -> None:
        """Makes one bot leave for good."""
    def events(self) -> list[Event]:
        """The events since the last call, oldest first, as dicts in the shape of ``bzhead bot --json`` lines,
        with ``"server"`` added (and ``"bot_id"`` for bot events). A bot whose Python code raised gets
        ``{"type": "bot", "bot_event": "error", "error": "ZeroDivisionError: ...", "traceback": "..."}``."""
    @property
    def dropped_events(self) -> int:
        """Events dropped because ``events()`` was not called (more than 100,000 waiting)."""
    def status(self, bot_id: int) -> Optional[dict[str, Any]]:
        """A bot's state and counts: callsign, server, id, team, state ("waiting", "joining", "joined",
        "yielded", "leaving", "left", "stopped"), reason, failed, spawns, shots, kills, deaths, hits_taken, grabs,
        captures, updates."""
    def bot_ids(self) -> list[int]:
        """The ids of every bot added."""
    def tick_times_us(self) -> list[int]:
        """How long each tick took (µs, the last 100,000 ticks)."""
    def __enter__(self) -> BotHost: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class View:
    """The game as one bot sees it during one tick (valid during ``tick`` only; RuntimeError outside)."""

    @property
    def time(self) -> float:
        """Seconds since the host started."""
    @property
    def dt(self) -> float:
        """Seconds since this bot's previous tick."""
    @property
    def me(self) -> Me:
        """Our own tank."""
    @property
    def players(self) -> list[Tank]:
        """Every other player with a tank (observers excluded), dead-reckoned to the tick's time."""
    def enemies(self) -> list[Tank]:
        """Live enemy tanks that are not paused, nearest first."""
    @property
    def flags(self) -> list[Flag]:
        """Every flag of the server."""
    @property
    def shots(self) -> list[Shot]:
        """Every live shot, ours included."""
    @property
    def game_type(self) -> str:
        """"ctf", "team_ffa", "open_ffa" or "rabbit"."""
    def var(self, name: str) -> Optional[str]:
        """A server variable's text (``view.var("_tankSpeed")``), or None."""
    def tank(self, id: int) -> Optional[Tank]:
        """One player's tank, or None."""
    def is_hostile(self, team: str) -> bool:
        """Whether a player of ``team`` is our enemy."""
    @property
    def world(self) -> World:
        """The world (line of sight, ground height, size, bases)."""
    @property
    def physics(self) -> Tuple[float, float, float]:
        """``(tank_speed, tank_ang_vel, shot_speed)`` of this server."""

class World:
    """The world of the view it came from (valid during the same tick)."""

    def line_of_sight(self, a: Point, b: Point) -> bool:
        """True when a shot from ``a`` would reach ``b`` ((x, y, z) points)."""
    def ground_height(self, p: Point) -> float:
        """The height of the surface a tank at ``p`` would stand on ((x, y): the highest; (x, y, z): the highest
        at or below z)."""
    @property
    def size(self) -> float:
        """The side of the square world (it spans -size/2 .. size/2 on x and y)."""
    @property
    def water_level(self) -> Optional[float]:
        """The water level, or None."""
    def bases(self, team: str) -> list[Vec3]:
        """The centres of a team's bases."""

class Control:
    """What a bot asks its tank to do during one tick (valid during ``tick`` only)."""

    def drive(self, speed: float, turn: float) -> None:
        """Speed -0.5 (full reverse) .. 1 (full ahead), a fraction of _tankSpeed; turn -1 (full right) .. 1 (full
        left), a fraction of _tankAngVel. Both stay set until changed."""
    def stop(self) -> None:
        """Speed and turn 0."""
    def fire(self) -> None:
        """Fire this tick (when a shot is loaded; the shot flies along the tank's heading)."""
    def jump(self) -> None:
        """Jump this tick (when the server allows jumping)."""
    def drop_flag(self) -> None:
        """Drop the flag we carry this tick."""
    def say(self, text: str, to: Optional[int] = None) -> None:
        """Say ``text`` to everybody, or to player ``to``."""
    @property
    def speed(self) -> float:
        """The speed set."""
    @property
    def turn(self) -> float:
        """The turn rate set."""
    grab: bool
    """Grab flags the tank drives over (default True)."""
    target: Optional[int]
    """The player a guided missile fired now locks on."""

class Me:
    """Our own tank at the tick."""

    id: int
    callsign: str
    team: str
    pos: Vec3
    vel: Vec3
    azimuth: float
    """Heading, radians (0 = +x, counter-clockwise)."""
    alive: bool
    reload: float
    """Seconds until a shot can be fired (0: now)."""
    flag: Optional[str]
    """The flag we carry ("GM", "R*", ...), or None."""

class Tank:
    """Another player's tank at the tick's time."""

    id: int
    callsign: str
    team: str
    pos: Vec3
    vel: Vec3
    azimuth: float
    alive: bool
    paused: bool
    flag: Optional[str]
    ours: bool
    """One of this host's bots."""
    robot: bool
    not_responding: bool

class Flag:
    """A flag at the tick."""

    index: int
    kind: str
    """Its type as far as known ("PZ" for a loose flag of unknown type, "R*" for the red team flag, ...)."""
    status: str
    """"on_ground", "on_tank", "in_air", "coming", "going"."""
    owner: Optional[int]
    pos: Vec3
    team: Optional[str]

class Shot:
    """A live shot at the tick."""

    shooter: int
    shot_id: int
    team: str
    flag: Optional[str]
    pos: Optional[Vec3]
    """Where it is at the tick, or None when its path has ended."""
    vel: Vec3
    age: float

class FiringSolution:
    """A firing solution (``bzhead.aim.solution``)."""

    azimuth: float
    flight_time: float
    impact: Vec3
    miss: float
    hit_radius: float
    bounces: int
    clear: bool
    tolerance: float
    """Largest azimuth error (radians) that still hits."""
    hits: bool

class Threat:
    """A shot that will pass close to us (``bzhead.danger.threats``)."""

    shooter: int
    shot_id: int
    time: float
    contact: Optional[float]
    miss: float
    hit_radius: float

class Observer(Iterator[Event]):
    """An observer session; iterating yields its events as dicts shaped like ``bzhead observe --json`` lines."""

    def __iter__(self) -> Observer: ...
    def __next__(self) -> Event: ...
    def say(self, text: str, to: Optional[int] = None) -> None:
        """Say ``text`` to everybody, or to player ``to``."""
    def close(self) -> None:
        """Leave cleanly; iteration ends after the last events."""
    @property
    def exit_code(self) -> Optional[int]:
        """How the session ended, as ``bzhead observe`` exits (0 clean leave, 3 cannot connect, 4 rejected, 5
        kicked, 6 protocol error); None while it runs."""
    def __enter__(self) -> Observer: ...
    def __exit__(self, *exc: object) -> bool: ...

def observe(
    server: str,
    seconds: Optional[float] = None,
    *,
    callsign: str = "bzhead",
    motto: str = "bzhead observer",
    show: Sequence[str] = ...,
    hide: Sequence[str] = ...,
    udp: bool = True,
    world: bool = True,
    cache: bool = True,
    cache_dir: Optional[str] = None,
    idle_timeout: Optional[float] = 30.0,
) -> Observer:
    """Joins ``server`` ("HOST[:PORT]") as an observer, like ``bzhead observe --json``: iterate for its events
    (the same types shown and hidden; ``show=["all"]`` for every one). After ``seconds`` it leaves cleanly and the
    iteration ends. Ctrl-C leaves cleanly, then raises KeyboardInterrupt."""

def query(
    protocol: str,
    address: str,
    timeout: float = 1.0,
    *,
    retries: int = 2,
    params: Optional[dict[str, str]] = None,
    plugin_dirs: Optional[Sequence[str]] = None,
) -> dict[str, Any]:
    """Queries one server ("bzflag", "teeworlds", "teeworlds7", "quake3", "warsow", "savage2", "srb2", ...):
    its result in the shared shape, like a ``bzhead query --json`` line: ``{"v": 1, "protocol", "address",
    "ok": True, "ping_ms", "name", "map", "game_type", "players", "max_players", "bots", "password", "version",
    "player_list", "rules", "raw"}`` or ``{"ok": False, "error": "timeout" | ..., "detail": ...}``."""

def scan(
    addresses: Optional[Sequence[str]] = None,
    *,
    protocol: str,
    master: Optional[str] = None,
    master_protocol: str = "dpmaster",
    game: Optional[str] = None,
    game_protocol: Optional[Union[str, int]] = None,
    filters: Optional[str] = None,
    rate: int = 1000,
    concurrency: int = 1000,
    timeout: float = 1.0,
    retries: int = 2,
    params: Optional[dict[str, str]] = None,
    plugin_dirs: Optional[Sequence[str]] = None,
) -> list[dict[str, Any]]:
    """Queries many servers at once: ``addresses``, and/or every server of a ``master``'s list. Returns every
    result (the master's first), each like a ``bzhead scan --json`` line, in the order of ``addresses``. Each
    distinct server is queried once: an address given twice (or two spellings of one, ``127.0.0.1:27960`` and
    ``localhost:27960``) gives one result, at its first place."""

def protocols(plugin_dirs: Optional[Sequence[str]] = None) -> list[dict[str, Any]]:
    """The protocols ``query`` and ``scan`` know: name, kind ("server" or "master"), default_port, plugin."""
