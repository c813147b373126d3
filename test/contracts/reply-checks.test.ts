import { expect } from 'chai';
import { isSafeLocation, replyLocation, replyStatus } from '../../policies/contract-router/reply-checks';
import type { Contract } from '../../plugin/contracts/types';
import type { Logger } from '../../plugin/logger';
import { ReplyWarnings } from '../../plugin/contracts/reply-warnings';

function capture(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    debug: () => undefined,
    info: () => undefined,
    warn: (m) => lines.push(m),
    error: (m) => lines.push(m),
  };
}

const contract = (messageType: string): Contract =>
  ({
    messageType,
    targetService: 'widgets-service',
    inputSchema: {},
    outputSchema: {},
    requiredPermissions: [],
    http: { method: 'POST', paths: ['/api/widgets'] },
  }) as unknown as Contract;

describe("contract-router: a reply's Location and status", () => {
  it('passes a normalised path under /api/ as Location', () => {
    for (const ok of ['/api/widgets/w1', '/api/', '/api/a/b-c_d.e~f/%20x', '/api/widgets/w1/', '/api/file.v2'])
      expect(isSafeLocation(ok), ok).to.equal(true);
  });

  it('refuses dot segments (also percent-encoded), empty segments, other roots, hosts and queries', () => {
    for (const bad of [
      '/api/../../evil',
      '/api/./x',
      '/api/x/..',
      '/api/%2e%2e/evil',
      '/api/.%2E/evil',
      '/api//evil.example',
      '//evil.example/api/',
      '/apix/y',
      '/other',
      'https://evil.example/api/x',
      '/api/x?next=//evil',
      '/api/x\r\nSet-Cookie: a=1',
      '',
    ]) {
      expect(isSafeLocation(bad), bad).to.equal(false);
    }
  });

  it('drops an unsafe location and logs it once per contract', () => {
    const log = capture();
    const report = { log, replyWarnings: new ReplyWarnings() };
    const c = contract('CreateWidgetCommand');
    expect(replyLocation('/api/../../evil', c, report)).to.equal(undefined);
    expect(replyLocation('/api/../../evil', c, report)).to.equal(undefined);
    expect(replyLocation(42, c, report)).to.equal(undefined);
    expect(log.lines).to.have.length(1);
    expect(log.lines[0]).to.match(
      /widgets-service answered CreateWidgetCommand with a location .*\/api\/\.\.\/\.\.\/evil/,
    );
    expect(replyLocation('/api/../x', contract('CreateGadgetCommand'), report)).to.equal(undefined);
    expect(log.lines, 'another contract is reported too').to.have.length(2);
    expect(replyLocation('/api/widgets/w1', c, report)).to.equal('/api/widgets/w1');
    expect(replyLocation(undefined, c, report)).to.equal(undefined);
    expect(log.lines).to.have.length(2);
  });

  it('keeps a 2xx status and replaces any other, logged once per contract', () => {
    const log = capture();
    const report = { log, replyWarnings: new ReplyWarnings() };
    const c = contract('CreateWidgetCommand');
    expect(replyStatus(202, c, report)).to.equal(202);
    expect(replyStatus(undefined, c, report)).to.equal(undefined);
    expect(log.lines).to.deep.equal([]);
    for (const bad of [999, 302, 500, 200.5, '201'])
      expect(replyStatus(bad, c, report), String(bad)).to.equal(undefined);
    expect(log.lines).to.have.length(1);
    expect(log.lines[0]).to.match(
      /widgets-service answered CreateWidgetCommand with status 999, which is not a success status/,
    );
  });

  it('reports once per contract per runtime: a second runtime, with the same contract object, reports it again', () => {
    const log = capture();
    const c = contract('CreateWidgetCommand');
    const first = { log, replyWarnings: new ReplyWarnings() };
    const second = { log, replyWarnings: new ReplyWarnings() };
    replyLocation('/api/../evil', c, first);
    replyLocation('/api/../evil', c, first);
    expect(log.lines).to.have.length(1);
    replyLocation('/api/../evil', c, second);
    replyStatus(302, c, second);
    replyStatus(302, c, second);
    expect(log.lines).to.have.length(3);
    expect(log.lines[1]).to.contain('location');
    expect(log.lines[2]).to.contain('status 302');
  });
});
