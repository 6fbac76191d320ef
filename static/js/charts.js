// Draws every <canvas data-chart="ID"> from the JSON in <script type="application/json" id="ID">.
// Data arrives through Django's json_script (escaped); no inline script, so the CSP holds.
(function () {
  // A count matrix as shaded cells; Chart.js has no heatmap, and this needs no plugin.
  function heatmap(canvas, spec) {
    var box = canvas.parentElement.getBoundingClientRect(), ratio = window.devicePixelRatio || 1;
    var size = Math.min(box.width, box.height), n = spec.labels.length, pad = 44, cell = (size - pad) / n;
    canvas.width = size * ratio; canvas.height = size * ratio;
    canvas.style.width = size + "px"; canvas.style.height = size + "px";
    var ctx = canvas.getContext("2d"), max = 0;
    ctx.scale(ratio, ratio);
    spec.matrix.forEach(function (row) { row.forEach(function (v) { max = Math.max(max, v); }); });
    ctx.font = "12px system-ui, sans-serif"; ctx.textAlign = "center"; ctx.textBaseline = "middle";
    for (var i = 0; i < n; i++) {
      for (var j = 0; j < n; j++) {
        var v = spec.matrix[i][j], t = max ? v / max : 0;
        ctx.fillStyle = "rgba(53, 88, 212, " + (0.08 + 0.85 * t) + ")";
        ctx.fillRect(pad + j * cell + 1, pad + i * cell + 1, cell - 2, cell - 2);
        ctx.fillStyle = t > 0.55 ? "#fff" : "#1d1f24";
        ctx.fillText(String(v), pad + (j + 0.5) * cell, pad + (i + 0.5) * cell);
      }
      ctx.fillStyle = "#6b7280";
      ctx.fillText(spec.labels[i], pad + (i + 0.5) * cell, pad - 12);
      ctx.fillText(spec.labels[i], pad - 16, pad + (i + 0.5) * cell);
    }
    ctx.fillText(spec.xlabel + " →", pad + (size - pad) / 2, 10);
    ctx.save(); ctx.translate(10, pad + (size - pad) / 2); ctx.rotate(-Math.PI / 2);
    ctx.fillText(spec.ylabel + " →", 0, 0); ctx.restore();
  }

  function draw(canvas) {
    if (canvas.dataset.drawn) return;
    var source = document.getElementById(canvas.dataset.chart);
    if (!source) return;
    var spec = JSON.parse(source.textContent);
    if (spec.type === "heatmap") { canvas.dataset.drawn = "1"; heatmap(canvas, spec); return; }
    if (typeof Chart === "undefined") return;
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
