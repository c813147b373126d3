import { Document, isMap, isScalar, isSeq, parseDocument, visit, YAMLMap } from 'yaml';
import type { Node, Pair, ToStringOptions } from 'yaml';
import { describeYamlError } from './yaml-problem';

/** What the writer needs from an endpoint; endpoint-specs.ts's EndpointSpec fits. */
export interface WritableEndpoint {
  name: string;
  /** `*`: every method (the entry gets no `methods:`). */
  method: string;
  path: string;
  /** Several paths for one entry (the not-found catch-all); `[path]` when absent. */
  paths?: string[];
  /** Mounted on this pattern instead of paths (the host's `pathRegex`). */
  pathRegex?: string;
}

export interface RenderOptions<E extends WritableEndpoint> {
  /** Every apiEndpoints/pipelines key starting with this belongs to the plugin and is regenerated. */
  prefix: string;
  /** The policies of an endpoint's pipeline; for a shared pipeline, asked of the first endpoint in it. */
  pipelinePolicies: (endpoint: E) => Array<Record<string, unknown>>;
  /** Policy names the generated pipelines use; the host refuses pipelines naming an unlisted policy. */
  requiredPolicyNames: string[];
  /**
   * The pipeline an endpoint runs; endpoints naming the same one share it (one pipeline for all contract routes
   * keeps the host's memory and reload time flat as contracts grow). Default: a pipeline of its own, same name.
   */
  pipelineOf?: (endpoint: E) => string;
  /** More properties for an endpoint's apiEndpoints entry (e.g. the route's `contract:` for a shared pipeline). */
  endpointExtra?: (endpoint: E) => Record<string, unknown> | undefined;
}

/** Marks the generated block for people reading the file; it goes away with the entries it precedes. */
export const GENERATED_COMMENT =
  ' Generated from announced contracts by express-gateway-plugin-contracts; edits here are overwritten.';

/**
 * Replaces the plugin's apiEndpoints and pipelines in a gateway.config.yml text and leaves every other byte as it
 * was: the text is spliced at the source ranges of the generated entries, never re-printed, so hand-written entries,
 * comments, blank lines, quoting, flow collections, anchors and line endings stay exactly as written. The new
 * entries take the place of the old ones (after the section's last entry the first time). Rendering its own output
 * again with the same endpoints gives the same text, so the host's reload-on-change cannot loop.
 * Throws on a config text that is not one YAML mapping (never overwrite what we cannot read).
 */
export function renderGatewayConfig<E extends WritableEndpoint>(
  currentText: string,
  table: readonly E[] | { endpoints: readonly E[] },
  opts: RenderOptions<E>,
): string {
  const endpoints = Array.isArray(table) ? (table as readonly E[]) : (table as { endpoints: readonly E[] }).endpoints;
  checkNames(endpoints, opts.prefix);
  const text = currentText;
  const doc = parseConfig(text);
  const top = doc.contents as YAMLMap;
  const apiEndpoints = section(top, 'apiEndpoints');
  const pipelines = section(top, 'pipelines');
  const removals = [
    ...generatedRanges(text, apiEndpoints, opts.prefix),
    ...generatedRanges(text, pipelines, opts.prefix),
  ];
  // The style of the hand-written text alone: the generated block follows it and never votes on it.
  const style = detectStyle(
    applyEdits(
      text,
      removals.map((r) => ({ ...r, text: '' })),
    ),
  );
  const writer: Writer = {
    text,
    eol: /\r\n/.test(text) ? '\r\n' : '\n',
    style,
    column: columnOf(text, top.range?.[0] ?? 0),
  };
  const groups = pipelineGroups(endpoints, opts);
  const endpointPairs = endpoints.map(
    (endpoint) => [endpoint.name, apiEndpointEntry(endpoint, opts.endpointExtra?.(endpoint))] as const,
  );
  const pipelinePairs = groups.map(
    (g) => [g.name, { apiEndpoints: g.endpointNames, policies: opts.pipelinePolicies(g.first) }] as const,
  );
  const edits: Edit[] = [];
  const appended: string[] = [];
  sectionEdits(writer, 'apiEndpoints', apiEndpoints, opts.prefix, endpointPairs, edits, appended);
  sectionEdits(writer, 'pipelines', pipelines, opts.prefix, pipelinePairs, edits, appended);
  policiesEdits(writer, section(top, 'policies'), opts.requiredPolicyNames, edits, appended);
  if (appended.length > 0) {
    const gap = text === '' || text.endsWith('\n') ? '' : writer.eol;
    edits.push({ start: text.length, end: text.length, text: gap + appended.join('') });
  }
  return applyEdits(text, edits);
}

