// Draws every <canvas data-chart="ID"> from the JSON in <script type="application/json" id="ID">.
// Data arrives through Django's json_script (escaped); no inline script, so the CSP holds.
(function () {
  function draw(canvas) {
    if (canvas.dataset.drawn || typeof Chart === "undefined") return;
    var source = document.getElementById(canvas.dataset.chart);
    if (!source) return;
    var spec = JSON.parse(source.textContent);
    canvas.dataset.drawn = "1";
    new Chart(canvas, {
      type: spec.type,
      data: { labels: spec.labels, datasets: spec.datasets },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        plugins: { legend: { display: spec.datasets.length > 1 }, title: { display: !!spec.title, text: spec.title } },
        scales: { x: { title: { display: !!spec.xlabel, text: spec.xlabel } }, y: { beginAtZero: true, title: { display: !!spec.ylabel, text: spec.ylabel } } }
      }
    });
  }
  function drawAll(root) { (root || document).querySelectorAll("canvas[data-chart]").forEach(draw); }
  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
  document.addEventListener("htmx:afterSettle", function (e) { drawAll(e.target); });
})();
