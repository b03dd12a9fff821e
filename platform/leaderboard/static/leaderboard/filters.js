/* The leaderboard's filters apply on change: choosing an option or ticking "Per-dataset columns"
   submits the form, so the URL still holds every filter (a GET form) and a reload or a shared link
   shows the same view. The name search submits with Enter, as a search box does, not on every key.
   Without script the "Apply" button does the same. A static file, so a strict CSP may allow it. */
(function () {
  "use strict";
  function applyOnChange(form) {
    form.addEventListener("change", function (event) {
      var field = event.target;
      if (field.matches("select, input[type=checkbox]")) {
        if (form.requestSubmit) { form.requestSubmit(); } else { form.submit(); }
      }
    });
  }
  function start() {
    document.querySelectorAll("form.filters[data-apply-on-change]").forEach(applyOnChange);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
