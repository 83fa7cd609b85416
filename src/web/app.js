// bzhead live view: one Server-Sent Events stream per server (/events?server=N), drawn on a canvas over the
// world map (/map.svg?server=N). Tanks, shots and guided missiles are extrapolated at the display's frame rate
// between states: tanks on the arc of their velocity and angular velocity, shots along their paths (ricochets and
// teleports included), missiles turning towards their targets.
// Every name from the server is put in the page as text (textContent), never as HTML.
"use strict";

const TEAM_COLORS = {
  rogue: "#f2f2f2", red: "#e53935", green: "#43a047", blue: "#1e88e5", purple: "#8e24aa",
  rabbit: "#eeeeee", hunter: "#ff9800", observer: "#777777", none: "#999999", automatic: "#999999",
};
const color = (team) => TEAM_COLORS[team] || "#ff9800";

const $ = (id) => document.getElementById(id);
const canvas = $("overlay");
const ctx = canvas.getContext("2d");

let servers = [];
let current = -1;
let source = null;
let reconnectTimer = null;
let world = null;           // { size, links, bases, water, hash }
let state = null;           // the last "state" (time, time left, status), with recv = performance.now()
let players = new Map();    // id -> { p, recv }: each player as its last state had it, and when that came
let netById = new Map();    // id -> network figures (sent once a second)
let flags = new Map();      // index -> flag
let teams = [];
let shots = new Map();      // key -> { shot, recv, sim (guided missiles: flown on between states) }
let streamStatus = "connecting";
let observerStatus = "connecting";
// Replay mode (`bzhead replay FILE --web`): the replay's state (play, speed, time, length), and the page's game
// clock, anchored at the last state or replay event: times of a replay are game times (seconds from the
// recording's start), run at the replay's speed, or stopped while it is paused. A live view runs on
// performance.now() as before.
let replay = null;
let anchor = { t: 0, wall: 0 };
let seeking = false;

// The page's clock (ms) at `now` (performance.now()): itself for a live view; the replay's game time in replay mode.
function pageNow(now) {
  if (!replay) return now;
  const rate = replay.playing ? replay.speed : 0;
  return Math.min(anchor.t * 1000 + (now - anchor.wall) * rate, replay.duration * 1000);
}

