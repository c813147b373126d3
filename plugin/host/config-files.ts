import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { yamlProblem } from '../config-writer/yaml-problem';

/** The host's files, in the order its loader reads them. */
const HOST_FILES = ['system.config.yml', 'gateway.config.yml'];

/**
 * The first of the host's files in `dir` that the host's loader would fail to parse, as one line naming the file,
 * line and column (undefined when both parse). The position is in the file as written unless only the host's
 * ${VAR} substitution breaks it; then it is in the substituted text, and the line says so.
 */
export function configFileProblem(dir: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const name of HOST_FILES) {
    const file = join(dir, name);
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    // A raw text the substitution repairs (e.g. ${VAR} inside a flow sequence) is what the host reads: no problem.
    const after = yamlProblem(hostSubstitution(text, env), file);
    if (!after) continue;
    return yamlProblem(text, file) ?? `${after} (after \${VAR} substitution)`;
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
