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
// When tree-sitter's error recovery spreads one error over the whole module
// (an unclosed bracket does), the first definition the module stops parsing in
// is reported as well. A module without syntax errors is then checked for what
// SANY reports next and the grammar accepts: a name introduced again where it
// is visible (a parameter, bound variable or LET definition named like a
// constant, a variable, an earlier definition, a standard operator or an
// enclosing bound variable; a definition made twice), reported as
//
//   path:line:column: error: multiply-defined symbol "x": ...
//
// and then for SANY's level errors (see levels below), reported as
// "error: level: ...".
//
// The exit status is 1 if anything was reported, 2 if a file cannot be read or
// the grammar cannot be loaded, 0 otherwise. With --names it also prints, for
// each module without errors, one JSON line with what the module declares at
// top level: {"file", "module", "extends", "constants", "variables",
// "definitions": {name: arity}, "uses": {name: [names its body refers to]},
// "levels": {name: 0 constant | 1 state | 2 action | 3 temporal}}
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

// The names the standard modules define (the identifiers among them), which
// a module's own definitions and bound variables may not redefine.
const standardNames = {
  Naturals: ['Nat'],
  Integers: ['Nat', 'Int'],
  Reals: ['Nat', 'Int', 'Real', 'Infinity'],
  Sequences: ['Seq', 'Len', 'Head', 'Tail', 'Append', 'SubSeq', 'SelectSeq'],
  FiniteSets: ['IsFiniteSet', 'Cardinality'],
  Bags: ['IsABag', 'BagToSet', 'SetToBag', 'BagIn', 'EmptyBag', 'CopiesIn', 'BagCardinality', 'BagOfAll', 'BagUnion', 'SubBag'],
  TLC: ['Print', 'PrintT', 'Assert', 'JavaTime', 'Permutations', 'SortSeq', 'ToString', 'TLCGet', 'TLCSet', 'RandomElement', 'Any', 'TLCEval'],
};

// introduced lists the identifier nodes a quantifier bound (or a list of
// them) introduces: x, or each name of a tuple <<x, y>>.
function introduced(nodes) {
  const out = [];
  for (const n of nodes) {
    if (!n) continue;
    if (n.type === 'identifier') out.push(n);
    else if (n.type === 'tuple_of_identifiers') out.push(...n.namedChildren.filter((c) => c.type === 'identifier'));
    else if (n.type === 'quantifier_bound') out.push(...introduced(n.childrenForFieldName('intro')));
  }
  return out;
}

