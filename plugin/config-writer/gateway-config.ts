import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { Document, isMap, isScalar, isSeq, parseDocument, visit, YAMLMap, YAMLSeq } from 'yaml';
import type { ToStringOptions } from 'yaml';
import { describeYamlError } from './yaml-problem';

/** What the writer needs from an endpoint; route-table's EndpointSpec fits. */
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
export const GENERATED_COMMENT = ' Generated from announced contracts by express-gateway-plugin-contracts; edits here are overwritten.';

/**
 * Replaces the plugin's apiEndpoints and pipelines in a gateway.config.yml text, keeping everything
 * hand-written (entries, comments, blank lines, `${ENV:-default}` strings). Rendering its own output
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
  const style = detectStyle(currentText);
  // The yaml printer can move a comment on its first pass over hand-written text (e.g. under an empty
  // `key:`); re-rendering until the text is a fixed point makes the result idempotent by construction.
  let text = renderOnce(currentText, endpoints, opts, style);
  for (let pass = 0; pass < MAX_STABILISING_PASSES; pass += 1) {
    const again = renderOnce(text, endpoints, opts, style);
    if (again === text) break;
    text = again;
  }
  return text;
}

const MAX_STABILISING_PASSES = 3;

function renderOnce<E extends WritableEndpoint>(
  currentText: string,
  endpoints: readonly E[],
  opts: RenderOptions<E>,
  style: ToStringOptions,
): string {
  const doc = parseConfig(currentText);
  const apiEndpoints = ensureMap(doc, 'apiEndpoints');
  const pipelines = ensureMap(doc, 'pipelines');
  removePrefixed(apiEndpoints, opts.prefix);
  removePrefixed(pipelines, opts.prefix);
  removeMarker(doc);
  const groups = pipelineGroups(endpoints, opts);
  // One createNode call for all entries, not one per entry: each call that makes an anchor (a pipeline's shared
  // action) scans the whole document for the names in use, which made 1,000 routes take a minute to render.
  const endpointNodes = doc.createNode(endpoints.map((endpoint) => apiEndpointEntry(endpoint, opts.endpointExtra?.(endpoint)))) as YAMLSeq;
  quotePatterns(endpointNodes);
  const pipelineNodes = doc.createNode(groups.map((g) => ({ apiEndpoints: g.endpointNames, policies: opts.pipelinePolicies(g.first) }))) as YAMLSeq;
  endpoints.forEach((endpoint, index) => addEntry(doc, apiEndpoints, endpoint.name, endpointNodes.items[index], index === 0));
  groups.forEach((g, index) => addEntry(doc, pipelines, g.name, pipelineNodes.items[index], index === 0));
  ensurePolicies(doc, opts.requiredPolicyNames);
  return doc.toString(style);
}

/** A pathRegex single-quoted: its brackets then never read as a flow sequence, by YAML or by detectStyle. */
function quotePatterns(node: YAMLSeq): void {
  visit(node, {
    Pair(_, pair) {
      if (isScalar(pair.key) && pair.key.value === 'pathRegex' && isScalar(pair.value)) pair.value.type = 'QUOTE_SINGLE';
    },
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
function pipelineGroups<E extends WritableEndpoint>(endpoints: readonly E[], opts: RenderOptions<E>): PipelineGroup<E>[] {
  const byName = new Map<string, PipelineGroup<E>>();
  for (const endpoint of endpoints) {
    const name = opts.pipelineOf?.(endpoint) ?? endpoint.name;
    if (!name.startsWith(opts.prefix)) throw new Error(`gateway config: pipeline name ${name} lacks prefix ${opts.prefix}`);
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
  return doc;
}

/** The top-level map under `key`, created (or made from an empty `key:`) when missing. */
function ensureMap(doc: Document, key: string): YAMLMap {
  const current = doc.get(key, true);
  if (isMap(current)) return current;
  if (current === undefined || (isScalar(current) && current.value === null)) {
    const map = new YAMLMap();
    keepComments(current, map);
    doc.set(key, map);
    return map;
  }
  throw new Error(`gateway config: ${key} must be a mapping`);
}

/** A hand-written comment under an empty `key:` stays when the empty value becomes a collection. */
function keepComments(from: unknown, to: YAMLMap | YAMLSeq): void {
  if (!isScalar(from)) return;
  if (from.commentBefore) to.commentBefore = from.commentBefore;
  if (from.comment) to.comment = from.comment;
}

function keyText(key: unknown): string | undefined {
  if (isScalar(key)) return typeof key.value === 'string' ? key.value : undefined;
  return typeof key === 'string' ? key : undefined;
}

function removePrefixed(map: YAMLMap, prefix: string): void {
  map.items = map.items.filter((pair) => !(keyText(pair.key)?.startsWith(prefix) ?? false));
}

interface Commented {
  comment?: string | null;
  commentBefore?: string | null;
}

function withoutMarker(comment: string | null | undefined): string | undefined {
  if (comment == null) return undefined;
  const kept = comment.split('\n').filter((line) => line !== GENERATED_COMMENT);
  return kept.length > 0 ? kept.join('\n') : undefined;
}

/**
 * On re-parse the parser may hang the marker on the map or a neighbour instead of the first generated
 * key, so it would survive the removal and pile up; strip it wherever it landed.
 */
function removeMarker(doc: Document): void {
  const strip = (node: Commented): void => {
    if (node.comment?.includes(GENERATED_COMMENT)) node.comment = withoutMarker(node.comment);
    if (node.commentBefore?.includes(GENERATED_COMMENT)) node.commentBefore = withoutMarker(node.commentBefore);
  };
  strip(doc as Commented);
  visit(doc, {
    Node: (_key, node) => strip(node as Commented),
  });
}

function addEntry(doc: Document, map: YAMLMap, name: string, value: unknown, first: boolean): void {
  // An empty `{}` written earlier would otherwise turn the whole map into one flow line.
  if (map.flow && map.items.length === 0) map.flow = false;
  const pair = doc.createPair(name, value);
  if (first && !map.flow && isScalar(pair.key)) pair.key.commentBefore = GENERATED_COMMENT;
  map.items.push(pair);
}

/** Appends every missing required name to the top-level `policies:` list, keeping the existing order. */
function ensurePolicies(doc: Document, required: readonly string[]): void {
  let list = doc.get('policies', true);
  if (list === undefined || (isScalar(list) && list.value === null)) {
    const seq = new YAMLSeq();
    keepComments(list, seq);
    doc.set('policies', seq);
    list = seq;
  }
  if (!isSeq(list)) throw new Error('gateway config: policies must be a list');
  const seq = list;
  const present = new Set(seq.items.map((item) => (isScalar(item) ? String(item.value) : String(item))));
  for (const name of required) {
    if (present.has(name)) continue;
    seq.items.push(doc.createNode(name));
    present.add(name);
  }
}

/**
 * The yaml library re-prints the whole document; these options make it print the way the file was
 * written (indent width, indented or flush block sequences, padded flow collections) and never fold
 * long strings, so hand-written text keeps its bytes.
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

function tempPathFor(target: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException)?.code === 'ENOENT';
}

/**
 * Writes `text` to `file` unless it already holds exactly that (returns false, file untouched).
 * The write is atomic: a temp file in the same directory, fsync, rename — the host's file watcher never
 * sees a half-written config. A symlinked config is written through to its target.
 */
export async function writeIfChanged(file: string, text: string): Promise<boolean> {
  let target = file;
  let mode: number | undefined;
  try {
    if ((await fsp.readFile(file, 'utf8')) === text) return false;
    target = await fsp.realpath(file);
    mode = (await fsp.stat(target)).mode & 0o777;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  const temp = tempPathFor(target);
  try {
    const handle = await fsp.open(temp, 'wx', mode ?? 0o644);
    try {
      if (mode !== undefined) await handle.chmod(mode); // open's mode is filtered by the umask
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsp.rename(temp, target);
  } catch (error) {
    await fsp.rm(temp, { force: true });
    throw error;
  }
  await syncDirectory(path.dirname(target));
  return true;
}

/** Synchronous twin of writeIfChanged, for the plugin's synchronous init(). */
export function writeIfChangedSync(file: string, text: string): boolean {
  let target = file;
  let mode: number | undefined;
  try {
    if (fs.readFileSync(file, 'utf8') === text) return false;
    target = fs.realpathSync(file);
    mode = fs.statSync(target).mode & 0o777;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  const temp = tempPathFor(target);
  try {
    const fd = fs.openSync(temp, 'wx', mode ?? 0o644);
    try {
      if (mode !== undefined) fs.fchmodSync(fd, mode);
      fs.writeFileSync(fd, text, 'utf8');
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temp, target);
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw error;
  }
  syncDirectorySync(path.dirname(target));
  return true;
}

/** Makes the rename itself durable. Best effort: some platforms cannot open a directory. */
async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await fsp.open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Durability of the directory entry is a bonus; the content is already synced.
  }
}

function syncDirectorySync(dir: string): void {
  try {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // As above.
  }
}
