import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse } from 'yaml';
import { detectStyle, GENERATED_COMMENT, renderGatewayConfig } from '../../plugin/config-writer/gateway-config';
import type { RenderOptions } from '../../plugin/config-writer/gateway-config';
import { writeIfChanged } from '../../plugin/config-writer/atomic-file';
import { buildEndpointSpecs } from '../../plugin/contracts/endpoint-specs';
import type { EndpointSpec } from '../../plugin/contracts/endpoint-specs';
import type { Contract } from '../../plugin/contracts/types';

/** A hand-written config as a deployment would have it: comments, env defaults, a proxy pipeline. */
const HAND_WRITTEN = `# Gateway for the contract services.
# Everything below is hand-written; the plugin adds its own entries.

http:
  port: \${PORT:-8080}
admin:
  port: \${ADMIN_PORT:-9876}
  host: localhost # admin API on loopback only

apiEndpoints:
  # The legacy monolith, proxied untouched.
  legacy:
    host: '*'
    paths: ['/legacy', '/legacy/*']
  health:
    host: "*"
    paths: /health

serviceEndpoints:
  legacyBackend:
    url: \${LEGACY_URL:-http://localhost:3000}

policies:
  - cors
  - proxy
  - rate-limit

pipelines:
  # Hand-written proxy pipeline.
  legacy:
    apiEndpoints:
      - legacy
    policies:
      - cors:
      - rate-limit:
          - action:
              max: 100
              windowMs: 60000
      - proxy:
          - action:
              serviceEndpoint: legacyBackend
              changeOrigin: true
`;

function contract(messageType: string, properties: Record<string, unknown> = {}): Contract {
  return {
    messageType,
    targetService: 'users',
    inputSchema: { properties },
    outputSchema: {},
    requiredPermissions: [],
  };
}

const CONTRACTS: Contract[] = [
  contract('CreateUserCommand'),
  contract('GetUserQuery', { userId: {} }),
  contract('ListUsersQuery'),
  contract('ResetPasswordCommand'),
];

const OPTIONS: RenderOptions<EndpointSpec> = {
  prefix: 'contracts-',
  requiredPolicyNames: ['cors', 'jwt-dev-auth', 'contract-router'],
  pipelinePolicies: (endpoint) => [
    { cors: null },
    { 'jwt-dev-auth': [{ action: {} }] },
    { 'contract-router': [{ action: { endpoint: endpoint.name, messageType: endpoint.messageType ?? null } }] },
  ],
};

function render(text: string, contracts: Contract[] = CONTRACTS): string {
  return renderGatewayConfig(text, buildEndpointSpecs(contracts), OPTIONS);
}

interface Config {
  apiEndpoints: Record<string, { host: string; paths: string[]; methods: string[] }>;
  pipelines: Record<string, { apiEndpoints: string[]; policies: unknown[] }>;
  policies: string[];
}