// redefinitions finds the names a definition introduces again while they are
// visible — a parameter, a bound variable or a LET definition named like a
// constant, a variable, an earlier definition, a standard operator or an
// enclosing bound variable. TLA+ forbids it (SANY reports a multiply-defined
// symbol); the grammar alone does not.
function redefinitions(unit, globals, src) {
  const found = [];
  const introduce = (ids, scope) => {
    const inner = new Set(scope);
    for (const id of ids) {
      const name = text(id, src);
      if (inner.has(name)) found.push({ node: id, name });
      inner.add(name);
    }
    return inner;
  };
  const visit = (node, scope) => {
    if (!node) return;
    const field = (f) => node.childForFieldName(f);
    switch (node.type) {
      case 'bounded_quantification':
        for (const b of node.childrenForFieldName('bound')) visit(b?.childForFieldName?.('set'), scope);
        visit(field('expression'), introduce(introduced(node.childrenForFieldName('bound')), scope));
        return;
      case 'unbounded_quantification':
        visit(field('expression'), introduce(introduced(node.childrenForFieldName('intro')), scope));
        return;
      case 'choose':
        visit(field('set'), scope);
        visit(field('expression'), introduce(introduced(node.childrenForFieldName('intro')), scope));
        return;
      case 'set_filter':
      case 'set_map': {
        const gens = node.childrenForFieldName('generator');
        for (const g of gens) visit(g?.childForFieldName?.('set'), scope);
        visit(field(node.type === 'set_filter' ? 'filter' : 'map'), introduce(introduced(gens), scope));
        return;
      }
      case 'function_literal': {
        const bounds = node.namedChildren.filter((c) => c.type === 'quantifier_bound');
        for (const b of bounds) visit(b.childForFieldName('set'), scope);
        visit(node.namedChildren[node.namedChildren.length - 1], introduce(introduced(bounds), scope));
        return;
      }
      case 'lambda': {
        const ids = node.namedChildren.filter((c) => c.type === 'identifier');
        visit(node.namedChildren[node.namedChildren.length - 1], introduce(ids, scope));
        return;
      }
      case 'let_in': {
        let inner = scope;
        for (const d of node.childrenForFieldName('definitions')) {
          if (!d) continue;
          const name = d.childForFieldName('name');
          if (d.type === 'recursive_declaration') {
            inner = introduce(d.namedChildren.filter((c) => c.type === 'identifier'), inner);
            continue;
          }
          visit(d, inner);
          if (name && name.type === 'identifier' && !(d.type === 'operator_definition' && inner.has(text(name, src)) && recursiveHere(node, d, src))) {
            inner = introduce([name], inner);
          }
        }
        visit(field('expression'), inner);
        return;
      }
      case 'operator_definition': {
        const params = node.childrenForFieldName('parameter').flatMap((p) => {
          if (p?.type === 'identifier') return [p];
          if (p?.type === 'operator_declaration') return [p.childForFieldName('name')];
          return [];
        });
        visit(field('definition'), introduce(params, scope));
        return;
      }
      case 'function_definition': {
        const bounds = node.namedChildren.filter((c) => c.type === 'quantifier_bound');
        for (const b of bounds) visit(b.childForFieldName('set'), scope);
        visit(field('definition'), introduce(introduced(bounds), scope));
        return;
      }
      default:
        for (const child of node.namedChildren) visit(child, scope);
    }
  };
  visit(unit, globals);
  return found;
}

// multiplyDefined runs redefinitions over every top-level unit of the module,
// with the names visible at that unit: the standard modules' operators, the
// constants and variables declared and the definitions made before it.
function multiplyDefined(root, src) {
  const module = root.namedChildren.find((n) => n.type === 'module');
  if (!module) return [];
  const globals = new Set();
  const recursive = new Set();
  const found = [];
  const declare = (id) => {
    const name = text(id, src);
    if (globals.has(name)) found.push({ node: id, name });
    globals.add(name);
  };
  for (const unit of module.namedChildren) {
    switch (unit.type) {
      case 'extends':
        for (const m of unit.namedChildren) {
          for (const name of standardNames[text(m, src)] ?? []) globals.add(name);
        }
        break;
      case 'constant_declaration':
        for (const c of unit.namedChildren) {
          if (c.type === 'identifier') declare(c);
          if (c.type === 'operator_declaration') declare(c.childForFieldName('name'));
        }
        break;
      case 'variable_declaration':
        for (const v of unit.namedChildren) if (v.type === 'identifier') declare(v);
        break;
      case 'recursive_declaration':
        for (const r of unit.namedChildren) {
          const id = r.type === 'operator_declaration' ? r.childForFieldName('name') : r;
          if (id?.type !== 'identifier') continue;
          declare(id);
          recursive.add(text(id, src));
        }
        break;
      case 'operator_definition':
      case 'function_definition': {
        const name = unit.childForFieldName('name');
        const id = name?.type === 'identifier' ? text(name, src) : null;
        if (id !== null && recursive.has(id)) {
          recursive.delete(id); // the definition of an operator declared RECURSIVE
        } else if (id !== null) {
          declare(name);
        }
        found.push(...redefinitions(unit, globals, src));
        break;
      }
      default:
        if (unit.type !== 'comment' && unit.type !== 'block_comment') {
          found.push(...redefinitions(unit, globals, src));
        }
    }
  }
  return found;
}

// Levels of TLA+ expressions, as SANY computes them: constant, state
// (refers to variables), action (primes, UNCHANGED, or uses an action),
// temporal ([], <>, ~>, WF/SF, [A]_v, temporal quantifiers).
const CONSTANT = 0;
const STATE = 1;
const ACTION = 2;
const TEMPORAL = 3;
const levelNames = ['constant', 'state', 'action', 'temporal'];

