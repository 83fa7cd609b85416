"""A hunter in Python: finds the nearest enemy, leads its shots along the target's predicted path, dodges, and
drives along planned paths when nobody is in sight.

    python python/examples/hunter.py 127.0.0.1:5154 [SECONDS]

Run a target beside it, e.g. `bzhead bot sitter --team green 127.0.0.1:5154`. It prints its kills and deaths.
"""

from __future__ import annotations

import math
import sys

import bzhead


def wrap(a: float) -> float:
    """An angle in [-pi, pi)."""
    return (a + math.pi) % (2 * math.pi) - math.pi


class Hunter(bzhead.Bot):
    def __init__(self) -> None:
        self.kills = 0
        self.deaths = 0

    def steer(self, view: bzhead.View, error: float) -> float:
        """The turn that closes an azimuth error in about one tick (so the tank does not overshoot)."""
        _, ang_vel, _ = view.physics
        return error / (ang_vel * max(view.dt, 1 / 30))

    def tick(self, view: bzhead.View, control: bzhead.Control) -> None:
        me = view.me
        if not me.alive:
            return  # the host respawns us
        # A shot about to hit us: get out of its way first.
        dodge = bzhead.danger.dodge(view, 1.0)
        if dodge is not None:
            speed, turn, jump = dodge
            control.drive(speed, turn)
            if jump:
                control.jump()
            return
        enemies = view.enemies()
        if not enemies:
            control.drive(0.5, 0.2)  # roam
            return
        # The nearest enemy we have a firing solution for (a lead along its line or arc, checked on the real path).
        for target in enemies[:3]:
            shot = bzhead.aim.solution(view, target)
            if shot is not None and shot.hits:
                error = wrap(shot.azimuth - me.azimuth)
                control.drive(0.2, self.steer(view, error))
                if abs(error) <= shot.tolerance and me.reload == 0:
                    control.fire()
                return
        # Nobody in a clear line: drive towards the nearest along a planned path.
        target = enemies[0]
        path = bzhead.nav.path_to(view, target.pos[:2])
        goal = path[1] if path and len(path) > 1 else target.pos[:2]
        error = wrap(math.atan2(goal[1] - me.pos[1], goal[0] - me.pos[0]) - me.azimuth)
        control.drive(1.0 if abs(error) < 0.5 else 0.3, self.steer(view, error))

    def on_event(self, event: dict) -> None:
        if event["bot_event"] == "killed":
            self.kills += 1
            print(f"{event['bot']}: killed player {event['victim']}", flush=True)
        elif event["bot_event"] == "died":
            self.deaths += 1


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: hunter.py HOST:PORT [SECONDS]")
    server = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else None
    hunter = Hunter()
    with bzhead.BotHost(game_events=False) as host:
        host.add_bot(server, hunter, callsign="pyhunter", team="red")
        try:
            host.run(seconds)
        except KeyboardInterrupt:
            pass  # the bots have left cleanly
    print(f"pyhunter: {hunter.kills} kills, {hunter.deaths} deaths")


if __name__ == "__main__":
    main()