describe('renderGatewayConfig', () => {
  it('adds one apiEndpoint and one pipeline per endpoint, after the hand-written ones, in table order', () => {
    const config = parse(render(HAND_WRITTEN)) as Config;
    const names = buildEndpointSpecs(CONTRACTS).endpoints.map((e) => e.name);
    expect(Object.keys(config.apiEndpoints)).to.deep.equal(['legacy', 'health', ...names]);
    expect(Object.keys(config.pipelines)).to.deep.equal(['legacy', ...names]);
    expect(config.apiEndpoints['contracts-get-api-users-userid']).to.deep.equal({
      host: '*',
      paths: ['/api/users/:userId'],
      methods: ['GET'],
    });
    expect(config.pipelines['contracts-get-api-users-userid']).to.deep.equal({
      apiEndpoints: ['contracts-get-api-users-userid'],
      policies: [
        { cors: null },
        { 'jwt-dev-auth': [{ action: {} }] },
        {
          'contract-router': [{ action: { endpoint: 'contracts-get-api-users-userid', messageType: 'GetUserQuery' } }],
        },
      ],
    });
  });

  it('keeps every hand-written line byte for byte', () => {
    const out = render(HAND_WRITTEN);
    const withoutGenerated = renderGatewayConfig(out, [], OPTIONS);
    const expected = HAND_WRITTEN.replace(
      '  - rate-limit\n',
      '  - rate-limit\n  - jwt-dev-auth\n  - contract-router\n',
    );
    expect(withoutGenerated).to.equal(expected);
    for (const line of [
      'http:',
      '  port: ${PORT:-8080}',
      '    url: ${LEGACY_URL:-http://localhost:3000}',
      '  # Hand-written proxy pipeline.',
      "    paths: ['/legacy', '/legacy/*']",
      '    host: "*"',
      '  host: localhost # admin API on loopback only',
    ]) {
      expect(out.split('\n')).to.include(line);
    }
  });

  it('is idempotent: rendering its own output again gives the same text', () => {
    const first = render(HAND_WRITTEN);
    expect(render(first)).to.equal(first);
    expect(render(render(first))).to.equal(first);
  });

  it('marks the generated block once, however often it is rendered', () => {
    let text = HAND_WRITTEN;
    for (let i = 0; i < 3; i += 1) text = render(text);
    expect(text.split(GENERATED_COMMENT).length - 1).to.equal(2);
  });

  it('removes the entries of a contract that went away', () => {
    const first = render(HAND_WRITTEN);
    const after = parse(render(first, [contract('ListUsersQuery')])) as Config;
    expect(Object.keys(after.apiEndpoints)).to.deep.equal(['legacy', 'health', 'contracts-get-api-users']);
    expect(Object.keys(after.pipelines)).to.deep.equal(['legacy', 'contracts-get-api-users']);
  });

  it('removes every generated entry for an empty table and gets back the hand-written file', () => {
    const withPolicies = render(HAND_WRITTEN);
    const emptied = renderGatewayConfig(withPolicies, { endpoints: [] }, OPTIONS);
    expect(emptied).to.not.include('contracts-');
    expect(emptied).to.not.include(GENERATED_COMMENT);
  });

  it('appends missing policy names and keeps the existing order', () => {
    const config = parse(render(HAND_WRITTEN)) as Config;
    expect(config.policies).to.deep.equal(['cors', 'proxy', 'rate-limit', 'jwt-dev-auth', 'contract-router']);
  });

  it('creates missing apiEndpoints, pipelines and policies', () => {
    const text = 'http:\n  port: ${PORT:-8080}\n';
    const out = render(text);
    const config = parse(out) as Config;
    expect(out.startsWith(text)).to.equal(true);
    expect(Object.keys(config.apiEndpoints)).to.have.length(5);
    expect(Object.keys(config.pipelines)).to.have.length(5);
    expect(config.policies).to.deep.equal(['cors', 'jwt-dev-auth', 'contract-router']);
    expect(render(out)).to.equal(out);
  });

  it('fills empty sections and keeps their comments', () => {
    const text = 'apiEndpoints: # none yet\npipelines:\npolicies:\n  # add yours here\n';
    const out = render(text);
    expect(out).to.include('# none yet').and.include('# add yours here');
    expect((parse(out) as Config).policies).to.deep.equal(['cors', 'jwt-dev-auth', 'contract-router']);
    expect(render(out)).to.equal(out);
  });

  it('starts from an empty file', () => {
    const out = render('');
    expect(Object.keys((parse(out) as Config).apiEndpoints)).to.have.length(5);
    expect(render(out)).to.equal(out);
  });

  it('keeps four-space indentation when the file uses it', () => {
    const text =
      'apiEndpoints:\n    api:\n        host: localhost\n        paths:\n            - /x\npolicies:\n    - proxy\n    - cors\n    - jwt-dev-auth\n    - contract-router\n';
    const out = render(text);
    expect(renderGatewayConfig(out, [], OPTIONS)).to.equal(`${text}pipelines: {}\n`);
    expect(out).to.include(
      '\n    contracts-get-api-users:\n        host: "*"\n        paths:\n            - /api/users\n',
    );
  });

  it('keeps sequences flush with their key when the file writes them so', () => {
    // (The yaml printer can do flush sequences only with two-space indentation.)
    const text =
      'apiEndpoints:\n  api:\n    host: localhost\n    paths:\n    - /x\npolicies:\n- proxy\n- cors\n- jwt-dev-auth\n- contract-router\n';
    const out = render(text);
    expect(renderGatewayConfig(out, [], OPTIONS)).to.equal(`${text}pipelines: {}\n`);
    expect(out).to.include('\n  contracts-get-api-users:\n    host: "*"\n    paths:\n    - /api/users\n');
  });

  it('keeps padded flow sequences when a quoted string (a pathRegex) holds brackets', () => {
    const text =
      "apiEndpoints:\n  api:\n    host: localhost\n    pathRegex: '^/(?:[aA][pP][iI])$'\n    methods: [ GET, POST ]\npolicies: [ proxy, cors ]\n";
    const regexEndpoint = {
      name: 'contracts-api',
      method: '*',
      path: '/api',
      pathRegex: '^(?:/(?:[aA][pP][iI])(?:/.*)?)$',
    };
    const options = { prefix: 'contracts-', pipelinePolicies: () => [], requiredPolicyNames: ['proxy'] };
    const out = renderGatewayConfig(text, [regexEndpoint], options);
    expect(out).to.include("    pathRegex: '^(?:/(?:[aA][pP][iI])(?:/.*)?)$'\n");
    expect(out).to.include('policies: [ proxy, cors ]');
    expect(renderGatewayConfig(out, [regexEndpoint], options), 'idempotent').to.equal(out);
    expect(parse(out).apiEndpoints['contracts-api']).to.deep.equal({ host: '*', pathRegex: regexEndpoint.pathRegex });
  });

  it('writes endpoints that share a pipeline under one pipeline entry, with their extra properties', () => {
    const ENDPOINTS = buildEndpointSpecs(CONTRACTS).endpoints;
    const text = renderGatewayConfig(HAND_WRITTEN, ENDPOINTS, {
      ...OPTIONS,
      pipelineOf: () => 'contracts-routes',
      endpointExtra: (e) => ({ contract: { messageType: e.messageType ?? null } }),
    });
    const cfg = parse(text);
    const names = ENDPOINTS.map((e) => e.name);
    expect(Object.keys(cfg.pipelines).filter((k) => k.startsWith('contracts-'))).to.deep.equal(['contracts-routes']);
    expect(cfg.pipelines['contracts-routes'].apiEndpoints).to.deep.equal(names);
    for (const e of ENDPOINTS)
      expect(cfg.apiEndpoints[e.name].contract).to.deep.equal({ messageType: e.messageType ?? null });
    expect(
      renderGatewayConfig(text, ENDPOINTS, {
        ...OPTIONS,
        pipelineOf: () => 'contracts-routes',
        endpointExtra: (e) => ({ contract: { messageType: e.messageType ?? null } }),
      }),
    ).to.equal(text);
  });

  it('refuses text it cannot read rather than overwrite it', () => {
    expect(() => render('apiEndpoints: [unclosed\n')).to.throw(/not valid YAML/);
    // One line with the position, never an excerpt: the file may hold a secret next to the mistake.
    const secret = 'k3y-do-not-print';
    let message = '';
    try {
      render(`http:\n  port: 8080\ncrypto: { cipherKey: ${secret}: x }\n`);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).to.match(/^gateway config is not valid YAML at line 3, column \d+: [^\n]+$/);
    expect(message).to.not.include(secret);
    expect(() => render('- a list\n')).to.throw(/mapping/);
    expect(() => render('apiEndpoints: [a, b]\n')).to.throw(/apiEndpoints must be a mapping/);
  });

  it('refuses endpoint names it could not remove again', () => {
    const endpoint = { name: 'users', method: 'GET', path: '/api/users' };
    const opts = {
      prefix: OPTIONS.prefix,
      requiredPolicyNames: OPTIONS.requiredPolicyNames,
      pipelinePolicies: () => [],
    };
    expect(() => renderGatewayConfig(HAND_WRITTEN, [endpoint], opts)).to.throw(/prefix/);
    const twice = [
      { ...endpoint, name: 'contracts-a' },
      { ...endpoint, name: 'contracts-a' },
    ];
    expect(() => renderGatewayConfig(HAND_WRITTEN, twice, opts)).to.throw(/twice/);
    const unprefixedPipeline = { ...opts, pipelineOf: () => 'shared' };
    expect(() =>
      renderGatewayConfig(HAND_WRITTEN, [{ ...endpoint, name: 'contracts-b' }], unprefixedPipeline),
    ).to.throw(/pipeline name shared lacks prefix/);
  });
});