// levels computes the level of every top-level definition and reports the
// level errors SANY would: priming or UNCHANGED of an action-level
// expression, [] or <> or ~> of an action, ENABLED of a temporal formula, a
// temporal formula or an action-level subscript inside [A]_v, <<A>>_v or
// WF/SF. A parameterised definition's level is its body's with constant-level
// arguments (an application takes the maximum with its arguments' levels); a
// bound variable has its set's level. Bound names are not scoped: a module
// without multiply-defined symbols never rebinds a visible name, and one name
// bound in sibling scopes gets the higher level (conservative).
function levels(root, src) {
  const module = root.namedChildren.find((n) => n.type === 'module');
  const global = new Map();
  const problems = [];
  if (!module) return { levels: {}, problems };
  const complain = (node, msg) => problems.push({ node, msg });
  const level = (node, local) => {
    if (!node) return CONSTANT;
    const sub = (n) => level(n, local);
    const max = (nodes) => nodes.reduce((l, n) => Math.max(l, sub(n)), CONSTANT);
    const bind = (bounds) => {
      let l = CONSTANT;
      for (const b of bounds) {
        if (b?.type !== 'quantifier_bound') continue;
        const set = sub(b.childForFieldName('set'));
        l = Math.max(l, set);
        for (const id of introduced([b])) {
          const name = text(id, src);
          local.set(name, Math.max(local.get(name) ?? CONSTANT, set));
        }
      }
      return l;
    };
    switch (node.type) {
      case 'identifier_ref': {
        const name = text(node, src);
        return local.get(name) ?? global.get(name) ?? CONSTANT;
      }
      case 'bound_postfix_op': {
        const l = sub(node.childForFieldName('lhs'));
        if (node.childForFieldName('symbol')?.type !== 'prime') return l;
        if (l >= ACTION) complain(node, `priming an expression of ${levelNames[l]} level`);
        return ACTION;
      }
      case 'bound_prefix_op': {
        const l = sub(node.childForFieldName('rhs'));
        switch (node.childForFieldName('symbol')?.type) {
          case 'always':
          case 'eventually':
            if (l === ACTION) complain(node, '[] or <> of an action (write [][A]_v or <><<A>>_v)');
            return TEMPORAL;
          case 'enabled':
            if (l === TEMPORAL) complain(node, 'ENABLED of a temporal formula');
            return STATE;
          case 'unchanged':
            if (l >= ACTION) complain(node, `UNCHANGED of an expression of ${levelNames[l]} level`);
            return ACTION;
          default:
            return l;
        }
      }
      case 'bound_infix_op': {
        const lhs = sub(node.childForFieldName('lhs'));
        const rhs = sub(node.childForFieldName('rhs'));
        if (node.childForFieldName('symbol')?.type === 'leads_to') {
          if (lhs === ACTION || rhs === ACTION) complain(node, '~> between actions');
          return TEMPORAL;
        }
        return Math.max(lhs, rhs);
      }
      case 'step_expr_or_stutter':
      case 'step_expr_no_stutter':
      case 'fairness': {
        const parts = node.namedChildren.filter((c) => !/bracket/.test(c.type));
        const [first, ...rest] = node.type === 'fairness' ? parts.slice(-2) : parts;
        const subscript = node.type === 'fairness' ? first : rest[rest.length - 1];
        const action = node.type === 'fairness' ? rest[0] : first;
        const la = sub(action);
        const lv = sub(subscript);
        if (la === TEMPORAL) complain(node, 'a temporal formula where an action belongs');
        if (lv >= ACTION) complain(node, `a subscript of ${levelNames[lv]} level`);
        return TEMPORAL;
      }
      case 'bounded_quantification':
        return Math.max(bind(node.childrenForFieldName('bound')), sub(node.childForFieldName('expression')));
      case 'set_filter':
      case 'set_map':
        return Math.max(bind(node.childrenForFieldName('generator')), max(node.namedChildren));
      case 'function_literal':
        return Math.max(bind(node.namedChildren), max(node.namedChildren));
      case 'choose': {
        const set = sub(node.childForFieldName('set'));
        for (const id of introduced(node.childrenForFieldName('intro'))) local.set(text(id, src), set);
        return Math.max(set, sub(node.childForFieldName('expression')));
      }
      case 'unbounded_quantification': {
        const q = node.childForFieldName('quantifier')?.type;
        const l = sub(node.childForFieldName('expression'));
        return q === 'temporal_exists' || q === 'temporal_forall' ? TEMPORAL : l;
      }
      case 'let_in':
        for (const d of node.childrenForFieldName('definitions')) {
          if (d?.type === 'operator_definition' || d?.type === 'function_definition') {
            local.set(text(d.childForFieldName('name'), src), definitionLevel(d, local));
          }
        }
        return sub(node.childForFieldName('expression'));
      case 'comment':
      case 'block_comment':
        return CONSTANT;
      default:
        return max(node.namedChildren);
    }
  };
  const definitionLevel = (def, local) => {
    if (def.type === 'function_definition') {
      const bounds = def.namedChildren.filter((c) => c.type === 'quantifier_bound');
      let l = CONSTANT;
      for (const b of bounds) {
        const set = level(b.childForFieldName('set'), local);
        l = Math.max(l, set);
        for (const id of introduced([b])) local.set(text(id, src), set);
      }
      return Math.max(l, level(def.childForFieldName('definition'), local));
    }
    for (const p of def.childrenForFieldName('parameter')) {
      if (p?.type === 'identifier') local.set(text(p, src), CONSTANT);
    }
    return level(def.childForFieldName('definition'), local);
  };
  const out = {};
  for (const unit of module.namedChildren) {
    switch (unit.type) {
      case 'variable_declaration':
        for (const v of unit.namedChildren) if (v.type === 'identifier') global.set(text(v, src), STATE);
        break;
      case 'constant_declaration':
        for (const c of unit.namedChildren) if (c.type === 'identifier') global.set(text(c, src), CONSTANT);
        break;
      case 'operator_definition':
      case 'function_definition': {
        const name = text(unit.childForFieldName('name'), src);
        const l = definitionLevel(unit, new Map());
        global.set(name, l);
        out[name] = l;
        break;
      }
      default:
        break;
    }
  }
  return { levels: out, problems };
}

