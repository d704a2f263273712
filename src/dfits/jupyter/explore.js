// dfits cube explorer: the browser half of dfits.explore (an anywidget ES module, no build).
// The kernel reads one plane per move (float32 buffer) or one spectrum (float64 buffer);
// this module applies limits, stretch, colour map and NaN colour, draws the spectrum with
// world-unit axes, and measures each latency from input event to drawn canvas.

const CMAPS = {
  viridis: ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779",
    "#6ece58", "#b5de2b", "#fde725"],
  magma: ["#000004", "#180f3d", "#440f76", "#721f81", "#9e2f7f", "#cd4071", "#f1605d",
    "#fd9668", "#feca8d", "#fcfdbf"],
  gray: ["#000000", "#ffffff"],
  coolwarm: ["#3b4cc0", "#7092f3", "#aac7fd", "#dddddd", "#f7b89c", "#e7745b", "#b40426"],
};
const STRETCH = {
  linear: (t) => t,
  sqrt: (t) => Math.sqrt(t),
  log: (t) => Math.log10(1000 * t + 1) / Math.log10(1001),
  asinh: (t) => Math.asinh(10 * t) / Math.asinh(10),
};

function rgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

function lut(name) {
  const stops = (CMAPS[name] || CMAPS.viridis).map(rgb);
  const out = new Uint8Array(256 * 3);
  for (let i = 0; i < 256; i++) {
    const f = (i / 255) * (stops.length - 1);
    const k = Math.min(Math.floor(f), stops.length - 2);
    const u = f - k;
    for (let c = 0; c < 3; c++) out[i * 3 + c] = Math.round(stops[k][c] * (1 - u) + stops[k + 1][c] * u);
  }
  return out;
}

// a buffer from the kernel (DataView) as a typed array, copied when unaligned
function typed(view, Kind) {
  const size = Kind.BYTES_PER_ELEMENT;
  if (view.byteOffset % size === 0) return new Kind(view.buffer, view.byteOffset, view.byteLength / size);
  return new Kind(view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength));
}

function finiteLimits(data) {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (v === v) { if (v < lo) lo = v; if (v > hi) hi = v; }
  }
  return lo <= hi ? [lo, hi > lo ? hi : lo + 1] : null;
}

function ticks(lo, hi, n) {
  const span = hi - lo || Math.abs(hi) || 1;
  const raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

function el_(tag, attrs = {}, parent = null) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") e.textContent = v; else if (k === "style") e.style.cssText = v; else e.setAttribute(k, v);
  }
  if (parent) parent.appendChild(e);
  return e;
}

function controls(root, info, model) {
  const bar = el_("div", { class: "dfx-bar", style: "display:flex;gap:6px;align-items:center;flex-wrap:wrap;font:12px sans-serif" }, root);
  const c = {};
  c.play = el_("button", { class: "dfx-play", text: "▶", title: "play through the channels" }, bar);
  c.slider = el_("input", { class: "dfx-slider", type: "range", min: 0, max: Math.max(info.nchan - 1, 0), step: 1, style: "width:220px" }, bar);
  c.label = el_("span", { class: "dfx-label", style: "min-width:190px;font-family:monospace" }, bar);
  c.stokes = el_("select", { class: "dfx-stokes", title: "Stokes" }, bar);
  (info.stokes || []).forEach((s, i) => el_("option", { value: i, text: s }, c.stokes));
  if (!(info.stokes || []).length) c.stokes.style.display = "none";
  c.stretch = el_("select", { class: "dfx-stretch", title: "stretch" }, bar);
  Object.keys(STRETCH).forEach((s) => el_("option", { value: s, text: s }, c.stretch));
  c.cmap = el_("select", { class: "dfx-cmap", title: "colour map" }, bar);
  Object.keys(CMAPS).forEach((s) => el_("option", { value: s, text: s }, c.cmap));
  c.mode = el_("select", { class: "dfx-mode", title: "what a drag does" }, bar);
  [["box", "drag: box spectrum"], ["pan", "drag: pan"]].forEach(([v, t]) => el_("option", { value: v, text: t }, c.mode));
  c.reset = el_("button", { class: "dfx-reset", text: "⤢", title: "whole field" }, bar);
  c.slab = el_("input", { class: "dfx-slab", type: "number", min: 0, value: 5, style: "width:44px", title: "moment 0: ± channels" }, bar);
  c.mom0 = el_("button", { class: "dfx-mom0", text: "mom0", title: "moment 0 of the slab (fused reduction)" }, bar);
  c.png = el_("button", { class: "dfx-png", text: "PNG", title: "save the view as PNG" }, bar);
  if (info.nchan <= 1) [c.play, c.slider, c.slab, c.mom0].forEach((e) => (e.style.display = "none"));
  c.stretch.value = model.get("stretch");
  c.cmap.value = model.get("cmap");
  // JupyterLab and Notebook 7 (Lumino) bind the arrow keys, Space and more to the notebook
  // wherever a focused element is not editable: a control marked so is skipped when they
  // match a shortcut, and its keys move the slider and the selections as in any page
  Object.values(c).forEach((e) => e.setAttribute("data-lm-suppress-shortcuts", "true"));
  return c;
}

