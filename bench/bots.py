#!/usr/bin/env python3
"""Bots on a local bzfs: CPU per bot, tick times, kills per minute of two hunters, time for a capper to capture.

Usage:
  bench/bots.py cpu [--bots 1,10,100] [--seconds 60] [--bzhead target/release/bzhead]
  bench/bots.py hunters [--seconds 180] [--runs 3]
  bench/bots.py capture [--runs 5]
  bench/bots.py versus [--mode ctf|ffa] [--maps generated,ctf-raised,...] [--seconds 300] [--runs 1] [--keep DIR]
  bench/bots.py maps [--runs 3]
  bench/bots.py teams [--seconds 300] [--runs 1] [--maps M,...] [--ricochet] [--games N] [--keep DIR]

cpu      For each N: a bzfs on the generated team world (-j, 3 shots, room for N bots), then one
         `bzhead bot hunter --count N` process. Once every bot has joined (its "joined" line), the process's
         CPU time (all threads, /proc/PID/task/*/schedstat) is sampled, again SECONDS later: CPU per bot-second =
         delta / (N * SECONDS). bzfs's own CPU over the same window is reported beside it (it relays every
         update to every player, N^2). The tick-time percentiles come from `--stats`.
hunters  Two hunters on the generated FFA world (800 x 800, boxes and pyramids): kills per minute, from the
         bots' summary lines.
versus   Capture the flag (the default, `--mode ctf`): three bzhead bots (a capper, a defender and a hunter, red)
         against three robots of the official client (`bzflag -solo 3`, joined as an observer, under `xvfb-run -a`;
         the robots ask for an automatic team and bzfs puts them on green, the only team with room) on each map of
         `--maps` (all five of `maps` by default) for SECONDS from the moment the last robot joined: captures each
         way, kills each way (deaths of a captured team are not kills), team kills and self-kills; one Markdown
         table row per map and run and a total. Needs Debian's `bzflag-client`, `xvfb` and `xauth`.
         `--mode ffa`: two bzhead hunters against two robots of the official client (`bzflag -solo 2`, joined as
         an observer, under `xvfb-run`), all rogues on the generated FFA world (-j, 3 shots). Kills each way (from the
         observer's `kill` lines), kills per minute per side, bzhead's shots and hits per shot, deaths by cause,
         the median range and flight time of killing shots each way; one Markdown table row per run and a total.
         `--keep DIR` keeps each run's JSON lines (`--show shot_begin,update`) there.
capture  One capper (red) against one sitter (green) on the standard CTF map (`bzfs -c`, generated world, bases
         740 units apart): seconds from the capper's first spawn to its capture.
maps     `capture` on each CTF map of testdata/worlds (raised bases, decks up ramps of boxes, two levels, a flag
         reached only through a teleporter) and the generated one: the median seconds from spawn to capture per map
         (a run with no capture within 290 s counts as infinite).
teams    Three bzhead bots a side (capper, hunter, defender, red against green) on each of those maps (or `--maps`)
         for SECONDS: captures per 10 minutes (both teams together) and team kills, from the bots' summary lines and
         the observer's kill lines. `--ricochet`: every shot ricochets (bzfs +r), where team kills are likeliest.
         `--games N`: N games at once, each on its own bzfs (the figures are their sums; a self-kill is also
         what a team kill costs the killer).
"""
import argparse, os, queue, re, socket, statistics, subprocess, threading, time

CLK_TCK = os.sysconf("SC_CLK_TCK")

def free_port():
    """A port free for both TCP and UDP (bzfs needs both), whose low byte bzfs accepts."""
    while True:
        s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close(); u.close()
        if p & 0xff >= 4:
            return p

def wait_listen(proc, port, timeout=15):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(0.2)
            u.sendto(b"\x00\x02\x04\x04\x00\x00", ("127.0.0.1", port))
            u.recvfrom(100); u.close(); return True
        except OSError:
            time.sleep(0.05)
    return False

