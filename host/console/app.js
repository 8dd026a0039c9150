// Trellis console: a single page over the gateway's REST API (/api) and its
// server-sent event streams. No framework, no build step, nothing loaded
// from elsewhere (the gateway's Content-Security-Policy refuses it anyway).
'use strict';

const main = document.getElementById('main');
const statusLine = document.getElementById('status');
let pageStreams = []; // AbortControllers of the open streams; closed on navigation
let navigation = 0;   // counts route() calls: a page that finishes loading after the next navigation opens no stream

// ---- API access -----------------------------------------------------------

function headers(extra) {
  const h = Object.assign({}, extra || {});
  const t = sessionStorage.getItem('trellis-token');
  if (t) h['Authorization'] = 'Bearer ' + t;
  return h;
}

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || ('HTTP ' + status));
    this.status = status;
    this.body = body;
  }
}

async function api(path, options) {
  const o = Object.assign({}, options || {});
  o.headers = headers(o.headers);
  const r = await fetch(path, o);
  if (r.status === 401) { askToken(); throw new ApiError(401, await r.json().catch(() => null)); }
  if (r.status === 204) return null;
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new ApiError(r.status, body);
  return body;
}

// Server-sent events over fetch (EventSource cannot send a bearer token):
// calls onEvent(name, data) per event, reconnects after a failure.
function stream(path, onEvent, page) {
  const ctl = new AbortController();
  if (page !== undefined && page !== navigation) { ctl.abort(); return ctl; }
  pageStreams.push(ctl);
  (async () => {
    let delay = 500;
    while (!ctl.signal.aborted) {
      try {
        const r = await fetch(path, { headers: headers({ Accept: 'text/event-stream' }), signal: ctl.signal });
        if (r.status === 401) { askToken(); return; }
        if (!r.ok) throw new Error('HTTP ' + r.status);
        setStatus('live', 'ok');
        delay = 500;
        const reader = r.body.getReader();
        const decoder = new TextDecoder();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            let name = 'message';
            const data = [];
            for (const line of block.split('\n')) {
              if (line.startsWith('event:')) name = line.slice(6).trim();
              else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
            }
            if (data.length) onEvent(name, JSON.parse(data.join('\n')));
          }
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
        setStatus('reconnecting…', 'warn');
      }
      await new Promise((res) => setTimeout(res, delay));
      delay = Math.min(delay * 2, 10000);
    }
  })();
  return ctl;
}

function closeStreams() {
  for (const c of pageStreams) c.abort();
  pageStreams = [];
}

function setStatus(text, cls) {
  statusLine.textContent = text;
  statusLine.className = 'status ' + (cls || '');
}

function askToken() {
  const form = document.getElementById('login');
  form.hidden = false;
  main.hidden = true;
}

document.getElementById('login').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem('trellis-token', document.getElementById('token').value.trim());
  document.getElementById('login').hidden = true;
  main.hidden = false;
  route();
});

// ---- small DOM helpers ----------------------------------------------------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function table(head, rows) {
  return el('table', {}, el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))), el('tbody', {}, rows));
}

function flags(v) {
  if (!v || !Array.isArray(v.value)) return '';
  const names = ['in-alarm', 'fault', 'overridden', 'out-of-service'];
  const set = v.value.map((on, i) => (on ? names[i] : null)).filter(Boolean);
  return set.length ? set.join(', ') : 'normal';
}

function fail(where, e) {
  where.replaceChildren(el('p', { class: 'error' }, e.message));
}

// ---- pages ----------------------------------------------------------------

let devices = [];
let currentDevice = null;

const enc = encodeURIComponent;

