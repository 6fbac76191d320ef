// An htmx request refused by the server or lost on the way swaps nothing (see the htmx-config
// in templates/base.html), so without this the person would see nothing happen. Here the form
// (or element) that sent it keeps what was typed and gets a message saying what happened; on a
// 503 (database unavailable, nothing changed) a Retry button sends it again, as it was sent,
// once Retry-After has passed. Marker for tests: data-htmx-error="<status>" on the message.
// Forms marked data-handles-errors show their own message instead.
(function () {
  var TEXT = {
    0: "The server could not be reached; nothing was sent. Check the connection and retry.",
    403: "Not allowed: your role does not permit this, or you were signed out. Reload the page.",
    404: "Not found: it may have been removed meanwhile. Reload the page.",
    500: "Something went wrong on our side (the failure is logged); retry, or reload the page.",
    503: "The database is unavailable right now; nothing was changed."
  };

  function show(evt, status) {
    var elt = evt.detail.elt, form = elt.closest("form") || elt, config = evt.detail.requestConfig || {};
    // A form that says what went wrong itself (the judge form: judge.js, with the judgment's
    // own words and its autosave resumed) would otherwise show two messages and two retries.
    if (form.hasAttribute && form.hasAttribute("data-handles-errors")) return;
    var submitter = (config.triggeringEvent && config.triggeringEvent.submitter) || lastSubmitter.get(form);
    var box = messages.get(form) || document.createElement("p");
    messages.set(form, box);
    box.className = "error htmx-error"; box.setAttribute("role", "alert");
    box.textContent = TEXT[status] || ("The server answered " + status + "; nothing was changed. Reload the page.");
    box.dataset.htmxError = String(status);
    // Inside a form, at its end; after any other element (a button or a link may not hold it).
    if (!box.parentNode) { if (form.tagName === "FORM") form.appendChild(box); else form.insertAdjacentElement("afterend", box); }
    if (status !== 503 && status !== 0 && status !== 500) return;
    var wait = 0, xhr = evt.detail.xhr;
    if (status === 503 && xhr) wait = Math.max(0, parseInt(xhr.getResponseHeader("Retry-After"), 10) || 0);
    var retry = document.createElement("button");
    retry.type = "button"; retry.className = "link"; retry.dataset.testid = "htmx-retry";
    box.appendChild(document.createTextNode(" "));
    box.appendChild(retry);
    function tick() {
      if (wait <= 0) { retry.disabled = false; retry.textContent = "Retry"; box.dataset.retryReady = "true"; return; }
      retry.disabled = true; retry.textContent = "Retry in " + wait + " s"; wait -= 1;
      window.setTimeout(tick, 1000);
    }
    retry.addEventListener("click", function () {
      box.remove(); messages.delete(form);
      // The same button again (a click, so its name and value go with the form), or the form as it was sent.
      if (submitter && form.contains(submitter)) submitter.click();
      else if (form.tagName === "FORM" && form.requestSubmit) form.requestSubmit();
      else if (window.htmx) window.htmx.trigger(elt, "click");
    });
    tick();
  }

  // Which submit button sent each form last (its name and value are part of what was sent).
  var lastSubmitter = new WeakMap(), messages = new WeakMap();
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button[type=submit], input[type=submit]");
    if (button && button.form) lastSubmitter.set(button.form, button);
  }, true);

  document.addEventListener("htmx:responseError", function (evt) { show(evt, evt.detail.xhr ? evt.detail.xhr.status : 0); });
  document.addEventListener("htmx:sendError", function (evt) { show(evt, 0); });
  // A later success clears the message.
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var form = evt.detail.elt.closest("form") || evt.detail.elt, old = messages.get(form);
    if (old) { old.remove(); messages.delete(form); }
  });
})();
