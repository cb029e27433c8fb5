// The console: loads each section on its own (one that fails shows its
// error, the others still render), refreshes itself, and acts on the rows
// selected after a dry-run preview and a confirmation.
"use strict";

const $ = (id) => document.getElementById(id);
const OLD_PENDING_SECS = 300;
const state = {
  readOnly: true, refreshSecs: 5, loadedAt: null, history: [],
  failed: new Map(), deadLetters: new Map(),
  selectedFailed: new Set(), selectedDead: new Set(),
  openFailed: null, openDead: null, health: {},
};

function age(secs) {
  if (secs === null || secs === undefined) return "-";
  const units = [[86400, "d"], [3600, "h"], [60, "m"], [1, "s"]];
  for (const [size, unit] of units) if (secs >= size) return Math.floor(secs / size) + unit;
  return "0s";
}

function cell(tr, text, className) {
  const td = document.createElement("td");
  if (text instanceof Node) td.appendChild(text); else td.textContent = text === null || text === undefined ? "" : String(text);
  if (className) td.className = className;
  tr.appendChild(td);
  return td;
}

function body(table) { return $(table).querySelector("tbody"); }

function sectionError(section, error) {
  $(section).querySelector(".section-error").textContent = error ? error.message : "";
}

function say(text, error) { $("message").textContent = text; $("message").className = error ? "error" : ""; }

async function get(path) {
  const response = await fetch(path, { cache: "no-store" });
  const answer = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(answer.error || response.statusText);
  return answer;
}

async function write(path, payload) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", "Authorization": "Bearer " + $("token").value },
    body: JSON.stringify(payload),
  });
  const answer = await response.json().catch(() => ({ error: response.statusText }));
  if (!response.ok) throw new Error(answer.error + " (" + response.status + ")");
  return answer;
}

function safeId(text) { return String(text).replace(/[^A-Za-z0-9_-]/g, "_"); }

function checkbox(id, label, checked, onChange) {
  const box = document.createElement("input");
  box.type = "checkbox";
  box.id = id;
  box.checked = checked;
  box.setAttribute("aria-label", label);
  box.addEventListener("change", () => onChange(box.checked));
  return box;
}

function opener(id, text, label, onOpen) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "link";
  b.id = id;
  b.textContent = text;
  b.setAttribute("aria-label", label);
  b.addEventListener("click", onOpen);
  return b;
}

// --- context, health ---

async function loadContext() {
  const context = await get("/api/context");
  state.readOnly = context.read_only;
  state.refreshSecs = context.refresh_secs;
  const list = $("context");
  list.replaceChildren();
  for (const item of context.context) {
    const div = document.createElement("div");
    const dt = document.createElement("dt"); dt.textContent = item.label;
    const dd = document.createElement("dd"); dd.textContent = item.value;
    div.append(dt, dd);
    list.appendChild(div);
  }
  $("metrics-link").hidden = !context.metrics;
  $("read-only").hidden = !context.read_only;
  document.body.classList.toggle("read-only", context.read_only);
  if (context.read_only) for (const element of document.querySelectorAll(".write")) element.remove();
}

// A backlog that rose over the last minute without ever falling.
function growing(route) {
  const since = Date.now() - 60000;
  const points = state.history.filter((s) => s.at_ms >= since && s.routes[route]).map((s) => s.routes[route].backlog);
  if (points.length < 3) return false;
  return points[points.length - 1] > points[0] && points.every((v, i) => i === 0 || v >= points[i - 1]);
}

// `sampled`: the charts' samples cover the route (the page's store's own).
function routeHealth(r, sampled) {
  if (r.failed > 0) return ["bad", r.failed + " failed"];
  if (sampled && growing(r.route)) return ["warn", "growing backlog"];
  if ((r.oldest_pending_secs || 0) > OLD_PENDING_SECS) return ["warn", "old pending"];
  return ["ok", "ok"];
}

function showHealth() {
  const problems = Object.values(state.health).filter((h) => h);
  const badge = $("health");
  const worst = problems.some((p) => p[0] === "bad") ? "bad" : problems.length ? "warn" : "ok";
  badge.className = "badge " + worst;
  badge.textContent = worst === "ok" ? "healthy" : problems.map((p) => p[1]).join(", ");
}

// --- routes and failed rows ---