async function pointsPage(page) {
  devices = await api('/api/devices');
  if (!devices.length) { main.replaceChildren(el('p', {}, 'No device is served.')); return; }
  if (!devices.some((d) => d.instance === currentDevice)) currentDevice = devices[0].instance;
  const tabs = el('div', { class: 'tabs' }, devices.map((d) =>
    el('button', { class: d.instance === currentDevice ? 'active' : '', onclick: () => { currentDevice = d.instance; route(); } },
      `${d.name || 'device'} (${d.instance})`)));
  const d = devices.find((x) => x.instance === currentDevice);
  const info = el('p', { class: 'muted' }, `${d.on} — plugin ${d.plugin.name} ${d.plugin.version} (${d.state}), ${d.objects} objects`);
  const body = el('div', {}, el('p', { class: 'muted' }, 'loading…'));
  main.replaceChildren(el('h2', {}, 'Points'), tabs, info, body);
  const rows = await api(`/api/devices/${enc(currentDevice)}/objects`);
  const units = {};
  const trs = rows.map((r) => {
    const pv = r['present-value'];
    units[r.object] = r.units ? r.units.text : '';
    return el('tr', { 'data-object': r.object },
      el('td', {}, el('a', { href: `#/point/${enc(currentDevice)}/${enc(r.object)}` }, r.object)),
      el('td', {}, r.name),
      el('td', { class: 'pv', 'data-object': r.object }, pv ? pv.text : ''),
      el('td', { class: 'flags' }, flags(r['status-flags'])),
      el('td', {}, r['out-of-service'] ? r['out-of-service'].text : ''));
  });
  body.replaceChildren(table(['Object', 'Name', 'Present value', 'Status', 'Out of service'], trs));
  stream(`/api/devices/${enc(currentDevice)}/events`, (name, data) => {
    if (name === 'watching') main.dataset.watching = String(currentDevice);
    if (name === 'watching' && data.refused.length) {
      body.prepend(el('p', { class: 'warn' }, 'Not live (the device refused a COV subscription): ' +
        data.refused.map((r) => `${r.object} (${r.reason})`).join(', ')));
    }
    if (name !== 'point') return;
    const row = body.querySelector(`tr[data-object="${CSS.escape(data.object)}"]`);
    if (!row) return;
    const pv = data.values['present-value'];
    if (pv) {
      const u = units[data.object];
      row.querySelector('td.pv').textContent = u && u !== 'no-units' && typeof pv.value === 'number' ? `${pv.text} ${u}` : pv.text;
      row.classList.add('flash');
      setTimeout(() => row.classList.remove('flash'), 600);
    }
    if (data.values['status-flags']) row.querySelector('td.flags').textContent = flags(data.values['status-flags']);
  }, page);
}

async function pointPage(device, object, page) {
  const base = `/api/devices/${enc(device)}/objects/${enc(object)}`;
  const props = await api(base);
  const p = props.properties;
  const name = p['object-name'] ? p['object-name'].text : object;
  const units = p.units ? p.units.text : '';
  const chart = el('div', {});
  const result = el('span', { class: 'muted' });
  const value = el('input', { name: 'value', placeholder: 'value (e.g. 21.5, active, 3)', size: 24 });
  const priority = el('input', { name: 'priority', type: 'number', min: 1, max: 16, value: 8, size: 3 });
  const write = async (v) => {
    result.textContent = 'writing…';
    try {
      await api(`${base}/properties/present-value`, {
        method: 'PUT', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ value: v, priority: Number(priority.value) }),
      });
      result.textContent = v === null ? 'relinquished' : 'written';
      result.className = 'ok';
    } catch (e) { result.textContent = e.message; result.className = 'error'; }
  };
  const form = el('form', { class: 'write', onsubmit: (e) => { e.preventDefault(); write(value.value); } },
    'Write present-value', value, 'at priority', priority, el('button', { type: 'submit' }, 'Write'),
    el('button', { type: 'button', onclick: () => write(null) }, 'Relinquish'), result);
  const rows = Object.entries(p).map(([k, v]) =>
    el('tr', {}, el('td', {}, k), el('td', { class: k === 'present-value' ? 'pv' : '' }, v.error ? `${v.error.class}: ${v.error.code}` : v.text)));
  main.replaceChildren(el('p', {}, el('a', { href: '#/' }, '← points')), el('h2', {}, `${name} (${object}, device ${device})`),
    chart, form, el('table', { class: 'kv' }, el('tbody', {}, rows)));
  const trend = await api(`${base}/trend`);
  const history = trend.records.filter((r) => typeof r.value === 'number' || typeof r.value === 'boolean')
    .map((r) => ({ t: Date.parse(r.time), v: Number(r.value), live: false }));
  const unitText = units && units !== 'no-units' ? ` (${units})` : '';
  const caption = trend.trend_log
    ? `Trend log ${trend.name} (${trend.trend_log}): ${history.length} records; live changes in red${unitText}`
    : `No Trend Log object logs this point: live changes since this page opened${unitText}`;
  const draw = () => chart.replaceChildren(el('p', { class: 'muted' }, caption), drawChart(history, units, chart.clientWidth));
  draw();
  stream(`/api/devices/${enc(device)}/events?objects=${enc(object)}`, (evName, data) => {
    if (evName !== 'point') return;
    const pv = data.values['present-value'];
    if (!pv) return;
    const row = main.querySelector('table.kv td.pv');
    if (row) row.textContent = pv.text;
    if (typeof pv.value === 'number' || typeof pv.value === 'boolean') {
      history.push({ t: Date.now(), v: Number(pv.value), live: true });
      if (history.length > 2000) history.shift();
      draw();
    }
  }, page);
}