describe('detectStyle: flow collection padding', () => {
  const padding = (text: string) => detectStyle(text).flowCollectionPadding;

  it('does not count brackets inside quoted strings, whatever their escapes', () => {
    // One tight flow sequence; each string hides a padded bracket after an escaped quote (a tie would read as padded).
    expect(padding("note: 'it''s [ x'\nlist: [a, b]\n")).to.equal(false);
    expect(padding('note: "q \\" [ x"\nlist: [a, b]\n')).to.equal(false);
    expect(padding("note: '[x]'\nlist: [ a, b ]\n")).to.equal(true);
  });

  it('takes an apostrophe inside a plain word for no quote', () => {
    expect(padding("it's: [ a, 'b' ]\n")).to.equal(true);
    expect(padding("it's: [a, 'b']\n")).to.equal(false);
  });
});

describe('writeIfChanged (atomic-file.ts)', () => {
  let dir: string;
  let file: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-config-'));
    file = path.join(dir, 'gateway.config.yml');
  });

  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('writes new content, leaves no temp files and keeps the file mode', async () => {
    fs.writeFileSync(file, HAND_WRITTEN, { mode: 0o640 });
    fs.chmodSync(file, 0o640);
    const text = render(HAND_WRITTEN);
    expect(await writeIfChanged(file, text)).to.equal(true);
    expect(fs.readFileSync(file, 'utf8')).to.equal(text);
    expect(fs.readdirSync(dir)).to.deep.equal(['gateway.config.yml']);
    expect(fs.statSync(file).mode & 0o777).to.equal(0o640);
  });

  it('returns false and does not touch the file when the content is the same', async () => {
    fs.writeFileSync(file, HAND_WRITTEN);
    const past = new Date(Date.now() - 60_000);
    fs.utimesSync(file, past, past);
    const before = fs.statSync(file);
    expect(await writeIfChanged(file, HAND_WRITTEN)).to.equal(false);
    const after = fs.statSync(file);
    expect(after.mtimeMs).to.equal(before.mtimeMs);
    expect(after.ino).to.equal(before.ino);
  });

  it('creates a missing file', async () => {
    expect(await writeIfChanged(file, 'a: 1\n')).to.equal(true);
    expect(fs.readFileSync(file, 'utf8')).to.equal('a: 1\n');
  });

  it('cleans up its temp file when the write fails', async () => {
    const target = path.join(dir, 'sub');
    fs.mkdirSync(target); // renaming a file over a directory fails
    let failed = false;
    try {
      await writeIfChanged(target, 'a: 1\n');
    } catch {
      failed = true;
    }
    expect(failed).to.equal(true);
    expect(fs.readdirSync(dir)).to.deep.equal(['sub']);
  });

  it('writes through a symlink to its target', async () => {
    const real = path.join(dir, 'real.yml');
    fs.writeFileSync(real, 'a: 1\n');
    fs.symlinkSync(real, file);
    expect(await writeIfChanged(file, 'a: 2\n')).to.equal(true);
    expect(fs.lstatSync(file).isSymbolicLink()).to.equal(true);
    expect(fs.readFileSync(real, 'utf8')).to.equal('a: 2\n');
  });

  describe('called synchronously, as init() does', () => {
    it('writes when different, leaves no temp files, and skips when equal', () => {
      fs.writeFileSync(file, HAND_WRITTEN);
      const text = render(HAND_WRITTEN);
      expect(writeIfChanged(file, text)).to.equal(true);
      expect(fs.readFileSync(file, 'utf8')).to.equal(text);
      expect(fs.readdirSync(dir)).to.deep.equal(['gateway.config.yml']);
      const past = new Date(Date.now() - 60_000);
      fs.utimesSync(file, past, past);
      const before = fs.statSync(file).mtimeMs;
      expect(writeIfChanged(file, text)).to.equal(false);
      expect(fs.statSync(file).mtimeMs).to.equal(before);
    });
  });

  it('render + write reaches a fixed point: a second init writes nothing', async () => {
    fs.writeFileSync(file, HAND_WRITTEN);
    const once = render(fs.readFileSync(file, 'utf8'));
    expect(await writeIfChanged(file, once)).to.equal(true);
    const twice = render(fs.readFileSync(file, 'utf8'));
    expect(await writeIfChanged(file, twice)).to.equal(false);
  });
});
