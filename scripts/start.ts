/**
 * `npm start`: Express Gateway with this plugin and the reference services, on the embedded bus by default
 * or on RabbitMQ when BUS_URL is an amqp:// URL. Configuration lives in EG_CONFIG_DIR (default .gateway/,
 * made from config/ on first start); the reference services' data in DATABASE_URL's PostgreSQL or else in
 * DATA_DIR (default <EG_CONFIG_DIR>/data), with the generated JWT secret when JWT_SECRET is not set.
 */
import { join, resolve } from 'node:path';
import { ensureConfigDir } from './config-dir';
import { INVALID_SETTINGS_EXIT_CODE, startupSettings } from '../plugin/settings/startup';
import { obtainRuntime } from '../plugin/runtime';
import { createTransport } from '../plugin/bus';
import type { Transport } from '../plugin/bus/transport';
import { startWithRetry } from '../plugin/bus/start-with-retry';
import type { Logger } from '../plugin/logger';
import { errorMessage } from '../plugin/errors/describe';
import { storageSettings } from './storage-settings';
import { quickStartSecret } from './quick-start-secret';
import { loadHostConfig } from './config-files';
import { configFileProblem } from '../plugin/host/config-files';
import { checkAdminSettings } from './seed-admin';
import { openReferenceDatabase, startReferenceStack, type ReferenceStack } from './reference-stack';
import { helpIfAsked } from './script-help';

const root = resolve(__dirname, '..', '..');

helpIfAsked(`usage: npm start   (node dist/scripts/start.js)

Express Gateway with this plugin and the reference services: on the embedded bus unless BUS_URL is an amqp://
URL, with the configuration in EG_CONFIG_DIR (default .gateway/, made from config/ on first start) and the
reference services' data in DATABASE_URL's PostgreSQL or else in DATA_DIR (default <EG_CONFIG_DIR>/data).
START_REFERENCE_SERVICES=false runs the gateway alone. Every setting: docs/configuration.md.`);

async function main(): Promise<void> {
  const configDir = resolve(process.env.EG_CONFIG_DIR ?? join(root, '.gateway'));
  ensureConfigDir(configDir, join(root, 'config'));
  process.env.EG_CONFIG_DIR = configDir;
  process.env.CONTRACTS_PLUGIN_PACKAGE ??= root;
  // A file the host cannot parse ends the start with one line naming it, never with the file's text.
  const problem = configFileProblem(configDir);
  if (problem) {
    process.stderr.write(`[contracts] ${problem}. The gateway does not start.\n`);
    process.exit(INVALID_SETTINGS_EXIT_CODE);
  }

  const referenceServices = process.env.START_REFERENCE_SERVICES !== 'false';
  // A misspelt administrator setting stops the start, not just the reference services later on.
  if (referenceServices) checkAdminSettings(process.env);
  const storage = storageSettings(process.env, join(configDir, 'data'));
  // The gateway verifies what the auth service signs: both read this one secret, kept across restarts.
  const kept = referenceServices && !process.env.JWT_SECRET ? quickStartSecret(storage.dataDir) : undefined;
  if (kept) process.env.JWT_SECRET = kept.secret;

  // A bad setting ends the process here with one line naming it. The plugins.contracts block of
  // system.config.yml counts here as in an installed gateway (pins and limits live there), read by the host's
  // own loader so that its ${VAR} substitution applies; the environment fills in what the block leaves out.
  const settings = startupSettings(contractsBlock());
  const runtime = obtainRuntime(settings);
  // An unreachable database or a schema newer than the code stops the start here, with one line.
  if (kept)
    runtime.log.info(
      `JWT_SECRET was not set; ${kept.created ? 'generated one into' : 'using the one generated earlier in'} ${kept.file} (set JWT_SECRET to use your own)`,
    );
  const database = referenceServices
    ? await openReferenceDatabase(storage, (line) => runtime.log.info(line))
    : undefined;
  // Not awaited: a bus that is not reachable yet (broker down, wrong credentials) is retried while the gateway
  // listens and answers 503, as the installed gateway does; a supervisor never sees a clean exit for it.
  void runtime.start();

  let stack: ReferenceStack | undefined;
  let referenceTransport: Transport | undefined;
  let stopping = false;
  const startReferenceServices = async (db: NonNullable<typeof database>): Promise<void> => {
    // The gateway's own connection reports the bus; this second one stays quiet about the same broker.
    const transport = createTransport({
      url: settings.busUrl,
      prefix: settings.busPrefix,
      logger: quietLogger(runtime.log),
    });
    referenceTransport = transport;
    if (!(await startWithRetry(transport, quietLogger(runtime.log), () => stopping))) return db.close();
    stack = await startReferenceStack(transport, db, {
      dataDir: storage.dataDir,
      log: (line) => runtime.log.info(line),
      warn: (line) => runtime.log.warn(line),
    });
    // Every reference contract known before the host starts: the first config the host reads has all routes.
    const expected = stack.services.flatMap((s) => s.messageTypes);
    await waitFor(() => expected.every((t) => runtime.discovery.contract(t) !== undefined), 5000);
  };
  const reference = database ? startReferenceServices(database) : Promise.resolve();
  // A reachable bus has the reference routes in place before the first request; an unreachable one holds nothing up.
  await firstOf(reference, REFERENCE_WAIT_MS);
  reference.catch((err) => runtime.log.error(`reference services failed to start: ${errorMessage(err)}`));

  const gateway = require('express-gateway') as () => { load(dir: string): { run(): Promise<unknown> } };
  await gateway().load(configDir).run();
  if (!runtime.session.hostAttached) {
    throw new Error('the contracts plugin did not load; see the log above');
  }
  const port = process.env.PORT ?? '8080';
  const bus = settings.busUrl.startsWith('amqp') ? 'RabbitMQ' : 'embedded';
  const waiting =
    runtime.services.transport.state() === 'up'
      ? ''
      : ', not reachable yet: retrying, /health answers 503 until it is up';
  runtime.log.info(`gateway ready on http://127.0.0.1:${port} (bus: ${bus}${waiting})`);

  // SIGTERM/SIGINT run the plugin's graceful stop (plugin/shutdown); the in-process services stop after the
  // requests in flight, before the bus closes; their database closes after them.
  runtime.gracefulStop.onStop(async () => {
    stopping = true;
    if (stack) await stack.stop();
    else await database?.close().catch(() => undefined);
    await referenceTransport?.close().catch(() => undefined);
  });
}

/** The host's parsed plugins.contracts block of EG_CONFIG_DIR/system.config.yml (empty when there is none). */
function contractsBlock(): Record<string, unknown> {
  const config = loadHostConfig<{ systemConfig?: { plugins?: Record<string, unknown> } }>();
  const block = config.systemConfig?.plugins?.contracts;
  return block && typeof block === 'object' ? (block as Record<string, unknown>) : {};
}

/** How long the start waits for the reference services' contracts before the host listens anyway. */
const REFERENCE_WAIT_MS = 3000;

/** Resolves when `work` does or after `ms`, whichever is first; rejects if `work` fails first. */
async function firstOf(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((r) => (timer = setTimeout(r, ms)))]).finally(() => clearTimeout(timer));
}

/** The runtime's logger with its routine lines (connection attempts) turned into debug lines. */
function quietLogger(log: Logger): Logger {
  const debug = (m: string): void => log.debug(m);
  return { debug, info: debug, warn: debug, error: (m) => log.error(m) };
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
}

main().catch((err) => {
  console.error(`[contracts] start failed: ${errorMessage(err)}`);
  process.exit(1);
});
