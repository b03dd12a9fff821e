/* The compare page without reloads (templates/leaderboard/compare.html).
 *
 * The page's form works without JavaScript: its search box adds a model (?add=), each compared
 * model's "Remove" button takes one out (?remove=), the benchmark menu picks the benchmark, and the
 * server answers with a redirect to the page's own address, ?models= updated. Here the same requests
 * are fetched instead: the fresh page's #compare-app replaces this one's, the address bar takes its
 * address (history.replaceState, so a reload or a copied link shows the same comparison), the radar
 * is drawn again (leaderboard/charts.js) and a status line tells a screen reader what changed. The
 * reader keeps their place on the page and the focus stays in the search box.
 *
 * Where the fresh page has a chart and charts.js is not on this one (the page started empty, so it
 * loaded no chart scripts), or the request fails, the browser simply goes to the address: a full load.
 */
(function () {
  "use strict";

  var app = document.getElementById("compare-app");
  if (!app || !window.fetch || !window.DOMParser || !window.history.replaceState) {
    return;
  }

  // The form's query with the button pressed; "add" emptied unless the search box is what was submitted.
  function requestUrl(form, submitter, keepTyped) {
    var data = new FormData(form);
    if (!keepTyped) {
      data.delete("add");
    }
    if (submitter && submitter.name) {
      data.set(submitter.name, submitter.value);
    }
    if (!data.has("add")) {
      data.set("add", "");
    }
    var query = new URLSearchParams(data);
    return form.getAttribute("action") + "?" + query.toString();
  }

  function names(root) {
    return Array.prototype.map.call(root.querySelectorAll(".compare-pins li > a"), function (a) {
      return a.textContent.trim();
    });
  }

  function said(before, after, fresh) {
    var problem = fresh.querySelector("#compare-problem");
    if (problem) {
      return problem.textContent.trim();
    }
    var added = after.filter(function (n) { return before.indexOf(n) < 0; });
    var removed = before.filter(function (n) { return after.indexOf(n) < 0; });
    var parts = [];
    if (added.length) { parts.push("Added " + added.join(", ") + "."); }
    if (removed.length) { parts.push("Removed " + removed.join(", ") + "."); }
    parts.push(after.length ? "Comparing " + after.join(", ") + "." : "No model compared.");
    return parts.join(" ");
  }

  function swap(html, url) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.getElementById("compare-app");
    if (!fresh || (fresh.querySelector("div.chart[data-figure]") && !window.biolmCharts)) {
      window.location.assign(url);
      return;
    }
    var before = names(app);
    app.innerHTML = fresh.innerHTML;
    app.setAttribute("data-url", fresh.getAttribute("data-url"));
    var heading = doc.querySelector("main h1");
    var mine = document.querySelector("main h1");
    if (heading && mine) { mine.textContent = heading.textContent; }
    document.title = doc.title;
    window.history.replaceState(null, "", fresh.getAttribute("data-url"));
    if (window.biolmCharts) { window.biolmCharts.drawAll(app); }
    var box = document.getElementById("compare-add");
    if (box) { box.focus({ preventScroll: true }); }
    var status = document.getElementById("compare-status");
    if (status) { status.textContent = said(before, names(app), app); }
  }

  function go(url) {
    app.setAttribute("aria-busy", "true");
    window.fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (!response.ok) { throw new Error(String(response.status)); }
        return response.text();
      })
      .then(function (html) { swap(html, url); })
      .catch(function () { window.location.assign(url); })
      .then(function () { app.removeAttribute("aria-busy"); });
  }

  app.addEventListener("submit", function (event) {
    if (event.target.id !== "compare-form") { return; }
    event.preventDefault();
    var submitter = event.submitter;
    go(requestUrl(event.target, submitter, !(submitter && submitter.name === "remove")));
  });

  app.addEventListener("change", function (event) {
    if (event.target.id === "compare-benchmark") {
      go(requestUrl(event.target.form, null, false));
    }
  });
})();
