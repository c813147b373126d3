'use strict';
/**
 * A bare Express Gateway (the product's host, same version) with the bench plugin, for the floor (c) and the
 * ceiling (d) and the protocol floor (p). BENCH_MODE=rpc|protocol|direct picks the policy of GET /api/users/:userId; PORT, EG_CONFIG_DIR (an empty
 * temporary directory), BENCH_AMQP_URL and BENCH_QUEUE come from bench/run.mjs.
 */
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const dir = process.env.EG_CONFIG_DIR;
const MODES = { rpc: 'bench-rpc', protocol: 'bench-rpc-protocol', direct: 'bench-direct' };
const mode = MODES[process.env.BENCH_MODE] ?? 'bench-direct';
fs.mkdirSync(path.join(dir, 'models'), { recursive: true });
for (const f of fs.readdirSync(path.join(ROOT, 'config', 'models')))
  fs.copyFileSync(path.join(ROOT, 'config', 'models', f), path.join(dir, 'models', f));
fs.writeFileSync(
  path.join(dir, 'system.config.yml'),
  `db:\n  redis:\n    emulate: true\n    namespace: EG\ncrypto:\n  cipherKey: bench\n  algorithm: aes256\n  saltRounds: 10\nsession:\n  secret: bench\n  resave: false\n  saveUninitialized: false\nplugins:\n  bench:\n    package: ${JSON.stringify(path.join(__dirname, 'plugin.js'))}\n`,
);
fs.writeFileSync(
  path.join(dir, 'gateway.config.yml'),
  `http:\n  port: ${Number(process.env.PORT)}\n  hostname: 127.0.0.1\napiEndpoints:\n  user:\n    host: '*'\n    paths: ['/api/users/:userId']\n    methods: [GET]\nserviceEndpoints: {}\npolicies:\n  - ${mode}\npipelines:\n  user:\n    apiEndpoints: [user]\n    policies:\n      - ${mode}: [{ action: {} }]\n`,
);

const gateway = require(require.resolve('express-gateway', { paths: [ROOT] }));
gateway()
  .load(dir)
  .run()
  .then(() => console.log(`[bench-eg] ready (${mode})`))
  .catch((err) => {
    console.error(`[bench-eg] start failed: ${err?.message}`);
    process.exit(1);
  });
process.once('SIGTERM', () => process.exit(0));
process.once('SIGINT', () => process.exit(0));
