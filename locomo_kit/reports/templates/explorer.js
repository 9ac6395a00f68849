// The question explorer of report.html: filters, sorts and expands the rows that
// locomo_kit/report/questions.py built (embedded as JSON in #explorer-data). No dependencies.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("explorer-data").textContent);
  const state = { category: "", outcome: "", gold: data.gold_keys[0] || "original", changedOnly: false,
                  text: "", sort: "index", desc: false, open: new Set() };

  const scoresOf = (row, gold) => row.scores[gold] || row.scores.original;
  const goldOf = (row, gold) => (gold === "audited" && row.gold_changed ? row.gold_audited : row.gold);
  const fmt = (v, digits) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
  const outcomeOf = (s) => (s.correct ? "correct" : s.failure === "memory" ? "the memory lost it"
    : s.failure === "answerer" ? "the answerer missed it" : "wrong");

  function haystack(row) {
    const memories = row.retrieved.map((r) => data.memories[r.m].content);
    return [row.question, row.gold, row.gold_audited, row.prediction, row.sample_id + " q" + row.question_index]
      .concat(memories).join("\n").toLowerCase();
  }

  function matches(row, s) {
    const sc = scoresOf(row, s.gold);
    if (s.category && String(row.category) !== s.category) return false;
    if (s.changedOnly && !row.gold_changed) return false;
    if (s.outcome === "correct" && !sc.correct) return false;
    if (s.outcome === "wrong" && sc.correct) return false;
    if ((s.outcome === "memory" || s.outcome === "answerer") && sc.failure !== s.outcome) return false;
    return !s.text || haystack(row).includes(s.text.toLowerCase());
  }

  function sortValue(row, key, gold) {
    const sc = scoresOf(row, gold);
    if (key === "index") return [row.sample_id, row.question_index];
    if (key === "category") return [row.category, row.question_index];
    if (key === "outcome") return [outcomeOf(sc)];
    if (key === "search_ms") return [row.search_ms];
    if (key.startsWith("j:")) return [sc.j[key.slice(2)]];
    return [sc[key]];
  }

  function compare(a, b, desc) {  // missing values sort last in either direction
    for (let i = 0; i < a.length; i++) {
      const x = a[i], y = b[i];
      if (x === y) continue;
      const xMissing = x === null || x === undefined, yMissing = y === null || y === undefined;
      if (xMissing || yMissing) return xMissing ? 1 : -1;
      return (x < y ? -1 : 1) * (desc ? -1 : 1);
    }
    return 0;
  }

  function visibleRows(rows, s) {
    const keyed = rows.filter((r) => matches(r, s)).map((r, i) => [sortValue(r, s.sort, s.gold), i, r]);
    keyed.sort((a, b) => compare(a[0], b[0], s.desc) || a[1] - b[1]);
    return keyed.map((k) => k[2]);
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
    return node;
  }

  function turnText(row, id) {
    const t = data.turns[row.sample_id + " " + id];
    return t ? t.speaker + ": " + t.text + (t.image ? " [image: " + t.image + "]" : "") : "(turn not in the dataset)";
  }

  function detail(row) {
    const box = el("div", { class: "detail" });
    const sc = scoresOf(row, state.gold);
    box.append(el("p", { class: "q" }, row.question));
    const facts = el("dl");
    const add = (k, v) => facts.append(el("dt", {}, k), el("dd", {}, v));
    add("gold (original)", row.gold === null ? "–" : row.gold);
    add("gold (audited)", row.gold_changed ? row.gold_audited + "  ← changed by the audit (" + row.audit_error + ")"
      : row.audit_error ? "unchanged (the audit corrected its evidence: " + row.audit_error + ")" : "unchanged");
    if (row.adversarial_answer) add("adversarial answer", row.adversarial_answer);
    add("prediction", row.prediction === null ? "–" : row.prediction);
    for (const g of data.gold_keys) {
      const s = row.scores[g];
      if (s) add("scores (" + g + " key)", "official F1 " + fmt(s.locomo_f1, 2) + " · Mem0 F1 " + fmt(s.mem0_f1, 2) +
        " · BLEU-1 " + fmt(s.bleu1, 2) + " · evidence recall " + fmt(s.evidence_recall, 2) +
        " · answer in context " + (s.answer_in_context === null ? "–" : s.answer_in_context ? "yes" : "no") +
        " · " + outcomeOf(s) + " (" + s.basis + ")");
    }
    add("evidence", (state.gold === "audited" ? row.evidence_audited : row.evidence).join(", ") || "none listed");
    box.append(facts);
    for (const g of data.gold_keys) {
      for (const j of row.judgements[g] || []) {
        const runs = el("ol", { class: "judge-runs" });
        const verdict = (v) => (v === null ? "no score" : j.protocol === "playbook" ? fmt(v, 0) : v >= 1 ? "CORRECT" : "WRONG");
        for (const r of j.runs) runs.append(el("li", {}, el("b", {}, verdict(r.score)),
          " ", r.error ? "(" + r.error + ") " : "", r.explanation));
        box.append(el("h4", {}, "Judge " + j.protocol + " (" + j.judge_model + ", " + j.prompt_version + ", " + g +
          " key): mean " + fmt(j.mean, 2) + " over " + j.n_ok + " of " + j.n_runs + " runs"), runs);
      }
    }
    const evidence = new Set(state.gold === "audited" ? row.evidence_audited : row.evidence);
    const mems = el("ol", { class: "memories" });
    for (const r of row.retrieved) {
      const m = data.memories[r.m];
      const hit = m.source_turns.some((t) => evidence.has(t));
      mems.append(el("li", { class: hit ? "evidence" : "" }, hit ? el("span", { class: "badge" }, "evidence") : null,
        el("span", { class: "src" }, (m.source_turns.join(", ") || "no turn ids") + " · score " + fmt(r.score, 3)),
        " ", m.content));
    }
    box.append(el("h4", {}, "Retrieved memories, in order (" + row.retrieved.length + ")"), mems);
    const missed = [...evidence].filter((id) => !row.retrieved.some((r) => data.memories[r.m].source_turns.includes(id)));
    if (missed.length) {
      const list = el("ul", { class: "missed" });
      for (const id of missed) list.append(el("li", {}, id + ": " + turnText(row, id)));
      box.append(el("h4", {}, "Evidence turns not retrieved"), list);
    }
    return box;
  }

  function render() {
    const body = document.getElementById("explorer-rows");
    const rows = visibleRows(data.rows, state);
    const cols = document.querySelectorAll("#explorer-table thead th").length;
    body.replaceChildren();
    for (const row of rows) {
      const sc = scoresOf(row, state.gold);
      const id = row.sample_id + ":" + row.question_index;
      const tr = el("tr", { class: "row " + (sc.correct ? "ok" : "bad"), "data-id": id, tabindex: "0" },
        el("td", {}, row.sample_id + " q" + row.question_index), el("td", {}, row.category),
        el("td", {}, row.question),
        el("td", {}, goldOf(row, state.gold), row.gold_changed ? el("span", { class: "badge", title: "the audit changed this gold answer" }, "audited") : null),
        el("td", {}, row.prediction), el("td", { class: "num" }, fmt(sc.locomo_f1, 2)),
        el("td", { class: "num" }, fmt(sc.mem0_f1, 2)), el("td", { class: "num" }, fmt(sc.bleu1, 2)),
        ...data.judge_protocols.map((p) => el("td", { class: "num" }, fmt(sc.j[p], 2))),
        el("td", { class: "num" }, fmt(sc.evidence_recall, 2)), el("td", { class: "num" }, fmt(row.search_ms, 1)),
        el("td", {}, outcomeOf(sc)));
      tr.addEventListener("click", () => { state.open.has(id) ? state.open.delete(id) : state.open.add(id); render(); });
      tr.addEventListener("keydown", (e) => { if (e.key === "Enter") tr.click(); });
      body.append(tr);
      if (state.open.has(id)) body.append(el("tr", { class: "detail-row" }, el("td", { colspan: String(cols) }, detail(row))));
    }
    document.getElementById("explorer-count").textContent = rows.length + " of " + data.rows.length + " questions";
    for (const th of document.querySelectorAll("#explorer-table th[data-sort]")) {
      th.setAttribute("aria-sort", th.dataset.sort === state.sort ? (state.desc ? "descending" : "ascending") : "none");
    }
  }

  const bind = (id, event, apply) => document.getElementById(id).addEventListener(event, (e) => { apply(e.target); render(); });
  bind("f-category", "change", (t) => { state.category = t.value; });
  bind("f-outcome", "change", (t) => { state.outcome = t.value; });
  bind("f-gold", "change", (t) => { state.gold = t.value; });
  bind("f-changed", "change", (t) => { state.changedOnly = t.checked; });
  bind("f-text", "input", (t) => { state.text = t.value.trim(); });
  for (const th of document.querySelectorAll("#explorer-table th[data-sort]")) {
    th.addEventListener("click", () => {
      state.desc = state.sort === th.dataset.sort ? !state.desc : th.dataset.sort !== "index" && th.dataset.sort !== "category";
      state.sort = th.dataset.sort;
      render();
    });
  }
  window.locomoExplorer = { data, state, matches, visibleRows, render };
  render();
})();
