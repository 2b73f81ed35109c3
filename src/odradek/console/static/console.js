// Odradek console: live refresh of each page's `live` block, uPlot charts fed by JSON endpoints, and the
// message browser's live tail. No framework; the pages work (without refresh) when scripts are off.
// Forms carry the session's CSRF token as a hidden field (rendered by the server); a script that posts
// must send it as the X-CSRF-Token header (it is in <meta name="csrf-token">). None posts today.
"use strict";

const Console = {
  stamp() {
    const el = document.getElementById("updated");
    if (el) el.textContent = "updated " + new Date().toLocaleTimeString();
  },

  // Re-fetch this page's live block every data-refresh ms and swap it in.
  liveRefresh() {
    const live = document.getElementById("live");
    if (!live) return;
    const every = Number(live.dataset.refresh) || 5000;
    const tick = async () => {
      if (!document.hidden) {
        try {
          const resp = await fetch(location.href, { headers: { "X-Console-Fragment": "live" } });
          if (resp.status === 401) { location.reload(); return; }  // the session ended: the login page
          if (resp.ok) {
            live.innerHTML = await resp.text();
            live.dispatchEvent(new CustomEvent("console:refreshed"));
            Console.stamp();
          } else {
            const el = document.getElementById("updated");
            if (el) el.textContent = resp.status >= 502 ? "cluster unreachable, retrying" : "refresh failed (" + resp.status + ")";
          }
        } catch (e) { /* the console is restarting or gone: try again next tick */ }
      }
      setTimeout(tick, every);
    };
    Console.stamp();
    setTimeout(tick, every);
  },

  chart(el, title, labels, data, opts = {}) {
    const colors = ["#2f5fd0", "#c0362c", "#2e7d32", "#8e44ad", "#d68910", "#16a085"];
    const series = [{}].concat(labels.map((label, i) => ({ label, stroke: colors[i % colors.length], width: 2,
      value: (u, v) => v == null ? "-" : (opts.percent ? (v * 100).toFixed(2) + "%" : v.toLocaleString()) })));
    const axes = [{}, { values: (u, vals) => vals.map(v => opts.percent ? (v * 100).toFixed(1) + "%" : v.toLocaleString()), size: 60 }];
    const width = Math.max(el.clientWidth - 16, 300);
    if (!el._plot) {
      el.innerHTML = "";
      el._plot = new uPlot({ title, width, height: 220, series, axes, scales: { x: { time: true } } }, data, el);
      el._labels = labels.join("|");
    } else if (el._labels !== labels.join("|")) {
      el._plot.destroy(); el._plot = null; Console.chart(el, title, labels, data, opts);
    } else {
      el._plot.setData(data);
    }
    if (el._plot && data[0].length === 1) {
      // one sample: a minute either side of it (uPlot's own default for a single time spreads over years)
      el._plot.setScale("x", { min: data[0][0] - 60, max: data[0][0] + 60 });
    }
    el.dataset.points = String(data[0].length);
  },

  async poll(el, draw) {
    const every = Number(el.dataset.refresh) || 5000;
    const tick = async () => {
      if (!document.hidden) {
        try {
          const resp = await fetch(el.dataset.source);
          if (resp.ok) draw(await resp.json());
        } catch (e) { /* next tick */ }
      }
      setTimeout(tick, every);
    };
    tick();
  },

  lagChart() {
    const el = document.getElementById("lag-chart");
    if (!el) return;
    Console.poll(el, (s) => {
      if (!s.t.length) { el.textContent = "No samples yet."; el.dataset.points = "0"; return; }
      Console.chart(el, "", ["total lag"].concat(s.topics), [s.t, s.total].concat(s.by_topic));
    });
  },

  weblogs() {
    const root = document.getElementById("weblogs");
    if (!root) return;
    Console.poll(root, (m) => {
      const byId = (id) => document.getElementById(id);
      const c = m.current;
      const now = c ? ` This minute so far (${c.window_start}, partial): ${c.requests.toLocaleString()} requests.` : "";
      const problem = m.problem ? ` (${m.problem})` : "";
      if (!m.t.length) { byId("weblogs-latest").textContent = "No complete minute yet." + now + problem; return; }
      const l = m.latest;
      byId("weblogs-latest").textContent = `Latest complete minute ${l.window_start}: ` +
        `${l.requests.toLocaleString()} requests, p95 ${Math.round(l.latency_p95_ms)} ms, ` +
        `5xx ${(l.error_rate_5xx * 100).toFixed(2)}%.` + now + problem;
      Console.chart(byId("chart-requests"), "", ["requests"], [m.t, m.requests]);
      Console.chart(byId("chart-errors"), "", ["4xx rate", "5xx rate"], [m.t, m.error_rate_4xx, m.error_rate_5xx], { percent: true });
      Console.chart(byId("chart-latency"), "", ["p50", "p95", "p99"], [m.t, m.latency_p50_ms, m.latency_p95_ms, m.latency_p99_ms]);
      Console.chart(byId("chart-clients"), "", ["distinct clients"], [m.t, m.distinct_clients]);
      root.dataset.windows = String(m.t.length);
    });
  },

  // Append records produced after the page loaded while "live tail" is on.
  tail() {
    const box = document.getElementById("tail");
    const table = document.getElementById("messages");
    if (!box || !table) return;
    let next = Number(table.dataset.tailFrom);
    let timer = null;
    const body = table.tBodies[0];
    const tick = async () => {
      try {
        const url = `/api/topics/${encodeURIComponent(table.dataset.topic)}/messages?partition=${table.dataset.partition}&offset=${next}&limit=100`;
        const resp = await fetch(url);
        if (resp.ok) {
          const data = await resp.json();
          if (data.count) {
            const rows = document.createElement("tbody");
            rows.innerHTML = data.rows_html;
            for (const row of Array.from(rows.rows)) { row.classList.add("new"); body.appendChild(row); }
            while (body.rows.length > 500) body.deleteRow(0);
            Console.stamp();
          }
          next = data.next;
        }
      } catch (e) { /* next tick */ }
      if (box.checked) timer = setTimeout(tick, 1000);
    };
    box.addEventListener("change", () => {
      clearTimeout(timer);
      const position = document.getElementById("position");
      if (position) position.dataset.tail = box.checked ? `Live tail: new records from offset ${next} appear below.` : "";
      if (box.checked) tick();
    });
  },
};

// A header sits over its column: numeric columns (td.num) are right-aligned, so their headers are too.
Console.alignHeaders = (root) => {
  for (const table of root.querySelectorAll("table")) {
    const row = table.tBodies[0] && table.tBodies[0].rows[0];
    const head = table.tHead && table.tHead.rows[0];
    if (!row || !head) continue;
    Array.from(row.cells).forEach((td, i) => {
      if (head.cells[i]) head.cells[i].classList.toggle("num", td.classList.contains("num"));
    });
  }
};

document.addEventListener("DOMContentLoaded", () => {
  Console.alignHeaders(document);
  document.addEventListener("console:refreshed", (e) => Console.alignHeaders(e.target), true);
  Console.liveRefresh();
  Console.lagChart();
  Console.weblogs();
  Console.tail();
});

// A click on a config row of a topic page fills the edit form with its name and value.
document.addEventListener("click", (event) => {
  const tr = event.target.closest && event.target.closest("#configs tr[data-config]");
  const form = document.getElementById("edit-config");
  if (!tr || !form) return;
  form.elements.key.value = tr.dataset.config;
  const value = tr.querySelector(".value");
  form.elements.value.value = value && !value.querySelector(".muted") ? value.textContent.trim() : "";
  form.elements.value.focus();
});
