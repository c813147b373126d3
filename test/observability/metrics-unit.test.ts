import { expect } from 'chai';
import { ContractRegistry } from '../../plugin/contracts/registry';
import { GatewayMetrics } from '../../plugin/observability/metrics';
import { refusalKind, OTHER_REASON } from '../../plugin/observability/refusals';
import { DEFAULT_ANNOUNCEMENT_LIMITS } from '../../plugin/contracts/limits';
import { RouteLabels, MAX_ROUTE_LABELS, OTHER_ROUTE, UNMATCHED_ROUTE } from '../../plugin/observability/route-label';
import type { IncomingMessage } from 'node:http';
import { busOutcome } from '../../plugin/observability/bus-call';
import { busChannelNotOpen } from '../../plugin/bus/failures';
import { badGateway, gatewayTimeout, serviceUnavailable, GatewayError } from '../../plugin/errors/gateway-error';
import { AnnouncementInbox } from '../../plugin/contracts/inbox';
import { RequestObserver } from '../../plugin/observability/request-observer';
import { prefersOpenMetrics } from '../../plugin/observability/metrics-server';
import { ASSET_ROUTE, ASSETS_PATH, mountDocsPage } from '../../plugin/operations/docs-page';
import express from 'express';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

function contract(i: number) {
  return {
    messageType: `GetThing${i}Query`,
    targetService: 'things',
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object' },
    requiredPermissions: [],
  };
}

function metricsOf(registry: ContractRegistry): GatewayMetrics {
  const metrics = new GatewayMetrics(
    {
      contracts: () => registry.counts().contracts,
      services: () => registry.counts().services,
      instances: () => registry.counts().instances,
    },
    new RouteLabels(),
  );
  registry.on('announcement', (r) =>
    metrics.announcement(r.accepted ? 'accepted' : 'refused', r.accepted ? '' : refusalKind(r.reason)),
  );
  return metrics;
}

