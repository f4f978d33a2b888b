// What the live page and the club page draw alike (served at /common.js by web/server.py).
"use strict";
const words = {legal: "LEGAL", foul: "FOUL", referee: "REFEREE'S CALL"};
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
// A verdict line as a list item: "Shot 3: FOUL 19.1 — reason", the line kept in data-line.
function verdictItem(line) {
  const li = el("li", line.verdict);
  li.dataset.line = JSON.stringify(line);
  const rule = line.verdict === "legal" ? (line.satisfied || "") : (line.rules || []).join(", ");
  li.append(el("b", "", `Shot ${line.shot ?? "—"}: ${words[line.verdict] || line.verdict} ${rule}`));
  li.append(document.createTextNode(` — ${line.reason}`));
  return li;
}
// The lamp as the table set it; `base` is the element's own class ("" or "lamp ").
function showLamp(e, l, base) {
  e.className = base + l.state;
  e.textContent = `${l.state}${l.rule ? " " + l.rule : ""}`;
}
