import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { SETTINGS_SCHEMA } from '.';
import { checkAuthConfig } from './auth';
import { InvalidSettingError } from './invalid-setting';
import { firstUseOf, parseUserMap, servicesFileOf } from './bus-trust';
import { parseBrokerList } from '../bus/amqp/broker-list';
import { resolveEdgeSettings } from './edge';
import { ANNOUNCEMENT_USERS_ENV, envOf, SETTING_ENV } from './declarations';

/**
 * What the host gets as the plugin's `schema`: the same $id and property names, without constraints, so the
 * host's own check (which only logs and skips the plugin) never pre-empts validateSettings.
 */
export function hostSettingsSchema(): Record<string, unknown> {
  const properties: Record<string, { description?: string }> = {};
  for (const [name, prop] of Object.entries(schemaProperties())) {
    properties[name] =
      'description' in prop && typeof prop.description === 'string' ? { description: prop.description } : {};
  }
  return { $id: SETTINGS_SCHEMA.$id, type: 'object', properties };
}

/**
 * Checks the settings block and the environment; returns the block with strings converted to the schema's types
 * (the host substitutes `${VAR}` as text). Throws InvalidSettingError naming the first bad setting.
 */
export function validateSettings(
  raw: Record<string, unknown> = {},
  env: NodeJS.ProcessEnv = process.env,
): Record<string, unknown> {
  const properties = schemaProperties();
  // Read at validation time: settings added to the schema later are known here without a second list.
  for (const key of Object.keys(raw)) {
    if (!Object.hasOwn(properties, key)) {
      throw new InvalidSettingError(
        `plugins.contracts.${key}`,
        `is not a setting of this plugin (known: ${Object.keys(properties).join(', ')})`,
      );
    }
  }
  const block = { ...raw };
  for (const [key, value] of Object.entries(block)) {
    // `busUrl:` with no value is null in YAML: left out, so the environment or the default applies.
    if (value === undefined || value === null) delete block[key];
    else block[key] = checkValue(`plugins.contracts.${key}`, key, value);
  }
  for (const [key, envName] of Object.entries(SETTING_ENV)) {
    if (!Object.hasOwn(properties, key) || block[key] !== undefined) continue;
    const value = env[envName];
    if (value === undefined || value.trim() === '') continue;
    checkValue(envName, key, value.trim());
  }
  const userMap = env[ANNOUNCEMENT_USERS_ENV];
  if (block.announcementUsers === undefined && userMap !== undefined) {
    const users = parseUserMap(userMap);
    if (typeof users === 'string') throw new InvalidSettingError(ANNOUNCEMENT_USERS_ENV, users);
  }
  checkReceiveTimeouts(block, env);
  // Both throw an InvalidSettingError naming the setting.
  if (!servicesFileOf(block, env)) firstUseOf(block, env);
  checkAuthConfig(env);
  return block;
}

/** Node refuses a headers timeout longer than the request's: the request's would end first, and the headers' never apply. */
function checkReceiveTimeouts(block: Record<string, unknown>, env: NodeJS.ProcessEnv): void {
  const { headersTimeoutMs, requestReceiveTimeoutMs } = resolveEdgeSettings(block, env);
  if (headersTimeoutMs <= requestReceiveTimeoutMs) return;
  const label = block.headersTimeoutMs !== undefined ? 'plugins.contracts.headersTimeoutMs' : envOf('headersTimeoutMs');
  throw new InvalidSettingError(
    label,
    `(${headersTimeoutMs}) may not exceed requestReceiveTimeoutMs (${requestReceiveTimeoutMs}): the headers are part of the request`,
  );
}

function schemaProperties(): Record<string, Record<string, unknown>> {
  return SETTINGS_SCHEMA.properties as unknown as Record<string, Record<string, unknown>>;
}

const ajv = new Ajv({ allErrors: false, coerceTypes: true, strict: false });
const validators = new Map<string, ValidateFunction>();

/** One value against its property's schema (types coerced from strings); returns the coerced value. */
function checkValue(label: string, key: string, value: unknown): unknown {
  const prop = schemaProperties()[key];
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile({ type: 'object', properties: { v: prop } });
    validators.set(key, validate);
  }
  if (typeof value === 'string' && prop.type === 'boolean' && value !== 'true' && value !== 'false') {
    throw new InvalidSettingError(label, `must be true or false (got ${JSON.stringify(value)})`);
  }
  const holder = { v: value };
  if (!validate(holder)) throw new InvalidSettingError(label, describe(validate.errors?.[0], value));
  if (key === 'busUrl') checkBusUrl(label, String(holder.v));
  return holder.v;
}

function describe(error: ErrorObject | undefined, value: unknown): string {
  const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
  if (!error) return `is invalid (got ${shown})`;
  switch (error.keyword) {
    case 'type':
      return `must be ${article(String(error.params.type))} (got ${shown})`;
    case 'pattern':
      return `must match ${String(error.params.pattern)} (got ${shown})`;
    case 'minimum':
    case 'maximum':
      return `must be ${error.keyword === 'minimum' ? '>=' : '<='} ${String(error.params.limit)} (got ${shown})`;
    case 'enum':
      return `must be one of ${(error.params.allowedValues as unknown[]).join(', ')} (got ${shown})`;
    default:
      return `${error.message ?? 'is invalid'} (got ${shown})`;
  }
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** `embedded`, or an amqp:// / amqps:// URL with a host; the message never repeats credentials. */
function checkBusUrl(label: string, value: string): void {
  if (value === 'embedded') return;
  const problem = 'must be embedded or an amqp:// / amqps:// URL such as amqp://user:pass@rabbitmq:5672/vhost';
  if (!/^amqps?:\/\//i.test(value)) throw new InvalidSettingError(label, problem);
  // A cluster: several addresses separated by commas, each an AMQP URL, all with one user and vhost. The transport
  // parses the list the same way, so what passes here is what it connects with.
  try {
    parseBrokerList(value);
  } catch (err) {
    const message = (err as Error).message;
    // "BUS_URL: <address> has no host" is about one address; "BUS_URL lists …" about the whole list.
    const address = /^BUS_URL: (.*)$/.exec(message);
    throw new InvalidSettingError(
      label,
      address ? `is not valid (${address[1]}); it ${problem}` : message.replace(/^BUS_URL /, ''),
    );
  }
}
