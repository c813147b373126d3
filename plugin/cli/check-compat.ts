import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { validateAnnouncement } from '../contracts/announcement-validation';
import type { Contract } from '../contracts/types';
import { breakingOf, classifyContractLists, type ContractChange } from '../compat/classify';
import { EXIT_FAILED, EXIT_INPUT, EXIT_USAGE, InputError, fail, type Command } from './command';

const DISCOVERY_PATH = '/api/discovery/contracts';
/** How long the gateway may take to answer; a CI step must not hang on an unreachable host. */
const FETCH_TIMEOUT_MS = 15_000;
/** The environment variable holding the bearer token for a gateway (kept out of the command line, which `ps` shows). */
const TOKEN_ENV = 'CONTRACTS_GATEWAY_TOKEN';

/**
 * `check-compat <new contracts file> --against <gateway URL | contracts file>`: prints each change between what is
 * served (or an older file) and the new contracts with its class, and exits 1 when one of them breaks clients.
 */
export const checkCompat: Command = {
  usage: 'check-compat <new contracts file> --against <gateway URL | contracts file> [--json]',
  summary: `classify each change (breaking or compatible); exit 1 on a breaking one. A gateway's token: ${TOKEN_ENV}`,
  run: runCheckCompat,
};

async function runCheckCompat(args: readonly string[]): Promise<number> {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(args);
  } catch (err) {
    // parseArgs explains how to pass a file named like an option after its first sentence: the usage says enough.
    const problem = (err instanceof Error ? err.message : String(err)).split('. ')[0];
    return fail(EXIT_USAGE, `${problem}; usage: contracts-gateway ${checkCompat.usage}`);
  }
  const { file, against, json } = parsed;
  let before: Contract[];
  let after: Contract[];
  try {
    after = await contractsFromFile(file);
    before = isUrl(against) ? ofServices(await contractsFromGateway(against), after) : await contractsFromFile(against);
  } catch (err) {
    if (err instanceof InputError) return fail(EXIT_INPUT, err.message);
    throw err;
  }
  const changes = classifyContractLists(before, after);
  process.stdout.write(json ? `${JSON.stringify({ changes }, null, 2)}\n` : report(changes));
  return breakingOf(changes).length > 0 ? EXIT_FAILED : 0;
}

function parseOptions(args: readonly string[]): { file: string; against: string; json: boolean } {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: { against: { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1)
    throw new Error(
      positionals.length === 0
        ? 'the new contracts file is missing'
        : `one contracts file expected, got ${positionals.length}`,
    );
  if (values.against === undefined || values.against === '') throw new Error('--against is missing');
  return { file: positionals[0] as string, against: values.against, json: values.json === true };
}

/** A gateway serves every service's contracts; a service's file holds its own: only those services' are compared. */
function ofServices(served: Contract[], file: readonly Contract[]): Contract[] {
  const services = new Set(file.map((c) => c.targetService));
  return served.filter((c) => services.has(c.targetService));
}

function isUrl(text: string): boolean {
  return /^https?:\/\//i.test(text);
}

function report(changes: readonly ContractChange[]): string {
  const lines = changes.map((c) => `${c.class.padEnd(10)} ${c.messageType}: ${c.message} [${c.rule}]`);
  const breaking = breakingOf(changes).length;
  lines.push(changes.length === 0 ? 'no changes' : `${breaking} breaking, ${changes.length - breaking} compatible`);
  return `${lines.join('\n')}\n`;
}

/** The contracts of a list as an announcement would carry them, checked as the gateway checks one. */
function checkedContracts(list: unknown, source: string): Contract[] {
  if (!Array.isArray(list)) throw new InputError(`${source} is not a JSON array of contracts`);
  const result = validateAnnouncement({
    service: 'check-compat',
    instanceId: 'check-compat',
    ttlMs: 1,
    contracts: list,
  });
  if (!result.ok) throw new InputError(`${source}: ${result.reason}`);
  return result.announcement.contracts;
}

async function contractsFromFile(path: string): Promise<Contract[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InputError(`cannot read ${path}${code ? ` (${code})` : ''}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InputError(`${path} is not JSON`);
  }
  return checkedContracts(parsed, path);
}

/** What a gateway serves now: its discovery answer (authenticated like any /api call). */
async function contractsFromGateway(base: string): Promise<Contract[]> {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new InputError(`${base} is not a URL`);
  }
  if (!url.pathname.endsWith(DISCOVERY_PATH)) url.pathname = `${url.pathname.replace(/\/+$/, '')}${DISCOVERY_PATH}`;
  const shown = `${url.origin}${url.pathname}`;
  const token = process.env[TOKEN_ENV];
  let res: Response;
  try {
    res = await fetch(url, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new InputError(`cannot reach ${shown} (${cause?.code ?? cause?.message ?? (err as Error).name})`);
  }
  if (res.status !== 200) {
    const hint = res.status === 401 || res.status === 403 ? `; set ${TOKEN_ENV} to a token the gateway accepts` : '';
    throw new InputError(`GET ${shown} answered ${res.status}${hint}`);
  }
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    throw new InputError(`GET ${shown} did not answer JSON`);
  }
  const contracts = typeof body === 'object' && body !== null ? (body as { contracts?: unknown }).contracts : undefined;
  return checkedContracts(contracts, `GET ${shown}`);
}
