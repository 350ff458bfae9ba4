// check.mjs parses TLA+ modules with the TLA+ project's own tree-sitter grammar
// (@tlaplus/tree-sitter-tlaplus, run by web-tree-sitter from its .wasm build) and
// reports every syntax error it finds. SANY and TLC cannot be installed where
// kubeproof is built, so this is the syntax check of spec/*.tla; spec/tlacheck
// checks names, arities and actions (see spec/README.md).
//
//   node check.mjs [--names] [file.tla ...]
//
// Without files it parses every ../*.tla (spec/*.tla). Each ERROR or MISSING
// node of the parse tree is printed as
//
//   path:line:column: syntax error: unexpected "text"   (or: missing "==")
//     <the source line>
//     <a caret under the column>
//
// and the exit status is 1 if there was any, 2 if a file cannot be read or the
// grammar cannot be loaded, 0 otherwise. With --names it also prints, for each
// module that parsed cleanly, one JSON line with what the module declares at
// top level: {"file", "module", "extends", "constants", "variables",
// "definitions": {name: arity}, "uses": {name: [names its body refers to]}}
// (a function definition f[x \in S] == e counts as arity 0, as in TLA+ it is
// a value).

import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Language, Parser } from 'web-tree-sitter';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

function specModules() {
  const dir = join(here, '..');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.tla'))
    .sort()
    .map((f) => join(dir, f));
}

// syntaxErrors walks the tree and returns every ERROR and MISSING node, in
// source order. Below an ERROR node only the ERROR itself is reported: its
// children are the tokens the parser could not place.
function syntaxErrors(root) {
  const found = [];
  const visit = (node) => {
    if (node.isError || node.isMissing) {
      found.push(node);
      return;
    }
    if (!node.hasError) return;
    for (const child of node.children) visit(child);
  };
  visit(root);
  return found;
}

function describe(node, src) {
  if (node.isMissing) return `missing ${JSON.stringify(node.type)}`;
  let text = src.slice(node.startIndex, node.endIndex);
  const nl = text.indexOf('\n');
  if (nl >= 0) text = `${text.slice(0, nl)} …`;
  if (text.length > 60) text = `${text.slice(0, 60)} …`;
  return `unexpected ${JSON.stringify(text)}`;
}

// firstBrokenUnit localizes an error that tree-sitter's recovery spreads
// over the whole module (one ERROR node from the header on, as an unclosed
// bracket makes it): it finds, by bisection, the first top-level unit (a
// line starting in column 0 after the header) with which a prefix of the
// module, closed with ====, no longer parses. It returns that unit's 0-based
// line, or -1.
function firstBrokenUnit(parser, lines) {
  const units = [];
  for (let i = 1; i < lines.length; i++) {
    if (/^[A-Za-z_-]/.test(lines[i]) && !lines[i].startsWith('====')) units.push(i);
  }
  const end = lines.findIndex((l, i) => i > 0 && l.startsWith('===='));
  const parses = (k) => {
    // The prefix holds units[0..k]: everything before units[k+1].
    const stop = k + 1 < units.length ? units[k + 1] : end >= 0 ? end : lines.length;
    const tree = parser.parse(`${lines.slice(0, stop).join('\n')}\n====\n`);
    const ok = !tree.rootNode.hasError;
    tree.delete();
    return ok;
  };
  let lo = 0;
  let hi = units.length - 1;
  if (hi < 0 || parses(hi)) return -1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (parses(mid)) lo = mid + 1;
    else hi = mid;
  }
  return units[lo];
}

// references lists the names an expression refers to (identifier_ref nodes:
// operators, variables, constants and bound variables alike), each once.
function references(node, src) {
  const names = new Set();
  const visit = (n) => {
    if (n.type === 'identifier_ref') names.add(text(n, src));
    for (const child of n.namedChildren) visit(child);
  };
  if (node) visit(node);
  return [...names].sort();
}