function drawSpectrum(svg, info, values, channel, title) {
  const W = 520, H = 190, L = 62, R = 10, T = 18, B = 34;
  const xs = info.channels.length === values.length ? info.channels : values.map((_, i) => i);
  const unit = info.spectral_unit ? ` [${info.spectral_unit}]` : "";
  let ylo = Infinity, yhi = -Infinity;
  values.forEach((v) => { if (v === v) { ylo = Math.min(ylo, v); yhi = Math.max(yhi, v); } });
  if (!(ylo <= yhi)) { ylo = 0; yhi = 1; }
  if (yhi === ylo) { yhi += 1; ylo -= 1; }
  const xlo = Math.min(xs[0], xs[xs.length - 1]), xhi = Math.max(xs[0], xs[xs.length - 1]) || xlo + 1;
  const X = (v) => L + ((v - xlo) / ((xhi - xlo) || 1)) * (W - L - R);
  const Y = (v) => H - B - ((v - ylo) / (yhi - ylo)) * (H - T - B);
  const parts = [];
  let seg = [];
  values.forEach((v, i) => {
    if (v === v) seg.push(`${X(xs[i]).toFixed(1)},${Y(v).toFixed(1)}`);
    else if (seg.length) { parts.push(seg); seg = []; }
  });
  if (seg.length) parts.push(seg);
  const g = [`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#888"/>`];
  ticks(xlo, xhi, 5).forEach((t) => g.push(`<line x1="${X(t)}" x2="${X(t)}" y1="${H - B}" y2="${H - B + 4}" stroke="#888"/><text x="${X(t)}" y="${H - B + 15}" font-size="10" text-anchor="middle">${+t.toPrecision(6)}</text>`));
  ticks(ylo, yhi, 4).forEach((t) => g.push(`<line x1="${L - 4}" x2="${L}" y1="${Y(t)}" y2="${Y(t)}" stroke="#888"/><text x="${L - 6}" y="${Y(t) + 3}" font-size="10" text-anchor="end">${+t.toPrecision(4)}</text>`));
  parts.forEach((p) => g.push(`<polyline points="${p.join(" ")}" fill="none" stroke="#1f77b4" stroke-width="1.2"/>`));
  if (channel < xs.length) g.push(`<line class="dfx-chan" x1="${X(xs[channel])}" x2="${X(xs[channel])}" y1="${T}" y2="${H - B}" stroke="#d62728" stroke-dasharray="3,2"/>`);
  g.push(`<text x="${(L + W - R) / 2}" y="${H - 4}" font-size="11" text-anchor="middle">${info.spectral_name || "channel"}${unit}</text>`);
  g.push(`<text x="12" y="${(T + H - B) / 2}" font-size="11" text-anchor="middle" transform="rotate(-90 12 ${(T + H - B) / 2})">${info.bunit || "value"}</text>`);
  g.push(`<text x="${L}" y="12" font-size="11">${title}</text>`);
  svg.innerHTML = g.join("");
  svg.dataset.values = JSON.stringify(Array.from(values, (v) => (v === v ? v : null)));
}

