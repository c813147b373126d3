import { parseDocument, type YAMLError } from 'yaml';

/**
 * Where a YAML text first fails to parse, as one line naming `file`, the line and the column. It never quotes the
 * text: these files hold the cipher key and the session secret, and start-up lines end up in shipped logs.
 */
export function yamlProblem(text: string, file: string): string | undefined {
  const doc = parseDocument(text);
  // An unknown tag is only a warning here, but the host's parser (js-yaml) refuses it.
  const err = doc.errors[0] ?? doc.warnings.find((w) => w.code === 'TAG_RESOLVE_FAILED');
  return err && describeYamlError(err, file);
}

export function describeYamlError(err: YAMLError, file: string): string {
  const at = err.linePos?.[0];
  const where = at ? `line ${at.line}, column ${at.col}` : `offset ${err.pos[0]}`;
  // The library's message ends with " at line …:" and an excerpt of the text; only the reason before it is kept.
  const reason = err.message.split(/ at line \d+|\n/)[0]!.trim();
  return `${file} is not valid YAML at ${where}: ${reason}`;
}