def cpu_seconds(pid):
    """CPU time of every thread of `pid`: on-CPU nanoseconds from schedstat (clock ticks, 10 ms, are too coarse
    for short windows), else utime + stime."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        if total:
            return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK

def start_bzfs(args):
    """A bzfs on a fresh port; tries another port when the first is taken meanwhile (a busy machine)."""
    for _ in range(5):
        port = free_port()
        p = subprocess.Popen(["/usr/games/bzfs", "-i", "127.0.0.1", "-p", str(port)] + args,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if wait_listen(p, port):
            return p, f"127.0.0.1:{port}"
        p.kill(); p.wait()
    raise SystemExit(f"bzfs {' '.join(args)} did not come up")

class Lines:
    """Collects a process's stdout lines on a thread."""
    def __init__(self, stream):
        self.q = queue.Queue()
        threading.Thread(target=lambda: [self.q.put(l) for l in stream] + [self.q.put(None)], daemon=True).start()

    def wait_for(self, pred, timeout):
        end = time.time() + timeout
        while time.time() < end:
            try:
                line = self.q.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                return None
            if pred(line):
                return line
        return None

def cpu(a):
    rows = []
    for n in [int(x) for x in a.bots.split(",")]:
        per_team = n // 4 + 2
        bzfs, server = start_bzfs(["-j", "-ms", "3", "-mp", f"0,{per_team},{per_team},{per_team},{per_team},4"])
        try:
            bot = subprocess.Popen([a.bzhead, "bot", "hunter", "--count", str(n), "--stagger-ms", "50", "--quiet",
                                    "--stats", "--for", str(a.seconds + n * 0.05 + 20), server],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out = Lines(bot.stdout)
            joined = 0
            end = time.time() + n * 0.05 + 30
            while joined < n and time.time() < end:
                if out.wait_for(lambda l: ": joined as player" in l, 1.0):
                    joined += 1
            if joined < n:
                raise SystemExit(f"only {joined} of {n} bots joined")
            time.sleep(3)  # the last bots spawn
            c0, s0, t0 = cpu_seconds(bot.pid), cpu_seconds(bzfs.pid), time.time()
            time.sleep(a.seconds)
            c1, s1, t1 = cpu_seconds(bot.pid), cpu_seconds(bzfs.pid), time.time()
            bot.send_signal(2)
            _, err = bot.communicate(timeout=30)
            m = re.search(r"tick time µs: mean (\d+), p50 (\d+), p90 (\d+), p99 (\d+), max (\d+)", err)
            ticks = m.groups() if m else ("?",) * 5
            kills = sum(int(k) for k in re.findall(r": (\d+) kills", err))
            wall = t1 - t0
            rows.append((n, (c1 - c0) / wall, (c1 - c0) / (n * wall) * 1e6, (s1 - s0) / wall, ticks, kills))
        finally:
            bzfs.terminate(); bzfs.wait()
    print(f"| bots | bzhead CPU (cores) | CPU per bot-second (µs) | bzfs CPU (cores) | tick µs mean / p50 / p90 / p99 / max | kills |")
    print("|---|---|---|---|---|---|")
    for n, cores, per, bz, t, kills in rows:
        print(f"| {n} | {cores:.3f} | {per:.0f} | {bz:.3f} | {t[0]} / {t[1]} / {t[2]} / {t[3]} / {t[4]} | {kills} |")

def hunters(a):
    rates = []
    for _ in range(a.runs):
        bzfs, server = start_bzfs(["-j", "-ms", "3"])
        try:
            r = subprocess.run([a.bzhead, "bot", "hunter", "--count", "2", "--quiet", "--for", str(a.seconds), server],
                               capture_output=True, text=True, timeout=a.seconds + 60)
            kills = sum(int(k) for k in re.findall(r": (\d+) kills", r.stderr))
            rates.append(kills / (a.seconds / 60))
        finally:
            bzfs.terminate(); bzfs.wait()
    print(f"two hunters, generated 800 x 800 world, {a.seconds} s x {a.runs} runs: kills per minute "
          f"{', '.join(f'{r:.1f}' for r in rates)} (median {statistics.median(rates):.1f})")

def capture(a):
    times = []
    for _ in range(a.runs):
        bzfs, server = start_bzfs(["-c", "-j", "-ms", "3", "-mp", "0,2,2,0,0,2"])
        try:
            sitter = subprocess.Popen([a.bzhead, "bot", "sitter", "--team", "green", "--quiet", "--for", "400", server],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)
            cap = subprocess.Popen([a.bzhead, "bot", "capper", "--team", "red", "--quiet", "--for", "300", server],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            out = Lines(cap.stdout)
            if not out.wait_for(lambda l: ": spawned" in l, 30):
                raise SystemExit("the capper did not spawn")
            t0 = time.time()
            line = out.wait_for(lambda l: ": captured" in l, 290)
            times.append(time.time() - t0 if line else float("inf"))
            cap.send_signal(2); sitter.send_signal(2)
            cap.wait(timeout=10); sitter.wait(timeout=10)
        finally:
            bzfs.terminate(); bzfs.wait()
    print(f"capper vs sitter on the standard CTF map, {a.runs} runs: seconds from spawn to capture "
          f"{', '.join(f'{t:.1f}' for t in times)} (median {statistics.median(times):.1f})")

MAPS = ["generated", "ctf-raised", "ctf-decks", "ctf-two-levels", "ctf-teleport"]

def map_args(name):
    if name == "generated":
        return []
    here = os.path.dirname(os.path.abspath(__file__))
    return ["-world", os.path.join(here, "..", "testdata", "worlds", name + ".bzw")]

def capture_on(a, world_args):
    bzfs, server = start_bzfs(["-c", "-j", "-ms", "3", "-mp", "0,2,2,0,0,2"] + world_args)
    try:
        sitter = subprocess.Popen([a.bzhead, "bot", "sitter", "--team", "green", "--quiet", "--for", "400", server],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        cap = subprocess.Popen([a.bzhead, "bot", "capper", "--team", "red", "--quiet", "--for", "300", server],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        out = Lines(cap.stdout)
        if not out.wait_for(lambda l: ": spawned" in l, 30):
            raise SystemExit("the capper did not spawn")
        t0 = time.time()
        line = out.wait_for(lambda l: ": captured" in l, 290)
        cap.send_signal(2); sitter.send_signal(2)
        cap.wait(timeout=10); sitter.wait(timeout=10)
        return time.time() - t0 if line else float("inf")
    finally:
        bzfs.terminate(); bzfs.wait()

def maps(a):
    print("| map | seconds from spawn to capture | median |")
    print("|---|---|---|")
    for name in MAPS:
        times = [capture_on(a, map_args(name)) for _ in range(a.runs)]
        print(f"| {name} | {', '.join(f'{t:.1f}' for t in times)} | {statistics.median(times):.1f} |", flush=True)

def teams(a):
    print(f"| map | seconds | games | captures | captures per 10 min | kills | team kills | self-kills |")
    print("|---|---|---|---|---|---|---|---|")
    import json
    for name in (a.maps.split(",") if a.maps else MAPS):
        for _ in range(a.runs):
            rico = ["+r"] if a.ricochet else []
            games = [start_bzfs(["-c", "-j", "-ms", "3", "-mp", "0,4,4,0,0,2"] + rico + map_args(name))
                     for _ in range(a.games)]
            try:
                import tempfile
                files = [tempfile.TemporaryFile("w+") for _ in games]  # not pipes: nobody reads them meanwhile
                bots = [subprocess.Popen([a.bzhead, "bot", "capper,hunter,defender", "--count", "6", "--team",
                                          "red,green", "--json", "--for", str(a.seconds), server],
                                         stdout=f, stderr=subprocess.DEVNULL, text=True)
                        for (_, server), f in zip(games, files)]
                for b in bots:
                    b.wait(timeout=a.seconds + 90)
                outs = []
                for f in files:
                    f.seek(0)
                    outs.append(f.read())
                    f.close()
            finally:
                for bzfs, _ in games:
                    bzfs.terminate(); bzfs.wait()
            captures = kills = team_kills = self_kills = 0
            for out in outs:
                if a.keep:
                    os.makedirs(a.keep, exist_ok=True)
                    with open(os.path.join(a.keep, f"teams-{name}-{time.time_ns()}.jsonl"), "w") as f:
                        f.write(out)
                teams_of = {}
                for line in out.splitlines():
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if e.get("type") == "bot" and e.get("bot_event") == "captured":
                        captures += 1
                    if e.get("type") == "join" and "callsign" in e:
                        teams_of[e["callsign"]] = e.get("team")
                    if e.get("type") == "kill":
                        kills += 1
                        k, v = e.get("killer_callsign"), e.get("victim_callsign")
                        if k != v and k in teams_of and teams_of.get(k) == teams_of.get(v):
                            team_kills += 1
                        self_kills += k == v
            game_s = a.seconds * a.games
            print(f"| {name} | {a.seconds:.0f} | {a.games} | {captures} | {captures * 600 / game_s:.1f} | {kills} "
                  f"| {team_kills} | {self_kills} |", flush=True)

def official_client(a, home, server, robots):
    """The official client as an observer running `robots` robots (callsigns official00, official01, ...), under
    xvfb-run in its own process group (so that xvfb-run, Xvfb and bzflag are ended together). Its frame rate is
    capped (its robots think once a frame; 60 is a human's client) so that its drawing does not starve the
    machine."""
    for d in (".bzf", ".bzf/2.4"):
        os.makedirs(os.path.join(home, d), exist_ok=True)
        with open(os.path.join(home, d, "config.cfg"), "w") as f:
            f.write(f"set saveEnergy 1\nset fpsLimit {a.official_fps}\n")
    return subprocess.Popen(["xvfb-run", "-a", "-s", "-screen 0 800x600x24", "/usr/games/bzflag",
                             "-window", "320x240", "-solo", str(robots), "-team", "observer",
                             f"official@{server}"],
                            env=dict(os.environ, HOME=home), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)

def team_sizes(a, server):
    """bzfs's team sizes (rogue, red, green, blue, purple, observer), or None."""
    import json
    q = subprocess.run([a.bzhead, "query", "bzflag", server, "--json"], capture_output=True, text=True)
    try:
        return json.loads(q.stdout)["raw"]["game"]["team_sizes"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None

def wait_sizes(a, server, pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        sizes = team_sizes(a, server)
        if sizes and pred(sizes):
            return
        time.sleep(0.5)
    raise SystemExit(what)

def stop_group(proc):
    import signal
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=5); break
        except subprocess.TimeoutExpired:
            pass

def versus_ctf_run(a, name):
    """One CTF game of 3 bzhead bots (red) against 3 official robots (green) on map `name`; returns counts."""
    import json, shutil, signal, tempfile
    home = tempfile.mkdtemp(prefix="bzhead-versus-")
    bzfs, server = start_bzfs(["-c", "-j", "-ms", "3", "-mp", "0,3,3,0,0,4"] + map_args(name))
    official = bot = None
    out = os.path.join(a.keep or home, f"versus-{name}-{int(time.time())}.jsonl")
    try:
        with open(out, "w") as f:
            bot = subprocess.Popen([a.bzhead, "bot", "capper,defender,hunter", "--count", "3", "--team", "red",
                                    "--callsign", "bzhead", "--json", "--for", str(a.seconds + 120), server],
                                   stdout=f, stderr=subprocess.PIPE, text=True)
            wait_sizes(a, server, lambda s: s[1] >= 3, 60, "the bzhead bots did not join")
            official = official_client(a, home, server, 3)
            wait_sizes(a, server, lambda s: s[2] >= 3, 90, "the official robots did not join")
            f.flush()
            start = os.path.getsize(out)
            time.sleep(a.seconds)
            end = os.path.getsize(out)
            stop_group(official)
            official = None
            bot.send_signal(signal.SIGINT)
            _, err = bot.communicate(timeout=30)
        side = lambda n: "official" if n.startswith("official") else "bzhead" if n.startswith("bzhead") else "?"
        r = {"kills": {}, "captures": {"official": 0, "bzhead": 0}, "captured_deaths": 0}
        r["shots"] = sum(int(k) for k in re.findall(r"(\d+) shots", err))
        with open(out, "rb") as f:
            f.seek(start)
            data = f.read(end - start).decode(errors="replace")
        for line in data.splitlines():
            try:
                v = json.loads(line)
            except ValueError:
                continue
            ty = v.get("type")
            if ty == "capture":
                s = side(v.get("callsign", ""))
                if s in r["captures"]:
                    r["captures"][s] += 1
            elif ty == "kill":
                if v.get("reason") == "captured":
                    r["captured_deaths"] += 1
                    continue
                k, vi = side(v["killer_callsign"]), side(v["victim_callsign"])
                key = f"self-{k}" if v["killer"] == v["victim"] else f"{k}>{vi}"
                r["kills"][key] = r["kills"].get(key, 0) + 1
        return r
    finally:
        if official:
            stop_group(official)
        if bot and bot.poll() is None:
            bot.send_signal(signal.SIGINT)
            try:
                bot.wait(timeout=10)
            except subprocess.TimeoutExpired:
                bot.kill(); bot.wait()
        bzfs.terminate(); bzfs.wait()
        shutil.rmtree(home, ignore_errors=True)

def versus_ctf(a):
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    names = a.maps.split(",") if a.maps else MAPS
    print(f"versus, capture the flag: 3 bzhead bots (capper, defender, hunter; red) against 3 official robots "
          f"(bzflag -solo 3; green), bzfs -c -j -ms 3, {a.seconds:.0f} s x {a.runs} per map", flush=True)
    print("| map | run | captures bzhead – robots | kills bzhead – robots | kill ratio | team kills bzhead / robots "
          "| self-kills bzhead / robots | bzhead shots |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    total = {"kills": {}, "captures": {"official": 0, "bzhead": 0}, "shots": 0}
    def row(label, run, r):
        k, c = r["kills"], r["captures"]
        b2o, o2b = k.get("bzhead>official", 0), k.get("official>bzhead", 0)
        ratio = f"{b2o / o2b:.2f}" if o2b else "∞" if b2o else "-"
        return (f"| {label} | {run} | {c['bzhead']} – {c['official']} | {b2o} – {o2b} | {ratio} | "
                f"{k.get('bzhead>bzhead', 0)} / {k.get('official>official', 0)} | "
                f"{k.get('self-bzhead', 0)} / {k.get('self-official', 0)} | "
                f"{r['shots']} |")
    for name in names:
        for i in range(a.runs):
            r = versus_ctf_run(a, name)
            print(row(name, i + 1, r), flush=True)
            for k, n in r["kills"].items():
                total["kills"][k] = total["kills"].get(k, 0) + n
            for s in ("official", "bzhead"):
                total["captures"][s] += r["captures"][s]
            total["shots"] += r["shots"]
    print(row("**all**", "", total), flush=True)

def versus_run(a, keep):
    """One versus game; returns a dict of counts."""
    import json, shutil, signal, tempfile
    home = tempfile.mkdtemp(prefix="bzhead-versus-")
    # Cap the official client's frame rate (its robots think once a frame; 60 is a human's client) so that
    # its drawing does not starve the machine.
    for d in (".bzf", ".bzf/2.4"):
        os.makedirs(os.path.join(home, d), exist_ok=True)
        with open(os.path.join(home, d, "config.cfg"), "w") as f:
            f.write(f"set saveEnergy 1\nset fpsLimit {a.official_fps}\n")
    bzfs, server = start_bzfs(["-j", "-ms", "3", "-mp", "8,0,0,0,0,4"])
    official = bot = None
    try:
        # The official client, as an observer, runs two robots (callsigns official00, official01). Its own
        # process group, so that xvfb-run, Xvfb and bzflag are ended together.
        official = subprocess.Popen(["xvfb-run", "-a", "-s", "-screen 0 800x600x24", "/usr/games/bzflag",
                                     "-window", "320x240", "-solo", "2", "-team", "observer",
                                     f"official@{server}"],
                                    env=dict(os.environ, HOME=home), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
        end = time.time() + 60
        while time.time() < end:
            q = subprocess.run([a.bzhead, "query", "bzflag", server, "--json"], capture_output=True, text=True)
            try:
                if json.loads(q.stdout)["raw"]["game"]["team_sizes"][0] >= 2:
                    break
            except (ValueError, KeyError, IndexError, TypeError):
                pass
            time.sleep(0.5)
        else:
            raise SystemExit("the official robots did not join")
        out = os.path.join(keep or home, f"versus-{int(time.time())}.jsonl")
        with open(out, "w") as f:
            bot = subprocess.Popen([a.bzhead, "bot", "hunter", "--count", "2", "--team", "rogue", "--callsign",
                                    "bzhead", "--json", "--show", "shot_begin,update", "--for", str(a.seconds),
                                    server], stdout=f, stderr=subprocess.PIPE, text=True)
            _, err = bot.communicate(timeout=a.seconds + 60)
        side = lambda n: "official" if n.startswith("official") else "bzhead" if n.startswith("bzhead") else "?"
        r = {"kills": {}, "causes": {}, "range": {"official": [], "bzhead": []},
             "flight": {"official": [], "bzhead": []}, "official_shots": 0}
        r["shots"] = sum(int(k) for k in re.findall(r"(\d+) shots", err))
        names, pos, shots = {}, {}, {}
        with open(out) as f:
            for line in f:
                try:
                    v = json.loads(line)
                except ValueError:
                    continue
                ty = v.get("type")
                if ty == "join":
                    names[v["id"]] = v["callsign"]
                elif ty == "update":
                    pos[v["id"]] = v["pos"]
                elif ty == "shot_begin":
                    shots[(v["shooter"], v["shot_id"])] = (v["t"], v["pos"])
                    if side(names.get(v["shooter"], "")) == "official":
                        r["official_shots"] += 1
                elif ty == "kill":
                    k, vi = side(v["killer_callsign"]), side(v["victim_callsign"])
                    key = "self" if v["killer"] == v["victim"] else f"{k}>{vi}"
                    r["kills"][key] = r["kills"].get(key, 0) + 1
                    if vi == "bzhead":
                        r["causes"][v["reason"]] = r["causes"].get(v["reason"], 0) + 1
                    s = shots.get((v["killer"], v["shot_id"]))
                    if s and k != vi and v["victim"] in pos:
                        p = pos[v["victim"]]
                        r["range"][k].append(((p[0] - s[1][0]) ** 2 + (p[1] - s[1][1]) ** 2) ** 0.5)
                        r["flight"][k].append(v["t"] - s[0])
        return r
    finally:
        if bot and bot.poll() is None:
            bot.send_signal(signal.SIGINT)
            try:
                bot.wait(timeout=10)
            except subprocess.TimeoutExpired:
                bot.kill(); bot.wait()
        if official:
            stop_group(official)
        bzfs.terminate(); bzfs.wait()
        shutil.rmtree(home, ignore_errors=True)

def versus(a):
    if a.mode == "ctf":
        return versus_ctf(a)
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    med = lambda xs: f"{statistics.median(xs):.0f}" if xs else "-"
    medf = lambda xs: f"{statistics.median(xs):.2f}" if xs else "-"
    def row(label, r, minutes):
        k = r["kills"]
        b2o, o2b = k.get("bzhead>official", 0), k.get("official>bzhead", 0)
        hits = b2o + k.get("bzhead>bzhead", 0)
        causes = ", ".join(f"{c} {n}" for c, n in sorted(r["causes"].items())) or "-"
        return (f"| {label} | {b2o} | {o2b} | {b2o / minutes:.2f} | {o2b / minutes:.2f} | "
                f"{k.get('official>official', 0)} / {k.get('bzhead>bzhead', 0)} / {k.get('self', 0)} | "
                f"{r['shots']} | {hits / r['shots'] if r['shots'] else 0:.3f} | {r['official_shots']} | "
                f"{(k.get('official>official', 0) + o2b) / max(r['official_shots'], 1):.3f} | "
                f"{med(r['range']['bzhead'])} / {med(r['range']['official'])} | "
                f"{medf(r['flight']['bzhead'])} / {medf(r['flight']['official'])} | {causes} |")
    print(f"versus: 2 bzhead hunters against 2 official robots (bzflag -solo 2), all rogues, generated world, "
          f"{a.seconds:.0f} s x {a.runs}", flush=True)
    print("| run | bzhead killed official | official killed bzhead | bzhead kills/min | official kills/min "
          "| official>official / bzhead>bzhead / self | bzhead shots | bzhead hits/shot | official shots "
          "| official hits/shot | median kill range bzhead / official | median kill flight s bzhead / official "
          "| bzhead deaths by cause |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    total = {"kills": {}, "causes": {}, "range": {"official": [], "bzhead": []},
             "flight": {"official": [], "bzhead": []}, "shots": 0, "official_shots": 0}
    for i in range(a.runs):
        r = versus_run(a, a.keep)
        print(row(str(i + 1), r, a.seconds / 60), flush=True)
        for key in ("kills", "causes"):
            for k, n in r[key].items():
                total[key][k] = total[key].get(k, 0) + n
        for key in ("range", "flight"):
            for s in ("official", "bzhead"):
                total[key][s] += r[key][s]
        total["shots"] += r["shots"]; total["official_shots"] += r["official_shots"]
    print(row("**all**", total, a.runs * a.seconds / 60))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["cpu", "hunters", "capture", "versus", "maps", "teams"])
    ap.add_argument("--bzhead", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release/bzhead"))
    ap.add_argument("--bots", default="1,10,100")
    ap.add_argument("--seconds", type=float, help="60 by default (versus: 300)")
    ap.add_argument("--runs", type=int, help="3 by default (versus --mode ctf: 1 per map)")
    ap.add_argument("--mode", choices=["ctf", "ffa"], default="ctf", help="versus: capture the flag or FFA")
    ap.add_argument("--maps", help="versus --mode ctf, teams: comma-separated maps (default: all of `maps`)")
    ap.add_argument("--ricochet", action="store_true", help="teams: every shot ricochets (bzfs +r)")
    ap.add_argument("--games", type=int, default=1, help="teams: games played at once (each its own bzfs)")
    ap.add_argument("--official-fps", type=int, default=60, help="versus: the official client's frame rate cap")
    ap.add_argument("--keep", help="versus, teams: keep each run's JSON lines in this directory")
    a = ap.parse_args()
    if a.runs is None:
        a.runs = 1 if a.what == "versus" and a.mode == "ctf" else 3
    if a.seconds is None:
        a.seconds = 300.0 if a.what in ("versus", "teams") else 60.0
    {"cpu": cpu, "hunters": hunters, "capture": capture, "versus": versus, "maps": maps, "teams": teams}[a.what](a)

if __name__ == "__main__":
    main()
