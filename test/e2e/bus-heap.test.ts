import { expect } from 'chai';
import { startGateway, eventually, type GatewayProcess } from '../support/gateway-process';
import { AMQP_URL } from '../support/env';
import { httpAs } from '../support/http';
import { roguePublisher, rogueContract, type RoguePublisher } from '../support/rogue';

const admin = httpAs(['admin:all', 'users:read']);

function wideSchema(properties: number): Record<string, unknown> {
  const props: Record<string, unknown> = {};
  for (let i = 0; i < properties; i += 1) props[`property${i}`] = { type: 'string', maxLength: 64 };
  return { type: 'object', properties: props };
}

/** `{"a":{"a":…}}` nested `depth` times, as raw text (no recursion to build it). */
function deepText(depth: number): string {
  return `${'{"a":'.repeat(depth)}{}${'}'.repeat(depth)}`;
}

/**
 * The image runs the gateway with its heap capped at 128 MB. No announcement, of any size or shape, may crash it or
 * stall it: a 1 MB schema with 13,400 properties used to end it with a fatal out-of-memory error.
 */
describe('announcements against a gateway with a 128 MB heap', function () {
  this.timeout(90_000);
  let gw: GatewayProcess;
  let rogue: RoguePublisher;

  before(async () => {
    gw = await startGateway({ BUS_URL: AMQP_URL, NODE_OPTIONS: '--max-old-space-size=128' });
    rogue = await roguePublisher(AMQP_URL, gw.prefix);
  });
  after(async () => {
    await rogue?.close();
    await gw?.stop();
  });

  /** The gateway is alive and answers, its users route included, each probe within a bound that a stall would pass. */
  async function stillServing(): Promise<void> {
    expect(gw.child.exitCode, gw.output().slice(-2000)).to.equal(null);
    for (let i = 0; i < 5; i += 1) {
      const res = await admin('GET', `${gw.baseUrl}/api/users`, { headers: { connection: 'close' } });
      expect(res.status).to.equal(200);
    }
  }

  it('survives 1 MB and 5 MB schemas (13,400 and 67,000 properties), dropped before parsing', async () => {
    for (const [name, properties] of [['one-mb', 13_400], ['five-mb', 67_000]] as const) {
      const service = `${name}-service`;
      const body = { service, instanceId: `${service}-1`, ttlMs: 60_000, contracts: [rogueContract('HugeCommand', service, { inputSchema: wideSchema(properties) })] };
      for (let i = 0; i < 5; i += 1) await rogue.publish(`announce.${service}`, body);
    }
    await eventually(async () => expect(gw.output()).to.match(/routing key announce\.five-mb-service\): \d+ bytes, over 262144/), 20_000);
    await stillServing();
  });

  it('survives schemas under the byte limit that are too wide or too deep, and many contracts', async () => {
    const wide = { service: 'wide-service', instanceId: 'w1', ttlMs: 60_000, contracts: [rogueContract('WideCommand', 'wide-service', { inputSchema: wideSchema(5_000) })] };
    await rogue.publish('announce.wide-service', wide);
    const deep = `{"service":"deep-service","instanceId":"d1","ttlMs":60000,"contracts":[{"messageType":"DeepCommand","targetService":"deep-service","requiredPermissions":[],"outputSchema":{},"inputSchema":${deepText(40_000)}}]}`;
    expect(deep.length).to.be.below(256 * 1024);
    await rogue.publish('announce.deep-service', Buffer.from(deep));
    const many = { service: 'many-service', instanceId: 'm1', ttlMs: 60_000, contracts: Array.from({ length: 1_000 }, (_, i) => rogueContract(`Many${i}Command`, 'many-service')) };
    await rogue.publish('announce.many-service', many);
    await eventually(async () => {
      const out = gw.output();
      expect(out).to.include('refused announcement from service wide-service instance w1: contracts[0] inputSchema has more than 4000 members (schemaMaxProperties)');
      expect(out).to.include('refused announcement from service deep-service instance d1: contracts[0] inputSchema nests deeper than 32 levels (schemaMaxDepth)');
      expect(out).to.include('refused announcement from service many-service instance m1: more than 200 contracts (announcementMaxContracts)');
    }, 20_000);
    await stillServing();
  });

  it('survives a burst of distinct services and instances up to the limits', async () => {
    for (let i = 0; i < 300; i += 1) {
      const service = `burst${i}-service`;
      await rogue.publish(`announce.${service}`, { service, instanceId: `${service}-1`, ttlMs: 60_000, contracts: [rogueContract(`Burst${i}Command`, service)] });
    }
    await eventually(async () => expect(gw.output()).to.include('(announcedServicesMax)'), 20_000);
    await stillServing();
  });
});
