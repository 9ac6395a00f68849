// What the explorers of report.html (explorer.js) and of compare / leaderboard pages (runs_explorer.js)
// share: building elements, number formats, the sort order, and how a judgement and a retrieved context
// are shown. No dependencies; exposed as window.locomoUI.
(function () {
  "use strict";
  // numbers as every page of the kit writes them (locomo_kit/reports/numbers.py): a missing one is "–",
  // thousands separated, a fixed number of digits, zero never "-0.0"
  const fmt = (v, digits) => {
    if (v === null || v === undefined || !Number.isFinite(Number(v))) return "–";
    const text = Number(v).toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
    return /^-[0.,]*$/.test(text) ? text.slice(1) : text;
  };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
    return node;
  }

  function compareKeys(a, b, desc) {  // missing values sort last in either direction
    for (let i = 0; i < a.length; i++) {
      const x = a[i], y = b[i];
      if (x === y) continue;
      const xMissing = x === null || x === undefined, yMissing = y === null || y === undefined;
      if (xMissing || yMissing) return xMissing ? 1 : -1;
      return (x < y ? -1 : 1) * (desc ? -1 : 1);
    }
    return 0;
  }

  function turnText(turns, sampleId, id) {
    const t = turns[sampleId + " " + id];
    return t ? t.speaker + ": " + t.text + (t.image ? " [image: " + t.image + "]" : "") : "(turn not in the dataset)";
  }

  // one judgement (all its runs) as a heading and a list
  function judgement(j, gold) {
    const runs = el("ol", { class: "judge-runs" });
    const verdict = (v) => (v === null ? "no score" : j.protocol === "playbook" ? fmt(v, 0) : v >= 1 ? "CORRECT" : "WRONG");
    for (const r of j.runs) runs.append(el("li", {}, el("b", {}, verdict(r.score)),
      " ", r.error ? "(" + r.error + ") " : "", r.explanation));
    return [el("h4", {}, "Judge " + j.protocol + " (" + j.judge_model + ", " + j.prompt_version + ", " + gold +
      " key): mean " + fmt(j.mean, 2) + " over " + j.n_ok + " of " + j.n_runs + " runs"), runs];
  }

  // the retrieved context in order, evidence turns marked, then the evidence turns that were not retrieved
  function context(retrieved, memories, evidenceIds, turns, sampleId) {
    const evidence = new Set(evidenceIds);
    const mems = el("ol", { class: "memories" });
    for (const r of retrieved) {
      const m = memories[r.m];
      const hit = m.source_turns.some((t) => evidence.has(t));
      mems.append(el("li", { class: hit ? "evidence" : "" }, hit ? el("span", { class: "badge" }, "evidence") : null,
        el("span", { class: "src" }, (m.source_turns.join(", ") || "no turn ids") + " · score " + fmt(r.score, 3)),
        " ", m.content));
    }
    const out = [el("h4", {}, "Retrieved memories, in order (" + retrieved.length + ")"), mems];
    const missed = [...evidence].filter((id) => !retrieved.some((r) => memories[r.m].source_turns.includes(id)));
    if (missed.length) {
      const list = el("ul", { class: "missed" });
      for (const id of missed) list.append(el("li", {}, id + ": " + turnText(turns, sampleId, id)));
      out.push(el("h4", {}, "Evidence turns not retrieved"), list);
    }
    return out;
  }

  window.locomoUI = { fmt, el, compareKeys, turnText, judgement, context };
})();
