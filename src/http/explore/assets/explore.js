// Eco Insights explorer: a page for analysts over the public JSON API.
//
// Vanilla JavaScript, no dependency, no build step. Everything shown is fetched from this origin
// with the analyst's own key and secret (sessionStorage, this tab only). Every text that comes
// from an export is put in the page as a text node (textContent / createTextNode), never parsed
// as markup; charts are SVG built with DOM calls. The URL carries the state with the API's own
// parameter names, so a view can be bookmarked, shared and reloaded.
'use strict';

(function () {
  const KEY = 'eco.apiKey';
  const SECRET = 'eco.apiSecret';
  const COMPARE = 'eco.compare';
  const SVG_NS = 'http://www.w3.org/2000/svg';

  // The common filters of the API (text, year, ranges).
  const TEXT_FILTERS = ['marca', 'modelo', 'categoria', 'combustivel', 'propulsao', 'transmissao'];
  const RANGES = [
    ['eco_score', 'Eco score'],
    ['consumo', 'Consumo (MJ/km)'],
    ['co2', 'CO₂ (g/km)'],
    ['autonomia', 'Autonomia (km)'],
    ['eficiencia', 'Eficiência (km/unidade)'],
    ['autonomia_eletrica', 'Autonomia elétrica (km)'],
    ['custo', 'Custo anual (R$)'],
  ];
  const FILTERS = TEXT_FILTERS.concat(['ano', 'ano_min', 'ano_max'],
    RANGES.flatMap(([s]) => [s + '_min', s + '_max']));
  const LIST_PARAMS = FILTERS.concat(['sort', 'fields', 'cursor', 'page_size']);
  const FACETS = [
    ['marca', 'marca', 'Marca'],
    ['categoria', 'categoria', 'Categoria'],
    ['combustivel', 'combustivel', 'Combustível'],
    ['propulsao', 'propulsao', 'Propulsão'],
    ['ano', 'ano', 'Ano'],
  ];
  const CATALOG_FIELDS = [
    ['marca', 'Marca'], ['modelo', 'Modelo'], ['versao', 'Versão'], ['ano', 'Ano'],
    ['categoria', 'Categoria'], ['motor', 'Motor'], ['tipo_propulsao', 'Propulsão'],
    ['combustivel_tipo', 'Combustível'], ['transmissao_tipo', 'Transmissão'],
    ['transmissao_marchas', 'Marchas'], ['ar_condicionado', 'Ar-condicionado'],
    ['direcao_assistida_tipo', 'Direção'], ['id', 'Identificador'],
  ];
  // The eco-score list (/insights/eco-scores): the catalog's view when its URL sorts by or
  // shows a field only that list has (`/explore?sort=-ecoScore`).
  const ECO_FIELDS = [
    ['marca', 'Marca'], ['modelo', 'Modelo'], ['versao', 'Versão'], ['ano', 'Ano'],
    ['categoria', 'Categoria'], ['ecoScore', 'Eco score'], ['faixa', 'Faixa'], ['vehicleId', 'Identificador'],
  ];
  const ECO_ONLY = ['ecoScore', 'faixa', 'vehicleId'];
  const CATALOG_SOURCE = { path: '/catalog/vehicles', fields: CATALOG_FIELDS, idKey: 'id', name: 'catalogo',
    caption: 'Veículos do catálogo' };
  const ECO_SOURCE = { path: '/insights/eco-scores', fields: ECO_FIELDS, idKey: 'vehicleId', name: 'eco-scores',
    caption: 'Veículos por eco score' };
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

  const main = document.getElementById('main');
  const statusBox = document.getElementById('status');
  const fmt = new Intl.NumberFormat('pt-BR', { maximumFractionDigits: 2 });
  let renderSeq = 0;
  let lastPath = null;
  let renderStart = 0;

  // ---------- DOM helpers: text is always a text node ----------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function setAttrs(node, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') node.textContent = String(v);
      else if (k === 'on') for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
      else if (k.startsWith('on')) throw new Error('handlers are added with addEventListener');
      else node.setAttribute(k, v === true ? '' : String(v));
    }
  }

  function append(node, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  // A value as text; years are never grouped (2024, not 2.024).
  function show(value, key) {
    if (value === null || value === undefined) return '—';
    if (typeof value === 'number') return key !== undefined && /(^|_)ano$/.test(String(key)) ? String(value) : fmt.format(value);
    if (typeof value === 'boolean') return value ? 'sim' : 'não';
    return String(value);
  }

  function announce(text) {
    statusBox.textContent = text;
  }

  function errorBox(message) {
    return el('p', { class: 'error', role: 'alert' }, message);
  }

  // ---------- credentials and API calls ----------

  function creds() {
    const key = sessionStorage.getItem(KEY);
    const secret = sessionStorage.getItem(SECRET);
    return key && secret ? { key, secret } : null;
  }

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function request(path, options) {
    const c = (options && options.creds) || creds();
    if (!c) throw new ApiError(401, 'UNAUTHORIZED', 'Entre com a sua chave da API.');
    const headers = { 'X-API-Key': c.key, 'X-API-Secret': c.secret };
    const init = { headers, method: (options && options.method) || 'GET' };
    if (options && options.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(options.body);
    }
    if (!(options && options.raw)) headers.Accept = 'application/json';
    const res = await fetch(path, init);
    if (!res.ok) {
      let message = 'Erro ' + res.status + ' ao consultar a API.';
      let code = null;
      try {
        const body = await res.json();
        if (body && body.error) {
          message = body.error.message;
          code = body.error.code;
        }
      } catch (e) { /* not JSON */ }
      if (res.status === 401 && !(options && options.creds)) {
        // The stored pair stopped working (revoked, rotated): back to the sign-in form.
        signOut(message);
        setTimeout(render, 0);
      }
      throw new ApiError(res.status, code, message);
    }
    return res;
  }

  async function api(path, options) {
    const res = await request(path, options);
    const body = await res.json();
    return body.data;
  }

  // Fetches with the credentials and saves the answer as a file (a blob: URL, allowed by the CSP).
  async function download(path, fallbackName, button) {
    button.disabled = true;
    try {
      const res = await request(path, { raw: true });
      const blob = await res.blob();
      const disposition = res.headers.get('Content-Disposition') || '';
      const m = /filename="?([^";]+)"?/.exec(disposition);
      const a = el('a', { href: URL.createObjectURL(blob), download: m ? m[1] : fallbackName, class: 'visually-hidden' });
      document.body.appendChild(a);
      a.click();
      setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
      announce('Download pronto: ' + a.download);
    } catch (e) {
      announce(e.message);
      button.after(errorBox(e.message));
    } finally {
      button.disabled = false;
    }
  }

  function signOut(message) {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(SECRET);
    pendingMessage = message || null;
  }
  let pendingMessage = null;

  // ---------- routing ----------

  function go(url, replace) {
    // `inApp` marks entries this page made, so "Voltar" only walks back within the explorer.
    if (replace) history.replaceState({ inApp: true }, '', url);
    else history.pushState({ inApp: true }, '', url);
    render();
  }

  function paramsOf(names) {
    const q = new URLSearchParams(location.search);
    const out = new URLSearchParams();
    for (const [k, v] of q) if (names.includes(k) && v !== '') out.append(k, v);
    return out;
  }

  function withParams(path, params) {
    const s = params.toString();
    return s ? path + '?' + s : path;
  }

  document.addEventListener('click', (ev) => {
    const a = ev.target.closest && ev.target.closest('a[href]');
    if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    if (a.hasAttribute('download') || a.target) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || !(url.pathname === '/explore' || url.pathname.startsWith('/explore/'))) return;
    ev.preventDefault();
    go(url.pathname + url.search);
  });
  window.addEventListener('popstate', render);

  function render() {
    const seq = ++renderSeq;
    renderStart = performance.now();
    delete main.dataset.ready;
    const path = location.pathname.replace(/\/+$/, '') || '/explore';
    const pageChanged = path !== lastPath;
    lastPath = path;
    renderAccount();
    markNav(path);
    if (!creds()) return renderSignIn(seq);
    let page;
    const vehicle = /^\/explore\/vehicles\/([^/]+)$/.exec(path);
    if (path === '/explore') page = renderCatalog;
    else if (vehicle) page = (s) => renderVehicle(s, decodeURIComponent(vehicle[1]));
    else if (path === '/explore/compare') page = renderCompare;
    else if (path === '/explore/insights') page = renderInsights;
    else if (path === '/explore/sql') page = renderSql;
    else page = renderNotFound;
    Promise.resolve(page(seq)).then(() => {
      if (seq === renderSeq && pageChanged) {
        const h1 = main.querySelector('h1');
        if (h1 && document.activeElement === document.body) h1.focus({ preventScroll: true });
      }
    });
  }

  // Marks a page complete: `data-ready` on <main>, a performance mark, and how long it took
  // since the navigation or the click that asked for it (window.__explore, read by the UI test).
  function ready(name, seq) {
    if (!current(seq)) return;
    main.dataset.ready = name;
    performance.mark('explore:' + name);
    window.__explore = { page: name, seq, ms: performance.now() - renderStart, at: performance.now() };
  }

  function current(seq) {
    return seq === renderSeq;
  }

  function page(title, ...children) {
    document.title = title + ' — Eco Insights';
    main.replaceChildren(el('h1', { tabindex: '-1' }, title), ...children.filter((c) => c));
  }

  function markNav(path) {
    const section = path.startsWith('/explore/compare') ? 'compare'
      : path.startsWith('/explore/insights') ? 'insights'
        : path.startsWith('/explore/sql') ? 'sql'
          : path === '/explore' ? 'catalog' : null;
    for (const a of document.querySelectorAll('[data-nav]')) {
      if (a.dataset.nav === section) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
  }

  function renderAccount() {
    const box = document.getElementById('account');
    const c = creds();
    if (!c) return box.replaceChildren();
    const out = el('button', { type: 'button', class: 'link', on: { click: () => { signOut(); render(); } } }, 'Sair');
    box.replaceChildren(el('span', { class: 'who' }, 'Chave: ', el('code', {}, c.key)), out);
  }

  // ---------- sign-in ----------

  function renderSignIn(seq) {
    const message = pendingMessage;
    pendingMessage = null;
    const error = el('div', { id: 'signin-error' }, message ? errorBox(message) : null);
    const key = el('input', { id: 'api-key', name: 'username', type: 'text', autocomplete: 'username', required: true, spellcheck: 'false', autocapitalize: 'off' });
    const secret = el('input', { id: 'api-secret', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
    const submit = el('button', { type: 'submit' }, 'Entrar');
    const form = el('form', { class: 'signin', method: 'post', action: location.pathname, 'aria-describedby': 'signin-help' },
      el('p', { id: 'signin-help' }, 'Informe a chave e o segredo da sua credencial da API. Eles ficam guardados só nesta aba do navegador.'),
      el('div', { class: 'field' }, el('label', { for: 'api-key' }, 'Chave da API (X-API-Key)'), key),
      el('div', { class: 'field' }, el('label', { for: 'api-secret' }, 'Segredo da API (X-API-Secret)'), secret),
      submit, error);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      submit.disabled = true;
      const pair = { key: key.value.trim(), secret: secret.value };
      try {
        await request('/catalog/vehicles?page_size=1&fields=id', { creds: pair });
        sessionStorage.setItem(KEY, pair.key);
        sessionStorage.setItem(SECRET, pair.secret);
        announce('Sessão iniciada.');
        lastPath = null;
        render();
      } catch (e) {
        error.replaceChildren(errorBox(e.message));
        submit.disabled = false;
        secret.focus();
      }
    });
    page('Entrar', form);
    key.focus();
    ready('signin', seq);
  }

  // ---------- shared pieces ----------

  function filterForm(params, onApply) {
    const inputs = [];
    const textFields = TEXT_FILTERS.map((name) => {
      const input = el('input', { id: 'f-' + name, name, type: 'search', value: params.get(name) || '', autocomplete: 'off' });
      inputs.push(input);
      return el('div', { class: 'field' }, el('label', { for: 'f-' + name }, label(name)), input);
    });
    const number = (name, text) => {
      const input = el('input', { id: 'f-' + name, name, type: 'number', step: 'any', inputmode: 'decimal', value: params.get(name) || '' });
      inputs.push(input);
      return el('div', { class: 'field small' }, el('label', { for: 'f-' + name }, text), input);
    };
    const rows = [['ano', 'Ano']].concat(RANGES).map(([stem, text]) =>
      el('fieldset', { class: 'range' }, el('legend', {}, text), number(stem + '_min', 'mín.'), number(stem + '_max', 'máx.')));
    const form = el('form', { class: 'filters', role: 'search', 'aria-label': 'Filtros' },
      el('div', { class: 'grid' }, textFields),
      el('div', { class: 'grid ranges' }, rows),
      el('div', { class: 'actions' },
        el('button', { type: 'submit' }, 'Aplicar filtros'),
        el('button', { type: 'button', class: 'secondary', on: { click: () => onApply(new URLSearchParams(), true) } }, 'Limpar filtros')));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const next = new URLSearchParams();
      for (const input of inputs) if (input.value.trim() !== '') next.set(input.name, input.value.trim());
      if (params.get('ano') && !next.has('ano_min') && !next.has('ano_max')) next.set('ano', params.get('ano'));
      onApply(next, false);
    });
    return el('details', { class: 'filter-box' },
      el('summary', {}, 'Filtros'), form);
  }

  function label(name) {
    const labels = { marca: 'Marca', modelo: 'Modelo', categoria: 'Categoria', combustivel: 'Combustível', propulsao: 'Propulsão', transmissao: 'Transmissão' };
    return labels[name] || name;
  }

  function activeFilters(params, basePath) {
    const items = [];
    for (const [k, v] of params) {
      if (!FILTERS.includes(k)) continue;
      const next = new URLSearchParams(params);
      next.delete(k);
      next.delete('cursor');
      items.push(el('li', {}, el('a', { href: withParams(basePath, next), class: 'chip', 'aria-label': 'Remover filtro ' + k + ' = ' + v }, k + ' = ' + v, ' ✕')));
    }
    return items.length ? el('ul', { class: 'chips', 'aria-label': 'Filtros aplicados' }, items) : null;
  }

  function dataTable(caption, columns, rows, options) {
    // columns: [{key, label, cell?(row) -> Node|string, numeric?}]
    const opts = options || {};
    const head = el('tr', {}, columns.map((c) => {
      const th = el('th', { scope: 'col', class: c.numeric ? 'num' : null });
      if (opts.sortable && c.sortable !== false) {
        const state = opts.sort === c.key ? 'ascending' : opts.sort === '-' + c.key ? 'descending' : null;
        if (state) th.setAttribute('aria-sort', state);
        const arrow = state === 'ascending' ? ' ▲' : state === 'descending' ? ' ▼' : '';
        th.appendChild(el('button', { type: 'button', class: 'sort', 'data-field': c.key, on: { click: () => opts.onSort(c.key) } },
          c.label, el('span', { 'aria-hidden': 'true' }, arrow),
          el('span', { class: 'visually-hidden' }, state === 'ascending' ? ' (crescente; clique para decrescente)' : state === 'descending' ? ' (decrescente; clique para crescente)' : ' (ordenar)')));
      } else {
        th.textContent = c.label;
      }
      return th;
    }));
    const body = el('tbody', {}, rows.map((row) => el('tr', {}, columns.map((c) => {
      const value = c.cell ? c.cell(row) : show(row[c.key], c.key);
      return el('td', { 'data-label': c.label, class: c.numeric ? 'num' : null }, value);
    }))));
    return el('div', { class: 'table-wrap' },
      el('table', { class: 'data' + (opts.className ? ' ' + opts.className : '') },
        el('caption', { class: opts.showCaption ? null : 'visually-hidden' }, caption),
        el('thead', {}, head), body));
  }

  function vehicleLink(id, text) {
    return el('a', { href: '/explore/vehicles/' + encodeURIComponent(id) }, text);
  }

  function loading() {
    return el('p', { class: 'loading', role: 'status' }, 'Carregando…');
  }

  function compareList() {
    try {
      const ids = JSON.parse(sessionStorage.getItem(COMPARE) || '[]');
      return Array.isArray(ids) ? ids.filter((x) => UUID.test(x)) : [];
    } catch (e) {
      return [];
    }
  }

  function setCompareList(ids) {
    sessionStorage.setItem(COMPARE, JSON.stringify(ids.slice(-4)));
  }

  // ---------- catalog ----------

  // Which list the catalog view reads: the eco-score list when sort or fields name one of its
  // own fields, the catalog otherwise.
  function listSource(params) {
    const named = (params.get('sort') || '').split(',').concat((params.get('fields') || '').split(','))
      .map((f) => f.replace(/^-/, ''));
    return named.some((f) => ECO_ONLY.includes(f)) ? ECO_SOURCE : CATALOG_SOURCE;
  }

  function defaultFields(source) {
    return source.fields.map(([f]) => f).filter((f) => f !== source.idKey);
  }

  async function renderCatalog(seq) {
    const params = paramsOf(LIST_PARAMS);
    const filters = paramsOf(FILTERS);
    const source = listSource(params);
    const fields = params.get('fields') ? params.get('fields').split(',') : defaultFields(source);
    const sort = params.get('sort');
    const body = el('div', { id: 'catalog-body' }, loading());
    const facetBox = el('aside', { class: 'facets', 'aria-labelledby': 'facets-title' }, el('h2', { id: 'facets-title' }, 'Facetas'), loading());
    const apply = (next) => go(withParams('/explore', keepListShape(params, next)));
    page('Catálogo de veículos',
      filterForm(filters, apply),
      activeFilters(params, '/explore'),
      el('div', { class: 'catalog' }, facetBox, body));

    const query = new URLSearchParams(params);
    if (query.has('fields') && !fields.includes(source.idKey)) query.set('fields', fields.concat([source.idKey]).join(','));
    const [list, facets] = await Promise.allSettled([
      api(withParams(source.path, query)),
      api(withParams('/facets', filters)),
    ]);
    if (!current(seq)) return;
    if (facets.status === 'fulfilled') facetBox.replaceChildren(facetBox.firstChild, ...renderFacets(facets.value.data, params));
    else facetBox.replaceChildren(facetBox.firstChild, errorBox(facets.reason.message));
    if (list.status === 'rejected') {
      body.replaceChildren(errorBox(list.reason.message));
      ready('catalog', seq);
      return;
    }
    const items = list.value.data.items;
    const pagination = list.value.meta.pagination;
    const columns = fields.map((f) => {
      const known = source.fields.find(([k]) => k === f);
      const col = { key: f, label: known ? known[1] : f, numeric: ['ano', 'transmissao_marchas', 'ecoScore'].includes(f) };
      if (f === 'modelo') col.cell = (row) => vehicleLink(row[source.idKey], show(row.modelo));
      return col;
    });
    if (!fields.includes('modelo')) columns.push({ key: '_open', label: 'Detalhes', sortable: false, cell: (row) => vehicleLink(row[source.idKey], 'Abrir') });
    const onSort = (field) => {
      const next = new URLSearchParams(params);
      next.set('sort', sort === field ? '-' + field : field);
      next.delete('cursor');
      go(withParams('/explore', next));
    };
    const table = dataTable(source.caption, columns, items, { sortable: true, sort, onSort, className: 'catalog-table' });
    const total = pagination.total;
    const summary = el('p', { class: 'total', id: 'total' },
      el('strong', { 'data-total': String(total) }, fmt.format(total)), total === 1 ? ' veículo' : ' veículos',
      items.length ? ' · ' + fmt.format(items.length) + ' nesta página' : '');
    const pager = el('nav', { class: 'pager', 'aria-label': 'Paginação' });
    if (params.get('cursor')) {
      const first = new URLSearchParams(params);
      first.delete('cursor');
      pager.appendChild(el('a', { href: withParams('/explore', first), class: 'button secondary' }, '« Primeira página'));
      if (history.state && history.state.inApp) {
        pager.appendChild(el('button', { type: 'button', class: 'secondary', on: { click: () => history.back() } }, '‹ Voltar'));
      }
    }
    if (pagination.next_cursor) {
      const next = new URLSearchParams(params);
      next.set('cursor', pagination.next_cursor);
      pager.appendChild(el('a', { href: withParams('/explore', next), class: 'button', id: 'next-page', rel: 'next' }, 'Próxima página ›'));
    }
    const sizeSelect = el('select', { id: 'page-size', on: { change: (ev) => {
      const next = new URLSearchParams(params);
      next.set('page_size', ev.target.value);
      go(withParams('/explore', next));
    } } }, ['10', '20', '50', '100'].map((n) => el('option', { value: n, selected: (params.get('page_size') || '20') === n ? true : null }, n)));
    pager.appendChild(el('span', { class: 'field inline' }, el('label', { for: 'page-size' }, 'Por página'), sizeSelect));
    body.replaceChildren(
      el('div', { class: 'toolbar' }, summary, columnChooser(params, fields, source), listSwitch(params, source),
        downloads(source.path, params, source.name)),
      table, pager);
    ready('catalog', seq);
    announce(fmt.format(total) + ' veículos encontrados.');
  }

  // Keeps sort, fields and page size when the filters change; a new filter starts at page one.
  function keepListShape(params, filters) {
    const next = new URLSearchParams(filters);
    for (const k of ['sort', 'fields', 'page_size']) if (params.get(k)) next.set(k, params.get(k));
    return next;
  }

  function renderFacets(data, params) {
    return FACETS.map(([key, param, title]) => {
      const values = (data[key] || []).filter((v) => v.valor !== null);
      const activeValue = params.get(param);
      const list = el('ul', { class: 'facet-list' }, values.map((v) => {
        const value = String(v.valor);
        const active = activeValue !== null && activeValue.toLowerCase() === value.toLowerCase();
        const next = new URLSearchParams(params);
        next.delete('cursor');
        if (active) next.delete(param);
        else {
          next.set(param, value);
          if (param === 'ano') { next.delete('ano_min'); next.delete('ano_max'); }
        }
        return el('li', {}, el('a', {
          href: withParams('/explore', next), class: 'facet' + (active ? ' active' : ''),
          'aria-current': active ? 'true' : null, 'data-facet': param, 'data-value': value,
        }, el('span', { class: 'facet-name' }, value), el('span', { class: 'count' }, fmt.format(v.total))));
      }));
      return el('details', { class: 'facet-group', open: key !== 'marca' || activeValue ? true : null },
        el('summary', {}, title, activeValue ? ' (' + activeValue + ')' : ''), list);
    });
  }

  // A link between the two lists, keeping the filters and the page size.
  function listSwitch(params, source) {
    const next = new URLSearchParams(params);
    for (const k of ['sort', 'fields', 'cursor']) next.delete(k);
    if (source === CATALOG_SOURCE) next.set('sort', '-ecoScore');
    const text = source === CATALOG_SOURCE ? 'Ordenar por eco score' : 'Ver todas as colunas do catálogo';
    return el('a', { href: withParams('/explore', next), class: 'button secondary', id: 'list-switch' }, text);
  }

  function columnChooser(params, fields, source) {
    const boxes = source.fields.map(([f, text]) => el('li', {},
      el('input', { type: 'checkbox', id: 'col-' + f, value: f, checked: fields.includes(f) ? true : null }),
      el('label', { for: 'col-' + f }, text)));
    const form = el('form', { class: 'columns' }, el('ul', {}, boxes), el('button', { type: 'submit' }, 'Aplicar colunas'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const chosen = source.fields.map(([f]) => f).filter((f) => form.querySelector('#col-' + f).checked);
      const next = new URLSearchParams(params);
      next.delete('cursor');
      if (!chosen.length || chosen.join(',') === defaultFields(source).join(',')) next.delete('fields');
      else next.set('fields', chosen.join(','));
      if (next.get('sort') && !chosen.includes(next.get('sort').replace(/^-/, ''))) next.delete('sort');
      go(withParams('/explore', next));
    });
    return el('details', { class: 'menu' }, el('summary', {}, 'Colunas'), form);
  }

  function downloads(path, params, name) {
    const make = (format, text) => {
      const b = el('button', { type: 'button', class: 'secondary', 'data-format': format });
      b.textContent = text;
      b.addEventListener('click', () => {
        const q = new URLSearchParams(params);
        q.set('format', format);
        download(withParams(path, q), name + '.' + format, b);
      });
      return b;
    };
    return el('div', { class: 'downloads', role: 'group', 'aria-label': 'Baixar esta visão' },
      make('csv', 'Baixar CSV'), make('parquet', 'Baixar Parquet'));
  }

  // ---------- vehicle ----------

  async function renderVehicle(seq, id) {
    if (!UUID.test(id)) {
      page('Veículo', errorBox('Identificador de veículo inválido.'));
      return;
    }
    page('Veículo', loading());
    const base = '/vehicles/' + encodeURIComponent(id);
    // The indices come from the SQL view that computes the score; they fill in when they arrive.
    const indices = api('/sql?' + new URLSearchParams({ sql: "select indice_energia, indice_co2, indice_poluentes from vw_eco_score where id = '" + id.toLowerCase() + "'" }));
    indices.catch(() => {});
    const [summary, score, positions, similar] = await Promise.allSettled([
      api(base + '/summary'), api(base + '/eco-score'), api(base + '/ranking-positions'),
      api(base + '/compare-similar'),
    ]);
    if (!current(seq)) return;
    if (summary.status === 'rejected') {
      page('Veículo', errorBox(summary.reason.message));
      return;
    }
    const s = summary.value.data.summary;
    const v = s.veiculo;
    const title = [v.marca, v.modelo, v.versao, String(v.ano)].map((x) => show(x)).join(' ');
    const list = compareList();
    const inList = list.includes(id);
    const addButton = el('button', { type: 'button', id: 'add-compare' }, inList ? 'Na comparação ✓' : 'Adicionar à comparação');
    const compareLink = el('a', { href: '/explore/compare?ids=' + (inList ? list : list.concat([id])).slice(-4).join(','), id: 'open-compare', hidden: list.length + (inList ? 0 : 1) < 2 ? true : null }, 'Abrir a comparação');
    addButton.addEventListener('click', () => {
      const now = compareList().filter((x) => x !== id).concat([id]);
      setCompareList(now);
      addButton.textContent = 'Na comparação ✓';
      compareLink.setAttribute('href', '/explore/compare?ids=' + now.slice(-4).join(','));
      if (now.length >= 2) compareLink.hidden = false;
      announce('Veículo adicionado à comparação (' + now.length + ').');
    });
    const scoreSection = el('section', { 'aria-labelledby': 'score-title' }, el('h2', { id: 'score-title' }, 'Eco score'));
    if (score.status === 'fulfilled') {
      const d = score.value.data;
      scoreSection.appendChild(el('p', { class: 'score' }, el('span', { class: 'big', id: 'eco-score' }, show(d.eco_score)), ' / 100 · faixa ', el('strong', {}, show(d.faixa))));
    } else scoreSection.appendChild(errorBox(score.reason.message));
    const indexBox = el('div', { id: 'indices' }, el('p', { class: 'loading' }, 'Carregando os índices…'));
    scoreSection.appendChild(indexBox);
    indices.then((d) => {
      if (!current(seq)) return;
      const r = d.data[0] || {};
      const round1 = (x) => (x === null || x === undefined ? null : Math.round(x * 10) / 10);
      indexBox.replaceChildren(keyValues('Índices do eco score', [
        ['Índice de energia (peso 45%)', round1(r.indice_energia)],
        ['Índice de CO₂ (peso 35%)', round1(r.indice_co2)],
        ['Índice de poluentes (peso 20%)', round1(r.indice_poluentes)],
      ]));
      indexBox.dataset.ready = 'true';
    }, (e) => { if (current(seq)) indexBox.replaceChildren(errorBox(e.message)); });
    const posSection = el('section', { 'aria-labelledby': 'pos-title' }, el('h2', { id: 'pos-title' }, 'Posições no ranking de eco score'));
    if (positions.status === 'fulfilled') {
      const p = positions.value.data;
      posSection.appendChild(keyValues('Posições', [
        ['Geral', p.global], ['Na categoria', p.naCategoria], ['No combustível', p.noCombustivel], ['Percentil', p.percentil],
      ]));
    } else posSection.appendChild(errorBox(positions.reason.message));
    const simSection = el('section', { 'aria-labelledby': 'sim-title' }, el('h2', { id: 'sim-title' }, 'Veículos semelhantes'));
    if (similar.status === 'fulfilled') {
      simSection.appendChild(dataTable('Veículos semelhantes', [
        { key: 'modelo', label: 'Veículo', cell: (r) => vehicleLink(r.vehicleId, [r.marca, r.modelo, r.versao].map((x) => show(x)).join(' ')) },
        { key: 'ano', label: 'Ano', numeric: true },
        { key: 'combustivelTipo', label: 'Combustível' },
        { key: 'ecoScore', label: 'Eco score', numeric: true },
        { key: 'co2ReferenciaGKm', label: 'CO₂ (g/km)', numeric: true },
      ], similar.value.data.items, { className: 'similar' }));
    } else simSection.appendChild(errorBox(similar.reason.message));
    page(title,
      el('p', { class: 'actions' }, addButton, ' ', compareLink, ' ', el('a', { href: '/explore' }, 'Voltar ao catálogo')),
      el('div', { class: 'cards' },
        el('section', { 'aria-labelledby': 'data-title' }, el('h2', { id: 'data-title' }, 'Dados'),
          keyValues('Veículo', Object.entries(v)),
          keyValues('Consumo', Object.entries(s.consumo)),
          keyValues('Emissões', Object.entries(s.emissoes))),
        el('div', {}, scoreSection, posSection)),
      simSection);
    ready('vehicle', seq);
  }

  function keyValues(title, pairs) {
    return el('div', { class: 'kv' }, el('h3', {}, title),
      el('dl', {}, pairs.map(([k, v]) => [el('dt', {}, k.replace(/_/g, ' ')), el('dd', {}, show(v, k))])));
  }

  // ---------- comparison ----------

  const CRITERIA = [
    ['eco_score', 'Eco score', (v) => v.eco_score],
    ['co2_referencia_g_km', 'CO₂ (g/km)', (v) => v.computed.co2_referencia_g_km],
    ['eficiencia_media_referencia', 'Eficiência (km/unidade)', (v) => v.computed.eficiencia_media_referencia],
    ['autonomia_km', 'Autonomia (km)', (v) => v.computed.autonomia_km],
  ];

  async function renderCompare(seq) {
    const q = new URLSearchParams(location.search);
    let ids = (q.get('ids') || '').split(',').map((x) => x.trim()).filter(Boolean);
    if (!ids.length) ids = compareList();
    const clear = el('button', { type: 'button', class: 'secondary', on: { click: () => { setCompareList([]); go('/explore/compare'); } } }, 'Esvaziar a comparação');
    if (ids.length < 2) {
      page('Comparação', el('p', {}, 'Escolha de 2 a 4 veículos: abra um veículo no ', el('a', { href: '/explore' }, 'catálogo'), ' e use “Adicionar à comparação”.'), ids.length ? clear : null);
      return;
    }
    page('Comparação', loading());
    let result;
    try {
      result = await api('/compare', { method: 'POST', body: { vehicle_ids: ids } });
    } catch (e) {
      if (current(seq)) page('Comparação', errorBox(e.message), clear);
      return;
    }
    const summaries = await Promise.allSettled(result.data.vehicles.map((v) => api('/vehicles/' + encodeURIComponent(v.vehicle_id) + '/summary')));
    if (!current(seq)) return;
    const d = result.data;
    const vehicles = d.vehicles.map((v, i) => ({ ...v, info: summaries[i].status === 'fulfilled' ? summaries[i].value.data.summary : null }));
    const scores = Object.fromEntries((d.summary.score_geral || []).map((s) => [s.vehicle_id, s.score_geral_final]));
    const best = (key) => new Set(d.winner_by_criterion[key] || []);
    const costs = vehicles.map((v) => v.computed.custo_anual_estimado).filter((x) => x !== null);
    const minCost = costs.length ? Math.min(...costs) : null;
    const maxScore = Math.max(...Object.values(scores).filter((x) => x !== null));
    const rows = [
      ['Veículo', (v) => vehicleLink(v.vehicle_id, v.info ? [v.info.veiculo.marca, v.info.veiculo.modelo, v.info.veiculo.versao].map((x) => show(x)).join(' ') : v.vehicle_id), () => false],
      ['Ano', (v) => show(v.info && v.info.veiculo.ano, 'ano'), () => false],
      ['Categoria', (v) => show(v.info && v.info.veiculo.categoria), () => false],
      ['Combustível', (v) => show(v.info && v.info.veiculo.combustivel_tipo), () => false],
      ...CRITERIA.map(([key, text, get]) => [text, (v) => show(get(v)), (v) => best(key).has(v.vehicle_id)]),
      ['Custo anual estimado (R$)', (v) => show(v.computed.custo_anual_estimado), (v) => minCost !== null && v.computed.custo_anual_estimado === minCost],
      ['Faixa', (v) => show(v.eco_faixa), () => false],
      ['Pontuação geral', (v) => show(scores[v.vehicle_id]), (v) => scores[v.vehicle_id] === maxScore],
    ];
    const table = el('div', { class: 'table-wrap' }, el('table', { class: 'compare' },
      el('caption', { class: 'visually-hidden' }, 'Veículos lado a lado; ★ marca o melhor valor de cada métrica'),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Métrica'), vehicles.map((v, i) => el('th', { scope: 'col' }, 'Veículo ' + (i + 1))))),
      el('tbody', {}, rows.map(([text, cell, isBest]) => el('tr', {}, el('th', { scope: 'row' }, text),
        vehicles.map((v, i) => {
          const good = isBest(v);
          return el('td', { class: good ? 'best' : null, 'data-label': 'Veículo ' + (i + 1) }, cell(v), good ? el('span', { class: 'star' }, ' ★ ', el('span', { class: 'visually-hidden' }, 'melhor valor')) : null);
        }))))));
    const winner = d.summary.vencedor_geral;
    const winnerV = vehicles.find((v) => v.vehicle_id === winner);
    page('Comparação',
      winnerV ? el('p', { class: 'winner' }, 'Vencedor geral: ', el('strong', {}, winnerV.info ? [winnerV.info.veiculo.marca, winnerV.info.veiculo.modelo, winnerV.info.veiculo.versao].map((x) => show(x)).join(' ') : winner)) : null,
      d.missing_data.vehicles_not_found.length ? errorBox('Não encontrados: ' + d.missing_data.vehicles_not_found.join(', ')) : null,
      table, el('p', { class: 'hint' }, '★ marca o melhor valor de cada métrica (empates marcados em todos).'), clear);
    ready('compare', seq);
  }

  // ---------- insights ----------

  async function renderInsights(seq) {
    const filters = paramsOf(FILTERS);
    const apply = (next) => go(withParams('/explore/insights', next));
    const grid = el('div', { class: 'charts' }, loading());
    page('Indicadores', filterForm(filters, apply), activeFilters(filters, '/explore/insights'), grid);
    const yearly = new URLSearchParams(filters);
    yearly.set('metric', 'eco_score');
    yearly.set('top', '1');
    const [summary, emissions, brands, years] = await Promise.allSettled([
      api(withParams('/insights/summary', filters)),
      api(withParams('/insights/emissions', filters)),
      api(withParams('/aggregations/by-brand', filters)),
      api(withParams('/rankings/by-year', yearly)),
    ]);
    if (!current(seq)) return;
    const parts = [];
    if (summary.status === 'fulfilled') {
      const s = summary.value.data;
      parts.push(el('section', { class: 'summary wide', 'aria-labelledby': 'sum-title' }, el('h2', { id: 'sum-title' }, 'Resumo'),
        el('ul', { class: 'stats' },
          el('li', {}, el('span', {}, 'Eco score médio'), el('strong', {}, show(s.mediasGerais.ecoScoreMedio))),
          el('li', {}, el('span', {}, 'Consumo médio (MJ/km)'), el('strong', {}, show(s.mediasGerais.consumoMedio))),
          el('li', {}, el('span', {}, 'Emissão média de CO₂ (g/km)'), el('strong', {}, show(s.mediasGerais.emissaoMedia)))),
        el('p', {}, 'Melhores categorias: ', s.melhoresCategorias.map((c) => c.categoria + ' (' + show(c.ecoScoreMedio) + ')').join(', ') || '—'),
        el('p', {}, 'Piores categorias: ', s.pioresCategorias.map((c) => c.categoria + ' (' + show(c.ecoScoreMedio) + ')').join(', ') || '—')));
      parts.push(chart('dist', 'Distribuição do eco score', 'Faixa', 'Veículos', s.distribuicaoEcoScore.map((b) => [b.faixa, b.total]), 'bars'));
    } else parts.push(errorBox(summary.reason.message));
    if (emissions.status === 'fulfilled') {
      const e = emissions.value.data;
      parts.push(chart('co2-cat', 'Emissão média de CO₂ por categoria (g/km)', 'Categoria', 'CO₂ médio (g/km)', e.mediaPorCategoria.map((g) => [g.grupo, g.media]), 'hbars'));
      parts.push(chart('co2-fuel', 'Emissão média de CO₂ por combustível (g/km)', 'Combustível', 'CO₂ médio (g/km)', e.mediaPorCombustivel.map((g) => [g.grupo, g.media]), 'hbars'));
    } else parts.push(errorBox(emissions.reason.message));
    if (brands.status === 'fulfilled') {
      parts.push(chart('brand', 'Emissão média de CO₂ por marca (g/km)', 'Marca', 'CO₂ médio (g/km)', brands.value.data.items.map((g) => [g.grupo, g.emissaoMedia]), 'hbars'));
    } else parts.push(errorBox(brands.reason.message));
    if (years.status === 'fulfilled') {
      const points = years.value.data.groups.map((g) => [g.grupo, g.mediaGrupo]).sort((a, b) => Number(a[0]) - Number(b[0]));
      parts.push(chart('trend', 'Tendência anual do eco score médio', 'Ano', 'Eco score médio', points, 'line'));
    } else parts.push(errorBox(years.reason.message));
    grid.replaceChildren(...parts);
    ready('insights', seq);
  }

  // A chart (SVG built with DOM calls) with its numbers one click away.
  function chart(id, title, xLabel, yLabel, points, kind) {
    const numbers = dataTable(title, [{ key: 0, label: xLabel }, { key: 1, label: yLabel, numeric: true }], points, { className: 'numbers' });
    const holder = el('div', { id: 'numbers-' + id, hidden: true }, numbers);
    const toggle = el('button', { type: 'button', class: 'secondary', 'aria-expanded': 'false', 'aria-controls': 'numbers-' + id }, 'Ver números');
    toggle.addEventListener('click', () => {
      const open = holder.hidden;
      holder.hidden = !open;
      toggle.setAttribute('aria-expanded', String(open));
      toggle.textContent = open ? 'Ocultar números' : 'Ver números';
    });
    const drawn = kind === 'line' ? lineChart(title, points) : kind === 'hbars' ? hBarChart(title, points) : vBarChart(title, points);
    return el('figure', { class: 'chart' + (kind === 'hbars' && points.length > 12 ? ' tall' : ''), id: 'chart-' + id },
      el('figcaption', {}, el('h2', {}, title)), drawn, toggle, holder);
  }

  function niceMax(values) {
    const max = Math.max(0, ...values.filter((v) => typeof v === 'number' && isFinite(v)));
    if (max === 0) return 1;
    const step = Math.pow(10, Math.floor(Math.log10(max)));
    return Math.ceil(max / step) * step;
  }

  function svgRoot(title, width, height) {
    return svg('svg', { viewBox: '0 0 ' + width + ' ' + height, role: 'img', 'aria-label': title, preserveAspectRatio: 'xMinYMin meet', class: 'plot' });
  }

  function short(text, n) {
    const s = String(text);
    return s.length > n ? s.slice(0, n - 1) + '…' : s;
  }

  function hBarChart(title, points) {
    const rowH = 22;
    const left = 128;
    const width = 360;
    const height = points.length * rowH + 30;
    const max = niceMax(points.map((p) => p[1]));
    const root = svgRoot(title, width, height);
    points.forEach(([name, value], i) => {
      const y = 10 + i * rowH;
      const w = value === null ? 0 : (width - left - 48) * value / max;
      root.appendChild(svg('text', { x: left - 6, y: y + 14, 'text-anchor': 'end', class: 'label' }, short(name, 18), svg('title', {}, String(name))));
      root.appendChild(svg('rect', { x: left, y: y + 2, width: Math.max(w, 0), height: rowH - 6, class: 'bar' }, svg('title', {}, name + ': ' + show(value))));
      root.appendChild(svg('text', { x: left + Math.max(w, 0) + 4, y: y + 14, class: 'value' }, show(value)));
    });
    return root;
  }

  function vBarChart(title, points) {
    const width = 360;
    const height = 220;
    const bottom = 40;
    const max = niceMax(points.map((p) => p[1]));
    const root = svgRoot(title, width, height);
    const slot = (width - 40) / Math.max(points.length, 1);
    root.appendChild(svg('line', { x1: 20, x2: width - 20, y1: height - bottom, y2: height - bottom, class: 'axis' }));
    points.forEach(([name, value], i) => {
      const h = value === null ? 0 : (height - bottom - 30) * value / max;
      const x = 20 + i * slot + slot * 0.15;
      root.appendChild(svg('rect', { x, y: height - bottom - h, width: slot * 0.7, height: Math.max(h, 0), class: 'bar' }, svg('title', {}, name + ': ' + show(value))));
      root.appendChild(svg('text', { x: x + slot * 0.35, y: height - bottom - h - 6, 'text-anchor': 'middle', class: 'value' }, show(value)));
      root.appendChild(svg('text', { x: x + slot * 0.35, y: height - bottom + 18, 'text-anchor': 'middle', class: 'label' }, short(name, Math.max(4, Math.floor(slot / 8)))));
    });
    return root;
  }

  function lineChart(title, points) {
    const width = 360;
    const height = 220;
    const pad = { l: 40, r: 14, t: 16, b: 36 };
    const numeric = points.filter((p) => typeof p[1] === 'number');
    const ys = numeric.map((p) => p[1]);
    const min = Math.min(...ys);
    const max = Math.max(...ys);
    const lo = ys.length ? Math.floor(min - (max - min) * 0.1) : 0;
    const hi = ys.length ? Math.ceil(max + (max - min) * 0.1) || lo + 1 : 1;
    const root = svgRoot(title, width, height);
    const x = (i) => pad.l + (numeric.length > 1 ? i * (width - pad.l - pad.r) / (numeric.length - 1) : (width - pad.l - pad.r) / 2);
    const y = (v) => height - pad.b - (v - lo) * (height - pad.t - pad.b) / (hi - lo || 1);
    root.appendChild(svg('line', { x1: pad.l, x2: width - pad.r, y1: height - pad.b, y2: height - pad.b, class: 'axis' }));
    root.appendChild(svg('line', { x1: pad.l, x2: pad.l, y1: pad.t, y2: height - pad.b, class: 'axis' }));
    root.appendChild(svg('text', { x: pad.l - 6, y: pad.t + 4, 'text-anchor': 'end', class: 'label' }, show(hi)));
    root.appendChild(svg('text', { x: pad.l - 6, y: height - pad.b, 'text-anchor': 'end', class: 'label' }, show(lo)));
    root.appendChild(svg('polyline', { points: numeric.map((p, i) => x(i) + ',' + y(p[1])).join(' '), class: 'line' }));
    const every = Math.ceil(numeric.length / 7);
    numeric.forEach((p, i) => {
      root.appendChild(svg('circle', { cx: x(i), cy: y(p[1]), r: 3.5, class: 'dot' }, svg('title', {}, p[0] + ': ' + show(p[1]))));
      if (i % every === 0 || i === numeric.length - 1) {
        root.appendChild(svg('text', { x: x(i), y: height - pad.b + 18, 'text-anchor': 'middle', class: 'label' }, short(p[0], 10)));
      }
    });
    return root;
  }

  // ---------- SQL ----------

  let schemaCache = null;

  async function renderSql(seq) {
    const q = new URLSearchParams(location.search);
    const sql = q.get('sql') || 'select marca, round(avg(eco_score), 1) as eco_score_medio, count(*) as veiculos\nfrom vw_eco_score\ngroup by marca\norder by eco_score_medio desc\nlimit 20';
    const editor = el('textarea', { id: 'sql-editor', name: 'sql', rows: '8', spellcheck: 'false', autocapitalize: 'off', 'aria-describedby': 'sql-help' });
    editor.value = sql;
    const run = el('button', { type: 'submit', id: 'sql-run' }, 'Executar');
    const form = el('form', { class: 'sql-form' },
      el('label', { for: 'sql-editor' }, 'Consulta SQL (dialeto PostgreSQL, somente leitura)'), editor,
      el('p', { id: 'sql-help', class: 'hint' }, 'Ctrl+Enter executa. Tabelas e colunas ao lado.'),
      el('div', { class: 'actions' }, run));
    const result = el('div', { id: 'sql-result', 'aria-live': 'polite' });
    const tables = el('aside', { class: 'schema', 'aria-labelledby': 'schema-title' }, el('h2', { id: 'schema-title' }, 'Tabelas'), loading());
    const submit = () => {
      const next = new URLSearchParams({ sql: editor.value });
      if (editor.value === q.get('sql')) runSql(seq, editor.value, result);
      else go(withParams('/explore/sql', next));
    };
    form.addEventListener('submit', (ev) => { ev.preventDefault(); submit(); });
    editor.addEventListener('keydown', (ev) => {
      if ((ev.ctrlKey || ev.metaKey) && ev.key === 'Enter') { ev.preventDefault(); submit(); }
    });
    page('Consulta SQL', el('div', { class: 'sql' }, el('div', { class: 'sql-main' }, form, result), tables));
    loadSchema(seq, tables, editor);
    if (q.get('sql')) await runSql(seq, sql, result);
    else ready('sql', seq);
  }

  async function loadSchema(seq, box, editor) {
    try {
      if (!schemaCache) {
        const d = await api('/sql?' + new URLSearchParams({ sql: "select table_name, column_name, data_type from information_schema.columns where table_schema = 'public' order by table_name, ordinal_position" }));
        schemaCache = d.data;
      }
      if (!current(seq)) return;
      const byTable = new Map();
      for (const r of schemaCache) {
        if (!byTable.has(r.table_name)) byTable.set(r.table_name, []);
        byTable.get(r.table_name).push(r);
      }
      box.replaceChildren(box.firstChild, ...[...byTable].map(([t, cols]) => el('details', { class: 'table-cols' },
        el('summary', {}, t, el('span', { class: 'count' }, String(cols.length))),
        el('ul', {}, cols.map((c) => el('li', {}, el('button', {
          type: 'button', class: 'link', title: 'Inserir ' + c.column_name,
          on: { click: () => { insertAt(editor, c.column_name); } },
        }, c.column_name), ' ', el('span', { class: 'type' }, c.data_type)))))));
    } catch (e) {
      if (current(seq)) box.replaceChildren(box.firstChild, errorBox(e.message));
    }
  }

  function insertAt(editor, text) {
    const start = editor.selectionStart;
    editor.setRangeText(text, start, editor.selectionEnd, 'end');
    editor.focus();
  }

  async function runSql(seq, sql, box) {
    delete main.dataset.ready;
    renderStart = performance.now();
    box.replaceChildren(loading());
    const started = performance.now();
    let d;
    try {
      d = await api('/sql?' + new URLSearchParams({ sql }));
    } catch (e) {
      if (current(seq)) box.replaceChildren(el('p', { class: 'error', role: 'alert', id: 'sql-error' }, el('strong', {}, 'Erro ' + e.status + (e.code ? ' (' + e.code + ')' : '') + ': '), e.message));
      ready('sql', seq);
      return;
    }
    if (!current(seq)) return;
    const ms = Math.round(performance.now() - started);
    const cols = d.meta.columns || [];
    const rows = d.data;
    const numericCols = cols.filter((c) => c.type === 'integer' || c.type === 'float');
    const table = dataTable('Resultado da consulta', cols.map((c) => ({ key: c.name, label: c.name, numeric: c.type === 'integer' || c.type === 'float' })), rows.slice(0, 500), { className: 'sql-table' });
    const chartBox = el('div', { id: 'sql-chart' });
    const xSel = el('select', { id: 'chart-x' }, cols.map((c, i) => el('option', { value: c.name, selected: i === 0 ? true : null }, c.name)));
    const ySel = el('select', { id: 'chart-y' }, numericCols.map((c, i) => el('option', { value: c.name, selected: i === numericCols.length - 1 ? true : null }, c.name)));
    const kindSel = el('select', { id: 'chart-kind' }, el('option', { value: 'hbars' }, 'Barras'), el('option', { value: 'line' }, 'Linha'));
    const draw = () => {
      if (!numericCols.length) {
        chartBox.replaceChildren(el('p', { class: 'hint' }, 'Sem coluna numérica para o gráfico.'));
        return;
      }
      const pts = rows.slice(0, 100).map((r) => [show(r[xSel.value], xSel.value), r[ySel.value]]);
      chartBox.replaceChildren(chart('sql', ySel.value + ' por ' + xSel.value + (rows.length > 100 ? ' (100 primeiras linhas)' : ''), xSel.value, ySel.value, pts, kindSel.value));
    };
    for (const s of [xSel, ySel, kindSel]) s.addEventListener('change', draw);
    const controls = el('form', { class: 'chart-controls', 'aria-label': 'Gráfico do resultado' },
      el('span', { class: 'field inline' }, el('label', { for: 'chart-x' }, 'Eixo x'), xSel),
      el('span', { class: 'field inline' }, el('label', { for: 'chart-y' }, 'Eixo y'), ySel),
      el('span', { class: 'field inline' }, el('label', { for: 'chart-kind' }, 'Tipo'), kindSel));
    controls.addEventListener('submit', (ev) => ev.preventDefault());
    box.replaceChildren(
      el('div', { class: 'toolbar' },
        el('p', { class: 'total', id: 'sql-count' }, fmt.format(d.meta.row_count) + ' linhas' + (d.meta.truncated ? ' (resultado cortado no limite do servidor)' : '') + (rows.length > 500 ? ' · mostrando 500' : '') + ' · ' + ms + ' ms'),
        downloads('/sql', new URLSearchParams({ sql }), 'consulta')),
      table, el('h2', {}, 'Gráfico'), controls, chartBox);
    draw();
    ready('sql', seq);
  }

  function renderNotFound() {
    page('Página não encontrada', el('p', {}, 'Esta página não existe. ', el('a', { href: '/explore' }, 'Ir para o catálogo')));
  }

  render();
}());