describe('metrics: announcements, contracts and bounded labels', () => {
  it('counts accepted and refused announcements by a bounded reason, and reports 1,000 contracts', async () => {
    // One announcement of 1,000 contracts: over the default per-announcement limit, so the limit is raised.
    const registry = new ContractRegistry({ limits: { ...DEFAULT_ANNOUNCEMENT_LIMITS, maxContracts: 1000 } });
    const metrics = metricsOf(registry);
    registry.apply({
      service: 'things',
      instanceId: 'a',
      ttlMs: 1000,
      contracts: Array.from({ length: 1000 }, (_, i) => contract(i)),
    });
    registry.apply({ service: 'things', instanceId: 'b', ttlMs: 1000, contracts: [contract(1), contract(1)] });
    registry.apply({ service: 'things', instanceId: 'c', ttlMs: -1, contracts: [] });
    registry.apply({ service: 'things', instanceId: 'd', ttlMs: 1000, contracts: [{ messageType: 'x y' }] });
    registry.apply('nonsense');
    const text = await metrics.registry.metrics();
    expect(text).to.contain('contracts_gateway_contracts 1000\n');
    expect(text).to.contain('contracts_gateway_service_instances 1\n');
    expect(text).to.contain('contracts_gateway_announcements_total{outcome="accepted",reason=""} 1\n');
    for (const reason of ['duplicate_message_type', 'invalid_ttl', 'invalid_contract', 'malformed']) {
      expect(text).to.contain(`contracts_gateway_announcements_total{outcome="refused",reason="${reason}"} 1\n`);
    }
    // 1,000 contracts add no series of their own.
    expect(text.split('\n').filter((l) => l.startsWith('contracts_gateway_announcements_total')).length).to.equal(5);
  });

  it('sorts an unknown refusal into `other`', () => {
    expect(refusalKind('something nobody wrote yet')).to.equal(OTHER_REASON);
    expect(refusalKind('more than 1000 contracts')).to.equal('too_many_contracts');
    expect(refusalKind('contracts[0] inputSchema nests deeper than 32 levels (schemaMaxDepth)')).to.equal(
      'schema_over_limit',
    );
    expect(refusalKind('more than 256 services (announcedServicesMax)')).to.equal('too_many_services');
  });

  it('labels a request by its route template, never its path, and stops taking new templates past the cap', () => {
    const req = (path?: string) => ({ route: path === undefined ? undefined : { path } }) as unknown as IncomingMessage;
    const routeLabels = new RouteLabels();
    const routeLabelOf = (r: IncomingMessage): string => routeLabels.of(r);
    expect(routeLabelOf(req())).to.equal(UNMATCHED_ROUTE);
    expect(routeLabelOf(req('/api/users/:userId'))).to.equal('/api/users/:userId');
    const labels = new Set<string>();
    for (let i = 0; i < MAX_ROUTE_LABELS + 500; i++) labels.add(routeLabelOf(req(`/api/things${i}/:id`)));
    expect(labels.size).to.be.at.most(MAX_ROUTE_LABELS + 1);
    expect(labels.has(OTHER_ROUTE)).to.equal(true);
    // A template seen before the cap keeps its own label.
    expect(routeLabelOf(req('/api/users/:userId'))).to.equal('/api/users/:userId');
  });

  it('labels requests to deprecated routes from the same capped set as the http series', async () => {
    const req = (path: string) => ({ route: { path } }) as unknown as IncomingMessage;
    const observer = new RequestObserver();
    const metrics = new GatewayMetrics({ contracts: () => 0, services: () => 0, instances: () => 0 }, observer.labels);
    // The observer has handed out every label it may: a template new to it is counted as `other` by both.
    for (let i = 0; i < MAX_ROUTE_LABELS; i++) observer.labels.of(req(`/api/things${i}/:id`));
    metrics.deprecatedRequest(req('/api/things0/:id'), 'GetThing0Query');
    metrics.deprecatedRequest(req('/api/relics/:relicId'), 'GetRelicQuery');
    const text = await metrics.registry.metrics();
    expect(text).to.contain(
      'contracts_gateway_deprecated_requests_total{route="/api/things0/:id",message_type="GetThing0Query"} 1\n',
    );
    expect(text).to.contain(
      `contracts_gateway_deprecated_requests_total{route="${OTHER_ROUTE}",message_type="GetRelicQuery"} 1\n`,
    );
  });

  it('counts a reconnect each time the bus comes back up, not its first start', async () => {
    const metrics = metricsOf(new ContractRegistry());
    for (const state of ['connecting', 'up', 'down', 'connecting', 'up', 'down', 'up'] as const)
      metrics.busStateChanged(state);
    const text = await metrics.registry.metrics();
    expect(text).to.contain('contracts_gateway_bus_reconnects_total 2\n');
    expect(text).to.contain('contracts_gateway_bus_connection_state{state="up"} 1\n');
    expect(text).to.contain('contracts_gateway_bus_connection_state{state="down"} 0\n');
  });

  it("sorts how a bus request ended from the transport's answer", () => {
    expect(busOutcome({ reply: { ok: true, result: 1 } })).to.equal('reply');
    expect(busOutcome({ reply: { ok: false, error: { code: 'NOT_FOUND' } } })).to.equal('error_reply');
    expect(busOutcome({ error: gatewayTimeout(100) })).to.equal('timeout');
    expect(
      busOutcome({ error: serviceUnavailable("No instance of service 'x' is available", 5, { service: 'x' }) }),
    ).to.equal('unroutable');
    expect(busOutcome({ error: badGateway('x') })).to.equal('connection_lost');
    expect(busOutcome({ error: serviceUnavailable('The message bus is not connected') })).to.equal('bus_unavailable');
    expect(busOutcome({ error: busChannelNotOpen('x') })).to.equal('bus_unavailable');
    expect(busOutcome({ error: serviceUnavailable('The gateway is shutting down; retry the request') })).to.equal(
      'aborted',
    );
    expect(busOutcome({ error: new GatewayError('INTERNAL_ERROR', 'x') })).to.equal('failed');
    expect(busOutcome({ error: new Error('x') })).to.equal('failed');
  });
});