// recursiveHere says whether a LET definition was declared RECURSIVE earlier
// in the same LET (then its definition does not redefine the name).
function recursiveHere(letIn, def, src) {
  const name = text(def.childForFieldName('name'), src);
  for (const d of letIn.childrenForFieldName('definitions')) {
    if (d === null || d.startIndex >= def.startIndex) break;
    if (d.type === 'recursive_declaration' && d.namedChildren.some((c) => text(c, src) === name)) return true;
  }
  return false;
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
    const report = (row, column, what, kind = 'syntax error') => {
      console.log(`${shown}:${row + 1}:${column + 1}: ${kind}: ${what}`);
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
    let levelled = null;
    if (found.length === 0) {
      for (const { node, name } of multiplyDefined(tree.rootNode, src)) {
        const { row, column } = node.startPosition;
        report(row, column, `multiply-defined symbol ${JSON.stringify(name)}: already defined where it is introduced`, 'error');
        found.push(node);
      }
    }
    if (found.length === 0) {
      levelled = levels(tree.rootNode, src);
      for (const { node, msg } of levelled.problems) {
        const { row, column } = node.startPosition;
        report(row, column, `level: ${msg}`, 'error');
        found.push(node);
      }
    }
    errors += found.length;
    if (names && found.length === 0) {
      console.log(JSON.stringify({ file: shown, ...declarations(tree.rootNode, src), levels: levelled.levels }));
    }
    tree.delete();
  }
  parser.delete();
  if (errors > 0) {
    console.log(`${errors} error(s)`);
    return 1;
  }
  console.log(`${files.length} module(s) parsed with tree-sitter-tlaplus: no syntax errors`);
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
