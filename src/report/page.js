// The SASS listings: only the rows in view are DOM nodes (a 50 000-instruction kernel stays
// responsive); a click on the register-pressure chart scrolls the listing there. When done,
// <body> records data-rendered (listings drawn) and data-render-ms (performance.now()).
(function () {
  "use strict";
  var ROW = 16;
  function esc(s) {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }
  function hex(n) {
    var s = n.toString(16);
    while (s.length < 4) s = "0" + s;
    return "0x" + s;
  }
  var FLAG = [[1, "changed"], [2, "local"], [4, "demoted"], [8, "loop"]];
  function listing(box) {
    var data = JSON.parse(document.getElementById(box.getAttribute("data-src")).textContent);
    var lines = data.lines, flags = data.flags, start = data.start;
    var all = [], changed = [];
    for (var i = 0; i < lines.length; i++) {
      all.push(i);
      if (parseInt(flags.charAt(i), 16) & 1) changed.push(i);
    }
    var shown = all, hit = -1;
    var spacer = document.createElement("div");
    var rows = document.createElement("div");
    box.appendChild(spacer);
    box.appendChild(rows);
    function draw() {
      spacer.style.height = shown.length * ROW + "px";
      var first = Math.max(0, Math.floor(box.scrollTop / ROW) - 10);
      var last = Math.min(shown.length, first + Math.ceil(box.clientHeight / ROW) + 20);
      var html = [];
      for (var k = first; k < last; k++) {
        var i = shown[k], f = parseInt(flags.charAt(i), 16), cls = "row";
        for (var j = 0; j < FLAG.length; j++) if (f & FLAG[j][0]) cls += " " + FLAG[j][1];
        if (i === hit) cls += " hit";
        html.push('<div class="' + cls + '" style="top:' + k * ROW + 'px"><span class="o">' +
          hex(start + 16 * i) + "</span>" + esc(lines[i]) + "</div>");
      }
      rows.innerHTML = html.join("");
    }
    box.addEventListener("scroll", draw);
    box.orionShow = function (i) {
      shown = all;
      var only = box.parentNode.querySelector("input.changed-only");
      if (only) only.checked = false;
      hit = i;
      box.scrollTop = Math.max(0, i * ROW - box.clientHeight / 2);
      draw();
    };
    var only = box.parentNode.querySelector("input.changed-only");
    if (only) {
      only.addEventListener("change", function () {
        shown = only.checked ? changed : all;
        box.scrollTop = 0;
        draw();
      });
    }
    draw();
  }
  var boxes = document.querySelectorAll(".sass[data-src]");
  for (var b = 0; b < boxes.length; b++) listing(boxes[b]);
  var charts = document.querySelectorAll("svg.pressure");
  for (var c = 0; c < charts.length; c++) {
    (function (svg) {
      svg.addEventListener("click", function (ev) {
        var r = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
        var x = (ev.clientX - r.left) * vb.width / r.width;
        var n = +svg.getAttribute("data-n"), x0 = +svg.getAttribute("data-x0"), w = +svg.getAttribute("data-w");
        var i = Math.floor((x - x0) / w * n);
        var box = svg.closest("section").querySelector(".sass[data-src]");
        if (box && i >= 0 && i < n) box.orionShow(i);
      });
    })(charts[c]);
  }
  document.body.setAttribute("data-rendered", String(boxes.length));
  document.body.setAttribute("data-render-ms", performance.now().toFixed(1));
})();
