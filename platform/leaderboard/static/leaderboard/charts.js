/* Draws every leaderboard chart (templates/leaderboard/_chart.html) with plotly.js.
 *
 * Each <div class="chart" data-figure="ID"> names the <script type="application/json" id="ID">
 * that holds its figure (leaderboard.charts: data, layout, config). No inline script is needed, so
 * a Content-Security-Policy may forbid them. Without plotly.js (blocked, or JavaScript off) the
 * div stays empty and the chart's table alternative still carries the numbers.
 *
 * plotly.js (4.8 MB) is fetched by this script, not by the page: only where a chart is, and only
 * once the page is parsed and painted, so the tables show (and DOMContentLoaded fires) without
 * waiting for it. Its URL, hashed by collectstatic, is the data-plotly attribute of this script's
 * own tag (templates/leaderboard/_plotly.html).
 */
(function () {
  "use strict";

  var DEFAULT_CONFIG = { responsive: true, displaylogo: false, displayModeBar: "hover" };
  var PLOTLY_URL = document.currentScript && document.currentScript.getAttribute("data-plotly");
  var waitingForPlotly = null; // what to run once plotly.js has loaded, while it loads

  // Runs `then` with plotly.js loaded: at once if it is, else after adding its <script> (once).
  function withPlotly(then) {
    if (typeof window.Plotly !== "undefined") {
      then();
      return;
    }
    if (waitingForPlotly) {
      waitingForPlotly.push(then);
      return;
    }
    if (!PLOTLY_URL) {
      return;
    }
    waitingForPlotly = [then];
    var script = document.createElement("script");
    script.src = PLOTLY_URL;
    script.addEventListener("load", function () {
      var waiting = waitingForPlotly;
      waitingForPlotly = null;
      waiting.forEach(function (run) {
        run();
      });
    });
    document.head.appendChild(script);
  }

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
    var charts = (root && root.querySelectorAll ? root : document).querySelectorAll("div.chart[data-figure]");
    if (charts.length) {
      withPlotly(function () {
        charts.forEach(draw);
      });
    }
  }

  // The frame after parsing paints the page; plotly.js is asked for after it.
  function afterThePageIsDrawn() {
    window.requestAnimationFrame(function () {
      window.setTimeout(drawAll, 0);
    });
  }

  // For a page that swaps its content in place (leaderboard/compare.js): draw the charts it brought.
  window.biolmCharts = { drawAll: drawAll };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", afterThePageIsDrawn);
  } else {
    afterThePageIsDrawn();
  }
})();