async function loadStatus() {
  let status;
  try {
    status = await get("/api/status");
    sectionError("routes-section", null);
    sectionError("consumers-section", null);
  } catch (e) {
    sectionError("routes-section", e);
    sectionError("consumers-section", e);
    state.health.status = ["bad", "status unreadable"];
    throw e;
  }
  body("routes").replaceChildren();
  let failedRows = 0, warnings = [];
  for (const r of status.routes) {
    const [tr, level, text] = routeRow(r, [], true);
    body("routes").appendChild(tr);
    failedRows += r.failed;
    if (level === "warn") warnings.push(r.route + ": " + text);
  }
  if (status.routes.length === 0) {
    const tr = document.createElement("tr");
    cell(tr, "no route has rows yet").colSpan = 7;
    body("routes").appendChild(tr);
  }
  state.health.status = failedRows > 0 ? ["bad", failedRows + " failed rows"] : warnings.length ? ["warn", warnings.join(", ")] : null;
  body("consumers").replaceChildren();
  for (const c of status.consumers) {
    const tr = document.createElement("tr");
    cell(tr, c.consumer); cell(tr, c.marks, "n"); cell(tr, age(c.oldest_mark_secs), "n");
    body("consumers").appendChild(tr);
  }
  const stored = await loadStored();
  await loadFailed(status.routes.filter((r) => r.failed > 0).map((r) => ({ route: r.route })).concat(stored));
}

// A route's row: the `lead` cells, then the route, its health and backlog.
function routeRow(r, lead, sampled) {
  const [level, text] = routeHealth(r, sampled);
  const tr = document.createElement("tr");
  tr.className = level === "ok" ? "" : level;
  tr.dataset.route = r.route;
  for (const value of lead) cell(tr, value);
  cell(tr, r.route);
  cell(tr, text, "health " + level);
  for (const n of [r.pending, r.in_flight, r.failed, r.retained]) cell(tr, n, "n");
  cell(tr, age(r.oldest_pending_secs), "n");
  return [tr, level, text];
}

// The stored inboxes' consumers, in a section shown only when the page has
// stored inboxes; returns the ones with failed messages, for the failed rows.
async function loadStored() {
  let inboxes = [];
  try {
    inboxes = await get("/api/stored-inboxes");
    sectionError("stored-section", null);
  } catch (e) { sectionError("stored-section", e); }
  $("stored-section").hidden = inboxes.length === 0 && !$("stored-section").querySelector(".section-error").textContent;
  body("stored-inboxes").replaceChildren();
  const withFailed = [], errors = [];
  let failed = 0;
  for (const inbox of inboxes) {
    if (inbox.error) errors.push(inbox.name + ": " + inbox.error);
    for (const r of inbox.routes) {
      body("stored-inboxes").appendChild(routeRow(r, [inbox.name], false)[0]);
      failed += r.failed;
      if (r.failed > 0) withFailed.push({ route: r.route, stored: inbox.name });
    }
  }
  if (errors.length) sectionError("stored-section", new Error(errors.join("; ")));
  state.health.stored = failed > 0 ? ["bad", failed + " failed stored messages"] : null;
  return withFailed;
}

// Where a failed row lives, as the failed-row API names it: its route and,
// for a stored inbox's message, the inbox.
function failedKey(stored, id) { return stored ? "stored-" + safeId(stored) + "-" + id : id; }
function failedWhere(r) { return (r.stored ? r.stored + ": " : "") + r.route; }

async function loadFailed(sources) {
  const rows = new Map();
  const errors = [];
  for (const { route, stored } of sources) {
    const path = "/api/failed?route=" + encodeURIComponent(route) + (stored ? "&stored=" + encodeURIComponent(stored) : "");
    try {
      for (const f of await get(path)) rows.set(failedKey(stored, f.event_id), { ...f, route, stored, key: failedKey(stored, f.event_id) });
    } catch (e) { errors.push(failedWhere({ route, stored }) + ": " + e.message); }
  }
  sectionError("failed-section", errors.length ? new Error(errors.join("; ")) : null);
  state.failed = rows;
  for (const id of [...state.selectedFailed]) if (!rows.has(id)) state.selectedFailed.delete(id);
  body("failed").replaceChildren();
  for (const f of rows.values()) {
    const tr = document.createElement("tr");
    tr.dataset.id = f.key;
    if (state.selectedFailed.has(f.key)) tr.className = "selected";
    if (!state.readOnly) {
      cell(tr, checkbox("sel-failed-" + f.key, "Select failed row " + f.event_id, state.selectedFailed.has(f.key), (on) => {
        if (on) state.selectedFailed.add(f.key); else state.selectedFailed.delete(f.key);
        tr.className = on ? "selected" : "";
        countSelected();
      }), "write");
    }
    cell(tr, f.stored ? f.route + " (stored inbox " + f.stored + ")" : f.route);
    cell(tr, opener("open-failed-" + f.key, f.event_id, "Show failed row " + f.event_id, () => openFailed(f.key)));
    cell(tr, f.event_type);
    cell(tr, f.attempts, "n");
    cell(tr, age(f.failed_secs) + " ago");
    cell(tr, f.last_error || "", "reason");
    body("failed").appendChild(tr);
  }
  if (rows.size === 0) {
    const tr = document.createElement("tr");
    cell(tr, "no failed rows").colSpan = 7;
    body("failed").appendChild(tr);
  }
  if (state.openFailed && !rows.has(state.openFailed)) closeDetail("failed-detail");
  countSelected();
}

