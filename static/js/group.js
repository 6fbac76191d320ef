// The group page's lanes: the overview table (sort, a row goes to its lane), the
// layout switch (all lanes / two pinned lanes / one at a time, remembered in localStorage),
// prev/next lane buttons and a scrollbar above the lanes, collapsing failing lanes, landing
// on an evidence link or a turn with its header in view, and marking search matches in a
// rollout's turns. No inline script (CSP); without this file the page still works: rows are
// plain links to the lanes and every lane shows.
//
// Readiness: once bound, <body data-group-ready="true"> (tests wait for it).
// With static/js/judge.js: going to a lane fires "gagar:focus-lane" on it (judge.js makes it
// the current lane); judge.js fires "gagar:lane-current" on a lane it made current (j / k),
// which in the one-at-a-time layout shows that lane.
// Search hits (static/js/hits.js): with the hit bar the lanes are a pane under the lane bar
// (.lanes.hit-pane, sized here), and "gagar:land" fired on an element lands on it as an
// evidence link does: its lane shown, then scrolled into view below the lane's sticky header.
(function () {
  "use strict";
  var LAYOUT_KEY = "gagar.group.layout", COLLAPSE_KEY = "gagar.group.collapseFailing";
  var strip, bar, lanes = [], pins = [], shown = 0;

  function remember(key, value) { try { window.localStorage.setItem(key, value); } catch { /* storage off */ } }
  function recall(key) { try { return window.localStorage.getItem(key); } catch { return null; } }

  function layout() { return strip.dataset.layout || "all"; }
  function laneOf(index) { return document.getElementById("rollout-" + index); }

  function barHeight() { return bar ? bar.getBoundingClientRect().height : 0; }

  // --- layouts ---------------------------------------------------------------------------
  function setLayout(name) {
    if (["all", "compare", "one"].indexOf(name) < 0) name = "all";
    strip.dataset.layout = name;
    document.querySelectorAll("[data-layout]").forEach(function (button) {
      if (button === strip) return;
      var on = button.dataset.layout === name;
      button.classList.toggle("active", on);
      button.setAttribute("aria-pressed", on ? "true" : "false");
    });
    remember(LAYOUT_KEY, name);
    render();
  }

  function pin(lane) {
    var i = lanes.indexOf(lane);
    if (i < 0 || pins.indexOf(i) >= 0) return;
    pins.push(i);
    while (pins.length > 2) pins.shift();  // the oldest pin gives way
    render();
  }

  function togglePin(lane) {
    var i = lanes.indexOf(lane), at = pins.indexOf(i);
    if (at >= 0 && pins.length > 1) { pins.splice(at, 1); render(); } else pin(lane);
  }

  function render() {
    var name = layout();
    lanes.forEach(function (lane, n) {
      var pinned = pins.indexOf(n) >= 0;
      lane.classList.toggle("pinned", pinned);
      lane.classList.toggle("shown", n === shown);
      var button = lane.querySelector("[data-action=pin]");
      if (button) { button.setAttribute("aria-pressed", pinned ? "true" : "false"); button.textContent = pinned ? "pinned" : "pin"; }
    });
    var where = bar && bar.querySelector("[data-role=lane-where]");
    if (where) {
      if (name === "one" && lanes.length) where.textContent = "lane " + (shown + 1) + " of " + lanes.length + " (" + lanes[shown].dataset.name + ")";
      else if (name === "compare") where.textContent = pins.map(function (n) { return lanes[n].dataset.name; }).join(" vs ");
      else where.textContent = lanes.length + " lane" + (lanes.length === 1 ? "" : "s");
    }
    sizeScroller();
  }

  // Make a lane visible in the current layout (showing it, pinning it, expanding it).
  function reveal(lane) {
    var n = lanes.indexOf(lane);
    if (n < 0) return;
    lane.classList.remove("collapsed");
    var toggle = lane.querySelector("[data-action=collapse]");
    if (toggle) { toggle.setAttribute("aria-expanded", "true"); toggle.textContent = "collapse"; }
    if (layout() === "one") shown = n;
    else if (layout() === "compare") pin(lane);
    render();
  }

  function goToLane(lane) {
    if (!lane) return;
    reveal(lane);
    lane.dispatchEvent(new CustomEvent("gagar:focus-lane"));
    lane.scrollIntoView({ block: "start", inline: "nearest" });
    history.replaceState(null, "", "#" + lane.id);
  }

  function step(delta) {
    if (!lanes.length) return;
    var name = layout();
    if (name === "one") { shown = (shown + delta + lanes.length) % lanes.length; render(); goToLane(lanes[shown]); return; }
    if (name === "compare") {
      var last = pins.length ? pins[pins.length - 1] : 0, next = last, guard = lanes.length;
      do { next = (next + delta + lanes.length) % lanes.length; } while (pins.indexOf(next) >= 0 && --guard > 0);
      pins[pins.length ? pins.length - 1 : 0] = next;
      render();
      return;
    }
    // All lanes: scroll the strip so the next (previous) lane starts at its left edge.
    var left = strip.getBoundingClientRect().left, target = null;
    var visible = lanes.filter(function (lane) { return lane.offsetParent !== null; });
    visible.forEach(function (lane) {
      var x = lane.getBoundingClientRect().left - left;
      if (delta > 0 && x > 2 && target === null) target = lane;
      if (delta < 0 && x < -2) target = lane;
    });
    if (target) strip.scrollLeft += target.getBoundingClientRect().left - left;
  }

  // --- the scrollbar above the lanes -------------------------------------------------------
  var scroller;
  function sizeScroller() {
    if (!scroller) return;
    // The same scroll range as the strip, so one scrollLeft means the same place in both.
    scroller.firstElementChild.style.width = (strip.scrollWidth - strip.clientWidth + scroller.clientWidth) + "px";
    scroller.hidden = strip.scrollWidth <= strip.clientWidth + 1;
    move(scroller, strip.scrollLeft);
  }
  // Setting scrollLeft fires a scroll event later; `echo` remembers the value set, so that
  // event is not sent back (a person scrolling meanwhile makes it differ, and wins).
  function move(el, left) {
    if (Math.abs(el.scrollLeft - left) < 1) return;
    el.scrollLeft = left;
    el.echo = el.scrollLeft;
  }
  function follow(from, to) {
    return function () {
      if (from.echo !== undefined && Math.abs(from.scrollLeft - from.echo) < 1) { from.echo = undefined; return; }
      from.echo = undefined;
      move(to, from.scrollLeft);
    };
  }
  function bindScroller() {
    scroller = bar && bar.querySelector("[data-role=top-scroller]");
    if (!scroller) return;
    scroller.addEventListener("scroll", follow(scroller, strip));
    strip.addEventListener("scroll", follow(strip, scroller));
    if (window.ResizeObserver) {
      var observer = new ResizeObserver(sizeScroller);
      observer.observe(strip);
      lanes.forEach(function (lane) { observer.observe(lane); });
    }
    window.addEventListener("resize", sizeScroller);
  }

  function bindPane() {
    if (!strip.classList.contains("hit-pane")) return;
    sizePane();
    window.addEventListener("resize", sizePane);
    if (window.ResizeObserver) {
      var observer = new ResizeObserver(sizePane);
      if (bar) observer.observe(bar);
      var judging = document.getElementById("judgment-form");
      if (judging) observer.observe(judging);
    }
  }

  // --- failing lanes -------------------------------------------------------------------------
  function collapse(lane, on) {
    lane.classList.toggle("collapsed", on);
    var toggle = lane.querySelector("[data-action=collapse]");
    if (toggle) { toggle.setAttribute("aria-expanded", on ? "false" : "true"); toggle.textContent = on ? "expand" : "collapse"; }
  }
  function collapseFailing(on) {
    lanes.forEach(function (lane) { if (lane.classList.contains("fail")) collapse(lane, on); });
    var button = bar && bar.querySelector("[data-action=collapse-failing]");
    if (button) {
      button.setAttribute("aria-pressed", on ? "true" : "false");
      button.classList.toggle("active", on);
    }
    remember(COLLAPSE_KEY, on ? "1" : "0");
    sizeScroller();
  }

  // --- the overview --------------------------------------------------------------------------
  function sortBy(table, key, button) {
    var th = button.closest("th"), ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    function value(row) {
      var raw = row.dataset[key];
      if (raw === undefined || raw === "") return null;  // unknown values sort last either way
      var number = Number(raw);
      return isNaN(number) ? raw : number;
    }
    rows.sort(function (a, b) {
      var x = value(a), y = value(b);
      if (x === null || y === null) return (x === null) - (y === null) || Number(a.dataset.order) - Number(b.dataset.order);
      var c = x < y ? -1 : x > y ? 1 : 0;
      return (ascending ? c : -c) || Number(a.dataset.order) - Number(b.dataset.order);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  function bindOverview() {
    var table = document.querySelector("[data-testid=overview-table]");
    if (!table) return;
    table.querySelectorAll("[data-sort]").forEach(function (button) {
      button.addEventListener("click", function () { sortBy(table, button.dataset.sort, button); });
    });
    table.querySelector("th [data-sort=order]").closest("th").setAttribute("aria-sort", "ascending");
    table.addEventListener("click", function (e) {
      var row = e.target.closest("tr[data-lane]");
      if (!row || e.ctrlKey || e.metaKey || e.shiftKey || e.button) return;
      e.preventDefault();
      var lane = laneOf(row.dataset.lane);
      if (lane) goToLane(lane);
      else window.location.href = "?only=all#rollout-" + row.dataset.lane;  // filtered out (?only=): show all
    });
  }

  // --- landing: evidence links, jumps to a turn, search matches ------------------------------
  function land(target) {
    if (!target) return;
    var lane = target.closest(".lane");
    if (lane) reveal(lane);
    var file = target.closest("details.file");
    // Every fold around it opens: its file, and "+N extra files" for a scratch file's line.
    for (var fold = target.closest("details"); fold; fold = fold.parentElement && fold.parentElement.closest("details")) fold.open = true;
    document.querySelectorAll(".landed").forEach(function (el) { el.classList.remove("landed"); });
    target.classList.add("landed");
    if (lane && strip.classList.contains("hit-pane")) { paneScroll(target, lane); return; }
    target.scrollIntoView({ block: "start", inline: "nearest" });  // scroll-margin keeps it below the bar
    if (file) {
      // The file's header too, when it fits on the screen with the line.
      var head = file.querySelector("summary").getBoundingClientRect(), row = target.getBoundingClientRect();
      var top = barHeight() + 4;
      if (head.top < top && row.bottom - head.top < window.innerHeight - top) window.scrollBy(0, head.top - top);
    }
  }

  // --- the pane of a search's hits ----------------------------------------------------------
  function sizePane() {
    if (!strip.classList.contains("hit-pane")) return;
    var judging = document.getElementById("judgment-form");
    strip.style.setProperty("--pane-top", Math.ceil(barHeight()) + "px");
    strip.style.setProperty("--pane-bottom", judging ? Math.ceil(judging.getBoundingClientRect().height) + "px" : "0px");
  }

  function scrollable(el) {
    return el.scrollHeight > el.clientHeight + 1 && /(auto|scroll)/.test(window.getComputedStyle(el).overflowY);
  }

  // `target` in view inside the pane: inner scrollers (a long <pre>) centre it, the page puts
  // the pane right under the lane bar, the pane shows the lane and puts the target a third of
  // the way down the room below the lane's sticky header. Instant, so it is done on return.
  function paneScroll(target, lane) {
    for (var el = target.parentElement; el && el !== lane; el = el.parentElement) {
      if (!scrollable(el)) continue;
      var inner = target.getBoundingClientRect(), outer = el.getBoundingClientRect();
      el.scrollTop += inner.top - outer.top - Math.max(0, (el.clientHeight - inner.height) / 2);
    }
    window.scrollBy(0, strip.getBoundingClientRect().top - barHeight());
    var pane = strip.getBoundingClientRect(), box = lane.getBoundingClientRect();
    if (box.left < pane.left || box.right > pane.right) strip.scrollLeft += box.left - pane.left - Math.max(0, (strip.clientWidth - box.width) / 2);
    var head = lane.querySelector(".lane-head"), headHeight = head ? head.getBoundingClientRect().height : 0;
    var spot = target.getBoundingClientRect(), room = strip.clientHeight - headHeight;
    strip.scrollTop += spot.top - pane.top - headHeight - Math.max(8, (room - spot.height) / 3);
    sizeScroller();
  }

  function bindLanding() {
    document.addEventListener("gagar:land", function (e) { land(e.target); });
    document.addEventListener("click", function (e) {
      var link = e.target.closest("a[href^='#']");
      if (!link || link.closest("[data-testid=overview-table]") || e.ctrlKey || e.metaKey || e.shiftKey || e.button) return;
      var target = document.getElementById(decodeURIComponent(link.getAttribute("href").slice(1)));
      if (!target || target.classList.contains("lane")) { if (target) { e.preventDefault(); goToLane(target); } return; }
      e.preventDefault();
      history.replaceState(null, "", link.getAttribute("href"));
      land(target);
    });
    document.body.addEventListener("htmx:afterSwap", function (e) {
      var elt = e.detail.requestConfig && e.detail.requestConfig.elt, box = e.detail.target;
      if (box && box.querySelectorAll) box.querySelectorAll("ol.turns[data-query]").forEach(markMatches);
      var id = null;
      if (elt && elt.dataset && elt.dataset.jump !== undefined) id = "turn-" + elt.dataset.jump + "-" + elt.querySelector("[name=start]").value;
      else if (elt && elt.dataset && elt.dataset.land) id = elt.dataset.land;
      if (id) land(document.getElementById(id));
      else if (box && box.querySelector) {  // a files view opened at a line (a hunk, a file: citation)
        var line = box.querySelector(".files-view tr.target");
        if (line) land(line);
      }
      sizeScroller();
    });
    var hash = window.location.hash.slice(1);
    if (hash) {
      var target = document.getElementById(decodeURIComponent(hash));
      if (target && target.classList.contains("lane")) goToLane(target); else if (target) land(target);
    }
  }

  // <mark> each case-insensitive occurrence of the query in the turns' text (text nodes only:
  // nothing from the rollout is parsed as HTML). Plain indexOf, no pattern from the query.
  function markMatches(list) {
    var needle = (list.dataset.query || "").toLowerCase();
    if (!needle) return;
    list.querySelectorAll("pre").forEach(function (pre) {
      var walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT), nodes = [], node;
      while ((node = walker.nextNode())) nodes.push(node);
      nodes.forEach(function (text) {
        var at = text.data.toLowerCase().indexOf(needle), marks = 0;
        while (at >= 0 && marks < 200) {
          var match = text.splitText(at), rest = match.splitText(needle.length), mark = document.createElement("mark");
          match.parentNode.replaceChild(mark, match);
          mark.appendChild(match);
          text = rest; marks += 1;
          at = text.data.toLowerCase().indexOf(needle);
        }
      });
    });
  }

  function init() {
    strip = document.getElementById("lanes");
    bar = document.getElementById("lane-bar");
    if (!strip) return;
    lanes = Array.prototype.slice.call(strip.querySelectorAll(":scope > .lane"));
    pins = lanes.length > 1 ? [0, 1] : lanes.length ? [0] : [];
    if (bar) {
      bar.querySelectorAll("[data-layout]").forEach(function (button) {
        button.addEventListener("click", function () { setLayout(button.dataset.layout); });
      });
      bar.querySelector("[data-action=lane-prev]").addEventListener("click", function () { step(-1); });
      bar.querySelector("[data-action=lane-next]").addEventListener("click", function () { step(1); });
      var failing = bar.querySelector("[data-action=collapse-failing]");
      if (failing) failing.addEventListener("click", function () { collapseFailing(failing.getAttribute("aria-pressed") !== "true"); });
    }
    lanes.forEach(function (lane) {
      var pinButton = lane.querySelector("[data-action=pin]");
      if (pinButton) pinButton.addEventListener("click", function (e) { e.stopPropagation(); togglePin(lane); });
      var toggle = lane.querySelector("[data-action=collapse]");
      if (toggle) toggle.addEventListener("click", function (e) { e.stopPropagation(); collapse(lane, !lane.classList.contains("collapsed")); sizeScroller(); });
      lane.addEventListener("gagar:lane-current", function () { if (layout() === "one") { shown = lanes.indexOf(lane); render(); } });
    });
    bindScroller();
    bindPane();
    bindOverview();
    if (recall(COLLAPSE_KEY) === "1") collapseFailing(true);
    setLayout(recall(LAYOUT_KEY) || "all");
    bindLanding();
    document.body.dataset.groupReady = "true";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
