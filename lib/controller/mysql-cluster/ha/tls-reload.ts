import type { EventType } from '../../kind-controller.js';
import type { MemberActions } from './ports.js';

/**
 * Members serving another certificate than the TLS Secret's current one (renewed by recon8s, or by
 * cert-manager in a Secret of the user's) read their files again, with no restart. The kubelet
 * refreshes a mounted Secret within a minute or so: until it has, a reload changes nothing and the
 * next steady look tries again. A member that cannot reload keeps its certificate, and says so.
 */
export async function reloadRenewedCertificates(
  sessions: ReadonlyMap<string, MemberActions>,
  expectedNotAfter: string | undefined,
): Promise<{ type: EventType; reason: string; message: string }[]> {
  if (!expectedNotAfter) return [];
  const events: { type: EventType; reason: string; message: string }[] = [];
  for (const [member, session] of sessions) {
    try {
      const served = await session.servedCertificateNotAfter();
      if (served === expectedNotAfter) continue;
      await session.reloadTls();
      const now = await session.servedCertificateNotAfter();
      if (now === expectedNotAfter)
        events.push({
          type: 'Normal',
          reason: 'CertificateReloaded',
          message: `${member} serves the renewed certificate (valid until ${expectedNotAfter}) without a restart`,
        });
    } catch (e) {
      events.push({
        type: 'Warning',
        reason: 'CertificateReloadFailed',
        message: `${member} could not reload its certificate: ${e instanceof Error ? e.message : String(e)}`,
      });
    }
  }
  return events;
}