function preview(payload) {
  try { return JSON.stringify(JSON.parse(payload), null, 2).slice(0, 8192); } catch (_) { return String(payload).slice(0, 8192); }
}

function detail(panel, title, fields, payload, headers) {
  const box = $(panel);
  box.replaceChildren();
  const h = document.createElement("h3"); h.textContent = title;
  const close = document.createElement("button");
  close.type = "button"; close.id = panel + "-close"; close.textContent = "Close";
  close.addEventListener("click", () => closeDetail(panel));
  const dl = document.createElement("dl");
  for (const [label, value] of fields) {
    const dt = document.createElement("dt"); dt.textContent = label;
    const dd = document.createElement("dd"); dd.textContent = value === null || value === undefined ? "-" : String(value);
    dl.append(dt, dd);
  }
  if (headers) {
    const dt = document.createElement("dt"); dt.textContent = "headers";
    const dd = document.createElement("dd");
    const pre = document.createElement("pre");
    pre.className = "headers";
    pre.textContent = Object.entries(headers).map(([k, v]) => k + ": " + v).join("\n") || "-";
    dd.appendChild(pre);
    dl.append(dt, dd);
  }
  const dt = document.createElement("dt"); dt.textContent = "payload";
  const dd = document.createElement("dd");
  const pre = document.createElement("pre");
  pre.className = "payload";
  pre.textContent = preview(payload);
  dd.appendChild(pre);
  dl.append(dt, dd);
  box.append(h, dl, close);
  box.hidden = false;
}

function closeDetail(panel) {
  $(panel).hidden = true;
  if (panel === "failed-detail") state.openFailed = null; else state.openDead = null;
}

function openFailed(key) {
  const f = state.failed.get(key);
  if (!f) return;
  state.openFailed = key;
  const where = f.stored ? [["stored inbox", f.stored]] : [];
  detail("failed-detail", "Failed row " + f.event_id, [
    ...where, ["route", f.route], ["event type", f.event_type], ["destination", f.destination],
    ["ordering key", f.ordering_key], ["attempts", f.attempts], ["failed", age(f.failed_secs) + " ago"],
    ["reason", f.last_error], ["content type", f.content_type],
  ], f.payload, null);
  $("failed-detail").focus();
}

// --- dead letters ---

function deadKey(d) { return d.broker + "/" + d.queue + "/" + d.id; }

async function loadDeadLetters() {
  let queues;
  try {
    queues = await get("/api/dead-letters");
    sectionError("dead-letters-section", null);
  } catch (e) {
    sectionError("dead-letters-section", e);
    state.health.deadLetters = ["bad", "dead letters unreadable"];
    throw e;
  }
  body("dead-letter-queues").replaceChildren();
  const letters = new Map();
  let parked = 0, broken = 0;
  for (const q of queues) {
    let problem = q.error;
    if (!problem && q.messages > 0) {
      try {
        const query = "broker=" + encodeURIComponent(q.broker) + "&queue=" + encodeURIComponent(q.queue);
        for (const d of await get("/api/dead-letters/list?" + query)) {
          const letter = { broker: q.broker, queue: q.queue, ...d };
          letters.set(deadKey(letter), letter);
        }
      } catch (e) { problem = e.message; }
    }
    const tr = document.createElement("tr");
    tr.dataset.queue = q.queue;
    tr.className = problem ? "bad" : q.messages > 0 ? "warn" : "";
    cell(tr, q.broker);
    cell(tr, q.queue);
    cell(tr, q.dead_letter_queue);
    cell(tr, q.messages === null ? "-" : q.messages, "n");
    cell(tr, age(q.oldest_age_secs), "n");
    cell(tr, problem || "", "reason error");
    body("dead-letter-queues").appendChild(tr);
    parked += q.messages || 0;
    if (problem) broken += 1;
  }
  if (queues.length === 0) {
    const tr = document.createElement("tr");
    cell(tr, "this page was started without dead-letter queues").colSpan = 6;
    body("dead-letter-queues").appendChild(tr);
  }
  $("dead-letters-section").classList.toggle("none", queues.length === 0);
  state.health.deadLetters = broken ? ["bad", broken + " queue(s) unreadable"] : parked ? ["warn", parked + " dead letters"] : null;
  state.deadLetters = letters;
  for (const key of [...state.selectedDead]) if (!letters.has(key)) state.selectedDead.delete(key);
  drawDeadLetters();
}

