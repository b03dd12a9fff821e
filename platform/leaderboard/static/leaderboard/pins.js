/* A leaderboard's pins without reloading (templates/leaderboard/benchmark.html).
 *
 * Each row's "pin" link, and "Unpin all", is a plain link to the same view with the pins changed
 * (?pins=), which works without JavaScript but reloads the page and sends the reader to its top.
 * Here the link's page is fetched instead and put in place: every part of the page but the filter
 * form is taken from it (the pinned rows first, the "Compare pinned models" link, and the exports'
 * and sort headers' links, which carry the pins), the form keeps its elements and only its hidden
 * "pins" field is updated (so leaderboard/filters.js still applies filters on change), the address
 * bar takes the link's address (history.replaceState: a reload or a shared link shows the same
 * view), the charts are drawn again (leaderboard/charts.js), the scroll position stays, the focus
 * returns to the pin link of the same model, and a status line tells a screen reader what changed.
 * Whatever does not fit that (no form, a chart without charts.js, a failed request) falls back to
 * following the link.
 */
(function () {
  "use strict";

  var main = document.getElementById("content");
  if (!main || !window.fetch || !window.DOMParser || !window.history.replaceState) {
    return;
  }

  function status() {
    var line = document.getElementById("pins-status");
    if (!line) {
      line = document.createElement("p");
      line.id = "pins-status";
      line.className = "visually-hidden";
      line.setAttribute("role", "status");
      document.body.appendChild(line);
    }
    return line;
  }

  function syncPins(form, freshForm) {
    var mine = form.querySelector("input[type=hidden][name=pins]");
    var theirs = freshForm.querySelector("input[type=hidden][name=pins]");
    if (theirs && mine) {
      mine.value = theirs.value;
    } else if (theirs) {
      form.appendChild(theirs.cloneNode(true));
    } else if (mine) {
      mine.parentNode.removeChild(mine);
    }
  }

  function swap(html, url, link) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.getElementById("content");
    var form = main.querySelector(":scope > form.filters");
    var freshForm = fresh && fresh.querySelector(":scope > form.filters");
    if (!fresh || !form || !freshForm || (fresh.querySelector("div.chart[data-figure]") && !window.biolmCharts)) {
      window.location.assign(url);
      return;
    }
    var model = link.closest("tr") && link.closest("tr").getAttribute("data-model");
    var said = link.getAttribute("aria-label") || link.textContent.trim();
    syncPins(form, freshForm);
    var nodes = Array.prototype.map.call(fresh.childNodes, function (node) {
      return node === freshForm ? form : document.importNode(node, true);
    });
    var x = window.scrollX;
    var y = window.scrollY;
    main.replaceChildren.apply(main, nodes);
    window.scrollTo(x, y);
    window.history.replaceState(null, "", url);
    if (window.biolmCharts) { window.biolmCharts.drawAll(main); }
    var again = model && main.querySelector('tr[data-model="' + model + '"] a.pin');
    if (again) { again.focus({ preventScroll: true }); }
    status().textContent = said.replace(/^Unpin /, "Unpinned ").replace(/^Pin /, "Pinned ") + ".";
  }

  main.addEventListener("click", function (event) {
    var link = event.target.closest("a.pin, p.pins a:not(.button)");
    if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) {
      return;
    }
    event.preventDefault();
    var url = link.href;
    window.fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (!response.ok) { throw new Error(String(response.status)); }
        return response.text();
      })
      .then(function (html) { swap(html, url, link); })
      .catch(function () { window.location.assign(url); });
  });
})();