function setStatus() {
  const s = $("status");
  let text, cls;
  if (streamStatus !== "live") { text = "reconnecting"; cls = "reconnecting"; }
  else if (observerStatus === "joined") { text = replay ? "replay" : "live"; cls = "live"; }
  else { text = observerStatus; cls = observerStatus; }
  s.textContent = text;
  s.className = cls;
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

async function loadServers() {
  try {
    const r = await fetch("/api/servers", { cache: "no-store" });
    const j = await r.json();
    servers = j.servers || [];
  } catch (e) {
    setTimeout(loadServers, 1000);
    return;
  }
  const tabs = $("tabs");
  tabs.replaceChildren();
  servers.forEach((s, i) => {
    const b = el("button", s.label);
    b.title = s.address;
    b.dataset.server = String(i);
    b.addEventListener("click", () => select(i));
    tabs.appendChild(b);
  });
  const want = parseInt(new URLSearchParams(location.search).get("server") || "0", 10);
  select(want >= 0 && want < servers.length ? want : 0);
}

function select(i) {
  if (i === current && source) return;
  current = i;
  document.querySelectorAll("#tabs button").forEach((b) => b.classList.toggle("active", b.dataset.server === String(i)));
  $("server-label").textContent = servers[i] ? servers[i].address : "";
  world = null; state = null; shots = new Map(); players = new Map(); netById = new Map(); flags = new Map();
  $("feed").replaceChildren(); $("chat").replaceChildren();
  $("scoreboard").tBodies[0].replaceChildren();
  $("map").hidden = true; $("mapnote").hidden = false;
  connect();
}

function connect() {
  if (source) source.close();
  if (reconnectTimer) { clearTimeout(reconnectTimer); reconnectTimer = null; }
  streamStatus = "connecting"; setStatus();
  const s = new EventSource("/events?server=" + current);
  source = s;
  s.onopen = () => {
    // Every stream (ours, or the browser's own retry) starts with a hello, a full state and the recent feed:
    // forget what the last one said.
    shots = new Map();
    $("feed").replaceChildren(); $("chat").replaceChildren();
    streamStatus = "live"; setStatus();
  };
  s.onerror = () => {
    streamStatus = "reconnecting"; setStatus();
    // EventSource retries by itself unless the answer was not a stream; then we retry.
    if (s.readyState === EventSource.CLOSED && source === s) {
      reconnectTimer = setTimeout(connect, 1500);
    }
  };
  s.addEventListener("hello", (e) => onHello(JSON.parse(e.data)));
  s.addEventListener("state", (e) => onState(JSON.parse(e.data)));
  s.addEventListener("feed", (e) => onFeed(JSON.parse(e.data)));
  s.addEventListener("status", (e) => { observerStatus = JSON.parse(e.data).status; setStatus(); });
  s.addEventListener("replay", (e) => onReplay(JSON.parse(e.data)));
}

function onHello(h) {
  if (h.replay) onReplay(h.replay);
  observerStatus = h.status; setStatus();
  setWorld(h.world);
}

// The replay's state (from the hello, a replay event or an answer of /api/replay): the control bar, the clock;
// after a seek the feed starts again (the stream sends the events since the state the game was rebuilt from).
function onReplay(r) {
  if (replay && r.seeks !== replay.seeks) {
    $("feed").replaceChildren(); $("chat").replaceChildren(); shots = new Map();
  }
  replay = r;
  anchor = { t: r.t, wall: performance.now() };
  $("replaybar").hidden = false; $("link").hidden = true;
  $("rplay").textContent = r.playing ? "pause" : "play";
  const sp = $("rspeed");
  if (Number(sp.value) !== r.speed) sp.value = String(r.speed);
  $("rseek").max = String(r.duration);
  setStatus();
}

async function replayCommand(query) {
  try {
    const r = await fetch("/api/replay?" + query, { cache: "no-store" });
    if (r.ok) onReplay(await r.json());
  } catch (e) { /* the stream says what happened */ }
}

$("rplay").addEventListener("click", () => replayCommand("cmd=" + (replay && replay.playing ? "pause" : "play")));
$("rspeed").addEventListener("change", (e) => replayCommand("speed=" + encodeURIComponent(e.target.value)));
$("rseek").addEventListener("input", () => { seeking = true; });
$("rseek").addEventListener("change", (e) => { seeking = false; replayCommand("seek=" + encodeURIComponent(e.target.value)); });

function setWorld(w) {
  world = w;
  const img = $("map");
  if (w) {
    const src = "/map.svg?server=" + current + "&hash=" + encodeURIComponent(w.hash || "");
    if (img.getAttribute("src") !== src) img.src = src;
    img.hidden = false; $("mapnote").hidden = true;
  } else {
    img.hidden = true; $("mapnote").hidden = false;
  }
}

function onState(s) {
  // Reckoning counts from when a state came: the page's clock (game time in replay mode).
  if (replay) { s.recv = s.t * 1000; anchor = { t: s.t, wall: performance.now() }; } else s.recv = performance.now();
  if (s.status) { observerStatus = s.status; setStatus(); }
  if (!world && s.status === "joined") {
    // The world arrived after the hello: ask for it again.
    fetch("/api/servers", { cache: "no-store" }).then((r) => r.json()).then((j) => {
      const sv = (j.servers || [])[current];
      if (sv && sv.world && !world) connect();
    }).catch(() => {});
  }
  // A full state replaces everything; the others carry only what changed.
  if (s.full) { shots = new Map(); players = new Map(); netById = new Map(); flags = new Map(); }
  for (const sh of s.shots.new) {
    const old = shots.get(sh.key);
    const entry = { shot: sh, recv: s.recv };
    if (sh.gm) {
      // A missile's new pose from the observer: fly it on from there, keeping the trail drawn so far.
      const g = sh.gm;
      entry.sim = { x: g[0], y: g[1], z: g[2], az: g[3], el: g[4], t: g[8], trail: old && old.sim ? old.sim.trail : [] };
    }
    shots.set(sh.key, entry);
  }
  for (const k of s.shots.gone) shots.delete(k);
  for (const p of s.players) {
    // A tank's new pose: the page's reckoning so far was off by some error; take it back over a short while
    // instead of jumping (not after a spawn, a teleport or a long jump).
    const old = players.get(p.id);
    const entry = { p, recv: s.recv, err: null };
    if (old && old.p.alive && p.alive) {
      const [ox, oy] = tankAt(old, s.recv);
      const ex = ox - p.pos[0], ey = oy - p.pos[1];
      if (Math.hypot(ex, ey) < SMOOTH_MAX) entry.err = [ex, ey];
    }
    players.set(p.id, entry);
  }
  for (const id of s.gone || []) { players.delete(id); netById.delete(id); }
  for (const f of s.flags || []) flags.set(f.index, f);
  for (const i of s.flags_gone || []) flags.delete(i);
  if (s.net) { netById = new Map(Object.entries(s.net).map(([k, v]) => [Number(k), v])); }
  if (s.teams) teams = s.teams;
  if (s.link) {
    const l = s.link;
    const ms = (v) => (typeof v === "number" ? v.toFixed(1) + " ms" : "–");
    $("link").textContent = `our link: lag ${ms(l.lag_ms)}, /lagstats round trip ${ms(l.command_rtt_ms)}, UDP ${l.udp ? "up" : "down"}`;
  }
  state = s;
  if (s.full || s.players.length || s.gone || s.net || s.teams) renderScoreboard();
}

function fmt(x, digits) {
  return (typeof x === "number" && isFinite(x)) ? x.toFixed(digits) : "–";
}

function renderScoreboard() {
  const box = $("teams");
  box.replaceChildren();
  for (const t of teams) {
    const span = el("span");
    const sw = el("span", null, "swatch"); sw.style.background = color(t.team);
    span.append(sw, el("span", `${t.team} ${t.score} (${t.size})`));
    box.appendChild(span);
  }
  const rows = [...players.values()].map((e) => e.p).filter((p) => p.team !== "observer")
    .sort((a, b) => (b.score.wins - b.score.losses) - (a.score.wins - a.score.losses) || a.id - b.id);
  const body = $("scoreboard").tBodies[0];
  const trs = rows.map((p) => {
    const tr = el("tr");
    tr.dataset.id = String(p.id);
    if (!p.alive) tr.classList.add("dead");
    const n = netById.get(p.id) || null;
    if (n && n.flagged) { tr.classList.add("warn"); tr.title = "flagged: " + String(n.flagged); }
    const team = el("td", null, "team");
    const sw = el("span", null, "swatch"); sw.style.background = color(p.team);
    team.append(sw, el("span", p.team));
    const dr = n && n.dr_error ? n.dr_error.p95 : null;
    const cells = [
      el("td", p.callsign, "callsign"), team, el("td", p.score.wins - p.score.losses), el("td", p.score.wins),
      el("td", p.score.losses), el("td", p.score.tks), el("td", p.flag || ""), el("td", fmt(n && n.updates_per_s, 1)),
      el("td", fmt(n && n.jitter_ms, 0)), el("td", fmt(dr, 2)), el("td", fmt(n && n.lag_ms, 0)),
    ];
    if (n && n.flagged) cells[9].classList.add("bad");
    tr.append(...cells);
    return tr;
  });
  body.replaceChildren(...trs);
}

function onFeed(item) {
  const list = item.kind === "chat" ? $("chat") : $("feed");
  const li = el("li", null, item.kind);
  li.append(el("span", clock(item.t), "t"), el("span", item.text));
  list.prepend(li);
  while (list.children.length > 60) list.lastChild.remove();
}

function clock(t) {
  t = Math.max(0, Math.floor(t || 0));
  return `${Math.floor(t / 60)}:${String(t % 60).padStart(2, "0")}`;
}

// World to canvas: the SVG map's view box is the world plus a 5 % (+2) margin, y pointing down.
function transform() {
  const half = Math.max(world.size * 0.5, 1);
  const h = half + half * 0.05 + 2;
  const w = canvas.width;
  const k = w / (2 * h);
  return { k, x: (x) => (x + h) * k, y: (y) => (h - y) * k };
}

// How long a correction of a tank's reckoned position is spread over (ms), and the largest one spread (world units).
const SMOOTH_MS = 150, SMOOTH_MAX = 15;
// Guided missiles are flown in steps of at most this (s); their targets' muzzle height.
const GM_STEP = 0.02, MUZZLE_HEIGHT = 1.57;

// Where a tank is drawn at `now`: its reckoned position, plus what is left of the last correction.
function tankAt(entry, now) {
  const p = entry.p;
  const [x, y, az] = reckon(p, Math.min(5, Math.max(0, (now - entry.recv) / 1000)));
  if (!entry.err) return [x, y, az];
  const k = 1 - (now - entry.recv) / SMOOTH_MS;
  if (k <= 0) { entry.err = null; return [x, y, az]; }
  return [x + entry.err[0] * k, y + entry.err[1] * k, az];
}

function turnTo(cur, want, max) {
  let d = want - cur;
  d = Math.atan2(Math.sin(d), Math.cos(d));
  return Math.abs(d) <= max ? want : cur + Math.sign(d) * max;
}

// Flies a guided missile on to shot age `age`, turning at most its turn rate towards its target's reckoned
// position (as the observer, and the game, fly it); keeps the last quarter second of its path as a trail.
function flyMissile(entry, age, now) {
  const sim = entry.sim, g = entry.shot.gm;
  const target = g[5] !== 255 ? players.get(g[5]) : null;
  let aim = null;
  if (target && target.p.alive) {
    const [x, y] = tankAt(target, now);
    aim = [x, y, target.p.pos[2] + MUZZLE_HEIGHT];
  }
  while (sim.t < age) {
    const dt = Math.min(GM_STEP, age - sim.t);
    if (aim) {
      const dx = aim[0] - sim.x, dy = aim[1] - sim.y, dz = aim[2] - sim.z;
      sim.az = turnTo(sim.az, Math.atan2(dy, dx), dt * g[6]);
      sim.el = turnTo(sim.el, Math.atan2(dz, Math.hypot(dx, dy)), dt * g[6]);
    }
    const ce = Math.cos(sim.el);
    sim.x += Math.cos(sim.az) * ce * g[7] * dt;
    sim.y += Math.sin(sim.az) * ce * g[7] * dt;
    sim.z = Math.max(0, sim.z + Math.sin(sim.el) * g[7] * dt);
    sim.t += dt;
    sim.trail.push([sim.t, sim.x, sim.y]);
  }
  while (sim.trail.length && sim.trail[0][0] < age - 0.25) sim.trail.shift();
}

function shotPos(entry, now) {
  const sh = entry.shot;
  const age = sh.age + (now - entry.recv) / 1000;
  for (const g of sh.segs) {
    if (age >= g[0] && age < g[1]) {
      const dt = age - g[0];
      return { age, x: g[2] + g[4] * dt, y: g[3] + g[5] * dt };
    }
  }
  return null;
}

function draw(wallNow) {
  const now = pageNow(wallNow);
  const box = $("mapbox");
  const px = Math.round(box.clientWidth * (window.devicePixelRatio || 1));
  if (canvas.width !== px) { canvas.width = px; canvas.height = px; }
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  if (!world || !state) { requestAnimationFrame(draw); return; }
  const T = transform();
  // Sizes of marks and labels in CSS pixels, whatever the map's size.
  const scale = window.devicePixelRatio || 1;
  const dt = Math.min(60, Math.max(0, (now - state.recv) / 1000));

  // Teleporter links.
  ctx.save();
  ctx.strokeStyle = "rgba(0, 200, 200, 0.55)"; ctx.setLineDash([6 * scale, 5 * scale]); ctx.lineWidth = 1.5 * scale;
  for (const l of world.links || []) {
    ctx.beginPath(); ctx.moveTo(T.x(l[0]), T.y(l[1])); ctx.lineTo(T.x(l[2]), T.y(l[3])); ctx.stroke();
  }
  ctx.restore();

  // Flags on the ground and in flight (carried ones are drawn with their tank).
  ctx.font = `${Math.round(10 * scale)}px sans-serif`;
  ctx.lineJoin = "round";
  for (const f of flags.values()) {
    if (f.status === "on_tank" || f.owner != null) continue;
    const x = T.x(f.pos[0]), y = T.y(f.pos[1]);
    const r = (f.team_flag ? 6 : 4) * scale;
    ctx.beginPath(); ctx.arc(x, y, r, 0, 2 * Math.PI);
    ctx.fillStyle = f.team_flag ? color(teamOfFlag(f.abbv)) : "#ffeb3b";
    ctx.fill(); ctx.lineWidth = 1; ctx.strokeStyle = "#000"; ctx.stroke();
    if (f.status !== "on_ground") { ctx.setLineDash([2, 2]); ctx.beginPath(); ctx.arc(x, y, r + 3 * scale, 0, 2 * Math.PI); ctx.stroke(); ctx.setLineDash([]); }
    ctx.fillStyle = "#222"; ctx.fillText(f.abbv, x + r + 2, y - r);
  }

  // Shots along their paths (ricochets and teleports included), with a short trail; guided missiles flown on.
  let missiles = 0;
  for (const [key, entry] of shots) {
    const sh = entry.shot;
    const age = sh.age + (now - entry.recv) / 1000;
    if (sh.sw) {
      if (age > sh.life) { shots.delete(key); continue; }
      const r = sh.sw[2] + (sh.sw[3] - sh.sw[2]) * Math.min(1, age / Math.max(sh.life, 0.01));
      ctx.beginPath(); ctx.arc(T.x(sh.sw[0]), T.y(sh.sw[1]), r * T.k, 0, 2 * Math.PI);
      ctx.strokeStyle = color(sh.team); ctx.lineWidth = 2 * scale; ctx.stroke();
      continue;
    }
    if (entry.sim) {
      if (age >= sh.life) { shots.delete(key); continue; }
      if (sh.expired) continue;
      flyMissile(entry, age, now);
      const tr = entry.sim.trail;
      ctx.strokeStyle = color(sh.team); ctx.lineWidth = 2 * scale; ctx.globalAlpha = 0.6;
      ctx.beginPath();
      tr.forEach((q, i) => (i ? ctx.lineTo(T.x(q[1]), T.y(q[2])) : ctx.moveTo(T.x(q[1]), T.y(q[2]))));
      ctx.stroke();
      ctx.globalAlpha = 1;
      ctx.beginPath(); ctx.arc(T.x(entry.sim.x), T.y(entry.sim.y), 3.5 * scale, 0, 2 * Math.PI);
      ctx.fillStyle = color(sh.team); ctx.fill(); ctx.strokeStyle = "#000"; ctx.lineWidth = 1.2; ctx.stroke();
      missiles++;
      continue;
    }
    const last = sh.segs.length ? sh.segs[sh.segs.length - 1][1] : 0;
    if (age >= last) { shots.delete(key); continue; }
    const p = shotPos(entry, now);
    if (!p) continue;
    ctx.strokeStyle = color(sh.team); ctx.lineWidth = 2 * scale; ctx.globalAlpha = 0.6;
    ctx.beginPath();
    let started = false;
    for (const g of sh.segs) {
      const a = Math.max(g[0], age - 0.25), b = Math.min(g[1], age);
      if (b <= a) continue;
      const ax = g[2] + g[4] * (a - g[0]), ay = g[3] + g[5] * (a - g[0]);
      const bx = g[2] + g[4] * (b - g[0]), by = g[3] + g[5] * (b - g[0]);
      ctx.moveTo(T.x(ax), T.y(ay)); ctx.lineTo(T.x(bx), T.y(by)); started = true;
    }
    if (started) ctx.stroke();
    ctx.globalAlpha = 1;
    ctx.beginPath(); ctx.arc(T.x(p.x), T.y(p.y), 2.5 * scale, 0, 2 * Math.PI);
    ctx.fillStyle = color(sh.team); ctx.fill(); ctx.strokeStyle = "#000"; ctx.lineWidth = 0.8; ctx.stroke();
  }

  // Tanks at their extrapolated poses.
  const drawn = [];
  ctx.font = `600 ${Math.round(12 * scale)}px sans-serif`;
  for (const entry of players.values()) {
    const p = entry.p;
    if (p.team === "observer" || !p.alive) continue;
    const [x, y, az] = tankAt(entry, now);
    const cx = T.x(x), cy = T.y(y);
    const len = Math.max(9 * scale, 6 * T.k), wid = Math.max(6 * scale, 4.2 * T.k);
    ctx.save();
    ctx.translate(cx, cy); ctx.rotate(-az);
    ctx.globalAlpha = p.paused || p.nr ? 0.45 : 1;
    ctx.fillStyle = color(p.team); ctx.strokeStyle = "#000"; ctx.lineWidth = 1.2;
    ctx.beginPath();
    ctx.moveTo(len, 0); ctx.lineTo(-len * 0.7, wid); ctx.lineTo(-len * 0.4, 0); ctx.lineTo(-len * 0.7, -wid);
    ctx.closePath(); ctx.fill(); ctx.stroke();
    ctx.restore();
    const n = netById.get(p.id);
    const label = p.callsign + (p.flag ? ` [${p.flag}]` : "");
    // The label on the right of the tank, or on its left near the map's right edge.
    const tw = ctx.measureText(label).width;
    const lx = cx + len + 2 + tw > canvas.width ? cx - len - 2 - tw : cx + len + 2;
    ctx.lineWidth = 3; ctx.strokeStyle = "rgba(0,0,0,0.75)"; ctx.strokeText(label, lx, cy - 4);
    ctx.fillStyle = n && n.flagged ? "#ff5252" : "#fff";
    ctx.fillText(label, lx, cy - 4);
    drawn.push(p.callsign);
  }
  const d = JSON.stringify(drawn.sort());
  if (canvas.dataset.drawn !== d) canvas.dataset.drawn = d;
  if (canvas.dataset.missiles !== String(missiles)) canvas.dataset.missiles = String(missiles);

  // Game time.
  const t = state.t + dt;
  const left = typeof state.time_left === "number" && state.time_left > 0 ? ` · ${clock(state.time_left - dt)} left` : "";
  if (replay) {
    $("clock").textContent = `replay ${clock(t)} / ${clock(replay.duration)}${left}`;
    $("rtime").textContent = `${t.toFixed(1)} / ${replay.duration.toFixed(1)} s`;
    if (!seeking) $("rseek").value = String(t);
  } else $("clock").textContent = `observed ${clock(t)}${left}`;
  requestAnimationFrame(draw);
}

// Where a tank is `dt` seconds after its state: moving on the arc its velocity and angular velocity describe
// (the dead reckoning a BZFlag client does between two updates), or straight on when it does not turn.
function reckon(p, dt) {
  const w = p.av;
  if (Math.abs(w) < 1e-4) return [p.pos[0] + p.vel[0] * dt, p.pos[1] + p.vel[1] * dt, p.azimuth];
  const s = Math.sin(w * dt), c = 1 - Math.cos(w * dt);
  return [p.pos[0] + (p.vel[0] * s - p.vel[1] * c) / w, p.pos[1] + (p.vel[1] * s + p.vel[0] * c) / w, p.azimuth + w * dt];
}

function teamOfFlag(abbv) {
  return { R: "red", G: "green", B: "blue", P: "purple" }[abbv && abbv[0]] || "none";
}

requestAnimationFrame(draw);
loadServers();
