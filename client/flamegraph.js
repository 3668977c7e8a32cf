// The interactive part of offcpuctl's flame graphs, embedded in each SVG:
// click a frame to zoom to it, "Reset zoom" (or Escape) to go back, "Search"
// (or Ctrl-F) to highlight frames whose name matches a regular expression and
// see the share of time they hold. Nothing is fetched: the file stands alone.
"use strict";
var svgns = "http://www.w3.org/2000/svg";
var frames = [];      // {g, rect, text, x, w, y, name, fill, lost, keep} as written
var left, width;      // the frames' area, in px
var charWidth;        // of the label font, in px
var zoomed = null;
var searchTerm = null;

function frameName(g) {
    // the title reads "NAME (time, share)": the name is what precedes the last " ("
    var t = g.querySelector("title").textContent;
    var cut = t.lastIndexOf(" (");
    return cut < 0 ? t : t.substring(0, cut);
}

function label(name, w) {
    var fit = Math.floor((w - 6) / charWidth);
    if (fit < 3)
        return "";
    return name.length <= fit ? name : name.substring(0, fit - 2) + "..";
}

function place(f, x, w) {
    f.rect.setAttribute("x", x.toFixed(3));
    f.rect.setAttribute("width", w.toFixed(3));
    f.text.setAttribute("x", (x + 3).toFixed(3));
    f.text.textContent = label(f.name, w);
    if (f.lost) {           // a diff's time lost since before, right of what is left
        f.lost.setAttribute("x", (x + w * f.keep).toFixed(3));
        f.lost.setAttribute("width", (w * (1 - f.keep)).toFixed(3));
    }
}

function zoom(target) {
    var x0 = target.x, w0 = target.w, eps = 1e-6;
    var scale = width / w0;
    zoomed = target;
    document.getElementById("reset").setAttribute("opacity", "1");
    frames.forEach(function (f) {
        var inside = f.x >= x0 - eps && f.x + f.w <= x0 + w0 + eps;
        var around = f.x <= x0 + eps && f.x + f.w >= x0 + w0 - eps;
        if (f.y <= target.y && inside) {        // the target and what it called
            f.g.removeAttribute("display");
            f.g.removeAttribute("opacity");
            place(f, left + (f.x - x0) * scale, f.w * scale);
        } else if (f.y > target.y && around) {  // what called it: kept, faded
            f.g.removeAttribute("display");
            f.g.setAttribute("opacity", "0.6");
            place(f, left, width);
        } else {
            f.g.setAttribute("display", "none");
        }
    });
}

function reset() {
    zoomed = null;
    document.getElementById("reset").setAttribute("opacity", "0");
    frames.forEach(function (f) {
        f.g.removeAttribute("display");
        f.g.removeAttribute("opacity");
        place(f, f.x, f.w);
    });
}

function formatNs(ns) {
    if (ns < 1e6)
        return (ns / 1e3).toFixed(1) + " us";
    if (ns < 1e9)
        return (ns / 1e6).toFixed(1) + " ms";
    return (ns / 1e9).toFixed(2) + " s";
}

// Highlights the frames matching term; reports the share of the whole graph
// they hold, counting a matched frame's callees once.
function search(term) {
    var re, spans = [], sum = 0, end = -1, matched = document.getElementById("matched");
    try {
        re = new RegExp(term);
    } catch (e) {
        matched.textContent = "Invalid search: " + e.message;
        return;
    }
    searchTerm = term;
    frames.forEach(function (f) {
        var hit = re.test(f.name);
        f.rect.setAttribute("fill", hit ? "rgb(230,0,230)" : f.fill);
        if (hit)
            spans.push([f.x, f.x + f.w]);
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    spans.forEach(function (s) {
        if (s[1] <= end)
            return;
        sum += s[1] - Math.max(s[0], end);
        end = s[1];
    });
    var share = sum / width;
    var total = Number(document.getElementById("frames").getAttribute("data-total-ns"));
    matched.textContent = "Matched: " + (100 * share).toFixed(2) + "%" +
        (total > 0 ? " (" + formatNs(share * total) + ")" : "");
    document.getElementById("clear").setAttribute("opacity", "1");
}

function clearSearch() {
    searchTerm = null;
    frames.forEach(function (f) { f.rect.setAttribute("fill", f.fill); });
    document.getElementById("matched").textContent = "";
    document.getElementById("clear").setAttribute("opacity", "0");
}

function askSearch() {
    var term = prompt("Search frames (regular expression):", searchTerm || "");
    if (term)
        search(term);
}

function frameOf(node) {
    for (; node && node !== document; node = node.parentNode)
        if (node.classList && node.classList.contains("f"))
            return node;
    return null;
}

function init() {
    var area = document.getElementById("frames");
    left = Number(area.getAttribute("data-left"));
    width = Number(area.getAttribute("data-width"));
    charWidth = Number(area.getAttribute("data-char-width"));
    var byG = new Map();
    area.querySelectorAll("g.f").forEach(function (g) {
        var rect = g.querySelector("rect");
        var text = g.querySelector("text");
        if (!text) {    // narrow frames are written without a label: room for one on zoom
            text = document.createElementNS(svgns, "text");
            text.setAttribute("y", Number(rect.getAttribute("y")) + 12);
            g.appendChild(text);
        }
        var lost = g.querySelector("rect.lost");
        var f = {g: g, rect: rect, text: text, name: frameName(g), lost: lost,
                 keep: lost ? Number(lost.getAttribute("data-keep")) : 1,
                 x: Number(rect.getAttribute("x")), w: Number(rect.getAttribute("width")),
                 y: Number(rect.getAttribute("y")), fill: rect.getAttribute("fill")};
        frames.push(f);
        byG.set(g, f);
    });
    var details = document.getElementById("details");
    area.addEventListener("click", function (e) {
        var g = frameOf(e.target);
        if (g)
            zoom(byG.get(g));
    });
    area.addEventListener("mouseover", function (e) {
        var g = frameOf(e.target);
        if (g)
            details.textContent = g.querySelector("title").textContent;
    });
    area.addEventListener("mouseout", function () { details.textContent = " "; });
    document.getElementById("reset").addEventListener("click", reset);
    document.getElementById("search").addEventListener("click", askSearch);
    document.getElementById("clear").addEventListener("click", clearSearch);
    window.addEventListener("keydown", function (e) {
        if (e.key === "Escape") {
            reset();
        } else if (e.key === "f" && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            askSearch();
        }
    });
}

init();
