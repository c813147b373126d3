import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';

const BIN = join(resolve(__dirname, '..', '..'), 'plugin', 'cli', 'contracts-gateway.js');

/** Runs the contracts-gateway bin; resolves with its exit status and output. */
function bin(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((r) => {
    const child = execFile(process.execPath, [BIN, ...args], (_err, stdout, stderr) =>
      r({ code: child.exitCode, output: `${stdout}${stderr}` }),
    );
  });
}

describe('the contracts-gateway bin', () => {
  it('lists conformance among its subcommands, and exits 64 without one or with one it does not have', async () => {
    for (const args of [[], ['nonsense']]) {
      const r = await bin(args);
      expect(r.code).to.equal(64);
      expect(r.output).to.include('contracts-gateway conformance --bus <amqp url> --service <name>');
    }
  });

  it('conformance: exits 64 with its usage on an unknown option or a missing --bus', async () => {
    const unknown = await bin(['conformance', '--bus', 'amqp://x', '--service', 's', '--colour']);
    expect(unknown.code).to.equal(64);
    expect(unknown.output).to.include('usage: contracts-gateway conformance --bus <amqp url> --service <name>');
    expect((await bin(['conformance', '--service', 's'])).code).to.equal(64);
  });
});
