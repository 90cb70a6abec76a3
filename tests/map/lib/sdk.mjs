// Load the pinned MAP SDK (and the zod it was built with) from the cache
// prefix that install.sh fills, never from this source tree.
//
// The prefix is $MAP_SDK_PREFIX, else $CORRAL_NPM_CACHE/map-sdk-<pin>, else
// /var/tmp/corral-npm/map-sdk-<pin>, where <pin> is the version in
// ../package.json: the same rule as versions.sh.  corral starts agents with
// an allowlisted environment, so agent.mjs relies on the default path unless
// the workflow passes MAP_SDK_PREFIX in its env:.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = JSON.parse(fs.readFileSync(path.join(here, '..', 'package.json'), 'utf8'));

export const SDK_NAME = '@multi-agent-protocol/sdk';
export const SDK_VERSION = pkg.dependencies[SDK_NAME];
export const SDK_PREFIX = process.env.MAP_SDK_PREFIX ||
    path.join(process.env.CORRAL_NPM_CACHE || '/var/tmp/corral-npm', `map-sdk-${SDK_VERSION}`);
export const SDK_DIR = path.join(SDK_PREFIX, 'node_modules', SDK_NAME);

export class SdkMissing extends Error {}

// The ESM entry of a package installed in the prefix, as node's ESM loader
// would pick it (exports["."].import, else module, else main).
function esmEntry(dir) {
	const p = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
	let e = p.exports && p.exports['.'] !== undefined ? p.exports['.'] : undefined;
	if (e && typeof e === 'object')
		e = e.import ?? e.default;
	if (e && typeof e === 'object')
		e = e.default;
	return path.join(dir, typeof e === 'string' ? e : (p.module || p.main || 'index.js'));
}

// loadSdk() -> { sdk, z, version, dir }: the SDK's ESM module namespace and
// the very zod instance its schemas were made with (the SDK imports 'zod'
// from its own node_modules; importing zod's ESM entry from the same path
// gives the same module instance).  Throws SdkMissing when not installed.
export async function loadSdk() {
	let version;
	try {
		version = JSON.parse(fs.readFileSync(path.join(SDK_DIR, 'package.json'), 'utf8')).version;
	} catch {
		throw new SdkMissing(`MAP SDK not installed in ${SDK_PREFIX} (run tests/map/install.sh)`);
	}
	if (version !== SDK_VERSION)
		throw new SdkMissing(`MAP SDK in ${SDK_PREFIX} is ${version}, the pin is ${SDK_VERSION} (run tests/map/install.sh)`);
	const sdk = await import(pathToFileURL(esmEntry(SDK_DIR)).href);
	const req = createRequire(path.join(SDK_DIR, 'package.json'));
	const zdir = path.dirname(req.resolve('zod/package.json'));
	const zmod = await import(pathToFileURL(esmEntry(zdir)).href);
	const z = zmod.z ?? zmod.default ?? zmod;
	return { sdk, z, version, dir: SDK_DIR };
}