/** Replace text[start, end) with `text`; ranges never overlap, and edits at one offset keep their order. */
interface Edit {
  start: number;
  end: number;
  text: string;
}

interface Writer {
  text: string;
  eol: string;
  style: ToStringOptions;
  /** Column of the top-level keys. */
  column: number;
}

function applyEdits(text: string, edits: readonly Edit[]): string {
  const sorted = edits
    .map((edit, index) => ({ edit, index }))
    .sort((a, b) => a.edit.start - b.edit.start || a.index - b.index);
  let out = '';
  let at = 0;
  for (const { edit } of sorted) {
    out += text.slice(at, edit.start) + edit.text;
    at = Math.max(at, edit.end);
  }
  return out + text.slice(at);
}

/** A top-level section: its pair (undefined when the file has none). */
function section(top: YAMLMap, key: string): Pair | undefined {
  return top.items.find((pair) => keyText(pair.key) === key) as Pair | undefined;
}

function lineStart(text: string, pos: number): number {
  return text.lastIndexOf('\n', pos - 1) + 1;
}

/** `pos` when it starts a line, else the start of the next line (the text's end on the last line). */
function lineEndAfter(text: string, pos: number): number {
  if (pos === 0 || text[pos - 1] === '\n') return pos;
  const newline = text.indexOf('\n', pos);
  return newline === -1 ? text.length : newline + 1;
}

function columnOf(text: string, pos: number): number {
  return pos - lineStart(text, pos);
}

/** The line starting at `pos` without its line break. */
function lineAt(text: string, pos: number): string {
  const newline = text.indexOf('\n', pos);
  return text.slice(pos, newline === -1 ? text.length : newline).replace(/\r$/, '');
}

const MARKER_LINE = `#${GENERATED_COMMENT}`;

/** Where a pair's content ends: the end of its value's last line (a comment on that line included). */
function pairEnd(text: string, pair: Pair): number {
  const value = pair.value as Node | null;
  const key = pair.key as Node;
  const end = value?.range ? value.range[1] : (key.range?.[1] ?? 0);
  return lineEndAfter(text, end);
}

/**
 * The byte ranges of a section's generated entries, each from the start of its key's line (the marker comment
 * right above it included) to the end of its value's last line; adjacent ones merged.
 */
function generatedRanges(
  text: string,
  sectionPair: Pair | undefined,
  prefix: string,
): Array<{ start: number; end: number }> {
  const map = sectionPair?.value;
  if (!isMap(map) || map.flow) return [];
  const ranges: Array<{ start: number; end: number }> = [];
  for (const pair of map.items) {
    if (!(keyText(pair.key)?.startsWith(prefix) ?? false)) continue;
    let start = lineStart(text, (pair.key as Node).range?.[0] ?? 0);
    while (start > 0) {
      const previous = lineStart(text, start - 1);
      if (lineAt(text, previous).trim() !== MARKER_LINE) break;
      start = previous;
    }
    const end = pairEnd(text, pair);
    const last = ranges[ranges.length - 1];
    if (last && last.end === start) last.end = end;
    else ranges.push({ start, end });
  }
  return ranges;
}

/**
 * The edits for one section: its generated entries replaced by the new block where the first of them stood (after
 * the section's last hand-written entry when there were none), the others removed; a missing section appended.
 */
