import { rmSync } from 'node:fs';
import { AmqpTransport } from '../../plugin/bus/amqp';
import type { RunningService } from '../../sdk';
import { AMQP_URL } from './env';
import { startGateway, type GatewayProcess } from './gateway-process';

/** A gateway on RabbitMQ plus a transport on its bus prefix, for tests that announce services of their own. */
export interface GatewayWithBus {
  gw: GatewayProcess;
  transport: AmqpTransport;
  configDir: string;
  /** Services a test started; stopped after the suite. */
  running: RunningService[];
}

/** Registers the suite's before/after hooks; the fields are set once `before` has run. */
export function gatewayWithBus(env: Record<string, string>, makeConfigDir: () => string): GatewayWithBus {
  const fixture = { running: [] } as unknown as GatewayWithBus;
  before(async () => {
    fixture.configDir = makeConfigDir();
    fixture.gw = await startGateway({ BUS_URL: AMQP_URL, ...env }, { configDir: fixture.configDir });
    fixture.transport = new AmqpTransport(AMQP_URL, { prefix: fixture.gw.prefix });
    await fixture.transport.start();
  });
  after(async () => {
    for (const s of fixture.running) await s.stop();
    await fixture.transport?.close();
    await fixture.gw?.stop();
    if (fixture.configDir) rmSync(fixture.configDir, { recursive: true, force: true });
  });
  return fixture;
}
