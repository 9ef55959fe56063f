/*
 * The Dockerfile cannot be built here, so what it promises is checked from its text (and
 * test/integration/package-docker.test.ts replays its steps without Docker): two stages on Node 24; the
 * runtime stage runs nothing, holds only package.json, build/ and the production node_modules, and
 * runs as a numeric non-root user; ENTRYPOINT is the compiled CLI; the image is what the operator
 * manifests (the OperatorChart construct) reference.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App as Cdk8sApp, Testing } from 'cdk8s';
import { DEFAULT_OPERATOR_IMAGE, OperatorChart } from '../../constructs/index.js';
import { REPO_ROOT } from '../support/run.js';
import type { Stage } from '../support/package-dockerfile.js';
import {
  copyArgs,
  execForm,
  instructions,
  isIgnored,
  keyValues,
  parseDockerfile,
  parseDockerignore,
} from '../support/package-dockerfile.js';

interface PackageJson {
  name: string;
  version: string;
  license: string;
  type: string;
  bin: Record<string, string>;
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}
interface LockEntry {
  dev?: boolean;
  hasInstallScript?: boolean;
}

const read = (file: string): string => readFileSync(join(REPO_ROOT, file), 'utf8');
const pkg = JSON.parse(read('package.json')) as PackageJson;
const stages = parseDockerfile(read('Dockerfile'));
const ignoreRules = parseDockerignore(read('.dockerignore'));
const IMAGE = `ghcr.io/recon8s/recon8s:${pkg.version}`;
const NODE_24_SLIM = /^node:24(\.\d+){0,2}-slim(@sha256:[0-9a-f]{64})?$/;

const build = (): Stage => stages[0] as Stage;
const runtime = (): Stage => stages.at(-1) as Stage;
/** The last instruction with this keyword in a stage (the one that counts). */
const last = (stage: Stage, keyword: string): string | undefined => instructions(stage, keyword).at(-1)?.args;
const runs = (stage: Stage): string[] => instructions(stage, 'RUN').map((i) => i.args);
const user = (): { uid: number; gid: number } => {
  const m = /^(\d+):(\d+)$/.exec(last(runtime(), 'USER') ?? '');
  assert.ok(m, `the runtime stage's USER must be numeric uid:gid, got ${last(runtime(), 'USER')}`);
  return { uid: Number(m[1]), gid: Number(m[2]) };
};