function sectionEdits(
  w: Writer,
  key: string,
  sectionPair: Pair | undefined,
  prefix: string,
  entries: ReadonlyArray<readonly [string, unknown]>,
  edits: Edit[],
  appended: string[],
): void {
  const value = sectionPair?.value as Node | null | undefined;
  if (sectionPair && value != null && !isMap(value) && !isEmptyScalar(value))
    throw new Error(`gateway config: ${key} must be a mapping`);
  if (isMap(value) && value.flow && value.items.length > 0) {
    throw new Error(
      `gateway config: ${key} is written as a flow mapping ({ ... }); write it as a block mapping so the generated entries can be added`,
    );
  }
  if (!sectionPair) {
    if (entries.length > 0)
      appended.push(`${' '.repeat(w.column)}${key}:${w.eol}${block(w, entries, w.column + indentWidth(w))}`);
    return;
  }
  const ranges = generatedRanges(w.text, sectionPair, prefix);
  const map = isMap(value) && !value.flow ? value : undefined;
  if (map && ranges.length > 0) {
    const column = columnOf(w.text, (map.items[0]?.key as Node | undefined)?.range?.[0] ?? 0);
    ranges.forEach((range, index) => {
      edits.push({ ...range, text: index === 0 && entries.length > 0 ? block(w, entries, column) : '' });
    });
    // A section left with no entry at all reads `{}`, as the host expects a mapping there.
    if (entries.length === 0 && map.items.every((pair) => keyText(pair.key)?.startsWith(prefix))) {
      const colon = w.text.indexOf(':', (sectionPair.key as Node).range?.[1] ?? 0) + 1;
      edits.push({ start: colon, end: colon, text: ' {}' });
    }
    return;
  }
  if (entries.length === 0) return;
  if (map) {
    const column = columnOf(w.text, (map.items[0]?.key as Node | undefined)?.range?.[0] ?? 0);
    const at = afterTrailingComments(w.text, pairEnd(w.text, map.items[map.items.length - 1] as Pair), column);
    edits.push({ start: at, end: at, text: block(w, entries, column) });
    return;
  }
  // `key:`, `key: ~` or `key: {}`: the empty value gives way to the block on the following lines.
  const at = emptyValueEdits(w, sectionPair, edits);
  edits.push({
    start: at,
    end: at,
    text: block(w, entries, columnOf(w.text, (sectionPair.key as Node).range?.[0] ?? 0) + indentWidth(w)),
  });
}

function indentWidth(w: Writer): number {
  return w.style.indent ?? 2;
}

function isEmptyScalar(node: unknown): boolean {
  return isScalar(node) && node.value === null;
}

/**
 * An empty value written out (`~`, `null`, `{}`, `[]`) is removed with the spaces before it; returns where the
 * lines of the new collection go (the start of the line after the key's).
 */
function emptyValueEdits(w: Writer, pair: Pair, edits: Edit[]): number {
  const value = pair.value as Node | null;
  const keyEnd = (pair.key as Node).range?.[1] ?? 0;
  const range = value?.range;
  if (range && range[1] > range[0]) {
    let start = range[0];
    while (start > keyEnd && /[ \t]/.test(w.text[start - 1] as string)) start -= 1;
    edits.push({ start, end: range[1], text: '' });
    return lineEndAfter(w.text, range[1]);
  }
  return lineEndAfter(w.text, range ? range[1] : keyEnd);
}

/** Past the comment lines indented deeper than `column` that follow a last entry: they read as part of it. */
function afterTrailingComments(text: string, pos: number, column: number): number {
  let at = pos;
  while (at < text.length) {
    const line = lineAt(text, at);
    const trimmed = line.trimStart();
    if (!trimmed.startsWith('#') || line.length - trimmed.length <= column) break;
    at = lineEndAfter(text, at + 1);
  }
  return at;
}

