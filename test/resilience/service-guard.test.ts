import { expect } from 'chai';
import { InProcessHub } from '../../plugin/bus/inprocess/hub';
import { InProcessTransport } from '../../plugin/bus/inprocess';
import type { Reply } from '../../plugin/bus/transport';
import { GatewayError } from '../../plugin/errors/gateway-error';
import { ServiceGuard } from '../../plugin/resilience/service-guard';
import { rejection, requestFor } from '../bus/conformance';
import { GatewayMetrics } from '../../plugin/observability/metrics';
import { RouteLabels } from '../../plugin/observability/route-label';
import { busOutcome } from '../../plugin/observability/bus-call';
import { circuitOpen, inMaintenance, overloaded } from '../../plugin/resilience/refusal';

const OK: Reply = { ok: true, result: { fine: true } };

/** A guard around an embedded bus with a fast service and one whose answers the test releases by hand. */
async function setUp(opts: { max?: number; threshold?: number; openSeconds?: number } = {}) {
  const hub = new InProcessHub();
  const bus = new InProcessTransport(hub);
  const services = new InProcessTransport(hub);
  await Promise.all([bus.start(), services.start()]);
  const held: Array<(reply: Reply) => void> = [];
  await services.serve('fast', async () => OK);
  await services.serve('held', () => new Promise<Reply>((resolve) => held.push(resolve)));
  await services.serve('refuses', async () => ({ ok: false, error: { code: 'SERVICE_UNAVAILABLE', status: 502 } }));
  const lines: string[] = [];
  const counted: string[] = [];
  const maintenance = new Map<string, number>();
  let now = 1_000_000;
  const guard = new ServiceGuard({
    maxInFlightPerService: opts.max ?? 2,
    circuitFailureThreshold: opts.threshold ?? 2,
    circuitOpenSeconds: opts.openSeconds ?? 10,
    maintenance: (service) => maintenance.get(service),
    log: { warn: (m) => lines.push(m), info: (m) => lines.push(m) },
    metrics: () => ({
      serviceRefused: (service, reason) => counted.push(`${service}:${reason}`),
      circuitTransition: (service, to) => counted.push(`${service}->${to}`),
    }),
    now: () => now,
  });
  const transport = guard.around(bus);
  return {
    guard,
    transport,
    held,
    lines,
    counted,
    maintenance,
    advance: (ms: number) => (now += ms),
    close: () => Promise.all([bus.close(), services.close()]),
  };
}

