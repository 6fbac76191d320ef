// The hit bar (issue: opening a search hit keeps its context). A search result's link opens
// the group page as ?lane=<index>&start=<turn>&q=<query>&mode=<auto|words|literal>[&hit=<k>];
// that lane's header then holds the bar (templates/reviews/group.html#hit-bar), and the lanes
// are a pane under the lane bar so the header and the bar stay in view (group.js sizes it).
// This file walks the rollout's hits, read a page at a time from the rollout-hits JSON
// (reviews/views/hits.py): "hit k of n in this rollout", ▲ / ▼ and the keys n (next) and
// Shift+N (previous), which no other key of the page uses (judge.js: j k 1 2 3 [ ] c s S ?).
//
// Going to a hit: a turn that is not on the page is loaded through the turns partial the
// page already has (htmx, ?start=<turn>; backwards, the 40 turns ending at it), a patch that
// loads on demand likewise; then every match in the hit's turn (patch row, test table) is
// wrapped in <mark> by splitting the page's own text nodes — nothing is parsed as HTML, no
// pattern is built from the query — the match in the hit's field is the current one, and
// group.js lands on it ("gagar:land"). Literal queries match the exact text, case-sensitive;
// words queries their words and prefixes, ignoring case, as whole tokens (letters and digits).
// The address follows the walk (history.replaceState), so a reload opens the same hit.
//
// Readiness: when a hit is shown, the bar has data-hits-ready="<k>/<n>" (k from 1; "0/0" when
// the rollout holds none, "error" when the hits cannot be read or the query is refused); while
// it walks there is no such attribute. Keys pressed while a hit loads are queued in order.
(function () {
  "use strict";
  var MAX_MARKS = 400;  // per text block: a one-letter word marks a page at most this often
  var LETTER = /[\p{L}\p{N}]/u;
  var bar, index, hitsUrl, turnsUrl, perPage, q, mode;
  var hits = {}, total = null, complete = true, query = null, pageSize = 50;
  var wanted = -1, shown = -1, ticket = 0, chain = Promise.resolve(), started = false, queued = [];

  function text(role, value) { var el = bar.querySelector("[data-role=" + role + "]"); if (el) el.textContent = value; }

  function notReady() { delete bar.dataset.hitsReady; }

  function fail(err) {
    text("hit-count", "The hits could not be read");
    text("hit-place", err && err.message ? "(" + err.message + ")" : "");
    bar.dataset.hitsReady = "error";
  }

  // --- reading hits ---------------------------------------------------------------------------
  function fetchPage(extra) {
    var params = new URLSearchParams({ q: q, mode: mode });
    Object.keys(extra).forEach(function (key) { params.set(key, String(extra[key])); });
    return fetch(hitsUrl + "?" + params.toString(), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        return response.json().catch(function () { throw new Error("the server answered " + response.status); })
          .then(function (body) {
            if (!response.ok) throw new Error(body.detail || "the server answered " + response.status);
            return body;
          });
      })
      .then(function (body) {
        total = body.total; complete = body.complete; query = body.query; pageSize = body.limit || pageSize;
        body.hits.forEach(function (hit) { hits[hit.number] = hit; });
        return body;
      });
  }

  function hitAt(k) {
    if (hits[k]) return Promise.resolve(hits[k]);
    return fetchPage({ offset: Math.floor(k / pageSize) * pageSize, limit: pageSize }).then(function () { return hits[k]; });
  }

  // --- marking matches ------------------------------------------------------------------------
  // Lower-cased position for position (a few letters lengthen when lower-cased: they stay).
  function lower(value) {
    var low = value.toLowerCase();
    if (low.length === value.length) return low;
    var out = "";
    for (var i = 0; i < value.length; i++) { var c = value[i], l = c.toLowerCase(); out += l.length === 1 ? l : c; }
    return out;
  }

  // [start, end) of each match in `value`, in order, not overlapping.
  function ranges(value) {
    var found = [];
    if (query.mode === "literal") {
      var needle = query.literal;
      if (!needle) return found;
      for (var at = value.indexOf(needle); at >= 0 && found.length < MAX_MARKS; at = value.indexOf(needle, at + needle.length)) {
        found.push([at, at + needle.length]);
      }
      return found;
    }
    var low = lower(value);
    function boundary(pos) { return pos <= 0 || pos >= low.length || !(LETTER.test(low[pos - 1]) && LETTER.test(low[pos])); }
    function scan(token, prefix) {
      for (var at = low.indexOf(token); at >= 0 && found.length < MAX_MARKS; at = low.indexOf(token, at + 1)) {
        var end = at + token.length;
        if (!boundary(at)) continue;
        if (prefix) { while (end < low.length && LETTER.test(low[end])) end += 1; } else if (!boundary(end)) continue;
        found.push([at, end]);
      }
    }
    query.words.forEach(function (token) { scan(token, false); });
    query.prefixes.forEach(function (token) { scan(token, true); });
    found.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
    var merged = [];
    found.forEach(function (r) {
      var last = merged[merged.length - 1];
      if (last && r[0] < last[1]) last[1] = Math.max(last[1], r[1]); else merged.push([r[0], r[1]]);
    });
    return merged;
  }

  // Wrap every match in `block`'s text in <mark class="hit-mark">; a match across text nodes
  // (pygments' spans, the ⟨U+…⟩ markers) gets one mark per node. The last match goes first, so
  // the text nodes before it keep their offsets.
  function markBlock(block) {
    var walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT), nodes = [], starts = [], all = "", node;
    while ((node = walker.nextNode())) { nodes.push(node); starts.push(all.length); all += node.data; }
    var found = ranges(all);
    for (var r = found.length - 1; r >= 0; r--) {
      for (var n = nodes.length - 1; n >= 0; n--) {
        var a = starts[n], b = a + nodes[n].data.length, from = Math.max(found[r][0], a) - a, to = Math.min(found[r][1], b) - a;
        if (to <= from) continue;
        if (to < nodes[n].data.length) nodes[n].splitText(to);
        var middle = from > 0 ? nodes[n].splitText(from) : nodes[n];
        var mark = document.createElement("mark");
        mark.className = "hit-mark";
        middle.parentNode.replaceChild(mark, middle);
        mark.appendChild(middle);
      }
    }
  }

  function unmark() {
    document.querySelectorAll("mark.hit-mark").forEach(function (mark) {
      var parent = mark.parentNode;
      while (mark.firstChild) parent.insertBefore(mark.firstChild, mark);
      parent.removeChild(mark);
      parent.normalize();
    });
    document.querySelectorAll(".hit-current").forEach(function (el) { el.classList.remove("hit-current"); });
  }

  // The match to land on inside `field`: the first one on screen, else the first one inside a
  // closed <details> (a thought, a folded output), which is opened.
  function pickCurrent(field) {
    var marks = Array.prototype.slice.call(field.querySelectorAll("mark.hit-mark"));
    var seen = marks.filter(function (m) { return m.getClientRects().length > 0; })[0];
    if (seen) return seen;
    for (var i = 0; i < marks.length; i++) {
      for (var d = marks[i].closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) d.open = true;
      if (marks[i].getClientRects().length > 0) return marks[i];
    }
    return marks[0] || null;
  }

  // --- where a hit is on the page, loading it when it is not --------------------------------
  function load(url, target) {
    return htmx.ajax("GET", url, { target: target, swap: "innerHTML" });
  }

  function turnPlace(hit, backward) {
    var id = "turn-" + index + "-" + hit.turn;
    var ready = document.getElementById(id) ? Promise.resolve()
      : load(turnsUrl + "?start=" + (backward ? Math.max(0, hit.turn - perPage + 1) : hit.turn), "#turns-" + index);
    return ready.then(function () {
      var turn = document.getElementById(id);
      if (!turn) return { scope: document.getElementById("turns-" + index), blocks: "pre" };
      return { scope: turn, field: turn.querySelector("[data-field=" + hit.field + "]"), blocks: "pre", turn: turn };
    });
  }

  function patchTarget(hit, box) {
    if (hit.anchor) return document.getElementById(hit.anchor);
    var codes = box ? box.querySelectorAll("details.file > summary code") : [];
    for (var i = 0; i < codes.length; i++) if (codes[i].textContent === hit.path) return codes[i].closest("summary");
    return null;
  }

  function patchPlace(hit) {
    var box = document.getElementById("diff-" + index), found = patchTarget(hit, box);
    var more = !found && box && box.querySelector("button.expand[hx-get]");
    var ready = more ? load(more.getAttribute("hx-get"), "#diff-" + index) : Promise.resolve();
    return ready.then(function () {
      box = document.getElementById("diff-" + index);
      var target = patchTarget(hit, box);
      if (!target) return { scope: box, blocks: "td.code" };
      return { scope: target, blocks: hit.anchor ? "td.code" : "code" };
    });
  }

  function testPlace() {
    var tests = document.getElementById("tests-" + index);
    if (tests && tests.tagName === "DETAILS") tests.open = true;
    return Promise.resolve({ scope: tests, blocks: "code" });
  }

  function place(hit, backward) {
    if (hit.where === "turn") return turnPlace(hit, backward);
    if (hit.where === "patch") return patchPlace(hit);
    return testPlace();
  }

  // --- showing one hit ----------------------------------------------------------------------------
  function describe(hit) {
    if (hit.where === "turn") return "turn " + hit.turn + " · " + hit.label;
    if (hit.where === "patch") return hit.path + (hit.line ? ":" + hit.line : "") + " · " + hit.label;
    return hit.label;
  }

  function follow(hit, k) {
    var url = new URL(window.location.href), start = hit.where === "turn" ? hit.turn : (url.searchParams.get("start") || 0);
    url.searchParams.set("lane", String(index));
    url.searchParams.set("start", String(start));
    url.searchParams.set("q", q);
    url.searchParams.set("mode", mode);
    url.searchParams.set("hit", String(k));
    url.hash = hit.where === "turn" ? "turn-" + index + "-" + hit.turn : hit.anchor || (hit.where === "test" ? "tests-" + index : "diff-" + index);
    history.replaceState(null, "", url.pathname + url.search + url.hash);
    var close = bar.querySelector("[data-role=hit-close]");
    if (close) {
      var plain = new URL(url.href);
      ["q", "mode", "hit"].forEach(function (name) { plain.searchParams.delete(name); });
      close.href = plain.pathname + plain.search + plain.hash;
    }
  }

  function show(k, hit, where) {
    unmark();
    var scope = where.scope;
    if (scope) scope.querySelectorAll(where.blocks).forEach(markBlock);
    var field = where.field || scope;
    var current = field ? pickCurrent(field) : null;
    if (current) {
      current.classList.add("current");
      current.setAttribute("aria-current", "true");
    }
    if (where.turn) where.turn.classList.add("hit-current");
    shown = k;
    text("hit-count", "hit " + (k + 1) + " of " + total + (complete ? "" : "+") + " in this rollout");
    text("hit-place", describe(hit) + (current ? "" : " — the match is past the part of it shown here"));
    bar.querySelector("[data-action=hit-prev]").disabled = k <= 0;
    bar.querySelector("[data-action=hit-next]").disabled = k >= total - 1;
    follow(hit, k);
    var target = current || field;
    if (target) target.dispatchEvent(new CustomEvent("gagar:land", { bubbles: true }));
    bar.dataset.hitsReady = (k + 1) + "/" + total;
  }

  function go(k, backward, mine) {
    return hitAt(k).then(function (hit) {
      if (mine !== ticket) return null;
      if (!hit) throw new Error("hit " + (k + 1) + " is not there any more");
      return place(hit, backward).then(function (where) { if (mine === ticket) show(k, hit, where); });
    });
  }

  // Walks are queued: each waits for the one before (a turn being loaded); only the last one
  // asked for is shown, the ones it overtook are skipped.
  function walk(k) {
    if (total === null || !total) return;
    k = Math.max(0, Math.min(total - 1, k));
    if (k === wanted) return;
    var backward = k < wanted, mine = ++ticket;
    wanted = k;
    notReady();
    chain = chain.then(function () { return mine === ticket ? go(k, backward, mine) : null; })
      .catch(function (err) { if (mine === ticket) { wanted = shown; fail(err); } });
  }

  function step(delta) {
    if (!started) { queued.push(delta); return; }
    walk(wanted + delta);
  }

  function typing(target) {
    var tag = (target.tagName || "").toLowerCase();
    return tag === "textarea" || tag === "select" || (tag === "input" && target.type !== "radio" && target.type !== "checkbox")
      || !!target.isContentEditable;
  }

  function onKey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target) || document.querySelector("dialog[open]")) return;
    if (e.key === "n" && !e.shiftKey) { e.preventDefault(); step(1); } else if (e.key === "N") { e.preventDefault(); step(-1); }
  }

  function begin() {
    var hit = bar.dataset.hit, first;
    if (hit !== undefined) {
      var k = Number(hit);
      first = fetchPage({ offset: Math.floor(k / pageSize) * pageSize, limit: pageSize }).then(function () { return k; });
    } else {
      first = fetchPage({ turn: bar.dataset.start || 0, limit: pageSize }).then(function (body) { return body.at === null ? 0 : body.at; });
    }
    first.then(function (k) {
      if (!total) {
        text("hit-count", "No hit of this search in this rollout");
        text("hit-place", complete ? "" : "(in the part read)");
        bar.dataset.hitsReady = "0/0";
        return;
      }
      walk(k);
      started = true;
      queued.splice(0).forEach(step);
    }).catch(fail);
  }

  function init() {
    bar = document.querySelector("[data-hit-bar]");
    if (!bar) return;
    if (bar.dataset.hitsReady === "error") { bar.dispatchEvent(new CustomEvent("gagar:land", { bubbles: true })); return; }  // say why
    index = bar.dataset.lane;
    hitsUrl = bar.dataset.hitsUrl;
    turnsUrl = bar.dataset.turnsUrl;
    perPage = Number(bar.dataset.turnsPerPage) || 40;
    q = bar.dataset.q;
    mode = bar.dataset.mode;
    bar.querySelector("[data-action=hit-prev]").addEventListener("click", function () { step(-1); });
    bar.querySelector("[data-action=hit-next]").addEventListener("click", function () { step(1); });
    document.addEventListener("keydown", onKey);
    begin();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