/** The marker and the entries, as lines indented to `column`, each ending with the file's line break. */
function block(w: Writer, entries: ReadonlyArray<readonly [string, unknown]>, column: number): string {
  const doc = new Document(new YAMLMap());
  const map = doc.contents as YAMLMap;
  // No anchors: the generated block must never shadow or clash with an anchor written by hand.
  for (const [name, value] of entries) map.items.push(doc.createPair(name, value, { aliasDuplicateObjects: false }));
  quotePatterns(map);
  const pad = ' '.repeat(column);
  const lines = [MARKER_LINE, ...doc.toString(w.style).replace(/\n$/, '').split('\n')];
  return lines.map((line) => (line === '' ? '' : pad + line) + w.eol).join('');
}

/** A pathRegex single-quoted: its brackets then never read as a flow sequence, by YAML or by detectStyle. */
function quotePatterns(node: YAMLMap): void {
  visit(node, {
    Pair(_, pair) {
      if (isScalar(pair.key) && pair.key.value === 'pathRegex' && isScalar(pair.value))
        pair.value.type = 'QUOTE_SINGLE';
    },
  });
}

/** Adds every missing required name to the top-level `policies:` list, after the names already there. */
function policiesEdits(
  w: Writer,
  pair: Pair | undefined,
  required: readonly string[],
  edits: Edit[],
  appended: string[],
): void {
  const value = pair?.value as Node | null | undefined;
  if (pair && value != null && !isSeq(value) && !isEmptyScalar(value))
    throw new Error('gateway config: policies must be a list');
  const present = new Set(
    isSeq(value) ? value.items.map((item) => (isScalar(item) ? String(item.value) : String(item))) : [],
  );
  const missing = [...new Set(required)]
    .filter((name) => !present.has(name))
    .map((name) => new Document(name).toString(w.style).trimEnd());
  if (missing.length === 0) return;
  const dash = w.style.indentSeq === false ? 0 : indentWidth(w);
  const items = (column: number) => missing.map((name) => `${' '.repeat(column)}- ${name}${w.eol}`).join('');
  if (!pair) {
    appended.push(`${' '.repeat(w.column)}policies:${w.eol}${items(w.column + dash)}`);
    return;
  }
  if (isSeq(value) && value.flow) {
    const last = value.items[value.items.length - 1] as Node | undefined;
    if (last?.range) {
      edits.push({ start: last.range[1], end: last.range[1], text: missing.map((name) => `, ${name}`).join('') });
    } else {
      const pad = w.style.flowCollectionPadding ? ' ' : '';
      const open = (value.range?.[0] ?? 0) + 1;
      const close = w.text.lastIndexOf(']', value.range?.[1] ?? open);
      edits.push({ start: open, end: Math.max(open, close), text: `${pad}${missing.join(', ')}${pad}` });
    }
    return;
  }
  if (isSeq(value) && value.items.length > 0) {
    const column = columnOf(w.text, value.range?.[0] ?? 0);
    const lastItem = value.items[value.items.length - 1] as Node;
    const at = afterTrailingComments(w.text, lineEndAfter(w.text, lastItem.range?.[1] ?? 0), column);
    edits.push({ start: at, end: at, text: items(column) });
    return;
  }
  const at = emptyValueEdits(w, pair as Pair, edits);
  edits.push({
    start: at,
    end: at,
    text: items(columnOf(w.text, (pair?.key as Node | undefined)?.range?.[0] ?? 0) + dash),
  });
}

function apiEndpointEntry(endpoint: WritableEndpoint, extra?: Record<string, unknown>): Record<string, unknown> {
  const entry: Record<string, unknown> = endpoint.pathRegex
    ? { host: '*', pathRegex: endpoint.pathRegex }
    : { host: '*', paths: endpoint.paths ?? [endpoint.path] };
  if (endpoint.method !== '*') entry.methods = [endpoint.method.toUpperCase()];
  return extra ? { ...entry, ...extra } : entry;
}

interface PipelineGroup<E> {
  name: string;
  first: E;
  endpointNames: string[];
}

