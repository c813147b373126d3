import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ContractRegistry } from '../../plugin/contracts/registry';
import type { ConfigSync } from '../../plugin/config-writer/config-sync';
import { TestConfigSync } from '../support/config-sync';
import { gatewayConfigOf } from '../../plugin/host/express-gateway';
import { GENERATED_COMMENT, renderGatewayConfig } from '../../plugin/config-writer/gateway-config';
import { resolveSettings } from '../../plugin/settings';
import type { Logger } from '../../plugin/logger';
import type { Contract } from '../../plugin/contracts/types';

/**
 * A gateway.config.yml written the way people write them: flow sequences tight and padded, comments above, inside,
 * after and at the end of entries, blank lines, every quoting style, anchors and aliases, an entry of an older
 * generated block in the middle with hand-written entries before and after it. Every policy the generated pipelines
 * name is listed already, so nothing outside the generated entries has a reason to change.
 */
const TRICKY = `# Deployment config, kept in git.
http:
  port: \${PORT:-8080}   # end-of-line comment
  hostname: "127.0.0.1"

apiEndpoints:
  # The legacy monolith.
  legacy:
    host: '*'
    paths: ['/legacy', '/legacy/*']
    methods: [ GET, POST ]   # padded, and a comment

  reports: &reports-endpoint
    host: "*"
    paths: ["/reports"]
    # a comment inside an entry
    methods:
    - GET
  # Generated from announced contracts by express-gateway-plugin-contracts; edits here are overwritten.
  contracts-get-api-stale:
    host: "*"
    paths:
      - /api/stale
    methods:
      - GET
  # written by hand after the generated block
  after-block: *reports-endpoint
  status:
    paths: /status
      # a deeper comment trailing the section

serviceEndpoints:
  backend: {url: 'http://backend.internal:8080'}

policies: ['proxy', "cors", request-trace, contract-rate-limit, jwt-dev-auth, permission, schema-validation, contract-router, not-found, route-table]

pipelines:
  legacy:
    apiEndpoints: ['legacy']
    policies:
      - proxy:
          - action: &proxy-action
              serviceEndpoint: backend
              changeOrigin: true # why not
  # Generated from announced contracts by express-gateway-plugin-contracts; edits here are overwritten.
  contracts-routes:
    apiEndpoints:
      - contracts-get-api-stale
    policies:
      - contract-router:
          - action: {}

  reports:
    apiEndpoints: [ reports, after-block ]
    policies:
      - proxy:
          - action: *proxy-action
# the end, without a final line break`;

function contract(messageType: string, extra: Partial<Contract> = {}): Contract {
  return {
    messageType,
    targetService: 'orders-service',
    inputSchema: {},
    outputSchema: {},
    requiredPermissions: [],
    ...extra,
  };
}

/**
 * The file with the generated entries cut out, by a model independent of the writer: a generated entry is the line
 * of a key starting with `contracts-` and the lines under it that are deeper, not blank and not comments, plus the
 * marker comment right above it.
 */
function cutGenerated(text: string): string {
  const lines = text.split(/(?<=\n)/);
  const kept: string[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] as string;
    const key = /^( *)contracts-[\w-]+:/.exec(line);
    if (!key) {
      kept.push(line);
      continue;
    }
    const column = (key[1] as string).length;
    if (kept.length > 0 && (kept[kept.length - 1] as string).trim() === `#${GENERATED_COMMENT}`) kept.pop();
    while (i + 1 < lines.length) {
      const next = lines[i + 1] as string;
      const lead = (/^ */.exec(next) as RegExpExecArray)[0].length;
      if (next.trim() === '' || next.trimStart().startsWith('#') || lead <= column) break;
      i += 1;
    }
  }
  return kept.join('');
}

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined } as unknown as Logger;