// A line chart in SVG: the trend log's records, then the live samples.
function drawChart(points, units, width) {
  const W = Math.max(320, Math.round(width || 800)), H = 240, L = 64, R = 16, T = 14, B = 28;
  const NS = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('class', 'chart');
  svg.setAttribute('data-points', String(points.length));
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  add('line', { class: 'axis', x1: L, y1: H - B, x2: W - R, y2: H - B });
  add('line', { class: 'axis', x1: L, y1: T, x2: L, y2: H - B });
  if (!points.length) { add('text', { x: L + 10, y: H / 2 }, 'no samples yet'); return svg; }
  let t0 = Math.min(...points.map((p) => p.t)), t1 = Math.max(...points.map((p) => p.t));
  let v0 = Math.min(...points.map((p) => p.v)), v1 = Math.max(...points.map((p) => p.v));
  if (t1 === t0) t1 = t0 + 1000;
  // At least a span that shows a real change, not sensor noise blown up.
  const span = Math.max(v1 - v0, 0.5, Math.abs(v1) * 0.02);
  const mid = (v0 + v1) / 2;
  if (v1 - v0 < span) { v0 = mid - span / 2; v1 = mid + span / 2; }
  const decimals = Math.max(0, Math.min(6, Math.ceil(-Math.log10(span / 4)) + 1));
  const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v) => H - B - ((v - v0) / (v1 - v0)) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = v0 + ((v1 - v0) * i) / 4;
    add('text', { x: 4, y: y(v) + 4 }, v.toFixed(decimals));
  }
  add('text', { x: L, y: H - 8 }, new Date(t0).toLocaleTimeString());
  add('text', { x: W - R - 70, y: H - 8 }, new Date(t1).toLocaleTimeString());
  const line = (pts, cls) => { if (pts.length) add('polyline', { class: cls, points: pts.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ') }); };
  line(points.filter((p) => !p.live), 'line');
  line(points.filter((p) => p.live), 'live');
  // Few samples (a log that records once a minute): mark each one.
  if (points.length <= 120) {
    for (const p of points) add('circle', { class: p.live ? 'dot live-dot' : 'dot', cx: x(p.t).toFixed(1), cy: y(p.v).toFixed(1), r: 2.5 });
  }
  return svg;
}

// A drop zone (and a file picker) that swaps in the component dropped on it.
function dropZone(url, label) {
  const status = el('div', { class: 'muted' });
  const input = el('input', { type: 'file', multiple: '', hidden: '', accept: '.wasm,.sig,.toml' });
  const zone = el('div', { class: 'dropzone', 'data-swap': url }, label, input);
  zone.addEventListener('click', () => input.click());
  zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (e) => { e.preventDefault(); zone.classList.remove('over'); swap(url, e.dataTransfer.files, status); });
  input.addEventListener('change', () => swap(url, input.files, status));
  return el('div', {}, zone, status);
}

async function pluginsPage() {
  const s = await api('/api/plugins');
  const hint = 'Drop a .wasm (with its .wasm.sig and .manifest.toml) here to swap';
  const rows = s.devices.map((d) => {
    const p = d.provenance || {};
    const swapped = d.last_swap ? `last swap: ${d.last_swap.plugin}, pause ${d.last_swap.pause_us.toFixed(0)} µs` : '';
    const zone = dropZone(`/api/devices/${enc(d.device)}/plugin`, hint);
    zone.firstChild.setAttribute('data-device', d.device);
    return el('tr', { 'data-device': d.device },
      el('td', {}, d.device),
      el('td', {}, `${d.name} ${d.version}`, el('div', { class: 'muted' }, d.interface)),
      el('td', { class: d.state === 'running' ? 'ok' : 'error' }, d.state),
      el('td', { class: 'num' }, `${d.restarts} / ${d.failures} / ${d.traps}`),
      el('td', { class: 'num' }, `${d.deadline_hits} / ${d.memory_hits}`),
      el('td', { class: d.last_error ? 'error' : 'muted' }, d.last_error || 'none'),
      el('td', {}, p.source || '', el('div', { class: 'muted' }, p.signed_by ? `signed by ${p.signed_by.slice(0, 16)}…` : 'unsigned / built-in'), el('div', { class: 'muted' }, p.capabilities || '')),
      el('td', {}, zone, el('div', { class: 'muted' }, swapped)));
  });
  const policies = s.policies.map((p, i) => el('tr', {}, el('td', {}, i + 1), el('td', {}, p.plugin), el('td', {}, p.state), el('td', {}, p.summary), el('td', { class: 'num' }, `${p.decided} decided, ${p.rejected} rejected`), el('td', {}, p.last_failure || ''),
    el('td', {}, dropZone(`/api/policies/${i + 1}/plugin`, hint))));
  const apps = s.apps.map((a) => el('tr', {}, el('td', {}, a.name), el('td', {}, a.plugin), el('td', {}, a.state), el('td', { class: 'num' }, `${a.events} events, ${a.restarts} restarts`), el('td', {}, a.last_failure || ''),
    el('td', {}, dropZone(`/api/apps/${enc(a.name)}/plugin`, hint))));
  main.replaceChildren(el('h2', {}, 'Object-model plugins'),
    table(['Device', 'Plugin', 'State', 'Restarts / failures / traps', 'Time / memory limit hits', 'Last error', 'Provenance', 'Hot swap'], rows),
    policies.length ? el('h2', {}, 'Routing policies') : '', policies.length ? table(['#', 'Plugin', 'State', 'Summary', 'Verdicts', 'Last failure', 'Hot swap'], policies) : '',
    apps.length ? el('h2', {}, 'Applications') : '', apps.length ? table(['Name', 'Plugin', 'State', 'Activity', 'Last failure', 'Hot swap'], apps) : '');
}

function base64(buffer) {
  const bytes = new Uint8Array(buffer);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

async function swap(url, files, status) {
  const list = Array.from(files || []);
  const wasm = list.find((f) => f.name.endsWith('.wasm'));
  if (!wasm) { status.textContent = 'no .wasm among the files'; status.className = 'error'; return; }
  const sig = list.find((f) => f.name.endsWith('.wasm.sig'));
  const manifest = list.find((f) => f.name.endsWith('.manifest.toml'));
  const h = { 'Content-Type': 'application/wasm' };
  if (sig) h['X-Trellis-Signature'] = base64(await sig.arrayBuffer());
  if (manifest) h['X-Trellis-Manifest'] = base64(await manifest.arrayBuffer());
  status.textContent = `swapping to ${wasm.name}…`;
  status.className = 'muted';
  try {
    const r = await api(url, { method: 'POST', headers: h, body: await wasm.arrayBuffer() });
    const pause = r.pause_us !== undefined ? `, device paused ${r.pause_us.toFixed(0)} µs` : '';
    status.textContent = `swapped: now ${r.plugin}; loaded in ${r.load_ms.toFixed(1)} ms${pause}`;
    status.className = 'ok swap-result';
  } catch (e) {
    status.textContent = `not swapped: ${e.message}`;
    status.className = 'error swap-result';
  }
}

async function portsPage() {
  const ports = await api('/api/ports');
  const sections = ports.map((p) => el('div', { class: 'port' },
    el('h2', {}, `${p.name}${p.device !== null ? ` — device ${p.device}` : ''}${p.network !== null ? ` — network ${p.network}` : ''}`),
    el('table', { class: 'kv' }, el('tbody', {}, Object.entries(p.counters).map(([k, v]) =>
      el('tr', {}, el('td', {}, k.replaceAll('_', ' ')), el('td', { class: 'num' }, typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(2) : String(v))))))));
  main.replaceChildren(...(sections.length ? sections : [el('p', {}, 'No ports.')]));
}

async function covPage() {
  const devs = await api('/api/cov');
  main.replaceChildren(...devs.map((d) => el('div', {},
    el('h2', {}, `Device ${d.device}`),
    el('p', { class: 'muted' }, `notifications: ${d.notifications.unconfirmed_sent} unconfirmed sent, ${d.notifications.confirmed_acknowledged} confirmed acknowledged, ${d.notifications.confirmed_failed} failed`),
    table(['Subscriber', 'Process', 'Object', 'Property', 'Confirmed', 'Seconds left'], d.subscriptions.map((s) =>
      el('tr', {}, el('td', {}, s.subscriber), el('td', {}, s.process_identifier), el('td', {}, s.object), el('td', {}, s.property), el('td', {}, s.confirmed ? 'yes' : 'no'), el('td', { class: 'num' }, s.seconds_left || 'indefinite')))))));
}

async function logsPage(page) {
  const box = el('div', { class: 'log', id: 'log' });
  main.replaceChildren(el('h2', {}, 'Log'), box);
  const add = (l) => {
    box.append(el('div', { class: l.level }, `${l.time} ${l.level} ${l.target}: ${l.message}`));
    while (box.childNodes.length > 1000) box.firstChild.remove();
    box.scrollTop = box.scrollHeight;
  };
  for (const l of await api('/api/logs')) add(l);
  stream('/api/logs/events', (name, data) => { if (name === 'log') add(data); }, page);
}

// ---- routing --------------------------------------------------------------

async function route() {
  closeStreams();
  const page = ++navigation;
  delete main.dataset.watching;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const name = parts[0] || 'points';
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.page === name || (name === 'point' && a.dataset.page === 'points'));
  try {
    if (name === 'point') await pointPage(Number(parts[1]), parts[2], page);
    else if (name === 'plugins') await pluginsPage();
    else if (name === 'ports') await portsPage();
    else if (name === 'cov') await covPage();
    else if (name === 'logs') await logsPage(page);
    else await pointsPage(page);
    if (!pageStreams.length) setStatus('connected', 'ok');
  } catch (e) {
    if (e.status !== 401) fail(main, e);
  }
}

window.addEventListener('hashchange', route);
route();
