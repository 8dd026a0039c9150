// The web console in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core), against a gateway the Rust test started:
//   TRELLIS_URL      the console's URL
//   TRELLIS_TOKEN    a read-write bearer token
//   TRELLIS_DEVICE   the served device's instance
//   TRELLIS_PLUGIN   a component file to swap in by drag and drop
//   TRELLIS_SHOTS    where to write the screenshots
// Protocol with the test, one line each way: this script prints
// "table-ready" once the point table is live; the test writes the zone
// setpoint over BACnet and sends "written VALUE"; this script checks the
// table shows VALUE within 1 s of that line. It ends with one JSON line
// (`{"ok": …, "errors": […], "shown_after_ms": …}`) and exit status 0 only
// when every step passed and the pages logged no console error.
import { chromium } from 'playwright-core';
import { readFileSync, mkdirSync } from 'node:fs';
import { createInterface } from 'node:readline';

const env = (k) => { const v = process.env[k]; if (!v) throw new Error(`${k} is not set`); return v; };
const [url, token, device, plugin, shots] = ['TRELLIS_URL', 'TRELLIS_TOKEN', 'TRELLIS_DEVICE', 'TRELLIS_PLUGIN', 'TRELLIS_SHOTS'].map(env);
mkdirSync(shots, { recursive: true });
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const errors = [];
const result = { ok: false, errors, steps: [] };
const step = (s) => { result.steps.push(s); };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => errors.push(`page: ${e}`));
  page.on('response', (r) => { if (r.status() >= 400) errors.push(`HTTP ${r.status()} ${r.url()}`); });
  page.on('requestfailed', (r) => {
    // Streams closed on navigation end as aborted requests: expected.
    if (!String(r.failure()?.errorText).includes('ERR_ABORTED')) errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  await page.addInitScript((t) => sessionStorage.setItem('trellis-token', t), token);

  // The point table, live.
  await page.goto(url);
  const cell = `td.pv[data-object="analog-value,1"]`;
  await page.waitForSelector(cell, { timeout: 15000 });
  await page.waitForFunction(() => document.getElementById('main').dataset.watching, null, { timeout: 15000 });
  console.log('table-ready');
  const { value: said } = await lines.next();
  const expected = said.replace(/^written /, '').trim();
  const t0 = Date.now();
  await page.waitForFunction(([sel, v]) => document.querySelector(sel)?.textContent.startsWith(v), [cell, expected], { timeout: 1000 });
  result.shown_after_ms = Date.now() - t0;
  step('a value written over BACnet appeared in the table');
  await page.screenshot({ path: `${shots}/points.png`, fullPage: true });

  // The point page: the trend log's chart.
  await page.goto(`${url}#/point/${device}/analog-input,1`);
  await page.waitForSelector('svg.chart circle', { timeout: 15000 });
  result.chart_points = Number(await page.getAttribute('svg.chart', 'data-points'));
  if (!(result.chart_points >= 1)) throw new Error('the chart has no point');
  step('the point page drew its trend');
  await page.screenshot({ path: `${shots}/point.png`, fullPage: true });

  // Plugins: hot swap by drag and drop.
  await page.goto(`${url}#/plugins`);
  const zone = `.dropzone[data-device="${device}"]`;
  await page.waitForSelector(zone, { timeout: 15000 });
  const bytes = Array.from(readFileSync(plugin));
  const dataTransfer = await page.evaluateHandle((data) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(data)], 'demo-building.wasm', { type: 'application/wasm' }));
    return dt;
  }, bytes);
  await page.dispatchEvent(zone, 'drop', { dataTransfer });
  await page.waitForSelector('.swap-result', { timeout: 60000 });
  const swapped = await page.textContent('.swap-result');
  if (!swapped.startsWith('swapped')) throw new Error(`the swap failed: ${swapped}`);
  result.swap = swapped;
  step('a plugin swapped by drag and drop');
  await page.screenshot({ path: `${shots}/plugins.png`, fullPage: true });

  // Ports (the line statistics) and the log tail.
  await page.goto(`${url}#/ports`);
  await page.waitForSelector('.port table', { timeout: 15000 });
  await page.screenshot({ path: `${shots}/ports.png`, fullPage: true });
  await page.goto(`${url}#/logs`);
  await page.waitForFunction(() => document.querySelectorAll('#log div').length > 0, null, { timeout: 15000 });
  await page.waitForFunction(() => document.getElementById('log').textContent.includes('plugin swapped'), null, { timeout: 15000 });
  step('the log tail shows the swap');
  await page.screenshot({ path: `${shots}/log.png`, fullPage: true });
  result.ok = errors.length === 0;
} catch (e) {
  errors.push(`step failed: ${e.message}`);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
