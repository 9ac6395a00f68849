// The question explorer of report.html: filters, sorts and expands the rows that
// locomo_kit/reports/questions.py built (embedded as JSON in #explorer-data). Shared pieces: ui.js.
(function () {
  "use strict";
  const { fmt, el, compareKeys: compare } = window.locomoUI;
  const data = JSON.parse(document.getElementById("explorer-data").textContent);
  const state = { category: "", outcome: "", gold: data.gold_keys[0] || "original", changedOnly: false,
                  text: "", right: "", wrong: "", sort: "index", desc: false, open: new Set() };

  const scoresOf = (row, gold) => row.scores[gold] || row.scores.original;
  const goldOf = (row, gold) => (gold === "audited" && row.gold_changed ? row.gold_audited : row.gold);
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
    const verdicts = (row.verdicts || {})[s.gold] || {};  // each judge's verdict: "right by A, wrong by B"
    if (s.right && !(verdicts[s.right] && verdicts[s.right].correct === true)) return false;
    if (s.wrong && !(verdicts[s.wrong] && verdicts[s.wrong].correct === false)) return false;
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

  function visibleRows(rows, s) {
    const keyed = rows.filter((r) => matches(r, s)).map((r, i) => [sortValue(r, s.sort, s.gold), i, r]);
    keyed.sort((a, b) => compare(a[0], b[0], s.desc) || a[1] - b[1]);
    return keyed.map((k) => k[2]);
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
        " · BLEU-1 " + fmt(s.bleu1, 2) + " · evidence recall " +
        (s.evidence_recall === null && s.trace && s.trace.retrieved ? "not measured" : fmt(s.evidence_recall, 2)) +
        (s.trace && s.trace.retrieved ? " · retrieved memories traced: " + s.trace.turn_ids + " by turn id, " +
          s.trace.text + " by text, " + s.trace.none + " not placed" : "") +
        " · answer in context " + (s.answer_in_context === null ? "–" : s.answer_in_context ? "yes" : "no") +
        " · " + outcomeOf(s) + " (" + s.basis + ")");
    }
    add("evidence", (state.gold === "audited" ? row.evidence_audited : row.evidence).join(", ") || "none listed");
    const verdicts = (row.verdicts || {})[state.gold] || {};
    for (const [name, v] of Object.entries(verdicts)) {
      add("judge: " + name, (v.correct ? "right" : "wrong") + (v.reason ? " — " + v.reason : ""));
    }
    box.append(facts);
    for (const g of data.gold_keys) {
      for (const j of row.judgements[g] || []) box.append(...window.locomoUI.judgement(j, g));
    }
    box.append(...window.locomoUI.context(row.retrieved, data.memories,
      state.gold === "audited" ? row.evidence_audited : row.evidence, data.turns, row.sample_id));
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
  if (document.getElementById("f-right")) {
    bind("f-right", "change", (t) => { state.right = t.value; });
    bind("f-wrong", "change", (t) => { state.wrong = t.value; });
  }
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