describe('the service guard (embedded bus)', () => {
  it('sheds a service at maxInFlightPerService at once, 503 with Retry-After, and not another service', async () => {
    const t = await setUp({ max: 2 });
    try {
      const waiting = [t.transport.request(requestFor('held'), 5000), t.transport.request(requestFor('held'), 5000)];
      const started = performance.now();
      const shed = await rejection(t.transport.request(requestFor('held'), 5000));
      expect(performance.now() - started).to.be.below(100);
      expect(shed.status).to.equal(503);
      expect(shed.code).to.equal('SERVICE_UNAVAILABLE');
      expect(shed.headers['Retry-After']).to.equal('1');
      expect(shed.extra).to.deep.equal({ retryAfter: 1, service: 'held' });
      expect(await t.transport.request(requestFor('fast'), 5000)).to.deep.equal(OK);
      expect(t.counted).to.deep.equal(['held:overload']);
      // One line when shedding starts, whatever the number of requests shed.
      await rejection(t.transport.request(requestFor('held'), 5000));
      expect(t.lines.filter((l) => l.includes('maxInFlightPerService'))).to.have.length(1);
      for (const release of t.held.splice(0)) release(OK);
      await Promise.all(waiting);
      expect(t.guard.inFlight('held')).to.equal(0);
      expect(t.lines.at(-1)).to.match(/^service held has 1 requests awaiting replies: no longer shedding$/);
      expect(await t.transport.request(requestFor('fast'), 5000)).to.deep.equal(OK);
    } finally {
      await t.close();
    }
  });

  it('opens the circuit on consecutive timeouts and then sends nothing until the trial', async () => {
    const t = await setUp({ threshold: 2, openSeconds: 10, max: 100 });
    try {
      for (let i = 0; i < 2; i++)
        expect((await rejection(t.transport.request(requestFor('held'), 20))).code).to.equal('TIMEOUT');
      const before = t.held.length;
      const started = performance.now();
      const refused = await rejection(t.transport.request(requestFor('held'), 5000));
      expect(performance.now() - started).to.be.below(100);
      expect(refused.status).to.equal(503);
      expect(refused.headers['Retry-After']).to.equal('10');
      expect(refused.extra).to.deep.equal({ retryAfter: 10, service: 'held' });
      expect(t.held.length, 'nothing reached the service').to.equal(before);
      expect(t.guard.status().circuits).to.deep.equal([{ service: 'held', state: 'open', retryAfterSeconds: 10 }]);
      expect(t.counted).to.deep.equal(['held->open', 'held:circuit_open']);
      // The trial goes through after circuitOpenSeconds; answered, it closes the circuit.
      t.advance(10_000);
      const trial = t.transport.request(requestFor('held'), 5000);
      expect((await rejection(t.transport.request(requestFor('held'), 5000))).headers['Retry-After']).to.equal('1');
      t.held.at(-1)?.(OK);
      expect(await trial).to.deep.equal(OK);
      expect(t.guard.status().circuits).to.deep.equal([]);
      expect(t.lines.filter((l) => l.startsWith('circuit of service held'))).to.have.length(3);
    } finally {
      for (const release of t.held) release(OK);
      await t.close();
    }
  });

  it('counts a passed deadline as a failure; no instance (503 at once) and an error a service replies, not', async () => {
    const t = await setUp({ threshold: 2 });
    try {
      for (let i = 0; i < 5; i++) {
        const reply = await t.transport.request(requestFor('refuses'), 5000);
        expect(reply.ok).to.equal(false);
        expect((await rejection(t.transport.request(requestFor('nobody'), 5000))).message).to.match(/No instance/);
      }
      expect(t.guard.status().circuits).to.deep.equal([]);
      for (let i = 0; i < 2; i++)
        expect((await rejection(t.transport.request(requestFor('held'), 20))).status).to.equal(504);
      expect(t.guard.status().circuits.map((c) => c.service)).to.deep.equal(['held']);
    } finally {
      for (const release of t.held) release(OK);
      await t.close();
    }
  });

  it('answers a service in maintenance 503 with its Retry-After and sends nothing', async () => {
    const t = await setUp();
    try {
      t.maintenance.set('held', 120);
      const refused = await rejection(t.transport.request(requestFor('held'), 5000));
      expect(refused).to.be.instanceOf(GatewayError);
      expect(refused.status).to.equal(503);
      expect(refused.headers['Retry-After']).to.equal('120');
      expect(refused.extra).to.deep.equal({ retryAfter: 120, service: 'held' });
      expect(t.held).to.have.length(0);
      expect(t.counted).to.deep.equal(['held:maintenance']);
      expect(await t.transport.request(requestFor('fast'), 5000)).to.deep.equal(OK);
    } finally {
      await t.close();
    }
  });

  it('passes everything else through to the transport it guards', async () => {
    const t = await setUp();
    try {
      expect(t.transport.kind).to.equal('inprocess');
      expect(t.transport.state()).to.equal('up');
      expect(t.transport.announcementsUnheard?.()).to.equal(undefined);
    } finally {
      await t.close();
    }
  });
});

describe('the guard in the metrics', () => {
  it('counts refusals by service and reason and circuit changes by state, and names them in the bus outcome', async () => {
    const metrics = new GatewayMetrics(
      { contracts: () => 0, services: () => 0, instances: () => 0 },
      new RouteLabels(),
    );
    metrics.serviceRefused('slow', 'overload');
    metrics.serviceRefused('slow', 'overload');
    metrics.serviceRefused('down', 'circuit_open');
    metrics.circuitTransition('down', 'open');
    const { body } = await metrics.exposition();
    expect(body).to.include('contracts_gateway_service_refusals_total{service="slow",reason="overload"} 2');
    expect(body).to.include('contracts_gateway_service_refusals_total{service="down",reason="circuit_open"} 1');
    expect(body).to.include('contracts_gateway_circuit_transitions_total{service="down",state="open"} 1');
    expect(busOutcome({ error: overloaded('slow') })).to.equal('overload');
    expect(busOutcome({ error: circuitOpen('down', 3) })).to.equal('circuit_open');
    expect(busOutcome({ error: inMaintenance('down', 3) })).to.equal('maintenance');
  });
});
