// Confirmations for irreversible actions: a form with data-confirm="<dialog id>" opens that
// <dialog> (templates/confirm_dialog.html) instead of submitting. Focus starts on Cancel (the
// safe choice); Esc cancels; Enter or the confirm button confirms. Just before the form is
// sent it receives a "gagar:confirmed" event, so a page can add to it (judge.js adds the
// typed fields as a draft). A confirm button with data-field-name / data-field-value adds that
// field to the form, so what only the dialog may grant (an override) is never in the form
// before it is confirmed. Bound before the page marks itself ready.
(function () {
  "use strict";

  function bind(target) {
    var dialog = document.getElementById(target.dataset.confirm);
    if (!dialog || target.dataset.confirmBound) return;
    target.dataset.confirmBound = "true";
    var cancel = dialog.querySelector("[data-action=cancel]"), confirm = dialog.querySelector("[data-action=confirm]");
    function go() {
      dialog.close();
      if (confirm.dataset.fieldName && !target.querySelector("input[name='" + confirm.dataset.fieldName + "']")) {
        var field = document.createElement("input");
        field.type = "hidden"; field.name = confirm.dataset.fieldName; field.value = confirm.dataset.fieldValue || "1";
        target.appendChild(field);
      }
      target.dispatchEvent(new CustomEvent("gagar:confirmed", { bubbles: true }));
      target.submit();  // the form's own submit: no "submit" event, so no second dialog
    }
    target.addEventListener("submit", function (e) {
      e.preventDefault();
      dialog.showModal();
      cancel.focus();
    });
    cancel.addEventListener("click", function () { dialog.close(); });
    confirm.addEventListener("click", go);
    dialog.addEventListener("keydown", function (e) {
      if (e.key === "Enter") { e.preventDefault(); e.stopPropagation(); go(); }
    });
  }

  function bindAll() {
    document.querySelectorAll("form[data-confirm]").forEach(bind);
    document.body.dataset.confirmReady = "true";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", bindAll);
  else bindAll();
})();