function text(node, src) {
  return src.slice(node.startIndex, node.endIndex);
}

// declarations lists what the module declares at top level.
function declarations(root, src) {
  const module = root.namedChildren.find((n) => n.type === 'module');
  if (!module) return null;
  const out = {
    module: text(module.childForFieldName('name'), src),
    extends: [],
    constants: [],
    variables: [],
    definitions: {},
    uses: {},
  };
  for (const unit of module.namedChildren) {
    switch (unit.type) {
      case 'extends':
        for (const m of unit.namedChildren) {
          if (m.type === 'identifier_ref') out.extends.push(text(m, src));
        }
        break;
      case 'constant_declaration':
        for (const c of unit.namedChildren) {
          if (c.type === 'identifier') out.constants.push(text(c, src));
          if (c.type === 'operator_declaration') {
            out.constants.push(text(c.childForFieldName('name'), src));
          }
        }
        break;
      case 'variable_declaration':
        for (const v of unit.namedChildren) {
          if (v.type === 'identifier') out.variables.push(text(v, src));
        }
        break;
      case 'operator_definition': {
        const name = text(unit.childForFieldName('name'), src);
        const params = unit.childrenForFieldName('parameter').filter(
          (p) => p && (p.type === 'identifier' || p.type === 'operator_declaration'),
        );
        out.definitions[name] = params.length;
        out.uses[name] = references(unit.childForFieldName('definition'), src);
        break;
      }
      case 'function_definition': {
        const name = text(unit.childForFieldName('name'), src);
        out.definitions[name] = 0;
        out.uses[name] = references(unit, src);
        break;
      }
      default:
        break;
    }
  }
  return out;
}

async function main(argv) {
  const names = argv.includes('--names');
  let files = argv.filter((a) => a !== '--names');
  if (files.some((a) => a.startsWith('-'))) {
    console.error('usage: node check.mjs [--names] [file.tla ...]');
    return 2;
  }
  if (files.length === 0) files = specModules();
  if (files.length === 0) {
    console.error('check.mjs: no .tla files to parse');
    return 2;
  }

  await Parser.init();
  const language = await Language.load(
    require.resolve('@tlaplus/tree-sitter-tlaplus/tree-sitter-tlaplus.wasm'),
  );
  const parser = new Parser();
  parser.setLanguage(language);

  let errors = 0;
  for (const file of files) {
    let src;
    try {
      src = readFileSync(file, 'utf8');
    } catch (err) {
      console.error(`check.mjs: ${err.message}`);
      return 2;
    }
    const tree = parser.parse(src);
    const rel = relative(process.cwd(), file);
    const shown = rel && !rel.startsWith('..') ? rel : file;
    const lines = src.split('\n');
    const found = syntaxErrors(tree.rootNode);
    const report = (row, column, what) => {
      console.log(`${shown}:${row + 1}:${column + 1}: syntax error: ${what}`);
      console.log(`  ${lines[row] ?? ''}`);
      console.log(`  ${' '.repeat(column)}^`);
    };
    for (const node of found) {
      const { row, column } = node.startPosition;
      report(row, column, describe(node, src));
      if (row === 0 && node.endPosition.row > 1) {
        const unit = firstBrokenUnit(parser, lines);
        if (unit > 0) report(unit, 0, 'the module stops parsing in this definition');
      }
    }
    if (!tree.rootNode.namedChildren.some((n) => n.type === 'module')) {
      console.log(`${shown}:1:1: syntax error: no ---- MODULE Name ---- found`);
      found.push(null);
    }
    errors += found.length;
    if (names && found.length === 0) {
      console.log(JSON.stringify({ file: shown, ...declarations(tree.rootNode, src) }));
    }
    tree.delete();
  }
  parser.delete();
  if (errors > 0) {
    console.log(`${errors} syntax error(s)`);
    return 1;
  }
  console.log(`${files.length} module(s) parsed with tree-sitter-tlaplus: no syntax errors`);
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
