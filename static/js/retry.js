// The 503 page's retry form (templates/503.html): the button waits for Retry-After before it
// resends what the person sent, and says how long. Without this script it is enabled at once.
(function () {
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-retry-after]").forEach(function (form) {
      var button = form.querySelector("button[type=submit]"), label = button.textContent;
      var left = Math.max(0, parseInt(form.dataset.retryAfter, 10) || 0);
      function tick() {
        if (left <= 0) { button.disabled = false; button.textContent = label; form.dataset.retryReady = "true"; return; }
        button.disabled = true; button.textContent = label + " (" + left + " s)"; left -= 1;
        window.setTimeout(tick, 1000);
      }
      tick();
    });
  });
})();
