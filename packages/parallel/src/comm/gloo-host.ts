import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { ParallelError } from '../errors.js';

/**
 * The address the Gloo device of this rank listens on, from `RL2_GLOO_HOST`: an interface name
 * (`lo`, `eth0`: what torch users pass as GLOO_SOCKET_IFNAME), one of this machine's addresses,
 * or a host name that resolves to one. Empty: '' (the addon takes this host's address toward
 * rank 0). Checked here because the addon crashes on a name it cannot bind (issue 26).
 */
export async function resolveGlooHost(value: string | undefined): Promise<string> {
  const wanted = value?.trim() ?? '';
  if (wanted === '') return '';
  const interfaces = networkInterfaces();
  const local = Object.values(interfaces).flatMap((list) => (list ?? []).map((a) => a.address));
  const byName = interfaces[wanted];
  if (byName && byName.length > 0) {
    const pick = byName.find((a) => a.family === 'IPv4') ?? byName[0];
    return pick?.address ?? '';
  }
  const fail = (why: string) =>
    new ParallelError(
      'LAUNCH_ENV',
      `RL2_GLOO_HOST="${wanted}" ${why}; set it to an interface name (interfaces: ` +
        `${Object.keys(interfaces).join(', ')}), one of this machine's addresses ` +
        `(${local.join(', ')}) or a host name that resolves to one, or unset it.`,
    );
  if (isIP(wanted)) {
    if (local.includes(wanted)) return wanted;
    throw fail('is not an address of this machine');
  }
  let resolved: string[];
  try {
    resolved = (await lookup(wanted, { all: true })).map((a) => a.address);
  } catch (e) {
    throw fail(`is no interface name and does not resolve (${(e as NodeJS.ErrnoException).code})`);
  }
  const mine = resolved.find((a) => local.includes(a));
  if (mine) return mine;
  throw fail(`resolves to ${resolved.join(', ')}, not an address of this machine`);
}
