// The judging form on the group page: keyboard, autosaved drafts, progress. No inline
// script (the CSP forbids it); the page works without this file, only slower.
//
// Readiness: once the handlers are bound, <body data-judge-ready="true"> (tests wait for it);
// #draft-status carries data-pending while a change is not yet in the saved draft.
// Keys the page handles that arrive after this file runs but before that are queued and
// replayed in order; keys before this file runs reach no handler and do nothing.
// Submitting: once the form submits, no autosave is sent (the timer is cancelled and the
// unload beacon skipped), so a draft never races the submit for the database. A judgment is
// posted through htmx (hx-post on the form): the server answers with HX-Redirect, and a
// failure it could not answer (a 503, a lost connection) leaves the form as it is, says so
// and offers a retry. Shift+S (or the button) submits and opens the next queued group.
// Irreversible actions (forms with data-confirm) open their <dialog> first (confirm.js).
// No key of the page acts while a dialog is open.
// Patch clusters: Shift+1/2/3 gives the current lane's tier to every passing lane
// of its cluster (lanes carry data-cluster; still one tier input per rollout, all submitted
// as before), as does the lane's "tier the cluster" button.
// Lanes and the layout (static/js/group.js): a lane becoming current fires
// "gagar:lane-current" on it; group.js fires "gagar:focus-lane" on a lane it went to.
// The current lane is the one the keys act on, named in the lane bar ("current:
// C"). Only the reviewer moves it: j / k, a click on a lane (not on a control in it: a tier,
// rank or cheat control, a button or a link act on their own lane and leave the current one
// where it is), an overview row or an evidence link (group.js).
// Ranks are optional per rollout: a blank one follows its tier on the server
// (reviews.stats.consensus.fill_ranks); `0` clears the current lane's rank, `x` its tier and
// rank, as does the lane's "clear". The overview's "your tier" / "your rank" columns and the
// footer's count follow every change, whatever made it (a key, a click, a cluster's tier,
// "start from", a draft restored by the back/forward cache).
// Adjudicating: "start from" fills the form with one rater's ranking (#start-rankings).
(function () {
  "use strict";
  var form, lanes = [], current = -1, started = Date.now(), saveTimer = null, dirty = false;
  var submitting = false, ready = false, pending = [], handleKey = null;
  var KEYS = ["?", "j", "k", "1", "2", "3", "[", "]", "0", "x", "c", "s", "S"];
  // A click on one of these acts on its own lane; it does not make that lane current.
  var CONTROLS = "input, label, button, select, textarea, a, summary, .judge";
  var CLUSTER_CODES = { Digit1: "T1", Digit2: "T2", Digit3: "T3", Numpad1: "T1", Numpad2: "T2", Numpad3: "T3" };
  var wantNext = false;

  function passingLanes() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-judge]"))
      .map(function (panel) { return panel.closest(".lane"); });
  }

  function focusLane(i) {
    if (!lanes.length) return;
    current = Math.max(0, Math.min(lanes.length - 1, i));
    lanes.forEach(function (lane, n) { lane.classList.toggle("current", n === current); });
    lanes[current].dispatchEvent(new CustomEvent("gagar:lane-current", { bubbles: true }));
    // Centre the lane in the side-by-side strip; leave the page's vertical position alone.
    var lane = lanes[current], strip = lane.parentElement;
    var laneBox = lane.getBoundingClientRect(), stripBox = strip.getBoundingClientRect();
    strip.scrollLeft += laneBox.left - stripBox.left - (stripBox.width - laneBox.width) / 2;
    lanes.forEach(function (lane, n) {
      if (n === current) lane.setAttribute("aria-current", "true"); else lane.removeAttribute("aria-current");
    });
    var label = document.querySelector("[data-role=current-lane]");
    if (label) { label.textContent = "current: " + lane.dataset.name; label.dataset.lane = lane.dataset.index; }
  }

  function panelOf(lane) { return lane ? lane.querySelector("[data-judge]") : null; }
  function rankInput(lane) { var p = panelOf(lane); return p ? p.querySelector("input[name='rank-" + p.dataset.judge + "']") : null; }
  function tierOf(lane) { var p = panelOf(lane), checked = p && p.querySelector("input[type=radio]:checked"); return checked ? checked.value : ""; }

  // Clear a lane's rank (it follows its tier again) and, with `tierToo`, its tier.
  function clearLane(lane, tierToo) {
    var p = panelOf(lane);
    if (!p) return;
    var rank = rankInput(lane);
    if (rank) rank.value = "";
    if (tierToo) p.querySelectorAll("input[type=radio]").forEach(function (radio) { radio.checked = false; });
    changed();
  }

  function panel() { return current >= 0 ? lanes[current].querySelector("[data-judge]") : null; }
  function field(name) { var p = panel(); return p ? p.querySelector("[name='" + name + "-" + p.dataset.judge + "']") : null; }

  function setTier(tier) {
    var p = panel();
    if (!p) return;
    var radio = p.querySelector("input[type=radio][value='" + tier + "']");
    if (radio) { radio.checked = true; changed(); }
  }

  // A lane's tier (the current one's by default) for every passing lane of its patch cluster (the same change).
  function setClusterTier(tier, lane) {
    if (!lane && current < 0) focusLane(0);
    lane = lane || lanes[current];
    if (!lane) return;
    var cluster = lane.dataset.cluster, given = [];
    lanes.forEach(function (other) {
      if (other !== lane && (cluster === undefined || other.dataset.cluster !== cluster)) return;
      var radio = other.querySelector("[data-judge] input[type=radio][value='" + tier + "']");
      if (radio) { radio.checked = true; given.push(other.dataset.name); }
    });
    var status = form.querySelector("[data-role=cluster-status]");
    if (status) status.textContent = tier + " given to " + given.join(", ") + (given.length > 1 ? " (the same change)" : "");
    changed();
  }

  function bumpRank(delta) {
    if (current < 0) focusLane(0);
    var input = field("rank");
    if (!input) return;
    var value = parseInt(input.value || "0", 10) + delta;
    input.value = String(Math.max(1, value));
    changed();
  }

  function toggleCheat() {
    var box = field("cheat");
    if (box) { box.checked = !box.checked; changed(); }
  }

  function updateProgress() {
    var progress = form.querySelector("[data-role=progress]");
    if (!progress) return;
    var total = parseInt(progress.dataset.total, 10), done = 0;
    document.querySelectorAll("[data-judge]").forEach(function (p) {
      if (p.querySelector("input[type=radio]:checked")) done += 1;
    });
    // Passing lanes a filter left off the page still count, with the tiers they carry hidden.
    done += form.querySelectorAll("[data-off-page] input[name^='tier-']").length;
    progress.textContent = done + " of " + total + " passing rollouts tiered";
    progress.classList.toggle("complete", done === total);
  }

  // The overview's "your tier" / "your rank" cells, from the form as it is now (text only).
  function updateOverview() {
    lanes.forEach(function (lane) {
      var row = document.querySelector("tr.overview-row[data-lane='" + CSS.escape(lane.dataset.index) + "']");
      var tierCell = row && row.querySelector("[data-role=my-tier]"), rankCell = row && row.querySelector("[data-role=my-rank]");
      if (!tierCell || !rankCell) return;
      var tier = tierOf(lane), rank = rankInput(lane), value = rank ? rank.value.trim() : "";
      row.dataset.mytier = tier;
      row.dataset.myrank = value;
      var badge = document.createElement("span");
      badge.className = tier ? "badge tier-" + tier : "muted";
      badge.textContent = tier || "–";
      tierCell.replaceChildren(badge);
      if (value) rankCell.replaceChildren(document.createTextNode(value));
      else {
        var note = document.createElement("span");
        note.className = "muted";
        note.textContent = tier ? "from tier" : "–";
        rankCell.replaceChildren(note);
      }
    });
  }

  function refresh() { updateProgress(); updateOverview(); }

  // Adjudicating: the form filled with one rater's ranking (a reviewer's or the grader's).
  function startFrom(button) {
    var box = document.getElementById("start-rankings");
    var ranking = box ? (JSON.parse(box.textContent)[button.dataset.source] || {}) : {};
    lanes.forEach(function (lane) {
      var p = panelOf(lane), item = ranking[lane.dataset.index];
      p.querySelectorAll("input[type=radio]").forEach(function (radio) { radio.checked = !!item && radio.value === item.tier; });
      var rank = rankInput(lane);
      if (rank) rank.value = item && item.rank ? String(item.rank) : "";
      var cheat = p.querySelector("input[type=checkbox][name^='cheat-']");
      if (cheat) cheat.checked = !!(item && item.cheat);
    });
    var status = form.querySelector("[data-role=cluster-status]");
    if (status) status.textContent = "Started from " + button.textContent.trim() + "; change what you disagree with.";
    changed();
  }

  function saveDraft() {
    var url = form.dataset.draftUrl;
    if (!url || !dirty || submitting) return;
    dirty = false;
    var status = document.getElementById("draft-status");
    fetch(url, { method: "POST", body: new FormData(form), credentials: "same-origin",
                 headers: { "X-CSRFToken": form.querySelector("[name=csrfmiddlewaretoken]").value } })
      .then(function (r) { return r.json().then(function (body) { return { ok: r.ok, body: body }; }); })
      .then(function (res) {
        if (!status) return;
        status.textContent = res.ok ? "draft saved " + new Date(res.body.saved_at).toLocaleTimeString() : "draft not saved: " + res.body.error;
        status.dataset.saved = res.ok ? "1" : "0";
        if (res.ok && !dirty) delete status.dataset.pending;  // nothing changed since: the draft is what the form says
      })
      .catch(function () { if (status) { status.textContent = "draft not saved (offline?)"; status.dataset.saved = "0"; } dirty = true; });
  }

  function changed() {
    dirty = true;
    var status = document.getElementById("draft-status");
    if (status && form.dataset.draftUrl) status.dataset.pending = "1";  // a draft to save (tests wait for it to go)
    refresh();
    clearTimeout(saveTimer);
    saveTimer = submitting ? null : setTimeout(saveDraft, 600);
  }

  // The submit is under way: the draft it supersedes must not be written after it.
  function stopAutosave() {
    submitting = true;
    clearTimeout(saveTimer);
    saveTimer = null;
  }

  function typing(target) {
    var tag = (target.tagName || "").toLowerCase();
    return tag === "textarea" || tag === "select" || (tag === "input" && target.type !== "radio" && target.type !== "checkbox");
  }

  function clusterKey(e) { return e.shiftKey && CLUSTER_CODES[e.code]; }

  function onKey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var help = document.getElementById("keys-help");
    var open = document.querySelector("dialog[open]");
    if (open && open !== help) return;  // a confirmation is asking: its own keys only
    if (e.key === "?") { e.preventDefault(); if (help.open) help.close(); else help.showModal(); return; }
    if (typing(e.target) || (help && help.open)) return;
    if (clusterKey(e)) { e.preventDefault(); setClusterTier(clusterKey(e)); return; }
    switch (e.key) {
      case "j": e.preventDefault(); focusLane(current + 1); break;
      case "k": e.preventDefault(); focusLane(current - 1); break;
      case "1": case "2": case "3": if (current < 0) focusLane(0); setTier("T" + e.key); break;
      case "[": bumpRank(-1); break;
      case "]": bumpRank(1); break;
      case "0": if (current < 0) focusLane(0); clearLane(lanes[current], false); break;
      case "x": if (current < 0) focusLane(0); clearLane(lanes[current], true); break;
      case "c": if (current < 0) focusLane(0); toggleCheat(); break;
      case "s": e.preventDefault(); submit(false); break;
      case "S": e.preventDefault(); submit(true); break;
      default: return;
    }
  }

  function submit(next) {
    var seconds = form.querySelector("[data-role=seconds]");
    if (seconds) seconds.value = String(Math.round((Date.now() - started) / 1000));
    clearTimeout(saveTimer);
    var nextButton = form.querySelector("[data-action=submit-next]");
    wantNext = !!(next && nextButton);
    // A click on the button is what htmx reads the submitter (then=next) from; either fires
    // "submit" (which stops the autosave) unless the form is invalid.
    if (wantNext) nextButton.click(); else form.requestSubmit();
  }

  // The submit failed without an answer the page can follow: keep everything, say so, offer a retry.
  function submitFailed(text) {
    submitting = false;
    dirty = true;
    var box = document.getElementById("submit-problem");
    if (!box) return;
    box.querySelector("[data-role=problem-text]").textContent = text;
    box.hidden = false;
    box.querySelector("[data-action=retry]").focus();
  }

  function bindSubmitProblems() {
    var box = document.getElementById("submit-problem");
    if (!box || !form.hasAttribute("hx-post")) return;
    form.addEventListener("htmx:beforeRequest", function () { box.hidden = true; });
    form.addEventListener("htmx:responseError", function (e) {
      var status = e.detail.xhr ? e.detail.xhr.status : 0;
      submitFailed(status === 503
        ? "The database is unavailable right now; your judgment was not stored. Everything you entered is still here: retry in a few seconds."
        : "The server answered " + status + "; your judgment was not stored. Everything you entered is still here.");
    });
    form.addEventListener("htmx:sendError", function () {
      submitFailed("No answer from the server (offline?); your judgment was not stored. Everything you entered is still here.");
    });
    box.querySelector("[data-action=retry]").addEventListener("click", function () { box.hidden = true; submit(wantNext); });
    var nextButton = form.querySelector("[data-action=submit-next]");
    if (nextButton) nextButton.addEventListener("click", function () { wantNext = true; });
    var plain = form.querySelector("[data-testid=submit]");
    if (plain) plain.addEventListener("click", function () { wantNext = false; });
  }

  // Confirmations are static/js/confirm.js's; here, what a confirmed form takes along.
  function bindConfirms() {
    document.addEventListener("gagar:confirmed", function (e) {
      var target = e.target;
      if (form && form.dataset.draftUrl && target.querySelector("[data-testid=reveal-early]")) {
        // Revealing early keeps what was typed: the judging fields go along as the draft.
        new FormData(form).forEach(function (value, name) {
          if (name === "csrfmiddlewaretoken" || typeof value !== "string") return;
          var input = document.createElement("input");
          input.type = "hidden"; input.name = name; input.value = value;
          target.appendChild(input);
        });
      }
      stopAutosave();
    });
  }

  // Bound as soon as this file runs: before the page is ready, keys it handles are queued.
  document.addEventListener("keydown", function (e) {
    if (ready) { if (handleKey) handleKey(e); return; }
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target) || (KEYS.indexOf(e.key) < 0 && !clusterKey(e))) return;
    e.preventDefault();
    pending.push({ key: e.key, code: e.code, shiftKey: e.shiftKey, target: e.target });
  });

  function markReady(handler) {
    handleKey = handler;
    ready = true;
    pending.splice(0).forEach(function (k) {
      handler({ key: k.key, code: k.code, shiftKey: k.shiftKey, target: k.target, ctrlKey: false, metaKey: false, altKey: false,
                preventDefault: function () {} });
    });
    document.body.dataset.judgeReady = "true";
  }

  function init() {
    var help = document.getElementById("keys-help");
    document.querySelectorAll("[data-action=help]").forEach(function (button) {
      if (help) button.addEventListener("click", function () { help.showModal(); });
    });
    form = document.getElementById("judgment-form");
    bindConfirms();
    if (!form) {
      markReady(function (e) {
        var open = document.querySelector("dialog[open]");
        if (open && open !== help) return;
        if (e.key === "?" && help && !typing(e.target)) { e.preventDefault(); help.open ? help.close() : help.showModal(); }
      });
      return;
    }
    lanes = passingLanes();
    lanes.forEach(function (lane, n) {
      lane.addEventListener("click", function (e) {
        if (e.target.closest && e.target.closest(CONTROLS)) return;  // a control acts on its own lane only
        if (current !== n) focusLane(n);
      });
      lane.addEventListener("gagar:focus-lane", function () { if (current !== n) focusLane(n); });
      var button = lane.querySelector("[data-action=tier-cluster]");
      if (button) button.addEventListener("click", function (e) {
        e.stopPropagation();
        var tier = tierOf(lane);
        if (tier) setClusterTier(tier, lane);
        else { var status = form.querySelector("[data-role=cluster-status]"); if (status) status.textContent = "Give " + lane.dataset.name + " a tier first"; }
      });
      var clear = lane.querySelector("[data-action=clear-lane]");
      if (clear) clear.addEventListener("click", function (e) { e.stopPropagation(); clearLane(lane, true); });
    });
    form.querySelectorAll("[data-action=start-from]").forEach(function (button) {
      button.addEventListener("click", function () { startFrom(button); });
    });
    document.addEventListener("input", function (e) { if (e.target.form === form || e.target.getAttribute("form") === "judgment-form") changed(); });
    document.addEventListener("change", function (e) { if (e.target.form === form) changed(); });
    form.addEventListener("submit", function () {
      stopAutosave();
      var seconds = form.querySelector("[data-role=seconds]");
      if (seconds && !seconds.value) seconds.value = String(Math.round((Date.now() - started) / 1000));
    });
    window.addEventListener("beforeunload", function () {
      if (dirty && !submitting && form.dataset.draftUrl) navigator.sendBeacon(form.dataset.draftUrl, new FormData(form));
    });
    // Back from the next page (back/forward cache): the submit is over, autosave again.
    window.addEventListener("pageshow", function (e) { if (e.persisted) submitting = false; refresh(); });
    bindSubmitProblems();
    refresh();
    if (lanes.length) focusLane(0);
    markReady(onKey);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
