// assay's Node.js worker for promptfoo checks: javascript assertions and transforms (the config author's code,
// trusted as the config is; the model's output reaches it only as the data value `output`) and is-sql (with the
// npm package node-sql-parser, as promptfoo 0.123.1). One JSON request a line on stdin, one JSON reply a line on
// stdout: {id, op, ...} -> {id, ok, value, undef, type} | {id, ok: false, error}. Requests run concurrently.
'use strict';
const path = require('path');
const { createRequire } = require('module');
const { pathToFileURL } = require('url');
const readline = require('readline');

const baseDir = process.argv[2] || process.cwd();
const baseRequire = createRequire(path.join(path.resolve(baseDir), 'noop.js'));
const out = process.stdout;
// code a check runs must not write into the reply stream: its console output goes to stderr
console.log = console.info = console.debug = (...a) => process.stderr.write(a.map(String).join(' ') + '\n');

// promptfoo src/assertions/javascript.ts: a one-line check gets `return` before its final expression
function isCharEscaped(code, index) {
  let n = 0;
  for (let i = index - 1; i >= 0 && code[i] === '\\'; i--) n++;
  return n % 2 === 1;
}
function findLastStatementSemicolon(code) {
  let sq = false, dq = false, tq = false, last = -1;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (!isCharEscaped(code, i)) {
      if (c === "'" && !dq && !tq) sq = !sq;
      else if (c === '"' && !sq && !tq) dq = !dq;
      else if (c === '`' && !sq && !dq) tq = !tq;
    }
    if (c === ';' && !sq && !dq && !tq) last = i;
  }
  return last;
}
function buildFunctionBody(code) {
  const trimmed = code.trim().replace(/;+\s*$/, '');
  if (/^(const|let|var)\s/.test(trimmed)) {
    const semi = findLastStatementSemicolon(trimmed);
    if (semi !== -1) {
      const statements = trimmed.slice(0, semi + 1);
      const expression = trimmed.slice(semi + 1).trim();
      if (expression) return `${statements} return ${expression}`;
    }
    return trimmed;
  }
  return `return ${trimmed}`;
}

async function importModule(file) {
  const full = path.resolve(baseDir, file);
  if (!full.endsWith('.mjs')) {
    try {
      return require(full);
    } catch (err) {
      if (err.code !== 'ERR_REQUIRE_ESM' && !(err instanceof SyntaxError && /import|export/.test(err.message))) throw err;
    }
  }
  return import(pathToFileURL(full).href);
}

async function pickFunction(spec) {
  const mod = await importModule(spec.file);
  const name = spec.fn;
  if (spec.kind === 'transform') {
    if (name && Object.prototype.hasOwnProperty.call(mod, name) && typeof mod[name] === 'function') return mod[name];
    if (typeof mod === 'function') return mod;
    if (mod.default && typeof mod.default === 'function') return mod.default;
    throw new Error(`Transform ${spec.file} must export a function, have a default export as a function, or export the specified function "${name}"`);
  }
  if (name && typeof mod[name] === 'function') return mod[name];
  if (typeof mod === 'function') return mod;
  if (mod.default && typeof mod.default === 'function') return mod.default;
  throw new Error(`Assertion malformed: ${spec.file} must export a function or have a default export as a function`);
}

async function call(req) {
  const spec = req.spec;
  let fn;
  if (spec.file) fn = await pickFunction(spec);
  else {
    const code = spec.code;
    const body = spec.kind === 'transform'
      ? (code.includes('\n') ? code : `return ${code}`)
      : (code.includes('\n') ? code : buildFunctionBody(code));
    fn = new Function(spec.kind === 'vars' ? 'vars' : 'output', 'context', 'process', body);
  }
  return await fn(...req.args, process);
}

let sqlParser;
function parser() {
  if (!sqlParser) {
    let mod;
    try {
      mod = baseRequire('node-sql-parser');
    } catch {
      try { mod = require('node-sql-parser'); } catch {
        throw new Error('is-sql needs the npm package node-sql-parser (as promptfoo does): npm install node-sql-parser');
      }
    }
    const Parser = mod.Parser || (mod.default && mod.default.Parser);
    sqlParser = new Parser();
  }
  return sqlParser;
}

