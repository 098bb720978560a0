/* queryeval view: a read-only single-page viewer. Every text from a run goes into the page
   through text nodes (never parsed as HTML), and the server sends a strict CSP. */
(function () {
  'use strict';
  var main = document.getElementById('main');
  var crumbs = document.getElementById('crumbs');
  var PAGE = 50;

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'onclick' || k === 'oninput' || k === 'onchange') {
        node.addEventListener(k.slice(2), attrs[k]);
      } else if (attrs[k] !== null && attrs[k] !== undefined) {
        node.setAttribute(k, attrs[k]);
      }
    });
    for (var i = 2; i < arguments.length; i++) { add(node, arguments[i]); }
    return node;
  }
  function add(node, child) {
    if (child === null || child === undefined) { return; }
    if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return; }
    /* only a DOM node is appended as such; any other value (a number, an object from a
       malformed run) becomes its text */
    if (child instanceof Node) { node.appendChild(child); return; }
    node.appendChild(document.createTextNode(
      typeof child === 'object' ? JSON.stringify(child) : String(child)));
  }
  function fmt(v, dec) {
    if (v === null || v === undefined) { return '—'; }
    if (typeof v === 'number') { return Number.isInteger(v) && !dec ? String(v) : v.toFixed(4); }
    return String(v);
  }
  /* a long id (a CSV question's UUID) shortened to its first 8 characters; the full id is
     the element's title (hover) */
  function shortId(v) {
    var t = String(v);
    return t.length > 12 ? t.slice(0, 8) + '…' : t;
  }
  function api(path) {
    return fetch(path, {headers: {'Accept': 'application/json'}}).then(function (r) {
      return r.json().then(function (d) {
        if (!r.ok) { throw new Error(d.error || ('HTTP ' + r.status)); }
        return d;
      });
    });
  }
  function enc(s) { return encodeURIComponent(s); }
  function show(nodes, trail) {
    main.textContent = '';
    add(main, nodes);
    crumbs.textContent = trail || '';
    document.body.setAttribute('data-ok', '1');
  }
  function fail(err) {
    show(el('p', {'class': 'worse', id: 'error'}, 'error: ' + err.message));
  }
  /* the charts the server drew (report/html_charts.py: the HTML pages' SVG, every text in it
     escaped there), parsed as SVG, never as HTML; a chart that does not parse is left out */
  function charts(list) {
    if (!list || !list.length || typeof DOMParser === 'undefined') { return null; }
    return el('div', {'class': 'charts', id: 'charts'}, list.map(function (c) {
      var svg = new DOMParser().parseFromString(String(c.svg), 'image/svg+xml').documentElement;
      if (!svg || svg.namespaceURI !== 'http://www.w3.org/2000/svg' || svg.localName !== 'svg' ||
          svg.getElementsByTagName('parsererror').length) { return null; }
      Array.prototype.forEach.call(svg.querySelectorAll('script, foreignObject'), function (n) {
        n.parentNode.removeChild(n); });
      return el('figure', {'class': 'chart', 'data-chart': c.id}, document.importNode(svg, true),
        el('figcaption', {'class': 'note'}, c.title));
    }));
  }
  /* a client-side sortable table (small tables: index, groups) */
  function sortable(table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, i) {
      th.classList.add('sort');
      th.addEventListener('click', function () {
        var asc = th.getAttribute('data-dir') !== 'asc';
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute('data-dir'); });
        th.setAttribute('data-dir', asc ? 'asc' : 'desc');
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[i].getAttribute('data-v'), y = b.cells[i].getAttribute('data-v');
          if (x === null) { x = a.cells[i].textContent.toLowerCase(); } else { x = parseFloat(x); }
          if (y === null) { y = b.cells[i].textContent.toLowerCase(); } else { y = parseFloat(y); }
          var c = x < y ? -1 : (x > y ? 1 : 0);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
    return table;
  }
  function num(v, cls, dec) {
    return el('td', {'class': 'num' + (cls ? ' ' + cls : ''),
                     'data-v': typeof v === 'number' ? String(v) : '-Infinity'}, fmt(v, dec));
  }

  /* ---- index ---- */
  function index() {
    api('/api/runs').then(function (data) {
      var chosen = {};
      var button = el('button', {id: 'compare-btn', disabled: 'disabled', onclick: function () {
        location.hash = '#/compare?' + Object.keys(chosen).map(function (id) {
          return 'run=' + enc(id); }).join('&');
      }}, 'Compare selected');
      var rows = data.runs.map(function (r) {
        var box = el('input', {type: 'checkbox', 'data-run': r.id, 'aria-label': 'select',
          onchange: function (ev) {
            if (ev.target.checked) { chosen[r.id] = 1; } else { delete chosen[r.id]; }
            if (Object.keys(chosen).length >= 2) { button.removeAttribute('disabled'); }
            else { button.setAttribute('disabled', 'disabled'); }
          }});
        var status = r.status === 'complete' ? r.status : r.status === 'unreadable' ?
          el('span', {'class': 'worse unreadable', title: String(r.error || '')}, 'unreadable: ' +
            String(r.error || '')) : el('span', {}, String(r.status) + ' ',
          r.cases ? el('span', {'class': 'progress', title: r.done + ' of ' + r.cases},
            el('span', {style: null, 'data-w': String(Math.min(100, 100 * r.done / r.cases))})) : null,
          ' ' + r.done + (r.cases ? ' / ' + r.cases : ''));
        return el('tr', {'data-run': r.id, 'class': r.parent ? 'derived' : null}, el('td', {}, box),
          el('td', {}, r.parent ? el('span', {'class': 'note', title: 'derived from ' + r.parent}, '↳ ') : null,
            el('a', {href: '#/run/' + enc(r.id), 'class': 'runlink'}, String(r.id).slice(0, 8))),
          el('td', {'class': 'label', title: String(r.label || '')}, r.label),
          el('td', {}, r.task), el('td', {'class': 'path'}, r.suite), el('td', {'class': 'path'}, r.system),
          el('td', {}, String(r.date || '').replace('T', ' ').slice(0, 19)), el('td', {}, status),
          num(r.cases), el('td', {'class': 'headline'}, Object.keys(r.metrics || {}).filter(
            /* the server says which figures are counts (ints in the metrics JSON), never the
               value: 1.0 is a figure */
            function (k) { return (r.metric_kinds || {})[k] === 'figure'; }).slice(0, 4).map(function (k) {
              return el('span', {'class': 'metric', 'data-metric': k}, k + ' ', el('b', {}, fmt(r.metrics[k], true)));
            })));
      });
      var table = sortable(el('table', {id: 'runs'}, el('thead', {}, el('tr', {},
        el('th', {}, ''), el('th', {}, 'run'), el('th', {}, 'name'), el('th', {}, 'task'), el('th', {}, 'suite'),
        el('th', {}, 'system'), el('th', {}, 'date'), el('th', {}, 'status'),
        el('th', {'class': 'num'}, 'cases'), el('th', {}, 'headline metrics'))),
        el('tbody', {}, rows)));
      var count = el('span', {'class': 'note', id: 'run-count'});
      var filter = el('input', {type: 'search', id: 'run-filter', placeholder: 'filter runs…',
        oninput: function () {
          var q = filter.value.toLowerCase(), shown = 0;
          rows.forEach(function (tr) {
            tr.hidden = q && tr.textContent.toLowerCase().indexOf(q) < 0;
            if (!tr.hidden) { shown += 1; }
          });
          count.textContent = shown + ' of ' + rows.length + ' runs';
        }});
      show([el('h1', {}, 'Runs'), el('p', {'class': 'note path'}, data.root),
            el('div', {'class': 'bar'}, filter, button, count), table], '');
      widths();
      count.textContent = rows.length + ' of ' + rows.length + ' runs';
    }).catch(fail);
  }
  /* progress bars: widths set through the CSSOM (inline style attributes are blocked) */
  function widths() {
    Array.prototype.forEach.call(document.querySelectorAll('[data-w]'), function (s) {
      s.style.width = s.getAttribute('data-w') + '%';
    });
  }

  /* ---- one run ---- */
  /* the cell of what decided a case: test_suite_match (— inconclusive), the judge's verdict,
     or the rule that decided (the record's own fields, read by the server) */
  function decided(d) {
    if (!d) { return el('td', {'class': 'decided note'}, ''); }
    var v = d.value === null || d.value === undefined ? (d.figure === 'test_suite_match' ?
      'inconclusive' : 'no verdict') : typeof d.value === 'number' ? fmt(d.value, true) : String(d.value);
    return el('td', {'class': 'decided' + (typeof d.value === 'number' ? ' num' : '')}, v);
  }
  function run(id) {
    api('/api/runs/' + enc(id)).then(function (doc) {
      /* the HTML report's Overall table, as the server read it from the report's functions */
      var overall = el('table', {id: 'overall'}, el('thead', {}, el('tr', {}, el('th', {}, 'metric'),
        el('th', {'class': 'num'}, 'value'), el('th', {'class': 'num'}, '95% CI of the case mean'),
        el('th', {'class': 'num'}, 'cases'))), el('tbody', {}, doc.overall_rows.map(function (m) {
          return el('tr', {'data-metric': m.metric}, el('td', {}, m.metric),
            num(m.value, null, (doc.metric_kinds || {})[m.metric] !== 'count'),
            el('td', {'class': 'num ci'}, m.low === null ? ['—', m.why ? el('span', {'class': 'note why'}, ' ' + m.why) : null] :
              '[' + fmt(m.low, true) + ', ' + fmt(m.high, true) + ']'),
            el('td', {'class': 'num'}, m.n === null ? '' : String(m.n)));
        })));
      var ciNote = el('p', {'class': 'note'}, 'Intervals: percentile bootstrap over cases (' +
        doc.ci_note.resamples + ' resamples, seed ' + doc.ci_note.seed + '), as in the HTML report' +
        (doc.repeats ? '; with repeats each case counts once (the mean of its attempts)' : '') + '.');
      var rep = doc.repeats, repeats = null;
      if (rep) {
        var keys = ['pass_rate'];
        (rep.pass_k || []).forEach(function (k) { keys.push('pass@' + k, 'pass^' + k); });
        repeats = [el('h2', {}, 'Repeats'), el('p', {'class': 'note'}, rep.repeats + ' attempts per case, ' +
            rep.cases + ' cases; means over cases, intervals resampling cases. Flaky (passed sometimes, ' +
            'not always): ' + rep.flaky_cases + ' (' + fmt(rep.flaky_share, true) + ').'),
          el('table', {id: 'repeats'}, el('thead', {}, el('tr', {}, el('th', {}, 'figure'),
            el('th', {'class': 'num'}, 'mean'), el('th', {'class': 'num'}, 'CI low'), el('th', {'class': 'num'}, 'CI high'))),
            el('tbody', {}, keys.map(function (k) {
              var f = (rep.overall || {})[k] || {};
              return el('tr', {}, el('td', {}, k), num(f.mean, null, true), num(f.ci_low, null, true), num(f.ci_high, null, true));
            }))),
          (rep.flaky || []).length ? [el('h3', {}, 'Flaky cases (P pass, F fail, E error)'),
            el('table', {id: 'flaky'}, el('thead', {}, el('tr', {}, el('th', {}, 'case'),
              el('th', {'class': 'num'}, 'pass rate'), el('th', {}, 'attempts'))),
              el('tbody', {}, rep.flaky.map(function (f) {
                return el('tr', {}, el('td', {}, el('a', {href: '#/case/' + enc(id) + '/' + enc(f.case_id)}, f.case_id)),
                  num(f.pass_rate, null, true), el('td', {}, el('code', {}, f.outcomes)));
              })))] : null];
      }
      var notes = [];
      if ((doc.withheld || []).length) {
        notes.push(el('p', {'class': 'note', id: 'withheld'}, 'not opened (outside the folder): task_options.' +
          doc.withheld.join(', task_options.')));
      }
      if (doc.task_error) {
        notes.push(el('p', {'class': 'note'}, 'the task could not be built from its options (' + doc.task_error +
          '): per-case figures use the scores as recorded'));
      }
      var derived = (doc.derived || []).length ? el('p', {id: 'derived'}, 'derived batches: ',
        doc.derived.map(function (d) { return [el('a', {href: '#/run/' + enc(d)}, d.slice(0, 8)), ' ']; })) : null;
      var figures = el('table', {}, el('tbody', {}, Object.keys(doc.overall).filter(function (k) {
        return typeof doc.overall[k] !== 'object'; }).map(function (k) {
          return el('tr', {}, el('td', {}, k), num(doc.overall[k])); })));
      var groups = Object.keys(doc.groups).map(function (key) {
        var members = doc.groups[key], cols = [];
        Object.keys(members).forEach(function (m) {
          Object.keys(members[m] || {}).forEach(function (c) {
            if (typeof members[m][c] !== 'object' && cols.indexOf(c) < 0 && cols.length < 8) {
              cols.push(c);
            }
          });
        });
        return el('details', {'class': 'group'}, el('summary', {}, key + ' (' +
          Object.keys(members).length + ')'), sortable(el('table', {}, el('thead', {}, el('tr', {},
            el('th', {}, key), cols.map(function (c) { return el('th', {'class': 'num'}, c); }))),
          el('tbody', {}, Object.keys(members).map(function (m) {
            return el('tr', {}, el('td', {}, m), cols.map(function (c) {
              return num(members[m][c]); }));
          })))));
      });
      var state = {offset: 0, q: '', status: '', verdict: '', sort: '', desc: false};
      var metricCols = doc.metric_names.slice(0, 6);
      var tbody = el('tbody', {});
      var info = el('span', {'class': 'note', id: 'case-count'});
      var decides = doc.decided_by || null;  /* the figure that decides the cases, if any */
      var heads = ['case_id', 'name', 'verdict'].concat(decides ? [decides] : [], ['reason', 'status'],
        doc.repeats ? ['outcomes'] : [], metricCols.filter(function (m) { return m !== decides; }));
      var unsortable = ['reason', decides];
      var headRow = el('tr', {}, heads.map(function (h) {
        if (unsortable.indexOf(h) >= 0) { return el('th', {'class': h === decides ? 'num decides' : null}, h); }
        return el('th', {'class': 'sort' + (metricCols.indexOf(h) >= 0 ? ' num' : ''),
          'data-key': h, onclick: function (ev) {
            state.desc = state.sort === h ? !state.desc : false;
            state.sort = h; state.offset = 0;
            Array.prototype.forEach.call(headRow.cells, function (c) { c.removeAttribute('data-dir'); });
            ev.target.setAttribute('data-dir', state.desc ? 'desc' : 'asc');
            load();
          }}, h);
      }), el('th', {}, 'tags'));
      var prev = el('button', {id: 'prev', onclick: function () {
        state.offset = Math.max(0, state.offset - PAGE); load(); }}, '‹ prev');
      var next = el('button', {id: 'next', onclick: function () {
        state.offset += PAGE; load(); }}, 'next ›');
      function load() {
        var qs = 'offset=' + state.offset + '&limit=' + PAGE + '&q=' + enc(state.q) +
          '&status=' + enc(state.status) + '&verdict=' + enc(state.verdict) + '&sort=' + enc(state.sort) +
          '&desc=' + (state.desc ? 1 : 0);
        return api('/api/runs/' + enc(id) + '/cases?' + qs).then(function (page) {
          tbody.textContent = '';
          page.rows.forEach(function (r) {
            add(tbody, el('tr', {'data-case': r.case_id},
              el('td', {'class': 'caseid'}, el('a', {href: '#/case/' + enc(id) + '/' + enc(r.case_id),
                                    'class': 'caselink', title: r.case_id}, shortId(r.case_id))),
              el('td', {}, r.name), el('td', {'class': 'verdict ' + (r.verdict === 'pass' ? 'better' : 'worse')}, r.verdict),
              decides ? decided(r.decided) : null,
              el('td', {'class': 'reason', title: r.reason || ''}, r.reason || ''),
              el('td', {'class': r.status === 'ok' ? '' : 'worse'}, r.status),
              doc.repeats ? el('td', {}, r.attempts.map(function (a, i) {
                return el('a', {href: '#/case/' + enc(id) + '/' + enc(r.case_id) + '?repeat=' + a.repeat,
                  'class': 'attempt ' + (a.verdict === 'pass' ? 'better' : 'worse'),
                  title: 'repeat ' + a.repeat + ': ' + a.verdict}, (r.outcomes || '')[i] || '?'); })) : null,
              metricCols.filter(function (m) { return m !== decides; }).map(function (m) {
                return num(r.metrics[m], null, true); }),
              el('td', {}, r.tags.map(function (t) { return el('span', {'class': 'tag'}, t); }))));
          });
          var end = Math.min(page.offset + page.rows.length, page.matched);
          info.textContent = (page.matched ? page.offset + 1 : 0) + '–' + end + ' of ' +
            page.matched + ' matching (' + page.total + ' cases)';
          if (state.offset === 0) { prev.setAttribute('disabled', 'disabled'); }
          else { prev.removeAttribute('disabled'); }
          if (end >= page.matched) { next.setAttribute('disabled', 'disabled'); }
          else { next.removeAttribute('disabled'); }
          document.body.setAttribute('data-cases', String(page.matched));
        }).catch(fail);
      }
      var search = el('input', {type: 'search', id: 'case-filter', placeholder: 'search id, name, tag…',
        oninput: function () { state.q = search.value; state.offset = 0; load(); }});
      var verdict = el('select', {id: 'case-verdict', 'aria-label': 'verdict', onchange: function () {
        state.verdict = verdict.value; state.offset = 0; load(); }},
        el('option', {value: ''}, 'every verdict'), Object.keys(doc.verdicts).map(function (s) {
          return el('option', {value: s}, s + ' (' + doc.verdicts[s] + ')'); }));
      var status = el('select', {id: 'case-status', 'aria-label': 'status', onchange: function () {
        state.status = status.value; state.offset = 0; load(); }},
        el('option', {value: ''}, 'every call status'), Object.keys(doc.statuses).map(function (s) {
          return el('option', {value: s}, s + ' (' + doc.statuses[s] + ')'); }));
      var progress = doc.status === 'complete' ? null : el('p', {id: 'progress'},
        'status ' + doc.status + ': ' + doc.done + (doc.cases ? ' of ' + doc.cases : '') + ' cases done');
      show([el('h1', {id: 'run-title'}, (doc.label ? doc.label + ' · ' : '') + (doc.task || '') + ' · ' + doc.system),
            el('p', {'class': 'note'}, doc.path + ' · ' + (doc.date || '') + ' · suite ' + doc.suite),
            progress, notes, derived, doc.to_compare ? el('p', {'class': 'note', id: 'to-compare'}, doc.to_compare) : null,
            el('h2', {}, 'Overall' + (doc.settings ? ' (' + doc.settings + ')' : '')),
            overall, ciNote, (doc.charts || []).length ? el('h2', {}, 'Charts') : null, charts(doc.charts),
            repeats, el('details', {}, el('summary', {},
              'all figures'), figures), groups.length ? el('h2', {}, 'Groups') : null, groups,
            el('h2', {}, 'Cases'), el('p', {'class': 'note'}, 'verdict: the HTML report\'s pass/fail' +
              (doc.repeats ? ' (flaky: some attempts passed, some did not; ' + doc.attempts + ' attempts)' : '') +
              '; status: whether the call itself failed'),
            el('div', {'class': 'bar'}, search, verdict, status, prev, next, info),
            el('table', {id: 'cases'}, el('thead', {}, headRow), tbody)], ' / run ' + id.slice(0, 8));
      document.body.setAttribute('data-ok', '0');
      load().then(function () { document.body.setAttribute('data-ok', '1'); });
    }).catch(fail);
  }

  /* ---- one case ---- */
  var LABELS = {tp: 'found', fn: 'missed', fp: 'extra', target: 'expected', output: 'got',
                expected: 'expected', predicted: 'got'};
  var expected = {};  /* ids of the expected chunks of the case shown: their rows are marked */
  function resultTable(v, key) {
    /* a result sample: {columns, rows, matched}: matched rows found, the others missed
       (expected side) or extra (predicted side) */
    var side = key === 'predicted' || key === 'output' ? 'extra' : 'missed';
    return el('table', {'class': 'rows result'}, el('thead', {}, el('tr', {},
      v.columns.map(function (c) { return el('th', {}, fmt(c)); }))),
      el('tbody', {}, v.rows.slice(0, 200).map(function (row, i) {
        var m = Array.isArray(v.matched) ? v.matched[i] : null;
        return el('tr', {'class': m === true ? 'found' : m === false ? side : null},
          (Array.isArray(row) ? row : [row]).map(function (c) { return el('td', {}, fmt(c)); }));
      })), v.total !== undefined && v.total > v.rows.length ?
        el('caption', {}, v.rows.length + ' of ' + v.total + ' rows') : null);
  }
  function value(v, key) {
    if (v === null || v === undefined || typeof v !== 'object') {
      return typeof v === 'string' && v.length > 80 ? el('pre', {}, v) : fmt(v);
    }
    if (!Array.isArray(v) && Array.isArray(v.columns) && Array.isArray(v.rows)) {
      return resultTable(v, key);
    }
    if (Array.isArray(v)) {
      if (!v.length) { return el('span', {'class': 'note'}, '(none)'); }
      if (v.length <= 20 && v.every(function (x) { return x === null || typeof x !== 'object'; })) {
        return el('span', {'class': 'list'}, v.map(fmt).join(', '));
      }
      var keys = [];
      var flat = v.every(function (x) {
        if (!x || typeof x !== 'object' || Array.isArray(x)) { return false; }
        Object.keys(x).forEach(function (k) { if (keys.indexOf(k) < 0) { keys.push(k); } });
        return Object.keys(x).every(function (k) { return x[k] === null || typeof x[k] !== 'object'; });
      });
      if (flat && keys.length) {
        return el('table', {'class': 'rows'}, el('thead', {}, el('tr', {}, keys.map(function (k) {
          return el('th', {}, k); }))), el('tbody', {}, v.slice(0, 200).map(function (x) {
            return el('tr', {'class': x.chunk_id !== undefined && expected[x.chunk_id] ? 'found' : null},
              keys.map(function (k) { return el('td', {}, fmt(x[k])); })); })));
      }
      if (v.every(function (x) { return Array.isArray(x); })) {
        return el('table', {'class': 'rows'}, el('tbody', {}, v.slice(0, 200).map(function (x) {
          return el('tr', {}, x.map(function (c) { return el('td', {}, fmt(c)); })); })));
      }
      return el('ol', {'start': '0'}, v.slice(0, 200).map(function (x) { return el('li', {}, value(x)); }));
    }
    return el('dl', {'class': 'kv'}, Object.keys(v).map(function (k) {
      var cls = LABELS[k] === 'found' ? 'found' : LABELS[k] === 'missed' ? 'missed' :
        LABELS[k] === 'extra' ? 'extra' : null;
      return [el('dt', {}, LABELS[k] ? k + ' (' + LABELS[k] + ')' : k),
              el('dd', {'class': cls}, value(v[k], k))];
    }));
  }
  function caseView(id, caseId, repeat) {
    // the id as a query value: any text survives (CR/LF, NUL, '/', '?', '.' and '..', which
    // a URL path would resolve away); the server decodes it once and matches it exactly
    api('/api/runs/' + enc(id) + '/case?id=' + enc(caseId) + (repeat !== undefined ? '&repeat=' + enc(repeat) : '')).then(function (doc) {
      var rec = doc.record, rest = {};
      expected = {};
      [].concat(rec.expected_chunk || [], rec.expected_chunks || []).forEach(function (c) {
        if (c && c.chunk_id !== undefined) { expected[c.chunk_id] = true; }
      });
      Object.keys(rec).forEach(function (k) {
        if (['case_id', 'name', 'tags', 'status', 'turns', 'scores', 'expected_chunk'].indexOf(k) < 0) { rest[k] = rec[k]; }
      });
      var row = doc.row, attempts = row.attempts.length > 1 || row.attempts[0].repeat !== null ?
        el('p', {id: 'attempts'}, 'attempts: ', row.attempts.map(function (a) {
          var label = 'repeat ' + a.repeat + ' (' + a.verdict + ')';
          return [a.index === doc.attempt.index ? el('b', {'class': 'attempt current'}, label) :
            el('a', {'class': 'attempt', href: '#/case/' + enc(id) + '/' + enc(caseId) + '?repeat=' + a.repeat}, label), ' '];
        })) : null;
      var exp = rec.expected_chunk, chunk = exp && typeof exp === 'object' && !Array.isArray(exp) ? [
        el('h2', {}, 'Expected chunk'), el('p', {'class': 'note'}, [exp.name, exp.chunk_id, exp.source].filter(
          function (x) { return x !== undefined && x !== null; }).join(' · ')),
        typeof exp.content === 'string' ? el('pre', {id: 'expected-text'}, exp.content) :
          el('p', {'class': 'note', id: 'expected-text'}, (doc.withheld || []).indexOf('corpus') >= 0 ?
            'text not shown: the corpus is outside the folder, so the viewer does not open it' :
            'text not in the run log')] : null;
      // why the tables differ / what the query touched: the record's own fields (computed once
      // when the case was scored), shown as written
      var why = Array.isArray(rec.explanation) && rec.explanation.length ? [
        el('h2', {}, 'Why the tables differ'), el('ul', {id: 'why'}, rec.explanation.map(function (it) {
          return el('li', {'class': 'why'}, el('b', {}, String(it && it.kind)), ': ' + String(it && it.message));
        }))] : null;
      var touched = rec.touched && typeof rec.touched === 'object' && rec.touched.message ? [
        el('h2', {}, 'What the query touched'), el('p', {id: 'touched'}, String(rec.touched.message))] : null;
      // what decided the case and the judge's verdict and reason (a judged run): the record's
      // own fields (decided_by, judge), shown as written, as text
      var jd = rec.judge && typeof rec.judge === 'object' ? rec.judge : null;
      var judge = rec.decided_by !== undefined ? [
        el('h2', {}, 'Decided by'), el('p', {id: 'decided-by'}, String(rec.decided_by)),
        jd ? el('p', {id: 'judge'}, el('b', {}, 'judge ' + String(jd.verdict || 'no verdict')),
          ': ' + String(jd.reason || ''), el('span', {'class': 'note'}, ' (' + (jd.why ? 'asked: ' +
          String(jd.why) + '; ' : '') + String(jd.model || '') + ', prompt ' + String(jd.prompt_version || '?') + ')')) : null,
        jd && jd.error && typeof jd.error === 'object' ? el('p', {'class': 'worse', id: 'judge-error'},
          'judge error — ' + String(jd.error.kind) + ': ' + String(jd.error.message || '')) : null] : null;
      var turns = Array.isArray(rec.turns) ? rec.turns : [];
      show([el('p', {}, el('a', {href: '#/run/' + enc(id)}, '‹ back to the run')),
            el('h1', {id: 'case-title'}, (rec.name || rec.case_id) + ''),
            el('p', {'class': 'note'}, rec.case_id + ' · ', el('b', {id: 'case-verdict-shown', 'class':
              doc.attempt.verdict === 'pass' ? 'better' : 'worse'}, doc.attempt.verdict),
              ' · call status ' + rec.status + (row.attempts.length > 1 ? ' · case verdict ' + row.verdict +
              ' (' + row.outcomes + ')' : '')), attempts, chunk, why, touched, judge,
            el('h2', {}, 'Scores'), value(rec.scores || {}),
            turns.map(function (t, i) { return [el('h2', {}, 'Turn ' + (t.turn !== undefined ? t.turn : i)), value(t)]; }),
            el('h2', {}, 'Record'), value(rest),
            el('details', {}, el('summary', {}, 'raw JSON'), el('pre', {}, JSON.stringify(rec, null, 2)))],
           ' / run ' + id.slice(0, 8) + ' / case');
    }).catch(fail);
  }

  /* ---- compare ---- */
  function compare(query) {
    var params = new URLSearchParams(query), ids = params.getAll('run');
    api('/api/compare?' + query).then(function (doc) {
      var L = doc.runs.map(function (r) { return r.letter; });
      function table(t) {
        return el('table', {'class': 'nway'}, el('thead', {}, el('tr', {}, el('th', {}, 'metric'),
          el('th', {'class': 'num'}, 'n'), doc.runs.map(function (r) {
            return el('th', {'class': 'num'}, r.letter + ': ' + r.label); }))),
          el('tbody', {}, t.metrics.map(function (m) {
            return el('tr', {}, el('td', {}, m.metric), num(m.n), m.means.map(function (v, k) {
              var better = m.better_than[k].map(function (x) { return L[x]; }).join('');
              var worse = m.worse_than[k].indexOf(0) >= 0;
              return el('td', {'class': 'num' + (m.best.indexOf(k) >= 0 ? ' best' : '')}, fmt(v, true),
                better ? el('sup', {}, better) : null, worse ? el('span', {'class': 'worse'}, ' ▼') : null);
            }));
          })));
      }
      var flips = el('tbody', {});
      doc.flips.forEach(function (f) {
        ['improved', 'regressed'].forEach(function (kind) {
          f[kind].forEach(function (cid) {
            add(flips, el('tr', {'class': 'flip'}, el('td', {}, L[f.run_a] + ' → ' + L[f.run_b]),
              el('td', {}, f.metric), el('td', {'class': kind === 'improved' ? 'better' : 'worse'}, kind),
              el('td', {}, cid), el('td', {}, el('a', {href: '#/case/' + enc(ids[f.run_a]) + '/' + enc(cid)}, L[f.run_a])),
              el('td', {}, el('a', {href: '#/case/' + enc(ids[f.run_b]) + '/' + enc(cid)}, L[f.run_b]))));
          });
        });
      });
      var groups = Object.keys(doc.groups).map(function (key) {
        return el('details', {}, el('summary', {}, key + ' (' + doc.groups[key].length + ')'),
          doc.groups[key].map(function (t) {
            var also = (t.also || []).length ? ' (also ' + t.also.join(', ') + ')' : '';
            return [el('h3', {}, key + ' = ' + t.member + also), table(t)];
          }));
      });
      /* the headline: per run against the baseline, the compare model's verdicts as they are
         (better / worse / no detectable difference after Holm), never recomputed here */
      var lines = doc.runs.slice(1).map(function (r, j) {
        var mine = (doc.verdicts || []).filter(function (v) { return v.run_a === 0 && v.run_b === j + 1; });
        var pick = function (w) { return mine.filter(function (v) { return v.verdict === w; })
          .map(function (v) { return v.metric; }); };
        var worse = pick('worse'), better = pick('better');
        var same = mine.length - worse.length - better.length;
        var parts = [];
        if (worse.length) { parts.push('significantly worse on ' + worse.length + ': ' + worse.join(', ')); }
        if (better.length) { parts.push('significantly better on ' + better.length + ': ' + better.join(', ')); }
        if (same) { parts.push('no detectable difference on ' + same); }
        if (!parts.length) { parts.push('no metric tested'); }
        var kind = worse.length ? (better.length ? 'mixed' : 'worse') : better.length ? 'better' : 'same';
        return el('li', {'class': 'verdict-' + kind + (kind === 'worse' ? ' worse' : kind === 'better' ? ' better' : ''),
          'data-run': String(j + 1), 'data-verdict': kind},
          el('b', {}, r.letter + ' (' + r.label + ')'), ' against ' + doc.runs[0].letter + ' (' + doc.runs[0].label + '): ' +
          parts.join('; '));
      });
      show([el('h1', {}, 'Comparison of ' + doc.runs.length + ' runs · ' + doc.task),
            el('ul', {id: 'verdict', 'class': 'verdicts'}, lines), charts(doc.charts),
            el('p', {'class': 'note'}, 'Against the baseline a: significant after Holm\'s adjustment over the ' +
              'tested metrics (alpha ' + doc.alpha + ').'),
            el('ul', {}, doc.runs.map(function (r, k) {
              return el('li', {}, el('b', {}, r.letter), ': ', el('a', {href: '#/run/' + enc(ids[k])}, r.label),
                ' (' + r.batch_id + ')'); })),
            el('p', {'class': 'note'}, 'Best mean in bold; letters: significantly better than that run; ▼: ' +
              'significantly worse than the baseline (paired randomization tests, Holm-adjusted per table, alpha ' +
              doc.alpha + ').'),
            el('p', {}, doc.pairs === 'all' ? 'Every pair tested · ' : 'Each run tested against a · ',
              el('a', {id: 'pairs-toggle', href: '#/compare?' + ids.map(function (i) {
                return 'run=' + enc(i); }).join('&') + (doc.pairs === 'all' ? '' : '&pairs=all')},
              doc.pairs === 'all' ? 'test against the baseline only' : 'test every pair')),
            el('h2', {}, 'Overall'), el('div', {id: 'nway'}, table(doc.overall)),
            groups.length ? el('h2', {}, 'Groups') : null, groups,
            el('h2', {}, 'Flipped cases'), el('table', {id: 'flips'}, el('thead', {}, el('tr', {},
              el('th', {}, 'pair'), el('th', {}, 'metric'), el('th', {}, 'change'), el('th', {}, 'case'),
              el('th', {}, 'first'), el('th', {}, 'second'))), flips)], ' / compare');
    }).catch(fail);
  }

  function route() {
    document.body.setAttribute('data-ok', '0');
    var h = location.hash || '#/', m;
    if ((m = h.match(/^#\/run\/([^/]+)$/))) { run(decodeURIComponent(m[1])); }
    else if ((m = h.match(/^#\/case\/([^/]+)\/([^?]+)(?:\?repeat=(-?\d+))?$/))) {
      caseView(decodeURIComponent(m[1]), decodeURIComponent(m[2]), m[3]);
    } else if ((m = h.match(/^#\/compare\?(.*)$/))) { compare(m[1]); }
    else { index(); }
  }
  window.addEventListener('hashchange', route);
  route();
}());
