// Draws the tps load report from the results document embedded in the page.
// Every chart registers itself in window.tpsReport.charts, which the browser test reads.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("tps-data").textContent);
  const report = (window.tpsReport = { charts: [] });
  const points = data.points || [];
  const mode = (data.settings && data.settings.mode) || "concurrency";
  const palette = ["#2b6cb0", "#d9480f", "#2f9e44", "#9c36b5", "#e8590c", "#1098ad", "#5c940d", "#c2255c"];
  const ms = (s) => (s == null ? null : s * 1e3);
  const fmt = (v, digits) => (v == null || Number.isNaN(v) ? "-" : Number(v).toFixed(digits));
  const label = (p) => (mode === "concurrency" ? "c=" + p.value : p.value + " req/s");

  function text(id, value) {
    document.getElementById(id).textContent = value;
  }

  const s = data.settings || {};
  const w = data.workload || {};
  text("meta", [
    "url " + s.url, "endpoint " + s.endpoint, "model " + (s.model || "(none sent)"),
    mode + " " + (s.values || []).join(", "),
    w.kind === "dataset" ? "dataset " + w.path : "input " + (w.input_tokens ? w.input_tokens.mean : "?") +
      " tok, output " + (w.output_tokens ? w.output_tokens.mean : "?") + " tok",
    "input counted by " + w.input_tokens_counted_by,
  ].join(" · "));
  if (data.stopped_early) text("stopped", "Run stopped early: " + data.stopped_early);

  // Summary table: one row per sweep value.
  const columns = [
    [mode, (p) => p.value],
    ["ok", (p) => p.summary.requests_ok],
    ["failed", (p) => p.summary.requests_failed],
    ["req/s", (p) => fmt(p.summary.request_per_s, 2)],
    ["out tok/s", (p) => fmt(p.summary.output_tok_per_s, 1)],
    ["total tok/s", (p) => fmt(p.summary.total_tok_per_s, 1)],
    ["goodput", (p) => fmt(p.summary.goodput_request_per_s, 2)],
  ];
  for (const [name, key] of [["TTFT", "ttft_s"], ["TPOT", "tpot_s"], ["ITL", "itl_s"], ["E2E", "e2e_s"]]) {
    for (const q of ["mean", "p50", "p99"]) columns.push([name + " " + q + " ms", (p) => fmt(ms(p.summary[key][q]), 2)]);
  }
  const table = document.getElementById("summary");
  const head = table.insertRow();
  for (const [name] of columns) head.appendChild(document.createElement("th")).textContent = name;
  for (const p of points) {
    const row = table.insertRow();
    for (const [, get] of columns) row.insertCell().textContent = get(p);
  }
  if (points.length) text("window-note", "Throughput is measured over each value's window: " + points[0].summary.window.rule +
    ". Latency statistics cover every successful measured request. Output tokens counted by: " +
    points.map((p) => p.summary.output_tokens_source).filter((v, i, a) => a.indexOf(v) === i).join(", ") + ".");

  function chart(title, note, options, series, seriesData) {
    const box = document.createElement("div");
    box.className = "chart";
    box.appendChild(document.createElement("h3")).textContent = title;
    document.getElementById("charts").appendChild(box);
    const plot = new uPlot(Object.assign({ width: 560, height: 300, series: [{}].concat(series) }, options), seriesData, box);
    if (note) box.appendChild(document.createElement("div")).className = "note";
    if (note) box.lastChild.textContent = note;
    let count = 0;
    for (let i = 1; i < seriesData.length; i++) for (const v of seriesData[i]) if (v != null) count++;
    report.charts.push({ title: title, points: count, canvas: box.querySelector("canvas"), plot: plot });
  }

  const line = (name, i, scale) => ({ label: name, stroke: palette[i % palette.length], width: 2,
    points: { show: true, size: 6 }, scale: scale || "y" });
  const xs = points.map((p) => p.value);

  chart("Throughput against " + mode, null,
    { scales: { x: { time: false }, rps: {} },
      axes: [{ label: mode }, { label: "tokens/s" }, { side: 1, scale: "rps", label: "requests/s", grid: { show: false } }] },
    [line("output tok/s", 0), line("total tok/s", 1), line("req/s", 2, "rps")],
    [xs, points.map((p) => p.summary.output_tok_per_s), points.map((p) => p.summary.total_tok_per_s),
     points.map((p) => p.summary.request_per_s)]);

  chart("Latency against " + mode, null,
    { scales: { x: { time: false }, e2e: {} },
      axes: [{ label: mode }, { label: "ms" }, { side: 1, scale: "e2e", label: "E2E ms", grid: { show: false } }] },
    [line("TTFT p50", 0), line("TTFT p99", 1), line("TPOT p50", 2), line("ITL p50", 3), line("E2E p50", 4, "e2e")],
    [xs, points.map((p) => ms(p.summary.ttft_s.p50)), points.map((p) => ms(p.summary.ttft_s.p99)),
     points.map((p) => ms(p.summary.tpot_s.p50)), points.map((p) => ms(p.summary.itl_s.p50)),
     points.map((p) => ms(p.summary.e2e_s.p50))]);

  // Per-request metrics, computed as docs/metrics.md defines them (same as the C++ summary).
  function requestMetrics(r) {
    const t = r.token_times_s, k = r.token_counts;
    const out = { ttft: null, itl: [] };
    if (!r.ok || !t.length) return out;
    out.ttft = t[0] - r.send_s;
    let prev = t[0];
    for (let i = 1; i < t.length; i++) {
      if (k[i] <= 0) continue;
      const share = (t[i] - prev) / k[i];
      for (let j = 0; j < k[i]; j++) out.itl.push(share);
      prev = t[i];
    }
    return out;
  }

  // Empirical CDFs, thinned to at most 400 points per series so large runs stay light.
  function cdf(values) {
    const v = values.filter((x) => x != null).map((x) => x * 1e3).sort((a, b) => a - b);
    const n = v.length, step = Math.max(1, Math.floor(n / 400)), xs = [], ys = [];
    for (let i = 0; i < n; i += step) { xs.push(v[i]); ys.push((i + 1) / n); }
    if (n && xs[xs.length - 1] !== v[n - 1]) { xs.push(v[n - 1]); ys.push(1); }
    return [xs, ys];
  }
  const metrics = points.map((p) => p.requests.map(requestMetrics));
  function cdfChart(title, pick) {
    const tables = metrics.map((m) => cdf(pick(m)));
    const joined = uPlot.join(tables);
    chart(title, "Empirical CDF per " + mode + " value.",
      { scales: { x: { time: false }, y: { range: [0, 1] } }, axes: [{ label: "ms" }, { label: "fraction of " + (title.startsWith("ITL") ? "tokens" : "requests") }] },
      points.map((p, i) => ({ label: label(p), stroke: palette[i % palette.length], width: 2, spanGaps: true, points: { show: false } })),
      joined);
  }
  cdfChart("TTFT distribution", (m) => m.map((x) => x.ttft));
  cdfChart("ITL distribution", (m) => m.flatMap((x) => x.itl));

  // Timeline: one row per request; a dot at every token arrival, sized down for big runs.
  const p = points[points.length - 1];
  if (p) {
    const events = [];
    for (const r of p.requests) for (const t of r.token_times_s) events.push([t, r.id]);
    events.sort((a, b) => a[0] - b[0]);
    const stride = Math.max(1, Math.ceil(events.length / 50000));
    const thin = events.filter((_, i) => i % stride === 0);
    const failed = p.requests.filter((r) => !r.ok).map((r) => [r.end_s, r.id]).sort((a, b) => a[0] - b[0]);
    const joined = uPlot.join([[thin.map((e) => e[0]), thin.map((e) => e[1])],
                               [failed.map((e) => e[0]), failed.map((e) => e[1])]]);
    chart("Token arrivals per request (" + label(p) + ")",
      "Each dot is one streamed event carrying text; red dots mark failed requests at the time they failed." +
        (stride > 1 ? " Every " + stride + "th event shown." : ""),
      { scales: { x: { time: false } }, axes: [{ label: "seconds since the measured phase began" }, { label: "request id" }],
        legend: { show: true } },
      [{ label: "token event", stroke: palette[0], fill: palette[0], paths: () => null, points: { show: true, size: 3, fill: palette[0] } },
       { label: "failed", stroke: "#e03131", paths: () => null, points: { show: true, size: 8, fill: "#e03131" } }],
      joined);
  }
})();
