/** Token lifetimes: ACCESS_TOKEN_EXPIRY and REFRESH_TOKEN_EXPIRY, in seconds or with a unit (300, 5m, 1h, 7d). */
export interface Lifetimes {
  accessSeconds: number;
  refreshSeconds: number;
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };
const DAY = 86400;

function parseDuration(name: string, value: string): number {
  const m = /^(\d+)\s*([smhd]?)$/.exec(value.trim());
  if (!m) throw new Error(`${name} must be a number of seconds or a duration such as 5m, 1h, 7d (got "${value}")`);
  const seconds = Number(m[1]) * UNITS[m[2] || 's'];
  if (seconds <= 0) throw new Error(`${name} must be positive`);
  return seconds;
}

/**
 * Access tokens live 3600 s by default (the `expiresIn` the login answers state; set 300 for
 * five-minute tokens). Refresh tokens live 7 days by default and may be set between 7 and 30 days.
 */
export function lifetimesFromEnv(env: NodeJS.ProcessEnv = process.env): Lifetimes {
  const accessSeconds = env.ACCESS_TOKEN_EXPIRY ? parseDuration('ACCESS_TOKEN_EXPIRY', env.ACCESS_TOKEN_EXPIRY) : 3600;
  const refreshSeconds = env.REFRESH_TOKEN_EXPIRY
    ? parseDuration('REFRESH_TOKEN_EXPIRY', env.REFRESH_TOKEN_EXPIRY)
    : 7 * DAY;
  if (refreshSeconds < 7 * DAY || refreshSeconds > 30 * DAY)
    throw new Error('REFRESH_TOKEN_EXPIRY must be between 7 and 30 days');
  if (accessSeconds >= refreshSeconds) throw new Error('ACCESS_TOKEN_EXPIRY must be shorter than REFRESH_TOKEN_EXPIRY');
  return { accessSeconds, refreshSeconds };
}
