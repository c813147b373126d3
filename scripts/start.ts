/**
 * `npm start`: Express Gateway with this plugin and the reference services, on the embedded bus by default
 * or on RabbitMQ when BUS_URL is an amqp:// URL. Configuration lives in EG_CONFIG_DIR (default .gateway/,
 * made from config/ on first start); the reference services' data in DATABASE_URL's PostgreSQL or else in
 * DATA_DIR (default <EG_CONFIG_DIR>/data), with the generated JWT secret when JWT_SECRET is not set.
 */
import { join, resolve } from 'node:path';
import { ensureConfigDir } from './config-dir';
import { startupSettings } from '../plugin/startup-settings';
import { gracefulStop } from '../plugin/shutdown';
import { obtainRuntime } from '../plugin/runtime';
import { createTransport } from '../plugin/bus';
import { errorMessage } from '../plugin/errors';
import { storageSettings } from './storage-settings';
import { quickStartSecret } from './quick-start-secret';
import { startReferenceStack, type ReferenceStack } from './reference-stack';

const root = resolve(__dirname, '..', '..');

async function main(): Promise<void> {
  const configDir = resolve(process.env.EG_CONFIG_DIR ?? join(root, '.gateway'));
  ensureConfigDir(configDir, join(root, 'config'));
  process.env.EG_CONFIG_DIR = configDir;
  process.env.CONTRACTS_PLUGIN_PACKAGE ??= root;

  const referenceServices = process.env.START_REFERENCE_SERVICES !== 'false';
  const storage = storageSettings(process.env, join(configDir, 'data'));
  if (referenceServices && !process.env.JWT_SECRET) {
    // The gateway verifies what the auth service signs: both read this one secret, kept across restarts.
    const kept = quickStartSecret(storage.dataDir);
    process.env.JWT_SECRET = kept.secret;
    console.log(`[contracts] JWT_SECRET was not set; ${kept.created ? 'generated one into' : 'using the one generated earlier in'} ${kept.file} (set JWT_SECRET to use your own)`);
  }

  // A bad setting ends the process here with one line naming it.
  const settings = startupSettings({});
  const runtime = obtainRuntime(settings);
  // Started before the host so that init() finds the contracts and the first request is already routed.
  await runtime.start();

  let stack: ReferenceStack | undefined;
  if (referenceServices) {
    const transport = createTransport({ url: settings.busUrl, prefix: settings.busPrefix });
    await transport.start();
    stack = await startReferenceStack(transport, storage, (line) => console.log(`[contracts] ${line}`));
    // Every reference contract known before the host starts: the first config the host reads has all routes.
    const expected = stack.services.flatMap((s) => s.messageTypes);
    await waitFor(() => expected.every((t) => runtime.contract(t) !== undefined), 5000);
  }

  const gateway = require('express-gateway') as () => { load(dir: string): { run(): Promise<unknown> } };
  await gateway().load(configDir).run();
  if (!runtime.hostAttached) {
    throw new Error('the contracts plugin did not load; see the log above');
  }
  const port = process.env.PORT ?? '8080';
  console.log(`[contracts] gateway ready on http://127.0.0.1:${port} (bus: ${settings.busUrl.startsWith('amqp') ? 'RabbitMQ' : 'embedded'})`);

  // SIGTERM/SIGINT run the plugin's graceful stop (plugin/shutdown); the in-process services stop after the
  // requests in flight, before the bus closes; their database closes after them.
  gracefulStop().onStop(async () => {
    await stack?.stop();
  });
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
}

main().catch((err) => {
  console.error(`[contracts] start failed: ${errorMessage(err)}`);
  process.exit(1);
});
