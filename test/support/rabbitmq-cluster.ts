import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdirSync, mkdtempSync, openSync, closeSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './env';

/*
 * Three RabbitMQ nodes of a test's own, clustered, beside the machine's broker: each with its own config file (an
 * AMQP listener on a free port of 127.0.0.1, no plugins), node name, distribution port, and data and log folders
 * in a temp dir, all sharing one Erlang cookie (a HOME of their own). The machine's node (rabbit@<host>) is never
 * named: every rabbitmqctl call here goes to a node this fixture started.
 */

/** The folder of Debian's rabbitmq-server and rabbitmqctl (not the /usr/sbin wrappers, which switch user). */
export function rabbitmqBin(): string | undefined {
  const dirs = ['/usr/lib/rabbitmq/bin', ...(process.env.PATH ?? '').split(delimiter)];
  for (const dir of dirs) {
    try {
      accessSync(join(dir, 'rabbitmq-server'), constants.X_OK);
      accessSync(join(dir, 'rabbitmqctl'), constants.X_OK);
      return dir;
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface ClusterNode {
  readonly name: string;
  readonly amqpPort: number;
  readonly distPort: number;
  /** amqp://guest:guest@127.0.0.1:<port> */
  readonly url: string;
  child: ChildProcess | null;
}

/** Runs a command; resolves with its stdout, rejects with its output on a non-zero exit or after `timeoutMs`. */
function run(file: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env, timeout: timeoutMs, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${args.join(' ')}: ${err.message}\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class RabbitCluster {
  readonly nodes: ClusterNode[] = [];
  private readonly dir: string;
  private readonly home: string;
  private readonly runId = randomBytes(4).toString('hex');
  /** Whether an epmd answered before the first node started (then it is the machine's, and stays). */
  private epmdWasRunning = true;

  private constructor(
    private readonly bin: string,
    private readonly config: string,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'contracts-cluster-'));
    this.home = join(this.dir, 'home');
    mkdirSync(this.home);
    writeFileSync(join(this.home, '.erlang.cookie'), `CT${randomBytes(16).toString('hex').toUpperCase()}`, {
      mode: 0o400,
    });
  }

  /**
   * Starts `size` nodes and clusters them (the others join the first); `config` is added to each node's
   * rabbitmq.conf (e.g. `load_definitions = FILE`). On any failure everything it started is stopped and its folder
   * removed before the error goes up.
   */
  static async start(bin: string, size = 3, startTimeoutMs = 90_000, config = ''): Promise<RabbitCluster> {
    const cluster = new RabbitCluster(bin, config);
    try {
      cluster.epmdWasRunning = await run('epmd', ['-names'], process.env, 5000).then(
        () => true,
        () => false,
      );
      for (let i = 1; i <= size; i++) {
        const amqpPort = await freePort();
        const distPort = await freePort();
        cluster.nodes.push({
          name: `ct${i}-${cluster.runId}@localhost`,
          amqpPort,
          distPort,
          url: `amqp://guest:guest@127.0.0.1:${amqpPort}`,
          child: null,
        });
      }
      for (const node of cluster.nodes) cluster.spawnNode(node);
      await Promise.all(cluster.nodes.map((node) => cluster.awaitStartup(node, startTimeoutMs)));
      const [first, ...others] = cluster.nodes;
      for (const node of others) {
        await cluster.ctl(node, ['stop_app']);
        await cluster.ctl(node, ['join_cluster', first.name]);
        await cluster.ctl(node, ['start_app']);
      }
      await cluster.awaitRunning(cluster.nodes, startTimeoutMs);
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  /** BUS_URL for the whole cluster: every node, comma-separated. */
  busUrl(): string {
    return this.nodes.map((n) => n.url).join(',');
  }

  /** The environment of a node (or of rabbitmqctl talking to one): nothing of the machine's own configuration. */
  private env(node: ClusterNode): NodeJS.ProcessEnv {
    const base = join(this.dir, node.name.split('@')[0]);
    return {
      PATH: process.env.PATH,
      HOME: this.home,
      LANG: 'C.UTF-8',
      RABBITMQ_NODENAME: node.name,
      RABBITMQ_CONF_ENV_FILE: join(base, 'rabbitmq-env.conf'),
      RABBITMQ_CONFIG_FILE: join(base, 'rabbitmq.conf'),
      RABBITMQ_ADVANCED_CONFIG_FILE: join(base, 'advanced.config'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(base, 'enabled_plugins'),
      RABBITMQ_DIST_PORT: String(node.distPort),
      RABBITMQ_MNESIA_BASE: join(base, 'mnesia'),
      RABBITMQ_LOG_BASE: join(base, 'log'),
      ERL_EPMD_ADDRESS: '127.0.0.1',
      RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
    };
  }

  private spawnNode(node: ClusterNode): void {
    const base = join(this.dir, node.name.split('@')[0]);
    mkdirSync(join(base, 'mnesia'), { recursive: true });
    mkdirSync(join(base, 'log'), { recursive: true });
    writeFileSync(join(base, 'rabbitmq-env.conf'), '');
    writeFileSync(join(base, 'enabled_plugins'), '[].\n');
    writeFileSync(
      join(base, 'rabbitmq.conf'),
      // A frozen peer is declared down after 10–12.5 s rather than 60–75 s (what the freeze test measures
      // around). autoheal, not pause_minority: a node frozen and resumed does not see itself cut off (it reconnects
      // before it could pause), so under pause_minority the cluster stayed partitioned; autoheal restarts the side
      // with fewer clients once they meet again (docs/operations.md, "Losing a node").
      `listeners.tcp.local = 127.0.0.1:${node.amqpPort}
loopback_users = none
net_ticktime = 10
cluster_partition_handling = autoheal
${this.config}`,
    );
    const out = openSync(join(base, 'console.log'), 'a');
    try {
      // A process group of its own: kill(-pid) takes the Erlang VM and its helper processes at once.
      node.child = spawn(join(this.bin, 'rabbitmq-server'), [], {
        env: this.env(node),
        detached: true,
        stdio: ['ignore', out, out],
      });
    } finally {
      closeSync(out);
    }
    node.child.on('error', () => undefined);
  }

  /** rabbitmqctl -n <node> … (one of this cluster's nodes, never the machine's). */
  ctl(node: ClusterNode, args: string[], timeoutMs = 60_000): Promise<string> {
    return run(join(this.bin, 'rabbitmqctl'), ['-n', node.name, ...args], this.env(node), timeoutMs);
  }

  private async awaitStartup(node: ClusterNode, timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (node.child?.exitCode !== null || node.child?.signalCode !== null)
        throw new Error(`${node.name} exited while starting (see ${this.dir})`);
      try {
        await this.ctl(node, ['await_startup', '--timeout', '10'], 20_000);
        return;
      } catch (err) {
        if (Date.now() > until) throw err;
        await sleep(1000);
      }
    }
  }

  /** The nodes the cluster reports running, as `witness` sees it. */
  async runningNodes(witness: ClusterNode): Promise<string[]> {
    const status = JSON.parse(await this.ctl(witness, ['cluster_status', '--formatter', 'json'])) as {
      running_nodes?: string[];
    };
    return status.running_nodes ?? [];
  }

  /** Waits until every one of `nodes` runs in the cluster, as a running node of it sees it. */
  async awaitRunning(nodes: ClusterNode[], timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const witness =
        this.nodes.find((n) => n.child && n.child.exitCode === null && n.child.signalCode === null) ?? this.nodes[0];
      const running = await this.runningNodes(witness).catch((): string[] => []);
      if (nodes.every((n) => running.includes(n.name))) return;
      if (Date.now() > until)
        throw new Error(`nodes not running in the cluster after ${timeoutMs} ms: ${running.join(', ')}`);
      await sleep(1000);
    }
  }

  /** How many client connections each node holds (by node name; told apart by the AMQP port they came in on). */
  async connectionsByNode(witness: ClusterNode): Promise<Map<string, number>> {
    const rows = JSON.parse(await this.ctl(witness, ['list_connections', 'port', '--formatter', 'json'])) as Array<{
      port: number;
    }>;
    const counts = new Map<string, number>();
    for (const { port } of rows) {
      const node = this.nodes.find((n) => n.amqpPort === Number(port));
      if (node) counts.set(node.name, (counts.get(node.name) ?? 0) + 1);
    }
    return counts;
  }

  /** kill -9 of the node's whole process group: the VM dies at once, as in a crash. */
  async kill(node: ClusterNode): Promise<void> {
    const child = node.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
    await exited;
  }

  /** SIGSTOP of the node's whole process group: it stops answering, its sockets stay open (a stalled VM). */
  freeze(node: ClusterNode): void {
    this.signal(node, 'SIGSTOP');
  }

  /** SIGCONT: a frozen node goes on where it stopped. */
  resume(node: ClusterNode): void {
    this.signal(node, 'SIGCONT');
  }

  private signal(node: ClusterNode, signal: NodeJS.Signals): void {
    const child = node.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  }

  /** Starts a node again on its own data: it rejoins the cluster by itself. */
  restart(node: ClusterNode, timeoutMs = 90_000): Promise<void> {
    this.spawnNode(node);
    return this.awaitStartup(node, timeoutMs);
  }

  /** Stops every node (kill -9: their data goes with the folder), an epmd this run started, and removes the folder. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => this.kill(node)));
    if (!this.epmdWasRunning) await run('epmd', ['-kill'], process.env, 5000).catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
