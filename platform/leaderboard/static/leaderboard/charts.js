/* Draws every leaderboard chart (templates/leaderboard/_chart.html) with plotly.js.
 *
 * Each <div class="chart" data-figure="ID"> names the <script type="application/json" id="ID">
 * that holds its figure (leaderboard.charts: data, layout, config). No inline script is needed, so
 * a Content-Security-Policy may forbid them. Without plotly.js (blocked, or JavaScript off) the
 * div stays empty and the chart's table alternative still carries the numbers.
 */
(function () {
  "use strict";

  var DEFAULT_CONFIG = { responsive: true, displaylogo: false, displayModeBar: "hover" };

  // A point whose customdata is a site-relative URL (a model's page) opens it when clicked. Only
  // paths on this site: never "//host" nor "javascript:".
  function isLocalPath(url) {
    return typeof url === "string" && url.charAt(0) === "/" && url.charAt(1) !== "/";
  }

  function draw(div) {
    var source = document.getElementById(div.getAttribute("data-figure"));
    if (!source || typeof window.Plotly === "undefined") {
      return;
    }
    var figure = JSON.parse(source.textContent);
    var config = Object.assign({}, DEFAULT_CONFIG, figure.config || {});
    window.Plotly.newPlot(div, figure.data, figure.layout, config).then(function (plot) {
      plot.on("plotly_click", function (event) {
        var point = event && event.points && event.points[0];
        if (point && isLocalPath(point.customdata)) {
          window.location.assign(point.customdata);
        }
      });
    });
  }

  function drawAll(root) {
    (root && root.querySelectorAll ? root : document).querySelectorAll("div.chart[data-figure]").forEach(draw);
  }

  // For a page that swaps its content in place (leaderboard/compare.js): draw the charts it brought.
  window.biolmCharts = { drawAll: drawAll };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
