// The kubesched HTML report: draws the embedded figures and the pods table, and explains a pod
// when its row is clicked. Data arrives as JSON in #report-data; every string from the report is
// set as text (never as HTML), so pod names and messages cannot inject markup.
"use strict";
(function () {
  const report = JSON.parse(document.getElementById("report-data").textContent);
  const PAGE = 100;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  document.title = report.title;
  document.getElementById("title").textContent = report.title;
  document.getElementById("subtitle").textContent = report.subtitle || "";

  const cards = document.getElementById("cards");
  for (const card of report.cards) {
    cards.append(el("div", { class: "card" }, el("div", { class: "value" }, card.value), el("div", { class: "label" }, card.label)));
  }

  // Lay every chart out first, then draw: each plot then sizes itself to its final grid cell.
  const charts = document.getElementById("charts");
  const divs = report.figures.map((figure) => {
    const div = el("div", { id: figure.id, class: figure.wide ? "chart wide" : "chart" });
    charts.append(div);
    return div;
  });
  report.figures.forEach((figure, i) => {
    Plotly.newPlot(divs[i], figure.data, figure.layout, { responsive: true, displaylogo: false });
  });

  // ------------------------------------------------------------------ the pods table
  const columns = report.columns;
  document.getElementById("pods").hidden = columns.length === 0; // a comparison has no pods table
  const head = document.getElementById("pods-head");
  for (const [, label] of columns) head.append(el("th", {}, label));
  const search = document.getElementById("pods-search");
  const resultFilter = document.getElementById("pods-result");
  for (const result of [...new Set(report.pods.map((p) => p.result))].sort()) {
    resultFilter.append(el("option", { value: result }, result));
  }
  // "namespace/pod" -> "namespace/group": the search's {group} matches exactly a group's members
  const groupOf = new Map((report.podGroups || []).flatMap((g) => g.members.map((m) => [m, g.group])));
  const body = document.getElementById("pods-body");
  let shown = report.pods;
  let page = 0;
  let selected = null;

  function cell(pod, key) {
    const value = pod[key];
    if (key === "pod") return `${pod.ns}/${pod.name}`;
    if (value === undefined || value === null) return "";
    if (Array.isArray(value)) return value.length ? String(value.length) : "";
    return String(value);
  }

  function render() {
    body.replaceChildren();
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    for (const pod of shown.slice(page * PAGE, (page + 1) * PAGE)) {
      const row = el("tr", { "data-pod": `${pod.ns}/${pod.name}` });
      for (const [key] of columns) {
        const text = cell(pod, key);
        // A long reason shows its first two lines (all of it on hover and in the panel).
        const td = key === "message" ? el("td", { class: "message", title: text }, el("div", { class: "clamp" }, text)) : el("td", {}, text);
        if (key === "result") td.className = `result result-${pod.result}`;
        if (key === "pod" || key === "node") td.className = key;
        row.append(td);
      }
      if (pod === selected) row.classList.add("selected");
      row.addEventListener("click", () => {
        selected = pod;
        for (const other of body.querySelectorAll("tr.selected")) other.classList.remove("selected");
        row.classList.add("selected");
        explain(pod);
      });
      body.append(row);
    }
    document.getElementById("pods-count").textContent = `(${shown.length} of ${report.pods.length})`;
    document.getElementById("pods-page").textContent = `page ${page + 1} of ${pages}`;
  }

  function filter() {
    const needle = search.value.trim().toLowerCase();
    const wanted = resultFilter.value;
    shown = report.pods.filter(
      (p) =>
        (!wanted || p.result === wanted) &&
        (!needle ||
          `${p.ns}/${p.name} [${p.workload || ""}] {${groupOf.get(`${p.ns}/${p.name}`) || ""}} ${p.node || ""} ${p.message || ""}`
            .toLowerCase()
            .includes(needle)),
    );
    page = 0;
    render();
  }
  search.addEventListener("input", filter);
  resultFilter.addEventListener("change", filter);
  document.getElementById("pods-prev").addEventListener("click", () => { page = Math.max(0, page - 1); render(); });
  document.getElementById("pods-next").addEventListener("click", () => { page += 1; render(); });

  // ------------------------------------------------------------------ the workloads table
  const workloads = report.workloads || [];
  document.getElementById("workloads").hidden = workloads.length === 0;
  document.getElementById("workloads-count").textContent = `(${workloads.length})`;
  const workloadBody = document.getElementById("workloads-body");
  for (const w of workloads) {
    const row = el(
      "tr",
      { "data-workload": w.workload },
      el("td", {}, w.workload),
      el("td", { class: w.complete ? "complete" : "incomplete" }, `${w.scheduled}/${w.desired}`),
      el("td", {}, w.pending),
      el("td", {}, w.old),
      el("td", {}, w.zones),
      el("td", { class: "message" }, w.message),
    );
    row.addEventListener("click", () => {
      search.value = `[${w.workload}]`; // brackets: exactly this workload, not one whose name extends it
      resultFilter.value = "";
      filter();
      document.getElementById("pods").scrollIntoView();
    });
    workloadBody.append(row);
  }

  // ------------------------------------------------------------------ the pod groups table
  const podGroups = report.podGroups || [];
  document.getElementById("pod-groups").hidden = podGroups.length === 0;
  document.getElementById("pod-groups-count").textContent = `(${podGroups.length})`;
  const groupBody = document.getElementById("pod-groups-body");
  for (const g of podGroups) {
    const row = el(
      "tr",
      { "data-pod-group": g.group },
      el("td", {}, g.group),
      el("td", { class: `result result-${g.result}` }, g.result),
      el("td", { class: g.bound >= g.minCount ? "complete" : "incomplete" }, `${g.bound}/${g.pods}`),
      el("td", {}, g.minCount),
      el("td", { class: "placement" }, g.placement),
      el("td", { class: "message" }, g.message),
    );
    row.addEventListener("click", () => {
      search.value = `{${g.group}}`; // braces: exactly this group's members
      resultFilter.value = "";
      filter();
      document.getElementById("pods").scrollIntoView();
    });
    groupBody.append(row);
  }

  // ------------------------------------------------------------------ one pod, explained
  function facts(pairs) {
    const dl = el("dl");
    for (const [label, value] of pairs) {
      if (value === undefined || value === null || value === "") continue;
      dl.append(el("dt", {}, label), el("dd", {}, value));
    }
    return dl;
  }

  function table(header, rows) {
    const t = el("table");
    t.append(el("thead", {}, el("tr", {}, ...header.map((h) => el("th", {}, h)))));
    const tb = el("tbody");
    for (const row of rows) tb.append(el("tr", {}, ...row.map((c) => el("td", {}, c))));
    t.append(tb);
    return t;
  }

  function seconds(value) {
    return value === undefined || value === null ? null : `${value} s`;
  }

  // The nearest nodes are worked out for the first pod of each workload and explanation; the
  // group's other pods name that pod (nearestOf) instead of carrying a copy.
  const byKey = new Map(report.pods.map((p) => [`${p.ns}/${p.name}`, p]));
  function nearestOf(pod) {
    if (pod.nearest && pod.nearest.length) return { nodes: pod.nearest, of: null };
    const first = pod.nearestOf ? byKey.get(pod.nearestOf) : undefined;
    return first && first.nearest && first.nearest.length ? { nodes: first.nearest, of: pod.nearestOf } : null;
  }

  function explain(pod) {
    const box = document.getElementById("explain");
    box.replaceChildren();
    box.append(el("h3", {}, `${pod.ns}/${pod.name}`));
    box.append(
      facts([
        ["result", pod.result],
        ["node", pod.node],
        ["workload", pod.workload],
        ["profile", pod.profile],
        ["attempts", pod.attempts],
        ["nominated node", pod.nominated],
        ["created at", seconds(pod.created)],
        ["bound at", seconds(pod.bound)],
        ["waited", seconds(pod.wait)],
        ["ended", pod.ended ? `${pod.ended} at ${pod.endedAt} s` : null],
      ]),
    );
    if (pod.message) box.append(el("div", { class: "message" }, pod.message));
    if (pod.victims && pod.victims.length) {
      box.append(el("h4", {}, "Preempted to make room"), el("p", {}, pod.victims.join(", ")));
    }
    // What is missing on the nearest nodes first: it says what to change; the table below counts.
    const near = nearestOf(pod);
    if (near) {
      box.append(el("h4", {}, "Nearest nodes, and what is missing on each"));
      if (near.of) box.append(el("p", { class: "hint" }, `As worked out for ${near.of}, the first pod of this workload with the same explanation.`));
      box.append(
        el(
          "ul",
          { class: "nearest" },
          ...near.nodes.map((n) =>
            el("li", {}, el("b", {}, n.node), ` (${n.plugins.join(", ")})`, el("ul", {}, ...n.missing.map((m) => el("li", {}, m)))),
          ),
        ),
      );
    }
    if (pod.filter && pod.filter.length) {
      box.append(
        el("h4", {}, "Nodes rejected in the last attempt"),
        table(
          ["plugin", "reason", "nodes"],
          pod.filter.map((f) => [f.plugin, f.reasons, `${f.count}: ${f.nodes.join(", ")}${f.count > f.nodes.length ? ", …" : ""}`]),
        ),
      );
    }
    if (pod.scores && pod.scores.length) {
      box.append(
        el("h4", {}, "Best-scored feasible nodes"),
        table(
          ["node", "total", "by plugin"],
          pod.scores.map((s) => [s.node, s.total, Object.entries(s.plugins).map(([k, v]) => `${k} ${v}`).join(", ")]),
        ),
      );
    }
    if (!pod.message && !(pod.filter && pod.filter.length) && !(pod.scores && pod.scores.length)) {
      box.append(el("p", { class: "hint" }, "Run with --explain to see every node's filter verdict and scores."));
    }
  }

  filter();
  document.body.setAttribute("data-rendered", "true");
})();
