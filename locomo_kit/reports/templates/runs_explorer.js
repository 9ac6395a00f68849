// The question explorer across runs (compare and leaderboard pages): one row per question, a column group per
// run. Its data (locomo_kit/reports/question_table.py) is embedded gzip-compressed and base64-encoded in
// #runs-data and decoded here with the browser's DecompressionStream. Shared pieces: ui.js.
(function () {
  "use strict";
  const { fmt, el, compareKeys } = window.locomoUI;
  const started = performance.now();

  async function decode(node) {
    const text = atob(node.textContent.trim());
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  function explorer(data) {
    const runs = data.runs;
    const state = { category: "", right: "", wrong: "", across: "", why: "", gold: data.gold_keys[0] || "original",
                    changedOnly: false, text: "", sort: "index", desc: false, open: new Set() };
    const outcomeOf = (q, i, gold) => { const c = q.cells[i]; return c ? c.outcome[gold] : null; };
    const goldOf = (q, gold) => (gold === "audited" && q.gold_changed ? q.gold_audited : q.gold);
    const rightCount = (q, gold) => q.cells.reduce((n, c, i) => n + (c && outcomeOf(q, i, gold).correct ? 1 : 0), 0);
    const hay = new Map();

    function haystack(q) {
      if (!hay.has(q)) {
        const parts = [q.question, q.gold, q.gold_audited, q.sample_id + " q" + q.question_index];
        for (const c of q.cells) if (c) parts.push(c.prediction, ...c.retrieved.map((r) => data.memories[r.m].content));
        hay.set(q, parts.join("\n").toLowerCase());
      }
      return hay.get(q);
    }

    function matches(q, s) {
      if (s.category && String(q.category) !== s.category) return false;
      if (s.changedOnly && !q.gold_changed) return false;
      if (s.right !== "") { const o = outcomeOf(q, +s.right, s.gold); if (!o || !o.correct) return false; }
      if (s.wrong !== "") { const o = outcomeOf(q, +s.wrong, s.gold); if (!o || o.correct) return false; }
      if (s.across) {
        const answered = q.cells.map((c, i) => (c ? outcomeOf(q, i, s.gold) : null));
        const known = answered.filter((o) => o);
        if (!known.length) return false;
        if (s.across === "wrong-all" && known.some((o) => o.correct)) return false;
        if (s.across === "right-all" && known.some((o) => !o.correct)) return false;
        if (s.across.startsWith("only:")) {
          const x = +s.across.slice(5);
          if (!answered[x] || !answered[x].correct) return false;
          if (answered.some((o, i) => i !== x && o && o.correct)) return false;
        }
      }
      if (s.why) {
        const [reason, i] = s.why.split(":");
        const o = outcomeOf(q, +i, s.gold);
        if (!o || o.failure !== reason) return false;
      }
      return !s.text || haystack(q).includes(s.text.toLowerCase());
    }

    function sortValue(q, key, gold) {
      if (key === "category") return [q.category, q.sample_id, q.question_index];
      if (key === "right") return [rightCount(q, gold), q.sample_id, q.question_index];
      return [q.sample_id, q.question_index];
    }

    function visibleRows(questions, s) {
      const keyed = questions.filter((q) => matches(q, s)).map((q, i) => [sortValue(q, s.sort, s.gold), i, q]);
      keyed.sort((a, b) => compareKeys(a[0], b[0], s.desc) || a[1] - b[1]);
      return keyed.map((k) => k[2]);
    }

    function reachedMark(o) {
      if (o.reached === null || o.reached === undefined) return ["–", "no evidence turns listed"];
      if (o.reached >= 1) return ["●", "all evidence reached the context"];
      if (o.reached > 0) return ["◐", "some evidence reached the context (" + fmt(100 * o.reached, 0) + "%)"];
      return ["○", "no evidence reached the context"];
    }

    function runCells(q) {
      const out = [];
      q.cells.forEach((c, i) => {
        const o = c && c.outcome[state.gold];
        if (!o) { out.push(el("td", { class: "num na", title: runs[i].name + ": not answered" }, "·"), el("td", { class: "num na" }, "")); return; }
        const why = o.correct ? "right" : o.failure === "memory" ? "wrong: the memory lost it"
          : o.failure === "answerer" ? "wrong: the answerer missed it" : "wrong";
        const [mark, title] = reachedMark(o);
        out.push(el("td", { class: "num mark " + (o.correct ? "ok" : "bad"), title: runs[i].name + ": " + why }, o.correct ? "✓" : "✗"),
          el("td", { class: "num mark", title: runs[i].name + ": " + title }, mark));
      });
      return out;
    }

    function runDetail(q, i) {
      const c = q.cells[i];
      const box = el("div", { class: "run-detail" }, el("h4", { class: "run-name", title: runs[i].run_id }, runs[i].name));
      if (!c) { box.append(el("p", {}, "This run did not answer this question.")); return box; }
      const facts = el("dl");
      const add = (k, v) => facts.append(el("dt", {}, k), el("dd", {}, v));
      add("answer", c.prediction === null ? "–" : c.prediction);
      for (const g of data.gold_keys) {
        const s = c.scores[g], o = c.outcome[g];
        if (!s || !o) continue;
        add(g + " key", (o.correct ? "right" : o.failure === "memory" ? "wrong: the memory lost it"
          : o.failure === "answerer" ? "wrong: the answerer missed it" : "wrong") + " · official F1 " + fmt(s.locomo_f1, 2) +
          " · Mem0 F1 " + fmt(s.mem0_f1, 2) + " · BLEU-1 " + fmt(s.bleu1, 2) + " · evidence recall " +
          fmt(s.evidence_recall, 2) + " · answer in context " +
          (s.answer_in_context === null || s.answer_in_context === undefined ? "–" : s.answer_in_context ? "yes" : "no"));
      }
      add("search", fmt(c.search_ms, 1) + " ms · " + fmt(c.context_tokens, 0) + " context tokens");
      box.append(facts);
      for (const g of data.gold_keys) for (const j of c.judgements[g] || []) if (j) box.append(...window.locomoUI.judgement(j, g));
      box.append(...window.locomoUI.context(c.retrieved, data.memories,
        state.gold === "audited" ? q.evidence_audited : q.evidence, data.turns, q.sample_id));
      return box;
    }

    function detail(q) {
      const box = el("div", { class: "detail" }, el("p", { class: "q" }, q.question));
      const facts = el("dl");
      const add = (k, v) => facts.append(el("dt", {}, k), el("dd", {}, v));
      add("gold (original)", q.gold === null ? "–" : q.gold);
      add("gold (audited)", q.gold_changed ? q.gold_audited + "  ← changed by the audit (" + q.audit_error + ")"
        : q.audit_error ? "unchanged (the audit corrected its evidence: " + q.audit_error + ")" : "unchanged");
      add("evidence", (state.gold === "audited" ? q.evidence_audited : q.evidence).join(", ") || "none listed");
      box.append(facts);
      const grid = el("div", { class: "runs-grid", style: "grid-template-columns: repeat(" + runs.length + ", minmax(18rem, 1fr))" });
      runs.forEach((r, i) => grid.append(runDetail(q, i)));
      box.append(grid);
      return box;
    }

    function render() {
      const body = document.getElementById("runs-rows");
      const rows = visibleRows(data.questions, state);
      const cols = 5 + 2 * runs.length;
      const frag = document.createDocumentFragment();
      for (const q of rows) {
        const id = q.sample_id + ":" + q.question_index;
        const tr = el("tr", { class: "row", "data-id": id, tabindex: "0" },
          el("td", {}, q.sample_id + " q" + q.question_index), el("td", {}, q.category), el("td", {}, q.question),
          el("td", {}, goldOf(q, state.gold), q.gold_changed ? el("span", { class: "badge", title: "the audit changed this gold answer" }, "audited") : null),
          el("td", { class: "num" }, rightCount(q, state.gold) + "/" + q.cells.filter((c) => c).length), ...runCells(q));
        frag.append(tr);
        if (state.open.has(id)) frag.append(el("tr", { class: "detail-row" }, el("td", { colspan: String(cols) }, detail(q))));
      }
      body.replaceChildren(frag);
      document.getElementById("runs-count").textContent = rows.length + " of " + data.questions.length + " questions";
      for (const th of document.querySelectorAll("#runs-table th[data-sort]")) {
        th.setAttribute("aria-sort", th.dataset.sort === state.sort ? (state.desc ? "descending" : "ascending") : "none");
      }
    }

    document.getElementById("runs-rows").addEventListener("click", (e) => {
      const tr = e.target.closest("tr.row");
      if (!tr) return;
      const id = tr.dataset.id;
      state.open.has(id) ? state.open.delete(id) : state.open.add(id);
      render();
    });
    document.getElementById("runs-rows").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && e.target.matches("tr.row")) e.target.click();
    });
    const bind = (id, event, apply) => document.getElementById(id).addEventListener(event, (e) => { apply(e.target); render(); });
    bind("r-category", "change", (t) => { state.category = t.value; });
    bind("r-right", "change", (t) => { state.right = t.value; });
    bind("r-wrong", "change", (t) => { state.wrong = t.value; });
    bind("r-across", "change", (t) => { state.across = t.value; });
    bind("r-why", "change", (t) => { state.why = t.value; });
    bind("r-gold", "change", (t) => { state.gold = t.value; });
    bind("r-changed", "change", (t) => { state.changedOnly = t.checked; });
    bind("r-text", "input", (t) => { state.text = t.value.trim(); });
    for (const th of document.querySelectorAll("#runs-table th[data-sort]")) {
      th.addEventListener("click", () => {
        state.desc = state.sort === th.dataset.sort ? !state.desc : th.dataset.sort === "right";
        state.sort = th.dataset.sort;
        render();
      });
    }
    render();
    return { data, state, matches, visibleRows, render };
  }

  decode(document.getElementById("runs-data")).then((data) => {
    window.locomoRuns = explorer(data);
    window.locomoRuns.firstRenderMs = performance.now() - started;  // from this script's start
    window.locomoRuns.readyAt = performance.now();  // from the start of navigation
    document.getElementById("questions-across-runs").dataset.ready = "1";
  }).catch((err) => {
    document.getElementById("runs-count").textContent = "the questions could not be decoded: " + err;
    throw err;
  });
})();
