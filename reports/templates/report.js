// Click a header of a table.sortable to sort its rows; click again to reverse. Cells sort by their
// data-sort attribute (numbers numerically, the rest as text); empty values always go last.
(function () {
  "use strict";
  function key(row, i) {
    var cell = row.children[i];
    return cell ? (cell.getAttribute("data-sort") || cell.textContent || "").trim() : "";
  }
  function sortTable(table, col, type) {
    var th = table.tHead.rows[0].cells[col];
    var asc = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a, col), y = key(b, col);
      if (x === "" || y === "") { return x === y ? 0 : (x === "" ? 1 : -1); }
      var r = type === "num" ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
      return asc ? r : -r;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.setAttribute("tabindex", "0");
      var go = function () { sortTable(table, i, th.getAttribute("data-type") || "text"); };
      th.addEventListener("click", go);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); go(); } });
    });
  });
})();
