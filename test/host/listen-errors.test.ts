import { expect } from 'chai';
import { resolve } from 'node:path';
import { run } from '../packaging/support';
import { CANNOT_LISTEN_EXIT_CODE } from '../../plugin/host/listen-errors';

const MODULE = resolve(__dirname, '..', '..', 'plugin', 'host', 'listen-errors.js');

/** A node process that watches listen errors, then listens twice on one port (the second with or without its own handler). */
function twoServers(ownHandler: boolean): ReturnType<typeof run> {
  const script = `
    require(${JSON.stringify(MODULE)}).reportListenErrors();
    const net = require('node:net');
    const a = net.createServer().listen(0, '127.0.0.1', () => {
      const b = net.createServer();
      ${ownHandler ? "b.on('error', (e) => { console.log('handled by its owner: ' + e.code); a.close(); });" : ''}
      b.listen(a.address().port, '127.0.0.1');
    });`;
  return run(process.execPath, ['-e', script], { timeoutMs: 10000 });
}

describe('listen errors', () => {
  it('a server nobody handles: one line naming the port, exit 69, no stack trace', async () => {
    const r = await twoServers(false);
    expect(r.code, r.output).to.equal(CANNOT_LISTEN_EXIT_CODE);
    expect(r.output.trim().split('\n')).to.have.length(1);
    expect(r.output).to.match(/^\[contracts\] cannot listen on port \d+ on 127\.0\.0\.1: it is already in use/);
    expect(r.output).not.to.match(/\n\s+at /);
  });

  it('a server whose owner handles its errors is left to its owner', async () => {
    const r = await twoServers(true);
    expect(r.code, r.output).to.equal(0);
    expect(r.output.trim()).to.equal('handled by its owner: EADDRINUSE');
  });
});