describe('metrics: series an operator reads before anything happened', () => {
  it('counts an announcement refused for trust as refused, reason not_trusted', async () => {
    const registry = new ContractRegistry();
    const metrics = metricsOf(registry);
    const inbox = new AnnouncementInbox(registry, {
      intervalMs: 10,
      announcers: { users: { things: 'things-user' }, required: true },
      logger: { warn: () => undefined },
    });
    try {
      inbox.offer(
        { service: 'things', instanceId: 'a', ttlMs: 1000, contracts: [contract(1)] },
        { userId: 'someone-else' },
      );
      inbox.offer({ service: 'things', instanceId: 'b', ttlMs: 1000, contracts: [contract(1)] }, {});
      const text = await metrics.registry.metrics();
      expect(text).to.contain('contracts_gateway_announcements_total{outcome="refused",reason="not_trusted"} 2\n');
      expect(registry.counts().instances).to.equal(0);
    } finally {
      inbox.stop();
    }
  });

  it('exports every 5xx and 429 error series at 0 from the start', async () => {
    const text = await new GatewayMetrics(
      { contracts: () => 0, services: () => 0, instances: () => 0 },
      new RouteLabels(),
    ).registry.metrics();
    for (const [code, status] of [
      ['INTERNAL_ERROR', 500],
      ['SERVICE_UNAVAILABLE', 502],
      ['SERVICE_UNAVAILABLE', 503],
      ['TIMEOUT', 504],
      ['RATE_LIMIT_EXCEEDED', 429],
    ]) {
      expect(text).to.contain(`contracts_gateway_error_responses_total{code="${code}",status="${status}"} 0\n`);
    }
    expect(text).not.to.match(/error_responses_total\{code="NOT_FOUND"/);
  });

  it("labels Swagger UI's files as the docs page's route, and an unknown file under it as unmatched", async () => {
    const observer = new RequestObserver();
    const metrics = new GatewayMetrics({ contracts: () => 0, services: () => 0, instances: () => 0 }, observer.labels);
    observer.setOptions({ metrics });
    const app = express();
    mountDocsPage(app);
    const server = http.createServer((req, res) => observer.observe(req, res, app));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      for (const file of ['swagger-ui.css', 'nothing-here.js']) {
        const res = await fetch(`http://127.0.0.1:${port}${ASSETS_PATH}/${file}`);
        await res.arrayBuffer();
      }
      await new Promise((resolve) => setTimeout(resolve, 50)); // the answer is counted on the response's close
      const text = await metrics.registry.metrics();
      expect(text).to.contain(
        `contracts_gateway_http_requests_total{route="${ASSET_ROUTE}",method="GET",status="200"} 1\n`,
      );
      expect(text).to.contain('contracts_gateway_http_requests_total{route="unmatched",method="GET",status="404"} 1\n');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('metrics: the exposition format a scrape asks for', () => {
  it('serves OpenMetrics 1.0 where the Accept header weighs it at least as high as the text format', () => {
    const prometheus2 =
      'application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2';
    const prometheus3 =
      'application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1';
    for (const accept of [
      prometheus2,
      prometheus3,
      'application/openmetrics-text',
      'Application/OpenMetrics-Text; Version=1.0.0',
    ]) {
      expect(prefersOpenMetrics(accept), accept).to.equal(true);
    }
    for (const accept of [
      undefined,
      '',
      '*/*',
      'text/plain',
      'text/plain;version=0.0.4',
      // Only a version prom-client does not write, or weighed below the text format, or refused with q=0.
      'application/openmetrics-text;version=0.0.1',
      'application/openmetrics-text;q=0.2,text/plain;q=0.3',
      'application/openmetrics-text;q=0,*/*',
      'application/openmetrics-text;q=abc',
    ]) {
      expect(prefersOpenMetrics(accept), String(accept)).to.equal(false);
    }
  });

  it('keeps the text format whole after an OpenMetrics exposition', async () => {
    const metrics = new GatewayMetrics(
      { contracts: () => 0, services: () => 0, instances: () => 0 },
      new RouteLabels(),
    );
    metrics.httpAnswered('/x', 'GET', 200, 0.01);
    const before = (await metrics.exposition()).body;
    const open = await metrics.exposition(true);
    expect(open.contentType).to.equal('application/openmetrics-text; version=1.0.0; charset=utf-8');
    expect(open.body).to.contain('# TYPE contracts_gateway_http_requests counter\n');
    expect(open.body).to.contain('contracts_gateway_http_requests_total{route="/x",method="GET",status="200"} 1\n');
    const after = await metrics.exposition();
    expect(after.contentType).to.equal('text/plain; version=0.0.4; charset=utf-8');
    const shape = (text: string) =>
      text.split('\n').filter((l) => l.startsWith('# ') || l.startsWith('contracts_gateway_'));
    expect(shape(after.body)).to.deep.equal(shape(before));
  });
});
