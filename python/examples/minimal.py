"""The smallest useful bot: a starting point for your own.

    python python/examples/minimal.py 127.0.0.1:5154 [COUNT]

It drives ahead, turns away from walls in front of it, and when an enemy is roughly ahead and in sight it turns to
face it and fires. Everything the protocol asks of a player (spawning, updates, reporting hits on itself, flags)
is done by the host; a bot only reads its view and sets its control.
"""

from __future__ import annotations

import math
import sys

import bzhead


def wrap(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


class Minimal(bzhead.Bot):
    def __init__(self, turn_left: bool) -> None:
        self.turn_left = turn_left  # which way to turn when something blocks the road

    def tick(self, view: bzhead.View, control: bzhead.Control) -> None:
        me = view.me
        if not me.alive:
            return  # the host asks the server to respawn us
        x, y, z = me.pos
        eye = (x, y, z + 1.57)  # about the muzzle's height
        # An enemy within 200 units that we can see: face it and shoot when lined up.
        for t in view.enemies():
            tx, ty, tz = t.pos
            if math.hypot(tx - x, ty - y) < 200 and view.world.line_of_sight(eye, (tx, ty, tz + 1.0)):
                error = wrap(math.atan2(ty - y, tx - x) - me.azimuth)
                control.drive(0.5, error * 4)
                if abs(error) < 0.03 and me.reload == 0:
                    control.fire()
                return
        # Nothing to shoot: drive on, turning while something is close ahead.
        ahead = (eye[0] + 15 * math.cos(me.azimuth), eye[1] + 15 * math.sin(me.azimuth), eye[2])
        if view.world.line_of_sight(eye, ahead):
            control.drive(1.0, 0.0)
        else:
            control.drive(0.3, 1.0 if self.turn_left else -1.0)
        if math.hypot(me.vel[0], me.vel[1]) < 1.0 and control.speed > 0.5:
            self.turn_left = not self.turn_left  # stuck: try the other way next time

    def on_event(self, event: dict) -> None:
        print(f"{event['bot']}: {event['bot_event']}", flush=True)


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: minimal.py HOST:PORT [COUNT]")
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    host = bzhead.BotHost(game_events=False)
    for i in range(count):
        host.add_bot(sys.argv[1], Minimal(turn_left=i % 2 == 0), callsign=f"minimal{i + 1}")
    try:
        host.run()  # until every bot has left or stopped; Ctrl-C makes them leave cleanly
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
