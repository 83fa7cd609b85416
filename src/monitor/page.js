"use strict";
// Every name and text from a server goes into the page through textContent: never as markup.
let servers = [], sortKey = "players", sortDesc = true, open = new Set();
const tbody = document.querySelector("#servers tbody");
const filter = document.getElementById("filter");
const status = document.getElementById("status");
function cell(tr, text, cls) { const td = document.createElement("td"); td.textContent = text == null ? "" : String(text); if (cls) td.className = cls; tr.appendChild(td); return td; }
function spark(history) {
  const ns = "http://www.w3.org/2000/svg", w = 120, h = 20;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "spark"); svg.setAttribute("width", w); svg.setAttribute("height", h);
  const pts = (history || []).map(p => p[2] == null ? 0 : p[2]);
  if (pts.length > 1) {
    const max = Math.max(1, ...pts);
    const d = pts.map((v, i) => (i * (w - 2) / (pts.length - 1) + 1).toFixed(1) + "," + (h - 1 - v * (h - 2) / max).toFixed(1)).join(" ");
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("points", d); line.setAttribute("fill", "none"); line.setAttribute("stroke", "#36c");
    svg.appendChild(line);
  }
  return svg;
}
function key(s) { return s.protocol + "/" + s.address; }
// How long ago Unix second t was, in a few characters.
function ago(t) {
  const m = Math.max(0, Math.round((Date.now() / 1000 - t) / 60));
  return m < 120 ? m + " min" : Math.round(m / 60) + " h";
}
// Where a server comes from: "registered (bzflag-list)", an upstream's host ("master.ddnet.org (stale 12 min)"),
// or "configured" (no master lists it).
function sourceText(src) {
  if (!src) return "";
  const parts = [];
  if (src.registered) parts.push("registered (" + src.registered + ")");
  for (const u of src.upstreams || []) {
    let host = u.name;
    try { host = new URL(u.name).host || u.name; } catch (e) {}
    parts.push(host + (u.stale ? " (stale " + (u.last_ok == null ? "" : ago(u.last_ok)) + ")" : ""));
  }
  return parts.length ? parts.join(", ") : "configured";
}
// Players of max, and the bots among them where the protocol tells them apart.
function playersText(s) {
  const n = (s.players == null ? "?" : s.players) + "/" + (s.max_players == null ? "?" : s.max_players);
  return s.bots ? n + " (" + s.bots + (s.bots === 1 ? " bot)" : " bots)") : n;
}
function render() {
  const q = filter.value.toLowerCase();
  const rows = servers.filter(s => !q || [s.name, s.map, s.protocol, s.address, s.source_text].some(v => v && String(v).toLowerCase().includes(q)));
  rows.sort((a, b) => {
    let x = a[sortKey], y = b[sortKey];
    if (x == null) x = ""; if (y == null) y = "";
    const c = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
    return sortDesc ? -c : c;
  });
  tbody.replaceChildren();
  for (const s of rows) {
    const tr = document.createElement("tr");
    tr.className = "server" + (s.up ? "" : " down");
    tr.dataset.key = key(s);
    cell(tr, s.protocol); cell(tr, s.name); cell(tr, s.address); cell(tr, s.map);
    cell(tr, playersText(s), "num");
    cell(tr, s.ping_ms == null ? "" : Math.round(s.ping_ms) + " ms", "num");
    cell(tr, s.up ? "up" : "down", s.up ? "up" : "downtxt");
    cell(tr, s.source_text, "source");
    cell(tr, "").appendChild(spark(s.history));
    tr.addEventListener("click", () => { open.has(key(s)) ? open.delete(key(s)) : open.add(key(s)); render(); });
    tbody.appendChild(tr);
    if (open.has(key(s))) showPlayers(s, tr);
  }
  status.textContent = rows.length + " of " + servers.length + " servers";
}
function showPlayers(s, after) {
  const tr = document.createElement("tr"); tr.className = "players";
  const td = cell(tr, "loading players…"); td.colSpan = 9;
  after.after(tr);
  fetch("/api/servers/" + encodeURIComponent(s.protocol) + "/" + encodeURIComponent(s.address))
    .then(r => r.json()).then(d => {
      const list = d.player_list || [];
      td.textContent = list.length ? "" : "no players";
      const ul = document.createElement("ul");
      for (const p of list) {
        const li = document.createElement("li");
        li.textContent = p.name + (p.score == null ? "" : " (" + p.score + ")");
        li.className = "player";
        ul.appendChild(li);
      }
      if (list.length) td.appendChild(ul);
    }).catch(() => { td.textContent = "cannot load the players"; });
}
for (const th of document.querySelectorAll("th[data-key]")) {
  th.addEventListener("click", () => {
    const k = th.dataset.key;
    if (sortKey === k) sortDesc = !sortDesc; else { sortKey = k; sortDesc = k === "players" || k === "up"; }
    for (const o of document.querySelectorAll("th")) o.classList.remove("sorted", "desc");
    th.classList.add("sorted"); if (sortDesc) th.classList.add("desc");
    render();
  });
}
filter.addEventListener("input", render);
function load() {
  fetch("/api/servers?history=1").then(r => r.json()).then(d => {
    servers = d.servers || [];
    for (const s of servers) s.source_text = sourceText(s.source);
    render();
  })
    .catch(() => { status.textContent = "cannot reach the monitor"; });
}
load();
setInterval(load, 10000);
// The change feed refreshes the list when something changes (opened a little later, so the first paint does not
// wait for a stream that never ends).
setTimeout(() => {
  try {
    const es = new EventSource("/api/events");
    for (const t of ["server_up", "server_down", "player_joined", "player_left", "map_changed", "name_changed"]) es.addEventListener(t, () => load());
  } catch (e) {}
}, 3000);
