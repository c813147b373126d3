import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startScriptProcess } from '../support/service-process';
import { killLeftOver, liveDescendants } from '../support/leak-check';

const ROOT = resolve(__dirname, '..', '..', '..');

/** Running, not ended: a killed process may stay a zombie until its parent reaps it. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The test run's own process hygiene (test/support/leak-check.ts, the spawners of test/support). */
describe('processes started by tests', function () {
  this.timeout(30_000);

  it('a spawner whose readiness times out leaves no process behind', async () => {
    const before = new Set(liveDescendants().map((p) => p.pid));
    const err = await startScriptProcess('test/harness/fixtures/never-ready', {}, 1500).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.match(/fixtures\/never-ready not ready in 1500 ms/);
    const left = liveDescendants().filter((p) => !before.has(p.pid));
    expect(left, JSON.stringify(left)).to.deep.equal([]);
  });

  it('the end-of-run check kills what is left, and names it with the line that started it', async () => {
    // A child whose parent (a shell) is killed too: /proc finds grandchildren the spawner never saw.
    const child = spawn('sh', ['-c', 'sleep 60 & wait'], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 300));
    const pids = liveDescendants(child.pid!)
      .map((p) => p.pid)
      .concat(child.pid!);
    expect(pids.length, 'sh and its sleep').to.equal(2);
    const left = await killLeftOver(200);
    const mine = left.filter((l) => l.includes(`pid ${child.pid}`));
    expect(mine, left.join('\n')).to.have.length(1);
    expect(mine[0]).to.match(
      /^sh -c sleep 60 & wait \(pid \d+, started at dist\/test\/harness\/test-processes\.test\.js:\d+\)$/,
    );
    expect(left.some((l) => l.startsWith('sleep 60'))).to.equal(true);
    await new Promise((r) => setTimeout(r, 200));
    expect(pids.filter(running), 'sh and the sleep it left orphaned').to.deep.equal([]);
  });
});

describe('a mocha run whose test leaves a process running', function () {
  this.timeout(60_000);

  it('fails at its end, naming the process and the line that started it, and does not wait for it', async () => {
    const mocha = join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
    const fixture = join(ROOT, 'dist', 'test', 'harness', 'fixtures', 'leaky.fixture.js');
    const started = Date.now();
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolveRun) => {
      let out = '';
      // What both configs set (checked below); the fixture alone, not the configs' spec.
      const args = [
        mocha,
        '--no-config',
        '--require',
        join(ROOT, 'dist', 'test', 'support', 'leak-check.js'),
        '--exit',
        fixture,
      ];
      const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      child.on('exit', (c) => resolveRun({ code: c, output: out }));
    });
    expect(code, output).to.not.equal(0);
    expect(Date.now() - started, 'well before the 120 s sleep ends').to.be.below(30_000);
    const named =
      /processes left running after the tests, killed now: sleep 120 \(pid (\d+), started at dist\/test\/harness\/fixtures\/leaky\.fixture\.js:\d+\)/.exec(
        output,
      );
    expect(named, output).to.not.equal(null);
    expect(output)
      .to.match(/1 passing/)
      .and.match(/1 failing/);
    expect(running(Number(named![1])), 'the sleep was killed').to.equal(false);
  });
});

describe('the mocha configs', () => {
  for (const file of ['.mocharc.cjs', '.mocharc.unit.cjs']) {
    it(`${file} loads the leak check and ends the run at its summary`, () => {
      const config = require(join(ROOT, file)) as { require?: string[]; exit?: boolean };
      expect(config.require).to.include('dist/test/support/leak-check.js');
      expect(config.exit).to.equal(true);
    });
  }
});