function drawDeadLetters() {
  body("dead-letters").replaceChildren();
  for (const [key, d] of state.deadLetters) {
    const tr = document.createElement("tr");
    tr.dataset.id = d.id;
    if (state.selectedDead.has(key)) tr.className = "selected";
    if (!state.readOnly) {
      cell(tr, checkbox("sel-dead-" + safeId(key), "Select dead letter " + d.id, state.selectedDead.has(key), (on) => {
        if (on) state.selectedDead.add(key); else state.selectedDead.delete(key);
        tr.className = on ? "selected" : "";
        countSelected();
      }), "write");
    }
    cell(tr, d.queue);
    cell(tr, opener("open-dead-" + safeId(key), d.id, "Show dead letter " + d.id, () => openDead(key)));
    cell(tr, d.event_type || "-");
    cell(tr, d.reason || "", "reason");
    cell(tr, d.deliveries === null || d.deliveries === undefined ? "-" : d.deliveries, "n");
    cell(tr, age(d.parked_age_secs !== null && d.parked_age_secs !== undefined ? d.parked_age_secs : d.age_secs) + " ago");
    body("dead-letters").appendChild(tr);
  }
  if (state.deadLetters.size === 0) {
    const tr = document.createElement("tr");
    cell(tr, "no dead letters").colSpan = 7;
    body("dead-letters").appendChild(tr);
  }
  if (state.openDead && !state.deadLetters.has(state.openDead)) closeDetail("dead-letter-detail");
  countSelected();
}

function openDead(key) {
  const d = state.deadLetters.get(key);
  if (!d) return;
  state.openDead = key;
  detail("dead-letter-detail", "Dead letter " + d.id, [
    ["queue", d.queue + " (" + d.broker + ")"], ["event type", d.event_type], ["reason", d.reason],
    ["deliveries", d.deliveries], ["first failure", d.first_failure_age_secs === null || d.first_failure_age_secs === undefined ? null : age(d.first_failure_age_secs) + " ago"],
    ["parked", d.parked_age_secs === null || d.parked_age_secs === undefined ? null : age(d.parked_age_secs) + " ago"],
    ["sent", d.age_secs === null || d.age_secs === undefined ? null : age(d.age_secs) + " ago"], ["size", d.size + " bytes"],
  ], d.payload, d.headers);
  $("dead-letter-detail").focus();
}

// --- charts ---

async function loadCharts() {
  try {
    const history = await get("/api/history");
    state.history = history.samples;
    sectionError("charts-section", null);
  } catch (e) {
    sectionError("charts-section", e);
    throw e;
  }
  $("charts").replaceChildren(...Charts.fromHistory(state.history).map(Charts.draw));
}

// --- selection and actions ---

function countSelected() {
  for (const [label, set] of [["failed-selected", state.selectedFailed], ["dead-letters-selected", state.selectedDead]]) {
    if ($(label)) $(label).textContent = set.size ? set.size + " selected" : "none selected";
  }
  for (const [id, set, all] of [["failed", state.selectedFailed, state.failed], ["dead-letters", state.selectedDead, state.deadLetters]]) {
    const box = $(id + "-all");
    if (box) box.checked = all.size > 0 && set.size === all.size;
  }
  for (const [id, set] of [["failed-requeue", state.selectedFailed], ["failed-delete", state.selectedFailed],
    ["dead-letters-replay", state.selectedDead], ["dead-letters-delete", state.selectedDead]]) {
    if ($(id)) $(id).disabled = set.size === 0;
  }
}

// The selection grouped by where the API takes it.
function groups(kind) {
  const out = new Map();
  if (kind === "failed") {
    for (const key of state.selectedFailed) {
      const { route, stored, event_id } = state.failed.get(key);
      const where = failedWhere({ route, stored });
      if (!out.has(where)) out.set(where, stored ? { route, stored, ids: [] } : { route, ids: [] });
      out.get(where).ids.push(event_id);
    }
  } else {
    for (const key of state.selectedDead) {
      const d = state.deadLetters.get(key);
      const where = d.broker + "/" + d.queue;
      if (!out.has(where)) out.set(where, { broker: d.broker, queue: d.queue, ids: [] });
      out.get(where).ids.push(d.id);
    }
  }
  return [...out.values()];
}

