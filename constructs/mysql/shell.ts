/**
 * A tagged template for shell scripts kept in TypeScript: the text is taken raw (a backslash stays a
 * backslash, as in a .sh file), `${value}` interpolates a TypeScript constant, and `\${` stands for a
 * literal shell `${` (likewise `` \` `` for a backtick). Scripts read like the bash they are.
 */
export function sh(strings: TemplateStringsArray, ...values: readonly (string | number)[]): string {
  let out = '';
  strings.raw.forEach((raw, i) => {
    out += raw.replace(/\\(\$\{|`)/g, '$1');
    if (i < values.length) out += String(values[i]);
  });
  return out;
}
