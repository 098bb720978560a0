"""Runs the viewer's page script (``viewer/static/app.js``) under node with a minimal DOM, on
a document the viewer's API answered, and returns what the page shows: the text of every
element with an id and the tags of all elements (every run text is a text node, so a
hostile string can never become an element). Tests that use it skip without node."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

APP_JS = Path(__file__).resolve().parents[2] / "src" / "queryeval" / "viewer" / "static" / "app.js"

SHIM = r"""
const fs = require('fs'), vm = require('vm');
const [appPath, docPath, hash] = process.argv.slice(2);
const DOC = JSON.parse(fs.readFileSync(docPath, 'utf8'));
class Node {
  constructor(tag) { this.tag = tag; this.children = []; this.attrs = {}; }
  appendChild(c) { this.children.push(c); return c; }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  removeAttribute(k) { delete this.attrs[k]; }
  addEventListener() {}
  get textContent() { return this.children.map(c => c.textContent).join(''); }
  set textContent(v) { this.children = v ? [new Text(v)] : []; }
}
class Text extends Node {
  constructor(t) { super('#text'); this.t = String(t); }
  get textContent() { return this.t; }
  set textContent(v) { this.t = String(v); }
}
const byId = {main: new Node('main'), crumbs: new Node('div')};
const document = {body: new Node('body'), getElementById: id => byId[id] || null,
  createElement: tag => new Node(tag), createTextNode: t => new Text(t),
  querySelectorAll: () => []};
const ctx = {document, Node, window: {addEventListener() {}}, location: {hash},
  fetch: () => Promise.resolve({ok: true, status: 200, json: () => Promise.resolve(DOC)}),
  URLSearchParams, console};
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(appPath, 'utf8'), ctx);
setTimeout(() => {
  const ids = {}, tags = [];
  (function walk(n) {
    if (n.tag !== '#text') { tags.push(n.tag); if (n.attrs.id) { ids[n.attrs.id] = n.textContent; } }
    n.children.forEach(walk);
  })(byId.main);
  process.stdout.write(JSON.stringify({ids, tags, text: byId.main.textContent}));
}, 50);
"""


def render_case_page(doc: dict, tmp_path: Path, run_id: str = "r", case_id: str = "c") -> dict:
    """The case page (``#/case/<run>/<case>``) the script builds from ``doc`` (the answer of
    ``/api/runs/<run>/case``)."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node is not installed: the viewer's script is not run")
    shim, docfile = tmp_path / "shim.js", tmp_path / "doc.json"
    shim.write_text(SHIM, encoding="utf-8")
    docfile.write_text(json.dumps(doc), encoding="utf-8")
    out = subprocess.run([node, str(shim), str(APP_JS), str(docfile),
                          f"#/case/{run_id}/{case_id}"], capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(out.stdout)


PAGE_SHIM = r"""
const fs = require('fs'), vm = require('vm');
const [appPath, docPath, hash] = process.argv.slice(2);
const DOCS = JSON.parse(fs.readFileSync(docPath, 'utf8'));
class Node {
  constructor(tag) { this.tag = tag; this.children = []; this.attrs = {}; this.style = {};
    const self = this; this.classList = {add(c) { self.attrs['class'] =
      ((self.attrs['class'] || '') + ' ' + c).trim(); }}; }
  appendChild(c) { this.children.push(c); return c; }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  getAttribute(k) { return k in this.attrs ? this.attrs[k] : null; }
  removeAttribute(k) { delete this.attrs[k]; }
  addEventListener() {}
  kids(tag) { return this.children.filter(c => c.tag === tag); }
  get tHead() { return this.kids('thead')[0]; }
  get tBodies() { return this.kids('tbody'); }
  get rows() { return this.kids('tr'); }
  get cells() { return this.children.filter(c => c.tag === 'td' || c.tag === 'th'); }
  get textContent() { return this.children.map(c => c.textContent).join(''); }
  set textContent(v) { this.children = v ? [new Text(v)] : []; }
}
class Text extends Node {
  constructor(t) { super('#text'); this.t = String(t); }
  get textContent() { return this.t; }
  set textContent(v) { this.t = String(v); }
}
const byId = {main: new Node('main'), crumbs: new Node('div')};
const document = {body: new Node('body'), getElementById: id => byId[id] || null,
  createElement: tag => new Node(tag), createTextNode: t => new Text(t),
  querySelectorAll: () => []};
function answer(url) {
  const path = url.split('?')[0];
  const key = Object.keys(DOCS).filter(k => path === k).concat(
    Object.keys(DOCS).filter(k => path.startsWith(k)).sort((a, b) => b.length - a.length))[0];
  const doc = DOCS[key];
  return Promise.resolve({ok: doc !== undefined, status: doc === undefined ? 404 : 200,
    json: () => Promise.resolve(doc === undefined ? {error: 'no doc for ' + path} : doc)});
}
const ctx = {document, Node, window: {addEventListener() {}}, location: {hash},
  fetch: answer, URLSearchParams, console};
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(appPath, 'utf8'), ctx);
setTimeout(() => {
  const ids = {}, tables = {};
  const rowsOf = t => [].concat(...t.children.filter(s => s.tag === 'thead' || s.tag === 'tbody')
    .map(s => s.kids('tr'))).map(r => r.cells.map(c => c.textContent));
  const attrs = [];
  (function walk(n) {
    if (n.tag !== '#text') {
      if (n.attrs.id) { ids[n.attrs.id] = n.textContent; }
      if (n.tag === 'table' && n.attrs.id) { tables[n.attrs.id] = rowsOf(n); }
      if (Object.keys(n.attrs).length) { attrs.push([n.tag, n.attrs, n.textContent]); }
    }
    n.children.forEach(walk);
  })(byId.main);
  process.stdout.write(JSON.stringify({ids, tables, attrs, text: byId.main.textContent}));
}, 100);
"""


def render_page(docs: dict[str, dict], tmp_path: Path, hash_: str) -> dict:
    """The page the script builds at ``hash_`` (``#/``, ``#/run/<id>``, ``#/compare?…``) when
    each API path answers its document in ``docs`` (a path or its longest prefix: e.g.
    ``/api/runs/R`` and ``/api/runs/R/cases``): the text of every element with an id, every
    table with an id as rows of cell texts (head first), every element with attributes as
    ``[tag, attrs, text]``."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node is not installed: the viewer's script is not run")
    shim, docfile = tmp_path / "page_shim.js", tmp_path / "docs.json"
    shim.write_text(PAGE_SHIM, encoding="utf-8")
    docfile.write_text(json.dumps(docs), encoding="utf-8")
    out = subprocess.run([node, str(shim), str(APP_JS), str(docfile), hash_],
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)
