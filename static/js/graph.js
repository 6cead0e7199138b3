// An entity's neighbourhood as a small SVG graph: the entity in the middle, every neighbour one link away.
// A compact force layout (repulsion between nodes, springs along links, a pull to the middle), computed
// before drawing so the picture does not jump. Each neighbour is a link to its page; nodes can be dragged.
// Without script the page shows the same neighbours as a plain list.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var data = document.getElementById("graph-data");
  var box = document.getElementById("graph");
  if (!data || !box) return;
  var graph = JSON.parse(data.textContent);
  var W, H, L, R = 10;
  var nodes = [graph.center].concat(graph.nodes);
  var byId = {};
  nodes.forEach(function (n) { byId[n.id] = n; });
  // One line per pair, whatever the number of claims between them; the claims become its tooltip.
  var pairs = {};
  graph.links.forEach(function (l) {
    var key = [l.source, l.target].sort().join("|");
    if (!byId[l.source] || !byId[l.target]) return;
    (pairs[key] = pairs[key] || { a: byId[l.source], b: byId[l.target], labels: [] }).labels.push(l.label);
  });
  var links = Object.keys(pairs).map(function (k) { return pairs[k]; });

  function tick(alpha) {
    for (var i = 0; i < nodes.length; i++) {
      for (var j = i + 1; j < nodes.length; j++) {
        var a = nodes[i], b = nodes[j], dx = b.x - a.x, dy = b.y - a.y, d2 = dx * dx + dy * dy || 1;
        var f = (L * L * 0.25 * alpha) / d2, d = Math.sqrt(d2);
        a.vx -= (f * dx) / d; a.vy -= (f * dy) / d; b.vx += (f * dx) / d; b.vy += (f * dy) / d;
      }
    }
    links.forEach(function (l) {
      var dx = l.b.x - l.a.x, dy = l.b.y - l.a.y, d = Math.sqrt(dx * dx + dy * dy) || 1;
      var f = ((d - L) * 0.06 * alpha) / d;
      l.a.vx += f * dx; l.a.vy += f * dy; l.b.vx -= f * dx; l.b.vy -= f * dy;
    });
    nodes.forEach(function (n, i) {
      n.vx += (W / 2 - n.x) * 0.01 * alpha; n.vy += (H / 2 - n.y) * 0.01 * alpha;
      if (i === 0 || n.fixed) { n.vx = n.vy = 0; return; }
      n.x = Math.max(n.half, Math.min(W - n.half, n.x + n.vx)); n.y = Math.max(28, Math.min(H - 24, n.y + n.vy));
      n.vx *= 0.6; n.vy *= 0.6;
    });
  }
  // The layout fits the box's width (1:1 with the page's pixels, so labels keep their size on a phone).
  function layout(width) {
    W = Math.max(280, width); H = Math.round(Math.min(380, Math.max(280, W * 0.55)));
    L = Math.min(W, H) * 0.36;
    var longest = W < 500 ? 16 : 24;
    nodes.forEach(function (n, i) {
      n.name = n.type === "Self" ? "You" : n.label.length > longest ? n.label.slice(0, longest - 1) + "…" : n.label;
      n.half = Math.min(W / 2, n.name.length * 3.6 + 6);  // half the label's width (12px text): it stays inside
      var angle = (2 * Math.PI * i) / Math.max(1, nodes.length - 1) + 0.3;
      n.x = i === 0 ? W / 2 : W / 2 + L * Math.cos(angle);
      n.y = i === 0 ? H / 2 : H / 2 + L * 0.8 * Math.sin(angle);
      n.vx = 0; n.vy = 0; n.fixed = false;
    });
    for (var k = 300; k > 0; k--) tick(k / 300);
  }

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var a in attrs) e.setAttribute(a, attrs[a]);
    if (parent) parent.appendChild(e);
    return e;
  }
  var svg, lines = [], groups = [], drawnWidth = 0, dragged = null, moved = false;
  function draw() {
    links.forEach(function (l, i) {
      lines[i].setAttribute("x1", l.a.x); lines[i].setAttribute("y1", l.a.y);
      lines[i].setAttribute("x2", l.b.x); lines[i].setAttribute("y2", l.b.y);
    });
    nodes.forEach(function (n, i) { groups[i].setAttribute("transform", "translate(" + n.x + "," + n.y + ")"); });
  }
  function point(event) {
    var p = svg.createSVGPoint(); p.x = event.clientX; p.y = event.clientY;
    return p.matrixTransform(svg.getScreenCTM().inverse());
  }
  // Dragging a neighbour moves it (and settles the others); a press without a move is a click, which follows it.
  function draggable(g, n) {
    g.addEventListener("pointerdown", function (event) { dragged = n; moved = false; g.setPointerCapture(event.pointerId); });
    g.addEventListener("pointermove", function (event) {
      if (dragged !== n) return;
      var p = point(event);
      if (Math.abs(p.x - n.x) + Math.abs(p.y - n.y) > 3) moved = true;
      if (!moved) return;
      n.x = p.x; n.y = p.y; n.fixed = true;
      for (var s = 0; s < 3; s++) tick(0.3);
      draw();
    });
    g.addEventListener("pointerup", function () { dragged = null; });
    g.addEventListener("click", function (event) { if (moved) { event.preventDefault(); moved = false; } });
  }
  function render() {
    var width = Math.round(box.clientWidth);
    if (svg && Math.abs(width - drawnWidth) < 40) return;
    drawnWidth = width;
    layout(width);
    if (svg) box.removeChild(svg);
    svg = el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "Connections of " + graph.center.label });
    lines = links.map(function (l) {
      var line = el("line", { class: "glink" }, svg);
      el("title", {}, line).textContent = l.labels.join("\n");
      return line;
    });
    groups = nodes.map(function (n, i) {
      var center = i === 0;
      var g = el(center ? "g" : "a", center ? { class: "gnode center" } : { class: "gnode", href: n.url, tabindex: "-1" }, svg);
      g.setAttribute("data-type", n.type.toLowerCase());
      g.setAttribute("data-id", n.id);
      el("circle", { r: center ? R + 5 : R }, g);
      var text = el("text", { y: center ? -R - 11 : R + 16, "text-anchor": "middle" }, g);
      text.textContent = n.name;
      el("title", {}, g).textContent = n.label + " (" + n.type.toLowerCase() + ")";
      if (!center) draggable(g, n);
      return g;
    });
    draw();
    box.appendChild(svg);
  }
  box.hidden = false;
  render();
  window.addEventListener("resize", render);  // cheap for a neighbourhood (at most 100 nodes); no debounce needed
})();
