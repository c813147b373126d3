import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import * as k8s from '@kubernetes/client-node';

const ROOT = resolve(__dirname, '..', '..', '..');
const MANIFESTS = join(ROOT, 'deploy', 'kubernetes');
const UNHARDENED = join(ROOT, 'test', 'deploy', 'fixtures', 'unhardened-sidecar.yaml');

/** A parsed manifest object: its shape is what the checks below look at. */
type Obj = Record<string, any>;

function documents(file: string): Obj[] {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  if (!Array.isArray(docs)) return [];
  return docs
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]!.message}`);
      return d.toJS() as Obj;
    })
    .filter((o) => o !== null);
}

/** The field list of each API type, as @kubernetes/client-node generates it from the Kubernetes OpenAPI spec. */
const API_TYPES = k8s as unknown as Record<
  string,
  { attributeTypeMap?: ReadonlyArray<{ baseName: string; type: string }> }
>;

/**
 * The fields of `value` that its API type `type` does not have, as paths (`.spec.template...runAsNonRot`). The API
 * server drops such a field, or refuses it under strict field validation; a misspelt one (runAsNonRot) silently
 * loses the setting. Arrays and maps are walked; a scalar, IntOrString or a free-form field has no fields to check.
 */
function unknownFields(value: unknown, type: string, path: string): string[] {
  if (value === null || typeof value !== 'object') return [];
  const array = /^Array<(.+)>$/.exec(type);
  if (array) return Array.isArray(value) ? value.flatMap((v, i) => unknownFields(v, array[1]!, `${path}[${i}]`)) : [];
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  const entries = Object.entries(value as Obj);
  if (map) return entries.flatMap(([k, v]) => unknownFields(v, map[1]!, `${path}.${k}`));
  const fields = API_TYPES[type]?.attributeTypeMap;
  if (!fields || Array.isArray(value)) return [];
  const known = new Map(fields.map((f) => [f.baseName, f.type]));
  return entries.flatMap(([k, v]) => {
    const fieldType = known.get(k);
    return fieldType === undefined ? [`${path}.${k}`] : unknownFields(v, fieldType, `${path}.${k}`);
  });
}

/**
 * The object checked against the Kubernetes API schema of its apiVersion and kind, as kubernetes-models ships
 * them (no download): an unknown kind, a wrong type or a malformed quantity throws. Then every field must be one the
 * API type has (@kubernetes/client-node's types, Kubernetes 1.36): an unknown or misspelt field throws.
 */
function validateSchema(obj: Obj): void {
  const [group, version] = String(obj.apiVersion).includes('/')
    ? String(obj.apiVersion).split('/')
    : [undefined, String(obj.apiVersion)];
  const module = `kubernetes-models/${group ? `${group}/` : ''}${version}/${obj.kind}`;
  const Model = (require(module) as Record<string, new (data: Obj) => { validate(): void }>)[obj.kind];
  if (!Model) throw new Error(`no schema for ${obj.apiVersion} ${obj.kind}`);
  new Model(obj).validate();
  // apps/v1 Deployment is V1Deployment, autoscaling/v2 HorizontalPodAutoscaler V2HorizontalPodAutoscaler.
  const type = `${version![0]!.toUpperCase()}${version!.slice(1)}${obj.kind}`;
  if (!API_TYPES[type]?.attributeTypeMap) throw new Error(`no field list for ${obj.apiVersion} ${obj.kind}`);
  const unknown = unknownFields(obj, type, '');
  if (unknown.length > 0) throw new Error(`unknown fields: ${unknown.join(', ')}`);
}

const POD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job']);
const SAFE_VOLUMES = [
  'configMap',
  'emptyDir',
  'secret',
  'persistentVolumeClaim',
  'projected',
  'downwardAPI',
  'csi',
  'ephemeral',
];
/** Values that must come from a Secret, never be written in the manifest. */
const SECRET_ENV = /SECRET|PASSWORD|KEY|TOKEN|^DATABASE_URL$|^BUS_URL$/;

/**
 * What keeps a workload from running as written: the "restricted" Pod Security Standard (runAsNonRoot, no privilege
 * escalation, capabilities dropped, seccomp RuntimeDefault) plus this project's rules (read-only root, probes and
 * resources on every container, secrets from a Secret, reference services on PostgreSQL when replicated, the
 * gateway's metrics port declared). One line per problem.
 */
function problems(obj: Obj): string[] {
  if (!POD_KINDS.has(obj.kind)) return [];
  const found: string[] = [];
  const name = `${obj.kind}/${obj.metadata?.name}`;
  const pod = obj.spec?.template?.spec ?? {};
  const podSec = pod.securityContext ?? {};
  for (const host of ['hostNetwork', 'hostPID', 'hostIPC']) if (pod[host]) found.push(`${name}: ${host}`);
  for (const v of pod.volumes ?? []) {
    if (!SAFE_VOLUMES.some((t) => t in v)) found.push(`${name}: volume ${v.name} is not of a restricted type`);
    // Without a limit an emptyDir fills the node's disk, and the kubelet evicts whatever else runs there.
    if ('emptyDir' in v && !v.emptyDir?.sizeLimit) found.push(`${name}: emptyDir ${v.name} has no sizeLimit`);
  }
  const containers: Obj[] = [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
  for (const c of containers) {
    const where = `${name} container ${c.name}`;
    const sec = c.securityContext ?? {};
    if ((sec.runAsNonRoot ?? podSec.runAsNonRoot) !== true) found.push(`${where}: runAsNonRoot is not true`);
    if ((sec.runAsUser ?? podSec.runAsUser) === 0) found.push(`${where}: runAsUser 0`);
    if (sec.allowPrivilegeEscalation !== false) found.push(`${where}: allowPrivilegeEscalation is not false`);
    if (!(sec.capabilities?.drop ?? []).includes('ALL')) found.push(`${where}: capabilities.drop lacks ALL`);
    if ((sec.capabilities?.add ?? []).some((cap: string) => cap !== 'NET_BIND_SERVICE'))
      found.push(`${where}: adds capabilities`);
    if (sec.privileged) found.push(`${where}: privileged`);
    const seccomp = (sec.seccompProfile ?? podSec.seccompProfile)?.type;
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost')
      found.push(`${where}: seccompProfile is not RuntimeDefault`);
    if (sec.readOnlyRootFilesystem !== true) found.push(`${where}: readOnlyRootFilesystem is not true`);
    if (!c.livenessProbe) found.push(`${where}: no livenessProbe`);
    if (!c.readinessProbe) found.push(`${where}: no readinessProbe`);
    for (const kind of ['requests', 'limits']) {
      for (const r of ['cpu', 'memory'])
        if (!c.resources?.[kind]?.[r]) found.push(`${where}: no resources.${kind}.${r}`);
    }
    for (const p of c.ports ?? []) if (p.hostPort) found.push(`${where}: hostPort ${p.hostPort}`);
    const env = new Map<string, Obj>((c.env ?? []).map((e: Obj) => [e.name, e]));
    for (const [key, e] of env)
      if (SECRET_ENV.test(key) && 'value' in e) found.push(`${where}: ${key} is a literal value, not from a Secret`);
    if (String(c.image).includes('reference-services') && (obj.spec.replicas ?? 1) > 1 && !env.has('DATABASE_URL')) {
      found.push(`${where}: ${obj.spec.replicas} replicas without DATABASE_URL, each with a database of its own`);
    }
    if (String(c.image).includes('contracts-gateway')) {
      const metrics = env.get('METRICS_PORT')?.value;
      if (!metrics) found.push(`${where}: no METRICS_PORT`);
      else if (!(c.ports ?? []).some((p: Obj) => String(p.containerPort) === String(metrics)))
        found.push(`${where}: metrics port ${metrics} not declared`);
      for (const key of ['EG_CIPHER_KEY', 'EG_SESSION_SECRET', 'JWT_SECRET'])
        if (!env.get(key)?.valueFrom?.secretKeyRef) found.push(`${where}: ${key} not from a Secret`);
    }
    if (sec.readOnlyRootFilesystem === true && !(c.volumeMounts ?? []).some((m: Obj) => m.mountPath === '/tmp'))
      found.push(`${where}: read-only root without a writable /tmp`);
  }
  return found;
}

/** The workloads an HPA of the same file scales that set `replicas` (every kubectl apply would put it back). */
function replicasUnderHpa(objects: Obj[]): string[] {
  const scaled = objects
    .filter((o) => o.kind === 'HorizontalPodAutoscaler')
    .map((h) => `${h.spec.scaleTargetRef.kind}/${h.spec.scaleTargetRef.name}`);
  return objects
    .filter((o) => scaled.includes(`${o.kind}/${o.metadata?.name}`) && o.spec?.replicas !== undefined)
    .map((o) => `${o.kind}/${o.metadata.name}: replicas ${o.spec.replicas} under an HPA`);
}

/** Whether a label selector (matchLabels only: anything else is refused, not guessed at) selects `labels`. */
function selects(selector: Obj | undefined, labels: Record<string, string>): boolean {
  if (selector === undefined) return false;
  if (Object.keys(selector).some((k) => k !== 'matchLabels'))
    throw new Error(`unsupported selector ${JSON.stringify(selector)}`);
  return Object.entries((selector.matchLabels ?? {}) as Record<string, string>).every(([k, v]) => labels[k] === v);
}

/** A port of a pod: its number, and its name when the container names it. */
interface PodPort {
  number: number;
  name?: string;
}

/** Whether a rule of a NetworkPolicy (its `ports`, none meaning all) takes in `port`. */
function ruleTakes(rule: Obj, port: PodPort): boolean {
  const ports = (rule.ports ?? []) as Obj[];
  return (
    ports.length === 0 ||
    ports.some((p) =>
      p.port === undefined
        ? true
        : typeof p.port === 'number'
          ? port.number >= p.port && port.number <= (p.endPort ?? p.port)
          : p.port === port.name,
    )
  );
}

/** The namespace the cluster's Prometheus runs in: the only one that may read the metrics. */
const MONITORING = 'monitoring';

/** What a workload needs, by the environment its containers get, and the port that service listens on. */
const BACKENDS = [
  { name: 'rabbitmq', env: 'BUS_URL', port: 5672 },
  { name: 'postgresql', env: 'DATABASE_URL', port: 5432 },
  { name: 'redis', env: 'REDIS_HOST', port: 6379 },
] as const;

/**
 * What the NetworkPolicies of a file let through that they should not, or keep out that a workload needs: every
 * workload is under an ingress policy; its metrics port (METRICS_PORT) is open to the namespace "monitoring" only;
 * RabbitMQ, PostgreSQL and Redis (pods labelled app.kubernetes.io/name) take their port only from the workloads whose
 * environment names them (and from their own pods), and each of those workloads may reach them. One line per problem.
 */
function networkProblems(objects: Obj[]): string[] {
  const found: string[] = [];
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
  const workloads = objects
    .filter((o) => POD_KINDS.has(o.kind))
    .map((o) => {
      const containers = (o.spec.template.spec.containers ?? []) as Obj[];
      const env = containers.flatMap((c) => (c.env ?? []) as Obj[]);
      return {
        name: `${o.kind}/${o.metadata.name}`,
        labels: (o.spec.template.metadata?.labels ?? {}) as Record<string, string>,
        env: new Map(env.map((e) => [String(e.name), e])),
        ports: containers.flatMap((c) => (c.ports ?? []) as Obj[]),
      };
    });
  const over = (labels: Record<string, string>, type: string) =>
    policies.filter((p) => selects(p.spec.podSelector, labels) && (p.spec.policyTypes ?? ['Ingress']).includes(type));
  for (const w of workloads) {
    const ingress = over(w.labels, 'Ingress');
    if (ingress.length === 0) found.push(`${w.name}: no NetworkPolicy on its ingress`);
    const metrics = w.env.get('METRICS_PORT')?.value;
    if (metrics !== undefined) {
      const number = Number(metrics);
      const port: PodPort = { number, name: w.ports.find((p) => p.containerPort === number)?.name };
      for (const rule of ingress.flatMap((p) => (p.spec.ingress ?? []) as Obj[]).filter((r) => ruleTakes(r, port))) {
        const from = (rule.from ?? []) as Obj[];
        const open =
          from.length === 0 ||
          from.some((peer) => !selects(peer.namespaceSelector, { 'kubernetes.io/metadata.name': MONITORING }));
        if (open) found.push(`${w.name}: metrics port ${number} open beyond the namespace ${MONITORING}`);
      }
    }
    for (const b of BACKENDS) {
      if (!w.env.has(b.env)) continue;
      const egress = over(w.labels, 'Egress');
      // Policies add up: one that lets the port out is enough; none on its egress lets everything out.
      const reaches =
        egress.length === 0 ||
        egress.some((p) => ((p.spec.egress ?? []) as Obj[]).some((r) => ruleTakes(r, { number: b.port })));
      if (!reaches) found.push(`${w.name}: its egress does not reach ${b.name} (${b.port})`);
    }
  }
  for (const b of BACKENDS) {
    const users = workloads.filter((w) => w.env.has(b.env));
    if (users.length === 0) continue;
    const own = { 'app.kubernetes.io/name': b.name };
    const guards = over(own, 'Ingress');
    if (guards.length === 0) found.push(`${b.name}: no NetworkPolicy on its ingress`);
    const rules = guards
      .flatMap((p) => (p.spec.ingress ?? []) as Obj[])
      .filter((r) => ruleTakes(r, { number: b.port }));
    for (const rule of rules) {
      const from = (rule.from ?? []) as Obj[];
      if (from.length === 0) found.push(`${b.name}: port ${b.port} open to every pod`);
      for (const peer of from) {
        // A peer is pods of this namespace named by their labels (an empty selector is every pod): the backend's
        // own, or workloads of this file that all use it.
        const labels = (peer.podSelector?.matchLabels ?? {}) as Record<string, string>;
        const named =
          peer.namespaceSelector === undefined && peer.ipBlock === undefined && Object.keys(labels).length > 0;
        const matched = workloads.filter((w) => selects(peer.podSelector, w.labels));
        const needed =
          named &&
          (labels['app.kubernetes.io/name'] === b.name ||
            (matched.length > 0 && matched.every((w) => w.env.has(b.env))));
        if (!needed) found.push(`${b.name}: port ${b.port} open to ${JSON.stringify(peer)}, which does not use it`);
      }
    }
    for (const w of users) {
      const admitted = rules.some((r) => ((r.from ?? []) as Obj[]).some((peer) => selects(peer.podSelector, w.labels)));
      if (!admitted) found.push(`${b.name}: ${w.name} needs port ${b.port} and is not let in`);
    }
  }
  return found;
}

describe('deploy/kubernetes', () => {
  const files = readdirSync(MANIFESTS).filter((f) => /\.ya?ml$/.test(f));

  it('holds manifests', () => expect(files).to.not.be.empty);

  for (const file of files) {
    describe(file, () => {
      const objects = documents(join(MANIFESTS, file));

      it('every object is valid against the Kubernetes schema of its kind', () => {
        expect(objects).to.not.be.empty;
        for (const obj of objects)
          expect(() => validateSchema(obj), `${obj.kind}/${obj.metadata?.name}`).to.not.throw();
      });

      it('every workload runs under the restricted Pod Security profile, with probes, resources and its secrets from a Secret', () => {
        expect(objects.flatMap(problems)).to.deep.equal([]);
      });

      it('no workload an HPA scales sets replicas', () => {
        expect(replicasUnderHpa(objects)).to.deep.equal([]);
      });

      it('NetworkPolicies: metrics from the monitoring namespace only; RabbitMQ, PostgreSQL, Redis from their users only', () => {
        expect(objects.filter((o) => o.kind === 'NetworkPolicy')).to.not.be.empty;
        expect(networkProblems(objects)).to.deep.equal([]);
      });

      it('every Secret it reads is named in its instructions (kubectl create secret)', () => {
        const text = readFileSync(join(MANIFESTS, file), 'utf8');
        const refs = objects
          .flatMap((o) => JSON.stringify(o).match(/"secretKeyRef":\{[^}]*\}/g) ?? [])
          .map((r) => JSON.parse(`{${r}}`).secretKeyRef as Obj);
        for (const ref of refs) expect(text, `${ref.name} ${ref.key}`).to.include(`--from-literal=${ref.key}=`);
      });
    });
  }

  it('scaled.yaml: the gateway alone, counted by a CPU autoscaler, with a PodDisruptionBudget; services on quorum queues of an external cluster', () => {
    const objects = documents(join(MANIFESTS, 'scaled.yaml'));
    const of = (kind: string) => objects.filter((o) => o.kind === kind);
    const gateway = of('Deployment').find((d) =>
      d.spec.template.spec.containers.some((c: Obj) => String(c.image).includes('contracts-gateway')),
    )!;
    expect(gateway, 'a gateway Deployment').to.not.equal(undefined);
    expect(gateway.spec.template.spec.containers, 'the gateway alone in its pod').to.have.length(1);
    expect(gateway.spec, 'the HPA owns the count').not.to.have.property('replicas');
    const hpa = of('HorizontalPodAutoscaler').find(
      (h) => h.spec.scaleTargetRef.kind === 'Deployment' && h.spec.scaleTargetRef.name === gateway.metadata.name,
    );
    expect(hpa, 'an HPA on the gateway').to.not.equal(undefined);
    expect(hpa!.spec.minReplicas).to.be.at.least(2);
    const labels = gateway.spec.template.metadata.labels as Record<string, string>;
    const selects = (selector: Obj) =>
      Object.entries(selector.matchLabels as Record<string, string>).every(([k, v]) => labels[k] === v);
    const pdb = of('PodDisruptionBudget').find((p) => selects(p.spec.selector));
    expect(pdb, 'a PodDisruptionBudget over the gateway').to.not.equal(undefined);
    expect(pdb!.spec.maxUnavailable ?? hpa!.spec.minReplicas - pdb!.spec.minAvailable).to.be.below(
      hpa!.spec.minReplicas,
    );
    expect(hpa!.spec.metrics.map((m: Obj) => m.resource?.name)).to.include('cpu');
    const container = gateway.spec.template.spec.containers[0];
    expect(container.resources.requests.cpu, 'the HPA needs a CPU request').to.be.a('string');
    const env = (c: Obj) => new Map<string, Obj>((c.env ?? []).map((e: Obj) => [e.name, e]));
    expect(env(container).get('EG_DB_EMULATE')?.value, 'replicas share Redis').to.equal('false');
    // RabbitMQ is external: no broker workload here, and every process gets BUS_URL (the node list) from the Secret.
    const images = objects.flatMap((o) => o.spec?.template?.spec?.containers ?? []).map((c: Obj) => String(c.image));
    expect(images.filter((image) => /rabbitmq/i.test(image))).to.deep.equal([]);
    const text = readFileSync(join(MANIFESTS, 'scaled.yaml'), 'utf8');
    expect(text).to.match(/--from-literal=BUS_URL=amqp:\/\/[^,\s]+,amqp:\/\/[^,\s]+,amqp:\/\/\S+/);
    const services = of('Deployment').filter((d) => d !== gateway);
    expect(services).to.not.be.empty;
    for (const d of services)
      for (const c of d.spec.template.spec.containers)
        expect(env(c).get('BUS_QUEUE_TYPE')?.value, `${d.metadata.name}`).to.equal('quorum');
  });

  it('the schema check refuses what the API server would (a wrong type, a malformed quantity)', () => {
    const deployment = documents(join(MANIFESTS, 'gateway-sidecar.yaml')).find((o) => o.kind === 'Deployment')!;
    const badQuantity = structuredClone(deployment);
    badQuantity.spec.template.spec.containers[0].resources.limits.memory = 'lots';
    expect(() => validateSchema(badQuantity)).to.throw(/memory/);
    const badType = structuredClone(deployment);
    badType.spec.template.spec.containers[0].securityContext.runAsNonRoot = 'yes';
    expect(() => validateSchema(badType)).to.throw(/runAsNonRoot must be boolean/);
  });

  it('the schema check refuses a field the API does not have (runAsNonRot, sizeLimt, a misplaced one)', () => {
    const deployment = documents(join(MANIFESTS, 'gateway-sidecar.yaml')).find((o) => o.kind === 'Deployment')!;
    const misspelt = structuredClone(deployment);
    misspelt.spec.template.spec.containers[0].securityContext.runAsNonRot = true;
    expect(() => validateSchema(misspelt)).to.throw(
      'unknown fields: .spec.template.spec.containers[0].securityContext.runAsNonRot',
    );
    const inVolume = structuredClone(deployment);
    inVolume.spec.template.spec.volumes[1].emptyDir.sizeLimt = '1Gi';
    expect(() => validateSchema(inVolume)).to.throw('unknown fields: .spec.template.spec.volumes[1].emptyDir.sizeLimt');
    // A real field one level too high: the pod's spec has no readOnlyRootFilesystem.
    const misplaced = structuredClone(deployment);
    misplaced.spec.template.spec.readOnlyRootFilesystem = true;
    expect(() => validateSchema(misplaced)).to.throw('unknown fields: .spec.template.spec.readOnlyRootFilesystem');
    // Labels, annotations and a ConfigMap's data are maps: any key is theirs.
    const labelled = structuredClone(deployment);
    labelled.metadata.labels = { 'anything.example.com/goes': 'yes' };
    expect(() => validateSchema(labelled)).to.not.throw();
    const policy = documents(join(MANIFESTS, 'scaled.yaml')).find((o) => o.kind === 'NetworkPolicy')!;
    const badPolicy = structuredClone(policy);
    badPolicy.spec.ingress[1].form = badPolicy.spec.ingress[1].from;
    expect(() => validateSchema(badPolicy)).to.throw('unknown fields: .spec.ingress[1].form');
  });

  it('the HPA check finds a count written under an autoscaler', () => {
    const objects = documents(join(MANIFESTS, 'scaled.yaml'));
    objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'contracts-gateway')!.spec.replicas = 3;
    expect(replicasUnderHpa(objects)).to.deep.equal(['Deployment/contracts-gateway: replicas 3 under an HPA']);
  });

  it('the network check finds open metrics, a backend open to a workload that does not use it, and a user kept out', () => {
    const scaled = () => documents(join(MANIFESTS, 'scaled.yaml'));
    const policy = (objects: Obj[], name: string) =>
      objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === name)!;

    const openMetrics = scaled();
    delete policy(openMetrics, 'contracts-gateway').spec.ingress[1].from;
    expect(networkProblems(openMetrics)).to.deep.equal([
      'Deployment/contracts-gateway: metrics port 9464 open beyond the namespace monitoring',
    ]);
    // A rule with no ports takes every port, the metrics one too.
    const allPorts = scaled();
    delete policy(allPorts, 'contracts-gateway').spec.ingress[0].ports;
    expect(networkProblems(allPorts)).to.deep.equal([
      'Deployment/contracts-gateway: metrics port 9464 open beyond the namespace monitoring',
    ]);

    const redisToServices = scaled();
    policy(redisToServices, 'contracts-redis').spec.ingress[0].from.push({
      podSelector: { matchLabels: { app: 'reference-services' } },
    });
    expect(networkProblems(redisToServices)).to.deep.equal([
      'redis: port 6379 open to {"podSelector":{"matchLabels":{"app":"reference-services"}}}, which does not use it',
    ]);
    const everyPod = scaled();
    policy(everyPod, 'contracts-postgresql').spec.ingress[0].from = [{ podSelector: {} }];
    expect(networkProblems(everyPod)).to.deep.equal([
      'postgresql: port 5432 open to {"podSelector":{}}, which does not use it',
    ]);

    const keptOut = scaled();
    policy(keptOut, 'contracts-rabbitmq').spec.ingress[0].from.pop();
    policy(keptOut, 'reference-services').spec.egress[1].ports.splice(0, 2);
    expect(networkProblems(keptOut)).to.deep.equal([
      'Deployment/reference-services: its egress does not reach rabbitmq (5672)',
      'rabbitmq: Deployment/reference-services needs port 5672 and is not let in',
    ]);

    const unguarded = scaled().filter((o) => o.kind !== 'NetworkPolicy');
    expect(networkProblems(unguarded)).to.include.members([
      'Deployment/contracts-gateway: no NetworkPolicy on its ingress',
      'rabbitmq: no NetworkPolicy on its ingress',
    ]);
  });

  it('the profile check finds what the example lacked before (the unhardened fixture)', () => {
    const found = documents(UNHARDENED).flatMap(problems);
    for (const expected of [
      'Deployment/users container users-service: allowPrivilegeEscalation is not false',
      'Deployment/users container users-service: no livenessProbe',
      'Deployment/users container users-service: 2 replicas without DATABASE_URL, each with a database of its own',
      'Deployment/users container gateway: capabilities.drop lacks ALL',
      'Deployment/users container gateway: seccompProfile is not RuntimeDefault',
      'Deployment/users container gateway: no resources.limits.memory',
      'Deployment/users container gateway: no METRICS_PORT',
      'Deployment/users container gateway: EG_CIPHER_KEY not from a Secret',
      'Deployment/users: emptyDir gateway-state has no sizeLimit',
    ])
      expect(found).to.include(expected);
  });
});