function render({ model, el }) {
  const info = model.get("info");
  const [VH, VW] = model.get("view");
  const root = el_("div", { class: "dfits-explore", style: `font:12px sans-serif;display:inline-block;padding:4px;max-width:${Math.max(VW, 520) + 8}px` }, el);
  const c = controls(root, info, model);
  const canvas = el_("canvas", { class: "dfx-canvas", width: VW, height: VH, style: `display:block;margin-top:4px;background:#222;cursor:crosshair;width:${VW}px;height:${VH}px` }, root);
  const readout = el_("div", { class: "dfx-readout", style: "font-family:monospace;min-height:16px" }, root);
  const note = el_("div", { class: "dfx-note", style: "color:#8a6d3b" }, root);
  const error = el_("div", { class: "dfx-error", style: "color:#c00" }, root);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "dfx-spectrum");
  svg.setAttribute("width", 520); svg.setAttribute("height", 190);
  root.appendChild(svg);
  const ctx = canvas.getContext("2d");
  const off = document.createElement("canvas");
  const full = [0, info.ny, 0, info.nx];
  const S = { win: full.slice(), cur: null, lut: lut(model.get("cmap")), id: 0, pending: {},
    inflight: false, queued: null, cursorBusy: false, playing: false, drag: null, spectrum: null,
    lat: { plane: [], spectrum: [], box: [], cursor: [], moment0: [] }, draws: 0 };
  root.__dfits = S;  // the browser test reads latencies and state here

  function send(msg, t0) {
    const id = ++S.id;
    S.pending[id] = { t0, kind: msg.kind };
    model.send({ ...msg, id });
    return id;
  }
  function requestPlane(t0 = performance.now()) {
    if (S.inflight) { S.queued = S.queued || t0; return; }
    S.inflight = true;
    send({ kind: "plane", channel: model.get("channel"), stokes: model.get("stokes"), window: S.win, view: [VH, VW] }, t0);
  }
  // where the plane lies on the canvas (letterboxed, square pixels, origin lower left)
  function geometry() {
    const p = S.cur; if (!p) return null;
    const [h, w] = p.shape;
    const s = Math.min(VW / w, VH / h);
    return { s, ox: (VW - w * s) / 2, oy: (VH - h * s) / 2, h, w };
  }
  function filePixel(cx, cy) {
    const g = geometry(); if (!g) return null;
    const j = Math.floor((cx - g.ox) / g.s), i = g.h - 1 - Math.floor((cy - g.oy) / g.s);
    if (i < 0 || j < 0 || i >= g.h || j >= g.w) return null;
    const p = S.cur;
    return { y: p.window[0] + i * p.step, x: p.window[2] + j * p.step, i, j };
  }
  function limits(p) {
    const lim = p.kind === "plane" ? model.get("limits") : null;
    return lim && lim[1] > lim[0] ? lim : finiteLimits(p.data);
  }
  function draw() {
    const p = S.cur; if (!p) return;
    const [h, w] = p.shape;
    off.width = w; off.height = h;
    const img = new ImageData(w, h), px = img.data;
    const lim = limits(p), f = STRETCH[model.get("stretch")] || STRETCH.linear, L = S.lut;
    const nan = rgb(model.get("nan_color"));
    const lo = lim ? lim[0] : 0, span = lim ? lim[1] - lim[0] : 1;
    for (let i = 0; i < h; i++) {
      const row = (h - 1 - i) * w;  // origin lower: the first row of the plane at the bottom
      for (let j = 0; j < w; j++) {
        const v = p.data[i * w + j], o = (row + j) * 4;
        if (v !== v || !lim) { px[o] = nan[0]; px[o + 1] = nan[1]; px[o + 2] = nan[2]; }
        else {
          const t = Math.min(Math.max((v - lo) / span, 0), 1);
          const k = Math.round(f(t) * 255) * 3;
          px[o] = L[k]; px[o + 1] = L[k + 1]; px[o + 2] = L[k + 2];
        }
        px[o + 3] = 255;
      }
    }
    off.getContext("2d").putImageData(img, 0, 0);
    const g = geometry();
    ctx.imageSmoothingEnabled = false;
    ctx.fillStyle = "#222"; ctx.fillRect(0, 0, VW, VH);
    ctx.drawImage(off, g.ox, g.oy, w * g.s, h * g.s);
    if (S.drag && S.drag.box) {
      const d = S.drag; ctx.strokeStyle = "#fff"; ctx.setLineDash([4, 3]);
      ctx.strokeRect(d.x0, d.y0, d.x1 - d.x0, d.y1 - d.y0); ctx.setLineDash([]);
    }
    S.draws += 1;
    Object.assign(canvas.dataset, { draws: S.draws, channel: p.channel, label: p.label || "",
      step: p.step, window: p.window.join(","), kind: p.kind, stretch: model.get("stretch") });
    note.textContent = [model.get("note"), p.note || "", lim ? "" : "no finite value: NaN colour"].filter(Boolean).join("; ");
  }
  function onPlane(msg, buffers, t0) {
    S.cur = { ...msg, data: typed(buffers[0], Float32Array) };
    c.label.textContent = msg.kind === "moment0" ? `moment 0 from channel ${msg.channel}` : msg.label;
    draw();
    if (t0 !== undefined) S.lat[msg.kind].push(performance.now() - t0);
    if (S.spectrum) redrawSpectrum();
  }
  function redrawSpectrum() {
    const sp = S.spectrum;
    const where = sp.box ? `box mean y ${sp.where[0]}:${sp.where[1]}, x ${sp.where[2]}:${sp.where[3]}` : `spectrum at y=${sp.where[0]}, x=${sp.where[1]}`;
    drawSpectrum(svg, info, sp.values, model.get("channel"), where);
    svg.dataset.where = sp.where.join(",");
    svg.dataset.box = sp.box ? "1" : "0";
  }
  model.on("msg:custom", (msg, buffers) => {
    const req = S.pending[msg.id] || {}; delete S.pending[msg.id];
    if (msg.kind === "error") {
      error.textContent = msg.error;
      if (req.kind === "plane") S.inflight = false;
      if (req.kind === "cursor") S.cursorBusy = false;
      return;
    }
    error.textContent = "";
    if (msg.kind === "plane" || msg.kind === "moment0") {
      if (msg.kind === "plane") S.inflight = false;
      onPlane(msg, buffers, req.t0);
      if (S.queued !== null) { const t0 = S.queued; S.queued = null; requestPlane(t0); }
      else if (S.playing) requestAnimationFrame(step);
    } else if (msg.kind === "spectrum") {
      S.spectrum = { ...msg, values: typed(buffers[0], Float64Array) };
      redrawSpectrum();
      if (req.t0 !== undefined) S.lat[msg.box ? "box" : "spectrum"].push(performance.now() - req.t0);
    } else if (msg.kind === "progress") {
      c.label.textContent = `moment 0: computing… ${Math.round(100 * msg.fraction)} %`;
    } else if (msg.kind === "cursor") {
      S.cursorBusy = false;
      const v = msg.value === null ? "NaN" : (+msg.value).toPrecision(6);
      readout.textContent = `x=${msg.x} y=${msg.y}  ${msg.text}  value=${v} ${info.bunit || ""}`;
      if (req.t0 !== undefined) S.lat.cursor.push(performance.now() - req.t0);
    }
  });
  function step() {
    if (!S.playing) return;
    const k = (model.get("channel") + 1) % Math.max(info.nchan, 1);
    model.set("channel", k); model.save_changes();
  }
  function onChannel() {
    c.slider.value = model.get("channel");
    requestPlane(S.t0 || performance.now()); S.t0 = undefined;
  }
  model.on("change:channel", onChannel);
  model.on("change:stokes", onChannel);
  const redraw = () => { S.lut = lut(model.get("cmap")); c.stretch.value = model.get("stretch"); c.cmap.value = model.get("cmap"); draw(); };
  ["change:stretch", "change:cmap", "change:nan_color", "change:limits", "change:note"].forEach((e) => model.on(e, redraw));
  model.on("change:error", () => (error.textContent = model.get("error")));

  c.slider.addEventListener("input", () => {
    S.t0 = performance.now();
    model.set("channel", +c.slider.value); model.save_changes();
  });
  c.stokes.addEventListener("change", () => { S.t0 = performance.now(); model.set("stokes", +c.stokes.value); model.save_changes(); });
  c.stretch.addEventListener("change", () => { model.set("stretch", c.stretch.value); model.save_changes(); });
  c.cmap.addEventListener("change", () => { model.set("cmap", c.cmap.value); model.save_changes(); });
  c.play.addEventListener("click", () => {
    S.playing = !S.playing; c.play.textContent = S.playing ? "⏸" : "▶";
    if (S.playing) step();
  });
  c.reset.addEventListener("click", () => { S.win = full.slice(); requestPlane(); });
  c.mom0.addEventListener("click", () => {
    const k = model.get("channel"), half = Math.max(0, +c.slab.value || 0);
    c.label.textContent = `moment 0 of channels ${Math.max(k - half, 0)}–${Math.min(k + half, info.nchan - 1)}: computing…`;
    send({ kind: "moment0", slab: [k - half, k + half] }, performance.now());
  });
  c.png.addEventListener("click", () => {
    canvas.toBlob(async (blob) => {
      const a = el_("a", { href: URL.createObjectURL(blob), download: "dfits-view.png" });
      a.click();
      model.send({ kind: "png" }, undefined, [await blob.arrayBuffer()]);
    }, "image/png");
  });
  const pos = (e) => { const r = canvas.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
  canvas.addEventListener("mousedown", (e) => {
    const [x, y] = pos(e);
    S.drag = { x0: x, y0: y, x1: x, y1: y, t0: performance.now(), box: false, win: S.win.slice() };
  });
  canvas.addEventListener("mousemove", (e) => {
    const [x, y] = pos(e);
    const d = S.drag;
    if (d) {
      d.x1 = x; d.y1 = y;
      if (Math.abs(x - d.x0) + Math.abs(y - d.y0) > 3) d.box = c.mode.value === "box";
      if (d.box) draw();
      return;
    }
    const fp = filePixel(x, y);
    if (!fp) return;
    const v = S.cur.data[fp.i * S.cur.shape[1] + fp.j];
    readout.textContent = `x=${fp.x} y=${fp.y}  value=${v === v ? v.toPrecision(6) : "NaN"}`;
    if (!S.cursorBusy && S.cur.kind === "plane") { S.cursorBusy = true; send({ kind: "cursor", y: fp.y, x: fp.x }, performance.now()); }
  });
  function onUp() {
    const d = S.drag; if (!d) return;
    S.drag = null;
    const moved = Math.abs(d.x1 - d.x0) + Math.abs(d.y1 - d.y0) > 3;
    const a = filePixel(d.x0, d.y0), b = filePixel(d.x1, d.y1);
    if (!moved) { if (a) send({ kind: "spectrum", y: a.y, x: a.x }, d.t0); return; }
    if (c.mode.value === "box" && a && b) {
      draw();
      send({ kind: "box", box: [Math.min(a.y, b.y), Math.max(a.y, b.y) + 1, Math.min(a.x, b.x), Math.max(a.x, b.x) + 1] }, d.t0);
    } else if (c.mode.value === "pan") {
      const g = geometry(), st = S.cur.step;
      const dx = Math.round(((d.x1 - d.x0) / g.s) * st), dy = Math.round(((d.y1 - d.y0) / g.s) * st);
      S.win = shift(d.win, dy, -dx);
      requestPlane(d.t0);
    }
  }
  window.addEventListener("mouseup", onUp);
  function shift(w, dy, dx) {
    const h = w[1] - w[0], wd = w[3] - w[2];
    const y0 = Math.min(Math.max(w[0] + dy, 0), info.ny - h), x0 = Math.min(Math.max(w[2] + dx, 0), info.nx - wd);
    return [y0, y0 + h, x0, x0 + wd];
  }
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const [x, y] = pos(e), fp = filePixel(x, y); if (!fp) return;
    const f = e.deltaY > 0 ? 1.25 : 0.8, w = S.win;
    const h = Math.min(Math.max(Math.round((w[1] - w[0]) * f), 8), info.ny);
    const wd = Math.min(Math.max(Math.round((w[3] - w[2]) * f), 8), info.nx);
    const y0 = Math.round(fp.y - (fp.y - w[0]) * (h / (w[1] - w[0])));
    const x0 = Math.round(fp.x - (fp.x - w[2]) * (wd / (w[3] - w[2])));
    S.win = shift([y0, y0 + h, x0, x0 + wd], 0, 0);
    requestPlane(performance.now());
  }, { passive: false });

  c.slider.value = model.get("channel");
  if (model.get("error")) error.textContent = model.get("error");
  requestPlane();
  return () => { S.playing = false; window.removeEventListener("mouseup", onUp); };
}

export default { render };
