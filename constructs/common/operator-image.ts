/** The recon8s image of this release: the controller's, and the agent's in every MySQL pod. */
export const DEFAULT_OPERATOR_IMAGE = 'ghcr.io/recon8s/recon8s:0.1.0';