/** Pipelines in the order their first endpoint comes, each with every endpoint that runs it. */
function pipelineGroups<E extends WritableEndpoint>(
  endpoints: readonly E[],
  opts: RenderOptions<E>,
): PipelineGroup<E>[] {
  const byName = new Map<string, PipelineGroup<E>>();
  for (const endpoint of endpoints) {
    const name = opts.pipelineOf?.(endpoint) ?? endpoint.name;
    if (!name.startsWith(opts.prefix))
      throw new Error(`gateway config: pipeline name ${name} lacks prefix ${opts.prefix}`);
    const group = byName.get(name);
    if (group) group.endpointNames.push(endpoint.name);
    else byName.set(name, { name, first: endpoint, endpointNames: [endpoint.name] });
  }
  return [...byName.values()];
}

function checkNames(endpoints: readonly WritableEndpoint[], prefix: string): void {
  if (!prefix) throw new Error('gateway config: an empty prefix would claim every hand-written entry');
  const seen = new Set<string>();
  for (const { name } of endpoints) {
    // An unprefixed name would never be removed again: the next render would duplicate it.
    if (!name.startsWith(prefix)) throw new Error(`gateway config: endpoint name ${name} lacks prefix ${prefix}`);
    if (seen.has(name)) throw new Error(`gateway config: endpoint name ${name} appears twice`);
    seen.add(name);
  }
}

function parseConfig(text: string): Document {
  const doc: Document = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(describeYamlError(doc.errors[0]!, 'gateway config'));
  if (doc.contents === null) doc.contents = new YAMLMap();
  if (!isMap(doc.contents)) throw new Error('gateway config: the top level must be a mapping');
  if (doc.contents.flow) throw new Error('gateway config: the top level must be a block mapping, not { ... }');
  return doc;
}

function keyText(key: unknown): string | undefined {
  if (isScalar(key)) return typeof key.value === 'string' ? key.value : undefined;
  return typeof key === 'string' ? key : undefined;
}

/**
 * How the hand-written text is written (indent width, indented or flush block sequences, padded flow
 * collections), so the generated block reads like the rest of the file; long strings are never folded.
 */
export function detectStyle(text: string): ToStringOptions {
  const lines = text.split(/\r?\n/);
  let indent = 0;
  let indentedSeq = 0;
  let flushSeq = 0;
  let padded = 0;
  let tight = 0;
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] as string;
    if (/^\s*(#|$)/.test(line)) continue;
    const lead = (/^ */.exec(line) as RegExpExecArray)[0].length;
    if (lead > 0 && (indent === 0 || lead < indent) && !line.trimStart().startsWith('- ')) indent = lead;
    // `key:` then `- item`: flush when the dash sits at the key's column.
    if (/^\s*[^\s#-][^#]*:\s*(#.*)?$/.test(line)) {
      // The next line with content; found by walking on, not by slicing the rest (quadratic on 1,000 routes).
      let j = i + 1;
      while (j < lines.length && /^\s*(#|$)/.test(lines[j] as string)) j += 1;
      const next = lines[j];
      if (next !== undefined && /^\s*- /.test(next)) {
        const dash = (/^ */.exec(next) as RegExpExecArray)[0].length;
        if (dash === lead) flushSeq += 1;
        else if (dash > lead) indentedSeq += 1;
      }
    }
    // Flow collections only: `${ENV:-default}` is a plain string, not a flow map, and a quoted string holds none.
    // A quote opens a string only where a value can start (an apostrophe inside a plain word does not).
    const bare = line.replace(/(^|[\s[{,:])(?:'(?:[^']|'')*'|"(?:[^"\\]|\\.)*")/g, "$1''");
    padded += (bare.match(/(?<![$\w])[[{] [^\s\]}]/g) ?? []).length;
    tight += (bare.match(/(?<![$\w])[[{][^\s\]}]/g) ?? []).length;
  }
  return {
    indent: indent > 0 && indent <= 8 ? indent : 2,
    indentSeq: flushSeq <= indentedSeq,
    flowCollectionPadding: padded >= tight,
    lineWidth: 0,
  };
}