for (const [label, eol] of [
  ['LF', '\n'],
  ['CRLF', '\r\n'],
] as const) {
  describe(`config writer: hand-written bytes stay as they were (${label})`, () => {
    let dir: string;
    let file: string;
    let registry: ContractRegistry;
    let sync: ConfigSync;
    const original = TRICKY.replace(/\n/g, eol);

    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'contracts-bytes-'));
      file = join(dir, 'gateway.config.yml');
      writeFileSync(file, original);
      registry = new ContractRegistry();
      const host = {
        config: { gatewayConfigPath: file, loadConfig: () => undefined },
        eventBus: { emit: () => undefined },
      };
      sync = new TestConfigSync(
        registry,
        host,
        resolveSettings({ writeDebounceMs: 0, configWriteIntervalMs: 0, routing: 'endpoints' }, {}),
        quiet,
      );
    });
    afterEach(() => {
      sync.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const text = () => readFileSync(file, 'utf8');
    const announce = async (contracts: Contract[]) => {
      registry.apply({ service: 'orders-service', instanceId: 'o1', ttlMs: 60_000, contracts });
      await sync.settled();
    };

    it('adds, changes and removes contracts without changing a byte outside the generated entries', async () => {
      const handWritten = cutGenerated(original);
      expect(handWritten).to.not.include('contracts-get-api-stale');
      sync.start();
      const states: string[] = [text()];
      await announce([
        contract('CreateOrderCommand'),
        contract('GetOrderQuery', { inputSchema: { properties: { orderId: {} } } }),
      ]);
      states.push(text());
      await announce([
        contract('GetOrderQuery', { inputSchema: { properties: { orderId: {} } } }),
        contract('ListInvoicesQuery', { http: { method: 'GET', paths: ['/api/invoices'] } }),
      ]);
      states.push(text());
      await announce([]);
      states.push(text());
      expect(new Set(states).size, 'each change was written').to.equal(3);
      expect(states[3], 'no contract: the first state again').to.equal(states[0]);
      for (const state of states) {
        expect(cutGenerated(state)).to.equal(handWritten);
        if (eol === '\r\n') expect(state.replace(/\r\n/g, ''), 'no bare line feed').to.not.include('\n');
      }
      // What the host reads: the generated entries of the moment, and the hand-written ones with their aliases resolved.
      const config = parse(states[2] as string);
      expect(Object.keys(config.apiEndpoints)).to.deep.equal([
        'legacy',
        'reports',
        'contracts-options-api',
        'contracts-get-api-invoices',
        'contracts-get-api-orders',
        'contracts-get-api-orders-orderid',
        'contracts-not-found',
        'after-block',
        'status',
      ]);
      expect(config.apiEndpoints['after-block']).to.deep.equal({ host: '*', paths: ['/reports'], methods: ['GET'] });
      expect(config.pipelines.reports.policies[0].proxy[0].action).to.deep.equal({
        serviceEndpoint: 'backend',
        changeOrigin: true,
      });
      expect(config.pipelines['contracts-routes'].apiEndpoints).to.deep.equal([
        'contracts-get-api-invoices',
        'contracts-get-api-orders',
        'contracts-get-api-orders-orderid',
      ]);
      expect(config.apiEndpoints['contracts-get-api-orders-orderid'].contract).to.deep.equal({
        messageType: 'GetOrderQuery',
        kind: 'get',
      });
      // Once written, the same contracts write nothing (each write is a reload of the host).
      const settledText = text();
      await announce([]);
      sync.updateHost(
        gatewayConfigOf({
          config: { gatewayConfigPath: file, loadConfig: () => undefined },
          eventBus: { emit: () => undefined },
        }),
      );
      expect(text()).to.equal(settledText);
    });
  });
}

describe('config writer: what it adds to hand-written sections', () => {
  const endpoint = { name: 'contracts-get-api-a', method: 'GET', path: '/api/a' };
  const render = (text: string, required = ['cors', 'contract-router']) =>
    renderGatewayConfig(text, [endpoint], {
      prefix: 'contracts-',
      requiredPolicyNames: required,
      pipelinePolicies: () => [{ 'contract-router': [{ action: {} }] }],
    });

  it('appends missing policy names to a flow list after its last item, and to a block list at its column', () => {
    expect(render("policies: ['proxy', cors] # mine\n")).to.include(
      "policies: ['proxy', cors, contract-router] # mine\n",
    );
    expect(render('policies: [ ]\n')).to.include('policies: [ cors, contract-router ]\n');
    expect(render('policies:\n- proxy # mine\n# after\n')).to.include(
      'policies:\n- proxy # mine\n- cors\n- contract-router\n# after\n',
    );
    expect(render('policies:\n    - proxy\n')).to.include(
      'policies:\n    - proxy\n    - cors\n    - contract-router\n',
    );
  });

  it("puts the block after the last entry of a section, its trailing deeper comments included, at the entries' column", () => {
    const out = render(
      'apiEndpoints:\n   mine:\n      paths: /x\n      # methods: [GET]\n# about pipelines\npipelines:\n   mine: {}\npolicies: [cors, contract-router]\n',
    );
    expect(out).to.include(
      `apiEndpoints:\n   mine:\n      paths: /x\n      # methods: [GET]\n   #${GENERATED_COMMENT}\n   contracts-get-api-a:\n`,
    );
    expect(out).to.include(
      `# about pipelines\npipelines:\n   mine: {}\n   #${GENERATED_COMMENT}\n   contracts-get-api-a:\n`,
    );
    expect(render(out)).to.equal(out);
  });

  it('fills an empty `{}` section and writes `{}` back when its entries go', () => {
    const text = 'apiEndpoints: {} # none yet\npipelines: {}\npolicies: [cors, contract-router]\n';
    const out = render(text);
    expect(out).to.match(/^apiEndpoints: # none yet\n {2}#/);
    expect(
      renderGatewayConfig(out, [], { prefix: 'contracts-', requiredPolicyNames: [], pipelinePolicies: () => [] }),
    ).to.equal('apiEndpoints: {} # none yet\npipelines: {}\npolicies: [cors, contract-router]\n');
  });

  it('refuses a section written as a flow mapping with entries, rather than rewrite it', () => {
    expect(() => render('apiEndpoints: { mine: { paths: /x } }\n')).to.throw(
      /apiEndpoints is written as a flow mapping/,
    );
  });
});
