import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { yamlProblem } from '../config-writer/yaml-problem';

/** The host's files, in the order its loader reads them. */
const HOST_FILES = ['system.config.yml', 'gateway.config.yml'];

/**
 * The first of the host's files in `dir` that the host's loader would fail to parse, as one line naming the file,
 * line and column (undefined when both parse). The position is in the file as written unless only the host's
 * ${VAR} substitution breaks it; then it is in the substituted text, and the line says so. A variable the files
 * use that is set but empty, or a `…PORT` that is not a port, is a problem too (variableProblem).
 */
export function configFileProblem(dir: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const name of HOST_FILES) {
    const file = join(dir, name);
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const variable = variableProblem(text, name, env);
    if (variable) return variable;
    // A raw text the substitution repairs (e.g. ${VAR} inside a flow sequence) is what the host reads: no problem.
    const after = yamlProblem(hostSubstitution(text, env), file);
    if (!after) continue;
    return yamlProblem(text, file) ?? `${after} (after \${VAR} substitution)`;
  }
  return undefined;
}

/**
 * A variable `text` substitutes that would not mean what its setter meant: set but empty (the host then takes the
 * empty value, not the default: `PORT=` listened on a random port, `HOST=` on every interface), or a `…PORT` that
 * is not a whole number from 1 to 65535.
 */
function variableProblem(text: string, file: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const [whole, name] of text.matchAll(/\$?\$\{([A-Za-z0-9_]+)(?::-.*?)?\}/g)) {
    if (whole.startsWith('$$') || name === undefined || !Object.hasOwn(env, name)) continue;
    const value = String(env[name]);
    if (value.trim() === '')
      return `invalid setting: ${name} is set but empty (${file} uses it, and the host would take the empty value, not its default); unset it or give it a value`;
    if (/PORT$/.test(name) && !(/^[1-9][0-9]{0,4}$/.test(value) && Number(value) <= 65535))
      return `invalid setting: ${name} is ${JSON.stringify(value.slice(0, 40))} (${file} uses it): a port is a whole number from 1 to 65535`;
  }
  return undefined;
}

/** The host's ${VAR} / ${VAR:-default} substitution (express-gateway/lib/config/config.js), applied before it parses. */
function hostSubstitution(text: string, env: NodeJS.ProcessEnv): string {
  return text.replace(
    /\$?\$\{([A-Za-z0-9_]+)(:-(.*?))?\}/g,
    (whole, name: string, _default, fallback: string | undefined) => {
      if (whole.startsWith('$$')) return whole;
      if (Object.hasOwn(env, name)) return String(env[name]);
      return fallback ? fallback : 'null';
    },
  );
}
