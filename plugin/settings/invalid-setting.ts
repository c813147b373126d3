/**
 * Start-up check of the plugin's settings (the `plugins.contracts` block and the environment variables that
 * stand in for it). The host validates a plugin's settings too, but on failure it only logs and starts without
 * the plugin; this check instead names the one setting that is wrong, so the start can stop (startup.ts).
 */
export class InvalidSettingError extends Error {
  /** As the operator wrote it: `plugins.contracts.<name>`, an environment variable, or a jwt-dev-auth action parameter. */
  readonly setting: string;
  constructor(setting: string, problem: string) {
    super(`${setting} ${problem}`);
    this.name = 'InvalidSettingError';
    this.setting = setting;
  }
}
