import { expect } from 'chai';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, run, startProcess } from './support';
import { AMQP_URL, uniquePrefix } from '../support/env';
import { deleteBusTopology } from '../support/broker';

const SDK = 'express-gateway-plugin-contracts-sdk';
const TYPES = 'json-schema-to-ts';
/** What a service that installs the SDK alone may carry in node_modules (issue: the whole gateway was 143 MB). */
const MAX_NODE_MODULES_BYTES = 15 * 1024 * 1024;

/** Bytes of the files under `dir` (symlinks not followed). */
function bytesUnder(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += bytesUnder(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

/**
 * The SDK as its own package: `npm pack --workspace sdk`, installed alone into an empty folder, as a Node service
 * would. Needs the npm registry (or its cache) for amqplib and the rest.
 */
describe('the SDK package (npm pack --workspace sdk, installed alone)', function () {
  this.timeout(300000);
  let tmp: string;
  let app: string;

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'contracts-sdk-'));
    const packed = await run('npm', ['pack', '--workspace', 'sdk', '--pack-destination', tmp], { timeoutMs: 120000 });
    expect(packed.code, packed.output).to.equal(0);
    const tarball = readdirSync(tmp).find((f) => f.startsWith(SDK) && f.endsWith('.tgz'));
    expect(tarball, packed.output).to.be.a('string');
    app = join(tmp, 'service');
    await run('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'a-service', version: '1.0.0', private: true }));
    const installed = await run('npm', ['install', join(tmp, tarball!)], { cwd: app });
    expect(installed.code, installed.output).to.equal(0);
  });

  after(() => rmSync(tmp, { recursive: true, force: true }));

  /**
   * json-schema-to-ts, which operation()'s types come from: an optional peer, installed by a TypeScript service as a
   * dev dependency (docs/writing-a-service.md); the typed tests install it, once, after the size was measured.
   */
  let typesInstalled: Promise<void> | undefined;
  const withTypes = () => {
    typesInstalled ??= (async () => {
      const version = JSON.parse(readFileSync(join(ROOT, 'sdk', 'package.json'), 'utf8')).peerDependencies[TYPES];
      const before = bytesUnder(join(app, 'node_modules'));
      const r = await run('npm', ['install', '--save-dev', `${TYPES}@${version}`], { cwd: app, timeoutMs: 120000 });
      expect(r.code, r.output).to.equal(0);
      const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
      console.log(
        `      node_modules: ${mb(before)} MB with the SDK alone, ${mb(bytesUnder(join(app, 'node_modules')))} MB with ${TYPES}`,
      );
    })();
    return typesInstalled;
  };

  it('installs under 15 MB of node_modules, with nothing of Express Gateway or Express', () => {
    const modules = join(app, 'node_modules');
    expect(bytesUnder(modules)).to.be.below(MAX_NODE_MODULES_BYTES);
    const installed = Object.keys(JSON.parse(readFileSync(join(modules, '.package-lock.json'), 'utf8')).packages);
    expect(installed).to.include(`node_modules/${SDK}`).and.include('node_modules/amqplib');
    expect(installed.filter((p) => /(^|\/)(express|express-gateway|ajv|typescript)$/.test(p))).to.deep.equal([]);
    // Types only: not a runtime dependency (the next test runs without it).
    expect(installed.filter((p) => p.endsWith(`node_modules/${TYPES}`))).to.deep.equal([]);
  });

  it('loads from its package name and serves over the in-process bus', async () => {
    const script = `
      const { serve, createTransport, operation } = require('${SDK}');
      (async () => {
        const transport = createTransport({ url: 'embedded' });
        await transport.start();
        const op = operation({ messageType: 'PingQuery', inputSchema: {}, outputSchema: {}, requiredPermissions: [] }).handle(() => ({ pong: true }));
        const running = await serve({ transport, service: 'ping', operations: [op] });
        const reply = await transport.request({ messageType: 'PingQuery', targetService: 'ping', input: {}, headers: { correlationId: 'c', requestId: 'r' } }, 2000);
        await running.stop();
        await transport.close();
        console.log(JSON.stringify(reply));
      })().catch((err) => { console.error(err); process.exit(1); });`;
    const r = await run(process.execPath, ['-e', script], { cwd: app, timeoutMs: 30000 });
    expect(r.code, r.output).to.equal(0);
    expect(JSON.parse(r.output.trim().split('\n').pop()!)).to.deep.equal({ ok: true, result: { pong: true } });
  });

  it('ships its types: a handler typed from the schema compiles, a wrong output does not', async () => {
    await withTypes();
    const source = `
      import { operation } from '${SDK}';
      const contract = {
        messageType: 'GetProductQuery',
        inputSchema: { type: 'object', properties: { productId: { type: 'string' } }, required: ['productId'] },
        outputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        requiredPermissions: ['products:read'],
      } as const;
      export const good = operation(contract).handle((input) => ({ name: input.productId.toUpperCase() }));
      export const bad = operation(contract).handle((input) => ({ name: input.productId.length }));
    `;
    writeFileSync(join(app, 'service.ts'), source);
    const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
    const r = await run(tsc, ['--noEmit', '--strict', '--module', 'node20', '--skipLibCheck', 'service.ts'], {
      cwd: app,
      timeoutMs: 120000,
    });
    // Exactly one error: the number where the output schema says string.
    expect(r.output.match(/error TS\d+/g), r.output).to.have.length(1);
    expect(r.output).to.match(/service\.ts\(10,/);
  });

  /** docs/writing-a-service.md's service, byte for byte: its first TypeScript block. */
  const docExample = (): string => {
    const page = readFileSync(join(ROOT, 'docs', 'writing-a-service.md'), 'utf8');
    const block = /```ts\n([\s\S]*?)```/.exec(page);
    expect(block, 'a ts block in docs/writing-a-service.md').to.not.equal(null);
    return block![1]!;
  };

  for (const type of ['module', 'commonjs'] as const) {
    it(`docs/writing-a-service.md's example compiles (nodenext, strict, exactOptionalPropertyTypes) and runs as ${type}`, async () => {
      await withTypes();
      const dir = join(app, `doc-${type}`);
      await run('mkdir', ['-p', dir]);
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `doc-${type}`, private: true, type }));
      writeFileSync(join(dir, 'service.ts'), docExample());
      const compilerOptions = {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        strict: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: true,
        // A TypeScript service installs @types/node; this one is the repository's, to stay off the network.
        typeRoots: [join(ROOT, 'node_modules', '@types')],
        types: ['node'],
      };
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['service.ts'] }));
      const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
      const compiled = await run(tsc, ['-p', dir], { cwd: dir, timeoutMs: 120000 });
      expect(compiled.code, compiled.output).to.equal(0);
      // On the real broker until it is told to stop: SIGTERM withdraws and exits 0.
      const prefix = uniquePrefix('sdkdoc');
      try {
        const service = await startProcess(
          process.execPath,
          [join(dir, 'service.js')],
          { cwd: dir, env: { BUS_URL: AMQP_URL, BUS_PREFIX: prefix } },
          async (output) => output.includes('catalog-service ready'),
        );
        expect(await service.stop(), service.output()).to.equal(0);
      } finally {
        await deleteBusTopology(AMQP_URL, prefix);
      }
    });
  }
});