// promptfoo src/assertions/sql.ts (0.123.1)
const STANDARD_SELECT_MODIFIER = '(?:all|distinct)';
const MYSQL_SELECT_MODIFIER = '(?:all|distinct(?:row)?|high_priority|straight_join|sql_(?:big_result|buffer_result|cache|calc_found_rows|no_cache|small_result))';
const IDENT = '[A-Za-z_][A-Za-z0-9_]*';
const missingComma = (m) => new RegExp(String.raw`\bselect\s+(?:${m}\s+)*(?!${m}\b)${IDENT}\s+${IDENT}\s+from\b`, 'i');
const STANDARD_MISSING_COMMA = missingComma(STANDARD_SELECT_MODIFIER);
const MYSQL_MISSING_COMMA = missingComma(MYSQL_SELECT_MODIFIER);
const MYSQL_FAMILY = new Set(['MySQL', 'MariaDB']);
const BRACKET_IDENTIFIERS = new Set(['TransactSQL', 'Sqlite']);
const PLACEHOLDER = ' ? ';
const DOLLAR_QUOTE = /^\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$/;
function findQuotedTextEnd(sql, start, quote) {
  const closing = quote === '[' ? ']' : quote;
  let cursor = start + 1;
  while (cursor < sql.length) {
    if (closing !== ']' && sql[cursor] === '\\') { cursor += 2; continue; }
    if (sql[cursor] === closing) {
      if (sql[cursor + 1] === closing) { cursor += 2; continue; }
      return cursor + 1;
    }
    cursor++;
  }
  return sql.length;
}
function stripIgnoredSqlText(sql, databaseType) {
  const chunks = [];
  const brackets = BRACKET_IDENTIFIERS.has(databaseType);
  let plainStart = 0, cursor = 0;
  while (cursor < sql.length) {
    const c = sql[cursor];
    let end, replacement = ' ';
    if (c === "'" || c === '"' || c === '`' || (c === '[' && brackets)) {
      end = findQuotedTextEnd(sql, cursor, c);
      replacement = PLACEHOLDER;
    } else if ((c === '-' && sql[cursor + 1] === '-') || c === '#') {
      end = cursor + 1;
      while (end < sql.length && sql[end] !== '\r' && sql[end] !== '\n') end++;
    } else if (c === '/' && sql[cursor + 1] === '*') {
      const e = sql.indexOf('*/', cursor + 2);
      end = e === -1 ? sql.length : e + 2;
    } else if (c === '$') {
      const d = DOLLAR_QUOTE.exec(sql.slice(cursor));
      if (d) {
        const q = sql.indexOf(d[0], cursor + d[0].length);
        end = q === -1 ? sql.length : q + d[0].length;
        replacement = PLACEHOLDER;
      }
    }
    if (end === undefined) { cursor++; continue; }
    chunks.push(sql.slice(plainStart, cursor), replacement);
    cursor = end;
    plainStart = cursor;
  }
  chunks.push(sql.slice(plainStart));
  return chunks.join('');
}
function isSql(outputString, value, inverse) {
  let pass = false;
  let databaseType = 'MySQL';
  let allowedTables, allowedColumns;
  if (value && typeof value === 'object') {
    databaseType = value.databaseType || 'MySQL';
    allowedTables = value.allowedTables;
    allowedColumns = value.allowedColumns;
  }
  if (value && typeof value !== 'object') throw new Error('is-sql assertion must have a object value.');
  const sqlParser = parser();
  const opt = { database: databaseType };
  const reasons = [];
  const syntax = `SQL statement does not conform to the provided ${databaseType} database syntax.`;
  const normalized = outputString.trim();
  if (normalized.length === 0) reasons.push(syntax);
  if (/`/.test(normalized) && (normalized.match(/`/g)?.length ?? 0) % 2 !== 0) reasons.push(syntax);
  const forHeuristics = stripIgnoredSqlText(normalized, databaseType);
  if ((MYSQL_FAMILY.has(databaseType) ? MYSQL_MISSING_COMMA : STANDARD_MISSING_COMMA).test(forHeuristics)) reasons.push(syntax);
  if (databaseType === 'MySQL' && /\bgenerate_series\s*\(/i.test(normalized)) reasons.push(syntax);
  try {
    sqlParser.astify(outputString, opt);
    pass = !inverse;
  } catch {
    pass = inverse;
    reasons.push(syntax);
  }
  if (reasons.length > 0) pass = inverse;
  if (allowedTables) {
    opt.type = 'table';
    try {
      sqlParser.whiteListCheck(outputString, allowedTables, opt);
    } catch (err) {
      pass = inverse;
      let actual = [];
      try { actual = sqlParser.parse(outputString, opt).tableList || []; } catch {}
      if (actual.length > 0) reasons.push(`SQL references unauthorized table(s). Found: [${actual.join(', ')}]. Allowed: [${allowedTables.join(', ')}].`);
      else reasons.push(`SQL validation failed: ${err.message}.`);
    }
  }
  if (allowedColumns) {
    opt.type = 'column';
    const normalizedColumns = [...allowedColumns];
    for (const item of allowedColumns) {
      const parts = item.split('::');
      if (parts.length === 3 && parts[1] !== 'null') {
        const alt = `${parts[0]}::null::${parts[2]}`;
        if (!normalizedColumns.includes(alt)) normalizedColumns.push(alt);
      }
    }
    try {
      sqlParser.whiteListCheck(outputString, normalizedColumns, opt);
    } catch (err) {
      pass = inverse;
      let actual = [];
      try { actual = sqlParser.parse(outputString, opt).columnList || []; } catch {}
      if (actual.length > 0) reasons.push(`SQL references unauthorized column(s). Found: [${actual.join(', ')}]. Allowed: [${allowedColumns.join(', ')}].`);
      else reasons.push(`SQL validation failed: ${err.message}.`);
    }
  }
  if (inverse && pass === false && reasons.length === 0) reasons.push('The output SQL statement is valid');
  return { pass, reason: pass ? 'Assertion passed' : reasons.join(' ') };
}

function reply(message) {
  out.write(JSON.stringify(message) + '\n');
}

async function handle(req) {
  try {
    let value;
    if (req.op === 'call') value = await call(req);
    else if (req.op === 'sql') value = isSql(req.output, req.value, Boolean(req.inverse));
    else throw new Error(`unknown op ${req.op}`);
    const type = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
    if (type === 'function' || type === 'symbol' || type === 'bigint') reply({ id: req.id, ok: true, undef: false, type });
    else reply({ id: req.id, ok: true, undef: value === undefined, type, value: value === undefined ? null : value });
  } catch (err) {
    reply({ id: req.id, ok: false, error: err instanceof Error ? err.message : String(err) });
  }
}

readline.createInterface({ input: process.stdin, crlfDelay: Infinity }).on('line', (line) => {
  if (line.trim()) handle(JSON.parse(line));
});
