/* lockin-auditor's HTML report: draws the page from the JSON block #audit-data.
   Everything that comes from the data is written with textContent (or as a DOM property), never
   as markup: a snippet or a path is text, whatever it holds. Layout of the data: see
   auditor/report/html_data.py. */
(function () {
  "use strict";

  var PAGE = 200; // finding cards drawn at a time
  var data = JSON.parse(document.getElementById("audit-data").textContent);
  var app = document.getElementById("app");
  var targets = data.targets || [];
  var targetIndex = {};
  targets.forEach(function (t, i) { targetIndex[t] = i; });
  var S = data.strings || [];
  var VERDICTS = { "runs": "runs", "runs-degraded": "degraded", "fails": "fails", "unknown": "unknown" };
  // The targets the overall score averages (format 5 names them), else every target.
  var overallMembers = ((data.overall || {}).members || []).filter(function (t) { return t in targetIndex; });
  if (!overallMembers.length) { overallMembers = targets.slice(); }
  var EFFORTS = { "minutes": "minutes", "hours": "hours", "days": "days", "no equivalent": "none" };
  var SEVERITIES = ["blocker", "major", "minor", "info"];

  function columns(names) {
    var out = {};
    (names || []).forEach(function (n, i) { out[n] = i; });
    return out;
  }
  var F = columns(data.finding_fields), X = columns(data.fix_fields), E = columns(data.edit_fields);

  function str(i) { return i < 0 ? null : S[i]; }

  function decodeFix(row) {
    return {
      applicability: str(row[X.applicability]), message: str(row[X.message]), minTorch: str(row[X.min_torch]),
      reason: str(row[X.reason]),
      edits: row[X.edits].map(function (e) {
        return { line: e[E.line], column: e[E.column], endLine: e[E.end_line], endColumn: e[E.end_column],
                 content: str(e[E.content]) };
      })
    };
  }
  var fixes = (data.fixes || []).map(decodeFix);
  var paths = (data.paths || []).map(function (p) { return p[0] < 0 ? S[p[1]] : S[p[0]] + "/" + S[p[1]]; });
  var findings = (data.findings || []).map(function (r, i) {
    var path = paths[r[F.path]];
    return {
      index: i, path: path, line: r[F.line], column: r[F.column], rule: S[r[F.rule]], name: S[r[F.name]],
      category: S[r[F.category]], severity: S[r[F.severity]], message: S[r[F.message]],
      suggestion: S[r[F.suggestion]], snippet: S[r[F.snippet]], context: str(r[F.context]),
      cell: r[F.cell] < 0 ? null : r[F.cell], effects: S[r[F.effects]], fix: r[F.fix] < 0 ? null : fixes[r[F.fix]],
      minTorch: str(r[F.min_torch]), component: r[F.component], lowerPath: path.toLowerCase()
    };
  });

  // ---- DOM helpers: text only -------------------------------------------------------------
  function el(tag, className) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    for (var i = 2; i < arguments.length; i++) { append(node, arguments[i]); }
    return node;
  }
  function append(node, child) {
    if (child === null || child === undefined || child === false) { return; }
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
  function button(className, label, onClick, title) {
    var b = el("button", className, label);
    b.type = "button";
    if (title) { b.title = title; }
    b.addEventListener("click", onClick);
    return b;
  }
  function section(id, heading) {
    var s = el("section", "panel", el("h2", null, heading));
    s.id = id;
    app.appendChild(s);
    return s;
  }
  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }
  function verdictBadge(verdict) {
    if (!verdict) { return el("span", "verdict verdict-none", "no verdict"); }
    return el("span", "verdict verdict-" + (VERDICTS[verdict] || "other"), verdict);
  }
  // A null score is withheld when the run is incomplete (files failed with an internal error).
  function score(value) { return typeof value === "number" ? value.toFixed(1) : (data.incomplete ? "withheld" : "-"); }
  // "core v1 (6 targets)": the set overall averages, by its name when the report gives one.
  function overallSet() {
    var set = data.overall || {};
    var name = set.name ? set.name + (typeof set.version === "number" ? " v" + set.version : "") + " " : "";
    return name + "(" + plural(overallMembers.length, "target") + ")";
  }
  function overallLabel() {
    var label = el("span", "verdict verdict-none", "mean of " + overallSet());
    label.title = overallMembers.join(", ");
    return label;
  }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  function where(path, line) { return line ? path + ":" + line : path; }

  // ---- filters ----------------------------------------------------------------------------
  var state = { target: "", component: "", category: "", severity: "", path: "", limit: PAGE };
  var controls = {};

  // A finding shows under a target when it costs something there (degrades or raises).
  function passes(f, skip) {
    if (state.target && f.effects.charAt(targetIndex[state.target]) === "w") { return false; }
    if (state.component !== "" && f.component !== Number(state.component)) { return false; }
    if (!skip && state.category && f.category !== state.category) { return false; }
    if (!skip && state.severity && f.severity !== state.severity) { return false; }
    if (state.path && f.lowerPath.indexOf(state.path.toLowerCase()) < 0) { return false; }
    return true;
  }

  function setFilter(name, value) {
    state[name] = value;
    state.limit = PAGE;
    if (controls[name]) { controls[name].value = value; }
    update();
  }

  // ---- header -----------------------------------------------------------------------------
  function header() {
    var tool = data.tool || {};
    var summary = data.summary || {};
    var h = el("header", "top", el("h1", null, (tool.name || "lockin-auditor") + (data.plan ? (data.plan.ranking ? ": which target first" : ": migration plan") : ": NVIDIA lock-in")));
    var facts = [plural(summary.files || 0, "file") + " audited", plural(findings.length, "finding") + " reported"];
    if (summary.files_with_findings !== undefined) { facts.push(plural(summary.files_with_findings, "file") + " with findings"); }
    if (data.errors.length) { facts.push(plural(data.errors.length, "file") + " could not be audited"); }
    if (summary.suppressed) { facts.push(summary.suppressed + " suppressed"); }
    if (data.baseline) { facts.push(data.baseline.known + " known from the baseline " + data.baseline.path); }
    if (data.changed_lines) { facts.push(data.changed_lines.hidden + " off the lines changed since " + data.changed_lines.base); }
    h.appendChild(el("p", "facts", facts.join(" \u00b7 ")));
    if (data.incomplete) { h.appendChild(el("p", "withheld", "Scores withheld: " + data.incomplete)); }
    h.appendChild(el("p", "where", "Scanned: ", el("code", null, data.scan_root || data.root || "."),
                     tool.version ? " \u00b7 " + (tool.name || "") + " " + tool.version : null));
    var gate = data.gate;
    if (gate && gate.checks && gate.checks.length) {
      h.appendChild(el("p", gate.passed ? "gate gate-passed" : "gate gate-failed",
                       gate.passed ? "Gate passed" : "Gate failed: " + (gate.reasons || []).join("; ")));
    }
    (data.warnings || []).forEach(function (w) { h.appendChild(el("p", "warning", "Warning: " + w)); });
    app.appendChild(h);
  }

  // ---- chart: verdict and score per target ------------------------------------------------
  var chartRows = {};
  function chart() {
    var s = section("chart", "Verdicts and scores per target");
    s.appendChild(el("p", "hint", "Bar: portability score (0-100, higher is better), coloured by the verdict: would the " +
                     "code run there as it is? Pick a target to see only what costs something there."));
    var list = el("div", "chart");
    targets.concat(["overall"]).forEach(function (t) {
      var value = (data.scores || {})[t];
      var verdict = t === "overall" ? null : ((data.verdicts || {})[t] || {}).verdict;
      var bar = el("div", "bar verdict-" + (t === "overall" ? "overall" : (VERDICTS[verdict] || "other")));
      bar.style.width = Math.max(0, Math.min(100, value || 0)) + "%";
      var grade = (data.grades || {})[t];
      var label = t === "overall"
        ? el("span", "target-label", "overall")
        : button("target-label", t, function () { setFilter("target", state.target === t ? "" : t); }, "Show findings that cost something on " + t);
      var row = el("div", "chart-row", label, el("div", "bar-track", bar),
                   el("span", "score", score(value) + (grade ? " (" + grade + ")" : "")),
                   t === "overall" ? overallLabel() : verdictBadge(verdict));
      row.dataset.target = t;
      list.appendChild(row);
      if (t !== "overall") {
        chartRows[t] = row;
        var reasons = ((data.verdicts || {})[t] || {}).reasons || [];
        var costs = ((data.costs || {})[t] || []).slice(0, 3);
        if (reasons.length || costs.length) {
          var details = el("details", "why", el("summary", null, "Why " + (verdict || "") + " on " + t));
          if (reasons.length) {
            details.appendChild(el("ul", "reasons", reasons.map(function (r) {
              // a reason without a rule is a file that was not checked (verdict unknown)
              return el("li", null, r.rule ? [el("code", null, r.rule), " "] : null, r.why, " ",
                        el("span", "loc", where(r.path, r.line)));
            })));
          }
          if (costs.length) {
            details.appendChild(el("p", "costs", "Costs the most: ", costs.map(function (c, i) {
              return [i ? ", " : "", el("code", null, c.rule), " " + c.name + " \u00d7" + c.count + " (\u2212" + c.points + ")"];
            })));
          }
          list.appendChild(details);
        }
      }
    });
    s.appendChild(list);
  }

  // ---- components -------------------------------------------------------------------------
  function components() {
    if (!data.components) { return; }
    var s = section("components", "Components");
    if (!data.components.length) { s.appendChild(el("p", "empty", "The report lists no components.")); return; }
    var head = el("tr", null, el("th", null, "component"), el("th", null, "kind"), el("th", null, "paths"),
                  targets.map(function (t) { return el("th", null, t); }));
    var body = data.components.map(function (c, i) {
      var row = el("tr", "component",
        el("td", null, button("link", c.name || "(unnamed)", function () {
          setFilter("component", state.component === String(i) ? "" : String(i));
        }, "Show only this component's findings")),
        el("td", null, c.kind), el("td", "paths", c.paths.map(function (p, k) { return [k ? ", " : "", el("code", null, p)]; })),
        targets.map(function (t) {
          return el("td", "cell", verdictBadge(c.verdicts[t]), el("span", "score", score(c.scores[t])));
        }));
      row.dataset.component = String(i);
      return row;
    });
    s.appendChild(el("div", "scroll", el("table", "components", el("thead", null, head), el("tbody", null, body))));
  }

  // ---- plan -------------------------------------------------------------------------------
  // No effort in the plan (capacity questions, a way back) is no badge, as the markdown has it.
  function effortBadge(effort) {
    return el("span", "effort effort-" + (EFFORTS[effort] || "other"), effort);
  }
  function pathLink(path, line, title) {
    return button("link loc", where(path, line), function () { setFilter("path", path); }, title || "Show the findings in this file");
  }
  // The report's component of that name, as the component filter numbers them (-1: none).
  function componentNumber(name) {
    var found = -1;
    (data.components || []).forEach(function (c, i) { if (found < 0 && c.name === name) { found = i; } });
    return found;
  }
  function componentLink(name) {
    var i = componentNumber(name);
    if (i < 0) { return el("span", "part", name); }
    return button("link part", name, function () { setFilter("component", String(i)); }, "Show only this component's findings");
  }
  function textList(className, texts) {
    return el("ul", className, (texts || []).map(function (t) { return el("li", null, t); }));
  }
  // The answer first: the verdict and score on the target, the estimate after --fix, what blocks it,
  // the same per component, and what the plan could not see.
  function planHeadline(p) {
    var head = p.headline || {}, after = p.after_fixes || {};
    var box = el("div", "plan-headline");
    box.id = "plan-headline";
    box.appendChild(el("p", "answer", verdictBadge(head.verdict), " ", el("strong", "score", score(head.score)),
      " on " + p.target + "; after audit --fix about " + score(after.score) + " (an estimate: " +
      plural(after.fixed || 0, "finding") + " rewritten). " + (head.summary || "")));
    var blockers = head.blockers || [];
    if (blockers.length) {
      box.appendChild(el("p", "lead", "What blocks it:"));
      box.appendChild(el("ul", "reasons", blockers.map(function (b) {
        return el("li", null, b.rule ? [el("code", null, b.rule), " "] : null, b.why, " ", pathLink(b.path, b.line));
      })));
    }
    var parts = head.components || [];
    if (parts.length > 1) {
      box.appendChild(el("p", "lead", "By component (the headline judges what ships; the others are judged on their own):"));
      box.appendChild(el("div", "scroll", el("table", "plan-components",
        el("thead", null, el("tr", null, el("th", null, "component"), el("th", null, "kind"),
                             el("th", null, "verdict on " + p.target), el("th", null, "score"), el("th", null, "what blocks it first"))),
        el("tbody", null, parts.map(function (c) {
          var first = (c.blockers || [])[0];
          var row = el("tr", "plan-component", el("td", null, componentLink(c.name), c.shipped ? el("span", "ships", " ships") : null),
            el("td", null, c.kind), el("td", null, verdictBadge(c.verdict)), el("td", "num", score(c.score)),
            el("td", null, first ? [first.why, " ", pathLink(first.path, first.line),
                                    c.blockers.length > 1 ? " (+" + (c.blockers.length - 1) + " more)" : null] : "nothing"));
          row.dataset.component = c.name;
          return row;
        })))));
    }
    var unseen = el("div", "unseen", el("p", "lead", "What this plan could not see:"), textList("unseen-list", p.unseen));
    unseen.id = "plan-unseen";
    box.appendChild(unseen);
    return box;
  }
  function planItem(item) {
    var parts = item.components || [];
    return el("li", "item" + (item.optional ? " optional" : ""), item.effort ? [effortBadge(item.effort), " "] : null, item.text || "",
      item.optional ? [" ", el("span", "optional-tag", "optional")] : null,
      parts.length && (data.components || []).length > 1
        ? el("span", "parts", " in ", parts.map(function (name, k) { return [k ? ", " : "", componentLink(name)]; })) : null,
      item.path ? [" ", pathLink(item.path, item.line)] : null);
  }
  function plan() {
    var p = data.plan;
    if (!p || !p.steps) { return; }
    var s = section("plan", "Plan" + (p.target ? " for " + p.target : ""));
    s.appendChild(planHeadline(p));
    var steps = p.steps || [];
    if (!steps.length) { s.appendChild(el("p", "empty", "The plan has no steps.")); return; }
    s.appendChild(el("ol", "steps", steps.map(function (step) {
      var items = step.items || [];
      return el("li", "step",
        el("div", "step-head", el("strong", null, step.title || ""), step.effort ? [" ", effortBadge(step.effort)] : null),
        step.summary ? el("p", "summary", step.summary) : null,
        step.reason ? el("p", "reason", step.reason) : null,
        items.length ? el("ul", "items", items.map(planItem), step.more
          ? el("li", "more-items", "\u2026 and " + step.more + " more, none larger than these: every finding is in the list " +
               "below (filter it by target, component or path), and --format json lists every item") : null) : null);
    })));
    var after = p.after_fixes || {};
    s.appendChild(el("p", "after", el("strong", null, "After automatic fixes: "), "about " + score(after.score) +
                     " (" + (after.verdict || "?") + ") on " + p.target + ": " + (after.how || "") + " (an estimate)."));
    s.appendChild(el("div", "questions", el("p", "lead", "Questions for you:"), textList("question-list", p.questions)));
  }

  // ---- which target first (audit plan without --target) ------------------------------------
  function ranking() {
    var r = data.plan;
    if (!r || !r.ranking) { return; }
    var s = section("ranking", "Which target first");
    s.appendChild(el("p", "hint", "Ranked by verdict and score, the dependency changes of step 1, the support of the tools " +
                     "in use and the cloud signals found; the host comes last (it is the parity test's reference). " +
                     "Pick a target to see what costs something there."));
    var rows = r.ranking.map(function (row) {
      var tr = el("tr", "rank-row",
        el("td", "num", String(row.rank)),
        el("td", null, button("link target-link", row.display + " (" + row.target + ")", function () {
          setFilter("target", state.target === row.target ? "" : row.target);
        }, "Show the findings that cost something on " + row.target)),
        el("td", null, verdictBadge(row.verdict)), el("td", "num", score(row.score)),
        el("td", "num", String(row.dependencies)), el("td", "num", row.points.toFixed(1)),
        el("td", "why", textList("why-list", row.why)));
      tr.id = "rank-" + row.target;
      tr.dataset.target = row.target;
      return tr;
    });
    s.appendChild(el("div", "scroll", el("table", "ranking",
      el("thead", null, el("tr", null, ["#", "target", "verdict", "score", "dependency changes", "points", "why"].map(function (h) {
        return el("th", null, h);
      }))), el("tbody", null, rows))));
    if ((r.tools || []).length) { s.appendChild(el("p", null, "Tools in use: " + r.tools.join(", ") + ".")); }
    if (r.workload) { s.appendChild(el("p", "workload", r.workload)); }
    if (r.edge) { s.appendChild(el("p", "edge", r.edge)); }
    s.appendChild(el("p", null, "Then: ", el("code", null, "audit plan PATH --target T"), " for the chosen target."));
    var unseen = el("div", "unseen", el("p", "lead", "What this ranking could not see:"), textList("unseen-list", r.unseen));
    unseen.id = "ranking-unseen";
    s.appendChild(unseen);
    s.appendChild(el("div", "questions", el("p", "lead", "Questions for you:"), textList("question-list", r.questions)));
  }

  // The plan page's sections, as in-page links under the header.
  function contents() {
    if (!data.plan) { return; }
    var links = [];
    document.querySelectorAll("section.panel").forEach(function (s) {
      var a = el("a", null, s.querySelector("h2").textContent);
      a.href = "#" + s.id;
      links.push(a);
    });
    var nav = el("nav", "contents", links.map(function (a, i) { return [i ? " \u00b7 " : "", a]; }));
    nav.id = "contents";
    app.insertBefore(nav, app.children[1] || null);
  }

  // ---- category x severity ----------------------------------------------------------------
  var matrixBody;
  function categories() {
    var seen = Object.keys((data.summary || {}).by_category || {});
    findings.forEach(function (f) { if (seen.indexOf(f.category) < 0) { seen.push(f.category); } });
    return seen;
  }
  function severities() {
    var seen = Object.keys((data.summary || {}).by_severity || {});
    if (!seen.length) { seen = SEVERITIES.slice(); }
    findings.forEach(function (f) { if (seen.indexOf(f.severity) < 0) { seen.push(f.severity); } });
    return seen;
  }
  function matrix() {
    var s = section("matrix", "Findings by category and severity");
    s.appendChild(el("p", "hint", "Counts under the target, component and path chosen below; pick a cell to list those findings."));
    matrixBody = el("tbody");
    s.appendChild(el("div", "scroll", el("table", "matrix",
      el("thead", null, el("tr", null, el("th", null, "category"), severities().map(function (v) { return el("th", null, v); }),
                            el("th", null, "all"))), matrixBody)));
  }
  function drawMatrix() {
    clear(matrixBody);
    var sevs = severities(), counts = {}, rows = {}, cols = {}, total = 0;
    findings.forEach(function (f) {
      if (!passes(f, true)) { return; }
      var key = f.category + "\u0000" + f.severity;
      counts[key] = (counts[key] || 0) + 1;
      rows[f.category] = (rows[f.category] || 0) + 1;
      cols[f.severity] = (cols[f.severity] || 0) + 1;
      total += 1;
    });
    function cell(n, category, severity) {
      var chosen = state.category === category && state.severity === severity;
      var b = button(n ? "count" : "count zero", String(n), function () {
        state.category = chosen ? "" : category;
        state.severity = chosen ? "" : severity;
        controls.category.value = state.category;
        controls.severity.value = state.severity;
        state.limit = PAGE;
        update();
      });
      if (chosen) { b.classList.add("chosen"); }
      return el("td", null, b);
    }
    categories().forEach(function (c) {
      matrixBody.appendChild(el("tr", null, el("th", null, c), sevs.map(function (v) { return cell(counts[c + "\u0000" + v] || 0, c, v); }),
                                cell(rows[c] || 0, c, "")));
    });
    matrixBody.appendChild(el("tr", "totals", el("th", null, "all"), sevs.map(function (v) { return cell(cols[v] || 0, "", v); }),
                              cell(total, "", "")));
  }

  // ---- files that cost the most -----------------------------------------------------------
  var filesPanel;
  function files() {
    filesPanel = section("files", "Files that cost the most points");
  }
  function drawFiles() {
    var which = state.target || "overall";
    var list = (data.file_costs || {})[which] || [];
    while (filesPanel.childNodes.length > 1) { filesPanel.removeChild(filesPanel.lastChild); }
    filesPanel.appendChild(el("p", "hint", which === "overall"
      ? "Overall: the mean over " + overallSet() + ": " + overallMembers.join(", ") + ". Points: the share of what a score loses that the file's findings cost (a kernel folder counts as one unit of work)."
      : "On " + which + ". Points: the share of the 100 \u2212 score that the file's findings cost (a kernel folder counts as one unit of work)."));
    if (!list.length) { filesPanel.appendChild(el("p", "empty", "No file costs points here.")); return; }
    filesPanel.appendChild(el("div", "scroll", el("table", "files",
      el("thead", null, el("tr", null, el("th", null, "points"), el("th", null, "findings"), el("th", null, "file"))),
      el("tbody", null, list.map(function (entry) {
        return el("tr", null, el("td", "num", entry.points.toFixed(1)), el("td", "num", String(entry.findings)),
          el("td", null, button("link", entry.path, function () { setFilter("path", entry.path); }, "Show the findings here")));
      })))));
  }

  // ---- errors -----------------------------------------------------------------------------
  function errors() {
    if (!data.errors.length) { return; }
    var s = section("errors", "Files that could not be audited");
    s.appendChild(el("ul", "errors", data.errors.map(function (e) {
      return el("li", null, el("code", null, e.path), " (" + e.kind + "): " + e.message);
    })));
  }

  // ---- findings ---------------------------------------------------------------------------
  var countLine, listNode, moreButton;
  function select(name, label, options) {
    var node = el("select");
    node.id = "filter-" + name;
    options.forEach(function (o) {
      var option = el("option", null, o[1]);
      option.value = o[0];
      node.appendChild(option);
    });
    node.addEventListener("change", function () { setFilter(name, node.value); });
    controls[name] = node;
    var wrap = el("label", "filter", label + " ", node);
    return wrap;
  }
  function findingsPanel() {
    var s = section("findings", "Findings");
    var componentOptions = [["", "all"]];
    if (data.components) {
      data.components.forEach(function (c, i) { componentOptions.push([String(i), c.name || "(unnamed)"]); });
      componentOptions.push(["-1", "(in no component)"]);
    }
    var path = el("input");
    path.id = "filter-path";
    path.type = "search";
    path.placeholder = "part of a path";
    path.addEventListener("input", function () { state.path = path.value; state.limit = PAGE; update(); });
    controls.path = path;
    var bar = el("div", "filters",
      select("target", "Target", [["", "all"]].concat(targets.map(function (t) { return [t, t]; }))),
      data.components ? select("component", "Component", componentOptions) : null,
      select("category", "Category", [["", "all"]].concat(categories().map(function (c) { return [c, c]; }))),
      select("severity", "Severity", [["", "all"]].concat(severities().map(function (v) { return [v, v]; }))),
      el("label", "filter", "Path ", path),
      button("reset", "Clear filters", function () {
        ["target", "component", "category", "severity", "path"].forEach(function (n) {
          state[n] = "";
          if (controls[n]) { controls[n].value = ""; }
        });
        state.limit = PAGE;
        update();
      }));
    countLine = el("p", "count");
    countLine.id = "shown-count";
    listNode = el("div", "finding-list");
    listNode.id = "finding-list";
    moreButton = button("more", "Show more", function () { state.limit += PAGE; update(); });
    s.appendChild(bar);
    s.appendChild(countLine);
    s.appendChild(listNode);
    s.appendChild(moreButton);
  }

  function place(f) {
    return f.path + (f.cell !== null ? ":cell " + f.cell : "") + ":" + f.line + ":" + f.column;
  }
  function fixBlock(fix) {
    var head = el("p", "fix-head", el("span", "applicability applicability-" +
                  ({ safe: "safe", unsafe: "unsafe", display: "display" }[fix.applicability] || "other"),
                  "fix: " + (fix.applicability || "?")), " ", fix.message || "",
                  fix.minTorch ? el("span", "since", " (needs torch \u2265 " + fix.minTorch + ")") : null);
    var edits = el("ul", "edits", fix.edits.map(function (e) {
      var span = "line " + e.line + ":" + e.column + "\u2013" + e.endLine + ":" + e.endColumn;
      return el("li", null, el("span", "span", span), e.content === ""
        ? el("span", "delete", " delete")
        : [" \u2192 ", el("code", "content", e.content)]);
    }));
    return el("div", "fix", head, fix.reason ? el("p", "fix-reason", "Only shown: " + fix.reason) : null, edits);
  }
  function effectsLine(f) {
    var parts = [];
    targets.forEach(function (t, i) {
      var effect = (data.effect_letters || {})[f.effects.charAt(i)] || "?";
      if (effect !== "works") { parts.push(el("span", "effect effect-" + (effect === "raises" ? "raises" : "degrades"), t + ": " + effect)); }
    });
    return parts.length ? el("p", "effects", parts) : el("p", "effects", el("span", "effect effect-works", "works on every target"));
  }
  function card(f) {
    var c = el("article", "finding",
      el("div", "finding-head",
        el("span", "sev sev-" + (SEVERITIES.indexOf(f.severity) >= 0 ? f.severity : "other"), f.severity),
        el("code", "rule", f.rule), el("span", "name", f.name), el("span", "category", f.category),
        f.context ? el("span", "context", f.context) : null,
        el("span", "loc", place(f))),
      el("p", "message", f.message),
      f.snippet ? el("pre", "snippet", el("code", null, f.snippet)) : null,
      f.suggestion ? el("p", "suggestion", el("strong", null, "Rewrite: "), f.suggestion,
                        f.minTorch ? el("span", "since", " (torch \u2265 " + f.minTorch + ")") : null) : null,
      f.fix ? fixBlock(f.fix) : null,
      effectsLine(f));
    c.dataset.index = String(f.index);
    return c;
  }
  function drawFindings() {
    var matching = findings.filter(function (f) { return passes(f, false); });
    var shown = matching.slice(0, state.limit);
    clear(listNode);
    shown.forEach(function (f) { listNode.appendChild(card(f)); });
    countLine.textContent = "Showing " + shown.length + " of " + matching.length + " matching " +
      (matching.length === 1 ? "finding" : "findings") + " (" + findings.length + " in the report)";
    countLine.dataset.matching = String(matching.length);
    moreButton.hidden = shown.length >= matching.length;
  }

  function update() {
    Object.keys(chartRows).forEach(function (t) { chartRows[t].classList.toggle("selected", t === state.target); });
      document.querySelectorAll("tr.rank-row").forEach(function (row) {
      row.classList.toggle("selected", row.dataset.target === state.target);
    });
    document.querySelectorAll("tr.component").forEach(function (row) {
      row.classList.toggle("selected", row.dataset.component === state.component);
    });
    drawMatrix();
    drawFiles();
    drawFindings();
  }

  header();
  ranking();  // a plan's page opens with its answer: the ranking, or the plan and its headline
  plan();
  chart();
  components();
  matrix();
  files();
  errors();
  findingsPanel();
  contents();
  update();
  document.body.dataset.ready = "1";
})();