function ask(title, text, items) {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-list").replaceChildren(...items.map((line) => { const li = document.createElement("li"); li.textContent = line; return li; }));
  dialog.returnValue = "";
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
    $("confirm-cancel").focus();
  });
}

const failedLines = (r) => r.rows.map((f) => failedWhere(r) + "  " + f.event_id + "  " + (f.last_error || ""));
const ACTIONS = {
  "failed-requeue": { kind: "failed", path: "/api/failed/requeue", verb: "Requeue", noun: "failed rows", past: "requeued",
    lines: failedLines },
  "failed-delete": { kind: "failed", path: "/api/failed/delete", verb: "Delete", noun: "failed rows", past: "deleted",
    lines: failedLines },
  "dead-letters-replay": { kind: "dead", path: "/api/dead-letters/replay", verb: "Replay", noun: "dead letters", past: "replayed",
    lines: (r) => r.ids.map((id) => r.queue + "  " + id) },
  "dead-letters-delete": { kind: "dead", path: "/api/dead-letters/delete", verb: "Delete", noun: "dead letters", past: "deleted",
    lines: (r) => r.ids.map((id) => r.queue + "  " + id) },
};

async function act(id) {
  const action = ACTIONS[id];
  const selection = groups(action.kind);
  if (selection.length === 0) { say("select " + action.noun + " first", true); return; }
  try {
    const previews = [];
    for (const group of selection) previews.push(await write(action.path, { ...group, dry_run: true }));
    const count = previews.reduce((n, r) => n + r.matched, 0);
    const lines = previews.flatMap(action.lines);
    const sure = await ask(action.verb + " " + count + " " + action.noun + "?",
      "A dry run found these; nothing has changed yet." + (action.verb === "Delete" ? " Deleting cannot be undone." : ""), lines);
    if (!sure) { say(action.verb.toLowerCase() + " cancelled: nothing changed"); return; }
    let done = 0;
    for (const group of selection) done += (await write(action.path, { ...group, dry_run: false })).done;
    if (action.kind === "failed") state.selectedFailed.clear(); else state.selectedDead.clear();
    say(action.past + " " + done + " of " + count + " " + action.noun);
  } catch (e) {
    say(e.message, true);
  }
  await refresh();
}

function selectAll(kind, on) {
  const set = kind === "failed" ? state.selectedFailed : state.selectedDead;
  const all = kind === "failed" ? state.failed : state.deadLetters;
  set.clear();
  if (on) for (const key of all.keys()) set.add(key);
  if (kind === "failed") {
    const sources = new Map([...state.failed.values()].map((f) => [failedWhere(f), { route: f.route, stored: f.stored }]));
    loadFailed([...sources.values()]);
  } else drawDeadLetters();
}

// --- refresh ---

async function refresh() {
  if (state.refreshing) return;
  state.refreshing = true;
  try { await redraw(); } finally { state.refreshing = false; }
}

async function redraw() {
  const focused = document.activeElement && document.activeElement.id;
  const results = await Promise.allSettled([loadStatus(), loadDeadLetters()]);
  await loadCharts().catch(() => {});
  if (state.loadedAt === null || results.some((r) => r.status === "fulfilled")) state.loadedAt = Date.now();
  const failures = results.filter((r) => r.status === "rejected");
  $("refresh-error").textContent = failures.length === results.length
    ? "refresh failed at " + new Date().toLocaleTimeString() + ": " + failures[0].reason.message : "";
  showHealth();
  if (focused && $(focused) && document.activeElement !== $(focused)) $(focused).focus();
  document.body.dataset.loaded = String(state.loadedAt);
  tick();
}

function tick() {
  if (state.loadedAt === null) return;
  const secs = Math.round((Date.now() - state.loadedAt) / 1000);
  $("updated").textContent = "updated " + secs + " s ago, every " + state.refreshSecs + " s";
}

async function start() {
  try { await loadContext(); } catch (e) { $("refresh-error").textContent = "cannot read the page's settings: " + e.message; }
  for (const id of Object.keys(ACTIONS)) if ($(id)) $(id).addEventListener("click", () => act(id));
  for (const [id, kind] of [["failed-all", "failed"], ["dead-letters-all", "dead"]]) {
    if ($(id)) $(id).addEventListener("change", (e) => selectAll(kind, e.target.checked));
  }
  await refresh();
  setInterval(() => { if (!$("confirm").open) refresh(); }, state.refreshSecs * 1000);
  setInterval(tick, 1000);
}

start();
