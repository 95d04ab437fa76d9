// The page `tps serve` answers at /: a streaming chat and live charts of the server's
// numbers. Both read server-sent events with fetch (not EventSource), so the API key
// travels in the Authorization header as on every /v1 route.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const kKeyStorage = "tps.apiKey";
  const kHistorySeconds = 300; // points kept per chart

  // --- API access -------------------------------------------------------------------
  const keyInput = $("api-key");
  keyInput.value = localStorage.getItem(kKeyStorage) || "";
  keyInput.addEventListener("change", () => {
    localStorage.setItem(kKeyStorage, keyInput.value.trim());
    keyInput.parentElement.classList.remove("needed");
    loadModel();
    live.reconnect();
  });

  function headers() {
    const h = { "Content-Type": "application/json" };
    const key = keyInput.value.trim();
    if (key) h.Authorization = "Bearer " + key;
    return h;
  }

  // A failed response as one line, from the server's OpenAI-style error when it sent one.
  async function failure(response) {
    if (response.status === 401) keyInput.parentElement.classList.add("needed");
    let message = "HTTP " + response.status;
    try {
      const body = await response.json();
      if (body.error && body.error.message) message += ": " + body.error.message;
    } catch { /* not JSON */ }
    return new Error(message);
  }

  // Calls onData with the data of each server-sent event of a fetch response's body.
  async function readEvents(response, onData) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const lines = buffer.slice(0, end).split("\n").filter((l) => l.startsWith("data:"));
        buffer = buffer.slice(end + 2);
        if (lines.length) onData(lines.map((l) => l.slice(l.startsWith("data: ") ? 6 : 5)).join("\n"));
      }
    }
  }

  let modelId = "";
  async function loadModel() {
    try {
      const response = await fetch("/v1/models", { headers: headers() });
      if (!response.ok) throw await failure(response);
      const body = await response.json();
      modelId = body.data && body.data[0] ? body.data[0].id : "";
      $("model").textContent = modelId;
    } catch (e) {
      $("model").textContent = e.message;
    }
  }

  // --- Tabs ---------------------------------------------------------------------------
  const tabs = document.querySelectorAll(".tabs button");
  function show(name) {
    for (const tab of tabs) {
      const on = tab.dataset.panel === name;
      tab.setAttribute("aria-selected", String(on));
      $("panel-" + tab.dataset.panel).hidden = !on;
    }
    if (name === "live") live.resize();
    location.hash = name;
  }
  for (const tab of tabs) tab.addEventListener("click", () => show(tab.dataset.panel));

  // --- Chat ---------------------------------------------------------------------------
  const format = {
    ms: (v) => (v == null ? "–" : v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : Math.round(v).toString()),
    rate: (v) => (v == null ? "–" : Number.isInteger(v) ? v.toLocaleString() : v < 10 ? v.toFixed(2)
                  : v < 1000 ? v.toFixed(1) : Math.round(v).toLocaleString()),
    percent: (v) => (v == null ? "–" : (100 * v).toFixed(v < 0.1 ? 1 : 0)),
  };

  const chat = { history: [], controller: null };
  const temperature = $("temperature");
  temperature.addEventListener("input", () => ($("temperature-value").value = Number(temperature.value).toFixed(2)));

  // An answer is Markdown (marked, GitHub's flavour, a newline a line break), cleaned by
  // DOMPurify down to the tags Markdown writes: the model's text must never run script,
  // restyle the page or load anything (images would only meet the CSP's refusal).
  const kMarkdownTags = ["p", "br", "hr", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a",
                         "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"];
  // No class: the model's HTML must not borrow the page's own (a fake bubble or error).
  const kMarkdownAttributes = ["href", "title", "start", "align"];
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") {
      node.setAttribute("target", "_blank"); // a link must not navigate away from the chat
      node.setAttribute("rel", "noopener noreferrer");
    }
  });
  function renderMarkdown(el, markdown) {
    el.innerHTML = DOMPurify.sanitize(marked.parse(markdown, { gfm: true, breaks: true }),
                                      { ALLOWED_TAGS: kMarkdownTags, ALLOWED_ATTR: kMarkdownAttributes });
  }

  function bubble(role, text) {
    $("empty").hidden = true;
    const el = document.createElement("div");
    el.className = "msg " + role;
    const body = document.createElement("div");
    body.className = "text";
    body.textContent = text;
    el.append(body);
    $("messages").append(el);
    el.scrollIntoView({ block: "end" });
    return el;
  }

  function setMeta(el, html) {
    let meta = el.querySelector(".meta");
    if (!meta) {
      meta = document.createElement("div");
      meta.className = "meta";
      el.append(meta);
    }
    meta.innerHTML = html;
  }

  async function send(prompt) {
    chat.history.push({ role: "user", content: prompt });
    bubble("user", prompt);
    const answer = bubble("assistant", "");
    const text = answer.querySelector(".text");
    setMeta(answer, "waiting for the first token…");
    const controller = new AbortController();
    chat.controller = controller;
    $("send").disabled = true;
    $("stop").disabled = false;

    const system = $("system").value.trim();
    const messages = (system ? [{ role: "system", content: system }] : []).concat(chat.history);
    const body = {
      messages, stream: true, stream_options: { include_usage: true },
      temperature: Number(temperature.value), max_tokens: Number($("max-tokens").value) || 256,
    };
    if (modelId) body.model = modelId;
    const t0 = performance.now();
    let first = 0, tokens = 0, finish = "", timings = null;
    // Text goes on the page once per frame, not per token: a small model streams tens of
    // thousands of tokens a second, and a layout per token froze the page.
    let markdown = "", pending = "", frameQueued = false;
    const flush = () => {
      frameQueued = false;
      if (!pending) return;
      markdown += pending;
      pending = "";
      renderMarkdown(text, markdown);
      setMeta(answer, `<b>TTFT ${format.ms(first - t0)} ms</b> · streaming…`);
      answer.scrollIntoView({ block: "end" });
    };
    try {
      const response = await fetch("/v1/chat/completions", {
        method: "POST", headers: headers(), body: JSON.stringify(body), signal: controller.signal,
      });
      if (!response.ok) throw await failure(response);
      await readEvents(response, (data) => {
        if (data === "[DONE]") return;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new Error(chunk.error.message);
        if (chunk.usage) tokens = chunk.usage.completion_tokens;
        if (chunk.timings) timings = chunk.timings;
        const choice = chunk.choices && chunk.choices[0];
        if (!choice) return;
        if (choice.finish_reason) finish = choice.finish_reason;
        const piece = choice.delta && choice.delta.content;
        if (!piece) return;
        if (!first) first = performance.now();
        pending += piece;
        if (!frameQueued) {
          frameQueued = true;
          requestAnimationFrame(flush);
        }
      });
    } catch (e) {
      flush();
      if (e.name === "AbortError") {
        finish = "stopped";
      } else {
        answer.classList.add("error");
        const error = document.createElement("div");
        error.className = "error-text";
        error.textContent = e.message;
        text.after(error);
        finish = "error";
      }
    }
    flush();
    // tokens/s: the server's decode rate for this answer (none for a stopped one).
    const rate = timings && timings.predicted_per_second > 0 ? timings.predicted_per_second : null;
    answer.dataset.ttftMs = first ? String(first - t0) : "";
    answer.dataset.tokensPerS = rate == null ? "" : String(rate);
    setMeta(answer, `<b>TTFT ${first ? format.ms(first - t0) : "–"} ms</b> · <b>${format.rate(rate)} tok/s</b>` +
                    ` · ${tokens || "?"} tokens · ${finish || "ended"}`);
    // The history keeps what the model wrote, not its rendering.
    if (markdown && finish !== "error") chat.history.push({ role: "assistant", content: markdown });
    else chat.history.pop(); // the question goes unanswered; ask again
    chat.controller = null;
    $("send").disabled = false;
    $("stop").disabled = true;
  }

  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const prompt = $("prompt").value.trim();
    if (!prompt || chat.controller) return;
    $("prompt").value = "";
    send(prompt);
  });
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", () => chat.controller && chat.controller.abort());
  $("new-chat").addEventListener("click", () => {
    if (chat.controller) chat.controller.abort();
    chat.history = [];
    for (const m of document.querySelectorAll(".msg")) m.remove();
    $("empty").hidden = false;
  });

  // --- Live ---------------------------------------------------------------------------
  const pct = (v) => (v == null ? null : 100 * v);
  // Each chart: series of [label, value of a snapshot].
  const kCharts = [
    { title: "Tokens/s", series: [["output", (s) => s.output_tokens_per_s], ["prefill", (s) => s.prefill_tokens_per_s]] },
    { title: "Output tokens/s per sequence", series: [["per sequence", (s) => s.output_tokens_per_s_per_seq]] },
    { title: "TTFT (ms)", series: ["p50", "p90", "p99"].map((p) => [p, (s) => s.ttft_ms[p]]) },
    { title: "ITL (ms)", series: ["p50", "p90", "p99"].map((p) => [p, (s) => s.itl_ms[p]]) },
    { title: "Sequences", series: [["running", (s) => s.running], ["waiting", (s) => s.waiting]] },
    { title: "KV blocks", series: [["used", (s) => s.kv_blocks_used], ["cached", (s) => s.kv_blocks_cached],
                                   ["total", (s) => s.kv_blocks_total]] },
    { title: "Utilization (%)", percent: true,
      series: [["batch", (s) => pct(s.batch_utilization)], ["prefix-cache hits", (s) => pct(s.prefix_cache_hit_rate)],
               ["MBU", (s) => pct(s.mbu)], ["spec. acceptance", (s) => pct(s.spec_acceptance_rate)]] },
  ];

  const kTiles = [
    ["Output", (s) => [format.rate(s.output_tokens_per_s), "tok/s", `${s.output_tokens_total.toLocaleString()} tokens in all`]],
    ["Per sequence", (s) => [format.rate(s.output_tokens_per_s_per_seq), "tok/s", "output of one sequence"]],
    ["Prefill", (s) => [format.rate(s.prefill_tokens_per_s), "tok/s", `${s.prefill_tokens_total.toLocaleString()} tokens in all`]],
    ["TTFT p50", (s) => [format.ms(s.ttft_ms.p50), "ms", `p90 ${format.ms(s.ttft_ms.p90)} · p99 ${format.ms(s.ttft_ms.p99)}`]],
    ["ITL p50", (s) => [format.ms(s.itl_ms.p50), "ms", `p90 ${format.ms(s.itl_ms.p90)} · p99 ${format.ms(s.itl_ms.p99)}`]],
    ["Sequences", (s) => [String(s.running), "running", `${s.waiting} waiting`]],
    ["KV blocks", (s) => [format.percent(s.kv_blocks_used / s.kv_blocks_total), "%",
                          `${s.kv_blocks_used} of ${s.kv_blocks_total} used`]],
    ["Prefix cache", (s) => [format.percent(s.prefix_cache_hit_rate), "% hits", `${s.kv_blocks_cached} blocks cached`]],
    ["Batch", (s) => [format.percent(s.batch_utilization), "%", `${s.steps} steps, budget ${s.batch_tokens}`]],
    ["MBU", (s) => s.profile_bandwidth_gbps == null
      ? ["no profile", "", s.decode_bandwidth_gbps == null ? "serve --profile to compare" : `${s.decode_bandwidth_gbps.toFixed(1)} GB/s decode`]
      : [format.percent(s.mbu), "%", `${s.decode_bandwidth_gbps == null ? "–" : s.decode_bandwidth_gbps.toFixed(1)} of ${s.profile_bandwidth_gbps.toFixed(1)} GB/s`]],
    ["Speculation", (s) => s.speculative ? [format.percent(s.spec_acceptance_rate), "% accepted", "drafts this second"]
                                         : ["off", "", "--spec ngram / --draft-model"]],
  ];

  const clock = (t) => new Date(t * 1000).toLocaleTimeString([], { hour12: false });
  const latest = (column) => {
    for (let i = column.length - 1; i >= 0; i--) if (column[i] != null) return column[i];
    return null;
  };

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  const live = {
    snapshots: 0, last: null, charts: [], data: [], tiles: [], controller: null,

    init() {
      const x = [];
      this.data = kCharts.map((c) => [x, ...c.series.map(() => [])]);
      this.times = x;
      for (const [label] of kTiles) {
        const el = document.createElement("div");
        el.className = "tile";
        el.innerHTML = `<div class="label"></div><div class="value">–</div><div class="sub">&nbsp;</div>`;
        el.querySelector(".label").textContent = label;
        $("tiles").append(el);
        this.tiles.push(el);
      }
      this.build();
      matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => this.build());
      new ResizeObserver(() => this.resize()).observe($("charts"));
      this.connect();
    },

    // (Re)creates the charts with the theme's colours, keeping their data.
    build() {
      for (const c of this.charts) c.plot.destroy();
      $("charts").replaceChildren();
      this.charts = [];
      const colors = ["--c1", "--c2", "--c3", "--c4"].map(cssVar);
      const axis = { stroke: cssVar("--muted"), grid: { stroke: cssVar("--grid"), width: 1 },
                     ticks: { stroke: cssVar("--grid"), width: 1 } };
      kCharts.forEach((spec, i) => {
        const box = document.createElement("div");
        box.className = "chart card";
        box.innerHTML = "<h3></h3><div class='plot'></div>";
        box.querySelector("h3").textContent = spec.title;
        $("charts").append(box);
        const opts = {
          width: this.width(box), height: 190,
          scales: { x: { time: true }, y: { range: spec.percent ? [0, 100] : (u, min, max) => [0, max > 0 ? max * 1.15 : 1] } },
          axes: [{ ...axis, space: 70, values: (u, ticks) => ticks.map(clock) }, { ...axis, size: 56 }],
          series: [{}, ...spec.series.map(([label], k) => ({
            label, stroke: colors[k % colors.length], width: 2, points: { show: false },
            // Away from the cursor the legend shows the latest value.
            value: (u, v, s, idx) => format.rate(idx == null ? latest(u.data[s]) : v),
          }))],
          legend: { live: true },
          cursor: { drag: { x: false, y: false } },
        };
        this.charts.push({ title: spec.title, box, plot: new uPlot(opts, this.data[i], box.querySelector(".plot")) });
      });
    },

    width(box) {
      return Math.max(260, (box.clientWidth || 420) - 24);
    },

    resize() {
      for (const c of this.charts) c.plot.setSize({ width: this.width(c.box), height: 190 });
    },

    status(text, state) {
      $("live-status").textContent = text;
      $("live-dot").className = "dot " + state;
    },

    add(s) {
      this.snapshots++;
      this.last = s;
      this.times.push(s.time);
      kCharts.forEach((spec, i) => spec.series.forEach(([, value], k) => this.data[i][k + 1].push(value(s))));
      if (this.times.length > kHistorySeconds) {
        this.times.shift();
        for (const d of this.data) for (const column of d.slice(1)) column.shift();
      }
      kTiles.forEach(([, describe], i) => {
        const [value, unit, sub] = describe(s);
        const el = this.tiles[i];
        el.querySelector(".value").innerHTML = "";
        el.querySelector(".value").append(value);
        if (unit) {
          const small = document.createElement("small");
          small.textContent = unit;
          el.querySelector(".value").append(small);
        }
        el.querySelector(".sub").textContent = sub;
      });
      $("window").textContent = s.latency_window_s;
      this.charts.forEach((c, i) => c.plot.setData(this.data[i]));
    },

    async connect() {
      const controller = new AbortController();
      this.controller = controller;
      try {
        this.status("connecting…", "");
        const response = await fetch("/v1/stats/stream", { headers: headers(), signal: controller.signal });
        if (!response.ok) throw await failure(response);
        this.status("live", "on");
        await readEvents(response, (data) => this.add(JSON.parse(data)));
        this.status("the server ended the stream; reconnecting…", "off");
      } catch (e) {
        if (controller.signal.aborted) return;
        this.status(e.message + "; retrying…", "off");
      }
      if (this.controller === controller) setTimeout(() => this.controller === controller && this.connect(), 2000);
    },

    reconnect() {
      if (this.controller) this.controller.abort();
      this.connect();
    },
  };

  // For the browser test: what the page has received and drawn.
  window.tpsApp = { live, chat };

  loadModel();
  live.init();
  show(location.hash === "#live" ? "live" : "chat");
})();
