// Line charts drawn as inline SVG from the samples the server keeps: no
// library, no asset from elsewhere.
"use strict";

const Charts = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const COLORS = ["#1a55b0", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0e7490", "#a16207", "#4b5563"];
  const W = 640, H = 180, LEFT = 48, RIGHT = 8, TOP = 10, BOTTOM = 22;

  function svg(name, attributes) {
    const element = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attributes || {})) element.setAttribute(k, v);
    return element;
  }

  function short(value) {
    if (Number.isInteger(value) && value < 1e4) return String(value);
    if (value >= 1e6) return (value / 1e6).toFixed(1) + "M";
    if (value >= 1e3) return (value / 1e3).toFixed(1) + "k";
    if (value >= 10 || value === 0) return String(Math.round(value));
    return value.toFixed(2);
  }

  function ago(ms) {
    const s = Math.round(ms / 1000);
    return s >= 120 ? "-" + Math.round(s / 60) + " min" : "-" + s + " s";
  }

  // The series of one sample field: [{name, points: [[ms, value]]}].
  function levels(samples, pick) {
    const series = new Map();
    for (const s of samples) {
      for (const [name, value] of pick(s)) {
        if (!series.has(name)) series.set(name, []);
        series.get(name).push([s.at_ms, value]);
      }
    }
    return [...series].map(([name, points]) => ({ name, points }));
  }

  // Per-second increases between consecutive samples (never negative: a
  // purge or a replay is not a negative rate).
  function rates(samples, pick) {
    const series = new Map();
    for (let i = 1; i < samples.length; i++) {
      const before = new Map(pick(samples[i - 1]));
      const dt = (samples[i].at_ms - samples[i - 1].at_ms) / 1000;
      if (dt <= 0) continue;
      for (const [name, value] of pick(samples[i])) {
        if (!before.has(name)) continue;
        if (!series.has(name)) series.set(name, []);
        series.get(name).push([samples[i].at_ms, Math.max(0, value - before.get(name)) / dt]);
      }
    }
    return [...series].map(([name, points]) => ({ name, points }));
  }

  // The four charts of the console from the history's samples.
  function fromHistory(samples) {
    const published = (s) => Object.entries(s.routes).map(([route, r]) =>
      [route, r.published_total !== null && r.published_total !== undefined ? r.published_total : r.retained]);
    return [
      { id: "chart-backlog", title: "Backlog per route", unit: "rows", empty: "no route has rows",
        series: levels(samples, (s) => Object.entries(s.routes).map(([route, r]) => [route, r.backlog])) },
      { id: "chart-published", title: "Published per second, per route", unit: "/s", empty: "no route has rows",
        series: rates(samples, published) },
      { id: "chart-consumed", title: "Consumed per second, per consumer", unit: "/s", empty: "no consumer has marks in the inbox",
        series: rates(samples, (s) => Object.entries(s.consumers)) },
      { id: "chart-parked", title: "Parked per second, per dead-letter queue", unit: "/s", empty: "the page shows no dead-letter queue",
        series: rates(samples, (s) => Object.entries(s.dead_letters)) },
    ].map((chart) => ({ ...chart, waiting: samples.length < 2 }));
  }

  function draw(chart) {
    const figure = document.createElement("figure");
    figure.className = "chart";
    figure.id = chart.id;
    const caption = document.createElement("figcaption");
    caption.textContent = chart.title;
    figure.appendChild(caption);
    const all = chart.series.flatMap((s) => s.points);
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
    root.dataset.series = String(chart.series.length);
    root.dataset.points = String(all.length);
    const latest = chart.series.map((s) => s.name + " " + short(s.points[s.points.length - 1][1]) + " " + chart.unit);
    root.setAttribute("aria-label", chart.title + ": " + (latest.join(", ") || "no data yet"));
    root.appendChild(svg("line", { x1: LEFT, y1: H - BOTTOM, x2: W - RIGHT, y2: H - BOTTOM, stroke: "#bbb" }));
    root.appendChild(svg("line", { x1: LEFT, y1: TOP, x2: LEFT, y2: H - BOTTOM, stroke: "#bbb" }));
    if (all.length < 2) {
      const text = svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" });
      text.textContent = chart.waiting || chart.series.length > 0 ? "waiting for samples" : chart.empty;
      root.appendChild(text);
    } else {
      const t0 = Math.min(...all.map((p) => p[0])), t1 = Math.max(...all.map((p) => p[0]));
      const top = Math.max(1, ...all.map((p) => p[1])) * 1.1;
      const x = (t) => LEFT + (t1 === t0 ? 0 : (t - t0) / (t1 - t0)) * (W - LEFT - RIGHT);
      const y = (v) => H - BOTTOM - (v / top) * (H - TOP - BOTTOM);
      for (const [value, label] of [[top / 1.1, short(top / 1.1)], [0, "0"]]) {
        const text = svg("text", { x: LEFT - 4, y: y(value) + 4, "text-anchor": "end" });
        text.textContent = label;
        root.appendChild(text);
        root.appendChild(svg("line", { x1: LEFT, y1: y(value), x2: W - RIGHT, y2: y(value), stroke: "#eee" }));
      }
      for (const [t, anchor] of [[t0, "start"], [t1, "end"]]) {
        const text = svg("text", { x: x(t), y: H - 6, "text-anchor": anchor });
        text.textContent = t === t1 ? "now" : ago(t1 - t);
        root.appendChild(text);
      }
      chart.series.forEach((s, i) => {
        const color = COLORS[i % COLORS.length];
        const line = svg("polyline", {
          points: s.points.map(([t, v]) => x(t).toFixed(1) + "," + y(v).toFixed(1)).join(" "),
          fill: "none", stroke: color, "stroke-width": 2,
        });
        line.dataset.series = s.name;
        line.dataset.points = String(s.points.length);
        root.appendChild(line);
        const [lt, lv] = s.points[s.points.length - 1];
        root.appendChild(svg("circle", { cx: x(lt), cy: y(lv), r: 3, fill: color }));
      });
    }
    figure.appendChild(root);
    const legend = document.createElement("ul");
    legend.className = "legend";
    chart.series.forEach((s, i) => {
      const item = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = COLORS[i % COLORS.length];
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(s.name + ": " + short(s.points[s.points.length - 1][1]) + " " + chart.unit));
      legend.appendChild(item);
    });
    figure.appendChild(legend);
    return figure;
  }

  return { fromHistory, draw };
})();
