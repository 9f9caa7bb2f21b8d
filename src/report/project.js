// The overview's sorting and filtering. A click on a header sorts by that column (again:
// the other way); a question button or the search box hides the other rows. The address's
// fragment applies one on opening (#q=spills, #q=limiter:registers, #q=why:..., #sort=regs,
// #sort=-regs). When done, <body> records data-rendered (rows), data-shown (rows visible)
// and data-render-ms (performance.now()).
(function () {
  "use strict";
  var table = document.getElementById("kernels");
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var heads = table.tHead.rows[0].cells;
  var search = document.getElementById("filter");
  var shown = document.getElementById("shown");
  var buttons = document.querySelectorAll(".questions button");
  var question = "";
  function matches(tr, q) {
    if (q === "") return true;
    if (q === "spills") return tr.getAttribute("data-spills") !== "0";
    if (q === "retuned") return tr.getAttribute("data-retuned") === "1";
    if (q === "kept") return tr.getAttribute("data-retuned") === "0";
    if (q === "changed") return tr.getAttribute("data-changed") === "1";
    if (q.indexOf("limiter:") === 0) {
      var want = q.slice(8);
      return tr.getAttribute("data-limiter").split(/[\/+]/).some(function (w) { return w.trim() === want; });
    }
    if (q.indexOf("why:") === 0) return tr.getAttribute("data-why") === q.slice(4);
    return true;
  }
  function apply() {
    var text = search.value.toLowerCase(), n = 0;
    for (var i = 0; i < rows.length; i++) {
      var tr = rows[i];
      var ok = matches(tr, question) && (text === "" || tr.textContent.toLowerCase().indexOf(text) >= 0 ||
        tr.cells[1].title.toLowerCase().indexOf(text) >= 0);
      tr.className = tr.className.replace(/ ?hidden/g, "") + (ok ? "" : " hidden");
      if (ok) n++;
    }
    shown.textContent = n + " of " + rows.length + " kernel(s) shown";
    document.body.setAttribute("data-shown", String(n));
    for (var b = 0; b < buttons.length; b++)
      buttons[b].className = buttons[b].getAttribute("data-q") === question ? "on" : "";
  }
  function key(tr, col) {
    var td = tr.cells[col], v = td.getAttribute("data-v");
    return v === null ? td.textContent.toLowerCase() : +v;
  }
  function sort(col, desc) {
    for (var h = 0; h < heads.length; h++) heads[h].classList.remove("asc", "desc");
    heads[col].classList.add(desc ? "desc" : "asc");
    var sorted = rows.slice().sort(function (a, b) {
      var x = key(a, col), y = key(b, col);
      var c = x < y ? -1 : x > y ? 1 : rows.indexOf(a) - rows.indexOf(b);
      return desc ? -c : c;
    });
    var frag = document.createDocumentFragment();
    for (var i = 0; i < sorted.length; i++) frag.appendChild(sorted[i]);
    body.appendChild(frag);
  }
  function column(name) {
    for (var h = 0; h < heads.length; h++) if (heads[h].getAttribute("data-col") === name) return h;
    return -1;
  }
  for (var h = 0; h < heads.length; h++) {
    (function (col) {
      heads[col].addEventListener("click", function () {
        sort(col, heads[col].classList.contains("asc"));
      });
    })(h);
  }
  for (var b = 0; b < buttons.length; b++) {
    buttons[b].addEventListener("click", function () {
      question = this.getAttribute("data-q");
      apply();
    });
  }
  search.addEventListener("input", apply);
  function fromHash() {
    var parts = decodeURIComponent(location.hash.slice(1)).split("&");
    for (var i = 0; i < parts.length; i++) {
      var kv = parts[i].split("="), k = kv[0], v = kv.slice(1).join("=");
      if (k === "q") question = v;
      if (k === "sort") {
        var desc = v.charAt(0) === "-", col = column(desc ? v.slice(1) : v);
        if (col >= 0) sort(col, desc);
      }
    }
    apply();
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();
  document.body.setAttribute("data-rendered", String(rows.length));
  document.body.setAttribute("data-render-ms", performance.now().toFixed(1));
})();