describe('Dockerfile', () => {
  it('has a build stage and a runtime stage, both node:24-slim, the runtime not built FROM the build stage', () => {
    assert.equal(stages.length, 2);
    assert.ok(build().name, 'the build stage is named, for COPY --from');
    for (const stage of stages) assert.match(stage.image, NODE_24_SLIM);
    assert.notEqual(runtime().image, build().name);
  });

  it('runs as a numeric non-root USER in the runtime stage, set before ENTRYPOINT', () => {
    const { uid, gid } = user();
    assert.ok(uid > 0 && gid > 0, 'uid and gid are not 0');
    assert.deepEqual({ uid, gid }, { uid: 65532, gid: 65532 });
    const order = runtime().instructions.map((i) => i.keyword);
    assert.ok(order.lastIndexOf('USER') < order.indexOf('ENTRYPOINT'));
  });

  it('builds with npm ci and the lockfile, then prunes the dev dependencies before the runtime stage takes node_modules', () => {
    const steps = runs(build());
    const ci = steps.findIndex((s) => /^npm ci\b/.test(s));
    const compile = steps.findIndex((s) => s === 'npm run build');
    const prune = steps.findIndex((s) => /^npm prune\b.*--omit=dev\b/.test(s));
    assert.ok(
      ci >= 0 && compile > ci && prune > compile,
      `expected npm ci, npm run build, npm prune --omit=dev in that order: ${steps.join(' | ')}`,
    );
    assert.equal(prune, steps.length - 1, 'nothing runs after the prune');
    assert.deepEqual(
      steps.filter((s) => /\bnpm (install|i|add)\b|\byarn\b|\bpnpm\b/.test(s)),
      [],
      'only npm ci installs',
    );
    assert.ok(
      instructions(build(), 'COPY').some((c) => copyArgs(c.args).sources.includes('package-lock.json')),
      'the lockfile is copied for npm ci',
    );
  });

  it('runs nothing in the runtime stage and takes only package.json, node_modules and build/ from the build stage', () => {
    assert.deepEqual(runs(runtime()), []);
    const copies = instructions(runtime(), 'COPY').map((c) => copyArgs(c.args));
    assert.ok(
      copies.every((c) => c.from === build().name),
      'the runtime stage copies from the build stage only',
    );
    const workdir = last(build(), 'WORKDIR') ?? '';
    assert.deepEqual(
      copies.flatMap((c) => c.sources).sort(),
      ['build', 'node_modules', 'package.json'].map((f) => `${workdir}/${f}`),
    );
  });

  it('may skip install scripts: no production dependency has one, and the package itself has none (no prepare)', () => {
    assert.ok(runs(build()).some((s) => /^npm ci\b.*--ignore-scripts\b/.test(s)));
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, LockEntry> };
    const production = Object.entries(lock.packages).filter(([path, entry]) => path !== '' && !entry.dev);
    assert.deepEqual(
      production.filter(([, entry]) => entry.hasInstallScript).map(([path]) => path),
      [],
    );
    for (const script of ['preinstall', 'install', 'postinstall', 'prepare'])
      assert.equal(pkg.scripts[script], undefined, `package.json has a ${script} script`);
    // The pinned Node 24 is a dev dependency: pruned, never in the image (which is Node 24 itself).
    assert.ok('node' in pkg.devDependencies && !('node' in pkg.dependencies));
  });

  it('starts the compiled CLI in exec form: ENTRYPOINT ["node", <V8 flags>, "build/lib/cli/main.js"], CMD ["controller"]', () => {
    const entrypoint = execForm(last(runtime(), 'ENTRYPOINT') ?? '') ?? [];
    assert.equal(entrypoint[0], 'node');
    assert.equal(entrypoint.at(-1), 'build/lib/cli/main.js');
    for (const flag of entrypoint.slice(1, -1)) assert.match(flag, /^--[a-z-]+=\d+$/, 'only numeric V8 flags between');
    assert.deepEqual(execForm(last(runtime(), 'CMD') ?? ''), ['controller']);
    assert.equal(last(runtime(), 'WORKDIR'), last(build(), 'WORKDIR'), 'relative paths resolve as in the build stage');
  });

  it('has its ENTRYPOINT script where `npm run build` puts it (and the package bin)', () => {
    const script = execForm(last(runtime(), 'ENTRYPOINT') ?? '')?.at(-1) ?? '';
    assert.equal(pkg.scripts.build, 'tsc -p tsconfig.build.json');
    const tsconfig = JSON.parse(read('tsconfig.build.json')) as {
      compilerOptions: { outDir: string; rootDir: string };
      include: string[];
    };
    assert.deepEqual([tsconfig.compilerOptions.outDir, tsconfig.compilerOptions.rootDir], ['build', '.']);
    const source = script.replace(/^build\//, '').replace(/\.js$/, '.ts');
    assert.ok(existsSync(join(REPO_ROOT, source)), `${source} (compiled to ${script}) does not exist`);
    assert.ok(
      tsconfig.include.includes(source.split('/')[0] ?? ''),
      `${source} is not compiled by tsconfig.build.json`,
    );
    assert.equal(pkg.bin.recon8s, `./${script}`);
    assert.equal(pkg.bin['kubectl-recon8s'], `./${script}`, 'the kubectl plugin is the same CLI');
    assert.equal(
      pkg.type,
      'module',
      'build/**/*.js are ES modules because package.json (copied into the image) says so',
    );
  });

  it('copies from the context only what exists and .dockerignore lets through', () => {
    for (const copy of instructions(build(), 'COPY')
      .map((c) => copyArgs(c.args))
      .filter((c) => c.from === undefined)) {
      for (const src of copy.sources) {
        assert.ok(existsSync(join(REPO_ROOT, src)), `${src} does not exist`);
        assert.equal(isIgnored(src, ignoreRules), false, `${src} is excluded by .dockerignore`);
      }
    }
  });

  it('.dockerignore leaves out node_modules, dist, build, test, .git and local secrets', () => {
    for (const path of [
      'node_modules',
      'node_modules/cdk8s/package.json',
      'dist',
      'build/lib/cli/main.js',
      'test/unit/app.test.ts',
      '.git',
      'kubeconfig',
      'recon8s-0.1.0.tgz',
    ]) {
      assert.equal(isIgnored(path, ignoreRules), true, `${path} is in the build context`);
    }
    for (const path of [
      'package.json',
      'package-lock.json',
      'tsconfig.build.json',
      'constructs/index.ts',
      'lib/cli/main.ts',
    ]) {
      assert.equal(isIgnored(path, ignoreRules), false, `${path} is left out of the build context`);
    }
  });

  it('labels the image (OCI annotations) with its source, license and the package version', () => {
    const labels = Object.assign({}, ...instructions(runtime(), 'LABEL').map((l) => keyValues(l.args))) as Record<
      string,
      string
    >;
    assert.equal(
      labels['org.opencontainers.image.source'],
      'https://github.com/recon8s/recon8s',
      `the repository ${IMAGE} is published from`,
    );
    assert.equal(labels['org.opencontainers.image.version'], pkg.version);
    assert.equal(labels['org.opencontainers.image.licenses'], pkg.license);
    assert.equal(labels['org.opencontainers.image.title'], pkg.name);
  });

  describe('and the operator install (the OperatorChart construct)', () => {
    it(`default to the image ${IMAGE} (the package version)`, () => {
      assert.equal(DEFAULT_OPERATOR_IMAGE, IMAGE);
    });

    it("run it as the image's USER, with args (keeping the ENTRYPOINT) that start with its CMD, on its EXPOSEd ports", () => {
      const chart = new OperatorChart(new Cdk8sApp(), 'operator', {});
      const deployment = (Testing.synth(chart) as { kind: string; spec?: unknown }[]).find(
        (o) => o.kind === 'Deployment',
      ) as
        | {
            spec: {
              template: {
                spec: {
                  securityContext?: { runAsUser?: number; runAsGroup?: number };
                  containers: {
                    image: string;
                    command?: string[];
                    args?: string[];
                    ports?: { containerPort: number }[];
                    securityContext?: { runAsUser?: number; runAsGroup?: number };
                  }[];
                };
              };
            };
          }
        | undefined;
      assert.ok(deployment, 'the operator chart has a Deployment');
      const pod = deployment.spec.template.spec;
      const container = pod.containers[0];
      assert.ok(container);
      assert.equal(container.image, IMAGE);
      assert.equal(container.command, undefined, 'a command would replace the ENTRYPOINT');
      assert.equal(container.args?.[0], execForm(last(runtime(), 'CMD') ?? '')?.[0]);
      const { uid, gid } = user();
      assert.equal(container.securityContext?.runAsUser ?? pod.securityContext?.runAsUser, uid);
      assert.equal(container.securityContext?.runAsGroup ?? pod.securityContext?.runAsGroup, gid);
      const exposed = (last(runtime(), 'EXPOSE') ?? '').split(/\s+/).map(Number);
      for (const port of container.ports ?? [])
        assert.ok(exposed.includes(port.containerPort), `port ${port.containerPort} is not EXPOSEd`);
    });
  });
});
