// The bench page: no behaviour beyond the form; marks the page ready for tests once parsed.
(function () {
  "use strict";
  function ready() { document.body.dataset.benchReady = "true"; }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();
