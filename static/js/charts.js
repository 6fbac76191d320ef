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

  // The fitted-vs-active mapping (reviews/views/calibration.py _mapping_chart): fitted f as points,
  // their 95% intervals as error bars on the points, the active mapping's band per tier as a shaded
  // range behind them (a band of one value, like T1 = 1 and T3 = 0.5, as a thick line). What was drawn
  // is counted on the canvas (data-intervals-drawn, data-bands-drawn) for tests and tools to read.
  var BAND = "rgba(19, 115, 51, 0.22)", BAND_EDGE = "rgba(19, 115, 51, 0.9)", POINT = "#3558d4";
  function rangesPlugin(spec) { return {
    id: "gagarRanges",
    beforeDatasetsDraw: function (chart) {
      var bands = spec.bands, x = chart.scales.x, y = chart.scales.y, ctx = chart.ctx, n = 0;
      if (!bands) { chart.canvas.dataset.bandsDrawn = "0"; return; }
      var half = Math.max(8, 0.32 * (x.width / spec.labels.length));
      ctx.save();
      bands.data.forEach(function (band, i) {
        if (!band) return;
        var cx = x.getPixelForValue(i), top = y.getPixelForValue(Math.max(band[0], band[1])), bottom = y.getPixelForValue(Math.min(band[0], band[1]));
        var h = Math.max(4, bottom - top), y0 = h > bottom - top ? (top + bottom) / 2 - h / 2 : top;
        ctx.fillStyle = BAND; ctx.fillRect(cx - half, y0, 2 * half, h);
        ctx.strokeStyle = BAND_EDGE; ctx.lineWidth = 1; ctx.strokeRect(cx - half, y0, 2 * half, h);
        n += 1;
      });
      ctx.restore();
      chart.canvas.dataset.bandsDrawn = String(n);
    },
    afterDatasetsDraw: function (chart) {
      var iv = spec.intervals, x = chart.scales.x, y = chart.scales.y, ctx = chart.ctx, n = 0;
      if (!iv) { chart.canvas.dataset.intervalsDrawn = "0"; return; }
      ctx.save(); ctx.strokeStyle = POINT; ctx.lineWidth = 2;
      iv.data.forEach(function (range, i) {
        if (!range) return;
        var cx = x.getPixelForValue(i), hi = y.getPixelForValue(range[1]), lo = y.getPixelForValue(range[0]), cap = 7;
        ctx.beginPath();
        ctx.moveTo(cx, lo); ctx.lineTo(cx, hi);
        ctx.moveTo(cx - cap, hi); ctx.lineTo(cx + cap, hi);
        ctx.moveTo(cx - cap, lo); ctx.lineTo(cx + cap, lo);
        ctx.stroke();
        n += 1;
      });
      ctx.restore();
      chart.canvas.dataset.intervalsDrawn = String(n);
    }
  }; }

  function mapping(canvas, spec) {
    var datasets = [{ label: spec.fitted.label, data: spec.fitted.data, showLine: false, pointRadius: 6, pointHoverRadius: 7,
                      backgroundColor: POINT, borderColor: POINT }];
    // Legend entries only (no data): what the error bars and the shaded ranges are.
    if (spec.intervals) datasets.push({ label: spec.intervals.label, data: [], borderColor: POINT, backgroundColor: "#fff", borderWidth: 2 });
    if (spec.bands) datasets.push({ label: spec.bands.label, data: [], borderColor: BAND_EDGE, backgroundColor: BAND, borderWidth: 1 });
    return new Chart(canvas, {
      type: "line",
      data: { labels: spec.labels, datasets: datasets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        plugins: { legend: { display: true },
                   tooltip: { callbacks: { afterLabel: function (item) {
                     var i = item.dataIndex, out = [];
                     if (spec.intervals && spec.intervals.data[i]) out.push("95% interval " + spec.intervals.data[i].join(" … "));
                     if (spec.bands && spec.bands.data[i]) out.push("active band " + spec.bands.data[i].join(" … "));
                     return out; } } } },
        scales: { x: { offset: true }, y: { min: 0, suggestedMax: 1.05, title: { display: !!spec.ylabel, text: spec.ylabel } } }
      },
      plugins: [rangesPlugin(spec)]
    });
  }

  function draw(canvas) {
    if (canvas.dataset.drawn) return;
    var source = document.getElementById(canvas.dataset.chart);
    if (!source) return;
    var spec = JSON.parse(source.textContent);
    if (spec.type === "heatmap") { canvas.dataset.drawn = "1"; heatmap(canvas, spec); return; }
    if (typeof Chart === "undefined") return;
    canvas.dataset.drawn = "1";
    if (spec.type === "mapping") { mapping(canvas, spec); return; }
    var scales = { x: { title: { display: !!spec.xlabel, text: spec.xlabel } },
                   y: { beginAtZero: !spec.links, title: { display: !!spec.ylabel, text: spec.ylabel } } };
    // A second axis on the right for an overlaid metric (datasets with yAxisID "y1").
    if (spec.y2label) scales.y1 = { position: "right", grid: { drawOnChartArea: false }, title: { display: true, text: spec.y2label } };
    var options = {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      plugins: { legend: { display: spec.datasets.length > 1 }, title: { display: !!spec.title && !spec.links, text: spec.title } },
      scales: scales
    };
    // spec.links[dataset][point]: a point opens its step (the run timeline, grading/presenters/timeline.py).
    if (spec.links) {
      options.onClick = function (event, elements) {
        if (!elements.length) return;
        var url = spec.links[elements[0].datasetIndex][elements[0].index];
        if (url) window.location.assign(url);
      };
      options.onHover = function (event, elements) { event.native.target.style.cursor = elements.length ? "pointer" : "default"; };
    }
    new Chart(canvas, { type: spec.type, data: { labels: spec.labels, datasets: spec.datasets }, options: options });
    if (spec.points !== undefined) canvas.dataset.points = String(spec.points);
  }
  function drawAll(root) {
    (root || document).querySelectorAll("canvas[data-chart]").forEach(draw);
    document.documentElement.dataset.chartsDrawn = "1";  // a marker for tests and tools: every chart is drawn
  }
  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
  document.addEventListener("htmx:afterSettle", function (e) { drawAll(e.target); });
})();
