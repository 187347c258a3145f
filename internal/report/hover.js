// Hovering a second of any chart shows that second's numbers and a cursor
// on every chart of the deploy. Reads the section's hover-data JSON only.
(function () {
  "use strict";
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }
  function fmt(n) { return Number(n).toLocaleString("en-US"); }
  function ms(v) { return v >= 1000 ? (v / 1000).toFixed(2) + " s" : v.toFixed(v < 10 ? 2 : 1) + " ms"; }
  function row(label, value, cls) {
    return '<div class="r' + (cls ? " " + cls : "") + '"><span>' + esc(label) + '</span><span class="n">' + value + "</span></div>";
  }
  document.querySelectorAll("section.deploy").forEach(function (sec) {
    var el = sec.querySelector("script.hover-data");
    var tip = sec.querySelector(".tip");
    if (!el || !tip) { return; }
    var d = JSON.parse(el.textContent);
    var svgs = sec.querySelectorAll(".charts svg");
    var box = sec; // the tooltip is positioned in its section
    function at(t, list, host) {
      for (var i = 0; i < list.length; i++) {
        var p = list[i];
        if (p[0] === host && t >= p[1] && t < p[2]) { return p; }
      }
      return null;
    }
    // idle says where a host stands between its phases.
    function idle(t, host) {
      var first = Infinity, last = -Infinity;
      d.ph.forEach(function (p) {
        if (p[0] === host) { first = Math.min(first, p[1]); last = Math.max(last, p[2]); }
      });
      if (first === Infinity) { return "not reached by the deploy"; }
      if (t < first) { return "waiting"; }
      if (t >= last) { return "done"; }
      return "between phases";
    }
    function show(t, ev) {
      var html = "<b>" + t.toFixed(1) + " s</b>";
      var i = Math.floor(t - d.off);
      if (d.s.length && i >= 0 && i < d.s.length) {
        var s = d.s[i];
        html += " <span class=\"muted\">(second " + i + " of the load)</span>";
        html += row("requests", fmt(s[0]));
        html += row("reached nothing", fmt(s[4]), s[4] > 0 ? "bad" : "");
        html += row("ok", fmt(s[1]));
        if (s[2]) { html += row("drain signals", fmt(s[2])); }
        if (s[3]) { html += row("app errors", fmt(s[3]), "warn"); }
        if (s[5]) { html += row("probe errors", fmt(s[5]), "warn"); }
        if (s[0]) { html += row("p50 / p99", ms(s[6]) + " / " + ms(s[7])); }
        if (s[8]) { html += row("versions", esc(s[8])); }
      }
      if (d.hosts.length) {
        html += "<hr>";
        d.hosts.forEach(function (h, hi) {
          var ph = at(t, d.ph, hi);
          var tg = at(t, d.tg, hi);
          var what = ph ? ph[3] + (ph[4] ? " (failed)" : "") : idle(t, hi);
          if (tg) { what += " · LB " + tg[3] + (tg[4] ? "" : ", out"); }
          html += row(h, esc(what), ph && ph[4] ? "bad" : "");
        });
        var fl = at(t, d.ph, -1);
        if (fl) { html += row("fleet", esc(fl[3])); }
      }
      tip.innerHTML = html;
      tip.hidden = false;
      var r = box.getBoundingClientRect();
      var x = ev.clientX - r.left + 14, y = ev.clientY - r.top + 14;
      if (x + tip.offsetWidth > r.width) { x = ev.clientX - r.left - tip.offsetWidth - 14; }
      tip.style.left = x + "px";
      tip.style.top = y + "px";
    }
    function move(ev) {
      var svg = ev.currentTarget;
      var vb = svg.viewBox.baseVal;
      var r = svg.getBoundingClientRect();
      var x = (ev.clientX - r.left) * vb.width / r.width;
      var left = d.x0, width = d.w;
      if (x < left || x > left + width) { hide(); return; }
      var t = (x - left) / width * d.span;
      svgs.forEach(function (s) {
        var c = s.querySelector(".cursor");
        if (c) { c.setAttribute("x1", x); c.setAttribute("x2", x); c.setAttribute("visibility", "visible"); }
      });
      show(t, ev);
    }
    function hide() {
      tip.hidden = true;
      svgs.forEach(function (s) {
        var c = s.querySelector(".cursor");
        if (c) { c.setAttribute("visibility", "hidden"); }
      });
    }
    svgs.forEach(function (s) {
      s.addEventListener("mousemove", move);
      s.addEventListener("mouseleave", hide);
    });
  });
})();
